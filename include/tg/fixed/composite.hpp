#pragma once
// Composite ops of the static front end: ops whose run-time composition reuses its intermediate
// values many times (erf's series, atan's polynomials, sort's ranks). As expression templates each
// reuse copies the sub-expression, so object size and compile time grow with every statement. Here
// a composite's statements bind their values one at a time, as the run-time front end's Tensor
// variables do: while a graph is built, each bound value is emitted once and later statements
// read its node; while the host evaluates, each is computed once into a fixed tensor. The
// statements mirror the run-time composition line by line, as the builders do, so graph_of(expr)
// is the run-time front end's Graph (build_graph then orders the nodes as the run-time front end
// does: tests/test_fixed.cpp compares them).
#include <array>
#include <tuple>
#include <utility>

#include "matmul.hpp"

namespace tg::fx {

/// A value a composite bound while its graph is emitted: the node it became.
template <DType D, class S> struct bound : expression<bound<D, S>>, node_info<D, S> {
  int id = -1;
  constexpr bound() = default;
  constexpr explicit bound(int id_) : id(id_) {}
  static constexpr bool is_symbolic = false, has_reduce = false, aligned = true;
  struct evaluator_t {
    constexpr compute_t<D> coeff(std::size_t) const { return {}; }
  };
  constexpr evaluator_t evaluator() const { return {}; }
  template <class B> constexpr int emit(B&) const { return id; }
  constexpr bool reads(const void*) const { return false; }
};

/// Binds a statement's value as a node of the graph being built.
template <class B> struct emitting {
  B* b;
  template <class E> constexpr auto operator()(const E& e) const {
    if constexpr (requires { b->statement; }) b->statement = ++b->statements << 21;
    return bound<E::dtype, typename E::shape_type>(e.emit(*b));
  }
};
/// Binds a statement's value as a fixed tensor computed on the host.
struct evaluating {
  template <class E> constexpr auto operator()(const E& e) const {
    fixed_for<E::dtype, typename E::shape_type> t;
    evaluate_into(t.data(), e);
    return owned<decltype(t)>(std::move(t));
  }
};

/// A composite op: Fn{}(bind, sources...) runs its statements, each wrapped in bind(...), and
/// returns the bound result. Fn is stateless (the plans build it from its type alone).
template <class Fn, class... Src>
using composite_result =
    decltype(Fn{}(evaluating{}, owned<fixed_for<Src::dtype, typename Src::shape_type>>{}...));

template <class Fn, class... Src>
struct composite : expression<composite<Fn, Src...>>,
                   node_info<composite_result<Fn, Src...>::dtype,
                             typename composite_result<Fn, Src...>::shape_type> {
  std::tuple<Src...> src{};
  constexpr composite() = default;
  constexpr explicit composite(Src... s) : src(std::move(s)...) {}
  using R = composite_result<Fn, Src...>;
  // The host computes the whole value when the evaluator is made, before anything is written.
  static constexpr bool is_symbolic = (Src::is_symbolic || ...), has_reduce = false, aligned = true;
  struct evaluator_t {
    fixed_for<R::dtype, typename R::shape_type> t;
    TG_FX_INLINE constexpr compute_t<R::dtype> coeff(std::size_t i) const {
      return compute_t<R::dtype>(t.data()[i]);
    }
  };
  constexpr evaluator_t evaluator() const {
    const evaluating bind;
    return {std::apply([&](const Src&... s) { return Fn{}(bind, bind(s)...); }, src).value};
  }
  template <class B> constexpr int emit(B& b) const {
    // sources in order (a braced list is evaluated left to right)
    const std::array<int, sizeof...(Src)> ids = std::apply(
        [&](const Src&... s) { return std::array<int, sizeof...(Src)>{s.emit(b)...}; }, src);
    auto run = [&]<std::size_t... I>(std::index_sequence<I...>) {
      return Fn{}(emitting<B>{&b}, bound<Src::dtype, typename Src::shape_type>(ids[I])...).id;
    };
    if constexpr (requires { b.statement; }) {
      const int outer = b.statement, count = b.statements;
      b.composed = true;
      b.statements = 0;
      const int r = run(std::index_sequence_for<Src...>{});
      b.statement = outer;
      b.statements = count;
      return r;
    } else {
      return run(std::index_sequence_for<Src...>{});
    }
  }
  constexpr bool reads(const void* q) const {
    return std::apply([&](const Src&... s) { return (s.reads(q) || ...); }, src);
  }
};
template <class Fn, class... Src> constexpr auto make_composite(const Src&... s) {
  return composite<Fn, Src...>(s...);
}

// ---- the compositions (tensor/math.hpp, tensor/indexing.hpp), statement by statement ----------
using O = ops<>;

/// detail::atan_value.
template <class Bind, class X> constexpr auto atan_value(const Bind& bind, const X& x) {
  constexpr DType t = X::dtype;
  constexpr bool f64 = t == DType::Float64;
  auto ax = bind(O::abs(x));
  auto one = bind(O::full<shape<>, t>(1));
  auto big = bind(O::gt_s(ax, 2.414213562373095));
  auto mid =
      bind(O::logical_and(O::logical_not(big), O::gt_s(ax, f64 ? 0.66 : 0.4142135623730950)));
  auto r = bind(O::where3(big, O::neg(O::reciprocal(O::maximum(ax, one))),
                          O::where3(mid, O::div(O::sub_s(ax, 1.0), O::add_s(ax, 1.0)), ax)));
  auto base = bind(O::where3(big, O::full<shape<>, t>(kPi / 2),
                             O::where3(mid, O::full<shape<>, t>(kPi / 4), O::scalar_for(x, 0.0))));
  auto z = bind(O::mul(r, r));
  auto y = [&] {
    if constexpr (f64) {
      auto p = bind(O::sub_s(
          O::mul(O::sub_s(O::mul(O::sub_s(O::mul(O::sub_s(O::smul(-8.750608600031904122785e-1, z),
                                                          1.615753718733365076637e1),
                                                 z),
                                          7.500855792314704667340e1),
                                 z),
                          1.228866684490136173410e2),
                 z),
          6.485021904942025371773e1));
      auto q = bind(O::add_s(
          O::mul(
              O::add_s(
                  O::mul(O::add_s(O::mul(O::add_s(O::mul(O::add_s(z, 2.485846490142306297962e1), z),
                                                  1.650270098316988542046e2),
                                         z),
                                  4.328810604912902668951e2),
                         z),
                  4.853903996359136964868e2),
              z),
          1.945506571482613964425e2));
      auto y0 = bind(O::add(O::mul(r, O::div(O::mul(z, p), q)), r));
      return bind(
          O::add(y0, O::where3(big, O::full<shape<>, t>(6.123233995736765886130e-17),
                               O::where3(mid, O::full<shape<>, t>(3.061616997868382943065e-17),
                                         O::scalar_for(y0, 0.0)))));
    } else {
      return bind(O::add(
          O::mul(O::mul(O::sub_s(O::mul(O::add_s(O::mul(O::sub_s(O::smul(8.05374449538e-2, z),
                                                                 1.38776856032e-1),
                                                        z),
                                                 1.99777106478e-1),
                                        z),
                                 3.33329491539e-1),
                        z),
                 r),
          r));
    }
  }();
  auto a = bind(O::add(base, y));
  return bind(O::where3(O::lt_s(x, 0.0), O::neg(a), O::where3(O::eq_s(x, 0.0), x, a)));
}

/// detail::erf_series: the Taylor series, for |x| < 2.
template <class Bind, class X> constexpr auto erf_series(const Bind& bind, const X& x) {
  const int n = X::dtype == DType::Float64 ? 32 : 22;
  auto mx2 = bind(O::neg(O::mul(x, x)));
  auto term = x, sum = x;
  for (int k = 1; k < n; ++k) {
    term = bind(O::div_s(O::mul(term, mx2), double(k)));
    sum = bind(O::add(sum, O::div_s(term, double(2 * k + 1))));
  }
  return bind(O::mul_s(sum, 1.1283791670955126));
}

/// detail::erfc_fraction: the continued fraction, for |x| >= 2.
template <class Bind, class X> constexpr auto erfc_fraction(const Bind& bind, const X& x) {
  constexpr DType t = X::dtype;
  constexpr bool f64 = t == DType::Float64;
  auto frac = x;
  for (int k = f64 ? 40 : 20; k > 0; --k)
    frac = bind(O::add(x, O::div(O::scalar_for(frac, 0.5 * k), frac)));
  auto e = [&] {
    if constexpr (f64) {
      auto xe = bind(O::minimum(x, O::full<shape<>, t>(27.5)));
      auto hi = bind(O::cast_to<DType::Float64>(O::cast_to<DType::Float32>(xe)));
      auto lo = bind(O::sub(xe, hi));
      return bind(O::mul(O::exp(O::neg(O::mul(hi, hi))),
                         O::exp(O::neg(O::mul(lo, O::add(O::add(hi, hi), lo))))));
    } else {
      return bind(O::exp(O::neg(O::mul(x, x))));
    }
  }();
  return bind(O::mul_s(O::div(e, frac), 0.5641895835477563));
}

/// detail::erf_erfc: erf (Erfc false) or erfc (Erfc true) of a float x.
template <bool Erfc, class Bind, class X> constexpr auto erf_erfc(const Bind& bind, const X& x) {
  constexpr DType t = X::dtype;
  auto ax = bind(O::abs(x));
  auto two = bind(O::full<shape<>, t>(2));
  auto small = bind(O::lt_s(ax, 2.0));
  auto s = erf_series(bind, bind(O::where3(small, x, two)));
  auto c = erfc_fraction(bind, bind(O::where3(small, two, ax)));
  auto neg = bind(O::lt_s(x, 0.0));
  auto v = [&] {
    if constexpr (Erfc)
      return bind(O::where3(small, O::ssub(1.0, s), O::where3(neg, O::ssub(2.0, c), c)));
    else
      return bind(O::where3(small, s, O::where3(neg, O::sub_s(c, 1.0), O::ssub(1.0, c))));
  }();
  auto inf = bind(O::isinf(x));
  auto pos = bind(O::gt_s(x, 0.0));
  auto nan = bind(O::isnan(x));
  auto w = [&] {
    if constexpr (Erfc)
      return bind(O::where3(inf, O::where3(pos, O::full<shape<>, t>(0), two), v));
    else
      return bind(
          O::where3(inf, O::where3(pos, O::full<shape<>, t>(1), O::full<shape<>, t>(-1)), v));
  }();
  return bind(O::where3(nan, x, w));
}

/// Tensor::atan2's value: the angle of (x, y), -0 told from +0.
template <class Bind, class Y, class X>
constexpr auto atan2_value(const Bind& bind, const Y& yd, const X& xd) {
  constexpr DType t = Y::dtype;
  auto y_zero = bind(O::eq_s(yd, 0.0));
  auto x_zero = bind(O::eq_s(xd, 0.0));
  auto y_neg = bind(
      O::logical_or(O::lt_s(yd, 0.0), O::logical_and(y_zero, O::lt_s(O::reciprocal(yd), 0.0))));
  auto x_neg = bind(
      O::logical_or(O::lt_s(xd, 0.0), O::logical_and(x_zero, O::lt_s(O::reciprocal(xd), 0.0))));
  auto both_zero = bind(O::logical_and(x_zero, y_zero));
  auto q = bind(O::where3(both_zero, O::full<shape<>, t>(0), O::div(yd, xd)));
  auto a = atan_value(bind, q);
  auto pi = bind(O::full<shape<>, t>(kPi));
  auto v = bind(O::where3(x_neg, O::where3(y_neg, O::sub(a, pi), O::add(a, pi)), a));
  return bind(O::where3(both_zero, O::where3(x_neg, O::where3(y_neg, O::neg(pi), pi), yd), v));
}

struct erf_fn {
  template <class Bind, class X> constexpr auto operator()(const Bind& bind, const X& x) const {
    return erf_erfc<false>(bind, bind(O::as_float(x)));
  }
};
struct erfc_fn {
  template <class Bind, class X> constexpr auto operator()(const Bind& bind, const X& x) const {
    return erf_erfc<true>(bind, bind(O::as_float(x)));
  }
};
struct atan_fn {
  template <class Bind, class X> constexpr auto operator()(const Bind& bind, const X& x) const {
    return atan_value(bind, bind(O::as_float(x)));
  }
};
/// Tensor::atan2: promoted, then the float angle.
struct atan2_fn {
  template <class Bind, class Y, class X>
  constexpr auto operator()(const Bind& bind, const Y& y0, const X& x0) const {
    constexpr DType t = promote(Y::dtype, Y::rank == 0, X::dtype, X::rank == 0);
    auto y = bind(O::as_float(O::cast_to<t>(y0)));
    auto x = bind(O::as_float(O::cast_to<t>(x0)));
    return atan2_value(bind, y, x);
  }
};
/// Tensor::asin: atan2(x, sqrt((1 - x)(1 + x))).
struct asin_fn {
  template <class Bind, class X> constexpr auto operator()(const Bind& bind, const X& x0) const {
    auto x = bind(O::as_float(x0));
    auto c = bind(O::sqrt(O::mul(O::ssub(1.0, x), O::sadd(1.0, x))));
    return atan2_value(bind, x, c);
  }
};
/// Tensor::acos: 2 atan(sqrt((1 - x) / (1 + x))).
struct acos_fn {
  template <class Bind, class X> constexpr auto operator()(const Bind& bind, const X& x0) const {
    auto x = bind(O::as_float(x0));
    auto a = atan_value(bind, bind(O::sqrt(O::div(O::ssub(1.0, x), O::sadd(1.0, x)))));
    return bind(O::smul(2.0, a));
  }
};

// ---- running reductions and sorting (tensor/indexing.hpp) -------------------------------------
/// detail::arange_on(N): a Buffer of its own for each statement that makes one, as the run-time
/// front end uploads one per call (copies of a composite share theirs).
template <std::size_t N>
struct fresh_arange : expression<fresh_arange<N>>,
                      node_info<index_dtype<index_kind::arange, N>, shape<N>> {
  using base = index_leaf<index_kind::arange, shape<N>>;
  static constexpr bool is_symbolic = false, has_reduce = false, aligned = false;
  using evaluator_t = typename base::evaluator_t;
  constexpr evaluator_t evaluator() const { return base{}.evaluator(); }
  template <class B> constexpr int emit(B& b) const {
    const auto* p = &index_data<index_kind::arange, N>;
    int id = -1;
    if constexpr (requires { b.statement; }) id = -3 - (b.statement >> 21);
    return b.buffer(p, id, index_dtype<index_kind::arange, N>, sym<shape<N>>(), p->data());
  }
  constexpr bool reads(const void*) const { return false; }
};
/// detail::arange_along: the arange N as a view of rank R with N at axis At.
template <std::size_t R, std::size_t At, std::size_t N> constexpr auto arange_along() {
  return O::reshape_to<shape_from<one_axis_dims<R, At, N>>>(fresh_arange<N>{});
}
/// detail::upto_mask: j <= i, i at axis D and j at D + 1 of rank R + 1.
template <std::size_t R, std::size_t D, std::size_t N, class Bind>
constexpr auto upto_mask(const Bind& bind) {
  auto j = bind(arange_along<R + 1, D + 1, N>());
  auto i = bind(arange_along<R + 1, D, N>());
  auto lt = bind(O::alu<Op::CmpLt>(j, i));
  return bind(O::alu<Op::Or>(lt, O::alu<Op::CmpEq>(j, i))); // (CmpEq expands j and i anew)
}
/// detail::running for ReduceMax: out[i] = max over j <= i of x[j] along axis D.
template <std::size_t D, class Bind, class X>
constexpr auto running_max(const Bind& bind, const X& x) {
  constexpr std::size_t R = X::rank, N = X::shape_type::dims[D];
  auto upto = upto_mask<R, D, N>(bind);
  auto fill = O::full<shape<>, X::dtype>(
      is_float(X::dtype) ? -cmath::inf
                         : double(std::numeric_limits<compute_t<X::dtype>>::lowest()));
  auto picked = bind(O::where3(upto, O::unsqueeze<int(D)>(x), fill));
  return bind(O::reduce<Op::ReduceMax, false, int(D) + 1>(picked));
}
/// detail::running_index: the last j <= i where x[j] is values[i] (NaN matching NaN), int64.
template <std::size_t D, class Bind, class X, class V>
constexpr auto running_index(const Bind& bind, const X& x, const V& values) {
  constexpr std::size_t R = X::rank, N = X::shape_type::dims[D];
  auto xj = bind(O::unsqueeze<int(D)>(x));
  auto vi = bind(O::unsqueeze<int(D) + 1>(values));
  auto same = [&] {
    auto eq = bind(O::eq(xj, vi));
    if constexpr (is_float(X::dtype))
      return bind(O::logical_or(eq, O::logical_and(O::isnan(xj), O::isnan(vi))));
    else
      return eq;
  }();
  auto j = bind(arange_along<R + 1, D + 1, N>());
  auto hit = bind(O::logical_and(same, upto_mask<R, D, N>(bind)));
  return bind(O::cast_to<DType::Int64>(O::reduce<Op::ReduceMax, false, int(D) + 1>(
      O::where3(hit, j, O::full<shape<>, decltype(j)::dtype>(-1)))));
}
/// detail::pick_along: out[i] = x[index[i]] along axis D.
template <std::size_t D, class Bind, class X, class I>
constexpr auto pick_along(const Bind& bind, const X& x, const I& index) {
  constexpr std::size_t R = X::rank, N = X::shape_type::dims[D];
  auto j = bind(arange_along<R + 1, D + 1, N>());
  auto hit = bind(O::eq(O::unsqueeze<int(D) + 1>(index), j));
  return bind(O::cast_to<X::dtype>(O::template sum<false, int(D) + 1>(
      O::where3(hit, O::unsqueeze<int(D)>(x), O::full<shape<>, X::dtype>(0)))));
}
/// Tensor::cummax (Min false) and cummin: the values (Which 0) or their indices (Which 1).
template <int A, bool Min, int Which> struct cumulative_fn {
  template <class Bind, class X> constexpr auto operator()(const Bind& bind, const X& x) const {
    constexpr std::size_t d = std::size_t(normalize_axis(A, X::rank));
    // the max of the reversed order for cummin: -x for floats, ~x for integers
    auto flipped = [&](const auto& e) {
      if constexpr (is_float(X::dtype))
        return bind(O::neg(e));
      else
        return bind(O::alu<Op::Xor>(e, O::const_like(e, -1)));
    };
    auto v = [&] {
      if constexpr (Min)
        return flipped(running_max<d>(bind, flipped(x)));
      else
        return running_max<d>(bind, x);
    }();
    auto i = running_index<d>(bind, x, v);
    if constexpr (Which == 1)
      return i;
    else
      return pick_along<d>(bind, x, i);
  }
};
/// Tensor::logcumsumexp: log(cumsum(exp(x))), shifted by the running maximum.
template <int A> struct logcumsumexp_fn {
  template <class Bind, class E> constexpr auto operator()(const Bind& bind, const E& e) const {
    auto x = bind(O::as_float(e));
    using X = decltype(x);
    constexpr std::size_t d = std::size_t(normalize_axis(A, X::rank)), R = X::rank,
                          N = X::shape_type::dims[d];
    auto c = running_max<d>(bind, x);
    auto shift = bind(O::where3(O::isinf(c), O::const_like(x, 0), c));
    auto diff = bind(O::sub(O::unsqueeze<int(d)>(x), O::unsqueeze<int(d) + 1>(shift)));
    auto none = O::full<shape<>, X::dtype>(-cmath::inf);
    auto terms = bind(O::exp(O::where3(upto_mask<R, d, N>(bind), diff, none)));
    return bind(O::add(O::log(O::template sum<false, int(d) + 1>(terms)), shift));
  }
};
/// detail::before: lo < hi, NaN after every number.
template <class Bind, class L, class H>
constexpr auto before_of(const Bind& bind, const L& lo, const H& hi) {
  auto lt = bind(O::lt(lo, hi));
  if constexpr (is_float(L::dtype))
    return bind(O::logical_or(lt, O::logical_and(O::isnan(hi), O::logical_not(O::isnan(lo)))));
  else
    return lt;
}
/// Tensor::sort: a stable sort by ranks (n^2 comparisons along the axis), NaN last ascending;
/// the values (Which 0) or the indices (Which 1).
template <int A, bool Descending, int Which> struct sort_fn {
  template <class Bind, class X> constexpr auto operator()(const Bind& bind, const X& x) const {
    constexpr std::size_t d = std::size_t(normalize_axis(A, X::rank)), R = X::rank,
                          N = X::shape_type::dims[d];
    auto key = bind(O::cast_to < X::dtype == DType::Bool ? DType::Int32 : X::dtype > (x));
    auto xi = bind(O::unsqueeze<int(d) + 1>(key));
    auto xj = bind(O::unsqueeze<int(d)>(key));
    auto tie = [&] {
      auto eq = bind(O::eq(xj, xi));
      if constexpr (is_float(X::dtype))
        return bind(O::logical_or(eq, O::logical_and(O::isnan(xj), O::isnan(xi))));
      else
        return eq;
    }();
    auto i_ar = bind(arange_along<R + 1, d, N>());
    auto j_ar = bind(arange_along<R + 1, d + 1, N>());
    auto before = [&] {
      if constexpr (Descending)
        return before_of(bind, xi, xj);
      else
        return before_of(bind, xj, xi);
    }();
    auto first = bind(O::logical_or(before, O::logical_and(tie, O::lt(j_ar, i_ar))));
    auto rank = bind(O::template sum<false, int(d) + 1>(O::cast_to<DType::Int64>(first)));
    auto hit = bind(O::eq(O::unsqueeze<int(d)>(rank), i_ar));
    if constexpr (Which == 0)
      return bind(O::cast_to<X::dtype>(O::template sum<false, int(d) + 1>(
          O::where3(hit, O::unsqueeze<int(d)>(x), O::full<shape<>, X::dtype>(0)))));
    else
      return bind(O::template sum<false, int(d) + 1>(
          O::where3(hit, j_ar, O::full<shape<>, DType::Int64>(0))));
  }
};

/// The builders of composite ops (what expression<D>'s methods call).
template <class> struct composites {
  template <class E> static constexpr auto erf(const E& e) { return make_composite<erf_fn>(e); }
  template <class E> static constexpr auto erfc(const E& e) { return make_composite<erfc_fn>(e); }
  template <class E> static constexpr auto atan(const E& e) { return make_composite<atan_fn>(e); }
  template <class E> static constexpr auto asin(const E& e) { return make_composite<asin_fn>(e); }
  template <class E> static constexpr auto acos(const E& e) { return make_composite<acos_fn>(e); }
  template <class Y, class X> static constexpr auto atan2(const Y& y, const X& x) {
    return make_composite<atan2_fn>(y, x);
  }
  /// Tensor::norm(P, axes, keepdim) for an integer order P (norm_inf: the largest |x|).
  template <int P, bool Keep, int... Ax, class E> static constexpr auto norm(const E& e) {
    auto x = O::as_float(e);
    constexpr DType t = decltype(x)::dtype;
    if constexpr (P == tg::norm_inf)
      return O::template max<Keep, Ax...>(O::abs(x));
    else if constexpr (P == -tg::norm_inf)
      return O::template min<Keep, Ax...>(O::abs(x));
    else if constexpr (P == 0)
      return O::template sum<Keep, Ax...>(
          O::template cast_to<t>(O::ne(O::abs(x), O::scalar_for(x, 0.0))));
    else if constexpr (P == 1)
      return O::template sum<Keep, Ax...>(O::abs(x));
    else if constexpr (P == 2)
      return O::sqrt(O::template sum<Keep, Ax...>(O::square(x)));
    else {
      auto ax = O::abs(x);
      auto powered = [&] { // Tensor::pow(double): a product for 3
        if constexpr (P == 3)
          return O::mul(O::square(ax), ax);
        else
          return O::pow(ax, O::full<shape<>, t>(double(P)));
      }();
      return O::pow(O::template sum<Keep, Ax...>(powered), O::full<shape<>, t>(1.0 / P));
    }
  }
  /// Tensor::cummax and cummin: (values, int64 indices).
  template <int A, bool Min, class E> static constexpr auto cumulative(const E& e) {
    if constexpr (E::rank == 0)
      return std::pair(e, O::full<shape<>, DType::Int64>(0));
    else
      return std::pair(make_composite<cumulative_fn<A, Min, 0>>(e),
                       make_composite<cumulative_fn<A, Min, 1>>(e));
  }
  template <int A, class E> static constexpr auto logcumsumexp(const E& e) {
    if constexpr (E::rank == 0)
      return O::as_float(e);
    else
      return make_composite<logcumsumexp_fn<A>>(e);
  }
  /// Tensor::sort: (values, int64 indices).
  template <int A, bool Descending, class E> static constexpr auto sort(const E& e) {
    if constexpr (E::rank == 0)
      return std::pair(e, O::full<shape<>, DType::Int64>(0));
    else
      return std::pair(make_composite<sort_fn<A, Descending, 0>>(e),
                       make_composite<sort_fn<A, Descending, 1>>(e));
  }
  /// Tensor::topk: the first K of sort(A, Largest).
  template <std::int64_t K, int A, bool Largest, class E> static constexpr auto topk(const E& e) {
    if constexpr (E::rank == 0)
      return sort<A, Largest>(e);
    else {
      auto [v, i] = sort<A, Largest>(e);
      return std::pair(O::template slice<A, 0, K, 1>(v), O::template slice<A, 0, K, 1>(i));
    }
  }
};

} // namespace tg::fx
