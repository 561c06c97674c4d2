#pragma once
// What tensor/math.hpp declares (TG_API, config.hpp).
#include <cmath>

#include "../../tensor/tensor.hpp"

namespace tg::detail {

TG_API Tensor finite(const Tensor& x) {
  return x.abs() < Tensor::full_on({}, INFINITY, x.dtype(), x.device());
}

TG_API Tensor with_derivatives(const Tensor& value,
                               std::initializer_list<std::pair<Tensor, Tensor>> x_and_d) {
  bool any = false;
  for (const auto& [x, d] : x_and_d) any = any || x.requires_grad();
  if (!any) return value;
  Tensor v = value.detach(), zero = Tensor::full_on({}, 0, value.dtype(), value.device());
  for (const auto& [x0, d0] : x_and_d) {
    if (!x0.requires_grad()) continue;
    Tensor x = x0.cast(value.dtype()), d = d0.detach().cast(value.dtype());
    Tensor ok = finite(x.detach()).logical_and(finite(d));
    v = v + where(ok, (x - x.detach()) * d, zero); // 0 in value, d in gradient
  }
  return v;
}

TG_API Tensor scalar_like(const Tensor& x, double v) {
  return Tensor::full_on({}, v, x.dtype(), x.device());
}

TG_API Tensor atan_value(const Tensor& x) {
  const bool f64 = x.dtype() == DType::Float64;
  Tensor ax = x.abs(), one = scalar_like(x, 1);
  Tensor big = ax > 2.414213562373095,
         mid = big.logical_not().logical_and(ax > (f64 ? 0.66 : 0.4142135623730950));
  Tensor r = where(big, -(ax.maximum(one).reciprocal()), where(mid, (ax - 1.0) / (ax + 1.0), ax));
  Tensor base = where(big, scalar_like(x, kPi / 2), where(mid, scalar_like(x, kPi / 4), 0.0));
  Tensor z = r * r, y;
  if (f64) {
    Tensor p = (((-8.750608600031904122785e-1 * z - 1.615753718733365076637e1) * z -
                 7.500855792314704667340e1) *
                    z -
                1.228866684490136173410e2) *
                   z -
               6.485021904942025371773e1;
    Tensor q = ((((z + 2.485846490142306297962e1) * z + 1.650270098316988542046e2) * z +
                 4.328810604912902668951e2) *
                    z +
                4.853903996359136964868e2) *
                   z +
               1.945506571482613964425e2;
    y = r * (z * p / q) + r;
    // the low part of pi/2 and pi/4 that base lacks
    y = y + where(big, scalar_like(x, 6.123233995736765886130e-17),
                  where(mid, scalar_like(x, 3.061616997868382943065e-17), 0.0));
  } else {
    y = (((8.05374449538e-2 * z - 1.38776856032e-1) * z + 1.99777106478e-1) * z -
         3.33329491539e-1) *
            z * r +
        r;
  }
  Tensor a = base + y;
  return where(x < 0.0, -a, where(x == 0.0, x, a)); // NaN stays NaN, -0 stays -0
}

TG_API Tensor erf_series(const Tensor& x) {
  const int n = x.dtype() == DType::Float64 ? 32 : 22;
  Tensor mx2 = -(x * x), term = x, sum = x;
  for (int k = 1; k < n; ++k) {
    term = term * mx2 / double(k);
    sum = sum + term / double(2 * k + 1);
  }
  return sum * 1.1283791670955126; // 2 / sqrt(pi)
}

TG_API Tensor erfc_fraction(const Tensor& x) {
  const bool f64 = x.dtype() == DType::Float64;
  Tensor t = x;
  for (int k = f64 ? 40 : 20; k > 0; --k) t = x + (0.5 * k) / t;
  // exp(-x^2) with x^2 split so that its rounding does not grow with x (float64)
  Tensor e;
  if (f64) { // (exp(-27.5^2) is 0 in float64: the clamp keeps the split finite)
    Tensor xe = x.minimum(scalar_like(x, 27.5));
    Tensor hi = xe.cast(DType::Float32).cast(DType::Float64), lo = xe - hi;
    e = (-(hi * hi)).exp() * (-(lo * (hi + hi + lo))).exp();
  } else {
    e = (-(x * x)).exp();
  }
  return e / t * 0.5641895835477563; // 1 / sqrt(pi)
}

TG_API std::pair<Tensor, Tensor> erf_erfc(const Tensor& x) {
  Tensor ax = x.abs(), two = scalar_like(x, 2);
  Tensor small = ax < 2.0;
  Tensor s = erf_series(where(small, x, two));     // erf, |x| < 2
  Tensor c = erfc_fraction(where(small, two, ax)); // erfc(|x|), |x| >= 2
  Tensor neg = x < 0.0;
  Tensor erf_v = where(small, s, where(neg, c - 1.0, 1.0 - c));
  Tensor erfc_v = where(small, 1.0 - s, where(neg, 2.0 - c, c));
  Tensor inf = x.isinf(), pos = x > 0.0, nan = x.isnan();
  erf_v = where(inf, where(pos, scalar_like(x, 1), scalar_like(x, -1)), erf_v);
  erfc_v = where(inf, where(pos, scalar_like(x, 0), two), erfc_v);
  return {where(nan, x, erf_v), where(nan, x, erfc_v)};
}

TG_API void require_integral(const Tensor& a, const Tensor& b, const char* op,
                             std::source_location loc) {
  if (is_float(a.dtype()) || is_float(b.dtype()))
    fail<dtype_error>(op,
                      std::string("needs integer or bool tensors, got ") + dtype_name(a.dtype()) +
                          " and " + dtype_name(b.dtype()),
                      loc);
}

TG_API std::pair<Tensor, Tensor> promoted(const Tensor& a, const Tensor& b, const char* op,
                                          std::source_location loc) {
  DType t = promote(a, b);
  Shape out;
  if (!broadcast_shapes(a.sym_shape(), b.sym_shape(), out))
    fail<shape_error>(op, "shapes " + shape_of(a) + " and " + shape_of(b) + " cannot be broadcast",
                      loc);
  return {a.cast(t), b.cast(t)};
}

} // namespace tg::detail

