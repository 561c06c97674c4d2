#pragma once
// shared_tiles: a product kernel (one sum of x * y per output, x shared along some output axes, y
// along others: a matmul, bmm, linear, a convolution's window product) -> the same kernel as
// work-group tiles staged through shared memory, shaped for a GPU launch (it replaces
// gpu_program for the kernels it takes). A work-group of 16 x 16 threads computes a block of
// bm x bn outputs; each thread a register tile of r x c of them, consecutive (read from shared
// memory as vectors) or 16 apart (GpuOptions::tile_layout). The reduction runs in steps of bk:
// the group's threads load the bm x bk slice of x and the bk x bn slice of y into shared memory
// (each element once, coalesced along whichever axis the operand's memory is contiguous in),
// wait, and every thread accumulates its tile from shared memory. x and y are the program's own
// expressions (loads, casts, masks, fused elementwise ops) re-emitted at the staged indices; the
// epilogue after the sum (bias, activation, cast) and the store are re-emitted per tile output.
// float16/bfloat16 products on CUDA's tensor cores (GpuOptions::tensor_cores): 8 warps each run
// mma.sync over a grid of 16 x 8 tiles (UKind::Mma, rendered by render_cuda.hpp); float32 ones
// too where TF32 is allowed (GpuOptions::tf32), their operands rounded to TF32. Everything else
// (programs with several sums, symbolic sizes, integer sums) is left to gpu_program. Measurements:
// docs/performance.md.
#include "gpu_program.hpp"

namespace tg {

namespace detail {

/// The block and thread tile of a shared-memory product (16 x 16 threads a work-group).
struct SharedTileShape {
  std::int64_t bm = 0, bn = 0, bk = 0; // a block's outputs, and the reduction's step
  std::int64_t r = 0, c = 0;           // a thread's outputs: rows and columns
};

class SharedTiler : GpuRewriter {
public:
  constexpr SharedTiler(const Program& p, const GpuOptions& o)
      : GpuRewriter{{p, {}, std::vector<int>(p.ops.size(), -1)}}, o_(o) {}

  /// The tiled program, or one with local == 0 when the kernel is not a product it takes.
  constexpr Program run() {
    Program none;
    if (!analyze()) return none;
    emit();
    Program r;
    r.ops = std::move(out);
    r.params = in.params;
    r.outputs = in.outputs;
    r.vars = in.vars;
    r.outer = SInt(blocks_);
    r.work = SInt(blocks_ * kThreads * ((k_ + s_.bk - 1) / s_.bk)); // loop iterations
    r.name << "rt" << s_.bm << 'x' << s_.bn << 'k' << s_.bk << (two_ ? "s2" : "");
    for (std::size_t k = 0; k < ext_.size(); ++k) // the output loops, as lower names them
      if (range_ops_[k] < acc_) r.name << '_' << ext_[k];
    r.local = int(kThreads);
    r.items_per_outer = kThreads;
    return r;
  }

private:
  static constexpr std::int64_t kThreads = 256, kSide = 16; // 16 x 16 threads
  static constexpr std::int64_t kPad = 4; // shared rows padded: staged stores spread over banks

  const GpuOptions& o_;
  std::vector<std::uint64_t> deps_; // per op: the ranges it depends on (bit: the range's ordinal)
  std::vector<char> uses_acc_;      // per op: depends on the sum
  std::vector<int> range_ops_;      // ordinal -> op
  std::vector<std::int64_t> ext_;   // ordinal -> extent
  std::vector<int> rows_, cols_, batch_, red_; // ordinals, outermost first
  int acc_ = -1, x_ = -1, y_ = -1, mul_ = -1;
  std::vector<int> stores_; // (a kernel with several outputs: one store each, after the sum)
  std::int64_t m_ = 1, n_ = 1, k_ = 1, b_ = 1, blocks_ = 0;
  bool x_k_fast_ = true, y_k_fast_ = false; // which axis consecutive threads stage along
  bool tc_ = false;   // on tensor cores: operands staged a row per row of A (column of B)...
  bool half_ = false; // ... as 16-bit words (float16, bfloat16), else as float32s (TF32)
  bool two_ = false;  // two stages (GpuOptions::stages)
  SharedTileShape s_;
  // emission
  std::vector<int> memo_; // old op -> new op in the current scope
  std::vector<int> env_;  // range ordinal -> its value in the current scope
  // (map, the rewriter's: old op -> new op for those that depend on no loop and no sum)
  int new_acc_ = -1; // the sum in the current scope (the epilogue's)

