#pragma once
// lower: Kernel -> linear program. Walks the kernel's expression from its root, carrying the
// movement ops between the loop indices and each node (views are pushed down to the loads);
// merges loop axes that every access walks contiguously; then places every value in the
// outermost loop it depends on (linearize).
#include <algorithm>

#include "../schedule/fuse.hpp"
#include "builder.hpp"
#include "opt.hpp"

namespace tg {

namespace detail {

class Lowerer {
public:
  constexpr Lowerer(const Graph& g, const Schedule& s, const Kernel& k, LowerOptions o = {})
      : g_(g), mat_(s.materialized), k_(k), opt_(o) {
    params_ = k.outputs; // (a kernel made by hand may name its root only)
    if (params_.empty()) params_.push_back(k.root);
    nout_ = params_.size();
    for (int in : k.inputs) params_.push_back(in);
  }

  constexpr Program run() {
    const Node& root = g_[k_.root];
    // Pass 1: the trackers every access would use, in the unmerged index space.
    space_ = root.shape;
    collect();
    while (recollect_) collect(); // a reduction turned out to be hoisted (see reduce)
    if (opt_.refine_views && reduce_nodes_.empty()) {
      Shape finer = refined_space();
      if (!(finer == space_)) {
        space_ = finer;
        collect();
      }
    }
    // Merge loop axes that every access of their space walks contiguously.
    std::size_t n = space_.size();
    out_groups_ = merge_groups(space_, 0, n, aligned_trackers());
    for (std::size_t r = 0; r < reduce_nodes_.size(); ++r) {
      Shape full = kept_shape(r), a = reduce_axes_shape(r);
      std::size_t from = full.size();
      full.insert(full.end(), a.begin(), a.end());
      reduce_groups_.push_back(merge_groups(full, from, full.size(), space_trackers_[r + 1]));
    }
    Shape m = merged(space_, out_groups_, 0);
    if (m.empty()) m.push_back(1);
    // Short reductions unroll, unless one is a product whose operand is shared along an output
    // axis (a matmul): its lanes already share the loads, and lowering every element of every
    // lane costs (in constant evaluation too).
    unroll_ok_ = true;
    for (std::size_t axis = 0; axis < m.size(); ++axis)
      unroll_ok_ = unroll_ok_ && !shared_along(axis);

    // Pass 2: build the program over the merged loops.
    collecting_ = false;
    memo_.clear();
    memo_of_.assign(g_.size(), {});
    space_ctx_.assign(space_trackers_.size(), 0);
    UOp bound0{UKind::Bound, Op::Add, DType::Int64, {-1, -1, -1}, {}, 0, {}};
    UOp bound1 = bound0;
    bound1.arg = 1;
    std::size_t naligned = 0;
    for (std::size_t r = 0; r < reduce_nodes_.size(); ++r) naligned += !hoisted_[r];
    const Choices choice = choose(facts(m), opt_);
    splits_ = choice.splits;
    split_ = choice.split;
    const std::int64_t lanes = choice.lanes, rows = choice.rows;
    strided_tile_ = choice.strided_tile;
    panel_ = choice.panel;
    const std::size_t row_axis = choice.row;
    Shape loops = m;
    if (lanes > 1) loops.back() = SInt(tiles_of(m.back().constant(), lanes));
    if (rows > 1) loops[row_axis] = SInt(tiles_of(m[row_axis].constant(), rows));
    // (a tile that does not divide its axis: LowerOptions::tile_tails)
    const bool overlapping = (lanes > 1 && m.back().constant() % lanes != 0) ||
                             (rows > 1 && m[row_axis].constant() % rows != 0);
    // The loops in nesting order; the first is the parallel one (the column tiles in panel order).
    std::vector<std::size_t> order;
    if (panel_) order.push_back(loops.size() - 1);
    for (std::size_t i = 0; i < loops.size(); ++i)
      if (!panel_ || i + 1 < loops.size()) order.push_back(i);
    std::int64_t mhi = loops[order[0]].max_value();
    int start = b_.add(bound0, 0, mhi), end = b_.add(bound1, 0, mhi);
    std::vector<int> ranges(loops.size(), -1);
    ranges[order[0]] = range(start, end, mhi);
    for (std::size_t i = 1; i < order.size(); ++i) {
      const SInt& d = loops[order[i]];
      int zero = b_.cint(0), size = sint(d); // named: argument order would vary by compiler
      ranges[order[i]] = range(zero, size, d.max_value());
    }
    std::vector<Movement> to_loops{Movement{MoveOp::Reshape, m, {}}};
    ShapeTracker out = ShapeTracker::contiguous(root.shape).apply(to_loops);
    std::vector<int> out_params;
    for (std::size_t o = 0; o < nout_; ++o) out_params.push_back(param(params_[o]));
    // lane_ = row * lanes + column of the tile
    auto tile_index = [&](std::size_t axis, std::int64_t size, std::int64_t at) {
      // named: argument order would vary by compiler (and between run time and constexpr)
      if (strided_tile_) {
        int offset = b_.cint(at * (m[axis].constant() / size));
        return b_.alu(Op::Add, DType::Int64, ranges[axis], offset);
      }
      const std::int64_t extent = m[axis].constant();
      if (size > extent) { // one tile of vectors of `upcast`, the last ones shifted back to end
        const std::int64_t v = opt_.upcast; // where the axis ends (choose)
        return b_.cint(std::min(at / v * v, extent - v) + at % v);
      }
      int base = b_.alu(Op::Mul, DType::Int64, ranges[axis], b_.cint(size));
      if (extent % size != 0) { // the last tile ends where the axis ends
        // min(base, extent - size), in the form GCC 12 reads as a minimum: where the choice
        // compared the loop index, it kept the tile's stores scalar (sgemm 1000², conv2d's 28
        // columns)
        int shifted = b_.cint(extent - size);
        int before_last = b_.alu(Op::CmpLt, DType::Bool, base, shifted);
        base = b_.alu(Op::Where, DType::Int64, before_last, base, shifted);
      }
      int offset = b_.cint(at);
      return b_.alu(Op::Add, DType::Int64, base, offset);
    };
    // Every lane's value first, then the stores: a store between two lanes' loads may alias
    // them for all the C compiler knows, which kept GCC from vectorizing the lanes at all. Each
    // output's stores together (every output has the root's shape: one index serves them all).
    std::vector<std::vector<UOp>> stores(nout_);
    for (lane_ = 0; lane_ < rows * lanes; ++lane_) {
      std::vector<int> idx = ranges;
      if (lanes > 1) idx.back() = tile_index(ranges.size() - 1, lanes, lane_ % lanes);
      if (rows > 1) idx[row_axis] = tile_index(row_axis, rows, lane_ / lanes);
      out_idx_ = idx;
      space_idx_.assign(std::max<std::size_t>(space_idx_.size(), 1), {});
      space_idx_[0] = idx;
      for (std::size_t o = 0; o < nout_; ++o) {
        const int node = params_[o];
        int v = value(node, to_loops, 0);
        auto [oi, ovalid] = index(out, idx);
        (void)ovalid;
        stores[o].push_back(
            UOp{UKind::Store, Op::Add, g_[node].dtype, {out_params[o], oi, v}, {}, -1, {}});
      }
    }
    for (const std::vector<UOp>& of_output : stores)
      for (const UOp& st : of_output) b_.add(st);
    lane_ = 0;

    Program p = linearize(int(loops.size()));
    for (int pn : params_) p.params.push_back(g_[pn].dtype);
    p.outputs = int(nout_);
    p.outer = loops[order[0]];
    p.overlapping = overlapping;
    // each loop nest of the kernel's reductions runs per element, a hoisted reduction once per
    // element of its own result
    SInt per_element = 0, hoisted_work = 0;
    for (std::size_t r = 0; r < reduce_nodes_.size(); ++r) {
      bool shared = false;
      for (std::size_t q = 0; q < r; ++q) shared = shared || same_loops(r, reduce_nodes_[q]);
      if (hoisted_[r])
        hoisted_work = hoisted_work + prod(reduce_in_shape(r));
      else if (!shared)
        per_element = per_element + prod(reduce_axes_shape(r));
    }
    p.work = prod(m) * (per_element == 0 ? SInt(1) : per_element) + hoisted_work;
    // the launcher evaluates these too: their variables are launch arguments even when the
    // source never reads them
    std::vector<Var> launch_vars;
    p.outer.collect_vars(launch_vars);
    p.work.collect_vars(launch_vars);
    for (const Var& v : launch_vars) var_index(v);
    p.vars = vars_;
    // (TG_REDUCE_KERNEL unless every reduction keeps its partials in vector lanes)
    p.reduce_split = splits_.empty() ? 1 : int(*std::min_element(splits_.begin(), splits_.end()));
    p.name << (naligned > 0 ? "r" : "E") << (naligned < reduce_nodes_.size() ? "h" : "");
    if (split_ > 1)
      p.name << 's' << split_;
    else if (rows > 1 || strided_tile_)
      p.name << 'u' << rows << 'x' << lanes << (panel_ ? "p" : "") << (strided_tile_ ? "g" : "");
    else if (lanes > 1)
      p.name << 'u' << lanes;
    if (overlapping) p.name << 't';
    for (const SInt& d : loops) {
      p.name << '_';
      if (d.is_const())
        p.name << d.constant();
      else
        p.name << 'n';
    }
    return p;
  }

private:
  struct Memo {
    int node, space, lane, part, ctx;
    std::vector<Movement> pending;
    int uop;
  };

