#pragma once
// gpu_program: a lowered Program -> the same program shaped for a GPU launch, shared by every GPU
// dialect (GLSL, CUDA). The parallel outer loop (a Range over the Bound start/end) becomes the
// work item of each thread with a bounds check (Special + If); the inner output loops with constant
// sizes are flattened into the item index; and when there are few items and long reductions, a
// whole work-group shares one item: each reduction's loop is split across the group's lanes
// (start = lane, step = local) and combined through local memory (GroupReduce), and only lane 0
// stores. The CPU path never calls this; INTERP cannot run its output (Special, GroupReduce).
#include "ir.hpp"

namespace tg {

struct GpuOptions {
  int local = 256;      // threads per work-group (rounded down to a power of two)
  int max_local = 1024; // the device's limit
  int grouped = -1;     // -1: decide; 0: never; 1: whenever the program reduces
  int per_thread = 4;   // items a thread runs in a kernel without reductions of 2^20 items or more
  /// Products (a matmul, a convolution's window product) as work-group tiles staged through
  /// shared memory (codegen/shared_tiles.hpp), when they have at least tile_min_outputs outputs;
  /// the block tile is the largest that leaves tile_blocks work-groups (two per SM of an H100).
  bool shared_tiles = true;
  std::int64_t tile_min_outputs = 4096;
  std::int64_t tile_blocks = 256;
  /// A block side of 16, 32, 64 or 128 forced (TG_BEAM's variants): that block, or the largest
  /// under it the dtype allows; tensor cores need 64 or more. 0: chosen by tile_blocks.
  std::int64_t tile_block = 0;
  /// 2: a product's shared-memory slices in two buffers, the next step's loaded from global
  /// memory while the group computes on the current one (one barrier a step instead of two), where
  /// both fit in shared_bytes. 1: one buffer.
  int stages = 1;
  /// The shared memory a work-group may use: 16 KiB, what every Vulkan device has; CUDA's
  /// devices set 48 KiB (a kernel's static shared memory).
  std::int64_t shared_bytes = 16384;
  /// A thread's tile: rows and columns 16 apart (0: a warp's shared-memory reads are broadcasts
  /// or consecutive words) or consecutive (1: the compiler may read them as vectors)
  int tile_layout = 1;
  /// float16 and bfloat16 products on tensor cores (mma.sync, float32 sums): CUDA devices of
  /// compute capability 8.0 and later set it.
  bool tensor_cores = false;
  /// float32 products on tensor cores too, their operands rounded to TF32 (10 bits of mantissa):
  /// where tg::set_float32_matmul_precision allows it (PyTorch's allow_tf32; off by default).
  bool tf32 = false;
};

namespace detail {

constexpr int floor_pow2(std::int64_t x) {
  int r = 1;
  while (std::int64_t(r) * 2 <= x && r < (1 << 30)) r *= 2;
  return r;
}

struct GpuRewriter : ProgramRewriter {
  constexpr int special(GpuIndex g) {
    return add(UOp{UKind::Special, Op::Add, DType::Int64, {-1, -1, -1}, {}, int(g), {}});
  }
  constexpr bool is_const(int old) const { return in.ops[std::size_t(old)].kind == UKind::Const; }
  constexpr std::int64_t ival(int old) const { return in.ops[std::size_t(old)].value.i; }
};

} // namespace detail

/// The program shaped for a GPU launch of `items` = outer * items_per_outer work items, in
/// work-groups of `local` threads (one item per thread, or per work-group when `grouped`).
constexpr Program gpu_program(const Program& p, GpuOptions o = {}) {
  const std::vector<UOp>& ops = p.ops;
  const std::size_t n = ops.size();
  // Which ranges belong to a reduction (opened between a DefineAcc and its AccAssign).
  std::vector<int> reduction_of(n, -1); // Range -> its DefineAcc
  std::vector<int> end_of(n, -1);       // Range -> its EndRange
  int outer = -1;
  {
    std::vector<int> open_accs, stack;
    for (std::size_t i = 0; i < n; ++i) {
      const UOp& u = ops[i];
      if (u.kind == UKind::DefineAcc) open_accs.push_back(int(i));
      // an AccAssign closes its accumulator (the lanes of an upcast kernel close several)
      if (u.kind == UKind::AccAssign)
        for (std::size_t k = 0; k < open_accs.size(); ++k)
          if (open_accs[k] == u.src[0]) open_accs.erase(open_accs.begin() + std::ptrdiff_t(k));
      if (u.kind == UKind::Range) {
        stack.push_back(int(i));
        if (!open_accs.empty()) reduction_of[i] = open_accs.back();
        if (outer < 0 && ops[std::size_t(u.src[0])].kind == UKind::Bound) outer = int(i);
      }
      if (u.kind == UKind::EndRange) end_of[std::size_t(u.src[0])] = int(i);
    }
  }
  if (outer < 0) throw graph_error{"gpu_program: the program has no outer loop"};
  // Inner output loops: flattened into the item when all of them have constant sizes.
  std::vector<int> inner;
  std::int64_t m = 1;
  bool flatten = true;
  for (std::size_t i = 0; i < n; ++i) {
    const UOp& u = ops[i];
    if (u.kind != UKind::Range || int(i) == outer || reduction_of[i] >= 0) continue;
    inner.push_back(int(i));
    const UOp& s = ops[std::size_t(u.src[0])];
    const UOp& e = ops[std::size_t(u.src[1])];
    if (s.kind != UKind::Const || s.value.i != 0 || e.kind != UKind::Const || u.src[2] >= 0 ||
        e.value.i <= 0)
      flatten = false;
    else
      m *= e.value.i;
  }
  if (!flatten) m = 1;
  // Reductions: the longest one decides whether a work-group shares an item.
  bool reduces = false;
  std::int64_t longest = 1;
  for (std::size_t i = 0; i < n; ++i) {
    if (ops[i].kind != UKind::DefineAcc) continue;
    reduces = true;
    std::int64_t len = 1;
    for (std::size_t r = 0; r < n; ++r)
      if (reduction_of[r] == int(i)) {
        const UOp& e = ops[std::size_t(ops[r].src[1])];
        len *= e.kind == UKind::Const ? e.value.i : 4096; // a symbolic size counts as long
      }
    if (len > longest) longest = len;
  }
  // A work-group shares an item where there are too few items to fill a GPU one a thread and
  // each reduction is long, also against their count: many shorter reductions (a [64, 256] x
  // [256, 128] product: 8192 items of 256) run one a thread, as fast on GPUs and far faster on
  // software adapters (SwiftShader, llvmpipe), whose work-group barriers are costly.
  std::int64_t items = p.outer.is_const() ? p.outer.constant() * m : std::int64_t(1) << 40;
  bool grouped = reduces && (o.grouped == 1 || (o.grouped < 0 && items < 16384 && longest >= 256 &&
                                                longest * 4 >= items));
  int local = detail::floor_pow2(o.local < 1 ? 1 : o.local);
  if (local > o.max_local) local = detail::floor_pow2(o.max_local);
  if (grouped && longest < local)
    local = std::max(std::min(local, 32), detail::floor_pow2(longest));

  // A kernel without reductions over many items runs 4 of them a thread, a work-group's width
  // apart (loads stay coalesced): each thread then has 4 loads in flight, which brings an
  // elementwise kernel near a device-to-device copy's speed (8 was 3x slower on an H100;
  // docs/performance.md).
  const std::int64_t per_thread =
      !reduces && p.outer.is_const() && items >= (std::int64_t(1) << 20) && o.per_thread > 1
          ? o.per_thread
          : 1;

  detail::GpuRewriter w{{p, {}, std::vector<int>(n, -1)}};
  int item = w.special(GpuIndex::Item);
  int lane = grouped ? w.special(GpuIndex::Lane) : -1;
  int lane0 = grouped ? w.alu(Op::CmpEq, DType::Bool, lane, w.cint(0)) : -1;
  std::vector<int> skip_end(n, 0);      // EndRange ops that vanish (flattened loops)
  std::vector<int> reduce_after(n, -1); // EndRange -> the DefineAcc to combine after it
  std::vector<int> loop(n, -1);         // Range -> the loop that replaced it
  // Declarations first (buffers, launch values, constants), then the bounds check, so that
  // everything else, including work outside the outer loop, runs once per item in range.
  for (std::size_t i = 0; i < n; ++i) {
    UKind k = ops[i].kind;
    if (k == UKind::Param || k == UKind::Bound || k == UKind::VarParam || k == UKind::Const)
      w.map[i] = w.add(ops[i]);
  }
  int rem = -1, if_outer = -1, thread_loop = -1;
  if (per_thread > 1) {
    thread_loop = w.add(
        UOp{UKind::Range, Op::Add, DType::Int64, {w.cint(0), w.cint(per_thread), -1}, {}, -1, {}});
    item = w.alu(Op::Add, DType::Int64, item,
                 w.alu(Op::Mul, DType::Int64, thread_loop, w.cint(local)));
  }
  {
    const UOp& u = ops[std::size_t(outer)];
    int q = item;
    if (m > 1) {
      int mm = w.cint(m);
      q = w.alu(Op::Div, DType::Int64, item, mm);
      rem = w.alu(Op::Mod, DType::Int64, item, mm);
    }
    int idx = w.alu(Op::Add, DType::Int64, w.map[std::size_t(u.src[0])], q);
    int ok = w.alu(Op::CmpLt, DType::Bool, idx, w.map[std::size_t(u.src[1])]);
    if_outer = w.add(UOp{UKind::If, Op::Add, DType::Bool, {ok, -1, -1}, {}, -1, {}});
    w.map[std::size_t(outer)] = idx;
    skip_end[std::size_t(end_of[std::size_t(outer)])] = 1;
  }
  for (std::size_t i = 0; i < n; ++i) {
    const UOp& u = ops[i];
    if (w.map[i] >= 0)
      continue; // a declaration, the outer loop, or folded into a flattened reduction loop
    if (u.kind == UKind::Range && reduction_of[i] < 0 && m > 1) { // a flattened inner output loop
      std::int64_t stride = 1;
      bool after = false;
      for (int r : inner) {
        if (after) stride *= w.ival(ops[std::size_t(r)].src[1]);
        if (r == int(i)) after = true;
      }
      int x = rem;
      if (stride > 1) x = w.alu(Op::Div, DType::Int64, x, w.cint(stride));
      if (stride * w.ival(u.src[1]) < m)
        x = w.alu(Op::Mod, DType::Int64, x, w.cint(w.ival(u.src[1])));
      w.map[i] = x;
      skip_end[std::size_t(end_of[i])] = 1;
      continue;
    }
    if (u.kind == UKind::Range && reduction_of[i] >= 0 && grouped) {
      int acc = reduction_of[i];
      bool first = i > 0 && (ops[i - 1].kind == UKind::DefineAcc && int(i - 1) == acc);
      if (first) {
        // Every range of this reduction, outermost first; flattened into one strided loop when
        // their sizes are constant, else only this (outermost) loop is split across the lanes.
        std::vector<int> rs;
        bool all_const = true;
        for (std::size_t r = i; r < n; ++r)
          if (reduction_of[r] == acc) {
            rs.push_back(int(r));
            const UOp& ru = ops[r];
            if (!w.is_const(ru.src[0]) || w.ival(ru.src[0]) != 0 || !w.is_const(ru.src[1]) ||
                ru.src[2] >= 0)
              all_const = false;
          }
        int step = w.cint(local);
        if (all_const && rs.size() > 1) {
          std::int64_t total = 1;
          for (int r : rs) total *= w.ival(ops[std::size_t(r)].src[1]);
          int f = w.add(
              UOp{UKind::Range, Op::Add, DType::Int64, {lane, w.cint(total), step}, {}, u.arg, {}});
          std::int64_t stride = total;
          for (int r : rs) {
            std::int64_t ext = w.ival(ops[std::size_t(r)].src[1]);
            stride /= ext;
            int x = f;
            if (stride > 1) x = w.alu(Op::Div, DType::Int64, x, w.cint(stride));
            if (stride * ext < total) x = w.alu(Op::Mod, DType::Int64, x, w.cint(ext));
            w.map[std::size_t(r)] = x;
            if (r != int(i)) skip_end[std::size_t(end_of[std::size_t(r)])] = 1;
          }
          loop[i] = f; // the first range's EndRange closes the strided loop
          reduce_after[std::size_t(end_of[i])] = acc;
          continue;
        }
        int start = w.alu(Op::Add, DType::Int64, w.map[std::size_t(u.src[0])], lane);
        UOp r = u;
        r.src = {start, w.map[std::size_t(u.src[1])], step};
        w.map[i] = w.add(r);
        reduce_after[std::size_t(end_of[i])] = acc;
        continue;
      }
    }
    if (u.kind == UKind::EndRange && skip_end[i] == 1) continue;
    if (u.kind == UKind::Store && grouped) {
      int g = w.add(UOp{UKind::If, Op::Add, DType::Bool, {lane0, -1, -1}, {}, -1, {}});
      w.map[i] = w.add(w.remapped(u));
      w.add(UOp{UKind::EndIf, Op::Add, DType::Bool, {g, -1, -1}, {}, -1, {}});
      continue;
    }
    UOp c = w.remapped(u);
    if (u.kind == UKind::EndRange && loop[std::size_t(u.src[0])] >= 0)
      c.src[0] = loop[std::size_t(u.src[0])];
    w.map[i] = w.add(c);
    if (u.kind == UKind::EndRange && reduce_after[i] >= 0) {
      // every accumulator of this loop: the lanes of an upcast kernel define theirs right before it
      int first_acc = reduce_after[i];
      while (first_acc > 0 && ops[std::size_t(first_acc - 1)].kind == UKind::DefineAcc) --first_acc;
      for (int a = first_acc; a <= reduce_after[i]; ++a)
        w.add(UOp{UKind::GroupReduce,
                  ops[std::size_t(a)].op,
                  ops[std::size_t(a)].dtype,
                  {w.map[std::size_t(a)], -1, -1},
                  {},
                  -1,
                  {}});
    }
  }
  w.add(UOp{UKind::EndIf, Op::Add, DType::Bool, {if_outer, -1, -1}, {}, -1, {}});
  if (thread_loop >= 0)
    w.add(UOp{UKind::EndRange, Op::Add, DType::Int64, {thread_loop, -1, -1}, {}, -1, {}});
  Program r;
  r.ops = std::move(w.out);
  r.params = p.params;
  r.outputs = p.outputs;
  r.vars = p.vars;
  r.outer = p.outer;
  r.work = p.work;
  r.name = p.name;
  r.local = local;
  r.grouped = grouped;
  r.items_per_outer = m;
  r.per_thread = per_thread;
  return r;
}

} // namespace tg

