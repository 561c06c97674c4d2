#pragma once
// tg::expression<D>: the methods every static expression has (x.exp(), x.sum<1>(), x.T(), ...).
// Each method checks its shapes and dtypes with one static_assert, then builds the expression from
// primitives exactly as the run-time front end's Tensor method of the same name builds its graph
// (the builders are fx::ops, in ops.hpp).
#include <source_location>

#include "math.hpp"
#include "shape.hpp"

#if defined(__GNUC__) || defined(__clang__)
#define TG_FX_INLINE [[gnu::always_inline]] inline
#else
#define TG_FX_INLINE inline
#endif

namespace tg {

template <class D> struct expression;
template <class T, std::size_t... D> class fixed;
template <int Id, class T, std::size_t... D> struct input;

namespace fx {

/// Every static expression (and tg::fixed, and tg::input) derives from this.
struct expr_tag {};
template <class E>
concept expr = std::is_base_of_v<expr_tag, std::remove_cvref_t<E>>;

template <class E> struct is_fixed_t : std::false_type {};
template <class T, std::size_t... D> struct is_fixed_t<fixed<T, D...>> : std::true_type {};
template <class E> inline constexpr bool is_fixed = is_fixed_t<std::remove_cvref_t<E>>::value;

/// Conversions to and from a run-time tensor type R (specialized in bridge.hpp for tg::Tensor).
template <class R> struct bridge {
  // true in a specialization that defines from_expr and copy_to
  static constexpr bool enabled = false;
};
template <class R>
concept bridged = bridge<R>::enabled;

/// The builders (defined in ops.hpp); a class template so that the methods below can name them
/// before they are defined.
template <class = void> struct ops;
/// The builders of composite ops (composite.hpp).
template <class = void> struct composites;
} // namespace fx
/// The order of the infinity norm, for norm<P>(): tg::norm_inf (max |x|), -tg::norm_inf (min).
inline constexpr int norm_inf = std::numeric_limits<int>::max();
namespace fx {

/// The expression node an operand becomes (a fixed tensor becomes a leaf that refers to it).
template <class E> using node_t = decltype(ops<E>::node(std::declval<E>()));

/// The shape of an expression as diagnostics show it.
template <class E> struct shape_of_t {
  using type = std::conditional_t<std::remove_cvref_t<E>::is_error, unknown_shape,
                                  typename std::remove_cvref_t<E>::shape_type>;
};
template <class E> using shape_of = typename shape_of_t<E>::type;
/// The element type of an expression as diagnostics show it.
template <class E> using elem_of = storage_t<std::remove_cvref_t<E>::dtype>;

/// T for an error stand-in (so that an earlier mistake is not reported again), else E's element
/// type.
template <class T, class E>
using elem_or = std::conditional_t<std::remove_cvref_t<E>::is_error, T,
                                   storage_t<std::remove_cvref_t<E>::dtype>>;

/// An expression that stands in for a failed op, so that one mistake gives one diagnostic.
struct error_expr;

// ---- compile-time checks on user arguments (used by the methods and by ops.hpp) ---------------
template <std::size_t N, std::size_t M>
constexpr bool reshape_ok(const dims_t<N>& from, const std::array<std::int64_t, M>& to) {
  std::size_t total = 1, known = 1;
  int infer = 0;
  for (std::size_t d : from) total *= d;
  for (std::int64_t d : to) {
    if (d == -1)
      ++infer;
    else if (d < 0)
      return false;
    else
      known *= std::size_t(d);
  }
  if (infer > 1) return false;
  if (infer == 1) return known != 0 && total % known == 0;
  return known == total;
}
template <std::size_t N, std::size_t M>
constexpr dims_t<M> reshape_dims(const dims_t<N>& from, const std::array<std::int64_t, M>& to) {
  std::size_t total = 1, known = 1;
  for (std::size_t d : from) total *= d;
  for (std::int64_t d : to)
    if (d >= 0) known *= std::size_t(d);
  dims_t<M> r{};
  for (std::size_t i = 0; i < M; ++i)
    r[i] = to[i] >= 0 ? std::size_t(to[i]) : known ? total / known : 0;
  return r;
}
template <std::size_t N, std::size_t M>
constexpr bool expand_ok(const dims_t<N>& from, const std::array<std::int64_t, M>& to) {
  if (M < N) return false;
  for (std::size_t i = 0; i < M; ++i) {
    std::size_t src = i < M - N ? 1 : from[i - (M - N)];
    if (to[i] == -1) {
      if (i < M - N) return false;
      continue;
    }
    if (to[i] < 0) return false;
    if (std::size_t(to[i]) != src && src != 1) return false;
  }
  return true;
}
template <std::size_t N>
constexpr bool permutation_ok(const std::array<int, N>& p, std::size_t rank) {
  return N == rank && axes_ok(p, rank);
}
template <std::size_t N, std::size_t M>
constexpr bool pads_ok(const dims_t<N>& s, const std::array<std::int64_t, M>& pads) {
  if (M % 2 || M > 2 * N) return false;
  for (std::size_t k = 0; k < M / 2; ++k) {
    std::int64_t size = std::int64_t(s[N - 1 - k]), b = pads[2 * k], e = pads[2 * k + 1];
    if (b < -size || e < -size || b + e < -size) return false;
  }
  return true;
}
template <std::size_t N> constexpr bool multiply_ok(const dims_t<N>& a, const auto& b) {
  constexpr std::size_t M = std::tuple_size_v<std::remove_cvref_t<decltype(b)>>;
  if (N == 0 || M == 0) return false;
  std::size_t k_a = a[N - 1], k_b = M == 1 ? b[0] : b[M - 2];
  if (k_a != k_b) return false;
  // batch dims broadcast
  std::size_t na = N >= 2 ? N - 2 : 0, nb = M >= 2 ? M - 2 : 0, n = na > nb ? na : nb;
  for (std::size_t i = 0; i < n; ++i) {
    std::size_t x = i < n - na ? 1 : a[i - (n - na)], y = i < n - nb ? 1 : b[i - (n - nb)];
    if (!(x == y || x == 1 || y == 1)) return false;
  }
  return true;
}

template <class S> struct append_one_dims {
  static constexpr auto value = [] {
    dims_t<S::rank + 1> r{};
    for (std::size_t i = 0; i < S::rank; ++i) r[i] = S::dims[i];
    r[S::rank] = 1;
    return r;
  }();
};
template <class S> struct append_one_t : std::type_identity<shape_from<append_one_dims<S>>> {};
template <> struct append_one_t<unknown_shape> : std::type_identity<unknown_shape> {};
/// S with one more (size-1) axis: the shape unsqueeze's axis is checked against.
template <class S> using append_one = typename append_one_t<S>::type;

} // namespace fx

// ---- the checks named in diagnostics (continued from shape.hpp) ---------------------------------
/// A reshape that keeps the number of elements (one -1 is inferred).
template <class S, class To> inline constexpr bool reshapeable = false;
template <class S, std::int64_t... D>
inline constexpr bool reshapeable<S, dims<D...>> =
    fx::is_unknown<S> || fx::reshape_ok(S::dims, std::array<std::int64_t, sizeof...(D)>{D...});
/// An expand (broadcast_to) that only grows size-1 axes (-1 keeps a size; new axes lead).
template <class S, class To> inline constexpr bool expandable = false;
template <class S, std::int64_t... D>
inline constexpr bool expandable<S, dims<D...>> =
    fx::is_unknown<S> || fx::expand_ok(S::dims, std::array<std::int64_t, sizeof...(D)>{D...});
/// A permutation of all the axes of S.
template <class S, class P> inline constexpr bool is_permutation = false;
template <class S, int... P>
inline constexpr bool is_permutation<S, axes<P...>> =
    fx::is_unknown<S> || fx::permutation_ok(std::array<int, sizeof...(P)>{P...}, S::rank);
/// matmul / dot operands: at least 1-D, inner dims equal, batch dims broadcast.
template <class Op, class A, class B>
inline constexpr bool multipliable = fx::any_unknown<A, B> || fx::multiply_ok(A::dims, B::dims);
/// PyTorch's F.pad pairs (before, after) from the last axis, cropping at most the axis size.
template <class S, class P> inline constexpr bool pads_fit = false;
template <class S, std::int64_t... P>
inline constexpr bool pads_fit<S, dims<P...>> =
    (fx::is_unknown<S> || fx::pads_ok(S::dims, std::array<std::int64_t, sizeof...(P)>{P...}));
/// A nonzero slice step on an axis in range.
template <class S, class Axis, class Step> inline constexpr bool slice_fits = false;
template <class S, int A, std::int64_t St>
inline constexpr bool slice_fits<S, axes<A>, dims<St>> =
    (fx::is_unknown<S> || (St != 0 && fx::axes_ok(std::array<int, 1>{A}, S::rank)));
/// Tensor::unfold's windows: an axis in range, 1 <= size <= its length, step >= 1, and room for
/// the axis of taps.
template <class S, class Axis, class SizeStep> inline constexpr bool unfold_fits = false;
template <class S, int A, std::int64_t Size, std::int64_t Step>
inline constexpr bool unfold_fits<S, axes<A>, dims<Size, Step>> = [] {
  if constexpr (fx::is_unknown<S>)
    return true;
  else {
    if (!fx::axes_ok(std::array<int, 1>{A}, S::rank) || S::rank == 0) return false;
    const auto n = std::int64_t(S::dims[std::size_t(fx::normalize_axis(A, S::rank))]);
    return Size >= 1 && Size <= n && Step >= 1 && S::rank < fixed_max_rank;
  }
}();
/// An integer index inside [-size, size) of its axis.
template <class S, class Axis, class I> inline constexpr bool index_in_range = false;
template <class S, int A, std::int64_t I>
inline constexpr bool index_in_range<S, axes<A>, dims<I>> = [] {
  if constexpr (fx::is_unknown<S>)
    return true;
  else {
    if (!fx::axes_ok(std::array<int, 1>{A}, S::rank) || S::rank == 0) return false;
    std::int64_t n = std::int64_t(S::dims[std::size_t(fx::normalize_axis(A, S::rank))]);
    return I >= -n && I < n;
  }
}();
/// At most 2 axes (x.T()).
template <class Op, class S> inline constexpr bool at_most_2d = fx::is_unknown<S> || S::rank <= 2;
/// Reinterpreting bits needs element types of one size.
template <class Op, class From, class To>
inline constexpr bool same_itemsize = itemsize(dtype_of<From>) == itemsize(dtype_of<To>);
/// Element access with one index per axis.
template <class S, class Indices> inline constexpr bool index_count_matches = false;
template <class S, std::size_t N>
inline constexpr bool index_count_matches<S, rows<N>> = S::rank == N;
/// The rows of a nested initializer list fill the shape exactly.
template <class S, class Rows> inline constexpr bool initializer_fits = false;
template <std::size_t... D, std::size_t... N>
inline constexpr bool initializer_fits<shape<D...>, rows<N...>> = [] {
  constexpr std::array<std::size_t, sizeof...(D)> d{D...};
  constexpr std::array<std::size_t, sizeof...(N)> n{N...};
  if constexpr (sizeof...(D) == 1)
    return sizeof...(N) == 1 && n[0] == d[0];
  else {
    if (sizeof...(N) != d[0]) return false;
    std::size_t inner = 1;
    for (std::size_t i = 1; i < d.size(); ++i) inner *= d[i];
    for (std::size_t x : n)
      if (x != inner) return false;
    return true;
  }
}();
/// A value to evaluate: tg::input placeholders have none.
template <class Op, class E> inline constexpr bool has_data = !std::remove_cvref_t<E>::is_symbolic;
/// A tensor with exactly one element (item()).
template <class Op, class S> inline constexpr bool one_element = fx::is_unknown<S> || S::size == 1;

/// The methods of every static expression. D is the derived expression type.
template <class D> struct expression : fx::expr_tag {
  constexpr const D& self() const { return static_cast<const D&>(*this); }

private:
  using X = fx::ops<D>;
  using C = fx::composites<D>;
  // Alias templates, so that nothing about D (incomplete here) is needed before a method is used.
  template <class DD = D> using N_ = fx::node_t<const DD&>;
  template <class DD = D> using S_ = fx::shape_of<fx::node_t<const DD&>>;
  template <class DD = D> using T_ = fx::elem_of<fx::node_t<const DD&>>;

public:
  // ---- elementwise ---------------------------------------------------------------------------
  constexpr auto neg() const {
    static_assert(defined_for<op::neg, T_<>>, "tg: neg: not defined for bool (use logical_not)");
    return X::neg(X::node(self()));
  }
  constexpr auto abs() const {
    static_assert(defined_for<op::abs, T_<>>, "tg: abs: not defined for bool");
    return X::abs(X::node(self()));
  }
  constexpr auto sign() const {
    static_assert(defined_for<op::sign, T_<>>, "tg: sign: not defined for bool");
    return X::sign(X::node(self()));
  }
  constexpr auto relu() const {
    static_assert(defined_for<op::relu, T_<>>, "tg: relu: not defined for bool");
    return X::relu(X::node(self()));
  }
  constexpr auto exp() const { return X::exp(X::node(self())); }
  constexpr auto exp2() const { return X::exp2(X::node(self())); }
  constexpr auto log() const { return X::log(X::node(self())); }
  constexpr auto log2() const { return X::log2(X::node(self())); }
  constexpr auto sqrt() const { return X::sqrt(X::node(self())); }
  constexpr auto rsqrt() const { return X::rsqrt(X::node(self())); }
  constexpr auto reciprocal() const { return X::reciprocal(X::node(self())); }
  constexpr auto sin() const { return X::sin(X::node(self())); }
  constexpr auto cos() const { return X::cos(X::node(self())); }
  constexpr auto tan() const { return X::tan(X::node(self())); }
  constexpr auto tanh() const { return X::tanh(X::node(self())); }
  constexpr auto sigmoid() const { return X::sigmoid(X::node(self())); }
  constexpr auto silu() const { return X::silu(X::node(self())); }
  /// erf-based GELU (PyTorch's default, approximate="none").
  constexpr auto gelu() const { return X::gelu(X::node(self())); }
  /// GELU with the tanh approximation (approximate="tanh").
  constexpr auto gelu_tanh() const { return X::gelu_tanh(X::node(self())); }
  constexpr auto leaky_relu(double negative_slope = 0.01) const {
    return X::leaky_relu(X::node(self()), negative_slope);
  }
  constexpr auto softplus(double beta = 1, double threshold = 20) const {
    return X::softplus(X::node(self()), beta, threshold);
  }
  constexpr auto log1p() const { return X::log1p(X::node(self())); }
  constexpr auto expm1() const { return X::expm1(X::node(self())); }
  constexpr auto sinh() const { return X::sinh(X::node(self())); }
  constexpr auto cosh() const { return X::cosh(X::node(self())); }
  constexpr auto asinh() const { return X::asinh(X::node(self())); }
  constexpr auto acosh() const { return X::acosh(X::node(self())); }
  constexpr auto atanh() const { return X::atanh(X::node(self())); }
  constexpr auto erf() const { return C::erf(X::node(self())); }
  constexpr auto erfc() const { return C::erfc(X::node(self())); }
  constexpr auto atan() const { return C::atan(X::node(self())); }
  constexpr auto asin() const { return C::asin(X::node(self())); }
  constexpr auto acos() const { return C::acos(X::node(self())); }
  /// The P-norm over Ax (every axis if none), as Tensor::norm(P, {Ax...}): P an integer >= 0,
  /// or tg::norm_inf / -tg::norm_inf for the largest / smallest |x|.
  template <int P = 2, int... Ax> constexpr auto norm() const {
    static_assert(P >= 0 || P == -norm_inf, "tg: norm: the order must be positive, 0 or +-inf");
    static_assert(axes_in_range<op::norm, S_<>, axes<Ax...>>,
                  "tg: norm: axis out of range or repeated");
    if constexpr (axes_in_range<op::norm, S_<>, axes<Ax...>> && (P >= 0 || P == -norm_inf))
      return C::template norm<P, false, Ax...>(X::node(self()));
    else
      return X::error();
  }
  template <int P = 2, int... Ax> constexpr auto norm(keepdim_t) const {
    static_assert(P >= 0 || P == -norm_inf, "tg: norm: the order must be positive, 0 or +-inf");
    static_assert(axes_in_range<op::norm, S_<>, axes<Ax...>>,
                  "tg: norm: axis out of range or repeated");
    if constexpr (axes_in_range<op::norm, S_<>, axes<Ax...>> && (P >= 0 || P == -norm_inf))
      return C::template norm<P, true, Ax...>(X::node(self()));
    else
      return X::error();
  }
  /// (running maximum, its int64 index) along Axis, as Tensor::cummax: a std::pair.
  template <int Axis> constexpr auto cummax() const {
    static_assert(axes_in_range<op::cummax, S_<>, axes<Axis>>, "tg: cummax: axis out of range");
    if constexpr (axes_in_range<op::cummax, S_<>, axes<Axis>>)
      return C::template cumulative<Axis, false>(X::node(self()));
    else
      return std::pair(X::error(), X::error());
  }
  /// (running minimum, its int64 index) along Axis, as Tensor::cummin: a std::pair.
  template <int Axis> constexpr auto cummin() const {
    static_assert(axes_in_range<op::cummin, S_<>, axes<Axis>>, "tg: cummin: axis out of range");
    static_assert(defined_for<op::cummin, T_<>>, "tg: cummin: not defined for bool");
    if constexpr (axes_in_range<op::cummin, S_<>, axes<Axis>> && defined_for<op::cummin, T_<>>)
      return C::template cumulative<Axis, true>(X::node(self()));
    else
      return std::pair(X::error(), X::error());
  }
  /// log(cumsum(exp(x))) along Axis without overflow, as Tensor::logcumsumexp.
  template <int Axis> constexpr auto logcumsumexp() const {
    static_assert(axes_in_range<op::logcumsumexp, S_<>, axes<Axis>>,
                  "tg: logcumsumexp: axis out of range");
    if constexpr (axes_in_range<op::logcumsumexp, S_<>, axes<Axis>>)
      return C::template logcumsumexp<Axis>(X::node(self()));
    else
      return X::error();
  }
  /// (sorted values, their int64 indices) along Axis, stable, as Tensor::sort: a std::pair.
  template <int Axis = -1, bool Descending = false> constexpr auto sort() const {
    static_assert(axes_in_range<op::sort, S_<>, axes<Axis>> || S_<>::rank == 0,
                  "tg: sort: axis out of range");
    if constexpr (axes_in_range<op::sort, S_<>, axes<Axis>> || S_<>::rank == 0)
      return C::template sort<Axis, Descending>(X::node(self()));
    else
      return std::pair(X::error(), X::error());
  }
  /// The int64 indices that sort along Axis, as Tensor::argsort.
  template <int Axis = -1, bool Descending = false> constexpr auto argsort() const {
    return sort<Axis, Descending>().second;
  }
  /// The K largest (Largest) or smallest values along Axis and their int64 indices, in order, as
  /// Tensor::topk: a std::pair.
  template <std::int64_t K, int Axis = -1, bool Largest = true> constexpr auto topk() const {
    constexpr bool fits = axes_in_range<op::topk, S_<>, axes<Axis>> || S_<>::rank == 0;
    static_assert(fits, "tg: topk: axis out of range");
    if constexpr (fits) {
      constexpr std::int64_t n =
          S_<>::rank == 0
              ? 1
              : std::int64_t(S_<>::dims[std::size_t(fx::normalize_axis(Axis, S_<>::rank))]);
      static_assert(K >= 0 && K <= n, "tg: topk: k is out of range for the axis");
      if constexpr (K >= 0 && K <= n)
        return C::template topk<K, Axis, Largest>(X::node(self()));
      else
        return std::pair(X::error(), X::error());
    } else
      return std::pair(X::error(), X::error());
  }
  /// The angle of (o, this) in (-pi, pi], as torch.atan2 (this is y).
  template <class B> constexpr auto atan2(B&& o) const {
    auto a = X::node(self());
    auto b = X::operand(std::forward<B>(o), a);
    if constexpr (decltype(b)::is_error)
      return X::error();
    else {
      static_assert(broadcastable<op::atan2, S_<>, fx::shape_of<decltype(b)>>,
                    "tg: atan2: shapes cannot be broadcast");
      if constexpr (broadcastable<op::atan2, S_<>, fx::shape_of<decltype(b)>>)
        return C::atan2(a, b);
      else
        return X::error();
    }
  }
  /// sqrt(this^2 + o^2) without overflow or underflow in the squares, as torch.hypot.
  template <class B> constexpr auto hypot(B&& o) const {
    auto a = X::node(self());
    auto b = X::operand(std::forward<B>(o), a);
    if constexpr (decltype(b)::is_error)
      return X::error();
    else {
      static_assert(broadcastable<op::hypot, S_<>, fx::shape_of<decltype(b)>>,
                    "tg: hypot: shapes cannot be broadcast");
      if constexpr (broadcastable<op::hypot, S_<>, fx::shape_of<decltype(b)>>)
        return X::hypot(a, b);
      else
        return X::error();
    }
  }
  /// fmod(o), as Tensor::fmod: the remainder of a / b rounded toward zero (the sign of a).
  template <class B> constexpr auto fmod(B&& o) const {
    auto a = X::node(self());
    auto b = X::operand(std::forward<B>(o), a);
    if constexpr (decltype(b)::is_error)
      return X::error();
    else {
      static_assert(broadcastable<op::fmod, S_<>, fx::shape_of<decltype(b)>>,
                    "tg: fmod: shapes cannot be broadcast");
      static_assert(defined_for<op::fmod, T_<>> && defined_for<op::fmod, fx::elem_of<decltype(b)>>,
                    "tg: fmod: is not defined for bool tensors");
      if constexpr (broadcastable<op::fmod, S_<>, fx::shape_of<decltype(b)>> &&
                    defined_for<op::fmod, T_<>> && defined_for<op::fmod, fx::elem_of<decltype(b)>>)
        return X::fmod(a, b);
      else
        return X::error();
    }
  }
  /// remainder(o), as Tensor::remainder: the remainder of floor division (the sign of b, as
  /// Python's %).
  template <class B> constexpr auto remainder(B&& o) const {
    auto a = X::node(self());
    auto b = X::operand(std::forward<B>(o), a);
    if constexpr (decltype(b)::is_error)
      return X::error();
    else {
      static_assert(broadcastable<op::remainder, S_<>, fx::shape_of<decltype(b)>>,
                    "tg: remainder: shapes cannot be broadcast");
      static_assert(defined_for<op::remainder, T_<>> &&
                        defined_for<op::remainder, fx::elem_of<decltype(b)>>,
                    "tg: remainder: is not defined for bool tensors");
      if constexpr (broadcastable<op::remainder, S_<>, fx::shape_of<decltype(b)>> &&
                    defined_for<op::remainder, T_<>> &&
                    defined_for<op::remainder, fx::elem_of<decltype(b)>>)
        return X::remainder(a, b);
      else
        return X::error();
    }
  }
  /// floor_divide(o), as Tensor::floor_divide: floor(a / b).
  template <class B> constexpr auto floor_divide(B&& o) const {
    auto a = X::node(self());
    auto b = X::operand(std::forward<B>(o), a);
    if constexpr (decltype(b)::is_error)
      return X::error();
    else {
      static_assert(broadcastable<op::floor_divide, S_<>, fx::shape_of<decltype(b)>>,
                    "tg: floor_divide: shapes cannot be broadcast");
      static_assert(defined_for<op::floor_divide, T_<>> &&
                        defined_for<op::floor_divide, fx::elem_of<decltype(b)>>,
                    "tg: floor_divide: is not defined for bool tensors");
      if constexpr (broadcastable<op::floor_divide, S_<>, fx::shape_of<decltype(b)>> &&
                    defined_for<op::floor_divide, T_<>> &&
                    defined_for<op::floor_divide, fx::elem_of<decltype(b)>>)
        return X::floor_divide(a, b);
      else
        return X::error();
    }
  }
  constexpr auto square() const { return X::square(X::node(self())); }
  constexpr auto trunc() const { return X::trunc(X::node(self())); }
  constexpr auto floor() const { return X::floor(X::node(self())); }
  constexpr auto ceil() const { return X::ceil(X::node(self())); }
  constexpr auto round() const { return X::round(X::node(self())); }
  constexpr auto isnan() const { return X::isnan(X::node(self())); }
  constexpr auto isinf() const { return X::isinf(X::node(self())); }
  constexpr auto logical_not() const { return X::logical_not(X::node(self())); }
  /// Lower and upper bounds (as the run-time Tensor's clamp(lo, hi) with both given).
  constexpr auto clamp(double lo, double hi) const { return X::clamp(X::node(self()), lo, hi); }
  template <class U> constexpr auto cast() const {
    static_assert(fx::element<U>, "tg: cast: not an element type");
    return X::template cast_to<dtype_of<U>>(X::node(self()));
  }
  template <class U> constexpr auto bitcast() const {
    static_assert(same_itemsize<op::bitcast, T_<>, U>, "tg: bitcast: element sizes differ");
    return X::template bitcast_to<dtype_of<U>>(X::node(self()));
  }

  // ---- reductions: x.sum() (all axes), x.sum<1>(), x.sum<0, 1>(tg::keepdim)
  // ----------------------
  template <int... Ax> constexpr auto sum() const {
    static_assert(axes_in_range<op::sum, S_<>, axes<Ax...>>,
                  "tg: sum: axis out of range or repeated");
    if constexpr (axes_in_range<op::sum, S_<>, axes<Ax...>>)
      return X::template sum<false, Ax...>(X::node(self()));
    else
      return X::error();
  }
  template <int... Ax> constexpr auto sum(keepdim_t) const {
    static_assert(axes_in_range<op::sum, S_<>, axes<Ax...>>,
                  "tg: sum: axis out of range or repeated");
    if constexpr (axes_in_range<op::sum, S_<>, axes<Ax...>>)
      return X::template sum<true, Ax...>(X::node(self()));
    else
      return X::error();
  }
  template <int... Ax> constexpr auto prod() const {
    static_assert(axes_in_range<op::prod, S_<>, axes<Ax...>>,
                  "tg: prod: axis out of range or repeated");
    if constexpr (axes_in_range<op::prod, S_<>, axes<Ax...>>)
      return X::template prod<false, Ax...>(X::node(self()));
    else
      return X::error();
  }
  template <int... Ax> constexpr auto prod(keepdim_t) const {
    static_assert(axes_in_range<op::prod, S_<>, axes<Ax...>>,
                  "tg: prod: axis out of range or repeated");
    if constexpr (axes_in_range<op::prod, S_<>, axes<Ax...>>)
      return X::template prod<true, Ax...>(X::node(self()));
    else
      return X::error();
  }
  template <int... Ax> constexpr auto max() const {
    static_assert(axes_in_range<op::max, S_<>, axes<Ax...>>,
                  "tg: max: axis out of range or repeated");
    if constexpr (axes_in_range<op::max, S_<>, axes<Ax...>>)
      return X::template max<false, Ax...>(X::node(self()));
    else
      return X::error();
  }
  template <int... Ax> constexpr auto max(keepdim_t) const {
    static_assert(axes_in_range<op::max, S_<>, axes<Ax...>>,
                  "tg: max: axis out of range or repeated");
    if constexpr (axes_in_range<op::max, S_<>, axes<Ax...>>)
      return X::template max<true, Ax...>(X::node(self()));
    else
      return X::error();
  }
  template <int... Ax> constexpr auto min() const {
    static_assert(axes_in_range<op::min, S_<>, axes<Ax...>>,
                  "tg: min: axis out of range or repeated");
    if constexpr (axes_in_range<op::min, S_<>, axes<Ax...>>)
      return X::template min<false, Ax...>(X::node(self()));
    else
      return X::error();
  }
  template <int... Ax> constexpr auto min(keepdim_t) const {
    static_assert(axes_in_range<op::min, S_<>, axes<Ax...>>,
                  "tg: min: axis out of range or repeated");
    if constexpr (axes_in_range<op::min, S_<>, axes<Ax...>>)
      return X::template min<true, Ax...>(X::node(self()));
    else
      return X::error();
  }
  /// torch.amax / amin: max and min over the axes (one gradient rule apart at run time, the same
  /// values).
  template <int... Ax> constexpr auto amax() const { return this->template max<Ax...>(); }
  template <int... Ax> constexpr auto amax(keepdim_t k) const {
    return this->template max<Ax...>(k);
  }
  template <int... Ax> constexpr auto amin() const { return this->template min<Ax...>(); }
  template <int... Ax> constexpr auto amin(keepdim_t k) const {
    return this->template min<Ax...>(k);
  }
  template <int... Ax> constexpr auto any() const {
    static_assert(axes_in_range<op::any, S_<>, axes<Ax...>>,
                  "tg: any: axis out of range or repeated");
    if constexpr (axes_in_range<op::any, S_<>, axes<Ax...>>)
      return X::template any<false, Ax...>(X::node(self()));
    else
      return X::error();
  }
  template <int... Ax> constexpr auto any(keepdim_t) const {
    static_assert(axes_in_range<op::any, S_<>, axes<Ax...>>,
                  "tg: any: axis out of range or repeated");
    if constexpr (axes_in_range<op::any, S_<>, axes<Ax...>>)
      return X::template any<true, Ax...>(X::node(self()));
    else
      return X::error();
  }
  template <int... Ax> constexpr auto all() const {
    static_assert(axes_in_range<op::all, S_<>, axes<Ax...>>,
                  "tg: all: axis out of range or repeated");
    if constexpr (axes_in_range<op::all, S_<>, axes<Ax...>>)
      return X::template all<false, Ax...>(X::node(self()));
    else
      return X::error();
  }
  template <int... Ax> constexpr auto all(keepdim_t) const {
    static_assert(axes_in_range<op::all, S_<>, axes<Ax...>>,
                  "tg: all: axis out of range or repeated");
    if constexpr (axes_in_range<op::all, S_<>, axes<Ax...>>)
      return X::template all<true, Ax...>(X::node(self()));
    else
      return X::error();
  }
  template <int... Ax> constexpr auto logsumexp() const {
    static_assert(axes_in_range<op::logsumexp, S_<>, axes<Ax...>>,
                  "tg: logsumexp: axis out of range or repeated");
    if constexpr (axes_in_range<op::logsumexp, S_<>, axes<Ax...>>)
      return X::template logsumexp<false, Ax...>(X::node(self()));
    else
      return X::error();
  }
  template <int... Ax> constexpr auto logsumexp(keepdim_t) const {
    static_assert(axes_in_range<op::logsumexp, S_<>, axes<Ax...>>,
                  "tg: logsumexp: axis out of range or repeated");
    if constexpr (axes_in_range<op::logsumexp, S_<>, axes<Ax...>>)
      return X::template logsumexp<true, Ax...>(X::node(self()));
    else
      return X::error();
  }
  template <int... Ax> constexpr auto mean() const {
    static_assert(axes_in_range<op::mean, S_<>, axes<Ax...>>,
                  "tg: mean: axis out of range or repeated");
    static_assert(floating<op::mean, T_<>>, "tg: mean: needs a floating point tensor (cast first)");
    if constexpr (axes_in_range<op::mean, S_<>, axes<Ax...>>)
      return X::template mean<false, Ax...>(X::node(self()));
    else
      return X::error();
  }
  template <int... Ax> constexpr auto mean(keepdim_t) const {
    static_assert(axes_in_range<op::mean, S_<>, axes<Ax...>>,
                  "tg: mean: axis out of range or repeated");
    static_assert(floating<op::mean, T_<>>, "tg: mean: needs a floating point tensor (cast first)");
    if constexpr (axes_in_range<op::mean, S_<>, axes<Ax...>>)
      return X::template mean<true, Ax...>(X::node(self()));
    else
      return X::error();
  }
  /// Variance with Bessel's correction by default, as PyTorch.
  template <int... Ax> constexpr auto var(double correction = 1) const {
    return var_<false, Ax...>(correction);
  }
  template <int... Ax> constexpr auto var(keepdim_t, double correction = 1) const {
    return var_<true, Ax...>(correction);
  }
  template <int... Ax> constexpr auto std(double correction = 1) const {
    return std_<false, Ax...>(correction);
  }
  template <int... Ax> constexpr auto std(keepdim_t, double correction = 1) const {
    return std_<true, Ax...>(correction);
  }
  template <int Axis> constexpr auto softmax() const {
    static_assert(axes_in_range<op::softmax, S_<>, axes<Axis>>, "tg: softmax: axis out of range");
    if constexpr (axes_in_range<op::softmax, S_<>, axes<Axis>>)
      return X::template softmax<Axis>(X::node(self()));
    else
      return X::error();
  }
  template <int Axis> constexpr auto log_softmax() const {
    static_assert(axes_in_range<op::log_softmax, S_<>, axes<Axis>>,
                  "tg: log_softmax: axis out of range");
    if constexpr (axes_in_range<op::log_softmax, S_<>, axes<Axis>>)
      return X::template log_softmax<Axis>(X::node(self()));
    else
      return X::error();
  }

  /// The index of the first maximum along Axis (int64; NaN counts as the maximum, as PyTorch).
  template <int Axis> constexpr auto argmax() const { return argmax_<false, Axis>(); }
  template <int Axis> constexpr auto argmax(keepdim_t) const { return argmax_<true, Axis>(); }
  /// Without an axis: the flat index of the first maximum.
  constexpr auto argmax() const { return arg_all_<false, false>(); }
  constexpr auto argmax(keepdim_t) const { return arg_all_<false, true>(); }
  template <int Axis> constexpr auto argmin() const { return argmin_<false, Axis>(); }
  template <int Axis> constexpr auto argmin(keepdim_t) const { return argmin_<true, Axis>(); }
  constexpr auto argmin() const { return arg_all_<true, false>(); }
  constexpr auto argmin(keepdim_t) const { return arg_all_<true, true>(); }

  /// Running sum along Axis (integers and bool accumulate in int64, as on tg::Tensor).
  template <int Axis> constexpr auto cumsum() const {
    static_assert(axes_in_range<op::cumsum, S_<>, axes<Axis>>, "tg: cumsum: axis out of range");
    if constexpr (axes_in_range<op::cumsum, S_<>, axes<Axis>>)
      return X::template cumsum<Axis>(X::node(self()));
    else
      return X::error();
  }
  /// Running product along Axis (integers and bool in int64, as on tg::Tensor).
  template <int Axis> constexpr auto cumprod() const {
    static_assert(axes_in_range<op::cumprod, S_<>, axes<Axis>>, "tg: cumprod: axis out of range");
    if constexpr (axes_in_range<op::cumprod, S_<>, axes<Axis>>)
      return X::template cumprod<Axis>(X::node(self()));
    else
      return X::error();
  }
  /// The lower (upper) triangle of the last two axes: elements with column - row <= K (>= K),
  /// zeros elsewhere, as torch.tril / triu.
  template <std::int64_t K = 0> constexpr auto tril() const {
    static_assert(S_<>::rank >= 2, "tg: tril: needs at least 2 dims");
    if constexpr (S_<>::rank >= 2)
      return X::template triangle<true, K>(X::node(self()));
    else
      return X::error();
  }
  template <std::int64_t K = 0> constexpr auto triu() const {
    static_assert(S_<>::rank >= 2, "tg: triu: needs at least 2 dims");
    if constexpr (S_<>::rank >= 2)
      return X::template triangle<false, K>(X::node(self()));
    else
      return X::error();
  }

  /// out[i][j] = x[index[i][j]][j] (Axis 0), as torch.gather; int64 or narrower integer indices.
  /// An index outside [-n, n) throws tg::index_error (a compile error in a constant expression).
  template <int Axis, class I>
  constexpr auto gather(I&& index,
                        std::source_location loc = std::source_location::current()) const {
    using IN = fx::node_t<I>;
    static_assert(gatherable<op::gather, axes<Axis>, S_<>, fx::shape_of<IN>>,
                  "tg: gather: axis out of range, or the index's shape does not fit");
    static_assert(integral<op::gather, fx::elem_or<int, IN>>,
                  "tg: gather: the index must have an integer type");
    if constexpr (gatherable<op::gather, axes<Axis>, S_<>, fx::shape_of<IN>> &&
                  integral<op::gather, fx::elem_or<int, IN>> && !IN::is_error)
      return X::template gather<Axis>(X::node(self()), X::node(std::forward<I>(index)), loc);
    else
      return X::error();
  }
  /// A copy with src's values written at `index` along Axis (out[index[i][j]][j] = src[i][j] for
  /// Axis 0), as Tensor::scatter: index, src and the tensor of one rank, the index no larger than
  /// src, nor than the tensor but along Axis; values written to one place add up (an index
  /// outside [-n, n) throws tg::index_error: a compile error in a constant expression).
  template <int Axis, class I, class S>
  constexpr auto scatter(I&& index, S&& src,
                         std::source_location loc = std::source_location::current()) const {
    return scatter_<Axis, false>(std::forward<I>(index), std::forward<S>(src), loc);
  }
  /// The tensor plus src's values added at `index` along Axis, as Tensor::scatter_add.
  template <int Axis, class I, class S>
  constexpr auto scatter_add(I&& index, S&& src,
                             std::source_location loc = std::source_location::current()) const {
    return scatter_<Axis, true>(std::forward<I>(index), std::forward<S>(src), loc);
  }
  /// The tensor plus source's slices added at the 1-D `index` along Axis, as Tensor::index_add.
  template <int Axis, class I, class S>
  constexpr auto index_add(I&& index, S&& source,
                           std::source_location loc = std::source_location::current()) const {
    using IN = fx::node_t<I>;
    using SN = fx::node_t<S>;
    static_assert(
        index_addable<op::index_add, axes<Axis>, S_<>, fx::shape_of<IN>, fx::shape_of<SN>>,
        "tg: index_add: axis out of range, an index that is not 1-D, or a source "
        "that is not the tensor's shape with the index's length along the axis");
    static_assert(integral<op::index_add, fx::elem_or<int, IN>>,
                  "tg: index_add: the index must have an integer type");
    if constexpr (index_addable<op::index_add, axes<Axis>, S_<>, fx::shape_of<IN>,
                                fx::shape_of<SN>> &&
                  integral<op::index_add, fx::elem_or<int, IN>> && !IN::is_error && !SN::is_error)
      return C::template index_add<Axis>(X::node(self()), X::node(std::forward<I>(index)),
                                         X::node(std::forward<S>(source)), loc);
    else
      return X::error();
  }

private:
  template <int Axis, bool Add, class I, class S>
  constexpr auto scatter_(I&& index, S&& src, const std::source_location& loc) const {
    using IN = fx::node_t<I>;
    using SN = fx::node_t<S>;
    static_assert(scatterable<op::scatter, axes<Axis>, S_<>, fx::shape_of<IN>, fx::shape_of<SN>>,
                  "tg: scatter: axis out of range, or index, src and the tensor of different "
                  "ranks, or an index larger than src (or than the tensor, but along the axis)");
    static_assert(integral<op::scatter, fx::elem_or<int, IN>>,
                  "tg: scatter: the index must have an integer type");
    if constexpr (scatterable<op::scatter, axes<Axis>, S_<>, fx::shape_of<IN>, fx::shape_of<SN>> &&
                  integral<op::scatter, fx::elem_or<int, IN>> && !IN::is_error && !SN::is_error)
      return C::template scatter<Axis, Add>(X::node(self()), X::node(std::forward<I>(index)),
                                            X::node(std::forward<S>(src)), loc);
    else
      return X::error();
  }

public:
  /// The entries at 1-D `index` along Axis (checked as gather's).
  template <int Axis, class I>
  constexpr auto index_select(I&& index,
                              std::source_location loc = std::source_location::current()) const {
    using IN = fx::node_t<I>;
    static_assert(selectable<op::index_select, axes<Axis>, S_<>, fx::shape_of<IN>>,
                  "tg: index_select: axis out of range, or the index has more than one axis");
    static_assert(integral<op::index_select, fx::elem_or<int, IN>>,
                  "tg: index_select: the index must have an integer type");
    if constexpr (selectable<op::index_select, axes<Axis>, S_<>, fx::shape_of<IN>> &&
                  integral<op::index_select, fx::elem_or<int, IN>> && !IN::is_error)
      return X::template index_select<Axis>(X::node(self()), X::node(std::forward<I>(index)), loc);
    else
      return X::error();
  }

  // ---- movement (views: no copies) --------------------------------------------------------------
  /// One size may be -1 (inferred).
  template <std::int64_t... To> constexpr auto reshape() const {
    static_assert(reshapeable<S_<>, dims<To...>>, "tg: reshape: the sizes do not match");
    if constexpr (reshapeable<S_<>, dims<To...>>)
      return X::template reshape<To...>(X::node(self()));
    else
      return X::error();
  }
  template <std::int64_t... To> constexpr auto view() const { return reshape<To...>(); }
  template <int... P> constexpr auto permute() const {
    static_assert(is_permutation<S_<>, axes<P...>>, "tg: permute: not a permutation of the axes");
    if constexpr (is_permutation<S_<>, axes<P...>>)
      return X::template permute<P...>(X::node(self()));
    else
      return X::error();
  }
  template <int A, int B> constexpr auto transpose() const {
    static_assert(axes_in_range<op::transpose, S_<>, axes<A>> &&
                      axes_in_range<op::transpose, S_<>, axes<B>>,
                  "tg: transpose: axis out of range");
    if constexpr (axes_in_range<op::transpose, S_<>, axes<A>> &&
                  axes_in_range<op::transpose, S_<>, axes<B>>)
      return X::template transpose<A, B>(X::node(self()));
    else
      return X::error();
  }
  constexpr auto T() const {
    static_assert(at_most_2d<op::T, S_<>>, "tg: T: needs at most 2 axes (use permute)");
    if constexpr (at_most_2d<op::T, S_<>>)
      return X::T(X::node(self()));
    else
      return X::error();
  }
  /// -1 keeps a size; new leading axes may be added.
  template <std::int64_t... To> constexpr auto expand() const {
    static_assert(expandable<S_<>, dims<To...>>, "tg: expand: only size-1 axes can grow");
    if constexpr (expandable<S_<>, dims<To...>>)
      return X::template expand<To...>(X::node(self()));
    else
      return X::error();
  }
  template <std::int64_t... To> constexpr auto broadcast_to() const { return expand<To...>(); }
  /// Without an axis: every size-1 axis.
  template <int... Axis> constexpr auto squeeze() const {
    static_assert(sizeof...(Axis) <= 1, "tg: squeeze: at most one axis");
    static_assert(axes_in_range<op::squeeze, S_<>, axes<Axis...>>,
                  "tg: squeeze: axis out of range");
    if constexpr (sizeof...(Axis) <= 1 && axes_in_range<op::squeeze, S_<>, axes<Axis...>>)
      return X::template squeeze<Axis...>(X::node(self()));
    else
      return X::error();
  }
  template <int Axis> constexpr auto unsqueeze() const {
    static_assert(axes_in_range<op::unsqueeze, fx::append_one<S_<>>, axes<Axis>>,
                  "tg: unsqueeze: axis out of range");
    if constexpr (axes_in_range<op::unsqueeze, fx::append_one<S_<>>, axes<Axis>>)
      return X::template unsqueeze<Axis>(X::node(self()));
    else
      return X::error();
  }
  template <int Start = 0, int End = -1> constexpr auto flatten() const {
    constexpr bool ok = S_<>::rank == 0 || (axes_in_range<op::flatten, S_<>, axes<Start>> &&
                                            axes_in_range<op::flatten, S_<>, axes<End>> &&
                                            fx::normalize_axis(Start, S_<>::rank) <=
                                                fx::normalize_axis(End, S_<>::rank));
    static_assert(ok, "tg: flatten: axes out of range or start after end");
    if constexpr (ok)
      return X::template flatten<Start, End>(X::node(self()));
    else
      return X::error();
  }
  /// PyTorch's F.pad: pairs (before, after) from the last axis; negative values crop. Zero padding.
  template <std::int64_t... P> constexpr auto pad() const {
    static_assert(pads_fit<S_<>, dims<P...>>, "tg: pad: bad pads for this shape");
    if constexpr (pads_fit<S_<>, dims<P...>>)
      return X::template pad<P...>(X::node(self()));
    else
      return X::error();
  }
  /// Padding with a value (the run-time front end skips the select when value == 0).
  template <std::int64_t... P> constexpr auto pad(double value) const {
    static_assert(pads_fit<S_<>, dims<P...>>, "tg: pad: bad pads for this shape");
    if constexpr (pads_fit<S_<>, dims<P...>>)
      return X::template pad_value<P...>(X::node(self()), value);
    else
      return X::error();
  }
  /// x[start:stop:step] along Axis, Python's semantics (tg::none for a missing bound).
  template <int Axis, std::int64_t Start, std::int64_t Stop = none, std::int64_t Step = 1>
  constexpr auto slice() const {
    static_assert(slice_fits<S_<>, axes<Axis>, dims<Step>>,
                  "tg: slice: axis out of range or step 0");
    if constexpr (slice_fits<S_<>, axes<Axis>, dims<Step>>)
      return X::template slice<Axis, Start, Stop, Step>(X::node(self()));
    else
      return X::error();
  }
  /// Tensor::unfold: every Step-th window of Size elements along Axis, as a view whose Axis
  /// counts the windows and whose new last axis holds each window's elements.
  template <int Axis, std::int64_t Size, std::int64_t Step> constexpr auto unfold() const {
    static_assert(unfold_fits<S_<>, axes<Axis>, dims<Size, Step>>,
                  "tg: unfold: axis out of range, or not 1 <= size <= its length and step >= 1, "
                  "or the result would pass the maximum rank");
    if constexpr (unfold_fits<S_<>, axes<Axis>, dims<Size, Step>>)
      return X::template unfold<Axis, Size, Step>(X::node(self()));
    else
      return X::error();
  }
  /// x[..., i, ...] along Axis: the axis is removed.
  template <int Axis, std::int64_t I> constexpr auto select() const {
    static_assert(index_in_range<S_<>, axes<Axis>, dims<I>>, "tg: select: index out of range");
    if constexpr (index_in_range<S_<>, axes<Axis>, dims<I>>)
      return X::template select<Axis, I>(X::node(self()));
    else
      return X::error();
  }
  template <int... Axes> constexpr auto flip() const {
    static_assert(axes_in_range<op::flip, S_<>, axes<Axes...>>, "tg: flip: axis out of range");
    if constexpr (axes_in_range<op::flip, S_<>, axes<Axes...>>)
      return X::template flip<Axes...>(X::node(self()));
    else
      return X::error();
  }
  template <std::size_t... Reps> constexpr auto repeat() const {
    static_assert(sizeof...(Reps) >= S_<>::rank, "tg: repeat: needs a count for every axis");
    if constexpr (sizeof...(Reps) >= S_<>::rank)
      return X::template repeat<Reps...>(X::node(self()));
    else
      return X::error();
  }
  /// Pieces of Size along Axis, the last one shorter when Size does not divide the axis
  /// (Tensor::split(size, dim)): a std::tuple of views.
  template <std::int64_t Size, int Axis = 0> constexpr auto split() const {
    static_assert(splittable<op::split, axes<Axis>, S_<>, dims<Size>>,
                  "tg: split: axis out of range, or the split size is not positive");
    if constexpr (splittable<op::split, axes<Axis>, S_<>, dims<Size>>)
      return X::template split<Axis, Size>(X::node(self()));
    else
      return X::template error_pieces<1>();
  }
  /// Pieces of the given sizes along Axis, x.split<tg::dims<2, 3>, Axis>() (Tensor::split(sizes,
  /// dim)): a std::tuple of views.
  template <class Sizes, int Axis = 0> constexpr auto split() const {
    static_assert(sizes_add_up<op::split, axes<Axis>, S_<>, Sizes>,
                  "tg: split: axis out of range, or the sizes do not add up to its size");
    if constexpr (sizes_add_up<op::split, axes<Axis>, S_<>, Sizes>)
      return X::template split_into<Axis, Sizes>(X::node(self()));
    else
      return X::template error_pieces<fx::split_sizes<Sizes>::count>();
  }
  /// Chunks pieces of ceil(size / Chunks) along Axis, fewer when they cover the axis sooner
  /// (Tensor::chunk, torch.chunk): a std::tuple of views.
  template <std::int64_t Chunks, int Axis = 0> constexpr auto chunk() const {
    static_assert(chunkable<op::chunk, axes<Axis>, S_<>, dims<Chunks>>,
                  "tg: chunk: axis out of range, or the number of chunks is not positive");
    if constexpr (chunkable<op::chunk, axes<Axis>, S_<>, dims<Chunks>>)
      return X::template chunk<Axis, Chunks>(X::node(self()));
    else
      return X::template error_pieces<(Chunks > 0 ? std::size_t(Chunks) : 1)>();
  }

  // ---- composite -----------------------------------------------------------------------------
  template <class B> constexpr auto matmul(B&& b) const {
    using NB = fx::node_t<B>;
    if constexpr (NB::is_error)
      return X::error();
    else {
      static_assert(multipliable<op::matmul, S_<>, fx::shape_of<NB>>,
                    "tg: matmul: inner dimensions differ (or batch dims do not broadcast)");
      if constexpr (multipliable<op::matmul, S_<>, fx::shape_of<NB>>)
        return X::matmul(X::node(self()), X::node(std::forward<B>(b)));
      else
        return X::error();
    }
  }
  template <class B> constexpr auto dot(B&& b) const {
    using NB = fx::node_t<B>;
    if constexpr (NB::is_error)
      return X::error();
    else {
      constexpr bool ok = S_<>::rank == 1 && fx::shape_of<NB>::rank == 1 &&
                          multipliable<op::dot, S_<>, fx::shape_of<NB>>;
      static_assert(ok || fx::is_unknown<S_<>>, "tg: dot: needs two 1-D tensors of one length");
      if constexpr (ok)
        return X::matmul(X::node(self()), X::node(std::forward<B>(b)));
      else
        return X::error();
    }
  }
  template <class B> constexpr auto pow(B&& o) const {
    auto a = X::node(self());
    auto b = X::operand(std::forward<B>(o), a);
    if constexpr (decltype(b)::is_error)
      return X::error();
    else {
      static_assert(broadcastable<op::pow, S_<>, fx::shape_of<decltype(b)>>,
                    "tg: pow: shapes cannot be broadcast");
      if constexpr (broadcastable<op::pow, S_<>, fx::shape_of<decltype(b)>>)
        return X::pow(a, b);
      else
        return X::error();
    }
  }
  template <class B> constexpr auto maximum(B&& o) const {
    auto a = X::node(self());
    auto b = X::operand(std::forward<B>(o), a);
    if constexpr (decltype(b)::is_error)
      return X::error();
    else {
      static_assert(broadcastable<op::maximum, S_<>, fx::shape_of<decltype(b)>>,
                    "tg: maximum: shapes cannot be broadcast");
      if constexpr (broadcastable<op::maximum, S_<>, fx::shape_of<decltype(b)>>)
        return X::maximum(a, b);
      else
        return X::error();
    }
  }
  template <class B> constexpr auto minimum(B&& o) const {
    auto a = X::node(self());
    auto b = X::operand(std::forward<B>(o), a);
    if constexpr (decltype(b)::is_error)
      return X::error();
    else {
      static_assert(broadcastable<op::minimum, S_<>, fx::shape_of<decltype(b)>>,
                    "tg: minimum: shapes cannot be broadcast");
      if constexpr (broadcastable<op::minimum, S_<>, fx::shape_of<decltype(b)>>)
        return X::minimum(a, b);
      else
        return X::error();
    }
  }
  template <class B> constexpr auto logical_and(B&& o) const {
    auto a = X::node(self());
    auto b = X::operand(std::forward<B>(o), a);
    if constexpr (decltype(b)::is_error)
      return X::error();
    else {
      static_assert(broadcastable<op::logical_and, S_<>, fx::shape_of<decltype(b)>>,
                    "tg: logical_and: shapes cannot be broadcast");
      if constexpr (broadcastable<op::logical_and, S_<>, fx::shape_of<decltype(b)>>)
        return X::logical_and(a, b);
      else
        return X::error();
    }
  }
  template <class B> constexpr auto logical_or(B&& o) const {
    auto a = X::node(self());
    auto b = X::operand(std::forward<B>(o), a);
    if constexpr (decltype(b)::is_error)
      return X::error();
    else {
      static_assert(broadcastable<op::logical_or, S_<>, fx::shape_of<decltype(b)>>,
                    "tg: logical_or: shapes cannot be broadcast");
      if constexpr (broadcastable<op::logical_or, S_<>, fx::shape_of<decltype(b)>>)
        return X::logical_or(a, b);
      else
        return X::error();
    }
  }
  template <class B> constexpr auto logical_xor(B&& o) const {
    auto a = X::node(self());
    auto b = X::operand(std::forward<B>(o), a);
    if constexpr (decltype(b)::is_error)
      return X::error();
    else {
      static_assert(broadcastable<op::logical_xor, S_<>, fx::shape_of<decltype(b)>>,
                    "tg: logical_xor: shapes cannot be broadcast");
      if constexpr (broadcastable<op::logical_xor, S_<>, fx::shape_of<decltype(b)>>)
        return X::logical_xor(a, b);
      else
        return X::error();
    }
  }

  // ---- bitwise ops: integers and bool (& | ^ ~ are these too) --------------------------------
  template <class B> constexpr auto bitwise_and(B&& o) const {
    auto a = X::node(self());
    auto b = X::operand(std::forward<B>(o), a);
    if constexpr (decltype(b)::is_error)
      return X::error();
    else {
      static_assert(broadcastable<op::bitwise_and, S_<>, fx::shape_of<decltype(b)>>,
                    "tg: bitwise_and: shapes cannot be broadcast");
      static_assert(!floating<op::bitwise_and, T_<>> &&
                        !floating<op::bitwise_and, fx::elem_of<decltype(b)>>,
                    "tg: bitwise_and: needs integer or bool tensors");
      if constexpr (broadcastable<op::bitwise_and, S_<>, fx::shape_of<decltype(b)>> &&
                    !floating<op::bitwise_and, T_<>> &&
                    !floating<op::bitwise_and, fx::elem_of<decltype(b)>>)
        return X::bitwise_and(a, b);
      else
        return X::error();
    }
  }
  /// bitwise_left_shift(o), as Tensor::bitwise_left_shift: this * 2^o (PyTorch's <<).
  template <class B> constexpr auto bitwise_left_shift(B&& o) const {
    auto a = X::node(self());
    auto b = X::operand(std::forward<B>(o), a);
    if constexpr (decltype(b)::is_error)
      return X::error();
    else {
      static_assert(broadcastable<op::bitwise_left_shift, S_<>, fx::shape_of<decltype(b)>>,
                    "tg: bitwise_left_shift: shapes cannot be broadcast");
      static_assert(!floating<op::bitwise_left_shift, T_<>> &&
                        !floating<op::bitwise_left_shift, fx::elem_of<decltype(b)>>,
                    "tg: bitwise_left_shift: needs integer or bool tensors");
      if constexpr (broadcastable<op::bitwise_left_shift, S_<>, fx::shape_of<decltype(b)>> &&
                    !floating<op::bitwise_left_shift, T_<>> &&
                    !floating<op::bitwise_left_shift, fx::elem_of<decltype(b)>>)
        return X::bitwise_left_shift(a, b);
      else
        return X::error();
    }
  }
  /// bitwise_right_shift(o), as Tensor::bitwise_right_shift: floor(this / 2^o) (PyTorch's >>,
  /// arithmetic for signed types).
  template <class B> constexpr auto bitwise_right_shift(B&& o) const {
    auto a = X::node(self());
    auto b = X::operand(std::forward<B>(o), a);
    if constexpr (decltype(b)::is_error)
      return X::error();
    else {
      static_assert(broadcastable<op::bitwise_right_shift, S_<>, fx::shape_of<decltype(b)>>,
                    "tg: bitwise_right_shift: shapes cannot be broadcast");
      static_assert(!floating<op::bitwise_right_shift, T_<>> &&
                        !floating<op::bitwise_right_shift, fx::elem_of<decltype(b)>>,
                    "tg: bitwise_right_shift: needs integer or bool tensors");
      if constexpr (broadcastable<op::bitwise_right_shift, S_<>, fx::shape_of<decltype(b)>> &&
                    !floating<op::bitwise_right_shift, T_<>> &&
                    !floating<op::bitwise_right_shift, fx::elem_of<decltype(b)>>)
        return X::bitwise_right_shift(a, b);
      else
        return X::error();
    }
  }
  template <class B> constexpr auto bitwise_or(B&& o) const {
    auto a = X::node(self());
    auto b = X::operand(std::forward<B>(o), a);
    if constexpr (decltype(b)::is_error)
      return X::error();
    else {
      static_assert(broadcastable<op::bitwise_or, S_<>, fx::shape_of<decltype(b)>>,
                    "tg: bitwise_or: shapes cannot be broadcast");
      static_assert(!floating<op::bitwise_or, T_<>> &&
                        !floating<op::bitwise_or, fx::elem_of<decltype(b)>>,
                    "tg: bitwise_or: needs integer or bool tensors");
      if constexpr (broadcastable<op::bitwise_or, S_<>, fx::shape_of<decltype(b)>> &&
                    !floating<op::bitwise_or, T_<>> &&
                    !floating<op::bitwise_or, fx::elem_of<decltype(b)>>)
        return X::bitwise_or(a, b);
      else
        return X::error();
    }
  }
  template <class B> constexpr auto bitwise_xor(B&& o) const {
    auto a = X::node(self());
    auto b = X::operand(std::forward<B>(o), a);
    if constexpr (decltype(b)::is_error)
      return X::error();
    else {
      static_assert(broadcastable<op::bitwise_xor, S_<>, fx::shape_of<decltype(b)>>,
                    "tg: bitwise_xor: shapes cannot be broadcast");
      static_assert(!floating<op::bitwise_xor, T_<>> &&
                        !floating<op::bitwise_xor, fx::elem_of<decltype(b)>>,
                    "tg: bitwise_xor: needs integer or bool tensors");
      if constexpr (broadcastable<op::bitwise_xor, S_<>, fx::shape_of<decltype(b)>> &&
                    !floating<op::bitwise_xor, T_<>> &&
                    !floating<op::bitwise_xor, fx::elem_of<decltype(b)>>)
        return X::bitwise_xor(a, b);
      else
        return X::error();
    }
  }
  constexpr auto bitwise_not() const {
    static_assert(!floating<op::bitwise_not, T_<>>,
                  "tg: bitwise_not: needs an integer or bool tensor");
    if constexpr (!floating<op::bitwise_not, T_<>>)
      return X::bitwise_not(X::node(self()));
    else
      return X::error();
  }
  /// `value` where the bool mask (broadcast to this shape) is true.
  template <class M> constexpr auto masked_fill(M&& mask, double value) const {
    auto a = X::node(self());
    auto m = X::node(std::forward<M>(mask));
    using MN = decltype(m);
    if constexpr (MN::is_error)
      return X::error();
    else {
      static_assert(std::is_same_v<fx::elem_of<MN>, bool>,
                    "tg: masked_fill: the mask must be bool");
      static_assert(broadcastable<op::masked_fill, S_<>, fx::shape_of<MN>> &&
                        std::is_same_v<fx::broadcast_shape<S_<>, fx::shape_of<MN>>, S_<>>,
                    "tg: masked_fill: the mask does not broadcast to the tensor's shape");
      if constexpr (broadcastable<op::masked_fill, S_<>, fx::shape_of<MN>> &&
                    std::is_same_v<fx::elem_of<MN>, bool>)
        return X::masked_fill(a, m, value);
      else
        return X::error();
    }
  }
  /// this + weight (end - this), as torch.lerp (weight: an expression or a number).
  template <class B, class W> constexpr auto lerp(B&& end, W&& weight) const {
    auto a = X::node(self());
    auto b = X::operand(std::forward<B>(end), a);
    auto w = [&] {
      if constexpr (fx::scalar<std::remove_cvref_t<W>>)
        return X::template full<shape<>, tg::promote(decltype(a)::dtype, decltype(a)::rank == 0,
                                                     decltype(b)::dtype, decltype(b)::rank == 0)>(
            double(weight));
      else
        return X::node(std::forward<W>(weight));
    }();
    if constexpr (decltype(b)::is_error || decltype(w)::is_error)
      return X::error();
    else {
      using Out = fx::broadcast_shape<S_<>, fx::shape_of<decltype(b)>>;
      static_assert(broadcastable<op::lerp, S_<>, fx::shape_of<decltype(b)>> &&
                        broadcastable<op::lerp, Out, fx::shape_of<decltype(w)>>,
                    "tg: lerp: shapes cannot be broadcast");
      if constexpr (broadcastable<op::lerp, S_<>, fx::shape_of<decltype(b)>> &&
                    broadcastable<op::lerp, Out, fx::shape_of<decltype(w)>>)
        return X::lerp(a, b, w);
      else
        return X::error();
    }
  }

  // ---- evaluation ----------------------------------------------------------------------------
  /// A new tg::fixed holding the value (one fused loop).
  constexpr auto eval() const {
    static_assert(has_data<op::eval, N_<>>, "tg: eval: a tg::input placeholder has no data");
    return X::eval(X::node(self()));
  }
  /// A one-element expression (a full reduction, say) converts to its value: this evaluates it.
  template <fx::by_value_scalar U> constexpr operator U() const {
    static_assert(one_element<op::eval, S_<>>,
                  "tg: a tensor with more than one element is not a scalar");
    return static_cast<U>(item());
  }
  /// The run-time front end's lazy tensor for this expression: tg::Tensor(expr) (bridge.hpp).
  template <fx::bridged R> explicit operator R() const {
    return fx::bridge<R>::from_expr(X::node(self()), "");
  }
  /// The single element.
  constexpr auto item() const {
    static_assert(one_element<op::eval, S_<>>, "tg: item: needs exactly one element");
    return X::item(X::node(self()));
  }

private:
  template <bool Keep, int... Ax> constexpr auto var_(double correction) const {
    static_assert(axes_in_range<op::var, S_<>, axes<Ax...>>,
                  "tg: var: axis out of range or repeated");
    if constexpr (axes_in_range<op::var, S_<>, axes<Ax...>>)
      return X::template var<Keep, Ax...>(X::node(self()), correction);
    else
      return X::error();
  }
  template <bool Keep, int Axis> constexpr auto argmax_() const {
    static_assert(axes_in_range<op::argmax, S_<>, axes<Axis>>, "tg: argmax: axis out of range");
    if constexpr (axes_in_range<op::argmax, S_<>, axes<Axis>>)
      return X::template argmax<Keep, Axis>(X::node(self()));
    else
      return X::error();
  }
  template <bool Keep, int Axis> constexpr auto argmin_() const {
    static_assert(axes_in_range<op::argmin, S_<>, axes<Axis>>, "tg: argmin: axis out of range");
    static_assert(defined_for<op::argmin, T_<>>, "tg: argmin: not defined for bool");
    if constexpr (axes_in_range<op::argmin, S_<>, axes<Axis>> && defined_for<op::argmin, T_<>>)
      return X::template argmax<Keep, Axis>(X::argmin_operand(X::node(self())));
    else
      return X::error();
  }
  template <bool Min, bool Keep> constexpr auto arg_all_() const {
    static_assert(!Min || defined_for<op::argmin, T_<>>, "tg: argmin: not defined for bool");
    if constexpr (Min && !defined_for<op::argmin, T_<>>)
      return X::error();
    else if constexpr (Min)
      return X::template argmax_all<Keep>(X::argmin_operand(X::node(self())));
    else
      return X::template argmax_all<Keep>(X::node(self()));
  }
  template <bool Keep, int... Ax> constexpr auto std_(double correction) const {
    static_assert(axes_in_range<op::std, S_<>, axes<Ax...>>,
                  "tg: std: axis out of range or repeated");
    if constexpr (axes_in_range<op::std, S_<>, axes<Ax...>>)
      return X::sqrt(X::template var<Keep, Ax...>(X::node(self()), correction));
    else
      return X::error();
  }
};

} // namespace tg
