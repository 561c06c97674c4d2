#pragma once
// widen_rows (C programs for the CPU only, after pack_rows): a register tile's 16-bit float row
// operand widened once per tile. A float16 product's tile converts each element of its left
// operand on its own before broadcasting it: a load, a conversion and a broadcast for every row
// and step of k, where float32's multiply-add broadcasts its element from memory itself. Copying
// the tile's rows into a float32 local array before its reduction loop, a vector of 16 elements
// (one conversion instruction) at a time, leaves the loop float32's (a float16 1024² product ran
// at 0.4 of float32's speed: docs/performance.md). The copy holds the same values, so results do
// not change.
#include "pack_rows.hpp"
#include "pair_products.hpp"

namespace tg {

/// The pass (see the top of this file); `max_bytes` bounds a tile's copy. A program without such
/// a tile comes back as it was.
constexpr Program widen_rows(const Program& p, std::int64_t max_bytes = kPackBytes) {
  const std::size_t n = p.ops.size();
  std::vector<int> bit;
  std::vector<std::uint64_t> deps = detail::range_deps(p, bit);
  if (deps.empty()) return p;
  std::vector<detail::Affine> aff = detail::affine_forms(p);
  std::vector<std::vector<int>> stack = detail::enclosing_ranges(p); // outermost first
  std::vector<int> lanes(n, 0), end_of(n, -1); // a tile's row value: its vectors' lanes
  for (std::size_t i = 0; i < n; ++i) {
    const UOp& u = p.ops[i];
    if (u.kind == UKind::VecMac) lanes[std::size_t(u.src[1])] = p.ops[std::size_t(u.src[2])].arg;
    if (u.kind == UKind::EndRange) end_of[std::size_t(u.src[0])] = int(i);
  }
  // One group per reduction loop: its tile's rows (16-bit loads contiguous along the loop).
  struct Rows {
    int loop = -1, lanes = 0;
    std::int64_t k = 0;
    std::vector<int> loads;
  };
  std::vector<Rows> groups;
  std::vector<int> group_of(n, -1);
  for (std::size_t i = 0; i < n; ++i) {
    const UOp& u = p.ops[i];
    if (u.kind != UKind::Load || lanes[i] == 0 || !is_half(u.dtype) || u.src[2] >= 0 ||
        stack[i].empty() || p.ops[std::size_t(u.src[0])].kind != UKind::Param)
      continue;
    const int loop = stack[i].back();
    std::int64_t k = 0;
    if (!detail::constant_range(p, std::size_t(loop), k) || k < lanes[i] ||
        detail::coefficient(aff[std::size_t(u.src[1])], loop) != 1)
      continue;
    // the index's other terms are computed before the loop
    std::vector<int> cone;
    if (!detail::clonable_index(p, deps, std::uint64_t(1) << bit[std::size_t(loop)], {u.src[1]},
                                loop, cone))
      continue;
    std::size_t g = 0;
    while (g < groups.size() && groups[g].loop != loop) ++g;
    if (g == groups.size()) groups.push_back(Rows{loop, lanes[i], k, {}});
    if (groups[g].lanes != lanes[i]) continue;
    groups[g].loads.push_back(int(i));
    group_of[i] = int(g);
  }
  std::vector<std::uint8_t> take(groups.size(), 0);
  bool any = false;
  for (std::size_t g = 0; g < groups.size(); ++g) {
    take[g] = !groups[g].loads.empty() &&
              groups[g].k * std::int64_t(groups[g].loads.size()) * 4 <= max_bytes;
    any = any || take[g];
  }
  if (!any) return p;

  detail::ProgramRewriter w{p, {}, std::vector<int>(n, -1)};
  std::vector<int> local(groups.size(), -1);
  for (std::size_t i = 0; i < n; ++i) {
    for (std::size_t g = 0; g < groups.size(); ++g) {
      const Rows& r = groups[g];
      if (r.loop != int(i) || !take[g]) continue;
      // local[row * K + k .. + lanes] = widen(buf[index_row(k) .. + lanes]) for k in steps of
      // lanes, the last step shifted back to end at K (its overlap written twice, alike)
      local[g] = w.add(UOp{UKind::Local,
                           Op::Add,
                           DType::Float32,
                           {-1, -1, -1},
                           {},
                           int(r.k * std::int64_t(r.loads.size())),
                           {}});
      auto copy_at = [&](int k0) {
        std::vector<int> m = detail::body_at(w, r.loop, end_of[std::size_t(r.loop)], k0);
        for (std::size_t row = 0; row < r.loads.size(); ++row) {
          const UOp& l = p.ops[std::size_t(r.loads[row])];
          int v = w.add(UOp{UKind::VecLoad,
                            Op::Add,
                            l.dtype,
                            {w.map[std::size_t(l.src[0])], m[std::size_t(l.src[1])], -1},
                            {},
                            r.lanes,
                            {}});
          int at = w.alu(Op::Add, DType::Int64, w.cint(std::int64_t(row) * r.k), k0);
          w.add(UOp{UKind::VecStore, Op::Add, l.dtype, {local[g], at, v}, {}, r.lanes, {}});
        }
      };
      const std::int64_t steps = r.k / r.lanes;
      int s = w.add(
          UOp{UKind::Range, Op::Add, DType::Int64, {w.cint(0), w.cint(steps), -1}, {}, -1, {}});
      copy_at(w.alu(Op::Mul, DType::Int64, s, w.cint(r.lanes)));
      w.add(UOp{UKind::EndRange, Op::Add, DType::Int64, {s, -1, -1}, {}, -1, {}});
      if (r.k % r.lanes != 0) copy_at(w.cint(r.k - r.lanes));
    }
    if (int g = group_of[i]; g >= 0 && take[std::size_t(g)]) {
      const Rows& r = groups[std::size_t(g)];
      std::size_t row = 0;
      while (r.loads[row] != int(i)) ++row;
      int at =
          w.alu(Op::Add, DType::Int64, w.cint(std::int64_t(row) * r.k), w.map[std::size_t(r.loop)]);
      w.map[i] = w.add(
          UOp{UKind::Load, Op::Add, p.ops[i].dtype, {local[std::size_t(g)], at, -1}, {}, -1, {}});
      continue;
    }
    w.map[i] = w.add(w.remapped(p.ops[i]));
  }
  Program q = p;
  q.ops = std::move(w.out);
  return detail::drop_unused(std::move(q));
}

} // namespace tg
