#pragma once
// pack_rows (C programs for the CPU only, after pack_panels): a register tile's row operand copied
// into a local array when the tile reads it across the reduction. In a product whose left operand
// is a transposed view (the weight gradient dy.t() @ x), a 4-row tile reads 4 consecutive floats
// from each of K rows of the operand, rows 1 KiB apart (256 columns): the K rows fall into a few
// sets of the L1 cache, and every column tile, which reads the whole operand again, fetches
// each of them from L2. Copying the operand once per call, tile by tile (the 4 values of each k
// next to each other), turns those reads into one contiguous stream per tile (figures in
// docs/performance.md). The copy holds the same values, so results do not change.
#include "pack_panels.hpp"

namespace tg {

namespace detail {
/// Whether a copy before op `before` can compute the indices `roots` itself: the ops among them
/// that move with the loops `own` (range_deps' bits) are arithmetic, collected in `cone` (to
/// clone), and everything else they read is computed before `before`.
constexpr bool clonable_index(const Program& p, const std::vector<std::uint64_t>& deps,
                              std::uint64_t own, std::vector<int> roots, int before,
                              std::vector<int>& cone) {
  while (!roots.empty()) {
    const int v = roots.back();
    roots.pop_back();
    const UOp& x = p.ops[std::size_t(v)];
    if (!(deps[std::size_t(v)] & own)) {
      if (v >= before) return false;
      continue;
    }
    if (x.kind == UKind::Range) continue; // one of the loops
    if (x.kind != UKind::Alu) return false;
    if (std::find(cone.begin(), cone.end(), v) == cone.end()) cone.push_back(v);
    for (int s : x.src)
      if (s >= 0) roots.push_back(s);
  }
  return true;
}
} // namespace detail

/// The pass (see the top of this file); `max_bytes` bounds the copy. A program without such a
/// tile comes back as it was.
constexpr Program pack_rows(const Program& p, std::int64_t max_bytes = kPackBytes) {
  const std::size_t n = p.ops.size();
  std::vector<int> bit;
  std::vector<std::uint64_t> deps = detail::range_deps(p, bit);
  if (deps.empty()) return p;
  std::vector<detail::Affine> aff = detail::affine_forms(p);
  std::vector<std::vector<int>> stack = detail::enclosing_ranges(p); // outermost first
  auto const_range = [&](int r, std::int64_t& len) {
    return detail::constant_range(p, std::size_t(r), len);
  };
  auto same_terms = [](const detail::Affine& a, const detail::Affine& b) {
    return a.terms == b.terms;
  };
  // One group per (reduce loop, buffer, index terms): the tile's loads of one k, by offset.
  struct Group {
    int loop = -1, tile = -1, hoist = -1, buf = -1;
    std::int64_t k = 0, tiles = 0;
    std::vector<int> loads, cone; // cone: the index ops that depend on the loop or the tile
  };
  std::vector<Group> groups;
  std::vector<int> group_of(n, -1);
  // only a register tile's row values (the scalar side of its vector multiply-adds)
  std::vector<std::uint8_t> tile_scalar(n, 0);
  for (const UOp& u : p.ops)
    if (u.kind == UKind::VecMac) tile_scalar[std::size_t(u.src[1])] = 1;
  for (std::size_t i = 0; i < n; ++i) {
    const UOp& u = p.ops[i];
    if (u.kind != UKind::Load || !tile_scalar[i] || u.src[2] >= 0 || stack[i].size() < 2) continue;
    const int loop = stack[i].back();
    const detail::Affine& a = aff[std::size_t(u.src[1])];
    const std::uint64_t idx = deps[std::size_t(u.src[1])];
    auto moves = [&](int r) { return (idx >> bit[std::size_t(r)] & 1) != 0; };
    std::int64_t k = 0, tiles = 1, reuse = 0;
    // strided along the reduction: each k a new cache line
    if (!const_range(loop, k) || detail::coefficient(a, loop) < 16) continue;
    // The copy goes before the outermost enclosing loop from which on no loop but the
    // reduction and (in panel order) the tile loop right outside it moves the index.
    const std::vector<int>& enclosing = stack[std::size_t(loop)];
    std::size_t h = enclosing.size();
    int tile = -1;
    if (moves(enclosing[h - 1])) { // the tile loop: the copy holds every tile
      tile = enclosing[--h];
      if (!const_range(tile, tiles) || tiles < 2) continue;
    }
    while (h > 0 && !moves(enclosing[h - 1])) --h;
    if (h == enclosing.size() || (tile >= 0 && h + 1 == enclosing.size())) continue;
    const int hoist = enclosing[h];
    // reused: by the loop the copy goes before (constant trip count), or by the calls' outer
    // iterations (column tiles in panel order)
    if (!const_range(hoist, reuse)) reuse = p.outer.is_const() ? p.outer.constant() : 0;
    if (reuse < (tile >= 0 ? 8 : 2)) continue;
    Group* g = nullptr;
    for (Group& x : groups)
      if (x.loop == loop && x.buf == u.src[0] &&
          same_terms(aff[std::size_t(p.ops[std::size_t(x.loads[0])].src[1])], a))
        g = &x;
    if (!g) {
      groups.push_back(Group{loop, tile, hoist, u.src[0], k, tiles, {}, {}});
      g = &groups.back();
    }
    g->loads.push_back(int(i));
  }
  for (std::size_t gi = 0; gi < groups.size(); ++gi) {
    Group& g = groups[gi];
    const DType t = p.ops[std::size_t(g.loads[0])].dtype;
    bool ok =
        g.loads.size() <= 16 &&
        g.tiles * g.k * std::int64_t(g.loads.size()) * itemsize(compute_dtype(t)) <= max_bytes;
    for (int l : g.loads) ok = ok && p.ops[std::size_t(l)].dtype == t;
    std::vector<int> roots;
    for (int l : g.loads) roots.push_back(p.ops[std::size_t(l)].src[1]);
    const std::uint64_t own = std::uint64_t(1) << bit[std::size_t(g.loop)] |
                              (g.tile >= 0 ? std::uint64_t(1) << bit[std::size_t(g.tile)] : 0);
    if (!ok || !detail::clonable_index(p, deps, own, std::move(roots), g.hoist, g.cone)) continue;
    std::sort(g.cone.begin(), g.cone.end());
    for (int l : g.loads) group_of[std::size_t(l)] = int(gi);
  }

  detail::ProgramRewriter w{p, {}, std::vector<int>(n, -1)};
  std::vector<int>& map = w.map;
  std::vector<int> local(groups.size(), -1);
  // the element of load r at (tile, k): tile by tile, each k's loads next to each other
  auto local_index = [&](const Group& g, int tile, int k, std::size_t r) {
    int row =
        tile < 0 ? k
                 : w.alu(Op::Add, DType::Int64, w.alu(Op::Mul, DType::Int64, tile, w.cint(g.k)), k);
    return w.alu(Op::Add, DType::Int64,
                 w.alu(Op::Mul, DType::Int64, row, w.cint(std::int64_t(g.loads.size()))),
                 w.cint(std::int64_t(r)));
  };
  for (std::size_t i = 0; i < n; ++i) {
    for (std::size_t gi = 0; gi < groups.size(); ++gi) {
      const Group& g = groups[gi];
      if (g.hoist != int(i) || group_of[std::size_t(g.loads[0])] != int(gi)) continue;
      // [for tile:] for k: local[(tile * K + k) * R + r] = buf[index_r(tile, k)]
      // (a 16-bit float's copy holds the float32s its values are: converted once)
      const DType t = p.ops[std::size_t(g.loads[0])].dtype;
      local[gi] = w.add(UOp{UKind::Local,
                            Op::Add,
                            compute_dtype(t),
                            {-1, -1, -1},
                            {},
                            int(g.tiles * g.k * std::int64_t(g.loads.size())),
                            {}});
      int zero = w.cint(0);
      int tile =
          g.tile < 0
              ? -1
              : w.add(UOp{
                    UKind::Range, Op::Add, DType::Int64, {zero, w.cint(g.tiles), -1}, {}, -1, {}});
      int k = w.add(UOp{UKind::Range, Op::Add, DType::Int64, {zero, w.cint(g.k), -1}, {}, -1, {}});
      std::vector<int> clone(n, -1);
      if (tile >= 0) clone[std::size_t(g.tile)] = tile;
      clone[std::size_t(g.loop)] = k;
      for (int v : g.cone) {
        UOp c = p.ops[std::size_t(v)];
        for (int& s : c.src)
          if (s >= 0) s = clone[std::size_t(s)] >= 0 ? clone[std::size_t(s)] : map[std::size_t(s)];
        clone[std::size_t(v)] = w.add(c);
      }
      for (std::size_t r = 0; r < g.loads.size(); ++r) {
        const UOp& l = p.ops[std::size_t(g.loads[r])];
        int v = w.add(UOp{UKind::Load,
                          Op::Add,
                          t,
                          {map[std::size_t(g.buf)], clone[std::size_t(l.src[1])], -1},
                          {},
                          -1,
                          {}});
        w.add(
            UOp{UKind::Store, Op::Add, t, {local[gi], local_index(g, tile, k, r), v}, {}, -1, {}});
      }
      w.add(UOp{UKind::EndRange, Op::Add, DType::Int64, {k, -1, -1}, {}, -1, {}});
      if (tile >= 0) w.add(UOp{UKind::EndRange, Op::Add, DType::Int64, {tile, -1, -1}, {}, -1, {}});
    }
    if (int gi = group_of[i]; gi >= 0 && local[std::size_t(gi)] >= 0) {
      const Group& g = groups[std::size_t(gi)];
      std::size_t r = 0;
      while (g.loads[r] != int(i)) ++r;
      int at =
          local_index(g, g.tile < 0 ? -1 : map[std::size_t(g.tile)], map[std::size_t(g.loop)], r);
      map[i] = w.add(
          UOp{UKind::Load, Op::Add, p.ops[i].dtype, {local[std::size_t(gi)], at, -1}, {}, -1, {}});
      continue;
    }
    map[i] = w.add(w.remapped(p.ops[i]));
  }
  Program q = p;
  q.ops = std::move(w.out);
  return detail::drop_unused(std::move(q));
}

} // namespace tg
