#pragma once
// decompose: op semantics that must agree across devices, as a rewrite of a Program before it is
// rendered (tinygrad's codegen/decomp), so that every dialect that needs them gets the same ops
// and no renderer spells them: safe integer division, float -> integer conversion as INTERP's,
// float16/bfloat16 values to and from their bits, float exp2 as a polynomial, subnormal log2, pow.
#include <limits>

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
  /// Float to integer as INTERP (x86) converts: through int32 (int64 for 32/64-bit targets), out
  /// of range and NaN giving the minimum ("integer indefinite"), uint64 giving 0. The languages
  /// leave those undefined, and compilers fold them differently ((unsigned char)-3.0f became 0,
  /// not 253). Every dialect needs it: renderers convert only values in range.
  bool saturating_casts = false;
  /// float16 / bfloat16 loads, stores, casts and bitcasts as integer ops on their bits (round to
  /// nearest even, NaN kept quiet, subnormals exact), as INTERP's half and bfloat16_t. Without it
  /// the dialect converts (CUDA's float16: cvt in hardware).
  bool f16_bits = false, bf16_bits = false;
  /// float32 2^x as INTERP computes it (detail::exp2_float), bit for bit: 2^n * p(f), x = n + f,
  /// |f| <= 1/2, p the degree-7 Taylor polynomial of 2^f (relative error below 1e-8) by fused
  /// multiply-adds (MulAdd), 2^n in two factors so that subnormal results round once. Branch
  /// free, so loops of it vectorize (libm's exp2f is a call per element); GLSL's exp2 returned 0
  /// below 2^-126 on lavapipe. CUDA keeps its exp2f.
  bool exp2_poly = false;
  /// Float division and reciprocal as IEEE defines them where the dialect's `/` does not: a
  /// division by zero is undefined in Vulkan (Mesa folds x / 0.0 to 0), so the divisor is made
  /// nonzero and zero's results (+-inf, NaN for 0 / 0 and NaN / 0) are selected by hand.
  bool ieee_div = false;
  /// pow as INTERP's (glibc's): its special cases (zeros, infinities, NaN, negative bases), an
  /// integer exponent below 2^24 (2^53 for float64) by squaring with the reciprocal last, others
  /// as 2^(b log2|a|). GLSL's and WGSL's pow are undefined for a < 0 and inexact. `pow_f64`: a
  /// float32's general case computed in float64 and rounded once, as glibc's powf does.
  bool pow = false, pow_f64 = false;
  /// pow's general case (a positive base, an exponent that is not an integer below 2^24) by the
  /// dialect's own pow, where that is accurate (CUDA's: within 2 ulp; its integer exponents were
  /// not exact: pow(3.0, 1.0) was 2.9999999999999996 on an H100).
  bool pow_native = false;
  /// The dialect has no 64-bit integers (WGSL; narrow32 makes index arithmetic 32-bit): float ->
  /// uint32 is computed without going through int64.
  bool no_int64 = false;
  /// Float sin of |x| >= 1/2 by an exact reduction (Payne-Hanek): x times 2/pi to 62 (float32) or
  /// 126 (float64) bits past its quadrant, in integer ops of the float's width, then the dialect's
  /// sin of what is left (|r| <= pi/4, where GLSL and WGSL define their accuracy). lavapipe's
  /// sin(3e38) was -1, and GLSL float64's three-part reduction inf.
  bool sin_reduce = false;

  /// What every C-style dialect needs (C, and the GPU dialects below).
  static constexpr DecomposeOptions c_style() {
    DecomposeOptions o;
    o.saturating_casts = o.f16_bits = o.bf16_bits = o.exp2_poly = true;
    return o;
  }
  /// The GPU dialects' needs (CUDA, GLSL).
  static constexpr DecomposeOptions gpu() {
    DecomposeOptions o = c_style();
    o.safe_int_div = true;
    return o;
  }
  /// Whether the pass has anything to do.
  constexpr bool any() const {
    return safe_int_div || subnormal_log2 || saturating_casts || f16_bits || bf16_bits ||
           exp2_poly || ieee_div || pow || sin_reduce;
  }
  constexpr bool any_but_pow() const {
    DecomposeOptions o = *this;
    o.pow = false;
    return o.any();
  }
  /// Whether it rewrites values of 16-bit float type d.
  constexpr bool bits_of(DType d) const {
    return (d == DType::Float16 && f16_bits) || (d == DType::BFloat16 && bf16_bits);
  }
};

