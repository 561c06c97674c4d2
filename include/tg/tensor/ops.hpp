#pragma once
// Every op of the run-time front end, composed from the primitives (tinygrad's approach: a small
// primitive set keeps renderers and gradient rules small).
#include "core.hpp"

namespace tg {

namespace detail {
inline constexpr double kLog2E = 1.4426950408889634, kLn2 = 0.6931471805599453,
                        kPi = 3.141592653589793;
TG_API void require_not_bool(const Tensor& t, const char* op, std::source_location loc);
} // namespace detail

/// Elementwise choice: cond ? a : b, broadcast together.
TG_API Tensor where(const Tensor& cond, const Tensor& a, const Tensor& b,
                    std::source_location loc = std::source_location::current());

// ---- operators -----------------------------------------------------------------------------
TG_API Tensor operator+(TensorArg a, TensorArg b);
TG_API Tensor operator*(TensorArg a, TensorArg b);
TG_API Tensor operator-(TensorArg a);
TG_API Tensor operator-(TensorArg a, TensorArg b);
/// True division: integer inputs give float32, as in PyTorch.
TG_API Tensor operator/(TensorArg a, TensorArg b);
TG_API Tensor operator<(TensorArg a, TensorArg b);
TG_API Tensor operator>(TensorArg a, TensorArg b);
TG_API Tensor operator==(TensorArg a, TensorArg b);
TG_API Tensor operator!=(TensorArg a, TensorArg b);
TG_API Tensor operator<=(TensorArg a, TensorArg b);
TG_API Tensor operator>=(TensorArg a, TensorArg b);
TG_API Tensor operator!(TensorArg a);
TG_API Tensor operator&&(TensorArg a, TensorArg b);
TG_API Tensor operator||(TensorArg a, TensorArg b);

namespace detail {
/// A scalar operand as a 0-d constant of the dtype PyTorch would give it next to `t`.
template <class S> Tensor scalar_for(const Tensor& t, S v) {
  DType k = scalar_kind<S>();
  DType d = promote_scalar(t.dtype(), k);
  if constexpr (std::is_integral_v<S> && !std::is_same_v<S, bool>) // exact: no trip through double
    if (!is_float(d))
      return Tensor::full_on({}, Scalar::of_int(d, static_cast<std::int64_t>(v)), d, t.device());
  return Tensor::full_on({}, double(v), d, t.device());
}
} // namespace detail

#define TG_SCALAR_OPERATOR(OP)                                                                     \
  template <Arithmetic S> Tensor operator OP(TensorArg a, S b) {                                   \
    Tensor s = detail::scalar_for(a.t, b);                                                         \
    return TensorArg(a.t, a.loc) OP TensorArg(detail::made_at(s, #OP, a.loc), a.loc);              \
  }                                                                                                \
  template <Arithmetic S> Tensor operator OP(S a, TensorArg b) {                                   \
    Tensor s = detail::scalar_for(b.t, a);                                                         \
    return TensorArg(detail::made_at(s, #OP, b.loc), b.loc) OP TensorArg(b.t, b.loc);              \
  }
TG_SCALAR_OPERATOR(+)
TG_SCALAR_OPERATOR(-)
TG_SCALAR_OPERATOR(*)
TG_SCALAR_OPERATOR(/)
TG_SCALAR_OPERATOR(<)
TG_SCALAR_OPERATOR(>)
TG_SCALAR_OPERATOR(<=)
TG_SCALAR_OPERATOR(>=)
TG_SCALAR_OPERATOR(==)
TG_SCALAR_OPERATOR(!=)
#undef TG_SCALAR_OPERATOR

TG_API Tensor& operator+=(Tensor& a, TensorArg b);
TG_API Tensor& operator-=(Tensor& a, TensorArg b);
TG_API Tensor& operator*=(Tensor& a, TensorArg b);
TG_API Tensor& operator/=(Tensor& a, TensorArg b);
template <Arithmetic S> Tensor& operator+=(Tensor& a, S b) { return a = a + b; }
template <Arithmetic S> Tensor& operator-=(Tensor& a, S b) { return a = a - b; }
template <Arithmetic S> Tensor& operator*=(Tensor& a, S b) { return a = a * b; }
template <Arithmetic S> Tensor& operator/=(Tensor& a, S b) { return a = a / b; }

template <Arithmetic S>
Tensor where(const Tensor& cond, const Tensor& a, S b,
             std::source_location loc = std::source_location::current()) {
  return where(cond, a, detail::scalar_for(a, b), loc);
}
template <Arithmetic S>
Tensor where(const Tensor& cond, S a, const Tensor& b,
             std::source_location loc = std::source_location::current()) {
  return where(cond, detail::scalar_for(b, a), b, loc);
}

namespace detail {
/// max, min and argmax have no identity: an axis they reduce must not be empty (an empty tensor
/// reduced along another axis gives an empty result, as in PyTorch).
TG_API void require_nonempty_axes(const Tensor& t, std::vector<int> axes, const char* op,
                                  std::source_location loc);
} // namespace detail

namespace detail {
/// Checks the axes a composite op reduces under its own name (they are checked again by the
/// reductions it is made of).
TG_API void check_axes(const Tensor& t, const std::vector<int>& axes, const char* op,
                       std::source_location loc);
} // namespace detail

} // namespace tg