  static constexpr std::vector<Movement> concat(const std::vector<Movement>& a,
                                                const std::vector<Movement>& b) {
    std::vector<Movement> r = a;
    r.insert(r.end(), b.begin(), b.end());
    return r;
  }
  static constexpr bool has_pad(const std::vector<Movement>& ms) {
    for (const Movement& m : ms)
      if (m.op == MoveOp::Pad) return true;
    return false;
  }

  /// Pass 1 over the index space space_.
  constexpr void collect() {
    collecting_ = true;
    recollect_ = false;
    reduce_nodes_.clear();
    hoisted_.clear();
    operand_trackers_.clear();
    space_trackers_.assign(1, {});
    space_trackers_[0].push_back(ShapeTracker::contiguous(space_));
    std::vector<Movement> to_space;
    if (!(space_ == g_[k_.root].shape)) to_space.push_back(Movement{MoveOp::Reshape, space_, {}});
    for (std::size_t o = 0; o < nout_; ++o) value(params_[o], to_space, 0);
  }
  /// The finest shape that refines space_ and the shape every load's top view reshapes (without
  /// masks) into a view below it; space_ when there is none (LowerOptions::refine_views).
  constexpr Shape refined_space() const {
    Shape s = space_;
    for (const ShapeTracker& t : space_trackers_[0]) {
      std::size_t nv = t.views.size();
      if (nv < 2 || !t.views.back().is_contiguous()) continue;
      Shape finer;
      if (refine(s, t.views[nv - 2].shape, finer)) s = finer;
    }
    return s;
  }
  /// The shape whose axes split both a and b (both constant, of one size), if there is one: the
  /// products of their leading axes, in order, each dividing the next.
  static constexpr bool refine(const Shape& a, const Shape& b, Shape& out) {
    std::vector<std::int64_t> cuts;
    std::int64_t size[2] = {1, 1};
    for (int k = 0; k < 2; ++k) {
      const Shape& s = k == 0 ? a : b;
      std::int64_t& p = size[k];
      for (const SInt& d : s) {
        if (!d.is_const() || d.constant() < 1) return false;
        if (d.constant() == 1) continue;
        p *= d.constant();
        std::size_t at = 0;
        while (at < cuts.size() && cuts[at] < p) ++at;
        if (at == cuts.size() || cuts[at] != p) cuts.insert(cuts.begin() + std::ptrdiff_t(at), p);
      }
    }
    if (cuts.empty() || size[0] != size[1]) return false;
    out.clear();
    std::int64_t prev = 1;
    for (std::int64_t c : cuts) {
      if (c % prev) return false;
      out.push_back(c / prev);
      prev = c;
    }
    return true;
  }
  /// Whether a view masks part of merged output axis `axis` (LowerOptions::unroll_masked).
  constexpr bool masked(std::size_t axis) const {
    for (const ShapeTracker& t : space_trackers_[0])
      for (std::size_t d = 0; d < out_groups_.size(); ++d)
        if (out_groups_[d] == int(axis) && t.views.back().masked(d)) return true;
    return false;
  }