  constexpr const UOp& op(int i) const { return in.ops[std::size_t(i)]; }
  constexpr int ordinal(int range_op) const {
    for (std::size_t k = 0; k < range_ops_.size(); ++k)
      if (range_ops_[k] == range_op) return int(k);
    return -1;
  }
  constexpr std::int64_t extent(const std::vector<int>& ords) const {
    std::int64_t e = 1;
    for (int k : ords) e *= ext_[std::size_t(k)];
    return e;
  }

  constexpr bool analyze() {
    if (o_.max_local < kThreads) return false; // (a device with smaller work-groups)
    const std::size_t n = in.ops.size();
    deps_.assign(n, 0);
    uses_acc_.assign(n, 0);
    int aa = -1;
    for (std::size_t i = 0; i < n; ++i) {
      const UOp& u = op(int(i));
      switch (u.kind) {
      case UKind::Range: {
        if (range_ops_.size() >= 64 || u.src[2] >= 0) return false;
        const UOp& s = op(u.src[0]);
        const UOp& e = op(u.src[1]);
        std::int64_t x = 0;
        if (s.kind == UKind::Bound) { // the outer loop: [start, end) of [0, outer)
          if (!in.outer.is_const()) return false;
          x = in.outer.constant();
        } else if (s.kind == UKind::Const && s.value.i == 0 && e.kind == UKind::Const) {
          x = e.value.i;
        } else {
          return false;
        }
        if (x < 1) return false;
        deps_[i] = std::uint64_t(1) << range_ops_.size();
        range_ops_.push_back(int(i));
        ext_.push_back(x);
        break;
      }
      case UKind::DefineAcc:
        if (acc_ >= 0 || u.op != Op::Add || !is_float(u.dtype)) return false;
        acc_ = int(i);
        uses_acc_[i] = 1;
        break;
      case UKind::AccAssign:
        if (aa >= 0 || u.src[0] != acc_ || u.op != Op::Add) return false;
        aa = int(i);
        break;
      case UKind::Store:
        if (aa < 0) return false;
        stores_.push_back(int(i));
        break;
      case UKind::Param:
      case UKind::VarParam:
      case UKind::Bound:
      case UKind::Const:
      case UKind::EndRange:
      case UKind::Load:
      case UKind::Alu:
        break;
      default:
        return false;
      }
      if (u.kind != UKind::Range && u.kind != UKind::DefineAcc)
        for (int s : u.src)
          if (s >= 0) {
            deps_[i] |= deps_[std::size_t(s)];
            uses_acc_[i] |= uses_acc_[std::size_t(s)];
          }
    }
    if (acc_ < 0 || aa < 0 || stores_.empty()) return false;
    // the reduction's loops are those opened between the sum and its update
    std::vector<int> outs;
    for (std::size_t k = 0; k < range_ops_.size(); ++k) {
      int r = range_ops_[k];
      if (r > acc_ && r < aa)
        red_.push_back(int(k));
      else if (r < acc_)
        outs.push_back(int(k));
      else
        return false; // a loop after the sum
    }
    const UOp& v = op(op(aa).src[1]);
    if (v.kind != UKind::Alu || v.op != Op::Mul || v.dtype != op(acc_).dtype || red_.empty())
      return false;
    mul_ = op(aa).src[1];
    x_ = v.src[0];
    y_ = v.src[1];
    if (uses_acc_[std::size_t(x_)] || uses_acc_[std::size_t(y_)]) return false;
    std::uint64_t red_bits = 0;
    for (int k : red_) red_bits |= std::uint64_t(1) << k;
    for (int i : stores_) {
      const UOp& st = op(i);
      if ((deps_[std::size_t(st.src[1])] | deps_[std::size_t(st.src[2])]) & red_bits) return false;
      if (uses_acc_[std::size_t(st.src[1])]) return false;
    }
    // rows: output loops x reads and y does not; columns the other way; the rest a batch
    for (int k : outs) {
      const std::uint64_t bit = std::uint64_t(1) << k;
      const bool in_x = deps_[std::size_t(x_)] & bit, in_y = deps_[std::size_t(y_)] & bit;
      (in_x && !in_y ? rows_ : in_y && !in_x ? cols_ : batch_).push_back(k);
    }
    if (rows_.empty() || cols_.empty()) return false;
    m_ = extent(rows_);
    n_ = extent(cols_);
    k_ = extent(red_);
    b_ = extent(batch_);
    if (m_ * n_ * b_ < o_.tile_min_outputs || k_ < 8) return false;
    const DType xd = op(x_).dtype;
    tc_ = o_.tensor_cores && (is_half(xd) || (o_.tf32 && xd == DType::Float32)) &&
          op(y_).dtype == xd && m_ >= 64 && n_ >= 64 &&
          (o_.tile_block == 0 || o_.tile_block >= 64) &&
          compute_dtype(op(acc_).dtype) == DType::Float32;
    half_ = tc_ && is_half(xd);
    choose_shape();
    x_k_fast_ = stride(x_, red_.back()) == 1 || stride(x_, rows_.back()) != 1;
    y_k_fast_ = stride(y_, cols_.back()) != 1 && stride(y_, red_.back()) == 1;
    return true;
  }

