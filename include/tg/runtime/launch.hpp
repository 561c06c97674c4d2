#pragma once
// What every runtime needs to launch a program: its symbolic sizes evaluated with the values
// passed at launch, and its target with the environment's overrides (TG_OPT, the GPU launch shape
// and tiles).
#include "../codegen/pipeline.hpp"
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
  // TG_GPU_SHARED_TILES: 0 turns shared_tiles off, 2 tiles every product with the largest tile
  const std::int64_t shared = env::get_int("TG_GPU_SHARED_TILES", 1);
  o.shared_tiles = shared != 0;
  if (shared == 2) o.tile_min_outputs = o.tile_blocks = 1;
  o.tile_layout = int(env::get_int("TG_GPU_TILE_LAYOUT", o.tile_layout));
  o.stages = int(env::get_int("TG_GPU_STAGES", o.stages));
  // (a device without them turns them off: CudaDevice::target)
  o.tensor_cores = env::get_int("TG_GPU_TENSOR_CORES", 1) != 0;
  return o;
}

/// Whether the fuser's and the lowering's optimizations are on (TG_OPT=0 turns them off).
inline bool optimizations_on() {
  static const bool on = env::get_int("TG_OPT", 1) != 0;
  return on;
}
/// The lowering's choices on a CPU, unless TG_OPT=0 (the front end consults them for a few
/// graph-level decisions).
inline LowerOptions lower_options() {
  return optimizations_on() ? LowerOptions{} : LowerOptions::off();
}

/// A device's target with the environment's overrides: TG_OPT=0 turns every optimization off;
/// on GPUs, TG_GPU_TILE and TG_GPU_TILE_THREADS set the register tile (LowerOptions::gpu_tile;
/// tests set TG_GPU_TILE_THREADS=1 to tile their small products).
inline Target with_env(Target t) {
  if (!optimizations_on()) t = t.unoptimized();
  if (t.gpu) {
    static const int tile = env::get_int("TG_GPU_TILE", 0);
    static const int threads = env::get_int("TG_GPU_TILE_THREADS", 0);
    if (tile > 0 && t.lower.gpu_tile > 1) t.lower.gpu_tile = tile;
    if (threads > 0) t.lower.gpu_tile_threads = threads;
  }
  return t;
}

} // namespace tg
