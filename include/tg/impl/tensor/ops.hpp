#pragma once
// What tensor/ops.hpp declares (TG_API, config.hpp).
#include <algorithm>
#include <cmath>

#include "../../tensor/tensor.hpp"

namespace tg::detail {

TG_API void require_not_bool(const Tensor& t, const char* op, std::source_location loc) {
  if (t.dtype() == DType::Bool)
    fail<dtype_error>(
        op, "is not defined for bool tensors (cast to an integer or float type first)", loc);
}

} // namespace tg::detail

namespace tg {

TG_API Tensor operator+(TensorArg a, TensorArg b) {
  return Tensor::alu(Op::Add, a.t, b.t, "add", a.loc);
}

TG_API Tensor operator*(TensorArg a, TensorArg b) {
  return Tensor::alu(Op::Mul, a.t, b.t, "mul", a.loc);
}

TG_API Tensor operator-(TensorArg a) {
  detail::require_not_bool(a.t, "neg", a.loc);
  return a.t.alu(Op::Neg, a.loc);
}

TG_API Tensor operator-(TensorArg a, TensorArg b) {
  if (a.t.dtype() == DType::Bool || b.t.dtype() == DType::Bool)
    detail::fail<dtype_error>("sub", "subtracting bool tensors is not supported (use logical_xor)",
                              a.loc);
  DType t = detail::promote(a.t, b.t);
  return Tensor::alu(Op::Add, a.t.cast(t), -TensorArg(b.t.cast(t), a.loc), "sub", a.loc);
}

TG_API Tensor operator/(TensorArg a, TensorArg b) {
  DType t = detail::promote(a.t, b.t);
  if (!is_float(t)) t = DType::Float32;
  return Tensor::alu(Op::Div, a.t.cast(t), b.t.cast(t), "div", a.loc);
}

TG_API Tensor operator<(TensorArg a, TensorArg b) {
  return Tensor::alu(Op::CmpLt, a.t, b.t, "lt", a.loc);
}

TG_API Tensor operator>(TensorArg a, TensorArg b) {
  return Tensor::alu(Op::CmpLt, b.t, a.t, "gt", a.loc);
}

TG_API Tensor operator==(TensorArg a, TensorArg b) {
  return Tensor::alu(Op::CmpEq, a.t, b.t, "eq", a.loc);
}

TG_API Tensor operator!=(TensorArg a, TensorArg b) {
  return Tensor::alu(Op::CmpNe, a.t, b.t, "ne", a.loc);
}

TG_API Tensor operator<=(TensorArg a, TensorArg b) {
  return Tensor::alu(Op::Or, Tensor::alu(Op::CmpLt, a.t, b.t, "le", a.loc),
                     Tensor::alu(Op::CmpEq, a.t, b.t, "le", a.loc), "le", a.loc);
}

TG_API Tensor operator>=(TensorArg a, TensorArg b) {
  return Tensor::alu(Op::Or, Tensor::alu(Op::CmpLt, b.t, a.t, "ge", a.loc),
                     Tensor::alu(Op::CmpEq, a.t, b.t, "ge", a.loc), "ge", a.loc);
}

TG_API Tensor operator!(TensorArg a) { return a.t.logical_not(a.loc); }

TG_API Tensor operator&&(TensorArg a, TensorArg b) { return a.t.logical_and(b.t, a.loc); }

TG_API Tensor operator||(TensorArg a, TensorArg b) { return a.t.logical_or(b.t, a.loc); }

TG_API Tensor& operator+=(Tensor& a, TensorArg b) { return a = TensorArg(a, b.loc) + b; }

TG_API Tensor& operator-=(Tensor& a, TensorArg b) { return a = TensorArg(a, b.loc) - b; }

TG_API Tensor& operator*=(Tensor& a, TensorArg b) { return a = TensorArg(a, b.loc) * b; }

TG_API Tensor& operator/=(Tensor& a, TensorArg b) { return a = TensorArg(a, b.loc) / b; }

// ---- elementwise ---------------------------------------------------------------------------
TG_API Tensor Tensor::neg(Loc loc) const { return -TensorArg(*this, loc); }

TG_API Tensor Tensor::abs(Loc loc) const {
  detail::require_not_bool(*this, "abs", loc);
  if (is_unsigned(dtype())) return *this;
  Tensor m = neg(loc).maximum(*this, loc);
  if (!is_float(dtype())) return m;
  // max(-0, +0) may be -0: a zero becomes +0 by a select, not by adding +0, which a Vulkan
  // driver may fold away (lavapipe does, float controls or not: abs(0) was -0, 1 / it -inf)
  return where(m == const_like(0), const_like(0), m, loc);
}

TG_API Tensor Tensor::sign(Loc loc) const {
  detail::require_not_bool(*this, "sign", loc);
  Tensor zero = const_like(0);
  return alu(Op::CmpLt, zero, *this, "sign", loc).cast(dtype()) -
         alu(Op::CmpLt, *this, zero, "sign", loc).cast(dtype());
}

TG_API Tensor Tensor::exp2(Loc loc) const { return as_float().alu(Op::Exp2, loc); }

TG_API Tensor Tensor::exp(Loc loc) const {
  return (as_float() * detail::kLog2E).alu(Op::Exp2, loc);
}

TG_API Tensor Tensor::log2(Loc loc) const { return as_float().alu(Op::Log2, loc); }

TG_API Tensor Tensor::log(Loc loc) const { return as_float().alu(Op::Log2, loc) * detail::kLn2; }

TG_API Tensor Tensor::sqrt(Loc loc) const { return as_float().alu(Op::Sqrt, loc); }

TG_API Tensor Tensor::rsqrt(Loc loc) const { return sqrt(loc).reciprocal(loc); }

TG_API Tensor Tensor::reciprocal(Loc loc) const { return as_float().alu(Op::Recip, loc); }

TG_API Tensor Tensor::sin(Loc loc) const { return as_float().alu(Op::Sin, loc); }

/// cos(x) = 1 - 2 sin^2(x / 2): halving is exact, so large arguments keep their digits (sin of
/// pi/2 - x rounds the difference first: cos(12345.678f) was off by 3e-4).
TG_API Tensor Tensor::cos(Loc loc) const {
  return 1.0 - 2.0 * (as_float() * 0.5).alu(Op::Sin, loc).square(loc);
}

TG_API Tensor Tensor::tan(Loc loc) const { return sin(loc) / cos(loc); }

TG_API Tensor Tensor::sigmoid(Loc loc) const {
  return (1.0 + (-as_float()).exp(loc)).reciprocal(loc);
}

TG_API Tensor Tensor::tanh(Loc loc) const { return 2.0 * (2.0 * as_float()).sigmoid(loc) - 1.0; }

TG_API Tensor Tensor::relu(Loc loc) const {
  detail::require_not_bool(*this, "relu", loc);
  Tensor zero = const_like(0);
  Tensor out = maximum(zero, loc); // NaN stays NaN
  // PyTorch's gradient, none at 0 (max would split the tie evenly): the record of a select on
  // x > 0, which is also one compare in the backward kernels.
  if (out.lazy()->grad_fn) {
    no_grad guard; // the mask itself is not differentiated
    *out.lazy()->grad_fn =
        GradRecord{Op::Where,
                   {(zero < *this).lazy(), lazy(), zero.expand(sym_shape()).lazy()},
                   {},
                   {},
                   nullptr};
  }
  return out;
}

TG_API Tensor Tensor::leaky_relu(double slope, Loc loc) const {
  Tensor x = as_float();
  return where(x > 0.0, x, x * slope, loc);
}

TG_API Tensor Tensor::silu(Loc loc) const { return as_float() * sigmoid(loc); }

TG_API Tensor Tensor::softplus(double beta, double threshold, Loc loc) const {
  Tensor bx = as_float() * beta;
  Tensor soft = (bx.relu(loc) + (1.0 + (-bx.abs(loc)).exp(loc)).log(loc)) / beta;
  return where(bx > threshold, as_float(), soft, loc);
}

TG_API Tensor Tensor::square(Loc loc) const {
  return TensorArg(*this, loc) * TensorArg(*this, loc);
}

TG_API Tensor Tensor::trunc(Loc loc) const {
  return is_float(dtype()) ? alu(Op::Trunc, loc) : *this;
}

TG_API Tensor Tensor::floor(Loc loc) const {
  if (!is_float(dtype())) return *this;
  Tensor t = trunc(loc);
  return where(*this < t, t - 1.0, t, loc);
}

TG_API Tensor Tensor::ceil(Loc loc) const {
  if (!is_float(dtype())) return *this;
  Tensor t = trunc(loc);
  return where(*this > t, t + 1.0, t, loc);
}

/// Round half to even, as PyTorch. From trunc: x - trunc(x) is exact, whereas x + 0.5 rounds
/// (0.49999997f + 0.5 == 1.0f, and 2^23 + 1 + 0.5 is a tie in float32).
TG_API Tensor Tensor::round(Loc loc) const {
  if (!is_float(dtype())) return *this;
  Tensor t = trunc(loc), frac = *this - t, af = frac.abs(loc);
  Tensor odd = (t * 0.5).trunc(loc) * 2.0 != t;
  Tensor away = (af > 0.5).logical_or((af == 0.5).logical_and(odd, loc), loc);
  return where(away, t + where(frac < 0.0, const_like(-1), const_like(1), loc), t, loc);
}

TG_API Tensor Tensor::isnan(Loc loc) const {
  if (!is_float(dtype())) return full_on(sym_shape(), 0, DType::Bool, device());
  return alu(Op::CmpNe, *this, *this, "isnan", loc);
}

TG_API Tensor Tensor::isinf(Loc loc) const {
  if (!is_float(dtype())) return full_on(sym_shape(), 0, DType::Bool, device());
  return (*this == INFINITY).logical_or(*this == -INFINITY, loc);
}

TG_API Tensor Tensor::logical_not(Loc loc) const {
  return alu(Op::CmpEq, cast(DType::Bool), const_like(0, DType::Bool), "logical_not", loc);
}

TG_API Tensor Tensor::logical_and(const Tensor& o, Loc loc) const {
  return alu(Op::And, cast(DType::Bool), o.cast(DType::Bool), "logical_and", loc);
}

TG_API Tensor Tensor::logical_or(const Tensor& o, Loc loc) const {
  return alu(Op::Or, cast(DType::Bool), o.cast(DType::Bool), "logical_or", loc);
}

TG_API Tensor Tensor::logical_xor(const Tensor& o, Loc loc) const {
  return alu(Op::Xor, cast(DType::Bool), o.cast(DType::Bool), "logical_xor", loc);
}

TG_API Tensor Tensor::pow(const Tensor& e, Loc loc) const {
  DType t = detail::promote(*this, e);
  if (is_float(t)) return alu(Op::Pow, cast(t), e.cast(t), "pow", loc);
  // integer powers: exact in float64 for the values integers can hold without overflow
  return alu(Op::Pow, cast(DType::Float64), e.cast(DType::Float64), "pow", loc).round(loc).cast(t);
}

TG_API Tensor Tensor::pow(double e, Loc loc) const {
  if (e == 2) return square(loc);
  if (e == 1) return *this;
  if (e == 0.5) return sqrt(loc);
  if (!is_float(dtype()) && e == std::floor(e)) { // an integer power keeps the integer dtype
    if (e < 0)
      detail::fail<dtype_error>("pow",
                                std::string("integers to negative integer powers are not "
                                            "allowed (") +
                                    dtype_name(dtype()) + " tensor to the power " +
                                    std::to_string(std::int64_t(e)) + ")",
                                loc);
    Tensor x = dtype() == DType::Bool ? cast(DType::Int64) : *this;
    return x.pow(full_on({}, Scalar::of_int(DType::Int64, std::int64_t(e)), DType::Int64, device()),
                 loc);
  }
  Tensor x = is_float(dtype()) ? *this : cast(DType::Float32);
  // as PyTorch's scalar powers: products, exact where the result is (a GPU's pow need not be)
  if (e == 3) return x.square(loc) * x;
  if (e == -1) return x.reciprocal(loc);
  if (e == -2) return x.square(loc).reciprocal(loc);
  return x.pow(full_on({}, e, x.dtype(), device()), loc);
}

TG_API Tensor Tensor::maximum(const Tensor& o, Loc loc) const {
  return alu(Op::Max, *this, o, "maximum", loc);
}

TG_API Tensor Tensor::minimum(const Tensor& o, Loc loc) const {
  DType t = detail::promote(*this, o);
  Tensor a = cast(t), b = o.cast(t);
  Tensor pick_a = alu(Op::CmpLt, a, b, "minimum", loc);
  if (is_float(t)) pick_a = pick_a.logical_or(a.isnan(loc), loc);
  return where(pick_a, a, b, loc);
}

TG_API Tensor Tensor::clamp(std::optional<double> lo, std::optional<double> hi, Loc loc) const {
  // PyTorch's promotion with the bounds as scalars: an integer tensor with a bound that is not an
  // integer is clamped as float32; bounds in the result's dtype (not via a float32 constant,
  // which rounds large int64 bounds)
  auto fractional = [](std::optional<double> b) { return b && *b != std::floor(*b); };
  Tensor r =
      !is_float(dtype()) && (fractional(lo) || fractional(hi)) ? cast(DType::Float32) : *this;
  if (lo) r = r.maximum(full_on({}, *lo, r.dtype(), device()), loc);
  if (hi) r = r.minimum(full_on({}, *hi, r.dtype(), device()), loc);
  return r;
}

TG_API Tensor where(const Tensor& cond, const Tensor& a, const Tensor& b,
                    std::source_location loc) {
  Shape s1, out;
  if (!detail::broadcast_shapes(cond.sym_shape(), a.sym_shape(), s1) ||
      !detail::broadcast_shapes(s1, b.sym_shape(), out))
    detail::fail<shape_error>("where",
                              "shapes " + detail::shape_of(cond) + ", " + detail::shape_of(a) +
                                  " and " + detail::shape_of(b) + " cannot be broadcast",
                              loc);
  if (cond.device() != a.device() || a.device() != b.device())
    detail::fail<device_error>("where", "tensors are on different devices", loc);
  DType t = detail::promote(a, b);
  Tensor c = cond.cast(DType::Bool).expand(out), x = a.cast(t).expand(out),
         y = b.cast(t).expand(out);
  return Tensor::make(Op::Where, t, out, {c.lazy(), x.lazy(), y.lazy()}, a.device());
}

// ---- reductions ----------------------------------------------------------------------------
TG_API Tensor Tensor::sum(std::vector<int> axes, bool keepdim, Loc loc) const {
  Tensor x = is_float(dtype()) ? *this
                               : cast(DType::Int64); // integer sums accumulate in int64, as PyTorch
  return x.reduce(Op::ReduceSum, std::move(axes), keepdim, "sum", loc);
}

TG_API Tensor Tensor::prod(std::vector<int> axes, bool keepdim, Loc loc) const {
  Tensor x = is_float(dtype()) ? *this : cast(DType::Int64);
  return x.reduce(Op::ReduceProd, std::move(axes), keepdim, "prod", loc);
}

} // namespace tg