namespace detail {
/// Word i of 64 zero bits followed by 2/pi's bits after the binary point, in words of `bits` (32 or
/// 64): sin_reduce's table (2/pi's first 1,216 bits).
constexpr std::uint64_t two_over_pi_word(int i, int bits) {
  constexpr std::uint64_t words[] = {0,
                                     0xa2f9836e4e441529,
                                     0xfc2757d1f534ddc0,
                                     0xdb6295993c439041,
                                     0xfe5163abdebbc561,
                                     0xb7246e3a424dd2e0,
                                     0x06492eea09d1921c,
                                     0xfe1deb1cb129a73e,
                                     0xe88235f52ebb4484,
                                     0xe99c7026b45f7e41,
                                     0x3991d639835339f4,
                                     0x9c845f8bbdf9283b,
                                     0x1ff897ffde05980f,
                                     0xef2f118b5a0a6d1f,
                                     0x6d367ecf27cb09b7,
                                     0x4f463f669e5fea2d,
                                     0x7527bac7ebe5f17b,
                                     0x3d0739f78a5292ea,
                                     0x6bfb5fb11f8d5d08,
                                     0x56033046fc7b6bab};
  if (bits == 64) return words[i];
  const std::uint64_t v = words[i / 2];
  return i % 2 ? v & 0xffffffff : v >> 32;
}
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
  if (o.pow && o.any_but_pow()) { // pow first: its parts (casts, divisions, exp2, log2) are ops
    DecomposeOptions only_pow, rest = o; //   the rest of the pass then decomposes
    only_pow.pow = true;
    only_pow.pow_f64 = o.pow_f64;
    only_pow.pow_native = o.pow_native;
    rest.pow = false;
    return decompose(decompose(p, only_pow), rest);
  }
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
  auto real = [&](DType d, double v) { // a float constant of compute dtype d
    return rw.add(UOp{UKind::Const, Op::Add, d, {-1, -1, -1}, Scalar::of(d, v), -1, {}});
  };
  const DType u32 = DType::UInt32, f32 = DType::Float32, b1 = DType::Bool;
  auto bits_and = [&](int x, std::int64_t m) { return alu(Op::And, u32, x, constant(u32, m)); };
  // x >> k and x << k of a uint32, as the IR has no shifts (a constant divisor: no guard)
  auto shr = [&](int x, int k) {
    return alu(Op::Div, u32, x, constant(u32, std::int64_t(1) << k));
  };
  auto shl = [&](int x, int k) {
    return alu(Op::Mul, u32, x, constant(u32, std::int64_t(1) << k));
  };
  auto eq = [&](int x, std::int64_t v) { return alu(Op::CmpEq, b1, x, constant(u32, v)); };
  auto below = [&](int x, std::int64_t v) { return alu(Op::CmpLt, b1, x, constant(u32, v)); };

