#pragma once
// pair_products (C programs for the CPU only, after pack_panels, where the host has AVX512_BF16):
// a bfloat16 product's tile takes its reduction two steps at a time. Its float32 tile (vectorize)
// spends a fused multiply-add on each element of the left operand; AVX512_BF16's vdpbf16ps
// multiplies two pairs of bfloat16s a lane and adds both products to the lane's float32 sum, so
// one instruction does two steps. It reads each operand as 32-bit words of two bfloat16s,
// elements k and k + 1: a row of the left operand as it lies in memory (a word broadcast from
// there by the instruction; a strided row joins two loads), the right operand's panel
// (pack_panels' copy) laid out again with rows k and k + 1 of its columns interleaved, or without
// a panel its two rows' vector loads joined in the loop. An odd K's last step pairs its element
// with a zero.
//
// The instruction adds the product of the words' high halves first, then the low halves' (each
// sum rounded, the products of bfloat16s being exact in float32; measured against two fused
// multiply-adds on Zen 4: equal bit for bit), so a pair is summed k + 1 first, and it flushes
// subnormal inputs and sums to zero: a sum may differ from INTERP's in its last bits, as oneDNN's
// do (docs/pipeline.md). The C prelude emulates the instruction where the compiler lacks it.
#include "pack_panels.hpp"