namespace tg {

/// One launch of a GPU program: the item it starts at and its grid of work-groups.
struct GpuDispatch {
  std::int64_t base = 0;                // first item (the kernel adds group * local + lane)
  std::array<std::int64_t, 3> groups{}; // work-groups in x, y, z
};

/// The launches that cover every item of `p` for an outer size of `outer`, within the device's
/// limits on work-groups per dimension (e.g. 65,535): the grid spills from x into y and z, and
/// past what one grid holds into further launches. Work-groups past the last item exit early.
constexpr std::vector<GpuDispatch> gpu_dispatches(const Program& p, std::int64_t outer,
                                                  std::array<std::int64_t, 3> max_groups) {
  std::vector<GpuDispatch> out;
  const std::int64_t items = outer * p.items_per_outer;
  if (items <= 0) return out;
  const std::int64_t per_group = p.grouped ? 1 : p.local * p.per_thread;
  const std::int64_t groups = (items + per_group - 1) / per_group;
  for (auto& m : max_groups)
    if (m < 1) m = 1;
  for (std::int64_t first = 0; first < groups;) {
    std::int64_t left = groups - first;
    GpuDispatch d;
    d.base = first * per_group;
    d.groups[0] = left < max_groups[0] ? left : max_groups[0];
    std::int64_t y = (left + d.groups[0] - 1) / d.groups[0];
    d.groups[1] = y < max_groups[1] ? y : max_groups[1];
    std::int64_t z = (left + d.groups[0] * d.groups[1] - 1) / (d.groups[0] * d.groups[1]);
    d.groups[2] = z < max_groups[2] ? z : max_groups[2];
    out.push_back(d);
    first += d.groups[0] * d.groups[1] * d.groups[2];
  }
  return out;
}

} // namespace tg
