#pragma once
// What tensor/class.hpp declares (TG_API, config.hpp).
#include <algorithm>

#include "../../graph/sint_text.hpp"
#include "../../tensor/tensor.hpp"
#include "../../util/rng.hpp"

namespace tg {

TG_API SInt sym(std::string_view name, std::int64_t lo, std::int64_t hi, std::int64_t value) {
  auto valid = [](std::string_view n) {
    if (n.empty() || n.size() > 23 || std::isdigit(static_cast<unsigned char>(n[0]))) return false;
    for (char c : n)
      if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_') return false;
    return true;
  };
  if (!valid(name))
    throw shape_error("tg.sym: '" + std::string(name) +
                      "' is not a valid size name (letters, digits, _; at most 23)");
  if (lo > hi || value < lo || value > hi)
    throw shape_error("tg.sym: " + std::string(name) + " = " + std::to_string(value) +
                      " is outside its bounds [" + std::to_string(lo) + ", " + std::to_string(hi) +
                      "]");
  return SInt(Var{Name(name), lo, hi, value});
}

} // namespace tg

namespace tg::detail {

TG_API std::string where(const std::source_location& loc) {
  std::string file = loc.file_name();
  return " (at " + file + ":" + std::to_string(loc.line()) + " in " + loc.function_name() + ")";
}

TG_API std::string shape_of(const Tensor& t) { return shape_str(t.sym_shape()); }

TG_API DType promote(const Tensor& a, const Tensor& b) {
  return tg::promote(a.dtype(), a.ndim() == 0, b.dtype(), b.ndim() == 0);
}

TG_API bool broadcast_shapes(const Shape& a, const Shape& b, Shape& out) {
  std::size_t n = std::max(a.size(), b.size());
  out.assign(n, SInt(1));
  for (std::size_t i = 0; i < n; ++i) {
    SInt x = i < n - a.size() ? SInt(1) : a[i - (n - a.size())];
    SInt y = i < n - b.size() ? SInt(1) : b[i - (n - b.size())];
    if ((x == y && x.eval() == y.eval()) || y == 1)
      out[i] = x; // same name, same bound value
    else if (x == 1)
      out[i] = y;
    else
      return false;
  }
  return true;
}

TG_API std::mt19937_64& rng() {
  static std::mt19937_64 g(0x5eed);
  return g;
}

} // namespace tg::detail

namespace tg {

TG_API void manual_seed(std::uint64_t seed) { detail::rng().seed(seed); }

} // namespace tg
