#pragma once
// beam: with TG_BEAM=N, a reduction kernel is made with up to N different choices of the
// target's options (beam_targets: on a GPU that tiles products in shared memory, the block size,
// tensor cores, the thread layout, shared tiles at all; then LowerOptions: upcast lanes, register
// tile rows, split accumulators, loop order); each variant is compiled and timed on the device,
// and the fastest is kept. The choice is cached on disk next
// to the compiled kernels (beam-<key>.txt, keyed by the kernel's default program and the device's
// model, Device::model()), so a later process lowers the kernel the chosen way without timing it
// again.
//
// The variants run on scratch buffers of zeros: tg's kernels index memory only through affine
// functions of their loop indices (gather is a one-hot select), so no value read can send a load
// out of bounds, and every variant computes the same function.
#include <algorithm>
#include <chrono>
#include <limits>
#include <string>
#include <vector>

#include "../codegen/pipeline.hpp"
#include "../runtime/cache.hpp"
#include "../runtime/host.hpp"
#include "../util/rc.hpp"

namespace tg {

namespace detail {

/// The variants TG_BEAM tries, in order (the first is the heuristics' own choice).
inline std::vector<LowerOptions> beam_candidates(LowerOptions base) {
  std::vector<LowerOptions> c{base};
  for (LowerOptions o : {LowerOptions{16, 1, base.split_reduce}, LowerOptions{8, 4, 16},
                         LowerOptions{16, 2, 16}, LowerOptions{base.upcast, base.upcast_rows, 8},
                         LowerOptions{base.upcast, base.upcast_rows, 1}, LowerOptions{4, 4, 4},
                         LowerOptions{8, 1, 1}, LowerOptions{1, 1, 1}}) {
    if (base.upcast_rows == 1) o.upcast_rows = 1; // a device without register tiles
    if (base.split_reduce == 1) o.split_reduce = 1;
    if (base.wide_upcast == base.upcast) o.wide_upcast = o.upcast;
    o.refine_views = base.refine_views;
    o.tile_tails = base.tile_tails;
    o.tile_lanes = base.tile_lanes;
    o.bf16_tile = base.bf16_tile;
    o.unroll_masked = base.unroll_masked;
    o.unroll_reduce = base.unroll_reduce;
    o.gpu_tile = base.gpu_tile;
    c.push_back(o);
  }
  for (int rows : {base.upcast_rows / 2, base.upcast_rows * 2}) // taller or shorter tiles
    if (base.upcast_rows > 1 && rows > 1) {
      LowerOptions o = base;
      o.upcast_rows = rows;
      c.push_back(o);
    }
  if (base.gpu_tile > 1) // a GPU's tiles (LowerOptions::gpu_tile): none, or smaller ones
    for (int tile : {1, base.gpu_tile / 4, base.gpu_tile / 2}) {
      if (tile < 1 || tile == base.gpu_tile) continue;
      LowerOptions o = base;
      o.gpu_tile = tile;
      c.push_back(o);
    }
  if (base.tile_lanes > 2 * base.upcast) { // tiles of two vectors, not three (AVX-512's 8 x 48)
    LowerOptions o = base;
    o.tile_lanes = 2 * base.upcast;
    c.push_back(o);
  }
  if (base.bf16_tile > 0) { // a bfloat16 tile of float32's rows, not AMX's 16 x 32
    LowerOptions o = base;
    o.bf16_tile = 0;
    c.push_back(o);
  }
  LowerOptions narrow = base; // no lanes beyond `upcast`
  narrow.wide_upcast = base.upcast;
  c.push_back(narrow);
  if (base.tile_tails) { // only tiles that divide their axes (LowerOptions::tile_tails)
    LowerOptions o = base;
    o.tile_tails = false;
    c.push_back(o);
  }
  // column tiles outermost always, or never
  for (std::int64_t panel : {std::int64_t(0), std::numeric_limits<std::int64_t>::max()}) {
    LowerOptions o = base;
    o.panel_bytes = panel;
    c.push_back(o);
  }
  return c;
}

/// The targets TG_BEAM tries, in order (the first is the device's own choice): on a GPU that
/// tiles products in shared memory, each block size, tensor cores off, the other layout of a
/// thread's outputs, one or two stages, and register tiles without shared memory; then the
/// lowering's variants.
inline std::vector<Target> beam_targets(const Target& base) {
  std::vector<Target> c{base};
  auto with = [&](auto change) {
    Target t = base;
    change(t);
    c.push_back(t);
  };
  if (base.gpu && base.launch.shared_tiles) {
    for (std::int64_t block : {128, 64, 32, 16})
      with([&](Target& t) { t.launch.tile_block = block; });
    if (base.launch.tensor_cores) with([](Target& t) { t.launch.tensor_cores = false; });
    with([](Target& t) { t.launch.tile_layout = 1 - t.launch.tile_layout; });
    with([](Target& t) { t.launch.stages = t.launch.stages == 1 ? 2 : 1; });
    with([](Target& t) { // (gpu_of's register tiles, which shared tiles turn off)
      t.launch.shared_tiles = false;
      t.lower.gpu_tile = LowerOptions{}.for_gpu().gpu_tile;
    });
  }
  std::vector<LowerOptions> lower = beam_candidates(base.lower);
  for (std::size_t i = 1; i < lower.size(); ++i) with([&](Target& t) { t.lower = lower[i]; });
  return c;
}

/// Seconds one launch of `r` takes on scratch buffers (best of a few runs).
inline double time_runner(Device& dev, Runner& r, const std::vector<void*>& bufs,
                          std::size_t out_bytes) {
  using clock = std::chrono::steady_clock;
  double best = 1e30;
  unsigned char probe[8];
  for (int rep = 0; rep < 4; ++rep) {
    auto t0 = clock::now();
    r.run(bufs, {});
    dev.copy_out(probe, bufs[0], std::min<std::size_t>(out_bytes, sizeof probe)); // waits for it
    double s = std::chrono::duration<double>(clock::now() - t0).count();
    if (rep > 0) best = std::min(best, s); // the first run warms caches (and pages in code)
    if (s > 0.2) break;                    // a slow variant: one timed run is enough
  }
  return best == 1e30 ? 1e29 : best;
}

} // namespace detail

/// Kernel k of the schedule through the pass list, lowered with the fastest of `width` variants
/// of the target's choices measured on `dev` (or the choice cached on disk by an earlier search).
/// Kernels without a reduction, or with symbolic sizes, have nothing to choose: they are
/// compiled with the target's own choices.
template <class Log>
KernelCode beam_compile(const Graph& g, const Schedule& s, std::size_t k, const Target& target,
                        Device& dev, int width, Log& log) {
  Program first = lower_kernel(g, s, k, target);
  bool reduces = false;
  for (const UOp& u : first.ops) reduces = reduces || u.kind == UKind::DefineAcc;
  if (width <= 1 || !reduces || !first.vars.empty()) return compile_kernel(g, s, k, target, log);
  const std::vector<Target> options = detail::beam_targets(target);
  auto variant = [&](std::size_t i) { return options[i]; };
  // (the number of candidates too: a cached index names a candidate of this list)
  std::string key = detail::cache_path(
      "beam-" +
      detail::cache_key(dump(first).view(), dev.model() + "|" + std::to_string(width) + "|" +
                                                std::to_string(options.size())) +
      ".txt");
  if (std::string saved; detail::read_cached(key, saved)) {
    std::size_t i = std::size_t(std::atoi(saved.c_str()));
    detail::stats_storage().beam_cached++;
    return compile_kernel(g, s, k, i < options.size() ? variant(i) : target, log);
  }
  // distinct kernels only (a GPU's launch options change the kernel, not the lowered program),
  // up to `width` of them
  std::vector<KernelCode> programs{finish_kernel(first, target)};
  std::vector<std::size_t> which{0};
  for (std::size_t i = 1; i < options.size() && int(programs.size()) < width; ++i) {
    KernelCode code = finish_kernel(lower_kernel(g, s, k, variant(i)), variant(i));
    bool seen = false;
    for (const KernelCode& q : programs) seen = seen || q.source.view() == code.source.view();
    if (seen) continue;
    programs.push_back(std::move(code));
    which.push_back(i);
  }
  std::vector<const KernelCode*> ptrs;
  for (const KernelCode& c : programs) ptrs.push_back(&c);
  std::vector<Rc<Runner>> runners = dev.prepare(ptrs);
  // scratch buffers of zeros: the outputs, then the kernel's inputs
  const Kernel& kernel = s.kernels[k];
  std::vector<int> nodes = kernel.outputs;
  nodes.insert(nodes.end(), kernel.inputs.begin(), kernel.inputs.end());
  std::vector<std::unique_ptr<Buffer>> scratch;
  std::vector<void*> bufs;
  Rc<Device> unowned{Rc<Device>(), &dev}; // not owned: the caller holds it
  for (int n : nodes) {
    std::int64_t numel = prod(g[n].shape).constant();
    if (numel == 0) return compile_kernel(g, s, k, target, log);
    scratch.push_back(std::make_unique<Buffer>(unowned, g[n].dtype, numel));
    std::vector<unsigned char> zeros(scratch.back()->nbytes());
    if (!zeros.empty()) dev.copy_in(scratch.back()->ptr, zeros.data(), zeros.size());
    bufs.push_back(scratch.back()->ptr);
  }
  std::size_t best = 0;
  double best_time = 1e30;
  for (std::size_t i = 0; i < runners.size(); ++i) {
    double t = detail::time_runner(dev, *runners[i], bufs, scratch[0]->nbytes());
    if (t < best_time) {
      best_time = t;
      best = i;
    }
  }
  detail::stats_storage().beam_searches++;
  detail::write_cached(key, std::to_string(which[best]));
  return compile_kernel(g, s, k, variant(which[best]), log);
}

} // namespace tg
