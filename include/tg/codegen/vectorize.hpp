#pragma once
// vectorize (C programs for the CPU device only): a register tile's lanes as GNU C vectors.
// A matmul's tile accumulates acc[r][c] = fma(a[r], b[c], acc[r][c]) (contract.hpp) with b[c]
// consecutive in memory. GCC turned its scalar accumulators into vectors itself, but reloaded b
// for every row of the tile (far from a core's peak: docs/performance.md). Here every run of W
// lanes of a row (W = one vector: 256 bits, or 512 where the C compiler has AVX-512) becomes one
// vector accumulator, updated by one vector load of b and the broadcast of a: the same fused
// multiply-adds, in the same order, for every lane, so the kernel still agrees with INTERP bit
// for bit.
// The partial accumulators of a split reduction (lower.hpp) of loads, acc[j] = op(acc[j],
// x[i + j]), become vector accumulators the same way: GCC vectorized such sums itself, but not
// a maximum (IEEE: NaN propagates), which ran as scalar compares and branches.
// A 16-bit float's lanes are float32 lanes (its registers hold float32s): the vector loads of a
// float16 or bfloat16 buffer widen its elements exactly, and its products run at float32's speed
// instead of converting each element on its own.
#include "ir.hpp"

namespace tg {

namespace detail {

/// An integer value as a sum of coefficient * atom plus a constant; atoms are op indices
/// (ranges, parameters, and whatever is not a sum or a product by a constant).
struct Affine {
  std::vector<std::pair<int, std::int64_t>> terms; // sorted by atom
  std::int64_t c = 0;
};

constexpr Affine affine_add(const Affine& a, const Affine& b, std::int64_t scale_b) {
  Affine r;
  r.c = a.c + scale_b * b.c;
  std::size_t i = 0, j = 0;
  while (i < a.terms.size() || j < b.terms.size()) {
    if (j == b.terms.size() || (i < a.terms.size() && a.terms[i].first < b.terms[j].first)) {
      r.terms.push_back(a.terms[i++]);
    } else if (i == a.terms.size() || b.terms[j].first < a.terms[i].first) {
      r.terms.push_back({b.terms[j].first, scale_b * b.terms[j].second});
      ++j;
    } else {
      std::int64_t k = a.terms[i].second + scale_b * b.terms[j].second;
      if (k != 0) r.terms.push_back({a.terms[i].first, k});
      ++i;
      ++j;
    }
  }
  return r;
}

/// The affine form of every integer op of p (others: empty).
constexpr std::vector<Affine> affine_forms(const Program& p) {
  std::vector<Affine> f(p.ops.size());
  for (std::size_t i = 0; i < p.ops.size(); ++i) {
    const UOp& u = p.ops[i];
    if (!is_int(u.dtype)) continue;
    if (u.kind == UKind::Const) {
      f[i].c = u.value.i;
      continue;
    }
    if (u.kind == UKind::Alu && (u.op == Op::Add || u.op == Op::Mul)) {
      const Affine& a = f[std::size_t(u.src[0])];
      const Affine& b = f[std::size_t(u.src[1])];
      if (u.op != Op::Mul) {
        f[i] = affine_add(a, b, 1);
        continue;
      }
      if (a.terms.empty() || b.terms.empty()) {
        const Affine& x = a.terms.empty() ? b : a;
        std::int64_t k = a.terms.empty() ? a.c : b.c;
        f[i] = affine_add(Affine{}, x, k);
        continue;
      }
    }
    f[i].terms.push_back({int(i), 1});
  }
  return f;
}

} // namespace detail

/// The vectorize pass (see the top of this file), with vectors of `vector_bytes` (32: AVX, 64:
/// AVX-512). Programs without such a tile come back as they were.
constexpr Program vectorize(const Program& p, int vector_bytes = 32) {
  const std::size_t n = p.ops.size();
  std::vector<detail::Affine> aff = detail::affine_forms(p);
  std::vector<int> depth_of(n, 0); // loops around each op
  for (std::size_t i = 0, d = 0; i < n; ++i) {
    if (p.ops[i].kind == UKind::EndRange) --d;
    depth_of[i] = int(d);
    if (p.ops[i].kind == UKind::Range) ++d;
  }
  // A lane: acc += s * b[i] (a product), or acc = op(acc, b[i]) (a fold: scalar -1), with b a
  // plain load of the accumulator's own dtype.
  struct Lane {
    int assign = -1, acc = -1, scalar = -1, buf = -1, index = -1;
  };
  auto lane_of = [&](std::size_t i, int scalar_side) {
    Lane l;
    const UOp& u = p.ops[i];
    if (u.kind != UKind::AccAssign || (u.op != Op::Add && u.op != Op::Max && u.op != Op::MulAdd) ||
        !is_float(u.dtype))
      return l;
    const UOp& acc = p.ops[std::size_t(u.src[0])];
    // (a reduction of one element has no loop: its lanes are not worth vectors)
    if (acc.kind != UKind::DefineAcc || depth_of[i] <= depth_of[std::size_t(u.src[0])]) return l;
    int s = -1, b = u.src[1];
    if (u.op == Op::MulAdd && acc.value.f == 0) { // (contract's)
      s = u.src[std::size_t(1 + scalar_side)];
      b = u.src[std::size_t(2 - scalar_side)];
    } else if (u.op == Op::MulAdd || scalar_side == 1) {
      return l;
    }
    const UOp& ld = p.ops[std::size_t(b)];
    if (ld.kind != UKind::Load || ld.src[2] >= 0 || p.ops[std::size_t(ld.src[0])].dtype != u.dtype)
      return l;
    return Lane{int(i), u.src[0], s, ld.src[0], ld.src[1]};
  };
  // Groups of W consecutive lanes with one scalar and elements of one buffer at a constant
  // distance: consecutive, or (a transposed operand, which pack_panels copies into a
  // contiguous panel) `stride` apart.
  std::vector<std::vector<Lane>> groups;
  std::vector<std::int64_t> strides; // per group
  std::vector<int> group_of_assign(n, -1), group_of_acc(n, -1);
  for (std::size_t i = 0; i < n; ++i) {
    if (group_of_assign[i] >= 0 || p.ops[i].kind != UKind::AccAssign) continue;
    // a whole vector's lanes, else (64-byte vectors) half of them: a tile of 8 float32 columns
    // (a product 1000 wide) in 32-byte vectors, not as scalars
    const std::size_t full = std::size_t(vector_bytes) / (p.ops[i].dtype == DType::Float64 ? 8 : 4);
    const std::size_t least = vector_bytes == 64 ? full / 2 : full;
    bool grouped = false;
    for (std::size_t w = full; !grouped && w >= least; w /= 2)
      for (int side = 0; side < 2 && i + w <= n; ++side) {
        std::vector<Lane> g;
        std::int64_t stride = 1;
        for (std::size_t j = 0; j < w; ++j) {
          Lane l = lane_of(i + j, side);
          if (l.assign < 0 || group_of_acc[std::size_t(l.acc)] >= 0) break;
          if (j > 0) {
            const Lane& f = g[0];
            detail::Affine d =
                detail::affine_add(aff[std::size_t(l.index)], aff[std::size_t(f.index)], -1);
            if (j == 1 && d.terms.empty() && d.c > 1 && l.scalar >= 0) stride = d.c;
            if (l.scalar != f.scalar || l.buf != f.buf || !d.terms.empty() ||
                d.c != std::int64_t(j) * stride ||
                !(p.ops[std::size_t(l.acc)] == p.ops[std::size_t(f.acc)]) ||
                p.ops[std::size_t(l.assign)].op != p.ops[i].op)
              break;
          }
          g.push_back(l);
        }
        if (g.size() != w) continue;
        for (const Lane& l : g) {
          group_of_assign[std::size_t(l.assign)] = int(groups.size());
          group_of_acc[std::size_t(l.acc)] = int(groups.size());
        }
        groups.push_back(g);
        strides.push_back(stride);
        grouped = true;
        break;
      }
  }
  if (groups.empty()) return p;

  Program q = p;
  q.ops.clear();
  std::vector<std::pair<std::pair<int, int>, int>> loaded; // (buffer, index) -> its VecLoad
  std::vector<int> map(n, -1), vacc(groups.size(), -1), open_at(groups.size(), -1);
  for (std::size_t i = 0; i < n; ++i) {
    UOp u = p.ops[i];
    for (int& s : u.src)
      if (s >= 0) s = map[std::size_t(s)];
    if (int g = group_of_acc[i]; g >= 0) { // one vector accumulator per group
      if (vacc[std::size_t(g)] < 0) {
        UOp v{UKind::VecAcc,
              u.op,
              u.dtype,
              {-1, -1, -1},
              u.value,
              int(groups[std::size_t(g)].size()),
              {}};
        q.ops.push_back(v);
        vacc[std::size_t(g)] = int(q.ops.size()) - 1;
        open_at[std::size_t(g)] = depth_of[i];
      }
      continue;
    }
    if (int g = group_of_assign[i]; g >= 0) { // the first lane updates the whole vector
      const std::vector<Lane>& gr = groups[std::size_t(g)];
      if (gr[0].assign != int(i)) continue;
      const Lane& f = gr[0];
      int w = int(gr.size()), ld = -1;
      std::pair<int, int> at{map[std::size_t(f.buf)], map[std::size_t(f.index)]};
      Scalar stride;
      stride.i = strides[std::size_t(g)] > 1 ? strides[std::size_t(g)] : 0;
      for (const auto& [key, id] : loaded)
        if (key == at && q.ops[std::size_t(id)].value.i == stride.i) ld = id;
      if (ld < 0) {
        q.ops.push_back(
            UOp{UKind::VecLoad, Op::Add, u.dtype, {at.first, at.second, -1}, stride, w, {}});
        ld = int(q.ops.size()) - 1;
        loaded.push_back({at, ld});
      }
      if (f.scalar < 0)
        q.ops.push_back(
            UOp{UKind::VecFold, u.op, u.dtype, {vacc[std::size_t(g)], ld, -1}, {}, w, {}});
      else
        q.ops.push_back(UOp{UKind::VecMac,
                            Op::MulAdd,
                            u.dtype,
                            {vacc[std::size_t(g)], map[std::size_t(f.scalar)], ld},
                            {},
                            w,
                            {}});
      continue;
    }
    q.ops.push_back(u);
    map[i] = int(q.ops.size()) - 1;
    if (u.kind != UKind::EndRange) continue;
    loaded.clear();
    // after the loop nest that defined them: the lanes as scalars, for the rest of the program
    for (std::size_t g = 0; g < groups.size(); ++g) {
      if (vacc[g] < 0 || open_at[g] != depth_of[i]) continue;
      for (std::size_t k = 0; k < groups[g].size(); ++k) {
        UOp lane{UKind::VecLane, Op::Add, q.ops[std::size_t(vacc[g])].dtype, {vacc[g], -1, -1}, {},
                 int(k),         {}};
        q.ops.push_back(lane);
        map[std::size_t(groups[g][k].acc)] = int(q.ops.size()) - 1;
      }
      open_at[g] = -1;
    }
  }
  return detail::drop_unused(std::move(q));
}

} // namespace tg
