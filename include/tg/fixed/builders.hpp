#pragma once
// The builders of the static front end. Each op is composed from primitive nodes exactly as the
// run-time front end composes it in tensor/ops.hpp and tensor/movement.hpp (same primitives, same
// order, same elisions), so that graph_of(expr) is the Graph that tg::schedule() shows for the
// same computation on tg::Tensor. Keep the two in step: tests/test_fixed.cpp compares them node by
// node.
//
// Checks are not made here: the public methods (base.hpp) and operators (operators.hpp) make them,
// with one static_assert each, before calling a builder.
#include <source_location>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>

#include "../errors.hpp"
#include "shape_plans.hpp"
#include "tensor.hpp"

namespace tg {
namespace fx {

inline constexpr double kLog2E = 1.4426950408889634, kLn2 = 0.6931471805599453,
                        kPi = 3.141592653589793;

// ops<>::matmul builds it (matmul.hpp), and its primitive() is built by ops<>: each is used by the
// other only inside templates.
template <class A, class B> struct matmul_node;

/// A node whose values are stored (a fixed tensor, an index constant) or a view of one: what the
/// run-time front end reads without a kernel (detail::is_materialized).
template <class E> inline constexpr bool is_stored = false;
template <class F> inline constexpr bool is_stored<leaf<F>> = true;
template <class F> inline constexpr bool is_stored<owned<F>> = true;
template <class F> inline constexpr bool is_stored<kept<F>> = true;
template <index_kind K, class S> inline constexpr bool is_stored<index_leaf<K, S>> = true;
template <class C, class... M> inline constexpr bool is_stored<view<C, M...>> = is_stored<C>;

/// detail::checked_index's error: an index outside [-n, n), naming the op and the call site. Not
/// constexpr: in a constant expression, reaching it is the compile error (its name and Op show in
/// the diagnostic).
template <class Op, class S>
[[noreturn]] void index_out_of_range(const char* op, std::int64_t index, std::size_t d,
                                     const std::source_location& loc) {
  std::string shape = "[";
  for (std::size_t i = 0; i < S::dims.size(); ++i)
    shape += (i ? ", " : "") + std::to_string(S::dims[i]);
  tg::detail::fail<index_error>(op,
                                "index " + std::to_string(index) + " is out of range for dim " +
                                    std::to_string(d) + " of " + shape + "]",
                                loc);
}

template <class> struct ops {
  // ---- operands
  // ----------------------------------------------------------------------------------
  template <class E> static constexpr auto node(E&& e) {
    using R = std::remove_cvref_t<E>;
    if constexpr (is_fixed<R>) {
      if constexpr (std::is_lvalue_reference_v<E>)
        return leaf<R>(e);
      else
        return owned<R>(std::move(e));
    } else if constexpr (scalar<R>)
      return constant<dtype_of<R>>(Scalar::of(dtype_of<R>, double(e)));
    else
      return R(std::forward<E>(e));
  }
  /// An operand next to `other`: a scalar becomes a constant of the dtype PyTorch would give it.
  template <class E, class O> static constexpr auto operand(E&& e, const O& other) {
    if constexpr (scalar<E>)
      return scalar_for(other, e);
    else
      return node(std::forward<E>(e));
  }
  static constexpr error_expr error() { return {}; }

  // ---- mechanics (Tensor::move, reshape, expand, cast, alu, reduce, full_on)
  // -----------------------
  /// A movement op; views of views compose into one view (one Graph node), as Tensor::move does.
  template <class M, class E> static constexpr auto move(const E& e) {
    using Out = typename M::template out<typename E::shape_type>;
    if constexpr (std::is_same_v<M, mv::reshape<Out>> &&
                  std::is_same_v<Out, typename E::shape_type>)
      return e;
    else if constexpr (is_view<E>)
      return compose<M>(e);
    else
      return view<E, M>(e);
  }
  template <class M, class C, class... Ms> static constexpr auto compose(const view<C, Ms...>& v) {
    return view<C, Ms..., M>(v.c);
  }
  template <class S, class E> static constexpr auto reshape_to(const E& e) {
    return move<mv::reshape<S>>(e);
  }
  template <class S, class E> static constexpr auto expand_to(const E& e) {
    using In = typename E::shape_type;
    constexpr std::size_t lead = S::rank - In::rank;
    if constexpr (lead == 0) {
      if constexpr (std::is_same_v<In, S>)
        return e;
      else
        return move<mv::expand<S>>(e);
    } else {
      using Src = shape_from<expand_src_dims<S, In>>;
      auto r = reshape_to<Src>(e);
      if constexpr (std::is_same_v<Src, S>)
        return r;
      else
        return move<mv::expand<S>>(r);
    }
  }
  /// A cast; casts made at different places of the builders are different nodes (as each
  /// Tensor::cast call makes a node), copies of one cast are one.
  template <DType D, class E>
  static constexpr auto cast_to(const E& e,
                                std::source_location loc = std::source_location::current()) {
    if constexpr (D == E::dtype)
      return e;
    else
      return cast_node<D, E>(e, site(loc));
  }
  static constexpr int site(const std::source_location& loc) {
    return int(loc.line() * 512 + loc.column());
  }
  template <DType D, class E> static constexpr auto bitcast_to(const E& e) {
    if constexpr (D == E::dtype)
      return e;
    else
      return bitcast_node<D, E>(e);
  }
  template <class E>
  static constexpr auto as_float(const E& e,
                                 std::source_location loc = std::source_location::current()) {
    if constexpr (is_float(E::dtype))
      return e;
    else
      return cast_to<DType::Float32>(e, loc);
  }
  /// A unary op; made at different places of the builders, they are different nodes (as each
  /// Tensor call makes one), copies of one are one.
  template <Op O, class E>
  static constexpr auto unary_op(const E& e,
                                 std::source_location loc = std::source_location::current()) {
    return unary<O, E>(e, site(loc));
  }
  /// Tensor::alu(op, a, b): broadcast, promote, cast, expand.
  template <Op O, class A, class B> static constexpr auto alu(const A& a0, const B& b0) {
    using Out = broadcast_shape<typename A::shape_type, typename B::shape_type>;
    constexpr DType t = promote(A::dtype, A::rank == 0, B::dtype, B::rank == 0);
    auto a = expand_to<Out>(cast_to<t>(a0));
    auto b = expand_to<Out>(cast_to<t>(b0));
    return binary<O, decltype(a), decltype(b)>(a, b);
  }
  /// Tensor::full_on: a Const, reshaped to ones and expanded (one composed view).
  template <class S, DType D> static constexpr auto full(double v) {
    constant<D> c(Scalar::of(D, v));
    if constexpr (S::rank == 0)
      return c;
    else {
      return move<mv::expand<S>>(move<mv::reshape<shape_from<ones_dims<S::rank>>>>(c));
    }
  }
  template <class E> static constexpr auto const_like(const E&, double v) {
    return full<typename E::shape_type, E::dtype>(v);
  }
  /// Marks a constant (or a view of one) as one value used more than once by its builder, as the
  /// run-time builder uses one Tensor twice: its copies are one node (graph.hpp).
  template <class E> static constexpr E share(E e) {
    if constexpr (is_constant<E>)
      e.share = 1;
    else if constexpr (is_view<E>) {
      if constexpr (is_constant<typename E::child_type>) {
        e.share = 1;
        e.c.share = 1;
      }
    }
    return e;
  }
  template <DType D, class E> static constexpr auto const_like(const E&, double v) {
    return full<typename E::shape_type, D>(v);
  }
  /// detail::scalar_for: a 0-d constant of the dtype PyTorch gives a Python scalar next to t.
  template <class E, class S> static constexpr auto scalar_for(const E&, S v) {
    constexpr DType d = promote_scalar(E::dtype, scalar_kind<S>());
    return constant<d>(Scalar::of(d, double(v)));
  }
  /// Tensor::reduce(op, axes, keepdim).
  template <Op O, bool Keep, int... Ax, class E> static constexpr auto reduce(const E& e) {
    using NA = norm_axes<E::rank, Ax...>;
    auto reduced = [&]<std::size_t... I>(std::index_sequence<I...>) {
      if constexpr (NA::count == 0)
        return e;
      else
        return reduce_node<O, E, NA::value[I]...>(e);
    };
    auto res = reduced(std::make_index_sequence<NA::count>{});
    if constexpr (Keep)
      return res;
    else {
      return reshape_to<shape_from<drop_axes_dims<typename E::shape_type, NA>>>(res);
    }
  }

  // ---- operators (tensor/ops.hpp)
  // ----------------------------------------------------------------
  template <class A, class B> static constexpr auto add(const A& a, const B& b) {
    return alu<Op::Add>(a, b);
  }
  template <class A, class B> static constexpr auto mul(const A& a, const B& b) {
    return alu<Op::Mul>(a, b);
  }
  template <class E>
  static constexpr auto neg(const E& e,
                            std::source_location loc = std::source_location::current()) {
    return unary_op<Op::Neg>(e, loc);
  }
  template <class A, class B> static constexpr auto sub(const A& a, const B& b) {
    constexpr DType t = promote(A::dtype, A::rank == 0, B::dtype, B::rank == 0);
    return alu<Op::Add>(cast_to<t>(a), neg(cast_to<t>(b)));
  }
  template <class A, class B> static constexpr auto div(const A& a, const B& b) {
    constexpr DType t0 = promote(A::dtype, A::rank == 0, B::dtype, B::rank == 0),
                    t = is_float(t0) ? t0 : DType::Float32;
    return alu<Op::Div>(cast_to<t>(a), cast_to<t>(b));
  }
  template <class A, class B> static constexpr auto lt(const A& a, const B& b) {
    return alu<Op::CmpLt>(a, b);
  }
  template <class A, class B> static constexpr auto gt(const A& a, const B& b) {
    return alu<Op::CmpLt>(b, a);
  }
  template <class A, class B> static constexpr auto eq(const A& a, const B& b) {
    return alu<Op::CmpEq>(a, b);
  }
  template <class A, class B> static constexpr auto ne(const A& a, const B& b) {
    return alu<Op::CmpNe>(a, b);
  }
  template <class A, class B> static constexpr auto le(const A& a, const B& b) {
    return alu<Op::Or>(alu<Op::CmpLt>(a, b), alu<Op::CmpEq>(a, b));
  }
  template <class A, class B> static constexpr auto ge(const A& a, const B& b) {
    return alu<Op::Or>(alu<Op::CmpLt>(b, a), alu<Op::CmpEq>(a, b));
  }
  // tensor OP python scalar, python scalar OP tensor
  template <class E> static constexpr auto add_s(const E& e, double v) {
    return add(e, scalar_for(e, v));
  }
  template <class E> static constexpr auto sadd(double v, const E& e) {
    return add(scalar_for(e, v), e);
  }
  template <class E> static constexpr auto sub_s(const E& e, double v) {
    return sub(e, scalar_for(e, v));
  }
  template <class E> static constexpr auto ssub(double v, const E& e) {
    return sub(scalar_for(e, v), e);
  }
  template <class E> static constexpr auto mul_s(const E& e, double v) {
    return mul(e, scalar_for(e, v));
  }
  template <class E> static constexpr auto smul(double v, const E& e) {
    return mul(scalar_for(e, v), e);
  }
  template <class E> static constexpr auto div_s(const E& e, double v) {
    return div(e, scalar_for(e, v));
  }
  template <class E> static constexpr auto gt_s(const E& e, double v) {
    return gt(e, scalar_for(e, v));
  }
  template <class E> static constexpr auto lt_s(const E& e, double v) {
    return lt(e, scalar_for(e, v));
  }
  template <class E> static constexpr auto eq_s(const E& e, double v) {
    return eq(e, scalar_for(e, v));
  }

  // ---- elementwise
  // -------------------------------------------------------------------------------
  template <class E> static constexpr auto abs(const E& e) {
    if constexpr (is_unsigned(E::dtype))
      return e;
    else if constexpr (is_float(E::dtype)) { // as Tensor::abs: a zero becomes +0 by a select
      auto m = maximum(neg(e), e);
      return where3(eq(m, const_like(e, 0)), const_like(e, 0), m);
    } else {
      return maximum(neg(e), e);
    }
  }
  template <class E> static constexpr auto sign(const E& e) {
    auto zero = share(const_like(e, 0));
    return sub(cast_to<E::dtype>(alu<Op::CmpLt>(zero, e)),
               cast_to<E::dtype>(alu<Op::CmpLt>(e, zero)));
  }
  template <class E> static constexpr auto exp2(const E& e) {
    return unary_op<Op::Exp2>(as_float(e));
  }
  template <class E> static constexpr auto exp(const E& e) {
    return unary_op<Op::Exp2>(mul_s(as_float(e), kLog2E));
  }
  template <class E> static constexpr auto log2(const E& e) {
    return unary_op<Op::Log2>(as_float(e));
  }
  template <class E> static constexpr auto log(const E& e) {
    return mul_s(unary_op<Op::Log2>(as_float(e)), kLn2);
  }
  template <class E> static constexpr auto sqrt(const E& e) {
    return unary_op<Op::Sqrt>(as_float(e));
  }
  template <class E> static constexpr auto reciprocal(const E& e) {
    return unary_op<Op::Recip>(as_float(e));
  }
  template <class E> static constexpr auto rsqrt(const E& e) { return reciprocal(sqrt(e)); }
  template <class E> static constexpr auto sin(const E& e) {
    return unary_op<Op::Sin>(as_float(e));
  }
  template <class E> static constexpr auto cos(const E& e) {
    return ssub(1.0, smul(2.0, square(unary_op<Op::Sin>(mul_s(as_float(e), 0.5)))));
  }
  template <class E> static constexpr auto tan(const E& e) { return div(sin(e), cos(e)); }
  template <class E> static constexpr auto sigmoid(const E& e) {
    return reciprocal(sadd(1.0, exp(neg(as_float(e)))));
  }
  template <class E> static constexpr auto tanh(const E& e) {
    return sub_s(smul(2.0, sigmoid(smul(2.0, as_float(e)))), 1.0);
  }
  template <class E> static constexpr auto relu(const E& e) { return maximum(e, const_like(e, 0)); }
  template <class E> static constexpr auto leaky_relu(const E& e, double slope) {
    auto x = as_float(e);
    return where3(gt_s(x, 0.0), x, mul_s(x, slope));
  }
  template <class E> static constexpr auto gelu_tanh(const E& e) {
    auto x = as_float(e);
    return mul(smul(0.5, x), sadd(1.0, tanh(smul(0.7978845608028654,
                                                 add(x, mul(mul(smul(0.044715, x), x), x))))));
  }
  template <class E> static constexpr auto gelu(const E& e) {
    auto x = as_float(e);
    if constexpr (decltype(x)::dtype == DType::Float64) // erf itself (composite.hpp)
      return mul(smul(0.5, x), sadd(1.0, composites<E>::erf(mul_s(x, 0.7071067811865476))));
    else {
      auto z = mul_s(x, 0.7071067811865476);
      auto az = abs(z);
      auto t = reciprocal(sadd(1.0, smul(0.3275911, az)));
      auto poly = mul(
          t, sadd(0.254829592,
                  mul(t, sadd(-0.284496736,
                              mul(t, sadd(1.421413741,
                                          mul(t, sadd(-1.453152027, mul_s(t, 1.061405429)))))))));
      auto erf_abs = ssub(1.0, mul(poly, exp(neg(mul(az, az)))));
      auto erf = where3(lt_s(z, 0.0), neg(erf_abs), erf_abs);
      return mul(smul(0.5, x), sadd(1.0, erf));
    }
  }
  template <class E> static constexpr auto silu(const E& e) { return mul(as_float(e), sigmoid(e)); }
  template <class E> static constexpr auto softplus(const E& e, double beta, double threshold) {
    auto bx = mul_s(as_float(e), beta);
    auto soft = div_s(add(relu(bx), log(sadd(1.0, exp(neg(abs(bx)))))), beta);
    return where3(gt_s(bx, threshold), as_float(e), soft);
  }
  template <class E> static constexpr auto square(const E& e) { return mul(e, e); }
  template <class E>
  static constexpr auto trunc(const E& e,
                              std::source_location loc = std::source_location::current()) {
    if constexpr (is_float(E::dtype))
      return unary_op<Op::Trunc>(e, loc);
    else
      return e;
  }
  template <class E> static constexpr auto floor(const E& e) {
    if constexpr (!is_float(E::dtype))
      return e;
    else {
      auto t = trunc(e);
      return where3(lt(e, t), sub_s(t, 1.0), t);
    }
  }
  template <class E> static constexpr auto ceil(const E& e) {
    if constexpr (!is_float(E::dtype))
      return e;
    else {
      auto t = trunc(e);
      return where3(gt(e, t), add_s(t, 1.0), t);
    }
  }
  /// Round half to even, as PyTorch (and as Tensor::round: from trunc, so that no step rounds).
  template <class E> static constexpr auto round(const E& e) {
    if constexpr (!is_float(E::dtype))
      return e;
    else {
      auto t = trunc(e);
      auto frac = sub(e, t);
      auto af = abs(frac);
      auto odd = ne(mul_s(trunc(mul_s(t, 0.5)), 2.0), t);
      auto away = logical_or(gt_s(af, 0.5), logical_and(eq_s(af, 0.5), odd));
      return where3(away, add(t, where3(lt_s(frac, 0.0), const_like(e, -1), const_like(e, 1))), t);
    }
  }
  template <class E> static constexpr auto isnan(const E& e) {
    if constexpr (!is_float(E::dtype))
      return full<typename E::shape_type, DType::Bool>(0);
    else
      return alu<Op::CmpNe>(e, e);
  }
  template <class E> static constexpr auto isinf(const E& e) {
    if constexpr (!is_float(E::dtype))
      return full<typename E::shape_type, DType::Bool>(0);
    else
      return logical_or(eq(e, scalar_for(e, cmath::inf)), eq(e, scalar_for(e, -cmath::inf)));
  }
  template <class E> static constexpr auto logical_not(const E& e) {
    return alu<Op::CmpEq>(cast_to<DType::Bool>(e), const_like<DType::Bool>(e, 0));
  }
  template <class A, class B> static constexpr auto logical_and(const A& a, const B& b) {
    return alu<Op::And>(cast_to<DType::Bool>(a), cast_to<DType::Bool>(b));
  }
  template <class A, class B> static constexpr auto logical_or(const A& a, const B& b) {
    return alu<Op::Or>(cast_to<DType::Bool>(a), cast_to<DType::Bool>(b));
  }
  template <class A, class B> static constexpr auto logical_xor(const A& a, const B& b) {
    return alu<Op::Xor>(cast_to<DType::Bool>(a), cast_to<DType::Bool>(b));
  }
  // float functions of tensor/math.hpp, as composed there (their values; no gradients here)
  /// Tensor::log1p: log(u) x / (u - 1) with u = 1 + x (x where u rounds to 1).
  template <class E> static constexpr auto log1p(const E& e) {
    auto x = as_float(e);
    constexpr DType t = decltype(x)::dtype;
    auto u = sadd(1.0, x);
    auto one = full<shape<>, t>(1);
    auto exact = eq(u, one);
    auto d = where3(exact, one, sub_s(u, 1.0));
    auto v = where3(isinf(u), u, where3(exact, x, mul(log(u), div(x, d))));
    return where3(lt_s(x, -1.0), full<shape<>, t>(cmath::nan), v);
  }
  /// Tensor::expm1: (u - 1) x / log(u) with u = e^x near x = 0, u - 1 elsewhere.
  template <class E> static constexpr auto expm1(const E& e) {
    auto x = as_float(e);
    constexpr DType t = decltype(x)::dtype;
    auto u = exp(x);
    auto one = full<shape<>, t>(1);
    auto exact = eq(u, one);
    auto l = where3(exact, one, log(u));
    auto far = logical_or(lt_s(u, 0.5), gt_s(u, 2.0));
    auto um1 = sub_s(u, 1.0);
    return where3(far, um1, where3(exact, x, mul(um1, div(x, l))));
  }
  /// Tensor::sinh: (expm1(x) - expm1(-x)) / 2.
  template <class E> static constexpr auto sinh(const E& e) {
    auto x = as_float(e);
    return mul_s(sub(expm1(x), expm1(neg(x))), 0.5);
  }
  /// Tensor::cosh: (e + 1 / e) / 2 with e = exp(|x|).
  template <class E> static constexpr auto cosh(const E& e) {
    auto x = exp(abs(as_float(e)));
    return mul_s(add(x, reciprocal(x)), 0.5);
  }
  /// Tensor::asinh: sign(x) log1p(|x| + x^2 / (1 + sqrt(1 + x^2))), log(|x|) + ln 2 past 2^28.
  template <class E> static constexpr auto asinh(const E& e) {
    auto x = as_float(e);
    auto ax = abs(x);
    auto ax2 = mul(ax, ax);
    auto small = log1p(add(ax, div(ax2, sadd(1.0, sqrt(sadd(1.0, ax2))))));
    auto a = where3(gt_s(ax, 268435456.0), add_s(log(ax), kLn2), small);
    return where3(lt_s(x, 0.0), neg(a), where3(eq_s(x, 0.0), x, a));
  }
  /// Tensor::acosh: log1p(t + sqrt(t (t + 2))) with t = x - 1, log(x) + ln 2 past 2^28.
  template <class E> static constexpr auto acosh(const E& e) {
    auto x = as_float(e);
    auto t = sub_s(x, 1.0);
    auto small = log1p(add(t, sqrt(mul(t, add_s(t, 2.0)))));
    auto v = where3(gt_s(x, 268435456.0), add_s(log(x), kLn2), small);
    return where3(lt_s(x, 1.0), full<shape<>, decltype(v)::dtype>(cmath::nan), v);
  }
  /// Tensor::atanh: log1p(2x / (1 - x)) / 2.
  template <class E> static constexpr auto atanh(const E& e) {
    auto x = as_float(e);
    auto v = smul(0.5, log1p(div(smul(2.0, x), ssub(1.0, x))));
    return where3(gt_s(abs(x), 1.0), full<shape<>, decltype(v)::dtype>(cmath::nan), v);
  }
  /// Tensor::hypot: m sqrt((a / m)^2 + (b / m)^2) with m = max(|a|, |b|).
  template <class A, class B> static constexpr auto hypot(const A& a0, const B& b0) {
    constexpr DType t = promote(A::dtype, A::rank == 0, B::dtype, B::rank == 0);
    auto a = as_float(cast_to<t>(a0));
    auto b = as_float(cast_to<t>(b0));
    auto m = maximum(abs(a), abs(b));
    auto zero = eq_s(m, 0.0);
    auto safe = where3(zero, full<shape<>, decltype(m)::dtype>(1), m);
    auto ra = div(a, safe);
    auto rb = div(b, safe);
    auto v = where3(zero, m, mul(m, sqrt(add(mul(ra, ra), mul(rb, rb)))));
    return where3(isinf(m), m, v);
  }

  // remainders and floor division (tensor/math.hpp), of the promoted operands: integers by C's
  // % and / (toward zero), floats in float64 as a - b trunc(a / b) (a where b is infinite and a
  // finite)
  template <class A, class B> static constexpr auto fmod(const A& a0, const B& b0) {
    constexpr DType t = promote(A::dtype, A::rank == 0, B::dtype, B::rank == 0);
    if constexpr (!is_float(t))
      return alu<Op::Mod>(cast_to<t>(a0), cast_to<t>(b0));
    else {
      auto a = cast_to<DType::Float64>(cast_to<t>(a0));
      auto b = cast_to<DType::Float64>(cast_to<t>(b0));
      auto r = sub(a, mul(b, trunc(div(a, b))));
      auto finite_a = lt(abs(a), full<shape<>, DType::Float64>(cmath::inf));
      return cast_to<t>(where3(logical_and(isinf(b), finite_a), a, r));
    }
  }
  /// detail::to_divisor_side: r + b where r is not zero and its sign is not b's.
  template <class R, class B> static constexpr auto to_divisor_side(const R& r, const B& b) {
    auto zero = full<shape<>, R::dtype>(0);
    return where3(logical_and(ne(r, zero), logical_xor(lt(r, zero), lt(b, zero))), add(r, b), r);
  }
  template <class A, class B> static constexpr auto remainder(const A& a, const B& b0) {
    constexpr DType t = promote(A::dtype, A::rank == 0, B::dtype, B::rank == 0);
    return to_divisor_side(fmod(a, b0), cast_to<t>(b0));
  }
  /// Tensor::floor_divide: floats as PyTorch, (a - fmod(a, b)) / b adjusted, so that a == b *
  /// floor_divide(a, b) + remainder(a, b) where both are finite; integers from / and %.
  template <class A, class B> static constexpr auto floor_divide(const A& a0, const B& b0) {
    constexpr DType t = promote(A::dtype, A::rank == 0, B::dtype, B::rank == 0);
    auto a = cast_to<t>(a0);
    auto b = cast_to<t>(b0);
    auto zero = full<shape<>, t>(0);
    if constexpr (is_float(t)) {
      auto mod = fmod(a, b);
      auto div0 = div(sub(a, mod), b);
      auto d = where3(logical_and(ne(mod, zero), logical_xor(lt(b, zero), lt(mod, zero))),
                      sub_s(div0, 1.0), div0);
      auto fl0 = floor(d);
      auto fl = where3(gt_s(sub(d, fl0), 0.5), add_s(fl0, 1.0), fl0);
      auto q = div(a, b);
      auto signed_zero = where3(lt(q, zero), full<shape<>, t>(-0.0), zero);
      return where3(eq(b, zero), q, where3(eq(d, zero), signed_zero, fl));
    } else {
      auto q = alu<Op::Div>(a, b);
      auto r = alu<Op::Mod>(a, b);
      auto down = logical_and(ne(r, zero), logical_xor(lt(r, zero), lt(b, zero)));
      return where3(down, sub(q, full<shape<>, t>(1)), q);
    }
  }

  // bitwise ops (tensor/math.hpp): integers and bool, promoted; ~ of bool is logical_not
  template <class A, class B> static constexpr auto bitwise_and(const A& a, const B& b) {
    return alu<Op::And>(a, b);
  }
  template <class A, class B> static constexpr auto bitwise_or(const A& a, const B& b) {
    return alu<Op::Or>(a, b);
  }
  template <class A, class B> static constexpr auto bitwise_xor(const A& a, const B& b) {
    return alu<Op::Xor>(a, b);
  }
  /// Tensor::bitwise_left_shift: a * 2^b, 2^b through float64 as an integer of the promoted dtype.
  template <class A, class B> static constexpr auto bitwise_left_shift(const A& a, const B& b) {
    constexpr DType t = promote(A::dtype, A::rank == 0, B::dtype, B::rank == 0);
    auto p = cast_to<t>(cast_to<DType::Int64>(exp2(cast_to<DType::Float64>(cast_to<t>(b)))));
    return mul(cast_to<t>(a), p);
  }
  /// Tensor::bitwise_right_shift: floor(a / 2^b) in int64 (arithmetic for signed types).
  template <class A, class B> static constexpr auto bitwise_right_shift(const A& a, const B& b) {
    constexpr DType t = promote(A::dtype, A::rank == 0, B::dtype, B::rank == 0);
    auto p = cast_to<DType::Int64>(exp2(cast_to<DType::Float64>(cast_to<t>(b))));
    return cast_to<t>(floor_divide(cast_to<DType::Int64>(cast_to<t>(a)), p));
  }
  template <class E> static constexpr auto bitwise_not(const E& e) {
    if constexpr (E::dtype == DType::Bool)
      return logical_not(e);
    else
      return alu<Op::Xor>(e, full<shape<>, E::dtype>(-1));
  }
  /// Tensor::masked_fill: the value where the mask is true.
  template <class E, class M>
  static constexpr auto masked_fill(const E& e, const M& mask, double value) {
    return where3(mask, full<shape<>, E::dtype>(value), e);
  }
  /// Tensor::lerp: a + w (end - a) below w = 1/2, end - (end - a)(1 - w) from there on.
  template <class A, class B, class W>
  static constexpr auto lerp(const A& a, const B& end, const W& w) {
    auto d = sub(end, a);
    return where3(lt_s(w, 0.5), add(a, mul(w, d)), sub(end, mul(d, ssub(1.0, w))));
  }
  template <class A, class B> static constexpr auto pow(const A& a, const B& b) {
    constexpr DType t = promote(A::dtype, A::rank == 0, B::dtype, B::rank == 0);
    if constexpr (is_float(t))
      return alu<Op::Pow>(cast_to<t>(a), cast_to<t>(b));
    else
      return cast_to<t>(
          round(alu<Op::Pow>(cast_to<DType::Float64>(a), cast_to<DType::Float64>(b))));
  }
  template <class A, class B> static constexpr auto maximum(const A& a, const B& b) {
    return alu<Op::Max>(a, b);
  }
  template <class A, class B> static constexpr auto minimum(const A& a0, const B& b0) {
    constexpr DType t = promote(A::dtype, A::rank == 0, B::dtype, B::rank == 0);
    auto a = share(cast_to<t>(a0));
    auto b = share(cast_to<t>(b0));
    if constexpr (is_float(t))
      return where3(logical_or(alu<Op::CmpLt>(a, b), isnan(a)), a, b);
    else
      return where3(alu<Op::CmpLt>(a, b), a, b);
  }
  template <class E> static constexpr auto clamp(const E& e, double lo, double hi) {
    constexpr bool integral = !is_float(E::dtype);
    if (integral && (cmath::floor(lo) != lo || cmath::floor(hi) != hi))
      throw dtype_error("tg.clamp: an integer expression with bounds that are not whole numbers "
                        "would be float32 (PyTorch's promotion), a dtype a static expression "
                        "cannot take from values: cast it to a float type first");
    auto r = maximum(e, full<shape<>, E::dtype>(lo));
    return minimum(r, full<shape<>, E::dtype>(hi));
  }
  /// where(cond, a, b), broadcast together.
  template <class C, class A, class B>
  static constexpr auto where3(const C& c0, const A& a0, const B& b0) {
    using Out = broadcast_shape<broadcast_shape<typename C::shape_type, typename A::shape_type>,
                                typename B::shape_type>;
    constexpr DType t = promote(A::dtype, A::rank == 0, B::dtype, B::rank == 0);
    auto c = expand_to<Out>(cast_to<DType::Bool>(c0));
    auto x = expand_to<Out>(cast_to<t>(a0));
    auto y = expand_to<Out>(cast_to<t>(b0));
    return where_node<decltype(c), decltype(x), decltype(y)>(c, x, y);
  }

  // ---- reductions
  // --------------------------------------------------------------------------------
  template <bool Keep, int... Ax, class E> static constexpr auto sum(const E& e) {
    if constexpr (is_float(E::dtype))
      return reduce<Op::ReduceSum, Keep, Ax...>(e);
    else
      return reduce<Op::ReduceSum, Keep, Ax...>(cast_to<DType::Int64>(e));
  }
  template <bool Keep, int... Ax, class E> static constexpr auto prod(const E& e) {
    if constexpr (is_float(E::dtype))
      return reduce<Op::ReduceProd, Keep, Ax...>(e);
    else
      return reduce<Op::ReduceProd, Keep, Ax...>(cast_to<DType::Int64>(e));
  }
  template <bool Keep, int... Ax, class E> static constexpr auto max(const E& e) {
    return reduce<Op::ReduceMax, Keep, Ax...>(e);
  }
  template <bool Keep, int... Ax, class E> static constexpr auto min(const E& e) {
    if constexpr (is_float(E::dtype))
      return neg(reduce<Op::ReduceMax, Keep, Ax...>(neg(e)));
    else if constexpr (E::dtype == DType::Bool)
      return all<Keep, Ax...>(e);
    else
      return alu<Op::Xor>(reduce<Op::ReduceMax, Keep, Ax...>(alu<Op::Xor>(e, const_like(e, -1))),
                          full<shape<>, E::dtype>(-1));
  }
  template <bool Keep, int... Ax, class E> static constexpr auto mean(const E& e) {
    auto s = sum<Keep, Ax...>(e);
    constexpr double count =
        double(E::size) / double(decltype(s)::size > 0 ? decltype(s)::size : 1);
    return div_s(s, count);
  }
  template <bool Keep, int... Ax, class E> static constexpr auto any(const E& e) {
    return reduce<Op::ReduceMax, Keep, Ax...>(cast_to<DType::Bool>(e));
  }
  template <bool Keep, int... Ax, class E> static constexpr auto all(const E& e) {
    return logical_not(any<Keep, Ax...>(logical_not(e)));
  }
  template <bool Keep, int... Ax, class E>
  static constexpr auto var(const E& e, double correction) {
    auto x = as_float(e);
    auto m = mean<true, Ax...>(x);
    auto d = sub(x, m);
    auto s = sum<Keep, Ax...>(mul(d, d));
    constexpr double count =
        double(E::size) / double(decltype(s)::size > 0 ? decltype(s)::size : 1);
    return div_s(s, count - correction > 0.0 ? count - correction : 0.0);
  }
  template <bool Keep, int... Ax, class E> static constexpr auto logsumexp(const E& e) {
    auto x = as_float(e);
    auto m = max<true, Ax...>(x);
    auto safe = where3(isinf(m), const_like(m, 0), m);
    auto r = add(log(sum<true, Ax...>(exp(sub(x, safe)))), safe);
    if constexpr (Keep)
      return r;
    else
      return reshape_to<typename decltype(max<false, Ax...>(x))::shape_type>(r);
  }
  template <int A, class E> static constexpr auto softmax(const E& e) {
    auto x = as_float(e);
    auto ex = exp(sub(x, max<true, A>(x)));
    return div(ex, sum<true, A>(ex));
  }
  template <int A, class E> static constexpr auto log_softmax(const E& e) {
    auto x = as_float(e);
    auto s = sub(x, max<true, A>(x));
    return sub(s, log(sum<true, A>(exp(s))));
  }

  /// Tensor::argmax(axis, keepdim): n - i of the first maximum (NaN counts as one) is the largest
  /// of a countdown where the maximum is; the first i is n minus it.
  template <bool Keep, int A, class E> static constexpr auto argmax(const E& e) {
    if constexpr (E::rank == 0)
      return full<shape<>, DType::Int64>(0);
    else {
      constexpr int d = normalize_axis(A, E::rank);
      constexpr std::size_t n = E::shape_type::dims[std::size_t(d)];
      auto m = max<true, d>(e);
      auto hit = [&] {
        if constexpr (is_float(E::dtype))
          return logical_or(eq(e, m), isnan(e));
        else
          return eq(e, m);
      }();
      return argmax_rest<Keep, d, n>(e, hit);
    }
  }
  template <bool Keep, int D, std::size_t N, class E, class H>
  static constexpr auto argmax_rest(const E&, const H& hit) {
    using idx = shape_from<one_axis_dims<E::rank, std::size_t(D), N>>;
    index_leaf<index_kind::countdown, idx> countdown;
    auto best = max<Keep, D>(where3(hit, countdown, full<shape<>, DType::Int64>(0)));
    return sub(full<shape<>, DType::Int64>(double(N)), best);
  }
  /// Tensor::argmax() (no axis): over the flattened tensor; keepdim keeps every axis as size 1.
  template <bool Keep, class E> static constexpr auto argmax_all(const E& e) {
    auto r = argmax<false, 0>(flatten<0, -1>(e));
    if constexpr (Keep)
      return reshape_to<shape_from<ones_dims<E::rank>>>(r);
    else
      return r;
  }
  /// Tensor::argmin: argmax of the negation (floats) or of the bitwise complement (integers).
  template <class E> static constexpr auto argmin_operand(const E& e) {
    if constexpr (is_float(E::dtype))
      return neg(e);
    else
      return alu<Op::Xor>(e, const_like(e, -1));
  }

  /// e, its View node apart from equal ones made elsewhere (see view::site).
  template <class E> static constexpr E with_site(E e, int s) {
    if constexpr (is_view<E>) e.site = s;
    return e;
  }
  /// expand_to<S>(e) a second time: a new View node where the expansion makes one.
  template <class S, class E> static constexpr auto expanded_again(const E& e) {
    auto r = expand_to<S>(e);
    if constexpr (std::is_same_v<decltype(r), E>)
      return r;
    else
      return with_site(r, site(std::source_location::current()));
  }
  /// Tensor::cumsum and cumprod: out[i] = the reduction over j <= i of x[j], as a masked reduction
  /// over a new axis (one kernel, n^2 work along the axis); integers and bool in int64.
  template <int A, Op O, class E> static constexpr auto running(const E& e) {
    auto x = [&] {
      if constexpr (is_float(E::dtype))
        return e;
      else
        return cast_to<DType::Int64>(e);
    }();
    if constexpr (E::rank == 0)
      return x;
    else {
      constexpr int d = normalize_axis(A, E::rank);
      constexpr std::size_t n = E::shape_type::dims[std::size_t(d)];
      index_leaf<index_kind::arange, shape<n>> ar;
      // j <= i is CmpLt or CmpEq; each alu call of the run-time <= expands its operands anew (two
      // View nodes each), and the two reshapes of ar are two nodes even when they are equal
      auto j =
          with_site(reshape_to<shape_from<one_axis_dims<E::rank + 1, std::size_t(d) + 1, n>>>(ar),
                    site(std::source_location::current()));
      auto i = with_site(reshape_to<shape_from<one_axis_dims<E::rank + 1, std::size_t(d), n>>>(ar),
                         site(std::source_location::current()));
      using Out =
          broadcast_shape<typename decltype(j)::shape_type, typename decltype(i)::shape_type>;
      auto upto = alu<Op::Or>(alu<Op::CmpLt>(j, i),
                              alu<Op::CmpEq>(expanded_again<Out>(j), expanded_again<Out>(i)));
      constexpr double identity = O == Op::ReduceProd ? 1 : 0;
      auto picked = where3(upto, unsqueeze<d>(x), full<shape<>, decltype(x)::dtype>(identity));
      return reduce<O, false, d + 1>(picked);
    }
  }
  template <int A, class E> static constexpr auto cumsum(const E& e) {
    return running<A, Op::ReduceSum>(e);
  }
  template <int A, class E> static constexpr auto cumprod(const E& e) {
    return running<A, Op::ReduceProd>(e);
  }
  /// Tensor::tril / triu: where column - row <= K (>= K), x, else 0, over the last two axes.
  template <bool Lower, std::int64_t K, class E> static constexpr auto triangle(const E& e) {
    constexpr std::size_t r = E::rank, rows = E::shape_type::dims[r - 2],
                          cols = E::shape_type::dims[r - 1];
    auto row = reshape_to<shape_from<one_axis_dims<r, r - 2, rows>>>(
        index_leaf<index_kind::arange, shape<rows>>{});
    auto col = reshape_to<shape_from<one_axis_dims<r, r - 1, cols>>>(
        index_leaf<index_kind::arange, shape<cols>>{});
    auto off = sub(col, row);
    auto k = full<shape<>, DType::Int64>(double(K));
    auto keep = [&] {
      if constexpr (Lower)
        return le(off, k);
      else
        return ge(off, k);
    }();
    return where3(keep, e, full<shape<>, E::dtype>(0));
  }
  /// tg::outer: [n] x [m] -> [n, m].
  template <class A, class B> static constexpr auto outer(const A& a, const B& b) {
    return mul(unsqueeze<1>(a), unsqueeze<0>(b));
  }

  /// tg::cat: every piece cast to the common dtype and padded to the full extent along D, then
  /// summed (or'ed, for bool) left to right.
  template <int A, class E0, class... E> static constexpr auto cat(const E0& e0, const E&... es) {
    constexpr DType t = promote_all(E0::dtype, E::dtype...);
    constexpr std::size_t d = std::size_t(normalize_axis(A, E0::rank));
    constexpr std::size_t total =
        E0::shape_type::dims[d] + (std::size_t(0) + ... + E::shape_type::dims[d]);
    if constexpr (sizeof...(E) == 0)
      return cast_to<t>(e0);
    else
      return cat_rest<t, d, total, E0::shape_type::dims[d]>(cat_piece<t, d, total, 0>(e0), es...);
  }
  template <DType T, std::size_t D, std::size_t Total, std::size_t Offset, class E>
  static constexpr auto cat_piece(const E& e) {
    constexpr std::size_t r = E::rank, n = E::shape_type::dims[D];
    using Before = shape_from<at_axis_dims<r, D, Offset, 0>>;
    using After = shape_from<at_axis_dims<r, D, Total - Offset - n, 0>>;
    return move<mv::pad<Before, After>>(cast_to<T>(e));
  }
  template <DType T, std::size_t D, std::size_t Total, std::size_t Offset, class O, class E,
            class... Es>
  static constexpr auto cat_rest(const O& out, const E& e, const Es&... es) {
    auto p = cat_piece<T, D, Total, Offset>(e);
    auto sum = [&] {
      if constexpr (T == DType::Bool)
        return logical_or(out, p);
      else
        return alu<Op::Add>(out, p);
    }();
    if constexpr (sizeof...(Es) == 0)
      return sum;
    else
      return cat_rest<T, D, Total, Offset + E::shape_type::dims[D]>(sum, es...);
  }
  /// tg::stack: cat of the pieces unsqueezed at A.
  template <int A, class... E> static constexpr auto stack(const E&... es) {
    return cat<A>(unsqueeze<A>(es)...);
  }

  /// detail::checked_index: every index in [-N, N), or index_out_of_range (a compile error in a
  /// constant expression). The values are read when the op is built, as Tensor::gather reads them:
  /// a stored index (a fixed tensor, a view of one) in place; a computed one is first evaluated
  /// into a tensor the expression keeps, as the run-time front end realizes it (a Buffer in both
  /// graphs). A tg::input has no values to check.
  template <class S, std::size_t D, class Op, class I>
  static constexpr auto checked_index(const I& index, const char* op,
                                      const std::source_location& loc) {
    if constexpr (I::is_symbolic)
      return index;
    else if constexpr (is_stored<I>) {
      check_index_values<S, D, Op>(index, op, loc);
      return index;
    } else {
      kept<fixed_for<I::dtype, typename I::shape_type>> values(eval(index));
      check_index_values<S, D, Op>(values, op, loc);
      return values;
    }
  }
  /// Indices into dim D of shape S.
  template <class S, std::size_t D, class Op, class I>
  static constexpr void check_index_values(const I& index, const char* op,
                                           const std::source_location& loc) {
    constexpr auto N = std::int64_t(S::dims[D]);
    const auto ev = index.evaluator();
    for (std::size_t k = 0; k < I::size; ++k) {
      const auto i = std::int64_t(ev.coeff(k));
      if (i < -N || i >= N) index_out_of_range<Op, S>(op, i, D, loc);
    }
  }
  /// The rest of detail::checked_index: negative indices count from the end.
  template <std::size_t N, class I> static constexpr auto wrapped_index(const I& index) {
    auto i = cast_to<DType::Int64>(index);
    return where3(lt(i, scalar_for(i, std::int64_t(0))), add(i, scalar_for(i, std::int64_t(N))), i);
  }
  /// Tensor::gather: crop the input to the index's extent (except along D), then a one-hot select
  /// along D summed over a new axis.
  template <int A, class E, class I>
  static constexpr auto gather(const E& e, const I& index, const std::source_location& loc) {
    constexpr std::size_t d = std::size_t(normalize_axis(A, E::rank)), r = E::rank;
    constexpr std::size_t n = E::shape_type::dims[d];
    auto idx = wrapped_index<n>(
        checked_index<typename E::shape_type, d, op::gather>(index, "gather", loc));
    using Hi = shape_from<gather_hi_dims<typename I::shape_type, d, n>>;
    auto x = [&] {
      if constexpr (std::is_same_v<Hi, typename E::shape_type>)
        return e;
      else
        return move<mv::shrink<shape_from<at_axis_dims<r, d, 0, 0>>, Hi>>(e);
    }();
    index_leaf<index_kind::arange, shape<n>> ar;
    auto onehot = eq(unsqueeze<int(d) + 1>(idx),
                     reshape_to<shape_from<at_axis_dims<r + 1, d + 1, n, 1>>>(ar));
    auto picked = where3(onehot, unsqueeze<int(d)>(x), full<shape<>, E::dtype>(0));
    return reduce<Op::ReduceSum, false, int(d) + 1>(picked);
  }
  /// Tensor::index_select: out[..., j, ...] = sum over k of x[..., k, ...] * (idx[j] == k).
  template <int A, class E, class I>
  static constexpr auto index_select(const E& e, const I& index, const std::source_location& loc) {
    constexpr std::size_t d = std::size_t(normalize_axis(A, E::rank)), r = E::rank;
    constexpr std::size_t n = E::shape_type::dims[d], m = I::size;
    auto idx = wrapped_index<n>(checked_index<typename E::shape_type, d, op::index_select>(
        reshape_to<shape<m>>(index), "index_select", loc));
    index_leaf<index_kind::arange, shape<n>> ar;
    auto onehot = eq(reshape_to<shape_from<at_axis_dims<r + 1, d, m, 1>>>(idx),
                     reshape_to<shape_from<at_axis_dims<r + 1, d + 1, n, 1>>>(ar));
    auto picked = where3(onehot, unsqueeze<int(d)>(e), full<shape<>, E::dtype>(0));
    return reduce<Op::ReduceSum, false, int(d) + 1>(picked);
  }

  // ---- movement (tensor/movement.hpp)
  // ------------------------------------------------------------
  template <std::int64_t... To, class E> static constexpr auto reshape(const E& e) {
    return reshape_to<shape_from<reshape_dims_h<typename E::shape_type, To...>>>(e);
  }
  template <int... P, class E> static constexpr auto permute(const E& e) {
    constexpr std::array<int, sizeof...(P)> p{normalize_axis(P, E::rank)...};
    constexpr bool identity = [&] {
      for (std::size_t i = 0; i < p.size(); ++i)
        if (p[i] != int(i)) return false;
      return true;
    }();
    if constexpr (identity)
      return e;
    else
      return move<mv::permute<std::size_t(normalize_axis(P, E::rank))...>>(e);
  }
  template <int A, int B, class E> static constexpr auto transpose(const E& e) {
    constexpr int a = normalize_axis(A, E::rank), b = normalize_axis(B, E::rank);
    auto swapped = [&]<std::size_t... I>(std::index_sequence<I...>) {
      return permute<(int(I) == a ? b : int(I) == b ? a : int(I))...>(e);
    };
    return swapped(std::make_index_sequence<E::rank>{});
  }
  template <class E> static constexpr auto T(const E& e) {
    if constexpr (E::rank < 2)
      return e;
    else
      return transpose<0, 1>(e);
  }
  template <std::int64_t... To, class E> static constexpr auto expand(const E& e) {
    return expand_to<shape_from<expand_dims_h<typename E::shape_type, To...>>>(e);
  }
  template <int... Axis, class E> static constexpr auto squeeze(const E& e) {
    if constexpr (sizeof...(Axis) == 0) {
      return reshape_to<shape_from<squeeze_all_dims<typename E::shape_type>>>(e);
    } else {
      constexpr int a = normalize_axis((Axis + ...), E::rank);
      if constexpr (E::shape_type::dims[std::size_t(a)] != 1)
        return e;
      else
        return reshape_to<remove_axis<typename E::shape_type, std::size_t(a)>>(e);
    }
  }
  template <int A, class E> static constexpr auto unsqueeze(const E& e) {
    return reshape_to<
        insert_axis<typename E::shape_type, std::size_t(normalize_axis(A, E::rank + 1))>>(e);
  }
  template <int Start, int End, class E> static constexpr auto flatten(const E& e) {
    if constexpr (E::rank == 0)
      return reshape_to<shape<1>>(e);
    else {
      constexpr std::size_t a = std::size_t(normalize_axis(Start, E::rank)),
                            b = std::size_t(normalize_axis(End, E::rank));
      return reshape_to<shape_from<flatten_dims<typename E::shape_type, a, b>>>(e);
    }
  }
  template <std::int64_t... P, class E> static constexpr auto pad_cropped(const E& e) {
    using Plan = pad_plan<typename E::shape_type, P...>;
    if constexpr (Plan::value.crop)
      return move<mv::shrink<typename Plan::Lo, typename Plan::Hi>>(e);
    else
      return e;
  }
  template <std::int64_t... P, class E> static constexpr auto pad(const E& e) {
    using Plan = pad_plan<typename E::shape_type, P...>;
    auto r = pad_cropped<P...>(e);
    if constexpr (!Plan::value.grow)
      return r;
    else
      return move<mv::pad<typename Plan::Before, typename Plan::After>>(r);
  }
  template <std::int64_t... P, class E> static constexpr auto pad_value(const E& e, double value) {
    using Plan = pad_plan<typename E::shape_type, P...>;
    auto r = pad_cropped<P...>(e);
    if constexpr (!Plan::value.grow)
      return r;
    else {
      using M = mv::pad<typename Plan::Before, typename Plan::After>;
      auto padded = move<M>(r);
      auto inside = move<M>(full<typename decltype(r)::shape_type, DType::Bool>(1));
      return where3(inside, padded, cast_to<E::dtype>(scalar_for(e, value)));
    }
  }
  template <int A, std::int64_t Start, std::int64_t Stop, std::int64_t Step, class E>
  static constexpr auto slice(const E& e) {
    using P = slice_plan<typename E::shape_type, std::size_t(normalize_axis(A, E::rank)), Start,
                         Stop, Step>;
    auto r1 = [&] {
      if constexpr (P::value.shrink)
        return move<mv::shrink<shape_from<typename P::lo_h>, shape_from<typename P::hi_h>>>(e);
      else
        return e;
    }();
    auto r2 = [&] {
      if constexpr (P::value.flip)
        return move<mv::flip<shape_from<typename P::flags_h>>>(r1);
      else
        return r1;
    }();
    if constexpr (P::value.stride)
      return move<mv::stride<shape_from<typename P::steps_h>>>(r2);
    else
      return r2;
  }
  template <int A, std::int64_t Size, std::int64_t Step, class E>
  static constexpr auto unfold(const E& e) {
    using P = unfold_plan<E::rank, std::size_t(normalize_axis(A, E::rank)), Size, Step>;
    return move<mv::window<shape_from<typename P::k_h>, shape_from<typename P::sd_h>>>(e);
  }
  template <int A, std::int64_t I, class E> static constexpr auto select(const E& e) {
    constexpr std::size_t d = std::size_t(normalize_axis(A, E::rank));
    constexpr std::int64_t n = std::int64_t(E::shape_type::dims[d]), k = I < 0 ? I + n : I;
    auto r = slice<int(d), k, k + 1, 1>(e);
    return reshape_to<remove_axis<typename decltype(r)::shape_type, d>>(r);
  }
  template <int... Axes, class E> static constexpr auto flip(const E& e) {
    return move<mv::flip<shape_from<flip_dims<typename E::shape_type, Axes...>>>>(e);
  }
  template <std::size_t... Reps, class E> static constexpr auto repeat(const E& e) {
    using P = repeat_plan<typename E::shape_type, Reps...>;
    return reshape_to<shape_from<typename P::out_h>>(expand_to<shape_from<typename P::expanded_h>>(
        reshape_to<shape_from<typename P::inter_h>>(e)));
  }
  /// Tensor::split(sizes, dim): piece k is slice(dim, start_k, start_k + size_k).
  template <int D, class P, class E> static constexpr auto split_pieces(const E& e) {
    using St = split_starts<P>;
    auto pieces = [&]<std::size_t... K>(std::index_sequence<K...>) {
      return std::make_tuple(
          slice<D, std::int64_t(St::value[K]), std::int64_t(St::value[K] + P::sizes[K]), 1>(e)...);
    };
    return pieces(std::make_index_sequence<P::count>{});
  }
  template <int A, std::int64_t Size, class E> static constexpr auto split(const E& e) {
    constexpr int d = normalize_axis(A, E::rank);
    return split_pieces<d, split_by_size<E::shape_type::dims[std::size_t(d)], Size>>(e);
  }
  template <int A, class Sizes, class E> static constexpr auto split_into(const E& e) {
    return split_pieces<normalize_axis(A, E::rank), split_by_sizes<Sizes>>(e);
  }
  /// Tensor::chunk(chunks, dim): split by ceil(size / chunks).
  template <int A, std::int64_t Chunks, class E> static constexpr auto chunk(const E& e) {
    constexpr int d = normalize_axis(A, E::rank);
    return split_pieces<d, chunk_by<E::shape_type::dims[std::size_t(d)], Chunks>>(e);
  }
  /// The stand-in of a failed split or chunk: N pieces.
  template <std::size_t N> static constexpr auto error_pieces() { return fx::error_pieces<N>(); }

  // ---- composite
  // ---------------------------------------------------------------------------------
  /// Tensor::matmul: 1-D operands are unsqueezed, the product of expanded views is summed over k.
  template <class A, class B> static constexpr auto matmul(const A& a0, const B& b0) {
    auto a = [&] {
      if constexpr (A::rank == 1)
        return unsqueeze<0>(a0);
      else
        return a0;
    }();
    auto b = [&] {
      if constexpr (B::rank == 1)
        return unsqueeze<1>(b0);
      else
        return b0;
    }();
    using MM = matmul_node<decltype(a), decltype(b)>;
    MM m(a, b);
    auto r = reshape_to<typename MM::out_shape>(m);
    auto r2 = [&] {
      if constexpr (A::rank == 1)
        return squeeze<-2>(r);
      else
        return r;
    }();
    if constexpr (B::rank == 1)
      return squeeze<-1>(r2);
    else
      return r2;
  }

  // ---- evaluation
  // --------------------------------------------------------------------------------
  template <class E> static constexpr auto eval(const E& e) {
    fixed_for<E::dtype, typename E::shape_type> r;
    evaluate_into(r.data(), e);
    return r;
  }
  template <class E> static constexpr storage_t<E::dtype> item(const E& e) {
    return storage_t<E::dtype>(e.evaluator().coeff(0));
  }
};

} // namespace fx
} // namespace tg