  /// The largest block tile that still leaves the GPU enough work-groups (o_.tile_blocks), or
  /// the one o_.tile_block forces.
  constexpr void choose_shape() {
    const bool forced = o_.tile_block > 0;
    if (tc_) { // 8 warps of (bm / 2) x (bn / 4) outputs; a step of 32 (2 or 4 mma k-steps)
      for (std::int64_t t : {std::int64_t(128), std::int64_t(64)}) {
        if (forced && t > o_.tile_block) continue;
        s_.bm = s_.bn = t;
        s_.bk = 32;
        blocks_ = b_ * ((m_ + t - 1) / t) * ((n_ + t - 1) / t);
        if (forced || blocks_ >= o_.tile_blocks) return;
      }
      return;
    }
    const bool wide = compute_dtype(op(acc_).dtype) == DType::Float64;
    for (std::int64_t t : {std::int64_t(8), std::int64_t(4), std::int64_t(2), std::int64_t(1)}) {
      if (wide && t > 4) continue; // 64 double accumulators spill
      if (forced && kSide * t > o_.tile_block) continue;
      s_.r = s_.c = t;
      s_.bm = s_.bn = kSide * t;
      // each thread stages 4 elements of each operand a step (2 of float64, whose blocks stay
      // within the 16 KiB of shared memory every Vulkan device has)
      s_.bk = std::min<std::int64_t>(32, std::max<std::int64_t>(8, (wide ? 512 : 1024) / s_.bm));
      blocks_ = b_ * ((m_ + s_.bm - 1) / s_.bm) * ((n_ + s_.bn - 1) / s_.bn);
      if (forced || blocks_ >= o_.tile_blocks) return;
    }
  }

