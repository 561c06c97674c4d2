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
#include <string>
#include <string_view>
#include <tuple>
#include <utility>
#include <vector>

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
/// 0, 1, ..., N - 1 as T.
template <DType T, std::size_t N>
inline constexpr auto arange_data = [] {
  std::array<storage_t<T>, N == 0 ? 1 : N> r{};
  for (std::size_t i = 0; i < N; ++i) r[i] = storage_t<T>(i);
  return r;
}();
/// An arange of dtype T as a Buffer. Fresh: one of its own for each statement of a composite that
/// makes one, as detail::arange_on uploads one per call (copies of a composite share theirs); else
/// one per dtype and size, as detail::cached_arange keeps one.
template <DType T, std::size_t N, bool Fresh>
struct arange_leaf : expression<arange_leaf<T, N, Fresh>>, node_info<T, shape<N>> {
  static constexpr bool is_symbolic = false, has_reduce = false, aligned = false;
  struct evaluator_t {
    TG_FX_INLINE constexpr compute_t<T> coeff(std::size_t i) const {
      return compute_t<T>(arange_data<T, N>[i]);
    }
  };
  constexpr evaluator_t evaluator() const { return {}; }
  template <class B> constexpr int emit(B& b) const {
    const auto* p = &arange_data<T, N>;
    int id = -1;
    if constexpr (Fresh && requires { b.statement; }) id = -3 - (b.statement >> 21);
    return b.buffer(p, id, T, sym<shape<N>>(), p->data());
  }
  constexpr bool reads(const void*) const { return false; }
};
/// detail::arange_along: detail::arange_on(N) as a view of rank R with N at axis At.
template <std::size_t R, std::size_t At, std::size_t N> constexpr auto arange_along() {
  return O::reshape_to<shape_from<one_axis_dims<R, At, N>>>(
      arange_leaf<index_dtype<index_kind::arange, N>, N, true>{});
}
/// A permutation of rank R that moves axis D last (detail::axis_last), and its inverse.
template <std::size_t R, std::size_t D> struct axis_last {
  static constexpr auto value = [] {
    std::array<std::array<int, R>, 2> r{};
    int k = 0;
    for (int i = 0; i < int(R); ++i)
      if (i != int(D)) r[0][std::size_t(k++)] = i;
    r[0][R - 1] = int(D);
    for (std::size_t i = 0; i < R; ++i) r[1][std::size_t(r[0][i])] = int(i);
    return r;
  }();
  /// The permutation (Inverse false) or its inverse applied to e.
  template <bool Inverse = false, class E> static constexpr auto apply(const E& e) {
    auto permute = [&]<std::size_t... I>(std::index_sequence<I...>) {
      return O::template permute<value[Inverse][I]...>(e);
    };
    return permute(std::make_index_sequence<R>{});
  }
  template <class E> static constexpr auto invert(const E& e) { return apply<true>(e); }
};
/// detail::place: src summed into N places along a new last axis by index (same rank, the
/// axis last), and (Any) whether any index hit each place.
template <std::size_t N, bool Any, class Bind, class I, class S>
constexpr auto place(const Bind& bind, const I& index, const S& src) {
  constexpr std::size_t r = I::rank;
  auto hit = bind(O::eq(O::template unsqueeze<-1>(O::cast_to<DType::Int64>(index)),
                        arange_along<r + 1, r, N>()));
  auto sum = bind(O::cast_to<S::dtype>(O::template sum<false, -2>(
      O::where3(hit, O::template unsqueeze<-1>(src), O::full<shape<>, S::dtype>(0)))));
  if constexpr (Any)
    return std::pair(sum, bind(O::template any<false, -2>(hit)));
  else
    return sum;
}
/// Tensor::pad of the places along dims other than the last up to the tensor's sizes, then the
/// axis back where it was (detail::scatter_like).
template <class S, std::size_t D, class Bind, class E>
constexpr auto placed(const Bind& bind, const E& e) {
  constexpr std::size_t r = S::rank;
  using P = axis_last<r, D>;
  constexpr auto pads = [] {
    std::array<std::int64_t, 2 * r> p{};
    for (std::size_t i = 1; i < r; ++i) // dim r - 1 - i, last first
      p[2 * i + 1] = std::int64_t(S::dims[std::size_t(P::value[0][r - 1 - i])]) -
                     std::int64_t(E::shape_type::dims[r - 1 - i]);
    return p;
  }();
  auto pad = [&]<std::size_t... K>(std::index_sequence<K...>) {
    return O::template pad<pads[K]...>(e);
  };
  return bind(P::invert(pad(std::make_index_sequence<2 * r>{})));
}
/// Tensor::scatter (Add false) and scatter_add, of a checked index.
template <int A, bool Add> struct scatter_fn {
  template <class Bind, class X, class I, class S>
  constexpr auto operator()(const Bind& bind, const X& x, const I& index, const S& src0) const {
    constexpr std::size_t d = std::size_t(normalize_axis(A, X::rank)), r = X::rank,
                          n = X::shape_type::dims[d];
    auto idx = bind(O::template wrapped_index<n>(index));
    auto s = [&] {
      auto c = bind(O::cast_to<X::dtype>(src0));
      if constexpr (std::is_same_v<typename S::shape_type, typename I::shape_type>)
        return c;
      else // the part of src that index covers
        return bind(O::template move<
                    mv::shrink<shape_from<at_axis_dims<r, 0, 0, 0>>, typename I::shape_type>>(c));
    }();
    using P = axis_last<r, d>;
    auto ip = bind(P::apply(idx));
    auto sp = bind(P::apply(s));
    if constexpr (Add) {
      auto sum = place<n, false>(bind, ip, sp);
      return bind(O::add(x, placed<typename X::shape_type, d>(bind, sum)));
    } else {
      auto [sum, any] = place<n, true>(bind, ip, sp);
      auto v = placed<typename X::shape_type, d>(bind, sum);
      return bind(O::where3(placed<typename X::shape_type, d>(bind, any), v, x));
    }
  }
};
/// Tensor::index_add, of a checked 1-D index.
template <int A> struct index_add_fn {
  template <class Bind, class X, class I, class S>
  constexpr auto operator()(const Bind& bind, const X& x, const I& index, const S& source) const {
    constexpr std::size_t d = std::size_t(normalize_axis(A, X::rank)), r = X::rank,
                          n = X::shape_type::dims[d], m = I::shape_type::dims[0];
    auto idx = bind(O::template wrapped_index<n>(index));
    using P = axis_last<r, d>;
    auto lead = bind(O::template reshape_to<shape_from<one_axis_dims<r, r - 1, m>>>(idx));
    auto sp = bind(P::apply(O::cast_to<X::dtype>(source)));
    auto sum = place<n, false>(bind, lead, sp);
    return bind(O::add(x, P::invert(sum)));
  }
};
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