  /// Whether a load reads the last merged axis of loop shape m with a stride and the one before
  /// it contiguously (LowerOptions::transpose_tile).
  constexpr bool transposed(const Shape& m) const {
    std::size_t n = m.size();
    if (n < 2) return false;
    std::size_t last = out_groups_.size(), before = out_groups_.size(); // innermost space axes
    for (std::size_t d = 0; d < out_groups_.size(); ++d) {
      if (out_groups_[d] == int(n - 1)) last = d;
      if (out_groups_[d] == int(n - 2)) before = d;
    }
    if (last == out_groups_.size() || before == out_groups_.size()) return false;
    for (const ShapeTracker& tr : space_trackers_[0]) {
      const View& v = tr.views.back();
      if (tr.views.size() == 1 && v.mask.empty() && v.strides[before] == 1 &&
          !(v.strides[last] == 0) && !(v.strides[last] == 1))
        return true;
    }
    return false;
  }

  /// Whether the kernel computes `node` (an output) rather than loading it.
  constexpr bool computed_here(int node) const {
    for (std::size_t o = 0; o < nout_; ++o)
      if (params_[o] == node) return true;
    return false;
  }
  constexpr int param(int node) {
    for (std::size_t i = 0; i < params_.size(); ++i)
      if (params_[i] == node) {
        UOp u{UKind::Param, Op::Add, g_[node].dtype, {-1, -1, -1}, {}, int(i), {}};
        return b_.add(u);
      }
    throw graph_error("kernel input not scheduled");
  }
  constexpr int var_index(const Var& v) {
    for (std::size_t i = 0; i < vars_.size(); ++i)
      if (vars_[i] == v) return int(i);
    vars_.push_back(v);
    return int(vars_.size()) - 1;
  }
  constexpr int sint(const SInt& s) {
    return b_.sint(s, [this](const Var& v) { return var_index(v); });
  }
  constexpr int range(int start, int end, std::int64_t max_end) {
    UOp u{UKind::Range, Op::Add, DType::Int64, {start, end, -1}, {}, nranges_++, {}};
    return b_.add(u, 0, max_end > 0 ? max_end - 1 : 0);
  }

  /// The flat offset and validity of a tracker at the given loop indices.
  constexpr std::pair<int, int> index(const ShapeTracker& t, std::vector<int> idx) {
    int valid = b_.cbool(true), e = -1;
    for (std::size_t k = t.views.size(); k-- > 0;) {
      const View& v = t.views[k];
      e = sint(v.offset);
      for (std::size_t d = 0; d < v.ndim(); ++d) {
        if (v.strides[d] == 0) continue;
        e = b_.alu(Op::Add, DType::Int64, e,
                   b_.alu(Op::Mul, DType::Int64, idx[d], sint(v.strides[d])));
      }
      for (std::size_t d = 0; d < v.mask.size(); ++d) {
        const auto& [mlo, mhi] = v.mask[d];
        if (!(mlo == 0))
          valid = b_.alu(Op::And, DType::Bool, valid,
                         b_.alu(Op::CmpLt, DType::Bool, sint(mlo - 1), idx[d]));
        if (!(mhi == v.shape[d]))
          valid = b_.alu(Op::And, DType::Bool, valid,
                         b_.alu(Op::CmpLt, DType::Bool, idx[d], sint(mhi)));
      }
      if (k == 0) break;
      const Shape& below = t.views[k - 1].shape;
      Shape cs = contiguous_strides(below);
      idx.assign(below.size(), -1);
      SInt acc = 1;
      for (std::size_t d = below.size(); d-- > 0;) {
        int x = e;
        if (!(acc == 1)) x = b_.alu(Op::Div, DType::Int64, x, sint(acc));
        if (d > 0) x = b_.alu(Op::Mod, DType::Int64, x, sint(below[d]));
        idx[d] = below[d] == 1 ? b_.cint(0) : x;
        acc = acc * below[d];
      }
    }
    return {e, valid};
  }

  constexpr int value(int node, const std::vector<Movement>& pending, int space) {
    if (!collecting_)
      for (int i : memo_of_[std::size_t(node)]) {
        const Memo& m = memo_[std::size_t(i)];
        if (m.space == space && m.lane == lane_ && m.part == part_ &&
            m.ctx == space_ctx_[std::size_t(space)] && m.pending == pending)
          return m.uop;
      }
    int r = compute(node, pending, space);
    if (!collecting_) {
      memo_of_[std::size_t(node)].push_back(int(memo_.size()));
      memo_.push_back(
          Memo{node, space, int(lane_), int(part_), space_ctx_[std::size_t(space)], pending, r});
    }
    return r;
  }