  // A float32 value from the 32-bit word holding a 16-bit float's bits.
  auto decode16 = [&](DType half, int w) {
    if (half == DType::BFloat16) return alu(Op::Bitcast, f32, shl(w, 16));
    // normal and inf/NaN: the fields moved into float32's; subnormal: m * 2^-24 (exact, and
    // never a subnormal float, which GPUs may flush)
    const int s = shl(bits_and(w, 0x8000), 16), e = bits_and(shr(w, 10), 31),
              mantissa = bits_and(w, 0x3ff), m = shl(mantissa, 13);
    const int normal =
        alu(Op::Or, u32, alu(Op::Or, u32, s, shl(alu(Op::Add, u32, e, constant(u32, 112)), 23)), m);
    const int special = alu(Op::Or, u32, alu(Op::Or, u32, s, constant(u32, 0x7f800000)), m);
    const int f = alu(Op::Bitcast, f32, alu(Op::Where, u32, eq(e, 31), special, normal));
    const int tiny = alu(Op::Mul, f32, alu(Op::Cast, f32, mantissa), real(f32, 0x1p-24));
    const int sub =
        alu(Op::Where, f32, alu(Op::CmpNe, b1, s, constant(u32, 0)), alu(Op::Neg, f32, tiny), tiny);
    return alu(Op::Where, f32, eq(e, 0), sub, f);
  };
  // The 32-bit word holding the 16-bit float nearest float32 value f (ties to even).
  auto encode16 = [&](DType half, int f) {
    // a value of 16-bit float type is a float32 in a register: typed so, its bits are float32's
    if (is_half(rw.out[std::size_t(f)].dtype)) f = alu(Op::Cast, f32, f);
    const int x = alu(Op::Bitcast, u32, f);
    if (half == DType::BFloat16) {
      // NaN (a magnitude above infinity's) quieted, else rounded; chosen by arithmetic, not a
      // select: GCC 12 branched on each element's select, which kept a product's epilogue of
      // 512 roundings from being vectorized (docs/performance.md)
      const int quiet = alu(Op::Or, u32, shr(x, 16), constant(u32, 0x40));
      const int odd = bits_and(shr(x, 16), 1);
      const int up = shr(alu(Op::Add, u32, alu(Op::Add, u32, x, constant(u32, 0x7fff)), odd), 16);
      const int is_nan = alu(
          Op::Cast, u32, alu(Op::CmpLt, b1, constant(u32, 0x7f800000), bits_and(x, 0x7fffffff)));
      const int mask = alu(Op::Mul, u32, is_nan, constant(u32, 0xffffffff)); // all ones: NaN
      return alu(Op::Xor, u32, up, alu(Op::And, u32, mask, alu(Op::Xor, u32, quiet, up)));
    }
    const int nan = alu(Op::And, b1, eq(bits_and(x, 0x7f800000), 0x7f800000),
                        alu(Op::CmpNe, b1, bits_and(x, 0x7fffff), constant(u32, 0)));
    const int s = bits_and(shr(x, 16), 0x8000), e = bits_and(shr(x, 23), 0xff);
    // normal results: exponent and the top 10 mantissa bits, rounded by the 13 below (a carry
    // moves into the exponent, up to infinity)
    const int magnitude = bits_and(x, 0x7fffffff);
    const int top = alu(Op::Add, u32, shr(magnitude, 13),
                        constant(u32, std::int64_t(0x100000000) - (112 << 10)));
    const int r = bits_and(x, 0x1fff);
    const int up = alu(
        Op::Or, b1, alu(Op::CmpLt, b1, constant(u32, 0x1000), r),
        alu(Op::And, b1, eq(r, 0x1000), alu(Op::CmpNe, b1, bits_and(top, 1), constant(u32, 0))));
    const int normal = alu(Op::Add, u32, top, alu(Op::Cast, u32, up));
    // subnormal results (and zero): |f| * 2^24 (below 2^11 there) rounded to an integer, ties to
    // even, from its integer part and the exact remainder (no step a compiler that reassociates
    // float arithmetic, as WGSL's may, can fold)
    const int product = alu(Op::Mul, f32, alu(Op::Bitcast, f32, magnitude), real(f32, 0x1p24));
    const int scaled = alu(Op::Where, f32, alu(Op::CmpLt, b1, product, real(f32, 2048.0)), product,
                           real(f32, 2048.0));
    const int whole = alu(Op::Cast, u32, scaled);
    const int rest = alu(Op::Add, f32, scaled, alu(Op::Neg, f32, alu(Op::Cast, f32, whole)));
    const int one_half = real(f32, 0.5);
    const int round_up = alu(Op::Or, b1, alu(Op::CmpLt, b1, one_half, rest),
                             alu(Op::And, b1, alu(Op::CmpEq, b1, rest, one_half),
                                 alu(Op::CmpNe, b1, bits_and(whole, 1), constant(u32, 0))));
    const int sub = alu(Op::Add, u32, whole, alu(Op::Cast, u32, round_up));
    const int inf = alu(Op::Where, u32, nan, constant(u32, 0x7e00), constant(u32, 0x7c00));
    const int finite = alu(Op::Where, u32, below(e, 113), sub, normal);
    return alu(Op::Or, u32, s, alu(Op::Where, u32, below(e, 143), finite, inf));
  };
  // Float (compute dtype cf) to uint32 as INTERP converts it (through int64: the low 32 bits)
  // without 64-bit integers: t = trunc(a) through int32 where it fits, else t mod 2^32, which
  // float arithmetic computes exactly (t is a multiple of its ulp, and so is the remainder);
  // NaN and |t| >= 2^63 give 0 (int64's minimum, mod 2^32)
  auto to_uint32 = [&](DType cf, int a) {
    const DType i32 = DType::Int32;
    auto lt = [&](int x, int y) { return alu(Op::CmpLt, b1, x, y); };
    const int t = alu(Op::Trunc, cf, a);
    const int small =
        alu(Op::And, b1, lt(t, real(cf, 0x1p31)), alu(Op::Neg, b1, lt(t, real(cf, -0x1p31))));
    const int big =
        alu(Op::And, b1, alu(Op::Neg, b1, small),
            alu(Op::And, b1, lt(t, real(cf, 0x1p63)), alu(Op::Neg, b1, lt(t, real(cf, -0x1p63)))));
    const int via_int =
        alu(Op::Bitcast, u32, alu(Op::Cast, i32, alu(Op::Where, cf, small, t, real(cf, 0.0))));
    const int q = alu(Op::Mul, cf, t, real(cf, 0x1p-32)), tq = alu(Op::Trunc, cf, q);
    const int fl =
        alu(Op::Add, cf, tq, alu(Op::Where, cf, lt(q, tq), real(cf, -1.0), real(cf, 0.0))); // floor
    const int rem = alu(Op::Add, cf, t, alu(Op::Neg, cf, alu(Op::Mul, cf, fl, real(cf, 0x1p32))));
    const int wrapped = alu(Op::Cast, u32, alu(Op::Where, cf, big, rem, real(cf, 0.0)));
    return alu(Op::Where, u32, small, via_int, alu(Op::Where, u32, big, wrapped, constant(u32, 0)));
  };
  // Float (compute dtype cf) to integer dtype `to` as INTERP converts, with only in-range values
  // reaching the dialect's conversion.
  auto to_int = [&](DType cf, DType to, int a) {
    if (to == u32 && o.no_int64) return to_uint32(cf, a);
    const bool wide = to == DType::Int64 || to == DType::UInt32;
    const DType via = to == DType::UInt64 ? to : wide ? DType::Int64 : DType::Int32;
    int ok;
    if (to == DType::UInt64)
      ok = alu(Op::And, b1, alu(Op::CmpLt, b1, real(cf, -1.0), a),
               alu(Op::CmpLt, b1, a, real(cf, 0x1p64)));
    else // lo <= a < hi, false for NaN
      ok = alu(Op::And, b1, alu(Op::CmpLt, b1, a, real(cf, wide ? 0x1p63 : 0x1p31)),
               alu(Op::Neg, b1, alu(Op::CmpLt, b1, a, real(cf, wide ? -0x1p63 : -0x1p31))));
    const int in = alu(Op::Cast, via, alu(Op::Where, cf, ok, a, real(cf, 0.0)));
    const std::int64_t out = to == DType::UInt64 ? 0
                             : wide              ? std::numeric_limits<std::int64_t>::min()
                                                 : std::int64_t(-2147483648ll);
    const int v = alu(Op::Where, via, ok, in, constant(via, out));
    return to == via ? v : alu(Op::Cast, to, v);
  };

