#pragma once
// The pass list: every kernel tg runs, shows or plans is made by the functions of this file, in
// this order, for a Target (a device's choices and dialect):
//
//   graph passes    fuse -> merge_outputs                                schedule_graph
//                   -> plan_memory                                       plan_buffers
//   kernel passes   lower                                                lower_kernel
//                   -> CPU, INTERP: contract
//                   -> CPU: reuse_values -> vectorize -> pack_panels (-> pair_products:
//                      AVX512_BF16 -> amx_products: AMX) -> pack_rows -> widen_rows
//                      -> partition_loops -> unroll_loops
//                   -> GPU: shared_tiles (products) or gpu_program
//                      -> decompose (-> narrow32: WGSL)                  device_passes
//                   -> render (C, CUDA, GLSL or WGSL; INTERP runs the program)  render_kernel
//
// compile_kernel runs the kernel passes in order. Realize, tg::schedule, kernel_source, the static
// front end's plans (at compile time) and TG_BEAM all call these; so what tg::schedule shows is
// what a device runs. Every function runs in constant expressions; a PassLog sees each pass's
// result (TG_DEBUG=4 prints the IR after each pass with its time, engine/realize.hpp).
#include "../graph/sint_text.hpp"
#include "../schedule/memory.hpp"
#include "../schedule/merge_outputs.hpp"
#include "amx_products.hpp"
#include "contract.hpp"
#include "decompose.hpp"
#include "gpu_program.hpp"
#include "lower.hpp"
#include "narrow32.hpp"
#include "pack_rows.hpp"
#include "pair_products.hpp"
#include "partition_loops.hpp"
#include "render.hpp"
#include "render_cuda.hpp"
#include "render_glsl.hpp"
#include "render_wgsl.hpp"
#include "reuse_values.hpp"
#include "shared_tiles.hpp"
#include "unroll_loops.hpp"
#include "vectorize.hpp"
#include "widen_rows.hpp"

namespace tg {

/// The source language a target's kernels are rendered in (None: INTERP runs the program itself).
enum class Dialect : std::uint8_t { None, C, Cuda, Glsl, Wgsl };

/// What the pass list makes kernels for: the fuser's and the lowering's choices, which device
/// passes run, and the dialect. Devices give theirs (Device::target(), with the environment's
/// overrides); the constructors below are the defaults, usable at compile time.
struct Target {
  FuseOptions fuse;
  LowerOptions lower;
  bool contract = false;         // sums of products as fused multiply-adds (CPU, INTERP)
  bool cpu_passes = false;       // reuse_values to unroll_loops (C on a CPU)
  int vector_bytes = 32;         // vectorize's vectors (64: the C compiler has AVX-512)
  bool bf16_pairs = false;       // pair_products (the host has AVX512_BF16's vdpbf16ps)
  bool amx = false;              // amx_products (the host has AMX's bfloat16 tiles)
  bool gpu = false;              // gpu_program shapes programs for a GPU launch
  bool split_reductions = false; // the front end cuts long reductions into few outputs in two
                                 // (a GPU's work-groups: detail::gpu_reduce_split)
  GpuOptions launch;             // (gpu only)
  DecomposeOptions decompose;    // op semantics the dialect needs spelled out as ops
  bool narrow32 = false;         // integers computed in 32 bits only (WGSL)
  Dialect dialect = Dialect::None;
  bool subgroups = false;   // GLSL: the device has subgroup arithmetic
  bool exact_float = false; // GLSL: the device computes float ops unfused (docs/gpu.md)
  bool f16 = false;         // WGSL: float16 buffers are array<f16> (the device has shader-f16)