namespace tg {

TG_API Tensor Tensor::erf(Loc) const {
  Tensor x = as_float();
  return detail::with_derivatives(detail::erf_erfc(x.detach()).first,
                                  {{x, 1.1283791670955126 * (-(x * x)).exp()}});
}

TG_API Tensor Tensor::erfc(Loc) const {
  Tensor x = as_float();
  return detail::with_derivatives(detail::erf_erfc(x.detach()).second,
                                  {{x, -1.1283791670955126 * (-(x * x)).exp()}});
}

TG_API Tensor Tensor::gelu(const std::string& approximate, Loc loc) const {
  Tensor x = as_float();
  if (approximate == "tanh")
    return 0.5 * x * (1.0 + (0.7978845608028654 * (x + 0.044715 * x * x * x)).tanh(loc));
  if (approximate != "none")
    detail::fail<error>(
        "gelu", "approximate must be \"none\" or \"tanh\", not \"" + approximate + "\"", loc);
  if (x.dtype() == DType::Float64) return 0.5 * x * (1.0 + (x * 0.7071067811865476).erf(loc));
  // float32 and narrower: erf by Abramowitz & Stegun 7.1.26 (|error| < 1.5e-7), a short kernel,
  // node for node the static front end's gelu
  Tensor z = x * 0.7071067811865476, az = z.abs(loc);
  Tensor t = (1.0 + 0.3275911 * az).reciprocal(loc);
  Tensor poly = t * (0.254829592 +
                     t * (-0.284496736 + t * (1.421413741 + t * (-1.453152027 + t * 1.061405429))));
  Tensor erf_abs = 1.0 - poly * (-(az * az)).exp(loc);
  Tensor erf = where(z < 0.0, -erf_abs, erf_abs, loc);
  return 0.5 * x * (1.0 + erf);
}

/// log(1 + x) without the rounding of 1 + x: log(u) * x / (u - 1) with u = 1 + x (Goldberg).
TG_API Tensor Tensor::log1p(Loc loc) const {
  Tensor x = as_float(), u = 1.0 + x;
  Tensor one = detail::scalar_like(x, 1);
  Tensor exact = u == one, d = where(exact, one, u - 1.0);
  Tensor v = where(exact, x, u.log(loc) * (x / d));
  v = where(u.isinf(loc), u, v);
  v = where(x < -1.0, detail::scalar_like(x, NAN), v); // log(1 + -inf) is NaN, not -inf
  return detail::with_derivatives(v, {{x, u.reciprocal(loc)}});
}

/// exp(x) - 1 without cancellation: (u - 1) * x / log(u) with u = exp(x).
TG_API Tensor Tensor::expm1(Loc loc) const {
  Tensor x = as_float(), u = x.exp(loc);
  Tensor one = detail::scalar_like(x, 1);
  Tensor exact = u == one, l = where(exact, one, u.log(loc));
  // the rounding of u matters only near x = 0; elsewhere u - 1 does not cancel
  Tensor far = (u < 0.5).logical_or(u > 2.0), um1 = u - 1.0;
  Tensor v = where(far, um1, where(exact, x, um1 * (x / l)));
  return detail::with_derivatives(v, {{x, u}});
}

} // namespace tg

