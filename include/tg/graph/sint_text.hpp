#pragma once
// Symbolic integers and shapes as text (error messages, dumps, rendered sources). Apart from
// sint.hpp so that the headers users include do not instantiate the text builder.
#include <string>

#include "../util/text.hpp"
#include "sint.hpp"

namespace tg {

namespace detail {
constexpr void write_sint(Text& t, const SInt& d) {
  if (d.is_const()) {
    t << d.constant();
    return;
  }
  bool first = true;
  for (const Term& term : d.terms()) {
    if (!first) t << '+';
    first = false;
    if (term.coef != 1) t << term.coef << '*';
    for (std::size_t k = 0; k < term.vars.size(); ++k) {
      if (k) t << '*';
      t << term.vars[k].name.view();
    }
  }
  if (d.constant()) t << '+' << d.constant();
}
constexpr void write_shape(Text& t, const Shape& s) {
  t << '[';
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (i) t << ", ";
    write_sint(t, s[i]);
  }
  t << ']';
}
/// A shape as error messages and dumps print it: [2, batch+1].
inline std::string shape_str(const Shape& s) {
  Text t;
  write_shape(t, s);
  return std::string(t.view());
}
} // namespace detail

} // namespace tg