  // float32 2^x (exp2_poly), the operations of detail::exp2_float in its order
  auto exp2_poly = [&](int x) {
    const DType i32 = DType::Int32;
    if (is_half(rw.out[std::size_t(x)].dtype)) x = alu(Op::Cast, f32, x);
    const int lo = real(f32, -151.0), hi = real(f32, 129.0);
    x = alu(Op::Where, f32, alu(Op::CmpLt, b1, x, lo), lo,
            alu(Op::Where, f32, alu(Op::CmpLt, b1, hi, x), hi, x));
    const int t = alu(Op::Add, f32, x, real(f32, 12582912.0)); // x rounded to an integer n ...
    const int f =
        alu(Op::Add, f32, x, alu(Op::Neg, f32, alu(Op::Add, f32, t, real(f32, -12582912.0))));
    const int n = alu(Op::Cast, i32,
                      alu(Op::Add, u32, alu(Op::Bitcast, u32, t),
                          constant(u32, std::int64_t(0x100000000) - 0x4b400000)));
    const int n1 = alu(Op::Div, i32, n, constant(i32, 2)),
              n2 = alu(Op::Add, i32, n, alu(Op::Neg, i32, n1));
    int q = real(f32, 1.5252734e-5f); // ... and 2^f by Horner's rule
    for (float c : {1.5403530e-4f, 1.3333558e-3f, 9.6181291e-3f, 5.5504109e-2f, 2.4022651e-1f,
                    6.9314718e-1f, 1.0f})
      q = alu(Op::MulAdd, f32, q, f, real(f32, c));
    auto pow2 = [&](int k) { // 2^k for a normal exponent k, by its bits
      return alu(Op::Bitcast, f32,
                 shl(alu(Op::Cast, u32, alu(Op::Add, i32, k, constant(i32, 127))), 23));
    };
    return alu(Op::Mul, f32, alu(Op::Mul, f32, q, pow2(n1)), pow2(n2));
  };