  /// How far the first load under `from` moves in memory when range ordinal `k` moves by one (0
  /// when that is not a constant: then no axis is known to be contiguous).
  constexpr std::int64_t stride(int from, int k) const {
    int load = first_load(from);
    if (load < 0) return 0;
    std::vector<std::int64_t> at(range_ops_.size(), 0);
    bool ok = true;
    std::int64_t a = eval(op(load).src[1], at, ok);
    at[std::size_t(k)] = 1;
    std::int64_t b = eval(op(load).src[1], at, ok);
    return ok ? b - a : 0;
  }
  constexpr int first_load(int i) const {
    const UOp& u = op(i);
    if (u.kind == UKind::Load) return i;
    for (int s : u.src)
      if (s >= 0 && (u.kind == UKind::Alu))
        if (int l = first_load(s); l >= 0) return l;
    return -1;
  }
  constexpr std::int64_t eval(int i, const std::vector<std::int64_t>& at, bool& ok) const {
    const UOp& u = op(i);
    if (u.kind == UKind::Const) return u.value.i;
    if (u.kind == UKind::Range) return at[std::size_t(ordinal(i))];
    if (u.kind != UKind::Alu || is_float(u.dtype)) {
      ok = false;
      return 0;
    }
    std::int64_t s[3] = {0, 0, 0};
    for (int k = 0; k < 3; ++k)
      if (u.src[std::size_t(k)] >= 0) s[k] = eval(u.src[std::size_t(k)], at, ok);
    switch (u.op) {
    case Op::Add:
      return s[0] + s[1];
    case Op::Mul:
      return s[0] * s[1];
    case Op::Div:
      return s[1] ? s[0] / s[1] : 0;
    case Op::Mod:
      return s[1] ? s[0] % s[1] : 0;
    case Op::Max:
      return s[0] > s[1] ? s[0] : s[1];
    case Op::Neg:
      return -s[0];
    case Op::CmpLt:
      return s[0] < s[1];
    case Op::CmpEq:
      return s[0] == s[1];
    case Op::CmpNe:
      return s[0] != s[1];
    case Op::And:
      return s[0] & s[1];
    case Op::Or:
      return s[0] | s[1];
    case Op::Where:
      return s[0] ? s[1] : s[2];
    case Op::Cast:
      return s[0];
    default:
      ok = false;
      return 0;
    }
  }

  // ---- emission ----
  constexpr int i64(Op o, int a, int b) { return alu(o, DType::Int64, a, b); }
  constexpr int add_c(int a, std::int64_t c) { return c ? i64(Op::Add, a, cint(c)) : a; }
  constexpr int mul_c(int a, std::int64_t c) { return c != 1 ? i64(Op::Mul, a, cint(c)) : a; }
  constexpr int min_c(int a, std::int64_t hi) { // min(a, hi)
    int lt = alu(Op::CmpLt, DType::Bool, a, cint(hi + 1));
    return add(UOp{UKind::Alu, Op::Where, DType::Int64, {lt, a, cint(hi)}, {}, -1, {}});
  }
  /// Sets env_ for the loops `ords` (outermost first) from their flat index `flat`.
  constexpr void split(const std::vector<int>& ords, int flat) {
    std::int64_t stride = extent(ords);
    for (int k : ords) {
      const std::int64_t e = ext_[std::size_t(k)];
      stride /= e;
      int v = flat;
      if (stride > 1) v = i64(Op::Div, v, cint(stride));
      if (stride * e < extent(ords)) v = i64(Op::Mod, v, cint(e));
      env_[std::size_t(k)] = v;
    }
  }
  /// Old op `i` re-emitted with the loops at env_ (and the sum at new_acc_), once per scope.
  constexpr int clone(int i) {
    if (map[std::size_t(i)] >= 0) return map[std::size_t(i)];
    if (memo_[std::size_t(i)] >= 0) return memo_[std::size_t(i)];
    const UOp& u = op(i);
    int r;
    if (u.kind == UKind::Range) {
      r = env_[std::size_t(ordinal(i))];
      if (r < 0) throw graph_error{"shared_tiles: a loop index without a value"};
    } else if (i == acc_)
      r = new_acc_;
    else {
      UOp c = u;
      for (int& s : c.src)
        if (s >= 0) s = clone(s);
      r = add(c);
    }
    memo_[std::size_t(i)] = r;
    return r;
  }
  constexpr void new_scope() { memo_.assign(in.ops.size(), -1); }
  constexpr int shared(DType d, std::int64_t size) {
    return add(UOp{UKind::Shared, Op::Add, d, {-1, -1, -1}, {}, int(size), {}});
  }
  constexpr void barrier() {
    add(UOp{UKind::Barrier, Op::Add, DType::Int64, {-1, -1, -1}, {}, -1, {}});
  }

