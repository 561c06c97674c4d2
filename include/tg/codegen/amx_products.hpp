#pragma once
// amx_products (C programs for the CPU only, after pair_products, where the host has AMX): a
// bfloat16 product's tile runs its reduction on AMX's tile registers, 32 k a step. pair_products
// leaves the tile's loop reading the left operand's rows as words (two bfloat16s, k and k + 1)
// and the right operand's panel as rows of words (rows k and k + 1 of a column interleaved):
// that panel is the layout AMX's tdpbf16ps reads its right operand in, and the left operand's
// rows are read where they lie, 32 elements of each of up to 16 rows a step. One tdpbf16ps
// multiplies a 16 x 32 block by a 32 x 16 one into 16 x 16 float32 sums: 16 times the work of a
// vdpbf16ps, one every 16 cycles (docs/performance.md: bgemm_2048 ran 7x faster).
//
// The rewrite: the loop's first 32 * (K / 32) steps become one TileDot (the tile's sums, added to
// its accumulators), and the loop runs on from there for the rest; the tile's epilogue is
// unchanged. AMX sums each pair as vdpbf16ps does but rounds its sums in its own way: a sum may
// differ from pair_products' in its last float32 bits (and so from INTERP's by a bfloat16 step,
// as vdpbf16ps' may). The C prelude runs the same steps with fused multiply-adds where the
// compiler lacks AMX.
#include "pair_products.hpp"

