#pragma once
// What every runtime needs to launch a program: its symbolic sizes evaluated with the values
// passed at launch.
#include "../codegen/ir.hpp"

namespace tg {

inline std::int64_t eval_sint(const SInt& s, const std::vector<Var>& vars,
                              const std::vector<std::int64_t>& values) {
  std::int64_t r = s.constant();
  for (const Term& t : s.terms()) {
    std::int64_t p = t.coef;
    for (const Var& v : t.vars) {
      std::int64_t val = v.value;
      for (std::size_t i = 0; i < vars.size(); ++i)
        if (vars[i] == v) val = values[i];
      p *= val;
    }
    r += p;
  }
  return r;
}

} // namespace tg