// ---- einsum ----------------------------------------------------------------------------------
/// An einsum equation as a template argument: tg::einsum<"ij,jk->ik">(a, b).
template <std::size_t N> struct equation {
  char s[N]{};
  constexpr equation(const char (&str)[N]) {
    for (std::size_t i = 0; i < N; ++i) s[i] = str[i];
  }
  constexpr std::string_view view() const { return {s, N - 1}; }
};

inline constexpr std::size_t kEinsumRank = 16, kEinsumOperands = 8;
/// What tg::einsum does with an equation and its operands' shapes, step by step as the run-time
/// einsum: per operand, the diagonals its repeated letters take (dims p and q, q then summed
/// away), then a permutation and a reshape to every letter of the equation (1 where absent); the
/// product of them all, a sum over the letters not in the output, and the output's permutation.
struct einsum_plan {
  enum error_t { ok, operand_count, rank, diagonal_sizes, not_a_letter, sizes, output_letter };
  error_t error = ok;
  std::size_t operands = 0, letters = 0, summed = 0, out = 0;
  std::array<std::size_t, kEinsumOperands> diagonals{}, ranks{};
  std::array<std::array<std::array<int, 2>, kEinsumRank>, kEinsumOperands> diagonal{};
  std::array<std::array<int, kEinsumRank>, kEinsumOperands> perm{};
  std::array<std::array<std::size_t, kEinsumRank>, kEinsumOperands> shape{};
  std::array<int, kEinsumRank> summed_axes{}, out_perm{};
};
/// Letters as std::string would hold them (std::string is not constexpr in libstdc++ 12 for
/// Clang).
using letters_t = std::vector<char>;
constexpr std::size_t find_letter(const letters_t& t, char c) {
  for (std::size_t i = 0; i < t.size(); ++i)
    if (t[i] == c) return i;
  return std::string_view::npos;
}
constexpr std::size_t letter_index(char c) { return std::size_t(static_cast<unsigned char>(c)); }
constexpr einsum_plan
plan_einsum(std::string_view equation, std::size_t n,
            const std::array<std::size_t, kEinsumOperands>& rank,
            const std::array<std::array<std::size_t, kEinsumRank>, kEinsumOperands>& dims0) {
  einsum_plan p;
  auto dims = dims0;
  letters_t eq_chars;
  for (char c : equation)
    if (c != ' ') eq_chars.push_back(c);
  const std::string_view eq(eq_chars.data(), eq_chars.size());
  const std::size_t arrow = eq.find("->");
  const std::string_view lhs = eq.substr(0, arrow);
  std::vector<letters_t> terms(1);
  for (char c : lhs)
    if (c == ',')
      terms.emplace_back();
    else
      terms.back().push_back(c);
  auto fail = [&](einsum_plan::error_t e) {
    p.error = e;
    return p;
  };
  if (terms.size() != n || n > kEinsumOperands) return fail(einsum_plan::operand_count);
  p.operands = n;
  letters_t letters;
  std::array<int, 256> count{}, written{}; // in the operands after diagonals; in the equation
  for (const letters_t& t : terms)
    for (char c : t) ++written[letter_index(c)];
  std::array<std::size_t, 256> size{};
  std::array<bool, 256> sized{};
  for (std::size_t k = 0; k < n; ++k) {
    letters_t& t = terms[k];
    if (t.size() != rank[k] || t.size() > kEinsumRank) return fail(einsum_plan::rank);
    std::size_t r = rank[k];
    for (std::size_t q = 1; q < t.size(); ++q) { // a letter twice takes the diagonal
      const std::size_t at = find_letter(t, t[q]);
      if (at == q) continue;
      if (dims[k][at] != dims[k][q]) return fail(einsum_plan::diagonal_sizes);
      p.diagonal[k][p.diagonals[k]++] = {int(at), int(q)};
      for (std::size_t i = q; i + 1 < r; ++i) dims[k][i] = dims[k][i + 1];
      --r;
      t.erase(t.begin() + std::ptrdiff_t(q--));
    }
    p.ranks[k] = r;
    for (std::size_t i = 0; i < t.size(); ++i) {
      const char c = t[i];
      if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')))
        return fail(einsum_plan::not_a_letter);
      const std::size_t u = letter_index(c);
      if (!count[u]++) letters.push_back(c);
      const std::size_t sz = dims[k][i];
      if (!sized[u] || size[u] == 1) {
        size[u] = sz;
        sized[u] = true;
      } else if (sz != 1 && sz != size[u]) {
        return fail(einsum_plan::sizes);
      }
    }
  }
  letters_t out;
  if (arrow == std::string_view::npos) { // the letters written once, in alphabetical order
    for (std::size_t c = 0; c < 256; ++c)
      if (written[c] == 1) out.push_back(char(c));
  } else {
    for (char c : eq.substr(arrow + 2)) {
      if (!count[letter_index(c)]) return fail(einsum_plan::output_letter);
      out.push_back(c);
    }
  }
  if (letters.size() > kEinsumRank) return fail(einsum_plan::rank);
  p.letters = letters.size();
  for (std::size_t k = 0; k < n; ++k) {
    std::size_t m = 0;
    for (std::size_t l = 0; l < letters.size(); ++l) {
      const std::size_t at = find_letter(terms[k], letters[l]);
      if (at != std::string_view::npos) p.perm[k][m++] = int(at);
      p.shape[k][l] = at == std::string_view::npos ? 1 : dims[k][at];
    }
  }
  letters_t kept;
  for (std::size_t l = 0; l < letters.size(); ++l)
    if (find_letter(out, letters[l]) == std::string_view::npos)
      p.summed_axes[p.summed++] = int(l);
    else
      kept.push_back(letters[l]);
  p.out = out.size();
  for (std::size_t i = 0; i < out.size(); ++i) p.out_perm[i] = int(find_letter(kept, out[i]));
  return p;
}
/// The plan for equation Eq over operands of shapes S.
template <equation Eq, class... S> struct einsum_plan_of {
  static constexpr einsum_plan value = [] {
    std::array<std::size_t, kEinsumOperands> rank{};
    std::array<std::array<std::size_t, kEinsumRank>, kEinsumOperands> dims{};
    std::size_t k = 0;
    auto one = [&]<class T>(T*) {
      if (k >= kEinsumOperands) return;
      rank[k] = T::rank;
      for (std::size_t i = 0; i < T::rank && i < kEinsumRank; ++i) dims[k][i] = T::dims[i];
      ++k;
    };
    (one(static_cast<S*>(nullptr)), ...);
    return plan_einsum(Eq.view(), sizeof...(S), rank, dims);
  }();
};
template <equation Eq, class... S>
inline constexpr bool einsum_fits = einsum_plan_of<Eq, S...>::value.error == einsum_plan::ok;