namespace tg {

/// The pass (see the top of this file). Programs without such a tile come back as they were.
constexpr Program amx_products(const Program& p) {
  const std::size_t n = p.ops.size();
  constexpr std::int64_t kStep = 16; // words of a left operand's row a tdpbf16ps reads (32 k)
  constexpr std::int64_t kLanes = 16;
  std::vector<int> end_of(n, -1);
  for (std::size_t i = 0; i < n; ++i)
    if (p.ops[i].kind == UKind::EndRange) end_of[std::size_t(p.ops[i].src[0])] = int(i);
  std::vector<detail::Affine> aff = detail::affine_forms(p);
  struct Tile {
    int loop = -1, param = -1, local = -1, first = -1; // first: row 0's word load
    std::int64_t steps = 0, stride = 0, columns = 0;
    std::vector<int> accs; // row by row
  };
  std::vector<Tile> found;
  std::vector<int> tile_of(n, -1);
  for (std::size_t l = 0; l < n; ++l) {
    std::int64_t half = 0;
    if (p.ops[l].kind != UKind::Range || !detail::constant_range(p, l, half) || half < kStep)
      continue;
    const std::size_t e = std::size_t(end_of[l]);
    std::vector<int> rows, cols, dots;
    bool ok = true;
    for (std::size_t v = l + 1; ok && v < e; ++v) {
      const UOp& u = p.ops[v];
      if (u.kind == UKind::Const || (u.kind == UKind::Alu && !is_float(u.dtype))) continue;
      if (u.kind == UKind::WordLoad)
        rows.push_back(int(v));
      else if (u.kind == UKind::VecLoad) {
        ok = u.dtype == DType::UInt32 && u.arg == kLanes && u.value.i == 0 &&
             p.ops[std::size_t(u.src[0])].kind == UKind::Local;
        cols.push_back(int(v));
      } else if (u.kind == UKind::VecDot2) {
        ok = p.ops[std::size_t(u.src[1])].kind == UKind::WordLoad &&
             p.ops[std::size_t(u.src[2])].kind == UKind::VecLoad && u.src[0] < int(l) &&
             u.src[1] > int(l) && u.src[2] > int(l);
        dots.push_back(int(v));
      } else {
        ok = false;
      }
    }
    const std::size_t nr = rows.size(), nc = cols.size();
    if (!ok || nr == 0 || nr > 16 || nc == 0 || nc > 3 || dots.size() != nr * nc ||
        !detail::sealed(p, l, e))
      continue;
    Tile t{int(l),
           p.ops[std::size_t(rows[0])].src[0],
           p.ops[std::size_t(cols[0])].src[0],
           -1,
           half / kStep,
           0,
           std::int64_t(nc) * kLanes,
           std::vector<int>(nr * nc, -1)};
    // rows: one left operand, 2 elements a step, each row `stride` after the one before
    std::vector<std::int64_t> row_at(nr), col_at(nc);
    std::int64_t lowest = 0;
    for (std::size_t r = 0; ok && r < nr; ++r) {
      const UOp& u = p.ops[std::size_t(rows[r])];
      const detail::Affine d = detail::affine_add(
          aff[std::size_t(u.src[1])], aff[std::size_t(p.ops[std::size_t(rows[0])].src[1])], -1);
      ok = u.src[0] == t.param && p.ops[std::size_t(t.param)].dtype == DType::BFloat16 &&
           detail::coefficient(aff[std::size_t(u.src[1])], int(l)) == 2 && d.terms.empty();
      row_at[r] = d.c;
      lowest = std::min(lowest, d.c);
    }
    for (std::size_t r = 0; ok && r < nr; ++r) {
      row_at[r] -= lowest;
      if (row_at[r] > 0 && (t.stride == 0 || row_at[r] < t.stride)) t.stride = row_at[r];
    }
    // columns: the panel's words k * columns + 16 c, c = 0 .. nc - 1
    for (std::size_t c = 0; ok && c < nc; ++c) {
      const UOp& u = p.ops[std::size_t(cols[c])];
      const detail::Affine& a = aff[std::size_t(u.src[1])];
      ok = u.src[0] == t.local && a.terms.size() == 1 && a.terms[0].first == int(l) &&
           a.terms[0].second == t.columns && a.c % kLanes == 0 && a.c >= 0 && a.c < t.columns;
      col_at[c] = a.c / kLanes;
    }
    for (int d : dots) {
      const UOp& u = p.ops[std::size_t(d)];
      std::size_t r = 0, c = 0;
      while (rows[r] != u.src[1]) ++r;
      while (cols[c] != u.src[2]) ++c;
      if (!ok || (nr > 1 && (t.stride == 0 || row_at[r] % t.stride != 0))) {
        ok = false;
        break;
      }
      const std::size_t at =
          std::size_t(nr > 1 ? row_at[r] / t.stride : 0) * nc + std::size_t(col_at[c]);
      ok = at < t.accs.size() && t.accs[at] < 0 &&
           std::count(t.accs.begin(), t.accs.end(), u.src[0]) == 0;
      if (ok) t.accs[at] = u.src[0];
      if (ok && row_at[r] == 0) t.first = int(rows[r]);
    }
    if (!ok || t.first < 0 || std::count(t.accs.begin(), t.accs.end(), -1) > 0) continue;
    tile_of[l] = int(found.size());
    found.push_back(std::move(t));
  }
  if (found.empty()) return p;

  detail::ProgramRewriter w{p, {}, std::vector<int>(n, -1)};
  for (std::size_t i = 0; i < n; ++i) {
    const int f = tile_of[i];
    if (f < 0) {
      w.map[i] = w.add(w.remapped(p.ops[i]));
      continue;
    }
    const Tile& t = found[std::size_t(f)];
    // row 0's first word: its index with the loop at 0 (the unused clones are dropped below)
    const std::vector<int> at0 = detail::body_at(w, int(i), end_of[i], w.cint(0));
    UOp dot{UKind::TileDot,
            Op::Add,
            DType::BFloat16,
            {w.map[std::size_t(t.param)], at0[std::size_t(p.ops[std::size_t(t.first)].src[1])],
             w.map[std::size_t(t.local)]},
            {},
            int(t.steps),
            {}};
    dot.value.i = t.stride;
    dot.value.f = double(t.columns);
    for (int a : t.accs) dot.ranges.push_back(w.map[std::size_t(a)]);
    w.add(dot);
    std::int64_t half = 0;
    detail::constant_range(p, i, half);
    if (t.steps * kStep == half) { // nothing left for the loop
      i = std::size_t(end_of[i]);
      continue;
    }
    UOp rest = w.remapped(p.ops[i]); // the loop from the first step the tiles left
    rest.src[0] = w.cint(t.steps * kStep);
    w.map[i] = w.add(rest);
  }
  Program q = p;
  q.ops = std::move(w.out);
  return detail::drop_unused(std::move(q));
}

} // namespace tg
