#pragma once
// partition_loops (C programs for the CPU only, after widen_rows): a loop whose body compares its
// index with constants (a padded view's bounds: `0 < x && x < 29`) runs as one loop per stretch
// of the index where every such comparison keeps its value, each with those comparisons folded
// (Halide's loop partitioning); the loops inside each part are cut in turn. A padded copy's row
// of 30 was a loop of gated loads that the C compiler may not if-convert (a gated load may point
// outside its buffer), so it ran scalar with branches; partitioned, its 28 inner elements are a
// plain copy that vectorizes, and its borders are stores of zeros. The same iterations run in the
// same order, so results do not change.
#include "pair_products.hpp"

namespace tg {

namespace detail {
/// Adds ops to a rewriter, folding where a condition is a constant (partition_loops fixed the
/// comparisons): And and Or of booleans, Where, and a Load's gate.
struct Folder {
  ProgramRewriter& w;
  constexpr bool is_const(int v) const { return w.out[std::size_t(v)].kind == UKind::Const; }
  constexpr std::int64_t ival(int v) const { return w.out[std::size_t(v)].value.i; }
  constexpr int boolean(bool b) {
    return w.add(UOp{UKind::Const,
                     Op::Add,
                     DType::Bool,
                     {-1, -1, -1},
                     Scalar::of_int(DType::Bool, b ? 1 : 0),
                     -1,
                     {}});
  }
  /// u, its sources already remapped into w.out: folded, or added as it is.
  constexpr int add(UOp u) {
    if (u.kind == UKind::Alu && u.dtype == DType::Bool && (u.op == Op::And || u.op == Op::Or)) {
      const bool is_and = u.op == Op::And;
      for (int k = 0; k < 2; ++k) {
        const int s = u.src[std::size_t(k)], other = u.src[std::size_t(1 - k)];
        if (is_const(s)) return (ival(s) != 0) == is_and ? other : boolean(!is_and);
      }
    }
    if (u.kind == UKind::Alu && u.op == Op::Where && is_const(u.src[0]))
      return ival(u.src[0]) ? u.src[1] : u.src[2];
    if (u.kind == UKind::Load && u.src[2] >= 0 && is_const(u.src[2])) {
      if (ival(u.src[2]) == 0)
        return w.add(UOp{UKind::Const, Op::Add, u.dtype, {-1, -1, -1}, Scalar{}, -1, {}});
      u.src[2] = -1;
    }
    return w.add(u);
  }
};

/// If u compares loop r's index i (as i + k) with a constant c: the first index from which its
/// value changes (c - k for i + k < c, c - k + 1 for c < i + k), and the value it has below.
constexpr bool compares_index(const Program& p, const std::vector<Affine>& aff, const UOp& u, int r,
                              std::int64_t& from, bool& below) {
  if (u.kind != UKind::Alu || u.op != Op::CmpLt) return false;
  for (int side = 0; side < 2; ++side) {
    const int x = u.src[std::size_t(side)], c = u.src[std::size_t(1 - side)];
    const Affine& a = aff[std::size_t(x)];
    const UOp& k = p.ops[std::size_t(c)];
    if (k.kind != UKind::Const || !is_int(k.dtype) || a.terms.size() != 1 ||
        a.terms[0].first != r || a.terms[0].second != 1)
      continue;
    from = k.value.i - a.c + side;
    below = side == 0;
    return true;
  }
  return false;
}
/// One round of the pass over p: the outermost loops that qualify. Whether it cut any.
constexpr bool partition_once(Program& p, int max_parts, std::size_t max_ops) {
  const std::size_t n = p.ops.size();
  std::vector<Affine> aff = affine_forms(p);
  std::vector<int> end_of(n, -1);
  for (std::size_t i = 0; i < n; ++i)
    if (p.ops[i].kind == UKind::EndRange) end_of[std::size_t(p.ops[i].src[0])] = int(i);
  // per loop: where its comparisons change value (sorted, inside (0, length))
  std::vector<std::vector<std::int64_t>> cuts(n);
  bool any = false;
  for (std::size_t r = 0; r < n; ++r) {
    std::int64_t len = 0;
    if (p.ops[r].kind != UKind::Range || !constant_range(p, r, len) || end_of[r] < 0) continue;
    const std::size_t end = std::size_t(end_of[r]);
    std::vector<std::int64_t> at;
    bool locals = false;
    for (std::size_t i = r + 1; i < end; ++i) {
      std::int64_t from = 0;
      bool below = false;
      locals = locals || p.ops[i].kind == UKind::Local;
      if (compares_index(p, aff, p.ops[i], int(r), from, below) && from > 0 && from < len &&
          std::find(at.begin(), at.end(), from) == at.end())
        at.push_back(from);
    }
    if (at.empty() || locals || int(at.size()) + 1 > max_parts ||
        (end - r) * (at.size() + 1) > max_ops || !sealed(p, r, end))
      continue;
    std::sort(at.begin(), at.end());
    cuts[r] = at;
    any = true;
    r = end; // (its inner loops: the next round, in each part)
  }
  if (!any) return false;

  ProgramRewriter w{p, {}, std::vector<int>(n, -1)};
  Folder fold{w};
  for (std::size_t i = 0; i < n; ++i) {
    if (cuts[i].empty()) {
      w.map[i] = fold.add(w.remapped(p.ops[i]));
      continue;
    }
    std::int64_t len = 0;
    constant_range(p, i, len);
    const std::size_t end = std::size_t(end_of[i]);
    std::vector<std::int64_t> bounds{0};
    bounds.insert(bounds.end(), cuts[i].begin(), cuts[i].end());
    bounds.push_back(len);
    for (std::size_t part = 0; part + 1 < bounds.size(); ++part) {
      const std::int64_t lo = bounds[part], hi = bounds[part + 1];
      const int loop = w.add(UOp{
          UKind::Range, Op::Add, DType::Int64, {w.cint(lo), w.cint(hi), -1}, {}, p.ops[i].arg, {}});
      w.map[i] = loop;
      for (std::size_t j = i + 1; j < end; ++j) {
        std::int64_t from = 0;
        bool below = false;
        // (a comparison of the index with a constant: one value on all of [lo, hi))
        if (compares_index(p, aff, p.ops[j], int(i), from, below))
          w.map[j] = fold.boolean(lo < from ? below : !below);
        else
          w.map[j] = fold.add(w.remapped(p.ops[j]));
      }
      w.map[end] = w.add(UOp{UKind::EndRange, Op::Add, DType::Int64, {loop, -1, -1}, {}, -1, {}});
    }
    i = end;
  }
  Program q = p;
  q.ops = std::move(w.out);
  p = drop_unused(std::move(q));
  return true;
}
} // namespace detail

/// The pass (see the top of this file): a loop is cut into at most `max_parts` loops, nested
/// loops each in turn, while the program stays within `max_ops` ops. A program without such a
/// loop comes back as it was.
constexpr Program partition_loops(Program p, int max_parts = 8, std::size_t max_ops = 4096) {
  for (int round = 0; round < 4; ++round) {
    Program q = p;
    if (!detail::partition_once(q, max_parts, max_ops) || q.ops.size() > max_ops) break;
    p = std::move(q);
  }
  return p;
}

} // namespace tg