  /// The CPU device's kernels: rows of a reduction in one kernel, register tiles of
  /// `tile_lanes` columns, the CPU passes, C.
  static constexpr Target cpu(int tile_lanes = LowerOptions{}.tile_lanes) {
    Target t;
    t.fuse.row_reductions = true;
    t.lower.tile_lanes = tile_lanes;
    t.contract = t.cpu_passes = true;
    t.decompose = DecomposeOptions::c_style();
    t.dialect = Dialect::C;
    return t;
  }
  /// The reference interpreter: the CPU's schedule and lowering, run as programs.
  static constexpr Target interp(int tile_lanes = LowerOptions{}.tile_lanes) {
    Target t = cpu(tile_lanes);
    t.cpu_passes = false;
    t.decompose = {}; // INTERP runs the ops' own semantics: the oracle of the decompositions
    t.dialect = Dialect::None;
    return t;
  }
  /// A GPU device's kernels: one output (or a register tile) per thread, gpu_program, `dialect`.
  static constexpr Target gpu_of(Dialect dialect, GpuOptions launch = {}) {
    Target t;
    t.lower = t.lower.for_gpu();
    // WGSL's devices are often software adapters, where a barrier costs more than the L1 reuse
    // a work-group tile gains: products keep the register tiles there
    if (dialect == Dialect::Wgsl) launch.shared_tiles = false;
    if (dialect != Dialect::Cuda) launch.tensor_cores = false; // (mma.sync)
    if (launch.shared_tiles) t.lower.gpu_tile = 1;             // shared_tiles makes the tiles
    t.gpu = t.split_reductions = true;
    t.fuse.merge_epilogues = true;  // (a thread's epilogue: a few registers, not a tile's)
    t.fuse.merge_reductions = true; // (a work-group's loops: no register tile to lose)
    t.launch = launch;
    t.decompose = DecomposeOptions::gpu();
    t.dialect = dialect;
    return t;
  }
  /// CUDA converts float16 in hardware (cvt), exactly, and keeps its exp2f.
  static constexpr Target cuda(GpuOptions launch = {}) {
    Target t = gpu_of(Dialect::Cuda, launch);
    t.decompose.f16_bits = t.decompose.exp2_poly = false;
    t.decompose.pow = t.decompose.pow_native = true; // C's special cases and integer exponents
    return t;
  }
  static constexpr Target glsl(GpuOptions launch = {}, bool subgroups = false,
                               bool exact_float = false) {
    Target t = gpu_of(Dialect::Glsl, launch);
    t.decompose.subnormal_log2 = t.decompose.ieee_div = t.decompose.pow = true;
    t.decompose.sin_reduce = true;
    t.decompose.pow_f64 = exact_float;
    t.subgroups = subgroups;
    t.exact_float = exact_float;
    return t;
  }
  /// WebGPU: GLSL's decompositions but exp2, and every integer in 32 bits (narrow32). WGSL lets
  /// a compiler reassociate float arithmetic, which undoes the polynomial's exact rounding steps
  /// (Dawn on Mesa's GLES folded (x + 1.5 * 2^23) - 1.5 * 2^23 to x: 2^0.5 came out 1), so exp2 is
  /// WGSL's own.
  static constexpr Target wgsl(GpuOptions launch = {}, bool f16 = false) {
    Target t = gpu_of(Dialect::Wgsl, launch);
    t.f16 = f16;
    t.decompose.subnormal_log2 = t.decompose.ieee_div = t.decompose.pow = true;
    t.decompose.sin_reduce = true;
    t.decompose.exp2_poly = false;
    t.decompose.no_int64 = t.narrow32 = true;
    return t;
  }
  /// The schedule the static front end plans at compile time for every device (the fuser's and
  /// the lowering's defaults); each device runs its own device passes on it.
  /// Its plans keep one output per kernel (their tables: fixed/bridge.hpp).
  static constexpr Target portable() {
    Target t;
    t.fuse.merge_outputs = false;
    return t;
  }
  /// The portable schedule and lowering finished by this target's device passes and dialect: what
  /// tg::Tensor(expr) runs on its device (fixed/bridge.hpp).
  constexpr Target planned() const {
    Target t = *this;
    t.fuse = portable().fuse;
    t.lower = portable().lower;
    return t;
  }