  // sin for floats of compute dtype cf (sin_reduce). x = m 2^e, m the integer significand (24 or 53
  // bits); the terms of m 2^e (2/pi) below 2^2 are m times a window W of 2/pi's bits (3 words of
  // w = 32 or 64 bits), and x (2/pi) mod 4 = (m W mod 2^3w) 2^(2 - 3w): its top 2 bits are the
  // quadrant, the next 2w - 2 the fraction. The window's words are table words chosen by Where
  // (5 or 17 candidates) and shifted together by s bits (times 2^s, 2^s from its float's bits: the
  // IR shifts only by constants); w x w -> 2w-bit products from half words (WGSL has no 64-bit
  // integers).
  auto sin_reduced = [&](int x, DType cf) {
    const bool f64 = cf == DType::Float64;
    const DType ut = f64 ? DType::UInt64 : u32, it = f64 ? DType::Int64 : DType::Int32;
    const int w = f64 ? 64 : 32, log_w = f64 ? 6 : 5, mant = f64 ? 52 : 23, bias = f64 ? 1023 : 127;
    auto c = [&](std::uint64_t v) { return constant(ut, std::int64_t(v)); };
    auto add = [&](int a, int b) { return alu(Op::Add, ut, a, b); };
    auto mul = [&](int a, int b) { return alu(Op::Mul, ut, a, b); };
    auto mask = [&](int a, std::uint64_t m) { return alu(Op::And, ut, a, c(m)); };
    auto down = [&](int a, int k) { return alu(Op::Div, ut, a, c(std::uint64_t(1) << k)); };
    auto up = [&](int a, int k) { return alu(Op::Mul, ut, a, c(std::uint64_t(1) << k)); };
    auto pow2 = [&](int k) { // 2^k for k in [0, w)
      return alu(Op::Cast, ut, alu(Op::Bitcast, cf, up(add(k, c(std::uint64_t(bias))), mant)));
    };
    const std::uint64_t low_half = (std::uint64_t(1) << (w / 2)) - 1;
    auto wide_mul = [&](int a, int b) -> std::array<int, 2> { // {high, low} words of a * b
      const int al = mask(a, low_half), ah = down(a, w / 2), bl = mask(b, low_half),
                bh = down(b, w / 2);
      const int ll = mul(al, bl), lh = mul(al, bh), hl = mul(ah, bl);
      const int mid = add(add(down(ll, w / 2), mask(lh, low_half)), mask(hl, low_half));
      return {add(add(add(mul(ah, bh), down(lh, w / 2)), down(hl, w / 2)), down(mid, w / 2)),
              mul(a, b)};
    };
    const int b = alu(Op::Bitcast, ut, x);
    const std::uint64_t top_e = f64 ? 0x7ff : 0xff;
    const int e = mask(down(b, mant), top_e);
    const int m =
        alu(Op::Or, ut, mask(b, (std::uint64_t(1) << mant) - 1), c(std::uint64_t(1) << mant));
    // the window starts at bit k = e - bias - mant + 62 of the table (64 zero bits, then 2/pi's)
    const int lead = bias + mant - 62;
    const int k = add(e, c((f64 ? 0 : std::uint64_t(1) << 32) - std::uint64_t(lead)));
    const int j = down(k, log_w), s = mask(k, std::uint64_t(w - 1));
    const int j_lo = (bias - 1 - lead) >> log_w, j_hi = (int(top_e) - 1 - lead) >> log_w;
    std::array<int, 4> t{}; // table words j .. j + 3
    for (int i = 0; i < 4; ++i) t[std::size_t(i)] = c(detail::two_over_pi_word(j_lo + i, w));
    for (int jj = j_lo + 1; jj <= j_hi; ++jj) {
      const int here = alu(Op::CmpEq, b1, j, c(std::uint64_t(jj)));
      for (int i = 0; i < 4; ++i)
        t[std::size_t(i)] =
            alu(Op::Where, ut, here, c(detail::two_over_pi_word(jj + i, w)), t[std::size_t(i)]);
    }
    // word i of the window: t[i] << s | t[i + 1] >> (w - s), the latter as (t >> 1) >> (w - 1 - s)
    const int by = pow2(s), by_rest = pow2(alu(Op::Xor, ut, s, c(std::uint64_t(w - 1)))); // w-1-s
    auto window = [&](int i) {
      return alu(Op::Or, ut, mul(t[std::size_t(i)], by),
                 alu(Op::Div, ut, down(t[std::size_t(i) + 1], 1), by_rest));
    };
    const int h2 = wide_mul(m, window(2))[0]; // (its low word is below the fraction's bits)
    const auto [h1, l1] = wide_mul(m, window(1));
    const int p1 = add(l1, h2);
    const int p0 = add(add(mul(m, window(0)), h1), alu(Op::Cast, ut, alu(Op::CmpLt, b1, p1, h2)));
    const int q = down(add(p0, c(std::uint64_t(1) << (w - 3))), w - 2); // the nearest quadrant
    // the signed fraction in [-1/2, 1/2): p0's low w - 2 bits, then p1's
    const int f = alu(Op::Add, cf,
                      alu(Op::Mul, cf, alu(Op::Cast, cf, alu(Op::Bitcast, it, up(p0, 2))),
                          real(cf, f64 ? 0x1p-64 : 0x1p-32)),
                      alu(Op::Mul, cf, alu(Op::Cast, cf, p1), real(cf, f64 ? 0x1p-126 : 0x1p-62)));
    const int r = alu(Op::Mul, cf, f, real(cf, 1.5707963267948966));
    const int sr = alu(Op::Sin, cf, r), h = alu(Op::Sin, cf, alu(Op::Mul, cf, r, real(cf, 0.5)));
    const int cr = alu(Op::Add, cf, real(cf, 1.0),
                       alu(Op::Mul, cf, real(cf, -2.0), alu(Op::Mul, cf, h, h))); // cos r
    auto set = [&](int v, std::uint64_t bit) { return alu(Op::CmpNe, b1, mask(v, bit), c(0)); };
    int v = alu(Op::Where, cf, set(q, 1), cr, sr);
    v = alu(Op::Where, cf, set(q, 2), alu(Op::Neg, cf, v), v);
    v = alu(Op::Where, cf, set(b, std::uint64_t(1) << (w - 1)), alu(Op::Neg, cf, v), v);
    // |x| < 1/2: the dialect's sin as it was; inf and NaN: NaN
    v = alu(Op::Where, cf, alu(Op::CmpLt, b1, e, c(std::uint64_t(bias - 1))), alu(Op::Sin, cf, x),
            v);
    return alu(Op::Where, cf, alu(Op::CmpEq, b1, e, c(top_e)),
               real(cf, std::numeric_limits<double>::quiet_NaN()), v);
  };

