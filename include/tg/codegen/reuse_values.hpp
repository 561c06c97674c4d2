#pragma once
// reuse_values (C programs for the CPU only, before vectorize): a value that a reduction's loop
// computes for every element of a row and that a later loop over the same row computes again is
// kept in a local array by the first loop and read back by the second. A softmax computes
// exp(x - max) for the row sum, then again for each output (one kernel, fuse's row
// reductions), and each pass of exponentials is a large part of the kernel's time
// (docs/performance.md).
// The value read back is the one the first loop computed with the same operations, so results
// do not change.
#include "pack_panels.hpp"

namespace tg {

namespace detail {
/// Whether the value tree at v holds an op worth storing rather than computing again.
constexpr bool costly(const Program& p, int v, int depth = 0) {
  const UOp& u = p.ops[std::size_t(v)];
  if (u.kind != UKind::Alu || depth > 32) return false;
  if (u.op == Op::Exp2 || u.op == Op::Log2 || u.op == Op::Sin || u.op == Op::Pow ||
      u.op == Op::Sqrt)
    return true;
  for (int s : u.src)
    if (s >= 0 && costly(p, s, depth + 1)) return true;
  return false;
}

/// How value y of a reduction's loop (range r1) relates to value x of a later loop (range r2):
/// the same operations on loads whose indices differ by shift * r1 + offset - r2, for one
/// shift and offset over the whole tree. y is then x at r2 = shift * r1 + offset.
struct Shift {
  bool set = false;
  std::int64_t shift = 0, offset = 0;
};
constexpr bool same_value(const Program& p, const std::vector<Affine>& aff, int x, int y, int r1,
                          int r2, Shift& sh) {
  if (x == y) return true;
  const UOp& a = p.ops[std::size_t(x)];
  const UOp& b = p.ops[std::size_t(y)];
  if (a.kind != b.kind || a.op != b.op || a.dtype != b.dtype || !(a.value == b.value) ||
      a.arg != b.arg)
    return false;
  if (a.kind == UKind::Const) return true;
  if (a.kind == UKind::Load) {
    if (a.src[0] != b.src[0] || a.src[2] >= 0 || b.src[2] >= 0) return false;
    Affine d = affine_add(aff[std::size_t(b.src[1])], aff[std::size_t(a.src[1])], -1);
    // r1 < r2: the terms are sorted by atom
    if (d.terms.size() != 2 || d.terms[0].first != r1 || d.terms[0].second < 1 ||
        d.terms[1].first != r2 || d.terms[1].second != -1)
      return false;
    if (sh.set && (sh.shift != d.terms[0].second || sh.offset != d.c)) return false;
    sh = Shift{true, d.terms[0].second, d.c};
    return true;
  }
  if (a.kind != UKind::Alu) return false;
  for (std::size_t k = 0; k < 3; ++k) {
    if ((a.src[k] < 0) != (b.src[k] < 0)) return false;
    if (a.src[k] >= 0 && !same_value(p, aff, a.src[k], b.src[k], r1, r2, sh)) return false;
  }
  return true;
}
} // namespace detail

/// The pass (see the top of this file). Programs without such a pair of loops come back as
/// they were.
constexpr Program reuse_values(const Program& p, std::int64_t max_bytes = 64 * 1024) {
  const std::size_t n = p.ops.size();
  std::vector<int> parent(n, -1), open;    // each op's innermost enclosing range
  std::vector<std::uint8_t> reduces(n, 0); // per range: an AccAssign directly inside it
  for (std::size_t i = 0; i < n; ++i) {
    if (p.ops[i].kind == UKind::EndRange) open.pop_back();
    parent[i] = open.empty() ? -1 : open.back();
    if (p.ops[i].kind == UKind::AccAssign && parent[i] >= 0) reduces[std::size_t(parent[i])] = 1;
    if (p.ops[i].kind == UKind::Range) open.push_back(int(i));
  }
  // a loop 0..N (constant N, step 1): N, else 0
  auto trips = [&](std::size_t r) -> std::int64_t {
    const UOp& u = p.ops[r];
    const UOp& lo = p.ops[std::size_t(u.src[0])];
    const UOp& hi = p.ops[std::size_t(u.src[1])];
    if (u.src[2] >= 0 || lo.kind != UKind::Const || lo.value.i != 0 || hi.kind != UKind::Const)
      return 0;
    return hi.value.i;
  };
  std::vector<detail::Affine> aff = detail::affine_forms(p);
  // One reuse: value x of loop r2 is kept by the values ys of the reduction loop r1 before it.
  struct Reuse {
    int x, r1, r2;
    std::vector<int> ys;
    std::vector<std::int64_t> offsets;
    std::int64_t shift;
  };
  std::vector<Reuse> reuses;
  std::vector<std::uint8_t> covered(n, 0); // inside a value already reused
  for (std::size_t x = n; x-- > 0;) {
    const UOp& u = p.ops[x];
    const int r2 = parent[x];
    if (covered[x] || r2 < 0 || u.kind != UKind::Alu || !is_float(u.dtype) ||
        !detail::costly(p, int(x)))
      continue;
    const std::int64_t n2 = trips(std::size_t(r2));
    if (n2 == 0 || n2 * itemsize(u.dtype) > max_bytes) continue;
    for (std::size_t r1 = 0; r1 < std::size_t(r2); ++r1) {
      if (p.ops[r1].kind != UKind::Range || !reduces[r1] || parent[r1] != parent[std::size_t(r2)])
        continue;
      Reuse ru{int(x), int(r1), r2, {}, {}, 0};
      for (std::size_t y = r1 + 1; y < std::size_t(r2); ++y) {
        detail::Shift sh;
        if (parent[y] != int(r1) || !detail::same_value(p, aff, int(x), int(y), int(r1), r2, sh) ||
            !sh.set)
          continue;
        ru.ys.push_back(int(y));
        ru.offsets.push_back(sh.offset);
        ru.shift = sh.shift;
      }
      // every element of r2's loop is computed once: offsets 0..shift-1, shift * N1 = N2
      bool ok =
          !ru.ys.empty() && ru.shift * trips(r1) == n2 && std::int64_t(ru.ys.size()) == ru.shift;
      std::vector<std::uint8_t> seen(std::size_t(std::max<std::int64_t>(ru.shift, 0)), 0);
      for (std::int64_t o : ru.offsets) {
        ok = ok && o >= 0 && o < ru.shift && !seen[std::size_t(o)];
        if (ok) seen[std::size_t(o)] = 1;
      }
      if (!ok) continue;
      reuses.push_back(ru);
      std::vector<int> todo{int(x)};
      while (!todo.empty()) {
        int v = todo.back();
        todo.pop_back();
        covered[std::size_t(v)] = 1;
        for (int s : p.ops[std::size_t(v)].src)
          if (s >= 0 && parent[std::size_t(s)] == r2) todo.push_back(s);
      }
      break;
    }
  }
  if (reuses.empty()) return p;

  detail::ProgramRewriter w{p, {}, std::vector<int>(n, -1)};
  std::vector<int> local(reuses.size(), -1);
  for (std::size_t i = 0; i < n; ++i) {
    for (std::size_t k = 0; k < reuses.size(); ++k) // the arrays, before the reduction's loop
      if (reuses[k].r1 == int(i))
        local[k] = w.add(UOp{UKind::Local,
                             Op::Add,
                             p.ops[std::size_t(reuses[k].x)].dtype,
                             {-1, -1, -1},
                             {},
                             int(reuses[k].shift * trips(i)),
                             {}});
    const Reuse* read = nullptr;
    for (const Reuse& ru : reuses)
      if (ru.x == int(i)) read = &ru;
    if (read) { // the later loop reads the array
      std::size_t k = std::size_t(read - reuses.data());
      w.map[i] = w.add(UOp{UKind::Load,
                           Op::Add,
                           p.ops[i].dtype,
                           {local[k], w.map[std::size_t(read->r2)], -1},
                           {},
                           -1,
                           {}});
      continue;
    }
    w.map[i] = w.add(w.remapped(p.ops[i]));
    for (std::size_t k = 0; k < reuses.size(); ++k) // the reduction's loop writes it
      for (std::size_t j = 0; j < reuses[k].ys.size(); ++j) {
        if (reuses[k].ys[j] != int(i)) continue;
        int base =
            w.alu(Op::Mul, DType::Int64, w.map[std::size_t(reuses[k].r1)], w.cint(reuses[k].shift));
        int at = w.alu(Op::Add, DType::Int64, base, w.cint(reuses[k].offsets[j]));
        w.add(UOp{UKind::Store, Op::Add, p.ops[i].dtype, {local[k], at, w.map[i]}, {}, -1, {}});
      }
  }
  Program q = p;
  q.ops = std::move(w.out);
  return detail::drop_unused(std::move(q));
}

} // namespace tg