namespace tg::detail {

TG_API void require_nonempty_axes(const Tensor& t, std::vector<int> axes, const char* op,
                                  std::source_location loc) {
  if (t.numel() != 0 || t.ndim() == 0) return;
  if (axes.empty())
    fail<shape_error>(op,
                      "reduction over all of the empty tensor " + shape_of(t) +
                          " has no identity (give an axis that is not empty)",
                      loc);
  for (int a : axes) {
    a = t.normalize_axis(a, op, loc);
    if (t.sym_shape()[std::size_t(a)].eval() == 0)
      fail<shape_error>(op,
                        "axis " + std::to_string(a) + " of " + shape_of(t) +
                            " is empty, and the reduction has no identity",
                        loc);
  }
}

} // namespace tg::detail

namespace tg {

TG_API Tensor Tensor::max(std::vector<int> axes, bool keepdim, Loc loc) const {
  detail::require_nonempty_axes(*this, axes, "max", loc);
  return reduce(Op::ReduceMax, std::move(axes), keepdim, "max", loc);
}

TG_API Tensor Tensor::min(std::vector<int> axes, bool keepdim, Loc loc) const {
  detail::require_nonempty_axes(*this, axes, "min", loc);
  if (is_float(dtype()))
    return -(-*this).reduce(Op::ReduceMax, std::move(axes), keepdim, "min", loc);
  if (dtype() == DType::Bool) return all(std::move(axes), keepdim, loc);
  // ~x reverses the order of any integer type
  return alu(Op::Xor,
             alu(Op::Xor, *this, const_like(-1), "min", loc)
                 .reduce(Op::ReduceMax, axes, keepdim, "min", loc),
             full_on({}, -1, dtype(), device()), "min", loc);
}

} // namespace tg