  // a / b for floats of compute dtype cf, with b == 0 giving what IEEE division gives
  auto ieee_div = [&](DType cf, int a, int b) {
    const DType bits = cf == DType::Float64 ? DType::UInt64 : u32;
    const std::int64_t sign = cf == DType::Float64 ? std::numeric_limits<std::int64_t>::min()
                                                   : std::int64_t(0x80000000),
                       inf = cf == DType::Float64 ? std::int64_t(0x7ff0000000000000)
                                                  : std::int64_t(0x7f800000);
    const int nonzero = alu(Op::CmpNe, b1, b, real(cf, 0.0));
    const int q = alu(Op::Div, cf, a, alu(Op::Where, cf, nonzero, b, real(cf, 1.0)));
    const int nan_or_zero =
        alu(Op::Or, b1, alu(Op::CmpNe, b1, a, a), alu(Op::CmpEq, b1, a, real(cf, 0.0)));
    const int signs = alu(Op::Xor, bits, alu(Op::Bitcast, bits, a), alu(Op::Bitcast, bits, b));
    const int infinity = alu(
        Op::Bitcast, cf,
        alu(Op::Or, bits, alu(Op::And, bits, signs, constant(bits, sign)), constant(bits, inf)));
    const int zero_div = alu(Op::Where, cf, nan_or_zero,
                             real(cf, std::numeric_limits<double>::quiet_NaN()), infinity);
    return alu(Op::Where, cf, nonzero, q, zero_div);
  };