  constexpr int compute(int node, const std::vector<Movement>& pending, int space) {
    const Node& n = g_[node];
    if ((mat_[std::size_t(node)] && !computed_here(node)) || n.op == Op::Const) {
      ShapeTracker t = ShapeTracker::contiguous(n.shape).apply(pending);
      if (collecting_) {
        space_trackers_[std::size_t(space)].push_back(t);
        if (space > 0 && !hoisted_[std::size_t(space) - 1] && n.op != Op::Const)
          operand_trackers_.push_back(t);
        return -1;
      }
      auto [e, valid] = index(t, space_idx_[std::size_t(space)]);
      bool gated = !(b_.is_const(valid) && b_.ival(valid) == 1);
      // never valid (e.g. padding only): zero, with no load whose index may be out of range (a
      // constant negative index does not even compile as GLSL)
      if (b_.is_const(valid) && b_.ival(valid) == 0) return b_.constant(n.dtype, Scalar{});
      if (n.op == Op::Const) {
        int c = b_.constant(n.dtype, n.value);
        return gated ? b_.alu(Op::Where, n.dtype, valid, c, b_.constant(n.dtype, Scalar{})) : c;
      }
      UOp u{UKind::Load, Op::Add, n.dtype, {param(node), e, gated ? valid : -1}, {}, -1, {}};
      return b_.add(u);
    }
    if (n.op == Op::View) return value(n.src[0], concat(n.moves, pending), space);
    if (n.op == Op::Contiguous) return value(n.src[0], pending, space);
    if (is_reduce(n.op)) return reduce(node, pending, space);
    // elementwise
    int s[3] = {-1, -1, -1};
    for (int i = 0; i < n.nsrc(); ++i) s[i] = value(n.src[std::size_t(i)], pending, space);
    if (collecting_) return -1;
    int r = b_.alu(n.op, n.dtype, s[0], s[1], s[2]);
    if (has_pad(pending)) { // padding reads as zero, whatever the op makes of zero
      auto [e, valid] =
          index(ShapeTracker::contiguous(n.shape).apply(pending), space_idx_[std::size_t(space)]);
      (void)e;
      if (!(b_.is_const(valid) && b_.ival(valid) == 1))
        r = b_.alu(Op::Where, n.dtype, valid, r, b_.constant(n.dtype, Scalar{}));
    }
    return r;
  }

