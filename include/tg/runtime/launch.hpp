#pragma once
// What every runtime needs to launch a program: its symbolic sizes evaluated with the values
// passed at launch, and the GPU launch shape the environment may tune.
#include "../codegen/gpu.hpp"
#include "env.hpp"

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

/// The launch shape a GPU device asks gpu_program for, within its work-group limit:
/// TG_GPU_LOCAL (threads per work-group, default 256), TG_GPU_GROUP_REDUCE (0 or 1: never or
/// always a work-group per reduction output) and TG_GPU_PER_THREAD (items a thread runs in
/// kernels without reductions, default 8).
inline GpuOptions gpu_options(int max_local) {
  GpuOptions o;
  o.max_local = max_local;
  o.local = int(env::get_int("TG_GPU_LOCAL", o.local));
  o.grouped = int(env::get_int("TG_GPU_GROUP_REDUCE", o.grouped));
  o.per_thread = int(env::get_int("TG_GPU_PER_THREAD", o.per_thread));
  return o;
}

} // namespace tg