  // value k as compute dtype cf (a value of 16-bit float type is a float32)
  auto as_float = [&](DType cf, int k) {
    return rw.out[std::size_t(k)].dtype == cf ? k : alu(Op::Cast, cf, k);
  };
  // pow(a, b) for floats of compute dtype cf (DecomposeOptions::pow), glibc's cases from the first
  // (b == 0 or a == 1 gives 1, even for NaN) to the last (a negative base and a fractional b)
  auto pow_ops = [&](DType cf, int a, int b) {
    const bool f64 = cf == DType::Float64;
    const DType ut = f64 ? DType::UInt64 : u32, it = f64 ? DType::Int64 : DType::Int32;
    const double inf_v = std::numeric_limits<double>::infinity();
    auto lt = [&](int x, int y) { return alu(Op::CmpLt, b1, x, y); };
    auto is = [&](int x, double v) { return alu(Op::CmpEq, b1, x, real(cf, v)); };
    auto both = [&](int x, int y) { return alu(Op::And, b1, x, y); };
    auto pick = [&](int c, int x, int y) { return alu(Op::Where, cf, c, x, y); };
    const int zero = real(cf, 0.0), one = real(cf, 1.0), inf = real(cf, inf_v);
    const int a_neg = lt(a, zero), b_neg = lt(b, zero), b_pos = lt(zero, b);
    const int ma = pick(a_neg, alu(Op::Neg, cf, a), a), mb = pick(b_neg, alu(Op::Neg, cf, b), b);
    const int integral = alu(Op::CmpEq, b1, b, alu(Op::Trunc, cf, b)); // (and infinite)
    const int small = both(integral, lt(mb, real(cf, f64 ? 0x1p53 : 0x1p24)));
    const int half = alu(Op::Mul, cf, mb, real(cf, 0.5));
    const int odd = both(small, alu(Op::CmpNe, b1, alu(Op::Trunc, cf, half), half));
    // |a|^|b| by squaring, one step per bit of |b|
    const int n = alu(Op::Cast, ut, pick(small, mb, zero));
    const int steps = f64 ? 53 : 24;
    int x = ma, r = one;
    for (int k = 0; k < steps; ++k) {
      const int bit = alu(Op::CmpNe, b1, alu(Op::And, ut, n, constant(ut, std::int64_t(1) << k)),
                          constant(ut, 0));
      r = pick(bit, alu(Op::Mul, cf, r, x), r);
      if (k + 1 < steps) x = alu(Op::Mul, cf, x, x);
    }
    int general; // 2^(b log2|a|)
    if (o.pow_native) {
      general = alu(Op::Pow, cf, ma, b);
    } else if (o.pow_f64 && !f64) {
      const DType d = DType::Float64;
      const int l = alu(Op::Log2, d, alu(Op::Cast, d, ma));
      general = alu(Op::Cast, cf, alu(Op::Exp2, d, alu(Op::Mul, d, alu(Op::Cast, d, b), l)));
    } else {
      general = alu(Op::Exp2, cf, alu(Op::Mul, cf, b, alu(Op::Log2, cf, ma)));
    }
    r = pick(b_neg, pick(is(r, inf_v), general, alu(Op::Div, cf, one, r)), r);
    r = pick(small, r, general);
    r = pick(both(a_neg, odd), alu(Op::Neg, cf, r), r);
    r = pick(both(a_neg, alu(Op::Neg, b1, integral)),
             real(cf, std::numeric_limits<double>::quiet_NaN()), r);
    // -0 or +0 by the sign bit: a compiler may fold a choice between the constants -0 and +0
    // (Mesa's GL driver does)
    const int neg_inf = real(cf, -inf_v);
    const int signed_zero =
        alu(Op::Bitcast, cf,
            alu(Op::Where, ut, odd, constant(ut, std::int64_t(std::uint64_t(1) << (f64 ? 63 : 31))),
                constant(ut, 0)));
    const int at_inf =
        pick(a_neg, pick(b_pos, pick(odd, neg_inf, inf), signed_zero), pick(b_pos, inf, zero));
    r = pick(is(ma, inf_v), at_inf, r);
    const int at_inf_b =
        pick(is(ma, 1.0), one, pick(alu(Op::CmpNe, b1, lt(one, ma), b_pos), zero, inf));
    r = pick(is(mb, inf_v), at_inf_b, r);
    const int signed_inf =
        pick(lt(alu(Op::Bitcast, it, a), constant(it, 0)), neg_inf, inf); // by a's sign bit: -0
    const int at_zero = pick(b_neg, pick(odd, signed_inf, inf), pick(odd, a, zero));
    r = pick(is(a, 0.0), at_zero, r);
    r = pick(alu(Op::Or, b1, alu(Op::CmpNe, b1, a, a), alu(Op::CmpNe, b1, b, b)),
             real(cf, std::numeric_limits<double>::quiet_NaN()), r);
    return pick(alu(Op::Or, b1, is(b, 0.0), is(a, 1.0)), one, r);
  };