namespace tg {

namespace detail {
/// Whether nothing after op `last` reads an op inside (first, last).
constexpr bool sealed(const Program& p, std::size_t first, std::size_t last) {
  for (std::size_t i = last + 1; i < p.ops.size(); ++i)
    for (int s : p.ops[i].src)
      if (s > int(first) && s < int(last)) return false;
  return true;
}
/// The rewriter's map for the body of the loop `loop` (ending at `end`) with its index replaced
/// by `with`: the body's arithmetic cloned into the output.
constexpr std::vector<int> body_at(ProgramRewriter& w, int loop, int end, int with) {
  std::vector<int> m = w.map;
  m[std::size_t(loop)] = with;
  for (int v = loop + 1; v < end; ++v) {
    const UOp& u = w.in.ops[std::size_t(v)];
    if (u.kind != UKind::Const && u.kind != UKind::Alu) continue;
    UOp c = u;
    for (int& s : c.src)
      if (s >= 0) s = m[std::size_t(s)];
    m[std::size_t(v)] = w.add(c);
  }
  return m;
}
} // namespace detail

/// The pass (see the top of this file). Programs without such a tile come back as they were.
constexpr Program pair_products(const Program& p) {
  const std::size_t n = p.ops.size();
  constexpr int kLanes = 16; // a 512-bit vector of float32 sums: vdpbf16ps on zmm registers
  std::vector<int> end_of(n, -1), uses(n, 0), mac_uses(n, 0);
  for (std::size_t i = 0; i < n; ++i) {
    const UOp& u = p.ops[i];
    if (u.kind == UKind::EndRange) end_of[std::size_t(u.src[0])] = int(i);
    for (int k = 0; k < 3; ++k)
      if (int s = u.src[std::size_t(k)]; s >= 0) {
        ++uses[std::size_t(s)];
        if (u.kind == UKind::VecMac && k == 1) ++mac_uses[std::size_t(s)];
      }
  }
  std::vector<detail::Affine> aff = detail::affine_forms(p);
  auto const_range = [&](std::size_t r, std::int64_t& len) {
    return detail::constant_range(p, r, len);
  };
  // a panel index: k * columns + o, o a multiple of the lanes below the columns
  auto panel_offset = [&](int index, int loop, std::int64_t columns) -> std::int64_t {
    const detail::Affine& a = aff[std::size_t(index)];
    if (a.terms.size() != 1 || a.terms[0].first != loop || a.terms[0].second != columns ||
        a.c < 0 || a.c >= columns || a.c % kLanes != 0)
      return -1;
    return a.c;
  };
  auto is_bf16_param = [&](int s) {
    return p.ops[std::size_t(s)].kind == UKind::Param &&
           p.ops[std::size_t(s)].dtype == DType::BFloat16;
  };

  // A product loop: its body only index arithmetic, loads of the left operand (bfloat16 elements
  // that only multiply), vector loads of the right one (or of one panel of it) and the tile's
  // multiply-adds; the panel's copy loop: index arithmetic, vector loads of the right operand
  // and the stores into the panel.
  struct Pair {
    int loop = -1, copy = -1, local = -1;
    std::int64_t k = 0, columns = 0;
  };
  std::vector<Pair> found;
  std::vector<int> role(n, -1); // the Pair whose loop, copy loop or panel op i is
  for (std::size_t l = 0; l < n; ++l) {
    std::int64_t k = 0;
    if (p.ops[l].kind != UKind::Range || !const_range(l, k) || k < 2) continue;
    const std::size_t e = std::size_t(end_of[l]);
    int local = -1, macs = 0;
    std::int64_t columns = 0;
    bool ok = true;
    for (std::size_t v = l + 1; ok && v < e; ++v) {
      const UOp& u = p.ops[v];
      const auto inside = [&](int s) { return s > int(l) && s < int(e); };
      if (u.kind == UKind::Const || (u.kind == UKind::Alu && !is_float(u.dtype))) continue;
      if (u.kind == UKind::Load)
        ok = u.dtype == DType::BFloat16 && u.src[2] < 0 && is_bf16_param(u.src[0]) &&
             uses[v] == mac_uses[v];
      else if (u.kind == UKind::VecLoad && is_bf16_param(u.src[0]))
        ok = u.dtype == DType::BFloat16 && u.arg == kLanes; // (rows k, k + 1 paired here)
      else if (u.kind == UKind::VecLoad) {
        const UOp& src = p.ops[std::size_t(u.src[0])];
        ok = src.kind == UKind::Local && u.dtype == DType::BFloat16 && u.value.i == 0 &&
             u.arg == kLanes && (local < 0 || local == u.src[0]) && src.arg % k == 0;
        local = u.src[0];
        columns = ok ? src.arg / k : 0;
        ok = ok && panel_offset(u.src[1], int(l), columns) >= 0;
      } else if (u.kind == UKind::VecMac) {
        ok = u.dtype == DType::BFloat16 && u.arg == kLanes && inside(u.src[1]) &&
             inside(u.src[2]) && p.ops[std::size_t(u.src[1])].kind == UKind::Load &&
             p.ops[std::size_t(u.src[2])].kind == UKind::VecLoad &&
             p.ops[std::size_t(u.src[0])].kind == UKind::VecAcc && u.src[0] < int(l);
        ++macs;
      } else
        ok = false;
    }
    if (!ok || macs == 0 || !detail::sealed(p, l, e) ||
        (local >= 0 && role[std::size_t(local)] >= 0))
      continue;
    if (local < 0) { // no panel: the loop pairs the right operand's rows itself
      role[l] = int(found.size());
      found.push_back(Pair{int(l), -1, -1, k, 0});
      continue;
    }
    // the copy: one loop 0 .. K holding every store into the panel; the body reads the panel only
    int copy = -1;
    for (std::size_t v = 0; ok && v < n; ++v) {
      const UOp& u = p.ops[v];
      if (u.kind == UKind::VecLoad && u.src[0] == local) ok = v > l && v < e;
      if (u.kind != UKind::VecStore || u.src[0] != local) continue;
      int c = int(v);
      while (c >= 0 &&
             (p.ops[std::size_t(c)].kind != UKind::Range || end_of[std::size_t(c)] < int(v)))
        --c;
      ok = c >= 0 && (copy < 0 || copy == c);
      copy = c;
    }
    std::int64_t kc = 0;
    if (!ok || copy < 0 || copy > int(l) || !const_range(std::size_t(copy), kc) || kc != k)
      continue;
    const std::size_t ce = std::size_t(end_of[std::size_t(copy)]);
    for (std::size_t v = std::size_t(copy) + 1; ok && v < ce; ++v) {
      const UOp& u = p.ops[v];
      if (u.kind == UKind::Const || (u.kind == UKind::Alu && !is_float(u.dtype))) continue;
      if (u.kind == UKind::VecLoad)
        ok = u.dtype == DType::BFloat16 && u.arg == kLanes && is_bf16_param(u.src[0]);
      else if (u.kind == UKind::VecStore)
        ok = u.src[0] == local && u.arg == kLanes && u.src[2] > copy &&
             p.ops[std::size_t(u.src[2])].kind == UKind::VecLoad &&
             panel_offset(u.src[1], copy, columns) >= 0;
      else
        ok = false;
    }
    if (!ok || !detail::sealed(p, std::size_t(copy), ce)) continue;
    role[l] = role[std::size_t(copy)] = role[std::size_t(local)] = int(found.size());
    found.push_back(Pair{int(l), copy, local, k, columns});
  }
  if (found.empty()) return p;

  detail::ProgramRewriter w{p, {}, std::vector<int>(n, -1)};
  auto body_map = [&](int loop, int with) {
    return detail::body_at(w, loop, end_of[std::size_t(loop)], with);
  };
  auto vec = [&](UKind kind, DType t, int a, int b, int c) {
    return w.add(UOp{kind, Op::Add, t, {a, b, c}, {}, kLanes, {}});
  };
  auto remap = [](UOp u, const std::vector<int>& m) {
    for (int& s : u.src)
      if (s >= 0) s = m[std::size_t(s)];
    return u;
  };
  auto range = [&](std::int64_t len, int arg) {
    return w.add(
        UOp{UKind::Range, Op::Add, DType::Int64, {w.cint(0), w.cint(len), -1}, {}, arg, {}});
  };
  auto end_range = [&](int r) {
    w.add(UOp{UKind::EndRange, Op::Add, DType::Int64, {r, -1, -1}, {}, -1, {}});
  };
  for (std::size_t i = 0; i < n; ++i) {
    const int f = role[i];
    if (f < 0) {
      w.map[i] = w.add(w.remapped(p.ops[i]));
      continue;
    }
    const Pair& pr = found[std::size_t(f)];
    const std::int64_t half = pr.k / 2;
    if (int(i) == pr.local) { // (role: the panel, its copy loop or the product loop)
      UOp u = p.ops[i];
      u.dtype = DType::UInt32;
      u.arg = int((pr.k + 1) / 2 * pr.columns);
      w.map[i] = w.add(u);
      continue;
    }
    const int l = int(i), end = end_of[i];
    // each store (or multiply-add) of the loop, for element k = `lo` (and k + 1 = `hi`, or none)
    // into word row `at`
    auto steps = [&](const std::vector<int>& lo, const std::vector<int>* hi,
                     const std::vector<int>& at) {
      std::vector<int> now(n, -1);
      for (int v = l + 1; v < end; ++v) {
        const UOp& u = p.ops[std::size_t(v)];
        if (u.kind == UKind::VecStore) { // the copy: word (j, c) = rows 2j, 2j + 1 of column c
          const UOp& ld = p.ops[std::size_t(u.src[2])];
          const int words = vec(UKind::VecPair, DType::UInt32, hi ? w.add(remap(ld, *hi)) : -1,
                                w.add(remap(ld, lo)), -1);
          vec(UKind::VecStore, DType::UInt32, w.map[std::size_t(pr.local)],
              at[std::size_t(u.src[1])], words);
        } else if (u.kind == UKind::Load) { // the row's elements k, k + 1 as one word
          UOp a = remap(u, lo);
          a.dtype = DType::UInt32;
          if (hi && detail::coefficient(aff[std::size_t(u.src[1])], l) == 1) {
            a.kind = UKind::WordLoad; // consecutive: one load of both
            now[std::size_t(v)] = w.add(a);
          } else if (hi) {
            UOp b = remap(u, *hi);
            b.dtype = DType::UInt32;
            const int shift = w.add(UOp{UKind::Const,
                                        Op::Add,
                                        DType::UInt32,
                                        {-1, -1, -1},
                                        Scalar::of_int(DType::UInt32, 65536),
                                        -1,
                                        {}});
            now[std::size_t(v)] = w.alu(Op::Or, DType::UInt32,
                                        w.alu(Op::Mul, DType::UInt32, w.add(b), shift), w.add(a));
          } else {
            now[std::size_t(v)] = w.add(a); // (an odd K's last element: a zero above it)
          }
        } else if (u.kind == UKind::VecLoad && u.src[0] != pr.local) { // rows k, k + 1 here
          now[std::size_t(v)] = vec(UKind::VecPair, DType::UInt32, hi ? w.add(remap(u, *hi)) : -1,
                                    w.add(remap(u, lo)), -1);
        } else if (u.kind == UKind::VecLoad) {
          now[std::size_t(v)] = vec(UKind::VecLoad, DType::UInt32, w.map[std::size_t(pr.local)],
                                    at[std::size_t(u.src[1])], -1);
        } else if (u.kind == UKind::VecMac) {
          vec(UKind::VecDot2, DType::BFloat16, w.map[std::size_t(u.src[0])],
              now[std::size_t(u.src[1])], now[std::size_t(u.src[2])]);
        }
      }
    };
    const int j = range(half, p.ops[i].arg);
    const int even = w.alu(Op::Mul, DType::Int64, j, w.cint(2));
    const std::vector<int> hi = body_map(l, w.alu(Op::Add, DType::Int64, even, w.cint(1)));
    steps(body_map(l, even), &hi, body_map(l, j));
    end_range(j);
    if (pr.k % 2) steps(body_map(l, w.cint(pr.k - 1)), nullptr, body_map(l, w.cint(half)));
    i = std::size_t(end); // (the loop's ops are all rewritten above)
  }
  Program q = p;
  q.ops = std::move(w.out);
  return detail::drop_unused(std::move(q));
}

} // namespace tg