  /// Stages the bm x bk (or bk x bn) slice of operand `x` at reduction offset k0 into `sh`, at
  /// `offset` in it when given (>= 0). With `later`, the loads are made here and their stores
  /// are left there (slot, value) to be emitted after the step's arithmetic, and reduction
  /// indices past the end are clamped (the last step's prefetch is never read).
  constexpr void stage(int x, int sh, std::int64_t span, std::int64_t stride, bool k_fast,
                       const std::vector<int>& side, std::int64_t side_size, int side_base, int k0,
                       int lane, int offset = -1,
                       std::vector<std::pair<int, int>>* later = nullptr) {
    const std::int64_t per = span * s_.bk / kThreads;
    for (std::int64_t e = 0; e < per; ++e) {
      new_scope();
      int flat = add_c(lane, e * kThreads);
      int kk = k_fast ? i64(Op::Mod, flat, cint(s_.bk)) : i64(Op::Div, flat, cint(span));
      int at = k_fast ? i64(Op::Div, flat, cint(s_.bk)) : i64(Op::Mod, flat, cint(span));
      int pos = i64(Op::Add, side_base, at);
      if (side_size % span) pos = min_c(pos, side_size - 1); // a partial block reads a real row
      split(side, pos);
      int kv = i64(Op::Add, k0, kk);
      int kc = k_ % s_.bk || later ? min_c(kv, k_ - 1) : kv;
      split(red_, kc);
      // tensor cores read 16-bit words: an operand that is a buffer's element is loaded as its
      // bits, anything else computed and converted
      const UOp& xu = op(x);
      const bool raw = half_ && xu.kind == UKind::Load && xu.src[2] < 0 &&
                       op(xu.src[0]).kind == UKind::Param && op(xu.src[0]).dtype == xu.dtype;
      int v;
      if (raw) {
        int idx = clone(xu.src[1]);
        v = add(UOp{UKind::Load,
                    Op::Add,
                    DType::UInt16,
                    {map[std::size_t(xu.src[0])], idx, -1},
                    {},
                    -1,
                    {}});
      } else {
        v = clone(x);
      }
      const DType vd = raw ? DType::UInt16 : xu.dtype;
      if (k_ % s_.bk) { // past the end of the sum: zero, in both operands
        int in_k = alu(Op::CmpLt, DType::Bool, kv, cint(k_));
        int zero = add(UOp{UKind::Const, Op::Add, vd, {-1, -1, -1}, {}, -1, {}});
        v = add(UOp{UKind::Alu, Op::Where, vd, {in_k, v, zero}, {}, -1, {}});
      }
      if (half_ && !raw)
        v = add(UOp{UKind::Alu, Op::Bitcast, DType::UInt16, {v, -1, -1}, {}, -1, {}});
      int slot = tc_ ? i64(Op::Add, mul_c(at, stride), kk) : i64(Op::Add, mul_c(kk, stride), at);
      if (offset >= 0) slot = i64(Op::Add, slot, offset);
      if (later)
        later->push_back({slot, v});
      else
        add(UOp{
            UKind::Store, Op::Add, half_ ? DType::UInt16 : op(x).dtype, {sh, slot, v}, {}, -1, {}});
    }
  }