  /// A reduction read at the kernel's own index (the root, or an epilogue's: reshapes only) runs
  /// with the kernel's loops as its kept axes ("aligned"). One read through a broadcast (the row
  /// max under a softmax; fuse's row reductions) is "hoisted": computed at the index the view
  /// gives, once per distinct index, so it depends only on the loops that index does and
  /// linearize emits it outside the others.
  constexpr int reduce(int node, const std::vector<Movement>& pending, int space) {
    const Node& n = g_[node];
    // (one that is read both ways, as logsumexp's max, is hoisted: collect() runs again)
    bool hoisted = space != 0 || !reshape_only(pending);
    for (int h : force_hoisted_) hoisted = hoisted || h == node;
    std::size_t r = 0;
    while (r < reduce_nodes_.size() && reduce_nodes_[r] != node) ++r;
    if (r == reduce_nodes_.size()) {
      if (!collecting_) throw graph_error("reduction not seen in the first pass");
      reduce_nodes_.push_back(node);
      hoisted_.push_back(hoisted);
      space_trackers_.push_back({});
    } else if (bool(hoisted_[r]) != hoisted) {
      force_hoisted_.push_back(node);
      recollect_ = true;
      return -1;
    }
    int sp = int(r) + 1;
    // The input is read with kept axes first, then the reduced axes.
    const Shape& in = g_[n.src[0]].shape;
    Movement perm{MoveOp::Permute, {}, {}};
    for (std::size_t d = 0; d < in.size(); ++d)
      if (!reduced(n, d)) perm.a.push_back(std::int64_t(d));
    for (int a : n.axes) perm.a.push_back(std::int64_t(a));
    Shape loops; // (not a ?: of two temporaries: GCC 12's constant evaluation mishandles it)
    if (hoisted)
      loops = kept_shape(r);
    else
      loops = merged(space_, out_groups_, 0);
    ShapeTracker at = ShapeTracker::contiguous(n.shape).apply(pending); // where it is read
    if (collecting_) {
      // (its index takes part in merging the axes of the space that reads it)
      if (hoisted) space_trackers_[std::size_t(space)].push_back(at);
      loops = kept_shape(r);
      for (const SInt& d : reduce_axes_shape(r)) loops.push_back(d);
      std::vector<Movement> p{perm, Movement{MoveOp::Reshape, loops, {}}};
      value(n.src[0], p, sp);
      return -1;
    }
    std::vector<int> idx = out_idx_;
    int valid = -1;
    if (!hoisted) {
      if (int found = find_reduce(node, lane_); found >= 0) return found;
      if (loops.empty()) loops.push_back(1);
    } else {
      auto [e, v] = index(at, space_idx_[std::size_t(space)]);
      valid = v;
      idx = kept_index(n, e);
      int found = -1;
      for (const Hoisted& h : hoisted_done_)
        if (h.node == node && h.kept == idx) found = h.uop;
      if (found < 0) {
        ++space_ctx_[std::size_t(sp)]; // the values memoized in its space were for another index
        found = reduce_at(r, idx, loops, perm);
        hoisted_done_.push_back(Hoisted{node, idx, found});
      }
      if (b_.is_const(valid) && b_.ival(valid) == 1) return found;
      return b_.alu(Op::Where, n.dtype, valid, found, b_.constant(n.dtype, Scalar{}));
    }
    return reduce_at(r, idx, loops, perm);
  }
  /// The kept coordinates of reduction `n`'s input at flat offset `e` of its result.
  constexpr std::vector<int> kept_index(const Node& n, int e) {
    std::vector<int> idx;
    SInt acc = 1;
    for (std::size_t d = n.shape.size(); d-- > 0;) {
      int x = e;
      if (!(acc == 1)) x = b_.alu(Op::Div, DType::Int64, x, sint(acc));
      if (d > 0) x = b_.alu(Op::Mod, DType::Int64, x, sint(n.shape[d]));
      if (!reduced(n, d)) idx.insert(idx.begin(), n.shape[d] == 1 ? b_.cint(0) : x);
      acc = acc * n.shape[d];
    }
    return idx;
  }
  /// Reduction r over its loops, its kept axes at indices `kept` (of the loops `loops`).
  constexpr int reduce_at(std::size_t r, std::vector<int> idx, Shape loops, const Movement& perm) {
    const int node = reduce_nodes_[r], sp = int(r) + 1;
    const Node& n = g_[node];
    const std::int64_t split = splits_[r], outer_part = part_;
    Shape ra = reduce_loops(r);
    loops.insert(loops.end(), ra.begin(), ra.end());
    if (space_idx_.size() <= std::size_t(sp)) space_idx_.resize(std::size_t(sp) + 1);
    std::vector<Movement> p{perm, Movement{MoveOp::Reshape, loops, {}}};
    Op op = n.op == Op::ReduceSum ? Op::Add : n.op == Op::ReduceMax ? Op::Max : Op::Mul;
    // (over no loops at all, its one element: a loop nest of none would be shared with every
    // other such reduction, the one that reads this one included)
    if (std::int64_t total = ra.empty() ? 1 : unrolled_length(ra, split); total > 0) {
      // element j at constant reduce indices (part_ tells the elements apart in the memo)
      int acc = b_.constant(n.dtype, reduce_identity(op, n.dtype));
      std::size_t at = idx.size();
      idx.resize(at + ra.size());
      for (part_ = 0; part_ < total; ++part_) {
        std::int64_t rest = part_;
        for (std::size_t i = ra.size(); i-- > 0;) {
          idx[at + i] = b_.cint(rest % ra[i].constant());
          rest /= ra[i].constant();
        }
        space_idx_[std::size_t(sp)] = idx;
        int x = value(n.src[0], p, sp);
        acc = b_.alu(op, n.dtype, acc, x);
      }
      part_ = outer_part;
      return acc;
    }
    // every lane of an upcast kernel runs this reduction over the same loops, and so does every
    // other reduction at the kernel's index over loops of the same sizes (a row's max and sum: one
    // pass over the row)
    std::vector<int> rr;
    for (const auto& [rn, existing] : reduce_ranges_)
      if (rn == node || same_loops(r, rn)) rr = existing;
    if (rr.empty()) {
      for (std::size_t i = 0; i < ra.size(); ++i) {
        SInt d = i + 1 == ra.size() && split > 1 ? SInt(ra[i].constant() / split) : ra[i];
        int zero = b_.cint(0), size = sint(d);
        rr.push_back(range(zero, size, d.max_value()));
      }
      reduce_ranges_.push_back({node, rr});
    }
    idx.insert(idx.end(), rr.begin(), rr.end());
    // one partial accumulator per element of a split (part_ tells their values apart in the memo)
    std::vector<int> parts;
    for (part_ = 0; part_ < split; ++part_) {
      if (split > 1) {
        int base = b_.alu(Op::Mul, DType::Int64, rr.back(), b_.cint(split));
        int offset = b_.cint(part_); // named: argument order would vary by compiler
        idx.back() = b_.alu(Op::Add, DType::Int64, base, offset);
      }
      space_idx_[std::size_t(sp)] = idx;
      int x = value(n.src[0], p, sp);
      UOp u{UKind::Reduce,
            op,
            n.dtype,
            {x, -1, -1},
            Scalar::of_int(DType::Int64, hoisted_[r] ? 0 : lane_),
            split > 1 || hoisted_[r] ? -1 : node,
            rr};
      parts.push_back(b_.add(u));
    }
    part_ = outer_part;
    for (std::size_t width = parts.size(); width > 1; width /= 2)
      for (std::size_t i = 0; i < width / 2; ++i)
        parts[i] = b_.alu(op, n.dtype, parts[2 * i], parts[2 * i + 1]);
    return parts[0];
  }
  /// The number of elements of a reduction over loops `ra` when it is unrolled
  /// (LowerOptions::unroll_reduce), else 0.
  constexpr std::int64_t unrolled_length(const Shape& ra, std::int64_t split) const {
    if (split > 1 || ra.empty()) return 0;
    if (!unroll_ok_) return 0;
    std::int64_t total = 1;
    for (const SInt& d : ra) {
      if (!d.is_const()) return 0;
      total *= d.constant();
    }
    return total <= opt_.unroll_reduce ? total : 0;
  }
  /// Whether reduction r and the reduction at node `other` may share their loops: both at the
  /// kernel's index (a hoisted one may be read inside the other's loop), over loops of the same
  /// sizes, split alike.
  constexpr bool same_loops(std::size_t r, int other) const {
    std::size_t q = 0;
    while (q < reduce_nodes_.size() && reduce_nodes_[q] != other) ++q;
    return q < reduce_nodes_.size() && !hoisted_[r] && !hoisted_[q] && splits_[r] == splits_[q] &&
           reduce_loops(r) == reduce_loops(q);
  }
  constexpr int find_reduce(int node, std::int64_t lane) const {
    for (std::size_t i = 0; i < b_.ops.size(); ++i)
      if (b_.ops[i].kind == UKind::Reduce && b_.ops[i].arg == node && b_.ops[i].value.i == lane)
        return int(i);
    return -1;
  }
  static constexpr bool reduced(const Node& n, std::size_t d) {
    for (int a : n.axes)
      if (std::size_t(a) == d) return true;
    return false;
  }
  constexpr const Shape& reduce_in_shape(std::size_t r) const {
    return g_[g_[reduce_nodes_[r]].src[0]].shape;
  }
  constexpr Shape reduce_axes_shape(std::size_t r) const {
    const Node& n = g_[reduce_nodes_[r]];
    Shape a;
    for (int ax : n.axes) a.push_back(g_[n.src[0]].shape[std::size_t(ax)]);
    return a;
  }
  /// The merged reduce loops of reduction r.
  constexpr Shape reduce_loops(std::size_t r) const {
    Shape full = kept_shape(r);
    std::size_t from = full.size();
    for (const SInt& d : reduce_axes_shape(r)) full.push_back(d);
    return merged(full, reduce_groups_[r], from);
  }
  /// The axes reduction r's input space puts before its reduced ones: the kernel's index space
  /// (aligned), or the kept axes of its input (hoisted).
  constexpr Shape kept_shape(std::size_t r) const {
    if (!hoisted_[r]) return space_;
    const Node& n = g_[reduce_nodes_[r]];
    Shape k;
    for (std::size_t d = 0; d < n.shape.size(); ++d)
      if (!reduced(n, d)) k.push_back(n.shape[d]);
    return k;
  }
  /// Whether every load inside reduction r reads its innermost merged loop contiguously, or not
  /// at all (LowerOptions::split_reduce).
  constexpr bool inner_contiguous(std::size_t r) const {
    Shape ra = reduce_loops(r);
    if (ra.empty()) return false;
    std::size_t n = kept_shape(r).size(), inner = 0;
    const std::vector<int>& groups = reduce_groups_[r];
    for (std::size_t d = 0; d < groups.size(); ++d)
      if (groups[d] == int(ra.size()) - 1) inner = n + d;
    for (const ShapeTracker& t : space_trackers_[r + 1]) {
      const SInt& stride = t.views.back().strides[inner];
      if (!(stride == 0) && !(stride == 1 && t.views.size() == 1)) return false;
    }
    return true;
  }
  /// What choose() (opt.hpp) decides from, for merged output loops m.
  constexpr KernelFacts facts(const Shape& m) const {
    KernelFacts f;
    f.loops = m;
    for (std::size_t r = 0; r < reduce_nodes_.size(); ++r) {
      ReductionFacts rf;
      rf.hoisted = hoisted_[r];
      Shape ra = reduce_loops(r);
      rf.inner = !ra.empty() && ra.back().is_const() ? ra.back().constant() : 0;
      rf.inner_contiguous = inner_contiguous(r);
      rf.dtype = g_[reduce_nodes_[r]].dtype;
      f.reductions.push_back(rf);
    }
    if (!reduce_nodes_.empty()) f.reduce_length = prod(reduce_loops(0));
    const std::size_t last = m.size() - 1;
    f.shared_last = shared_along(last);
    f.contiguous_last = lanes_contiguous(last, false);
    f.packable_last = lanes_contiguous(last, true);
    f.masked_last = masked(last);
    f.lane_shared_epilogue = shared_epilogue(last);
    f.transposed = transposed(m);
    if (m.size() >= 2) {
      f.row = last - 1;
      if (!reduce_nodes_.empty() && !lanes_shared_along(f.row, last))
        for (std::size_t a = f.row; a-- > 0;)
          if (lanes_shared_along(a, last) && shared_along(a)) {
            f.row = a;
            break;
          }
      f.shared_row = shared_along(f.row);
      f.masked_row = masked(f.row);
      f.row_shared_epilogue = shared_epilogue(f.row);
    }
    return f;
  }
  /// Whether every load inside a reduction that varies along the last merged output axis reads
  /// one element along merged output axis `axis`: a register tile's rows along it then share
  /// each of those loads (matmul's right operand along the rows; a convolution's input along
  /// its output channels, though not along its output rows).
  constexpr bool lanes_shared_along(std::size_t axis, std::size_t last) const {
    for (const ShapeTracker& t : operand_trackers_) {
      const View& v = t.views.back();
      bool lanes = false, along = false;
      for (std::size_t d = 0; d < out_groups_.size(); ++d) {
        bool fixed = v.strides[d] == 0 && !v.masked(d);
        if (out_groups_[d] == int(last)) lanes = lanes || !fixed;
        if (out_groups_[d] == int(axis)) along = along || !fixed;
      }
      if (lanes && along) return false;
    }
    return true;
  }
  /// Whether some load inside a reduction reads the same element at every index of merged output
  /// axis `axis` (and depends on some other output axis): upcasting the axis shares that load.
  constexpr bool shared_along(std::size_t axis) const {
    for (const ShapeTracker& t : operand_trackers_) {
      const View& v = t.views.back();
      bool along = true, elsewhere = false;
      for (std::size_t d = 0; d < out_groups_.size(); ++d) {
        bool fixed = v.strides[d] == 0 && !v.masked(d);
        if (out_groups_[d] == int(axis))
          along = along && fixed;
        else if (out_groups_[d] >= 0)
          elsewhere = elsewhere || !fixed;
      }
      if (along && elsewhere) return true;
    }
    return false;
  }
  /// Whether every load of the kernel's epilogue (outside its reductions) reads one element for
  /// all of merged output axis `axis` (a tile's rows: a bias, not a relu mask). A 4 x 32 tile
  /// whose epilogue loads a mask per element spills its 16 accumulators around the epilogue's
  /// scalar loads, compares and multiplies, and is slower than 4 x 16.
  constexpr bool shared_epilogue(std::size_t axis) const {
    for (std::size_t i = 1; i < space_trackers_[0].size(); ++i) { // [0]: the output's own
      const View& v = space_trackers_[0][i].views.back();
      for (std::size_t d = 0; d < out_groups_.size(); ++d)
        if (out_groups_[d] == int(axis) && !(v.strides[d] == 0 && !v.masked(d))) return false;
    }
    return true;
  }
  /// Whether every load inside a reduction reads consecutive elements along merged output axis
  /// `axis` (or one element for all of it): the lanes of a tile then load as vectors. (A
  /// transposed operand, strided along the lanes, gained nothing from a tile, unless it is the
  /// shared operand of a tile whose panels pack_panels copies: `packed`.)
  constexpr bool lanes_contiguous(std::size_t axis, bool packed) const {
    for (const ShapeTracker& t : operand_trackers_) {
      std::size_t inner = out_groups_.size();
      for (std::size_t d = 0; d < out_groups_.size(); ++d)
        if (out_groups_[d] == int(axis)) inner = d;
      if (inner == out_groups_.size()) continue;
      const View& v = t.views.back();
      const SInt& stride = v.strides[inner];
      if (stride == 0 || (stride == 1 && t.views.size() == 1)) continue;
      if (!packed || t.views.size() != 1 || !v.mask.empty() || !stride.is_const()) return false;
      for (std::size_t d = 0; d < out_groups_.size(); ++d) // one element for every row
        if (out_groups_[d] == int(axis) - 1 && !(v.strides[d] == 0)) return false;
    }
    return true;
  }
  /// The accesses indexed by the kernel's loops: those of its own space and of its aligned
  /// reductions' spaces (whose leading axes are that space).
  constexpr std::vector<ShapeTracker> aligned_trackers() const {
    std::vector<ShapeTracker> all = space_trackers_[0];
    for (std::size_t r = 0; r < reduce_nodes_.size(); ++r)
      if (!hoisted_[r])
        all.insert(all.end(), space_trackers_[r + 1].begin(), space_trackers_[r + 1].end());
    return all;
  }