  /// Every optimization off (TG_OPT=0): one output and one accumulator per loop iteration.
  constexpr Target unoptimized() const {
    Target t = *this;
    t.fuse.row_reductions = false;
    t.fuse.broadcast_operand_min = 0;
    t.fuse.merge_outputs = false;
    t.lower = gpu ? LowerOptions::off().for_gpu() : LowerOptions::off();
    t.launch.shared_tiles = false;
    t.lower.tile_lanes = lower.tile_lanes;
    return t;
  }
};

/// A pass log that sees nothing (the default; the only one in constant expressions). A log has
/// start() -> a mark, and done(name, mark, describe): describe() gives the pass's result as text.
struct NoPassLog {
  constexpr int start() const { return 0; }
  template <class F> constexpr void done(const char*, int, F&&) const {}
};

/// A readable dump of a graph: one line per node (TG_DEBUG=4).
constexpr Text dump(const Graph& g) {
  Text t;
  t << "graph\n";
  for (std::size_t i = 0; i < g.size(); ++i) {
    const Node& n = g.nodes[i];
    t << "  %" << i << " = " << op_name(n.op) << ' ' << dtype_name(n.dtype) << ' ';
    detail::write_shape(t, n.shape);
    for (int k = 0; k < n.nsrc(); ++k) t << " %" << n.src[std::size_t(k)];
    for (const Movement& m : n.moves) {
      t << ' ' << move_name(m.op);
      detail::write_shape(t, m.a);
      if (m.op == MoveOp::Window) detail::write_shape(t, m.b); // (steps and dilations)
    }
    if (!n.axes.empty()) {
      t << " axes=";
      for (int a : n.axes) t << a << ',';
    }
    t << '\n';
  }
  return t;
}
/// The kernels of a schedule: each one's root node, its op and shape, and the nodes it reads.
constexpr Text dump(const Graph& g, const Schedule& s) {
  Text t;
  t << "schedule: " << s.kernels.size() << " kernel(s)\n";
  for (const Kernel& k : s.kernels) {
    t << "  kernel %" << k.root << ' ' << op_name(g[k.root].op) << ' ';
    detail::write_shape(t, g[k.root].shape);
    for (std::size_t o = 1; o < k.outputs.size(); ++o)
      t << " %" << k.outputs[o] << ' ' << op_name(g[k.outputs[o]].op);
    t << " <-";
    for (int in : k.inputs) t << " %" << in;
    t << '\n';
  }
  return t;
}
/// Which node results share which temporary buffers.
constexpr Text dump(const MemoryPlan& plan) {
  Text t;
  t << "memory plan: " << plan.slot_bytes.size() << " temporary buffer(s)\n";
  for (std::size_t i = 0; i < plan.slot.size(); ++i)
    if (plan.slot[i] >= 0) {
      t << "  %" << i << " -> temporary " << plan.slot[i] << " (";
      detail::write_sint(t, plan.slot_bytes[std::size_t(plan.slot[i])]);
      t << " bytes)\n";
    }
  return t;
}

/// The first graph pass: the graph's nodes grouped into kernels.
template <class Log = NoPassLog>
constexpr Schedule schedule_graph(const Graph& g, const Target& t, Log&& log = {}) {
  auto mark = log.start();
  Schedule s = fuse(g, t.fuse);
  log.done("fuse", mark, [&] { return dump(g, s); });
  if (t.fuse.merge_outputs) {
    mark = log.start();
    s = merge_outputs(g, std::move(s), t.fuse);
    log.done("merge_outputs", mark, [&] { return dump(g, s); });
  }
  return s;
}
/// The second: which kernel results share temporary buffers (`keep[n]`: node n's result outlives
/// the run). The static front end's plans give every result its own buffer and skip it.
template <class Log = NoPassLog>
constexpr MemoryPlan plan_buffers(const Graph& g, const Schedule& s, const NodeFlags& keep,
                                  Log&& log = {}) {
  auto mark = log.start();
  MemoryPlan m = plan_memory(g, s, keep);
  log.done("plan_memory", mark, [&] { return dump(m); });
  return m;
}

/// Kernel k of the schedule lowered to a linear program with the target's choices.
template <class Log = NoPassLog>
constexpr Program lower_kernel(const Graph& g, const Schedule& s, std::size_t k, const Target& t,
                               Log&& log = {}) {
  auto mark = log.start();
  Program p = lower(g, s, k, t.lower);
  log.done("lower", mark, [&] { return dump(p); });
  return p;
}

/// The target's device passes over a lowered program: what its device runs.
template <class Log = NoPassLog>
constexpr Program device_passes(Program p, const Target& t, Log&& log = {}) {
  auto step = [&](const char* name, auto pass) {
    auto mark = log.start();
    p = pass(p);
    log.done(name, mark, [&] { return dump(p); });
  };
  if (t.contract) step("contract", [](const Program& q) { return contract(q); });
  if (t.cpu_passes) {
    step("reuse_values", [](const Program& q) { return reuse_values(q); });
    step("vectorize", [&](const Program& q) { return vectorize(q, t.vector_bytes); });
    step("pack_panels", [](const Program& q) { return pack_panels(q); });
    if (t.bf16_pairs) step("pair_products", [](const Program& q) { return pair_products(q); });
    if (t.amx) step("amx_products", [](const Program& q) { return amx_products(q); });
    step("pack_rows", [](const Program& q) { return pack_rows(q); });
    step("widen_rows", [](const Program& q) { return widen_rows(q); });
    step("partition_loops", [](const Program& q) { return partition_loops(q); });
    step("unroll_loops", [](const Program& q) { return unroll_loops(q); });
  }
  if (t.gpu && t.launch.shared_tiles)
    step("shared_tiles", [&](const Program& q) {
      Program r = shared_tiles(q, t.launch);
      return r.local > 0 ? r : q;
    });
  if (t.gpu && p.local == 0)
    step("gpu_program", [&](const Program& q) { return gpu_program(q, t.launch); });
  if (t.decompose.any())
    step("decompose", [&](const Program& q) { return decompose(q, t.decompose); });
  if (t.narrow32) step("narrow32", [](const Program& q) { return narrow32(q); });
  return p;
}

/// A program after its device passes, as source in the target's dialect (empty for None).
constexpr Text render_kernel(const Program& p, const Target& t) {
  switch (t.dialect) {
  case Dialect::C:
    return render_c(p);
  case Dialect::Cuda:
    return render_cuda(p);
  case Dialect::Glsl:
    return render_glsl(p, t.subgroups, t.exact_float);
  case Dialect::Wgsl:
    return render_wgsl(p, t.f16);
  case Dialect::None:
    break;
  }
  return Text{};
}

/// A kernel as the pass list leaves it: the program its device runs, and its source.
struct KernelCode {
  Program program;
  Text source;
};

/// A lowered program through the rest of the kernel passes: device passes, then render.
template <class Log = NoPassLog>
constexpr KernelCode finish_kernel(Program lowered, const Target& t, Log&& log = {}) {
  KernelCode c;
  c.program = device_passes(std::move(lowered), t, log);
  auto mark = log.start();
  c.source = render_kernel(c.program, t);
  log.done("render", mark, [&] { return c.source; });
  return c;
}

/// Kernel k of the schedule through every kernel pass, in order.
template <class Log = NoPassLog>
constexpr KernelCode compile_kernel(const Graph& g, const Schedule& s, std::size_t k,
                                    const Target& t, Log&& log = {}) {
  return finish_kernel(lower_kernel(g, s, k, t, log), t, log);
}

} // namespace tg