  /// A product's shared-memory slices and the reduction loop over them: the buffers, and with
  /// two stages the stores of the next step's slices left for the end of the step.
  struct Pipeline {
    int as = -1, bs = -1;                // the shared arrays
    std::int64_t sa = 0, sb = 0;         // a slice's row stride in each (the staging stride)
    std::int64_t size_a = 0, size_b = 0; // one slice's elements
    int k0 = -1, at_a = -1, at_b = -1;   // the loop; where this step's slices start (two stages)
    std::vector<std::pair<int, int>> next_a, next_b; // (slot, value): the next step's, to store
  };
  /// The buffers of a slice of each operand: one each, or two each (two_: GpuOptions::stages)
  /// where the reduction takes more than one step and both fit the device's shared memory.
  constexpr Pipeline shared_buffers(DType da, DType db, std::int64_t sa, std::int64_t sb,
                                    std::int64_t size_a, std::int64_t size_b) {
    two_ = o_.stages >= 2 && k_ > s_.bk &&
           2 * (size_a * itemsize(da) + size_b * itemsize(db)) <= o_.shared_bytes;
    const std::int64_t copies = two_ ? 2 : 1;
    Pipeline pl;
    pl.as = shared(da, copies * size_a);
    pl.bs = shared(db, copies * size_b);
    pl.sa = sa;
    pl.sb = sb;
    pl.size_a = size_a;
    pl.size_b = size_b;
    return pl;
  }
  /// Opens the reduction loop with this step's slices in shared memory. One stage: staged at the
  /// top of the step, then a barrier. Two: the first step's staged before the loop; each step
  /// loads the next step's at its top (stored by pipeline_tail) and computes on buffer
  /// (step % 2).
  constexpr void pipeline_head(Pipeline& pl, int row0, int col0, int lane) {
    const std::vector<int> keep = env_;
    auto both = [&](int k, int off_a, int off_b, std::vector<std::pair<int, int>>* la,
                    std::vector<std::pair<int, int>>* lb) {
      stage(x_, pl.as, s_.bm, pl.sa, x_k_fast_, rows_, m_, row0, k, lane, off_a, la);
      env_ = keep;
      stage(y_, pl.bs, s_.bn, pl.sb, y_k_fast_, cols_, n_, col0, k, lane, off_b, lb);
      env_ = keep;
    };
    if (two_) {
      both(cint(0), -1, -1, nullptr, nullptr);
      barrier();
    }
    pl.k0 =
        add(UOp{UKind::Range, Op::Add, DType::Int64, {cint(0), cint(k_), cint(s_.bk)}, {}, -1, {}});
    if (!two_) {
      both(pl.k0, -1, -1, nullptr, nullptr);
      barrier();
      return;
    }
    int step = i64(Op::Div, pl.k0, cint(s_.bk));
    int parity = i64(Op::Mod, step, cint(2)), other = i64(Op::Mod, add_c(step, 1), cint(2));
    pl.at_a = mul_c(parity, pl.size_a);
    pl.at_b = mul_c(parity, pl.size_b);
    both(add_c(pl.k0, s_.bk), mul_c(other, pl.size_a), mul_c(other, pl.size_b), &pl.next_a,
         &pl.next_b);
  }
  /// Closes the step: the next step's slices stored (two stages), a barrier, the loop's end.
  constexpr void pipeline_tail(const Pipeline& pl) {
    for (auto [slot, v] : pl.next_a)
      add(UOp{UKind::Store,
              Op::Add,
              half_ ? DType::UInt16 : op(x_).dtype,
              {pl.as, slot, v},
              {},
              -1,
              {}});
    for (auto [slot, v] : pl.next_b)
      add(UOp{UKind::Store,
              Op::Add,
              half_ ? DType::UInt16 : op(y_).dtype,
              {pl.bs, slot, v},
              {},
              -1,
              {}});
    barrier();
    add(UOp{UKind::EndRange, Op::Add, DType::Int64, {pl.k0, -1, -1}, {}, -1, {}});
  }

