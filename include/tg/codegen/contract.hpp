#pragma once
// contract (the CPU device and INTERP, first of their device passes): a float sum of products,
// acc = acc + a * b, becomes one fused multiply-add, acc = fma(a, b, acc), rounded once, as BLAS
// libraries and cuBLAS accumulate. A multiply and an add issued apart are two instructions for
// the same ports on a core whose FMA units also do the adds (Intel's: half a matmul's peak), and
// the C flags forbid the compiler to contract them itself (-ffp-contract=off keeps every other
// expression as INTERP computes it). INTERP runs the same rewritten program, so the CPU device's
// kernels still agree with it bit for bit; a product's last bits differ from a multiply-then-add.
#include "ir.hpp"

namespace tg {

/// The pass (see the top of this file): AccAssign Add of a float Mul of its own dtype becomes
/// AccAssign MulAdd {acc, a, b}. A 16-bit float's registers hold float32s, so its sums of products
/// are float32 multiply-adds (the product of two 16-bit floats is exact in float32: there they do
/// not change a bit). The partial accumulators of a split reduction (lower.hpp:
/// summed pairwise after their loop, a layer norm's variance) are left alone: GCC 12 vectorizes
/// their multiply-adds across the partials, but keeps fmaf calls scalar there (layer norm 4096 x
/// 1024 took 1.7 ms instead of 1.1).
constexpr Program contract(const Program& p) {
  std::vector<std::uint8_t> partial(p.ops.size(), 0); // a DefineAcc added to another
  for (const UOp& u : p.ops)
    if (u.kind == UKind::Alu && u.op == Op::Add) {
      const UOp& a = p.ops[std::size_t(u.src[0])];
      const UOp& b = p.ops[std::size_t(u.src[1])];
      if (a.kind == UKind::DefineAcc && b.kind == UKind::DefineAcc)
        partial[std::size_t(u.src[0])] = partial[std::size_t(u.src[1])] = 1;
    }
  Program q = p;
  bool changed = false;
  for (UOp& u : q.ops) {
    if (u.kind != UKind::AccAssign || u.op != Op::Add || !is_float(u.dtype) ||
        partial[std::size_t(u.src[0])])
      continue;
    const UOp& m = p.ops[std::size_t(u.src[1])];
    if (m.kind != UKind::Alu || m.op != Op::Mul || m.dtype != u.dtype) continue;
    u.op = Op::MulAdd;
    u.src = {u.src[0], m.src[0], m.src[1]};
    changed = true;
  }
  if (!changed) return q;
  return detail::drop_unused(std::move(q));
}

} // namespace tg
