#pragma once
// decompose: op semantics that must agree across devices, as a rewrite of a Program before it is
// rendered (tinygrad's codegen/decomp), so that every dialect that needs them gets the same ops
// and no renderer spells them. The C-style renderers' shared semantics that are not ops of the IR
// (16-bit float codecs, float exp2, float -> integer saturation) are in render.hpp's CStyle.
#include "ir.hpp"

namespace tg {

/// What a target needs spelled out.
struct DecomposeOptions {
  /// Integer division and remainder defined for every divisor, as INTERP defines them: x / 0 == 0,
  /// x % 0 == 0, x / -1 == -x (wrapping), x % -1 == 0. GPUs leave x / 0 (and INT_MIN / -1)
  /// undefined; the CPU's C keeps the plain operators, as before.
  bool safe_int_div = false;
  /// float32 log2 of a subnormal input exact: Vulkan drivers may flush it to zero (lavapipe gives
  /// log2(1e-45) = -127), so a subnormal's log2 is taken of its mantissa bits, a whole number,
  /// minus 149.
  bool subnormal_log2 = false;

  /// The GPU dialects' needs (CUDA, GLSL).
  static constexpr DecomposeOptions gpu() {
    DecomposeOptions o;
    o.safe_int_div = true;
    return o;
  }
  /// Whether the pass has anything to do.
  constexpr bool any() const { return safe_int_div || subnormal_log2; }
};

namespace detail {
/// Whether op k is a divisor that needs no guard: a constant other than 0 and -1, or one this pass
/// made (where(k == 0 [|| k == -1], 1, k)), so that decomposing twice changes nothing.
constexpr bool plain_divisor(const Program& p, int k) {
  const UOp& b = p.ops[std::size_t(k)];
  if (b.kind == UKind::Const) return b.value.i != 0 && (is_unsigned(b.dtype) || b.value.i != -1);
  auto op = [&](int i) -> const UOp& { return p.ops[std::size_t(i)]; };
  auto tests = [&](int i, int x, std::int64_t v) { // op i is x == v
    return op(i).kind == UKind::Alu && op(i).op == Op::CmpEq && op(i).src[0] == x &&
           op(op(i).src[1]).kind == UKind::Const && op(op(i).src[1]).value.i == v;
  };
  if (b.kind != UKind::Alu || b.op != Op::Where || op(b.src[1]).kind != UKind::Const ||
      op(b.src[1]).value.i != 1)
    return false;
  const UOp& c = op(b.src[0]);
  return tests(b.src[0], b.src[2], 0) ||
         (c.kind == UKind::Alu && c.op == Op::Or && tests(c.src[0], b.src[2], 0) &&
          tests(c.src[1], b.src[2], -1));
}
} // namespace detail

/// The program with the operations `o` asks for written as simpler ones (unchanged if none).
constexpr Program decompose(const Program& p, const DecomposeOptions& o) {
  if (!o.any()) return p;
  detail::ProgramRewriter rw{p, {}, std::vector<int>(p.ops.size(), -1)};
  auto constant = [&](DType d, std::int64_t v) {
    return rw.add(UOp{UKind::Const, Op::Add, d, {-1, -1, -1}, Scalar::of_int(d, v), -1, {}});
  };
  auto constant_f = [&](double v) {
    return rw.add(UOp{UKind::Const,
                      Op::Add,
                      DType::Float32,
                      {-1, -1, -1},
                      Scalar::of(DType::Float32, v),
                      -1,
                      {}});
  };
  auto alu = [&](Op op, DType d, int a, int b = -1, int c = -1) {
    return rw.add(UOp{UKind::Alu, op, d, {a, b, c}, {}, -1, {}});
  };
  for (std::size_t i = 0; i < p.ops.size(); ++i) {
    const UOp& u = p.ops[i];
    UOp r = rw.remapped(u);
    for (int& k : r.ranges) k = rw.map[std::size_t(k)];
    const DType d = u.src[0] >= 0 ? p.ops[std::size_t(u.src[0])].dtype : u.dtype;
    if (o.subnormal_log2 && u.kind == UKind::Alu && u.op == Op::Log2 && u.dtype == DType::Float32) {
      // x < 2^-126 (and > 0): log2(float(bits(x))) - 149; otherwise (0, negatives, NaN, normal
      // numbers) log2(x) as it was
      const int x = r.src[0];
      const int plain = rw.add(std::move(r));
      const int mant = alu(Op::Cast, DType::Float32, alu(Op::Bitcast, DType::Int32, x));
      const int sub =
          alu(Op::Add, DType::Float32, alu(Op::Log2, DType::Float32, mant), constant_f(-149.0));
      const int tiny =
          alu(Op::And, DType::Bool, alu(Op::CmpLt, DType::Bool, x, constant_f(0x1p-126)),
              alu(Op::CmpLt, DType::Bool, constant_f(0.0), x));
      rw.map[i] = alu(Op::Where, DType::Float32, tiny, sub, plain);
      continue;
    }
    if (!o.safe_int_div || u.kind != UKind::Alu || (u.op != Op::Div && u.op != Op::Mod) ||
        !is_int(d) || detail::plain_divisor(p, u.src[1])) {
      rw.map[i] = rw.add(std::move(r));
      continue;
    }
    // x op (b == 0 || b == -1 ? 1 : b), then the results INTERP gives for 0 and -1: x % 1 == 0 is
    // already right, x / 1 == x becomes 0 or -x
    const bool sign = !is_unsigned(d);
    const int a = r.src[0], b = r.src[1];
    const int zero = alu(Op::CmpEq, DType::Bool, b, constant(d, 0));
    const int minus = sign ? alu(Op::CmpEq, DType::Bool, b, constant(d, -1)) : -1;
    const int bad = sign ? alu(Op::Or, DType::Bool, zero, minus) : zero;
    int q = alu(u.op, u.dtype, a, alu(Op::Where, d, bad, constant(d, 1), b));
    if (u.op == Op::Div) {
      if (sign) { // -x wrapping around (-INT_MIN == INT_MIN): negated as a uint64
        const int n =
            alu(Op::Cast, d, alu(Op::Neg, DType::UInt64, alu(Op::Cast, DType::UInt64, q)));
        q = alu(Op::Where, u.dtype, minus, n, q);
      }
      q = alu(Op::Where, u.dtype, zero, constant(u.dtype, 0), q);
    }
    rw.map[i] = q;
  }
  Program out = p;
  out.ops = std::move(rw.out);
  return out;
}

} // namespace tg