  /// Groups of consecutive axes in [from, to) of `shape` that can run as one loop: every
  /// tracker's top view steps through them contiguously and unmasked. Size-1 axes vanish.
  /// The result lists, per axis, the group it belongs to (-1: dropped).
  static constexpr std::vector<int> merge_groups(const Shape& shape, std::size_t from,
                                                 std::size_t to,
                                                 const std::vector<ShapeTracker>& ts) {
    std::vector<int> group(to - from, -1);
    auto unmasked = [&](std::size_t d) {
      for (const ShapeTracker& t : ts) {
        const View& v = t.views.back();
        if (v.masked(d)) return false;
      }
      return true;
    };
    int g = -1;
    std::size_t prev = to;
    for (std::size_t d = from; d < to; ++d) {
      if (shape[d] == 1 && unmasked(d)) continue;
      bool join = prev < to && unmasked(d) && unmasked(prev);
      for (const ShapeTracker& t : ts) {
        if (!join) break;
        const View& v = t.views.back();
        join = v.strides[prev] == v.strides[d] * v.shape[d];
      }
      if (!join) ++g;
      group[d - from] = g;
      prev = d;
    }
    return group;
  }
  static constexpr Shape merged(const Shape& shape, const std::vector<int>& group,
                                std::size_t from) {
    Shape m;
    for (std::size_t i = 0; i < group.size(); ++i) {
      if (group[i] < 0) continue;
      if (std::size_t(group[i]) == m.size())
        m.push_back(shape[from + i]);
      else
        m.back() = m.back() * shape[from + i];
    }
    return m;
  }