  constexpr void emit() {
    const std::size_t n = in.ops.size();
    env_.assign(range_ops_.size(), -1);
    // declarations, then what depends on no loop and no sum (hoisted to the top)
    for (std::size_t i = 0; i < n; ++i) {
      const UOp& u = op(int(i));
      const bool decl = u.kind == UKind::Param || u.kind == UKind::Bound ||
                        u.kind == UKind::VarParam || u.kind == UKind::Const;
      const bool free =
          (u.kind == UKind::Alu || u.kind == UKind::Load) && deps_[i] == 0 && !uses_acc_[i];
      if (decl || free) map[i] = add(remapped(u));
    }
    int start = -1, end = -1;
    for (std::size_t i = 0; i < n; ++i)
      if (op(int(i)).kind == UKind::Bound) (op(int(i)).arg == 0 ? start : end) = map[i];
    if (start < 0) start = cint(0);
    if (end < 0) end = cint(blocks_);
    int item = special(GpuIndex::Item), lane = special(GpuIndex::Lane);
    int blk = i64(Op::Add, start, i64(Op::Div, item, cint(kThreads)));
    int in_range = add(UOp{UKind::If,
                           Op::Add,
                           DType::Bool,
                           {alu(Op::CmpLt, DType::Bool, blk, end), -1, -1},
                           {},
                           -1,
                           {}});
    const std::int64_t nbn = (n_ + s_.bn - 1) / s_.bn, nbm = (m_ + s_.bm - 1) / s_.bm;
    int bj = i64(Op::Mod, blk, cint(nbn));
    int rest = i64(Op::Div, blk, cint(nbn));
    int bi = nbm > 1 ? i64(Op::Mod, rest, cint(nbm)) : cint(0);
    int bb = i64(Op::Div, rest, cint(nbm));
    int row0 = mul_c(bi, s_.bm), col0 = mul_c(bj, s_.bn);
    int tx = i64(Op::Mod, lane, cint(kSide)), ty = i64(Op::Div, lane, cint(kSide));
    // a thread's rows (and columns) 16 apart, or consecutive (GpuOptions::tile_layout)
    const bool runs = o_.tile_layout == 1 && s_.r > 1;
    const std::int64_t rstep = runs ? 1 : kSide;
    int ty0 = runs ? mul_c(ty, s_.r) : ty, tx0 = runs ? mul_c(tx, s_.c) : tx;
    const DType xd = op(x_).dtype, yd = op(y_).dtype, ad = op(acc_).dtype;
    if (!batch_.empty()) split(batch_, bb);
    if (tc_) return emit_tensor_cores(lane, row0, col0, in_range);
    const std::int64_t sa = s_.bm + kPad, sb = s_.bn + kPad;
    Pipeline pl =
        shared_buffers(compute_dtype(xd), compute_dtype(yd), sa, sb, s_.bk * sa, s_.bk * sb);
    const int as = pl.as, bs = pl.bs;
    std::vector<int> accs;
    for (std::int64_t t = 0; t < s_.r * s_.c; ++t) accs.push_back(add(op(acc_)));
    std::vector<int> keep = env_; // the batch's values, for every scope below
    pipeline_head(pl, row0, col0, lane);
    const int at_a = pl.at_a, at_b = pl.at_b;
    int ty_at = two_ ? i64(Op::Add, ty0, at_a) : ty0, tx_at = two_ ? i64(Op::Add, tx0, at_b) : tx0;
    std::vector<int> a(std::size_t(s_.r)), b(std::size_t(s_.c));
    for (std::int64_t kk = 0; kk < s_.bk; ++kk) {
      for (std::int64_t r = 0; r < s_.r; ++r)
        a[std::size_t(r)] = add(
            UOp{UKind::Load, Op::Add, xd, {as, add_c(ty_at, kk * sa + r * rstep), -1}, {}, -1, {}});
      for (std::int64_t c = 0; c < s_.c; ++c)
        b[std::size_t(c)] = add(
            UOp{UKind::Load, Op::Add, yd, {bs, add_c(tx_at, kk * sb + c * rstep), -1}, {}, -1, {}});
      for (std::int64_t r = 0; r < s_.r; ++r)
        for (std::int64_t c = 0; c < s_.c; ++c) {
          int prod = add(UOp{UKind::Alu,
                             Op::Mul,
                             op(mul_).dtype,
                             {a[std::size_t(r)], b[std::size_t(c)], -1},
                             {},
                             -1,
                             {}});
          add(UOp{UKind::AccAssign,
                  Op::Add,
                  ad,
                  {accs[std::size_t(r * s_.c + c)], prod, -1},
                  {},
                  -1,
                  {}});
        }
    }
    pipeline_tail(pl);
    // the epilogue and the store, once per output of the thread's tile
    for (std::int64_t r = 0; r < s_.r; ++r)
      for (std::int64_t c = 0; c < s_.c; ++c) {
        env_ = keep;
        int row = i64(Op::Add, row0, add_c(ty0, r * rstep));
        int col = i64(Op::Add, col0, add_c(tx0, c * rstep));
        store(row, col, [&] { return accs[std::size_t(r * s_.c + c)]; });
      }
    add(UOp{UKind::EndIf, Op::Add, DType::Bool, {in_range, -1, -1}, {}, -1, {}});
  }

