#pragma once
// Compile-time shapes for the static front end (tg::fixed and its expressions): shape<2, 3>,
// broadcasting, axes, and the checks whose names appear in shape-error diagnostics.
//
// A misuse is one static_assert in the function the user called, for example
//   static_assert(tg::broadcastable<tg::op::add, tg::shape<2, 3>, tg::shape<4>>,
//                 "tg: add: shapes cannot be broadcast");
// GCC prints "'tg::broadcastable<tg::op::add, tg::shape<2, 3>, tg::shape<4> >' evaluates to
// false", Clang "static assertion failed due to requirement 'tg::broadcastable<...>'": the op and
// both shapes are in the diagnostic because they are the asserted expression's template arguments.
#include <array>
#include <cstddef>
#include <cstdint>
#include <type_traits>
#include <utility>

#include "../graph/graph.hpp"

namespace tg {

/// A compile-time shape: tg::shape<2, 3>.
template <std::size_t... D> struct shape {
  static constexpr std::size_t rank = sizeof...(D);
  static constexpr std::size_t size = (std::size_t(1) * ... * D);
  static constexpr std::array<std::size_t, sizeof...(D)> dims{D...};
};
/// Axes as written by the user (negative values count from the end): tg::axes<0, -1>.
template <int... A> struct axes {};
/// Sizes as written by the user (-1: infer / keep): tg::dims<4, -1>.
template <std::int64_t... D> struct dims {};
/// The lengths of the rows of a nested initializer list: tg::rows<3, 4>.
template <std::size_t... N> struct rows {};

/// Tags naming the op in shape and dtype diagnostics.
namespace op {
struct add;
struct sub;
struct mul;
struct div;
struct lt;
struct gt;
struct le;
struct ge;
struct eq;
struct ne;
struct logical_and;
struct logical_or;
struct logical_xor;
struct bitwise_and;
struct bitwise_or;
struct bitwise_xor;
struct bitwise_not;
struct masked_fill;
struct lerp;
struct cumprod;
struct outer;
struct hypot;
struct atan2;
struct norm;
struct cummax;
struct cummin;
struct logcumsumexp;
struct sort;
struct topk;
struct scatter;
struct scatter_add;
struct index_add;
struct one_hot;
struct fmod;
struct remainder;
struct floor_divide;
struct bitwise_left_shift;
struct bitwise_right_shift;
struct maximum;
struct minimum;
struct pow;
struct where;
struct assign;
struct neg;
struct abs;
struct sign;
struct relu;
struct sum;
struct prod;
struct max;
struct min;
struct mean;
struct any;
struct all;
struct var;
struct std;
struct logsumexp;
struct softmax;
struct log_softmax;
struct reshape;
struct permute;
struct transpose;
struct expand;
struct squeeze;
struct unsqueeze;
struct flatten;
struct pad;
struct slice;
struct select;
struct flip;
struct unfold;
struct repeat;
struct matmul;
struct dot;
struct index;
struct init;
struct cast;
struct bitcast;
struct eval;
struct from_tensor;
struct cat;
struct T;
struct argmax;
struct argmin;
struct cumsum;
struct stack;
struct gather;
struct index_select;
struct split;
struct chunk;
} // namespace op

/// How keepdim is asked for: x.sum<1>(tg::keepdim).
struct keepdim_t {
  explicit constexpr keepdim_t() = default;
};
inline constexpr keepdim_t keepdim{};

/// "no value" for slice bounds: x.slice<0, 1, tg::none>() is x[1:].
inline constexpr std::int64_t none = INT64_MIN;

/// The maximum rank of a static tensor.
inline constexpr std::size_t fixed_max_rank = 8;

namespace fx {

template <std::size_t N> using dims_t = std::array<std::size_t, N>;

/// shape<...> from a holder type H with a constant std::array `H::value`.
///
/// Shapes computed at compile time travel as holder types, never as class-type template arguments:
/// GCC 12 mixes up template specializations on std::array (or struct) values computed in different
/// instantiations, e.g. {0, 1} and {1, 0}.
template <class H> struct shape_from_t {
  template <std::size_t... I> static shape<H::value[I]...> make(std::index_sequence<I...>);
  using type = decltype(make(std::make_index_sequence<H::value.size()>{}));
};
template <class H> using shape_from = typename shape_from_t<H>::type;

/// The shape of an operand in a diagnostic; an operand that is already an error checks as valid,
/// so one mistake gives one message.
struct unknown_shape {
  static constexpr std::size_t rank = 0, size = 1;
  static constexpr std::array<std::size_t, 0> dims{};
};
template <class S> inline constexpr bool is_unknown = std::is_same_v<S, unknown_shape>;
template <class... S> inline constexpr bool any_unknown = (is_unknown<S> || ...);

template <std::size_t NA, std::size_t NB>
constexpr bool can_broadcast(const dims_t<NA>& a, const dims_t<NB>& b) {
  constexpr std::size_t n = NA > NB ? NA : NB;
  for (std::size_t i = 0; i < n; ++i) {
    std::size_t x = i < n - NA ? 1 : a[i - (n - NA)], y = i < n - NB ? 1 : b[i - (n - NB)];
    if (!(x == y || x == 1 || y == 1)) return false;
  }
  return true;
}
/// NumPy broadcasting, as the run-time front end's (x == y or y == 1: x; x == 1: y).
template <std::size_t NA, std::size_t NB>
constexpr dims_t<(NA > NB ? NA : NB)> broadcast(const dims_t<NA>& a, const dims_t<NB>& b) {
  constexpr std::size_t n = NA > NB ? NA : NB;
  dims_t<n> r{};
  for (std::size_t i = 0; i < n; ++i) {
    std::size_t x = i < n - NA ? 1 : a[i - (n - NA)], y = i < n - NB ? 1 : b[i - (n - NB)];
    r[i] = (x == y || y == 1) ? x : x == 1 ? y : x;
  }
  return r;
}
template <class A, class B> struct broadcast_dims {
  static constexpr auto value = broadcast(A::dims, B::dims);
};
template <class A, class B> using broadcast_shape = shape_from<broadcast_dims<A, B>>;

template <class A, class B, class... R> constexpr bool broadcast_chain() {
  if constexpr (!can_broadcast(A::dims, B::dims))
    return false;
  else if constexpr (sizeof...(R) == 0)
    return true;
  else
    return broadcast_chain<broadcast_shape<A, B>, R...>();
}
template <class... S> constexpr bool broadcast_ok() {
  if constexpr (sizeof...(S) < 2 || (is_unknown<S> || ...))
    return true;
  else
    return broadcast_chain<S...>();
}

constexpr int normalize_axis(int a, std::size_t rank) { return a < 0 ? a + int(rank) : a; }

/// Axes in range for `rank` and not repeated.
template <std::size_t N> constexpr bool axes_ok(const std::array<int, N>& ax, std::size_t rank) {
  for (std::size_t i = 0; i < N; ++i) {
    int a = normalize_axis(ax[i], rank);
    if (a < 0 || a >= int(rank < 1 ? 1 : rank) || (rank == 0 && a != 0)) return false;
    for (std::size_t j = 0; j < i; ++j)
      if (normalize_axis(ax[j], rank) == a) return false;
  }
  return true;
}

template <class T> struct is_shape : std::false_type {};
template <std::size_t... D> struct is_shape<shape<D...>> : std::true_type {};

// ---- dtypes ------------------------------------------------------------------------------------
template <DType D> struct storage_of;
template <> struct storage_of<DType::Bool> : std::type_identity<bool> {};
template <> struct storage_of<DType::Int8> : std::type_identity<std::int8_t> {};
template <> struct storage_of<DType::Int16> : std::type_identity<std::int16_t> {};
template <> struct storage_of<DType::Int32> : std::type_identity<std::int32_t> {};
template <> struct storage_of<DType::Int64> : std::type_identity<std::int64_t> {};
template <> struct storage_of<DType::UInt8> : std::type_identity<std::uint8_t> {};
template <> struct storage_of<DType::UInt16> : std::type_identity<std::uint16_t> {};
template <> struct storage_of<DType::UInt32> : std::type_identity<std::uint32_t> {};
template <> struct storage_of<DType::UInt64> : std::type_identity<std::uint64_t> {};
template <> struct storage_of<DType::Float16> : std::type_identity<half> {};
template <> struct storage_of<DType::BFloat16> : std::type_identity<bfloat16_t> {};
template <> struct storage_of<DType::Float32> : std::type_identity<float> {};
template <> struct storage_of<DType::Float64> : std::type_identity<double> {};
/// The C++ type that stores a dtype.
template <DType D> using storage_t = typename storage_of<D>::type;
/// The C++ type a dtype is computed in (16-bit floats compute in float, as every renderer does).
template <DType D> using compute_t = storage_t<compute_dtype(D)>;

template <class T, class = void> struct has_dtype : std::false_type {};
template <class T>
struct has_dtype<T, std::void_t<decltype(dtype_of_t<T>::value)>> : std::true_type {};
/// Element types a tg::fixed can hold.
template <class T>
concept element = has_dtype<std::remove_cv_t<T>>::value && !std::is_reference_v<T>;
/// Plain scalars that mix with expressions (as Python numbers mix with torch tensors).
template <class T>
concept scalar =
    std::is_arithmetic_v<std::remove_cvref_t<T>> || std::is_same_v<std::remove_cvref_t<T>, half> ||
    std::is_same_v<std::remove_cvref_t<T>, bfloat16_t>;
/// A scalar type a one-element expression converts to (by value).
template <class T>
concept by_value_scalar = scalar<T> && !std::is_reference_v<T>;

} // namespace fx

namespace fx {
// The conditions of the cat, stack, gather and index_select checks (an unknown shape passes).
template <class S0, class... S, int A> constexpr bool concat_ok(axes<A>) {
  if constexpr (is_unknown<S0> || (is_unknown<S> || ...))
    return true;
  else {
    constexpr int r = int(S0::rank);
    if (r == 0 || A < -r || A >= r || ((int(S::rank) != r) || ...)) return false;
    if constexpr (((S::rank == S0::rank) && ...)) {
      const int d = A < 0 ? A + r : A;
      for (int i = 0; i < r; ++i)
        if (i != d && ((S::dims[std::size_t(i)] != S0::dims[std::size_t(i)]) || ...)) return false;
    }
    return true;
  }
}
template <class S0, class... S, int A> constexpr bool stack_ok(axes<A>) {
  if constexpr (is_unknown<S0> || (is_unknown<S> || ...))
    return true;
  else
    return (std::is_same_v<S0, S> && ...) && A >= -int(S0::rank) - 1 && A <= int(S0::rank);
}
template <class S, class I, int A> constexpr bool gather_ok(axes<A>) {
  if constexpr (is_unknown<S> || is_unknown<I>)
    return true;
  else {
    constexpr int r = int(S::rank);
    if (r == 0 || A < -r || A >= r || int(I::rank) != r) return false;
    if constexpr (S::rank == I::rank) {
      const int d = A < 0 ? A + r : A;
      for (int i = 0; i < r; ++i)
        if (i != d && I::dims[std::size_t(i)] > S::dims[std::size_t(i)]) return false;
    }
    return true;
  }
}
/// scatter's operands: an axis in range; index, src and the tensor of one rank; index no larger
/// than src, nor than the tensor but along the axis.
template <class S, class I, class Src, int A> constexpr bool scatter_ok(axes<A>) {
  if constexpr (is_unknown<S> || is_unknown<I> || is_unknown<Src>)
    return true;
  else {
    constexpr int r = int(S::rank);
    if (r == 0 || A < -r || A >= r || int(I::rank) != r || int(Src::rank) != r) return false;
    if constexpr (S::rank == I::rank && I::rank == Src::rank) {
      const int d = A < 0 ? A + r : A;
      for (int i = 0; i < r; ++i) {
        const std::size_t k = std::size_t(i);
        if (I::dims[k] > Src::dims[k] || (i != d && I::dims[k] > S::dims[k])) return false;
      }
    }
    return true;
  }
}
/// index_add's operands: an axis in range, a 1-D index, a source like the tensor but with the
/// index's length along the axis.
template <class S, class I, class Src, int A> constexpr bool index_add_ok(axes<A>) {
  if constexpr (is_unknown<S> || is_unknown<I> || is_unknown<Src>)
    return true;
  else {
    constexpr int r = int(S::rank);
    if (r == 0 || A < -r || A >= r || I::rank != 1 || int(Src::rank) != r) return false;
    if constexpr (I::rank == 1 && S::rank == Src::rank) {
      const int d = A < 0 ? A + r : A;
      for (int i = 0; i < r; ++i) {
        const std::size_t k = std::size_t(i);
        if (i == d ? Src::dims[k] != I::dims[0] : Src::dims[k] != S::dims[k]) return false;
      }
    }
    return true;
  }
}
template <class S, class I, int A> constexpr bool select_ok(axes<A>) {
  if constexpr (is_unknown<S> || is_unknown<I>)
    return true;
  else
    return int(S::rank) > 0 && A >= -int(S::rank) && A < int(S::rank) && I::rank <= 1;
}
// The conditions of the split and chunk checks: an axis in range (at least one axis), and a
// positive size or count, or sizes that are not negative and add up to the axis' size.
template <class S, int A> constexpr bool split_axis_ok() {
  return int(S::rank) > 0 && A >= -int(S::rank) && A < int(S::rank);
}
template <class S, int A, std::int64_t N> constexpr bool split_ok(axes<A>, dims<N>) {
  if constexpr (is_unknown<S>)
    return true;
  else
    return split_axis_ok<S, A>() && N > 0;
}
/// User sizes as a list that must add up to `n` (split<tg::dims<...>>); anything else fits nothing.
template <class Sizes> struct split_sizes {
  static constexpr std::size_t count = 1;
  static constexpr bool fit(std::size_t) { return false; }
};
template <std::int64_t... N> struct split_sizes<dims<N...>> {
  static constexpr std::size_t count = sizeof...(N);
  static constexpr bool fit(std::size_t n) {
    return ((N >= 0) && ...) && (std::int64_t(0) + ... + N) == std::int64_t(n);
  }
};
template <class S, class Sizes, int A> constexpr bool sizes_ok(axes<A>) {
  if constexpr (is_unknown<S>)
    return true;
  else
    return split_axis_ok<S, A>() &&
           split_sizes<Sizes>::fit(S::dims[std::size_t(normalize_axis(A, S::rank))]);
}
} // namespace fx

// ---- the checks named in diagnostics ------------------------------------------------------------
/// Shapes that broadcast together (NumPy rules).
template <class Op, class... S> inline constexpr bool broadcastable = fx::broadcast_ok<S...>();
/// Two shapes that are the same.
template <class Op, class A, class B>
inline constexpr bool same_shape = fx::any_unknown<A, B> || std::is_same_v<A, B>;
/// Two element types that are the same.
template <class Op, class A, class B> inline constexpr bool same_dtype = std::is_same_v<A, B>;
/// Axes in range and not repeated.
template <class Op, class S, class Axes> inline constexpr bool axes_in_range = false;
template <class Op, class S, int... A>
inline constexpr bool axes_in_range<Op, S, axes<A...>> =
    (fx::is_unknown<S> || fx::axes_ok(std::array<int, sizeof...(A)>{A...}, S::rank));
/// Shapes that concatenate along axis A: the same rank (at least 1), the same sizes elsewhere.
template <class Op, class Axis, class... S>
inline constexpr bool concatenable = fx::concat_ok<S...>(Axis{});
/// Shapes that stack along a new axis A: all the same.
template <class Op, class Axis, class... S>
inline constexpr bool stackable = fx::stack_ok<S...>(Axis{});
/// tg::gather's operands: axis A in range, an index of the same rank, no larger outside A.
template <class Op, class Axis, class S, class I>
inline constexpr bool gatherable = fx::gather_ok<S, I>(Axis{});
/// tg::index_select's operands: axis A in range, an index of at most one axis.
template <class Op, class Axis, class S, class I>
inline constexpr bool selectable = fx::select_ok<S, I>(Axis{});
/// x.scatter<A>(index, src) and scatter_add: see fx::scatter_ok.
template <class Op, class Axis, class S, class I, class Src>
inline constexpr bool scatterable = fx::scatter_ok<S, I, Src>(Axis{});
/// x.index_add<A>(index, source): see fx::index_add_ok.
template <class Op, class Axis, class S, class I, class Src>
inline constexpr bool index_addable = fx::index_add_ok<S, I, Src>(Axis{});
/// tg::split<Size, Axis>: an axis in range and a positive split size (as Tensor::split's checks).
template <class Op, class Axis, class S, class Size>
inline constexpr bool splittable = fx::split_ok<S>(Axis{}, Size{});
/// tg::split<tg::dims<S0, S1, ...>, Axis>: an axis in range, sizes not negative that add up to its
/// size.
template <class Op, class Axis, class S, class Sizes>
inline constexpr bool sizes_add_up = fx::sizes_ok<S, Sizes>(Axis{});
/// tg::chunk<Chunks, Axis>: an axis in range and a positive number of chunks.
template <class Op, class Axis, class S, class Chunks>
inline constexpr bool chunkable = fx::split_ok<S>(Axis{}, Chunks{});
/// An integer element type (indices).
template <class Op, class T>
inline constexpr bool integral = std::is_integral_v<T> && !std::is_same_v<T, bool>;
/// An op that is defined for an element type (neg, abs, sign, relu, sub: not for bool).
template <class Op, class T> inline constexpr bool defined_for = !std::is_same_v<T, bool>;
/// A floating point element type (mean, var, std).
template <class Op, class T>
inline constexpr bool floating =
    std::is_floating_point_v<T> || std::is_same_v<T, half> || std::is_same_v<T, bfloat16_t>;

} // namespace tg