namespace tg::detail {

TG_API Tensor sinh_value(const Tensor& x) { return (x.expm1() - (-x).expm1()) * 0.5; }

TG_API Tensor cosh_value(const Tensor& x) {
  Tensor e = x.abs().exp();
  return (e + e.reciprocal()) * 0.5;
}

} // namespace tg::detail

namespace tg {

TG_API Tensor Tensor::sinh(Loc) const {
  Tensor x = as_float(), xd = x.detach();
  return detail::with_derivatives(detail::sinh_value(xd), {{x, detail::cosh_value(xd)}});
}

TG_API Tensor Tensor::cosh(Loc) const {
  Tensor x = as_float(), xd = x.detach();
  return detail::with_derivatives(detail::cosh_value(xd), {{x, detail::sinh_value(xd)}});
}

TG_API Tensor Tensor::asinh(Loc loc) const {
  Tensor x = as_float(), xd = x.detach(), ax = xd.abs(loc);
  Tensor ax2 = ax * ax, s = (1.0 + ax2).sqrt(loc);
  Tensor small = (ax + ax2 / (1.0 + s)).log1p(loc);
  Tensor large = ax.log(loc) + detail::kLn2; // |x| > 2^28: x^2 + 1 == x^2
  Tensor a = where(ax > 268435456.0, large, small);
  Tensor v = where(xd < 0.0, -a, where(xd == 0.0, xd, a));
  return detail::with_derivatives(v, {{x, s.reciprocal(loc)}});
}

TG_API Tensor Tensor::acosh(Loc loc) const {
  Tensor x = as_float(), xd = x.detach(), t = xd - 1.0;
  Tensor small = (t + (t * (t + 2.0)).sqrt(loc)).log1p(loc);
  Tensor large = xd.log(loc) + detail::kLn2;
  Tensor v = where(xd > 268435456.0, large, small);
  v = where(xd < 1.0, detail::scalar_like(v, NAN), v);
  return detail::with_derivatives(v, {{x, ((x - 1.0) * (x + 1.0)).rsqrt(loc)}});
}

TG_API Tensor Tensor::atanh(Loc loc) const {
  Tensor x = as_float();
  Tensor xd = x.detach(), v = 0.5 * (2.0 * xd / (1.0 - xd)).log1p(loc);
  v = where(xd.abs(loc) > 1.0, detail::scalar_like(v, NAN), v);
  return detail::with_derivatives(v, {{x, ((1.0 - x) * (1.0 + x)).reciprocal(loc)}});
}

TG_API Tensor Tensor::atan(Loc loc) const {
  Tensor x = as_float();
  return detail::with_derivatives(detail::atan_value(x.detach()),
                                  {{x, (1.0 + x * x).reciprocal(loc)}});
}

TG_API Tensor Tensor::asin(Loc loc) const {
  Tensor x = as_float();
  Tensor c = ((1.0 - x) * (1.0 + x)).sqrt(loc); // cos(asin(x)), without 1 - x^2's cancellation
  Tensor v = x.detach().atan2(c.detach(), loc);
  return detail::with_derivatives(v, {{x, c.reciprocal(loc)}});
}

TG_API Tensor Tensor::acos(Loc loc) const {
  Tensor x = as_float();
  Tensor xd = x.detach(), v = 2.0 * ((1.0 - xd) / (1.0 + xd)).sqrt(loc).atan(loc);
  return detail::with_derivatives(v, {{x, -((1.0 - x) * (1.0 + x)).rsqrt(loc)}});
}

/// The angle of (x, y) = (o, this), in (-pi, pi], as std::atan2 (atan2(0, 0) = 0).
TG_API Tensor Tensor::atan2(const Tensor& o, Loc loc) const {
  auto [y0, x0] = detail::promoted(*this, o, "atan2", loc);
  Tensor y = y0.as_float(), x = x0.as_float(), yd = y.detach(), xd = x.detach();
  // the sign bits, -0 included (1 / -0 is -inf)
  Tensor y_zero = yd == 0.0, x_zero = xd == 0.0;
  Tensor y_neg = (yd < 0.0).logical_or(y_zero.logical_and(yd.reciprocal(loc) < 0.0));
  Tensor x_neg = (xd < 0.0).logical_or(x_zero.logical_and(xd.reciprocal(loc) < 0.0));
  Tensor both_zero = x_zero.logical_and(y_zero);
  Tensor q = where(both_zero, detail::scalar_like(yd, 0), yd / xd);
  Tensor a = detail::atan_value(q);
  Tensor pi = detail::scalar_like(a, detail::kPi);
  Tensor v = where(x_neg, where(y_neg, a - pi, a + pi), a);
  v = where(both_zero, where(x_neg, where(y_neg, -pi, pi), yd), v); // atan2(+-0, -0) = +-pi
  Tensor r2 = xd * xd + yd * yd;
  return detail::with_derivatives(v, {{y, xd / r2}, {x, -yd / r2}});
}

/// sqrt(a^2 + b^2) without overflow or underflow in the squares.
TG_API Tensor Tensor::hypot(const Tensor& o, Loc loc) const {
  auto [a0, b0] = detail::promoted(*this, o, "hypot", loc);
  Tensor a = a0.as_float(), b = b0.as_float();
  Tensor m = a.abs(loc).maximum(b.abs(loc)).detach();
  Tensor zero = m == 0.0, safe = where(zero, detail::scalar_like(m, 1), m);
  Tensor ra = a.detach() / safe, rb = b.detach() / safe;
  Tensor v = where(zero, m, m * (ra * ra + rb * rb).sqrt(loc));
  v = where(m.isinf(loc), m, v); // inf with anything (NaN too) is inf
  Tensor h = where(v == 0.0, detail::scalar_like(v, 1), v);
  return detail::with_derivatives(v, {{a, a / h}, {b, b / h}});
}

/// start + weight * (end - start), as PyTorch: from end's side where weight >= 0.5.
TG_API Tensor Tensor::lerp(const Tensor& end, const Tensor& weight, Loc loc) const {
  Tensor d = TensorArg(end, loc) - *this;
  return where(weight < 0.5, *this + weight * d, end - d * (1.0 - weight), loc);
}

TG_API Tensor Tensor::lerp(const Tensor& end, double weight, Loc loc) const {
  return lerp(end, full_on({}, weight, detail::promote(*this, end), device()), loc);
}

} // namespace tg