template <equation Eq, class... S> struct einsum_fn {
  using P = einsum_plan_of<Eq, S...>;
  /// Operand K's diagonal steps from Step on (detail: where(arange_p == arange_q, x, 0) summed
  /// over q).
  template <std::size_t K, std::size_t Step, class Bind, class X>
  static constexpr auto diagonals(const Bind& bind, const X& x) {
    if constexpr (Step == P::value.diagonals[K])
      return x;
    else {
      constexpr std::size_t p = std::size_t(P::value.diagonal[K][Step][0]),
                            q = std::size_t(P::value.diagonal[K][Step][1]), r = X::rank,
                            n = X::shape_type::dims[p];
      auto on = bind(O::eq(arange_along<r, p, n>(), bind(arange_along<r, q, n>())));
      auto d = bind(O::cast_to<X::dtype>(
          O::template sum<false, int(q)>(O::where3(on, x, O::full<shape<>, X::dtype>(0)))));
      return diagonals<K, Step + 1>(bind, d);
    }
  }
  /// Operand K's shape over every letter.
  template <std::size_t K> struct term_dims {
    static constexpr auto value = [] {
      dims_t<P::value.letters> d{};
      for (std::size_t l = 0; l < P::value.letters; ++l) d[l] = P::value.shape[K][l];
      return d;
    }();
  };
  template <std::size_t K, class Bind, class X>
  static constexpr auto arranged(const Bind& bind, const X& x0) {
    auto x = diagonals<K, 0>(bind, x0);
    auto permute = [&]<std::size_t... I>(std::index_sequence<I...>) {
      return O::template permute<P::value.perm[K][I]...>(x);
    };
    return bind(O::template reshape_to<shape_from<term_dims<K>>>(
        permute(std::make_index_sequence<P::value.ranks[K]>{})));
  }
  template <class Bind, class... X>
  constexpr auto operator()(const Bind& bind, const X&... xs) const {
    auto multiply = [&]<std::size_t... K>(std::index_sequence<K...>) {
      auto terms = std::tuple(arranged<K>(bind, xs)...);
      return product(bind, std::get<K>(terms)...);
    };
    auto prod = multiply(std::index_sequence_for<X...>{});
    auto sum = [&]<std::size_t... I>(std::index_sequence<I...>) {
      if constexpr (sizeof...(I) == 0)
        return prod;
      else
        return bind(O::template sum<false, P::value.summed_axes[I]...>(prod));
    };
    auto r = sum(std::make_index_sequence<P::value.summed>{});
    auto permute = [&]<std::size_t... I>(std::index_sequence<I...>) {
      return bind(O::template permute<P::value.out_perm[I]...>(r));
    };
    if constexpr (P::value.out > 1)
      return permute(std::make_index_sequence<P::value.out>{});
    else
      return r;
  }
  template <class Bind, class A, class... B>
  static constexpr auto product(const Bind& bind, const A& a, const B&... b) {
    if constexpr (sizeof...(B) == 0)
      return a;
    else
      return product_rest(bind, a, b...);
  }
  template <class Bind, class A, class B, class... C>
  static constexpr auto product_rest(const Bind& bind, const A& a, const B& b, const C&... c) {
    auto ab = bind(O::mul(a, b));
    if constexpr (sizeof...(C) == 0)
      return ab;
    else
      return product_rest(bind, ab, c...);
  }
};