  // A rewritten value of a 16-bit float type the dialect converts itself (CUDA's float16) typed
  // so again, exactly: a store then encodes it (a float32-typed value was stored as an integer).
  auto typed = [&](DType d, int v) {
    return is_half(d) && !o.bits_of(d) && rw.out[std::size_t(v)].dtype != d ? alu(Op::Cast, d, v)
                                                                            : v;
  };
  // (value, word) of each cast to a 16-bit float: a store of the value stores the word, which
  // encoding the value again would give bit for bit (a cast kernel had rounded every element twice)
  std::vector<std::pair<int, int>> rounded;
  for (std::size_t i = 0; i < p.ops.size(); ++i) {
    const UOp& u = p.ops[i];
    UOp r = rw.remapped(u);
    const DType d = u.src[0] >= 0 ? p.ops[std::size_t(u.src[0])].dtype : u.dtype;
    const bool of_param = u.src[0] >= 0 && p.ops[std::size_t(u.src[0])].kind == UKind::Param;
    if (u.kind == UKind::Load && of_param && o.bits_of(d)) { // the bits, then the value
      r.dtype = u32;
      const int w = rw.add(std::move(r));
      // (loaded as an integer: the bits themselves, as shared_tiles stages tensor-core operands)
      rw.map[i] = is_half(u.dtype) ? decode16(d, w) : alu(Op::Cast, u.dtype, w);
      continue;
    }
    if (u.kind == UKind::Store && of_param && o.bits_of(d)) {
      const int v = r.src[2];
      r.src[2] = -1;
      for (auto [value, word] : rounded)
        if (value == v && p.ops[std::size_t(u.src[2])].dtype == d) r.src[2] = word;
      if (r.src[2] < 0) r.src[2] = encode16(d, v);
      rw.map[i] = rw.add(std::move(r));
      continue;
    }
    if (u.kind == UKind::Alu && u.op == Op::Cast && o.bits_of(u.dtype)) { // rounded to 16 bits
      const int f = compute_dtype(d) == f32 ? r.src[0] : alu(Op::Cast, f32, r.src[0]);
      const int w = encode16(u.dtype, f);
      rw.map[i] = decode16(u.dtype, w);
      rounded.push_back({rw.map[i], w});
      continue;
    }
    if (u.kind == UKind::Alu && u.op == Op::Cast && o.saturating_casts &&
        is_float(compute_dtype(d)) && is_int(u.dtype)) {
      rw.map[i] = to_int(compute_dtype(d), u.dtype, r.src[0]);
      continue;
    }
    if (u.kind == UKind::Alu && u.op == Op::Exp2 && o.exp2_poly && compute_dtype(u.dtype) == f32) {
      rw.map[i] = typed(u.dtype, exp2_poly(r.src[0]));
      continue;
    }
    if (u.kind == UKind::Alu && u.op == Op::Sin && o.sin_reduce &&
        is_float(compute_dtype(u.dtype))) {
      const DType cf = compute_dtype(u.dtype);
      rw.map[i] = typed(u.dtype, sin_reduced(as_float(cf, r.src[0]), cf));
      continue;
    }
    if (u.kind == UKind::Alu && u.op == Op::Pow && o.pow && is_float(compute_dtype(u.dtype))) {
      const DType cf = compute_dtype(u.dtype);
      rw.map[i] = typed(u.dtype, pow_ops(cf, as_float(cf, r.src[0]), as_float(cf, r.src[1])));
      continue;
    }
    if (u.kind == UKind::Alu && o.ieee_div && is_float(compute_dtype(u.dtype)) &&
        (u.op == Op::Div || u.op == Op::Recip)) {
      const DType cf = compute_dtype(u.dtype);
      const int a = u.op == Op::Recip ? real(cf, 1.0) : as_float(cf, r.src[0]);
      rw.map[i] = ieee_div(cf, a, as_float(cf, u.op == Op::Recip ? r.src[0] : r.src[1]));
      continue;
    }
    if (u.kind == UKind::Alu && u.op == Op::Bitcast && (o.bits_of(d) || o.bits_of(u.dtype))) {
      // a 16-bit float's bits are its codec's; integers of 16 bits wrap into and out of a word
      const int w = is_half(d) ? encode16(d, r.src[0])
                               : alu(Op::Cast, u32, alu(Op::Cast, DType::UInt16, r.src[0]));
      rw.map[i] =
          typed(u.dtype, is_half(u.dtype) ? decode16(u.dtype, w) : alu(Op::Cast, u.dtype, w));
      continue;
    }
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
      if (sign) { // -x wrapping around (-INT_MIN == INT_MIN): negated as unsigned
        const DType un = DType(int(d) + int(DType::UInt8) - int(DType::Int8));
        const int n = alu(Op::Cast, d, alu(Op::Neg, un, alu(Op::Cast, un, q)));
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
