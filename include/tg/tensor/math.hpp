#pragma once
// More elementwise math, as torch.*: erf, log1p, expm1, hyperbolic and inverse trigonometric
// functions, atan2, hypot, lerp, remainder / fmod / floor_divide, bitwise ops, and the vector
// norm. Each is composed from tg's primitives (so it fuses and runs on every device); where the
// composition that gives an accurate value would differentiate badly (log1p's rounding trick),
// its first derivative is attached exactly (detail::with_derivatives).
#include "print.hpp"

namespace tg {

namespace detail {
/// Whether each element is neither infinite nor NaN.
TG_API Tensor finite(const Tensor& x);
/// `value`, whose derivative with respect to each x is the matching d (first derivatives only;
/// where x or d is not finite, the gradient is 0). value itself is not differentiated.
TG_API Tensor with_derivatives(const Tensor& value,
                               std::initializer_list<std::pair<Tensor, Tensor>> x_and_d);
TG_API Tensor scalar_like(const Tensor& x, double v);
/// atan for |x| reduced as in Cephes (atanf for float32 and narrower, atan for float64).
TG_API Tensor atan_value(const Tensor& x);
/// erf(x) for |x| < 2 by its Taylor series, and erfc(x) for x >= 2 by its continued fraction,
/// with enough terms for the dtype (float64: about 1e-15 relative; float32 and narrower: 1e-8).
TG_API Tensor erf_series(const Tensor& x);
TG_API Tensor erfc_fraction(const Tensor& x);
/// erf(x) and erfc(x) of one input (values only).
TG_API std::pair<Tensor, Tensor> erf_erfc(const Tensor& x);
TG_API void require_integral(const Tensor& a, const Tensor& b, const char* op,
                             std::source_location loc);
/// Both operands in their promoted dtype, broadcast (shape errors name op).
TG_API std::pair<Tensor, Tensor> promoted(const Tensor& a, const Tensor& b, const char* op,
                                          std::source_location loc);
} // namespace detail

namespace detail { // values only (x detached): each is the other's derivative
TG_API Tensor sinh_value(const Tensor& x);
TG_API Tensor cosh_value(const Tensor& x);
} // namespace detail
namespace detail {
/// C's fmod of floats: a - b trunc(a / b) in float64 (exact once rounded for narrower floats);
/// a finite a over an infinite b is a.
TG_API Tensor float_fmod(const Tensor& a, const Tensor& b);
/// r (a remainder with a's sign) moved to b's side where it is nonzero and the signs differ.
TG_API Tensor to_divisor_side(const Tensor& r, const Tensor& b);
} // namespace detail

// ---- free-function spellings and operators, as torch.* and Python's operators ----------------
#define TG_BINARY_FN(name)                                                                         \
  inline Tensor name(const Tensor& a, const Tensor& b,                                             \
                     std::source_location loc = std::source_location::current()) {                 \
    return a.name(b, loc);                                                                         \
  }                                                                                                \
  template <Arithmetic S>                                                                          \
  Tensor name(const Tensor& a, S b, std::source_location loc = std::source_location::current()) {  \
    return a.name(detail::scalar_for(a, b), loc);                                                  \
  }
TG_BINARY_FN(remainder)
TG_BINARY_FN(fmod)
TG_BINARY_FN(floor_divide)
TG_BINARY_FN(atan2)
TG_BINARY_FN(hypot)
TG_BINARY_FN(bitwise_and)
TG_BINARY_FN(bitwise_or)
TG_BINARY_FN(bitwise_xor)
TG_BINARY_FN(bitwise_left_shift)
TG_BINARY_FN(bitwise_right_shift)
#undef TG_BINARY_FN

#define TG_BINARY_OPERATOR(OP, name)                                                               \
  inline Tensor operator OP(TensorArg a, TensorArg b) { return a.t.name(b.t, a.loc); }             \
  template <Arithmetic S> Tensor operator OP(TensorArg a, S b) {                                   \
    return a.t.name(detail::scalar_for(a.t, b), a.loc);                                            \
  }                                                                                                \
  template <Arithmetic S> Tensor operator OP(S a, TensorArg b) {                                   \
    return detail::scalar_for(b.t, a).name(b.t, b.loc);                                            \
  }
TG_BINARY_OPERATOR(%, remainder)
TG_BINARY_OPERATOR(&, bitwise_and)
TG_BINARY_OPERATOR(|, bitwise_or)
TG_BINARY_OPERATOR(^, bitwise_xor)
TG_BINARY_OPERATOR(<<, bitwise_left_shift)
TG_BINARY_OPERATOR(>>, bitwise_right_shift)
#undef TG_BINARY_OPERATOR
TG_API Tensor operator~(TensorArg a);

/// The outer product of two 1-D tensors: [n] x [m] -> [n, m].
TG_API Tensor outer(const Tensor& a, const Tensor& b,
                    std::source_location loc = std::source_location::current());

namespace linalg {
/// torch.linalg.vector_norm.
TG_API Tensor vector_norm(const Tensor& x, double ord = 2, std::vector<int> dim = {},
                          bool keepdim = false,
                          std::source_location loc = std::source_location::current());
} // namespace linalg

} // namespace tg