  /// The epilogue and the stores of the outputs at (row, col) of the block's operands, where they
  /// are in range; `sum()` emits the output's sum.
  template <class Sum> constexpr void store(int row, int col, Sum&& sum) {
    new_scope();
    int ok = -1;
    if (m_ % s_.bm) ok = alu(Op::CmpLt, DType::Bool, row, cint(m_));
    if (n_ % s_.bn) {
      int okc = alu(Op::CmpLt, DType::Bool, col, cint(n_));
      ok = ok < 0 ? okc : alu(Op::And, DType::Bool, ok, okc);
    }
    int guard = ok < 0 ? -1 : add(UOp{UKind::If, Op::Add, DType::Bool, {ok, -1, -1}, {}, -1, {}});
    split(rows_, row);
    split(cols_, col);
    new_acc_ = sum();
    for (int i : stores_) {
      const UOp& st = op(i);
      int idx = clone(st.src[1]), val = clone(st.src[2]);
      add(UOp{
          UKind::Store, Op::Add, st.dtype, {map[std::size_t(st.src[0])], idx, val}, {}, -1, {}});
    }
    if (guard >= 0) add(UOp{UKind::EndIf, Op::Add, DType::Bool, {guard, -1, -1}, {}, -1, {}});
  }

  /// The block on tensor cores: 8 warps of (bm / 2) x (bn / 4) outputs, each a grid of 16 x 8
  /// mma tiles whose float32 sums stay in registers (a Private array); the operands staged as
  /// 16-bit words (float32s for TF32), each row of A (and column of B) a row of shared memory
  /// along the reduction.
  constexpr void emit_tensor_cores(int lane, int row0, int col0, int in_range) {
    // (rows padded by 4 words: a warp's fragment loads hit 32 banks)
    const std::int64_t S = s_.bk + (half_ ? 8 : 4);
    const DType word = half_ ? DType::UInt16 : DType::Float32;
    const std::int64_t wm_size = s_.bm / 2, wn_size = s_.bn / 4;
    const std::int64_t tm = wm_size / 16, tn = wn_size / 8;
    // (square blocks: A's and B's slices are the same size, one offset serves both)
    Pipeline pl = shared_buffers(word, word, S, S, s_.bm * S, s_.bn * S);
    int acc =
        add(UOp{UKind::Private, Op::Add, DType::Float32, {-1, -1, -1}, {}, int(tm * tn * 4), {}});
    int warp = i64(Op::Div, lane, cint(32));
    int wm = mul_c(i64(Op::Div, warp, cint(4)), wm_size);
    int wn = mul_c(i64(Op::Mod, warp, cint(4)), wn_size);
    std::vector<int> keep = env_;
    pipeline_head(pl, row0, col0, lane);
    for (std::int64_t kk = 0; kk < s_.bk; kk += half_ ? 16 : 8) { // m16n8k16, TF32's m16n8k8
      UOp m{UKind::Mma,         Op::Add, op(x_).dtype, {pl.as, pl.bs, acc}, Scalar{},
            int(tm * 256 + tn), {}};
      m.value.i = S;
      m.ranges = {two_ ? add_c(pl.at_a, kk) : cint(kk), wm, wn};
      add(m);
    }
    pipeline_tail(pl);
    // each thread's sums: tile (i, j), element q at row g (+ 8), column 2 t (+ 1) of the tile
    int wl = i64(Op::Mod, lane, cint(32));
    int g = i64(Op::Div, wl, cint(4)), t2 = mul_c(i64(Op::Mod, wl, cint(4)), 2);
    int r0 = i64(Op::Add, i64(Op::Add, row0, wm), g), c0 = i64(Op::Add, i64(Op::Add, col0, wn), t2);
    for (std::int64_t i = 0; i < tm; ++i)
      for (std::int64_t j = 0; j < tn; ++j)
        for (std::int64_t q = 0; q < 4; ++q) {
          env_ = keep;
          int row = add_c(r0, i * 16 + (q >= 2 ? 8 : 0)), col = add_c(c0, j * 8 + (q & 1));
          const std::int64_t e = (i * tn + j) * 4 + q;
          store(row, col, [&] {
            return add(UOp{UKind::Load, Op::Add, op(acc_).dtype, {acc, cint(e), -1}, {}, -1, {}});
          });
        }
    add(UOp{UKind::EndIf, Op::Add, DType::Bool, {in_range, -1, -1}, {}, -1, {}});
  }
};

} // namespace detail

/// The product kernel `p` (as lower made it, before gpu_program) as shared-memory work-group
/// tiles; a program with local == 0 when `p` is not such a product (see the file's comment).
constexpr Program shared_tiles(const Program& p, const GpuOptions& o) {
  return detail::SharedTiler(p, o).run();
}

} // namespace tg