namespace tg::detail {

TG_API Tensor float_fmod(const Tensor& a, const Tensor& b) {
  Tensor a64 = a.cast(DType::Float64), b64 = b.cast(DType::Float64);
  Tensor r = a64 - b64 * (a64 / b64).trunc();
  return where(b64.isinf().logical_and(finite(a64)), a64, r).cast(a.dtype());
}

TG_API Tensor to_divisor_side(const Tensor& r, const Tensor& b) {
  Tensor zero = scalar_like(r, 0);
  return where((r != zero).logical_and((r < zero).logical_xor(b < zero)), r + b, r);
}

} // namespace tg::detail

namespace tg {

TG_API Tensor Tensor::remainder(const Tensor& o, Loc loc) const {
  auto [a, b] = detail::promoted(*this, o, "remainder", loc);
  if (a.dtype() == DType::Bool)
    detail::fail<dtype_error>("remainder", "is not defined for bool tensors", loc);
  if (!is_float(a.dtype())) // C's % rounds toward zero
    return detail::to_divisor_side(Tensor::alu(Op::Mod, a, b, "remainder", loc), b);
  return detail::to_divisor_side(detail::float_fmod(a, b), b);
}

TG_API Tensor Tensor::fmod(const Tensor& o, Loc loc) const {
  auto [a, b] = detail::promoted(*this, o, "fmod", loc);
  if (a.dtype() == DType::Bool)
    detail::fail<dtype_error>("fmod", "is not defined for bool tensors", loc);
  if (!is_float(a.dtype())) return Tensor::alu(Op::Mod, a, b, "fmod", loc);
  return detail::float_fmod(a, b);
}

/// floor(a / b); for floats as PyTorch computes it: (a - fmod(a, b)) / b, adjusted, so that
/// a == b * floor_divide(a, b) + remainder(a, b) where both are finite.
TG_API Tensor Tensor::floor_divide(const Tensor& o, Loc loc) const {
  auto [a, b] = detail::promoted(*this, o, "floor_divide", loc);
  if (a.dtype() == DType::Bool)
    detail::fail<dtype_error>("floor_divide", "is not defined for bool tensors", loc);
  if (is_float(a.dtype())) {
    Tensor mod = detail::float_fmod(a, b), zero = detail::scalar_like(a, 0);
    Tensor div = (a - mod) / b;
    div = where((mod != zero).logical_and((b < zero).logical_xor(mod < zero)), div - 1.0, div);
    Tensor fl = div.floor(loc);
    fl = where(div - fl > 0.5, fl + 1.0, fl);
    Tensor q = a / b;
    Tensor signed_zero = where(q < zero, detail::scalar_like(a, -0.0), zero);
    return where(b == zero, q, where(div == zero, signed_zero, fl));
  }
  Tensor q = Tensor::alu(Op::Div, a, b, "floor_divide", loc); // toward zero
  Tensor r = Tensor::alu(Op::Mod, a, b, "floor_divide", loc), zero = detail::scalar_like(q, 0);
  Tensor down = (r != zero).logical_and((r < zero).logical_xor(b < zero));
  return where(down, q - detail::scalar_like(q, 1), q, loc);
}

TG_API Tensor Tensor::bitwise_and(const Tensor& o, Loc loc) const {
  detail::require_integral(*this, o, "bitwise_and", loc);
  return Tensor::alu(Op::And, *this, o, "bitwise_and", loc);
}

TG_API Tensor Tensor::bitwise_or(const Tensor& o, Loc loc) const {
  detail::require_integral(*this, o, "bitwise_or", loc);
  return Tensor::alu(Op::Or, *this, o, "bitwise_or", loc);
}

TG_API Tensor Tensor::bitwise_xor(const Tensor& o, Loc loc) const {
  detail::require_integral(*this, o, "bitwise_xor", loc);
  return Tensor::alu(Op::Xor, *this, o, "bitwise_xor", loc);
}

TG_API Tensor Tensor::bitwise_not(Loc loc) const {
  detail::require_integral(*this, *this, "bitwise_not", loc);
  if (dtype() == DType::Bool) return logical_not(loc);
  return Tensor::alu(Op::Xor, *this, full_on({}, -1, dtype(), device()), "bitwise_not", loc);
}

/// a * 2^b (wrapping), as PyTorch's <<.
TG_API Tensor Tensor::bitwise_left_shift(const Tensor& o, Loc loc) const {
  detail::require_integral(*this, o, "bitwise_left_shift", loc);
  auto [a, b] = detail::promoted(*this, o, "bitwise_left_shift", loc);
  Tensor p = b.cast(DType::Float64).exp2(loc).cast(DType::Int64).cast(a.dtype());
  return a * p;
}

/// floor(a / 2^b), as PyTorch's >> (arithmetic for signed types).
TG_API Tensor Tensor::bitwise_right_shift(const Tensor& o, Loc loc) const {
  detail::require_integral(*this, o, "bitwise_right_shift", loc);
  auto [a, b] = detail::promoted(*this, o, "bitwise_right_shift", loc);
  Tensor p = b.cast(DType::Float64).exp2(loc).cast(DType::Int64);
  return a.cast(DType::Int64).floor_divide(p, loc).cast(a.dtype());
}

TG_API Tensor Tensor::norm(double p, std::vector<int> axes, bool keepdim, Loc loc) const {
  detail::check_axes(*this, axes, "norm", loc);
  Tensor x = as_float(), ax = x.abs(loc);
  if (p == INFINITY) return ax.max(axes, keepdim, loc);
  if (p == -INFINITY) return ax.min(axes, keepdim, loc);
  if (p == 0) return (ax != 0.0).cast(x.dtype()).sum(axes, keepdim, loc);
  if (p == 1) return ax.sum(axes, keepdim, loc);
  if (!(p > 0))
    detail::fail<error>("norm", "p must be positive, 0 or +-inf, got " + std::to_string(p), loc);
  Tensor v = p == 2 ? x.detach().square(loc).sum(axes, keepdim, loc).sqrt(loc)
                    : ax.detach().pow(p, loc).sum(axes, keepdim, loc).pow(1.0 / p, loc);
  if (!requires_grad()) return v;
  // d/dx = sign(x) |x|^(p-1) / norm^(p-1), 0 where the norm is 0
  Tensor vk = keepdim ? v : v.reshape([&] {
    Shape s = sym_shape();
    std::vector<int> all = axes;
    if (all.empty())
      for (int i = 0; i < ndim(); ++i) all.push_back(i);
    for (int a : all) s[std::size_t(normalize_axis(a, "norm", loc))] = 1;
    return s;
  }());
  Tensor safe = where(vk == 0.0, detail::scalar_like(vk, 1), vk);
  Tensor d = p == 2 ? x / safe : x.sign(loc) * (ax / safe).pow(p - 1, loc);
  return v + (x * d.detach()).sum(axes, keepdim, loc) - (x * d).detach().sum(axes, keepdim, loc);
}

TG_API Tensor operator~(TensorArg a) { return a.t.bitwise_not(a.loc); }

TG_API Tensor outer(const Tensor& a, const Tensor& b, std::source_location loc) {
  if (a.ndim() != 1 || b.ndim() != 1)
    detail::fail<shape_error>(
        "outer",
        "needs two 1-D tensors, got " + detail::shape_of(a) + " and " + detail::shape_of(b), loc);
  return TensorArg(a.unsqueeze(1, loc), loc) * b.unsqueeze(0, loc);
}

} // namespace tg

namespace tg::linalg {

TG_API Tensor vector_norm(const Tensor& x, double ord, std::vector<int> dim, bool keepdim,
                          std::source_location loc) {
  return x.norm(ord, std::move(dim), keepdim, loc);
}

} // namespace tg::linalg
