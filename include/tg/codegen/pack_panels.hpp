#pragma once
// pack_panels (C programs for the CPU only, after vectorize): a tile's shared operand copied
// into a contiguous panel. In a matmul whose column tiles run outermost, every row tile reads
// the same columns of the right operand: 16 floats from each of K rows, rows 4 KiB apart (1024
// columns), so the K rows fall into a few sets of the L1 cache and are fetched again for every
// row tile. Copying those columns once per column tile into a local array of K x 16 (each row
// of the tile 64 bytes after the last) keeps them in cache (a standalone 1024² kernel ran twice
// as fast: docs/performance.md). The copy reads the same elements, so results do not change.
#include <algorithm>

#include "vectorize.hpp"

namespace tg {

namespace detail {
/// The ranges each op depends on (bit r: the r-th Range of the program; at most 64 ranges).
constexpr std::vector<std::uint64_t> range_deps(const Program& p, std::vector<int>& range_bit) {
  std::vector<std::uint64_t> d(p.ops.size(), 0);
  range_bit.assign(p.ops.size(), -1);
  int bits = 0;
  for (std::size_t i = 0; i < p.ops.size(); ++i) {
    const UOp& u = p.ops[i];
    if (u.kind == UKind::Range) {
      if (bits == 64) return {};
      range_bit[i] = bits;
      d[i] = std::uint64_t(1) << bits++;
    }
    if (u.kind == UKind::EndRange) continue;
    for (int s : u.src)
      if (s >= 0) d[i] |= d[std::size_t(s)];
  }
  return d;
}
/// Whether range r runs 0 .. len (constants) by steps of 1, and its len.
constexpr bool constant_range(const Program& p, std::size_t r, std::int64_t& len) {
  const UOp& u = p.ops[r];
  const UOp& lo = p.ops[std::size_t(u.src[0])];
  const UOp& hi = p.ops[std::size_t(u.src[1])];
  len = hi.value.i;
  return lo.kind == UKind::Const && lo.value.i == 0 && hi.kind == UKind::Const && u.src[2] < 0;
}
/// An affine form's coefficient of `atom` (0 without one).
constexpr std::int64_t coefficient(const Affine& a, int atom) {
  for (auto [at, k] : a.terms)
    if (at == atom) return k;
  return 0;
}
/// The ranges enclosing each op of p, outermost first.
constexpr std::vector<std::vector<int>> enclosing_ranges(const Program& p) {
  std::vector<std::vector<int>> stack(p.ops.size());
  std::vector<int> open;
  for (std::size_t i = 0; i < p.ops.size(); ++i) {
    if (p.ops[i].kind == UKind::EndRange) open.pop_back();
    stack[i] = open;
    if (p.ops[i].kind == UKind::Range) open.push_back(int(i));
  }
  return stack;
}
} // namespace detail

/// The pass (see the top of this file). Programs without such a tile come back as they were.
constexpr Program pack_panels(const Program& p, std::int64_t max_bytes = kPanelBytes) {
  const std::size_t n = p.ops.size();
  std::vector<int> bit;
  std::vector<std::uint64_t> deps = detail::range_deps(p, bit);
  if (deps.empty()) return p;
  std::vector<detail::Affine> aff = detail::affine_forms(p);
  std::vector<std::vector<int>> stack = detail::enclosing_ranges(p);
  // One panel per (reduce loop, buffer): its vector loads, their offsets from the first.
  struct Panel {
    int loop = -1, buf = -1, hoist = -1; // hoist: the range the copy goes before
    std::int64_t stride = 0;             // of its loads' elements (0: consecutive)
    std::vector<int> loads, cone;        // cone: the index's ops that depend on the loop
    std::vector<std::int64_t> offsets;   // in panel columns
    std::int64_t columns = 0, length = 0;
  };
  std::vector<Panel> panels;
  for (std::size_t i = 0; i < n; ++i) {
    const UOp& u = p.ops[i];
    if (u.kind != UKind::VecLoad || stack[i].empty()) continue;
    int loop = stack[i].back(), buf = u.src[0];
    Panel* pn = nullptr;
    for (Panel& x : panels)
      if (x.loop == loop && x.buf == buf && x.stride == u.value.i) pn = &x;
    if (!pn) {
      panels.push_back(Panel{loop, buf, -1, u.value.i, {}, {}, {}, 0, 0});
      pn = &panels.back();
    }
    detail::Affine d = detail::affine_add(
        aff[std::size_t(u.src[1])],
        aff[std::size_t(p.ops[std::size_t(pn->loads.empty() ? int(i) : pn->loads[0])].src[1])], -1);
    // a strided load's elements are `stride` apart: its column is its offset over the stride
    const std::int64_t s = std::max<std::int64_t>(pn->stride, 1);
    pn->loads.push_back(int(i));
    pn->offsets.push_back(d.terms.empty() && d.c % s == 0 ? d.c / s : -1);
  }
  std::vector<int> panel_of_load(n, -1);
  for (std::size_t k = 0; k < panels.size(); ++k) {
    Panel& pn = panels[k];
    const UOp& loop = p.ops[std::size_t(pn.loop)];
    const UOp& first = p.ops[std::size_t(pn.loads[0])];
    const std::int64_t w = first.arg;
    // a loop 0..K with constant K, read at offsets 0, w, 2w, ... (in any order)
    const UOp& lo = p.ops[std::size_t(loop.src[0])];
    const UOp& hi = p.ops[std::size_t(loop.src[1])];
    if (lo.kind != UKind::Const || lo.value.i != 0 || hi.kind != UKind::Const || loop.src[2] >= 0)
      continue;
    pn.length = hi.value.i;
    std::int64_t most = 0;
    bool ok = true;
    for (std::int64_t o : pn.offsets) {
      ok = ok && o >= 0 && o % w == 0;
      most = std::max(most, o);
    }
    pn.columns = most + w;
    std::vector<std::uint8_t> seen(std::size_t(pn.columns / w), 0);
    for (std::int64_t o : pn.offsets)
      if (ok) seen[std::size_t(o / w)] = 1;
    for (std::uint8_t s : seen) ok = ok && s;
    if (!ok || pn.length * pn.columns * itemsize(compute_dtype(first.dtype)) > max_bytes) continue;
    // The copy goes before the outermost enclosing loop from which on no loop changes the
    // index: that loop (row tiles) then reuses the panel. Everything the index needs besides
    // the reduce loop must be computed before it.
    const std::vector<int>& enclosing = stack[std::size_t(pn.loop)];
    std::uint64_t idx = deps[std::size_t(first.src[1])];
    std::size_t h = enclosing.size();
    while (h > 0 && !(idx >> bit[std::size_t(enclosing[h - 1])] & 1)) --h;
    if (h == enclosing.size()) continue;
    const int hoist = enclosing[h];
    const UOp& hend = p.ops[std::size_t(p.ops[std::size_t(hoist)].src[1])];
    if (hend.kind != UKind::Const || hend.value.i < 2) continue; // nothing to reuse
    // the index's ops inside the loop (cloned into the copy's loop) must all be arithmetic
    std::vector<int> todo{first.src[1]};
    while (ok && !todo.empty()) {
      int v = todo.back();
      todo.pop_back();
      if (v == pn.loop) continue;
      if (!(deps[std::size_t(v)] >> bit[std::size_t(pn.loop)] & 1)) {
        ok = v < hoist;
        continue;
      }
      const UOp& x = p.ops[std::size_t(v)];
      ok = x.kind == UKind::Alu;
      pn.cone.push_back(v);
      for (int s : x.src)
        if (s >= 0) todo.push_back(s);
    }
    if (!ok) continue;
    pn.hoist = hoist;
    for (int l : pn.loads) panel_of_load[std::size_t(l)] = int(k);
  }

  detail::ProgramRewriter w{p, {}, std::vector<int>(n, -1)};
  std::vector<int>& map = w.map;
  std::vector<int> local(panels.size(), -1), kk(panels.size(), -1);
  // the index of panel element (loop index at, offset o)
  auto panel_index = [&](const Panel& pn, int at, std::int64_t o) {
    int row = w.alu(Op::Mul, DType::Int64, at, w.cint(pn.columns));
    return w.alu(Op::Add, DType::Int64, row, w.cint(o));
  };
  for (std::size_t i = 0; i < n; ++i) {
    for (std::size_t k = 0; k < panels.size(); ++k) {
      const Panel& pn = panels[k];
      if (pn.hoist != int(i)) continue;
      // the copy: for kk in [0, K): panel[kk * columns + o] = buf[index(kk) + o]
      const UOp& first = p.ops[std::size_t(pn.loads[0])];
      // (a 16-bit float's panel holds the float32s its loads widen: widened once per panel)
      local[k] = w.add(UOp{UKind::Local,
                           Op::Add,
                           compute_dtype(first.dtype),
                           {-1, -1, -1},
                           {},
                           int(pn.length * pn.columns),
                           {}});
      int zero = w.cint(0), len = w.cint(pn.length);
      kk[k] = w.add(UOp{UKind::Range, Op::Add, DType::Int64, {zero, len, -1}, {}, -1, {}});
      std::vector<int> clone(n, -1);
      clone[std::size_t(pn.loop)] = kk[k];
      for (std::size_t v = std::size_t(pn.loop) + 1; v <= std::size_t(first.src[1]); ++v) {
        if (std::find(pn.cone.begin(), pn.cone.end(), int(v)) == pn.cone.end()) continue;
        UOp c = p.ops[v];
        for (int& s : c.src)
          if (s >= 0) s = clone[std::size_t(s)] >= 0 ? clone[std::size_t(s)] : map[std::size_t(s)];
        clone[v] = w.add(c);
      }
      int base = clone[std::size_t(first.src[1])];
      for (std::int64_t o = 0; o < pn.columns; o += first.arg) {
        int src =
            w.alu(Op::Add, DType::Int64, base, w.cint(o * std::max<std::int64_t>(pn.stride, 1)));
        int v = w.add(UOp{UKind::VecLoad,
                          Op::Add,
                          first.dtype,
                          {map[std::size_t(pn.buf)], src, -1},
                          first.value,
                          first.arg,
                          {}});
        int dst = panel_index(pn, kk[k], o);
        w.add(UOp{UKind::VecStore, Op::Add, first.dtype, {local[k], dst, v}, {}, first.arg, {}});
      }
      w.add(UOp{UKind::EndRange, Op::Add, DType::Int64, {kk[k], -1, -1}, {}, -1, {}});
    }
    UOp u = p.ops[i];
    if (int k = panel_of_load[i]; k >= 0 && local[std::size_t(k)] >= 0) {
      const Panel& pn = panels[std::size_t(k)];
      std::size_t j = 0;
      while (pn.loads[j] != int(i)) ++j;
      int at = panel_index(pn, map[std::size_t(pn.loop)], pn.offsets[j]);
      u.src = {local[std::size_t(k)], at, -1};
      u.value = Scalar{}; // the panel's rows are contiguous
      map[i] = w.add(u);
      continue;
    }
    map[i] = w.add(w.remapped(u));
  }
  Program q = p;
  q.ops = std::move(w.out);
  return detail::drop_unused(std::move(q));
}

} // namespace tg