/// one_hot's error (not constexpr: reaching it in a constant expression is the compile error).
[[noreturn]] inline void one_hot_out_of_range(std::int64_t i, std::int64_t n,
                                              const std::source_location& loc) {
  tg::detail::fail<index_error>(
      "one_hot", "class index " + std::to_string(i) + " is outside [0, " + std::to_string(n) + ")",
      loc);
}

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
  /// Tensor::scatter (Add false) and scatter_add: the index checked when the op is built.
  template <int A, bool Add, class E, class I, class S>
  static constexpr auto scatter(const E& e, const I& index, const S& src,
                                const std::source_location& loc) {
    constexpr std::size_t d = std::size_t(normalize_axis(A, E::rank));
    auto idx = O::template checked_index<typename E::shape_type, d, op::scatter>(
        index, Add ? "scatter_add" : "scatter", loc);
    return make_composite<scatter_fn<A, Add>>(e, idx, src);
  }
  template <int A, class E, class I, class S>
  static constexpr auto index_add(const E& e, const I& index, const S& source,
                                  const std::source_location& loc) {
    constexpr std::size_t d = std::size_t(normalize_axis(A, E::rank));
    auto idx = O::template checked_index<typename E::shape_type, d, op::index_add>(
        index, "index_add", loc);
    return make_composite<index_add_fn<A>>(e, idx, source);
  }
  /// nn::functional::one_hot(idx, N): int64, every index in [0, N) (checked when built).
  template <std::int64_t N, class I>
  static constexpr auto one_hot(const I& index, const std::source_location& loc) {
    auto idx = [&] {
      if constexpr (I::is_symbolic || is_stored<I>)
        return index;
      else
        return kept<fixed_for<I::dtype, typename I::shape_type>>(O::eval(index));
    }();
    if constexpr (!I::is_symbolic) {
      const auto ev = idx.evaluator();
      for (std::size_t k = 0; k < I::size; ++k) {
        const auto i = std::int64_t(ev.coeff(k));
        if (i < 0 || i >= N) one_hot_out_of_range(i, N, loc);
      }
    }
    constexpr DType t = N > 2147483647 || itemsize(I::dtype) == 8 ? DType::Int64 : DType::Int32;
    return O::cast_to<DType::Int64>(O::eq(O::template unsqueeze<-1>(O::cast_to<t>(idx)),
                                          arange_leaf<t, std::size_t(N), false>{}));
  }
  /// tg::einsum<Eq>(operands...).
  template <equation Eq, class... E> static constexpr auto einsum(const E&... es) {
    return make_composite<einsum_fn<Eq, typename E::shape_type...>>(es...);
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