  /// Emits every value in the outermost loop it depends on.
  constexpr Program linearize(int nout) {
    const std::vector<UOp>& dag = b_.ops;
    std::size_t n = dag.size();
    std::vector<std::uint64_t> deps(n, 0);
    std::vector<std::uint64_t> reduce_bits(n, 0);
    // Reductions sharing loops (the lanes of an upcast kernel) are emitted as one loop nest, so
    // each depends on every loop any of them needs (a lane may not read the upcast axis at all).
    std::vector<std::uint64_t> shared(n, 0);
    for (bool again = true; again;) {
      for (std::size_t i = 0; i < n; ++i) {
        const UOp& u = dag[i];
        std::uint64_t d = 0;
        for (int s : u.src)
          if (s >= 0) d |= deps[std::size_t(s)];
        if (u.kind == UKind::Range) {
          if (u.arg >= 64) throw graph_error("a kernel with more than 64 loops");
          d |= std::uint64_t(1) << u.arg;
        }
        if (u.kind == UKind::Reduce) {
          for (int rg : u.ranges) reduce_bits[i] |= std::uint64_t(1) << dag[std::size_t(rg)].arg;
          d = (d & ~reduce_bits[i]) | shared[i];
        }
        deps[i] = d;
      }
      again = false;
      for (std::size_t i = 0; i < n; ++i)
        for (std::size_t j = 0; j < n && dag[i].kind == UKind::Reduce; ++j)
          if (dag[j].kind == UKind::Reduce && dag[j].ranges == dag[i].ranges &&
              (deps[j] & ~deps[i])) {
            shared[i] |= deps[j];
            again = true;
          }
    }
    auto highest = [](std::uint64_t d) {
      int h = -1;
      for (int b = 0; b < 64; ++b)
        if (d >> b & 1) h = b;
      return h;
    };
    std::uint64_t outer_mask = nout >= 64 ? ~std::uint64_t(0) : (std::uint64_t(1) << nout) - 1;
    Program p;
    std::vector<int> map(n, -1);
    std::vector<std::uint8_t> done(n, false); // not vector<bool>: see NodeFlags
    auto emit = [&](std::size_t i) {
      UOp u = dag[i];
      for (int& s : u.src)
        if (s >= 0) s = map[std::size_t(s)];
      u.ranges.clear();
      p.ops.push_back(u);
      map[i] = int(p.ops.size()) - 1;
      done[i] = true;
    };
    auto end_range = [&](std::size_t r) {
      UOp e{UKind::EndRange, Op::Add, DType::Int64, {map[r], -1, -1}, {}, -1, {}};
      p.ops.push_back(e);
    };
    // Reductions over the same loops (the lanes of an upcast kernel) share one loop nest, each
    // with its own accumulator.
    auto emit_reduce = [&](auto& self, std::size_t i) -> void {
      std::vector<std::size_t> group;
      for (std::size_t j = i; j < n; ++j)
        if (!done[j] && dag[j].kind == UKind::Reduce && dag[j].ranges == dag[i].ranges)
          group.push_back(j);
      // first what the bodies need from outside the loops (later lanes' index math, and the
      // reductions another reduction of the group reads, each with its own loops)
      std::vector<std::uint8_t> need(n, 0);
      std::vector<std::size_t> stack;
      for (std::size_t g : group) stack.push_back(std::size_t(dag[g].src[0]));
      while (!stack.empty()) {
        std::size_t v = stack.back();
        stack.pop_back();
        if (done[v] || need[v] || dag[v].kind == UKind::Range) continue;
        need[v] = 1;
        if (dag[v].kind == UKind::Reduce) continue;
        for (int src : dag[v].src)
          if (src >= 0) stack.push_back(std::size_t(src));
      }
      for (std::size_t v = 0; v < n; ++v) {
        if (!need[v] || done[v] || (deps[v] & reduce_bits[i])) continue;
        if (dag[v].kind == UKind::Reduce)
          self(self, v);
        else
          emit(v);
      }
      std::vector<int> accs;
      for (std::size_t g : group) {
        UOp acc{UKind::DefineAcc,
                dag[g].op,
                dag[g].dtype,
                {-1, -1, -1},
                reduce_identity(dag[g].op, dag[g].dtype),
                -1,
                {}};
        p.ops.push_back(acc);
        accs.push_back(int(p.ops.size()) - 1);
      }
      const UOp& u = dag[i];
      for (int rg : u.ranges) {
        emit(std::size_t(rg));
        int bit = dag[std::size_t(rg)].arg;
        for (std::size_t j = 0; j < n; ++j)
          if (!done[j] && dag[j].kind != UKind::Range && (deps[j] & reduce_bits[i]) &&
              highest(deps[j]) == bit) {
            // (fuse keeps a reduction that varies along another's loop in a buffer)
            if (dag[j].kind == UKind::Reduce)
              throw graph_error("lower: a reduction nested in another reduction's loop");
            emit(j);
          }
      }
      for (std::size_t k = 0; k < group.size(); ++k) {
        const UOp& g = dag[group[k]];
        UOp as{
            UKind::AccAssign, g.op, g.dtype, {accs[k], map[std::size_t(g.src[0])], -1}, {}, -1, {}};
        p.ops.push_back(as);
      }
      for (std::size_t k = u.ranges.size(); k-- > 0;) end_range(std::size_t(u.ranges[k]));
      for (std::size_t k = 0; k < group.size(); ++k) {
        map[group[k]] = accs[k];
        done[group[k]] = true;
      }
    };
    // values no store depends on are never emitted
    std::vector<std::uint8_t> live(n, false);
    for (std::size_t i = n; i-- > 0;) {
      const UOp& u = dag[i];
      if (u.kind == UKind::Store || (u.kind == UKind::Range && u.arg < nout)) live[i] = true;
      if (!live[i]) continue;
      for (int src : u.src)
        if (src >= 0) live[std::size_t(src)] = true;
      for (int rg : u.ranges) live[std::size_t(rg)] = true;
    }
    for (std::size_t i = 0; i < n; ++i)
      if (!live[i]) done[i] = true;
    std::vector<std::size_t> outer_ranges(std::size_t(nout), 0);
    for (std::size_t i = 0; i < n; ++i)
      if (dag[i].kind == UKind::Range && dag[i].arg < nout)
        outer_ranges[std::size_t(dag[i].arg)] = i;
    for (int level = -1; level < nout; ++level) {
      if (level >= 0) emit(outer_ranges[std::size_t(level)]);
      for (std::size_t i = 0; i < n; ++i) {
        if (done[i] || dag[i].kind == UKind::Range || (deps[i] & ~outer_mask) ||
            highest(deps[i]) != level)
          continue;
        if (dag[i].kind == UKind::Reduce)
          emit_reduce(emit_reduce, i);
        else
          emit(i);
      }
    }
    for (int level = nout; level-- > 0;) end_range(outer_ranges[std::size_t(level)]);
    return p;
  }

public:
private:
  const Graph& g_;
  const NodeFlags& mat_;
  const Kernel& k_;
  UOpBuilder b_;
  std::vector<int> params_; // the outputs, then the inputs
  std::size_t nout_ = 1;
  std::vector<Var> vars_;
  bool collecting_ = false;
  std::vector<Memo> memo_;
  std::vector<std::vector<int>> memo_of_; // per graph node: its entries in memo_
  std::vector<std::vector<ShapeTracker>> space_trackers_;
  std::vector<ShapeTracker> operand_trackers_; // loads of buffers inside reductions
  std::vector<int> reduce_nodes_;
  std::vector<std::uint8_t> hoisted_; // per reduction: read through a view (see reduce)
  std::vector<std::int64_t> splits_;  // per reduction: Choices::splits
  std::vector<int> space_ctx_;        // per space: which binding of its indices memo_ holds
  struct Hoisted {
    int node;
    std::vector<int> kept; // its kept index
    int uop;               // its value
  };
  std::vector<Hoisted> hoisted_done_;
  std::vector<int> force_hoisted_; // reductions read both at the kernel's index and through a view
  bool recollect_ = false;
  std::vector<int> out_groups_;
  std::vector<std::vector<int>> reduce_groups_;
  std::vector<int> out_idx_;
  std::vector<std::vector<int>> space_idx_;
  int nranges_ = 0;
  LowerOptions opt_;
  std::int64_t lane_ = 0;
  std::int64_t split_ = 1, part_ = 0; // Choices::split, and the partial accumulator being built
  bool panel_ = false;                // column tiles outermost (LowerOptions::panel_bytes)
  bool strided_tile_ = false;         // a GPU's tile (LowerOptions::gpu_tile)
  Shape space_;                       // the kernel's index space: its root's shape, or finer
  bool unroll_ok_ = false;            // short reductions may unroll (LowerOptions::unroll_reduce)
  std::vector<std::pair<int, std::vector<int>>> reduce_ranges_;
};

} // namespace detail

constexpr Program lower(const Graph& g, const Schedule& s, std::size_t kernel,
                        LowerOptions o = {}) {
  return detail::Lowerer(g, s, s.kernels[kernel], o).run();
}

} // namespace tg