namespace tg::detail {

TG_API void check_axes(const Tensor& t, const std::vector<int>& axes, const char* op,
                       std::source_location loc) {
  for (int a : axes) t.normalize_axis(a, op, loc);
}

} // namespace tg::detail

namespace tg {

TG_API Tensor Tensor::mean(std::vector<int> axes, bool keepdim, Loc loc) const {
  detail::check_axes(*this, axes, "mean", loc);
  if (!is_float(dtype()))
    detail::fail<dtype_error>(
        "mean", std::string("needs a floating point tensor, got ") + dtype_name(dtype()), loc);
  Tensor s = sum(axes, keepdim, loc);
  double count = double(numel()) / double(std::max<std::int64_t>(s.numel(), 1));
  return s / count;
}

TG_API Tensor Tensor::any(std::vector<int> axes, bool keepdim, Loc loc) const {
  return cast(DType::Bool).reduce(Op::ReduceMax, std::move(axes), keepdim, "any", loc);
}

TG_API Tensor Tensor::all(std::vector<int> axes, bool keepdim, Loc loc) const {
  return logical_not(loc).any(std::move(axes), keepdim, loc).logical_not(loc);
}

TG_API Tensor Tensor::argmax(std::optional<int> axis, bool keepdim, Loc loc) const {
  detail::require_nonempty_axes(*this, axis ? std::vector<int>{*axis} : std::vector<int>{},
                                "argmax", loc);
  if (!axis) {
    Tensor r = flatten(0, -1, loc).argmax(0, false, loc);
    if (keepdim) return r.reshape(Shape(std::size_t(ndim()), SInt(1)), loc);
    return r;
  }
  int a = normalize_axis(*axis, "argmax", loc);
  if (ndim() == 0)
    return full_on({}, 0, DType::Int64, device()); // axis 0 of a 0-d tensor, as PyTorch
  SInt n = sym_shape()[std::size_t(a)];
  Tensor m = max(a, true, loc);
  Tensor hit = *this == m;
  if (is_float(dtype())) hit = hit.logical_or(isnan(loc), loc);
  // n - i for the first hit is the largest; take it and turn it back into i
  Shape idx_shape(std::size_t(ndim()), SInt(1));
  idx_shape[std::size_t(a)] = n;
  std::vector<std::int64_t> rev(std::size_t(n.eval()));
  for (std::size_t i = 0; i < rev.size(); ++i) rev[i] = std::int64_t(rev.size() - i);
  Tensor countdown = from_data(rev, idx_shape, TensorOptions(DType::Int64, device()), loc);
  Tensor best =
      where(hit, countdown, full_on({}, 0, DType::Int64, device()), loc).max(a, keepdim, loc);
  return full_on({}, double(n.eval()), DType::Int64, device()) - best;
}

TG_API Tensor Tensor::argmin(std::optional<int> axis, bool keepdim, Loc loc) const {
  detail::require_not_bool(*this, "argmin", loc);
  if (is_float(dtype())) return (-*this).argmax(axis, keepdim, loc);
  return alu(Op::Xor, *this, const_like(-1), "argmin", loc).argmax(axis, keepdim, loc);
}

TG_API Tensor Tensor::var(std::vector<int> axes, double correction, bool keepdim, Loc loc) const {
  detail::check_axes(*this, axes, "var", loc);
  Tensor x = as_float();
  Tensor m = x.mean(axes, true, loc);
  Tensor d = x - m;
  Tensor s = (d * d).sum(axes, keepdim, loc);
  double count = double(numel()) / double(std::max<std::int64_t>(s.numel(), 1));
  return s / std::max(count - correction, 0.0);
}

TG_API Tensor Tensor::std(std::vector<int> axes, double correction, bool keepdim, Loc loc) const {
  detail::check_axes(*this, axes, "std", loc);
  return var(std::move(axes), correction, keepdim, loc).sqrt(loc);
}

TG_API Tensor Tensor::logsumexp(std::vector<int> axes, bool keepdim, Loc loc) const {
  detail::check_axes(*this, axes, "logsumexp", loc);
  Tensor x = as_float();
  if (numel() == 0) return x.exp(loc).sum(axes, keepdim, loc).log(loc); // empty sums: log(0) = -inf
  Tensor m = x.max(axes, true, loc);
  Tensor safe = where(m.isinf(loc), m.const_like(0), m, loc); // all -inf rows give -inf, not nan
  Tensor r = (x - safe).exp(loc).sum(axes, true, loc).log(loc) + safe;
  if (keepdim) return r;
  return r.reshape(x.max(axes, false, loc).sym_shape(), loc);
}

} // namespace tg
