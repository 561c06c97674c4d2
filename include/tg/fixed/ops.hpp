#pragma once
// The builders of the static front end. Each op is composed from primitive nodes exactly as the
// run-time front end composes it in tensor/ops.hpp and tensor/movement.hpp (same primitives, same
// order, same elisions), so that graph_of(expr) is the Graph that tg::schedule() shows for the
// same computation on tg::Tensor. Keep the two in step: tests/test_fixed.cpp compares them node by
// node.
//
// Checks are not made here: the public methods (base.hpp) and operators (below) make them, with
// one static_assert each, before calling a builder.
#include <source_location>
#include <string>
#include <tuple>

#include "../errors.hpp"
#include "tensor.hpp"

namespace tg {
namespace fx {

inline constexpr double kLog2E = 1.4426950408889634, kLn2 = 0.6931471805599453,
                        kPi = 3.141592653589793;

template <class E> constexpr std::size_t numel_of() { return std::remove_cvref_t<E>::size; }

template <std::size_t... I> struct index_list {};

/// Sorted, normalized axes (all axes when none are given).
template <std::size_t Rank, int... Ax> struct norm_axes {
  static constexpr std::size_t count = sizeof...(Ax) == 0 ? Rank : sizeof...(Ax);
  static constexpr std::array<int, count> value = [] {
    std::array<int, count> r{};
    if constexpr (sizeof...(Ax) == 0) {
      for (std::size_t i = 0; i < Rank; ++i) r[i] = int(i);
    } else {
      std::array<int, sizeof...(Ax)> a{Ax...};
      for (std::size_t i = 0; i < a.size(); ++i) r[i] = normalize_axis(a[i], Rank);
      std::sort(r.begin(), r.end());
    }
    return r;
  }();
};

template <class A, class B> struct matmul_node;

// ---- compile-time shape computations, as holder types (see shape_from)
// -----------------------------
/// The dtype of an op over tensors of these dtypes (tg::cat).
constexpr DType promote_all(DType t) { return t; }
template <class... D> constexpr DType promote_all(DType a, DType b, D... rest) {
  return promote_all(promote(a, b), rest...);
}
template <std::size_t N> struct ones_dims {
  static constexpr auto value = [] {
    dims_t<N> r{};
    for (auto& d : r) d = 1;
    return r;
  }();
};
/// The shape Tensor::expand reshapes to first: leading ones, then In.
template <class S, class In> struct expand_src_dims {
  static constexpr auto value = [] {
    constexpr std::size_t lead = S::rank - In::rank;
    dims_t<S::rank> r{};
    for (std::size_t i = 0; i < S::rank; ++i) r[i] = i < lead ? 1 : In::dims[i - lead];
    return r;
  }();
};
template <class S, class NA> struct drop_axes_dims {
  static constexpr auto value = [] {
    dims_t<S::rank - NA::count> r{};
    std::size_t k = 0;
    for (std::size_t i = 0; i < S::rank; ++i)
      if (std::find(NA::value.begin(), NA::value.end(), int(i)) == NA::value.end())
        r[k++] = S::dims[i];
    return r;
  }();
};
template <class S, std::int64_t... To> struct reshape_dims_h {
  static constexpr auto value =
      reshape_dims(S::dims, std::array<std::int64_t, sizeof...(To)>{To...});
};
template <class S, std::int64_t... To> struct expand_dims_h {
  static constexpr auto value = [] {
    constexpr std::size_t M = sizeof...(To), N = S::rank;
    std::array<std::int64_t, M> t{To...};
    dims_t<M> r{};
    for (std::size_t i = 0; i < M; ++i)
      r[i] = t[i] == -1 ? S::dims[i - (M - N)] : std::size_t(t[i]);
    return r;
  }();
};
/// Shape [1, ..., N, ..., 1] (N at axis D of Rank).
template <std::size_t Rank, std::size_t D, std::size_t N> struct one_axis_dims {
  static constexpr auto value = [] {
    dims_t<Rank> r{};
    for (std::size_t i = 0; i < Rank; ++i) r[i] = i == D ? N : 1;
    return r;
  }();
};
/// Rank sizes of Fill, V at axis D.
template <std::size_t Rank, std::size_t D, std::size_t V, std::size_t Fill> struct at_axis_dims {
  static constexpr auto value = [] {
    dims_t<Rank> r{};
    for (std::size_t i = 0; i < Rank; ++i) r[i] = i == D ? V : Fill;
    return r;
  }();
};
/// The index's shape, with N at axis D (tg::gather crops the input to it).
template <class I, std::size_t D, std::size_t N> struct gather_hi_dims {
  static constexpr auto value = [] {
    auto r = I::dims;
    r[D] = N;
    return r;
  }();
};
template <class S> struct squeeze_all_dims {
  static constexpr std::size_t n = [] {
    std::size_t k = 0;
    for (std::size_t d : S::dims) k += d != 1;
    return k;
  }();
  static constexpr auto value = [] {
    dims_t<n> r{};
    std::size_t k = 0;
    for (std::size_t d : S::dims)
      if (d != 1) r[k++] = d;
    return r;
  }();
};
template <class S, std::size_t A> struct remove_axis_dims {
  static constexpr auto value = [] {
    dims_t<S::rank - 1> r{};
    for (std::size_t i = 0, k = 0; i < S::rank; ++i)
      if (i != A) r[k++] = S::dims[i];
    return r;
  }();
};
template <class S, std::size_t A> using remove_axis = shape_from<remove_axis_dims<S, A>>;
template <class S, std::size_t A> struct insert_axis_dims {
  static constexpr auto value = [] {
    dims_t<S::rank + 1> r{};
    for (std::size_t i = 0, k = 0; i <= S::rank; ++i) r[i] = i == A ? 1 : S::dims[k++];
    return r;
  }();
};
template <class S, std::size_t A> using insert_axis = shape_from<insert_axis_dims<S, A>>;
template <class S, std::size_t A, std::size_t B> struct flatten_dims {
  static constexpr auto value = [] {
    dims_t<S::rank - (B - A)> r{};
    std::size_t k = 0;
    for (std::size_t i = 0; i < A; ++i) r[k++] = S::dims[i];
    std::size_t m = 1;
    for (std::size_t i = A; i <= B; ++i) m *= S::dims[i];
    r[k++] = m;
    for (std::size_t i = B + 1; i < S::rank; ++i) r[k++] = S::dims[i];
    return r;
  }();
};
template <class S, int... Axes> struct flip_dims {
  static constexpr auto value = [] {
    dims_t<S::rank> f{};
    for (int a : std::array<int, sizeof...(Axes)>{Axes...})
      f[std::size_t(normalize_axis(a, S::rank))] = 1;
    return f;
  }();
};
/// Tensor::pad's plan: crop (shrink lo..hi), then grow (pad before/after).
template <class S, std::int64_t... P> struct pad_plan {
  static constexpr std::size_t n = S::rank;
  struct plan_t {
    dims_t<n> before{}, after{}, lo{}, hi{};
    bool crop = false, grow = false;
  };
  static constexpr plan_t value = [] {
    plan_t p{};
    std::array<std::int64_t, sizeof...(P)> pads{P...};
    p.hi = S::dims;
    for (std::size_t k = 0; k < pads.size() / 2; ++k) {
      std::size_t axis = n - 1 - k;
      std::int64_t b = pads[2 * k], e = pads[2 * k + 1];
      if (b < 0) {
        p.lo[axis] = std::size_t(-b);
        p.crop = true;
      } else if (b > 0) {
        p.before[axis] = std::size_t(b);
        p.grow = true;
      }
      if (e < 0) {
        p.hi[axis] = std::size_t(std::int64_t(p.hi[axis]) + e);
        p.crop = true;
      } else if (e > 0) {
        p.after[axis] = std::size_t(e);
        p.grow = true;
      }
    }
    return p;
  }();
  struct before_h {
    static constexpr auto value = pad_plan::value.before;
  };
  struct after_h {
    static constexpr auto value = pad_plan::value.after;
  };
  struct lo_h {
    static constexpr auto value = pad_plan::value.lo;
  };
  struct hi_h {
    static constexpr auto value = pad_plan::value.hi;
  };
  using Before = shape_from<before_h>;
  using After = shape_from<after_h>;
  using Lo = shape_from<lo_h>;
  using Hi = shape_from<hi_h>;
};
/// Tensor::slice's plan (Python's semantics, clamped): shrink, then flip (negative step), then
/// stride.
template <class S, std::size_t D, std::int64_t Start, std::int64_t Stop, std::int64_t Step>
struct slice_plan {
  struct plan_t {
    dims_t<S::rank> lo{}, hi{}, flags{}, steps{};
    bool shrink = false, flip = false, stride = false;
  };
  static constexpr plan_t value = [] {
    plan_t r{};
    const std::int64_t n = std::int64_t(S::dims[D]);
    auto norm = [&](std::int64_t v, std::int64_t dflt, std::int64_t lo_, std::int64_t hi_) {
      if (v == none) return dflt;
      std::int64_t x = v < 0 ? v + n : v;
      return x < lo_ ? lo_ : x > hi_ ? hi_ : x;
    };
    std::int64_t b = 0, e = 0;
    if (Step > 0) {
      b = norm(Start, 0, 0, n);
      e = norm(Stop, n, 0, n);
    } else {
      b = norm(Start, n - 1, -1, n - 1);
      e = norm(Stop, -1, -1, n - 1);
    }
    std::int64_t count = Step > 0 ? (e > b ? (e - b + Step - 1) / Step : 0)
                                  : (b > e ? (b - e - Step - 1) / (-Step) : 0);
    r.hi = S::dims;
    std::int64_t lo = 0, hi = n;
    if (Step > 0) {
      lo = b;
      hi = b + (count ? (count - 1) * Step + 1 : 0);
    } else {
      lo = count ? b - (count - 1) * (-Step) : 0;
      hi = count ? b + 1 : 0;
    }
    r.lo[D] = std::size_t(lo);
    r.hi[D] = std::size_t(hi);
    r.shrink = !(lo == 0 && hi == n);
    r.flip = Step < 0;
    r.flags[D] = 1;
    std::int64_t k = Step < 0 ? -Step : Step;
    for (auto& st : r.steps) st = 1;
    r.steps[D] = std::size_t(k);
    r.stride = k != 1 && count > 0;
    return r;
  }();
  struct lo_h {
    static constexpr auto value = slice_plan::value.lo;
  };
  struct hi_h {
    static constexpr auto value = slice_plan::value.hi;
  };
  struct flags_h {
    static constexpr auto value = slice_plan::value.flags;
  };
  struct steps_h {
    static constexpr auto value = slice_plan::value.steps;
  };
};
/// Tensor::repeat's plan: reshape to (1, s) pairs, expand to (rep, s), reshape to rep * s.
template <class S, std::size_t... Reps> struct repeat_plan {
  static constexpr std::size_t R = sizeof...(Reps), lead = R - S::rank;
  struct plan_t {
    dims_t<2 * R> inter{}, expanded{};
    dims_t<R> out{};
  };
  static constexpr plan_t value = [] {
    plan_t r{};
    std::array<std::size_t, R> reps{Reps...};
    for (std::size_t i = 0; i < R; ++i) {
      std::size_t s = i < lead ? 1 : S::dims[i - lead];
      r.inter[2 * i] = 1;
      r.inter[2 * i + 1] = s;
      r.expanded[2 * i] = reps[i];
      r.expanded[2 * i + 1] = s;
      r.out[i] = s * reps[i];
    }
    return r;
  }();
  struct inter_h {
    static constexpr auto value = repeat_plan::value.inter;
  };
  struct expanded_h {
    static constexpr auto value = repeat_plan::value.expanded;
  };
  struct out_h {
    static constexpr auto value = repeat_plan::value.out;
  };
};

/// Tensor::split's pieces along an axis of size N: split<Size> cuts pieces of Size (the last one
/// shorter; one empty piece of an empty axis), split<tg::dims<...>> the sizes given.
template <std::size_t N, std::int64_t Size> struct split_by_size {
  static constexpr std::size_t size = std::size_t(Size), count = N == 0 ? 1 : (N + size - 1) / size;
  static constexpr auto sizes = [] {
    std::array<std::size_t, count> r{};
    for (std::size_t k = 0, b = 0; k < count; ++k, b += size) r[k] = N - b < size ? N - b : size;
    return r;
  }();
};
template <class Sizes> struct split_by_sizes;
template <std::int64_t... S> struct split_by_sizes<dims<S...>> {
  static constexpr std::size_t count = sizeof...(S);
  static constexpr std::array<std::size_t, count> sizes{std::size_t(S)...};
};
/// Tensor::chunk(chunks): split by ceil(N / Chunks), at least 1.
template <std::size_t N, std::int64_t Chunks>
using chunk_by =
    split_by_size<N,
                  std::int64_t(N == 0 ? 1 : (N + std::size_t(Chunks) - 1) / std::size_t(Chunks))>;
/// Where each piece starts.
template <class P> struct split_starts {
  static constexpr auto value = [] {
    std::array<std::size_t, P::count> r{};
    for (std::size_t k = 1; k < P::count; ++k) r[k] = r[k - 1] + P::sizes[k - 1];
    return r;
  }();
};

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
template <class Op>
[[noreturn]] void index_out_of_range(const char* op, std::int64_t index, std::int64_t n,
                                     const std::source_location& loc) {
  tg::detail::fail<index_error>(op,
                                "index " + std::to_string(index) +
                                    " is out of range for a dim of size " + std::to_string(n),
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
    constexpr DType t = promote(A::dtype, B::dtype);
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
    constexpr DType t = promote(A::dtype, B::dtype);
    return alu<Op::Add>(cast_to<t>(a), neg(cast_to<t>(b)));
  }
  template <class A, class B> static constexpr auto div(const A& a, const B& b) {
    constexpr DType t0 = promote(A::dtype, B::dtype), t = is_float(t0) ? t0 : DType::Float32;
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
    return unary_op<Op::Sin>(ssub(kPi / 2, as_float(e)));
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
    auto z = mul_s(x, 0.7071067811865476);
    auto az = abs(z);
    auto t = reciprocal(sadd(1.0, smul(0.3275911, az)));
    auto poly =
        mul(t, sadd(0.254829592,
                    mul(t, sadd(-0.284496736,
                                mul(t, sadd(1.421413741,
                                            mul(t, sadd(-1.453152027, mul_s(t, 1.061405429)))))))));
    auto erf_abs = ssub(1.0, mul(poly, exp(neg(mul(az, az)))));
    auto erf = where3(lt_s(z, 0.0), neg(erf_abs), erf_abs);
    return mul(smul(0.5, x), sadd(1.0, erf));
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
  template <class A, class B> static constexpr auto pow(const A& a, const B& b) {
    constexpr DType t = promote(A::dtype, B::dtype);
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
    constexpr DType t = promote(A::dtype, B::dtype);
    auto a = share(cast_to<t>(a0));
    auto b = share(cast_to<t>(b0));
    if constexpr (is_float(t))
      return where3(logical_or(alu<Op::CmpLt>(a, b), isnan(a)), a, b);
    else
      return where3(alu<Op::CmpLt>(a, b), a, b);
  }
  template <class E> static constexpr auto clamp(const E& e, double lo, double hi) {
    constexpr bool integral = !is_float(E::dtype);
    auto r = maximum(e, full<shape<>, E::dtype>(integral ? -cmath::floor(-lo) : lo));
    return minimum(r, full<shape<>, E::dtype>(integral ? cmath::floor(hi) : hi));
  }
  /// where(cond, a, b), broadcast together.
  template <class C, class A, class B>
  static constexpr auto where3(const C& c0, const A& a0, const B& b0) {
    using Out = broadcast_shape<broadcast_shape<typename C::shape_type, typename A::shape_type>,
                                typename B::shape_type>;
    constexpr DType t = promote(A::dtype, B::dtype);
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
  /// Tensor::cumsum: out[i] = sum over j <= i of x[j], as a masked sum over a new axis (one
  /// kernel, n^2 work along the axis).
  template <int A, class E> static constexpr auto cumsum(const E& e) {
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
      auto picked = where3(upto, unsqueeze<d>(x), full<shape<>, decltype(x)::dtype>(0));
      return reduce<Op::ReduceSum, false, d + 1>(picked);
    }
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
  template <std::size_t N, class Op, class I>
  static constexpr auto checked_index(const I& index, const char* op,
                                      const std::source_location& loc) {
    if constexpr (I::is_symbolic)
      return index;
    else if constexpr (is_stored<I>) {
      check_index_values<N, Op>(index, op, loc);
      return index;
    } else {
      kept<fixed_for<I::dtype, typename I::shape_type>> values(eval(index));
      check_index_values<N, Op>(values, op, loc);
      return values;
    }
  }
  template <std::size_t N, class Op, class I>
  static constexpr void check_index_values(const I& index, const char* op,
                                           const std::source_location& loc) {
    const auto ev = index.evaluator();
    for (std::size_t k = 0; k < I::size; ++k) {
      const auto i = std::int64_t(ev.coeff(k));
      if (i < -std::int64_t(N) || i >= std::int64_t(N))
        index_out_of_range<Op>(op, i, std::int64_t(N), loc);
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
    auto idx = wrapped_index<n>(checked_index<n, op::gather>(index, "gather", loc));
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
    auto idx = wrapped_index<n>(
        checked_index<n, op::index_select>(reshape_to<shape<m>>(index), "index_select", loc));
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

// ---- matmul
// -----------------------------------------------------------------------------------------
template <class A, class B> struct matmul_dims {
  static constexpr std::size_t ra = A::rank, rb = B::rank, nb = (ra > rb ? ra : rb) - 2;
  static constexpr std::size_t n = A::shape_type::dims[ra - 2], k = A::shape_type::dims[ra - 1],
                               m = B::shape_type::dims[rb - 1];
  static constexpr auto batch = [] {
    dims_t<ra - 2> ab{};
    dims_t<rb - 2> bb{};
    for (std::size_t i = 0; i + 2 < ra; ++i) ab[i] = A::shape_type::dims[i];
    for (std::size_t i = 0; i + 2 < rb; ++i) bb[i] = B::shape_type::dims[i];
    return broadcast(ab, bb);
  }();
  static constexpr std::size_t batch_size = [] {
    std::size_t s = 1;
    for (std::size_t d : batch) s *= d;
    return s;
  }();
  template <std::size_t... Tail> static constexpr dims_t<nb + sizeof...(Tail)> with() {
    dims_t<nb + sizeof...(Tail)> r{};
    for (std::size_t i = 0; i < nb; ++i) r[i] = batch[i];
    std::array<std::size_t, sizeof...(Tail)> t{Tail...};
    for (std::size_t i = 0; i < t.size(); ++i) r[nb + i] = t[i];
    return r;
  }
  template <std::size_t... Tail> struct with_h {
    // the dims with the batch dims in front, held for shape_from
    static constexpr auto value = with<Tail...>();
  };
  using keep_shape = shape_from<with_h<n, 1, m>>;
  using out_shape = shape_from<with_h<n, m>>;
  using a_shape = shape_from<with_h<n, k>>;
  using b_shape = shape_from<with_h<k, m>>;
  using sa = shape_from<with_h<n, k, 1>>;
  using sb = shape_from<with_h<1, k, m>>;
  using full = shape_from<with_h<n, k, m>>;
};

/// out[p, i, j] = sum_k a[p, i, k] * b[p, k, j], k ascending (the order of the fused kernel).
template <class C, std::size_t P, std::size_t N, std::size_t K, std::size_t M>
constexpr void gemm(C* __restrict out, const C* __restrict a, const C* __restrict b) {
  for (std::size_t p = 0; p < P; ++p) {
    const C* ap = a + p * N * K;
    const C* bp = b + p * K * M;
    for (std::size_t i = 0; i < N; ++i) {
      C* row = out + (p * N + i) * M;
      for (std::size_t j = 0; j < M; ++j) row[j] = C(0);
      for (std::size_t kk = 0; kk < K; ++kk) {
        const C av = ap[i * K + kk];
        const C* brow = bp + kk * M;
        if constexpr (M <= 32) {
          // (fully unrolled, GCC 12 vectorizes this row update across k with shuffles: 4x slower)
#pragma GCC unroll 4
          for (std::size_t j = 0; j < M; ++j) row[j] = wrap_add(row[j], wrap_mul(av, brow[j]));
        } else {
          for (std::size_t j = 0; j < M; ++j) row[j] = wrap_add(row[j], wrap_mul(av, brow[j]));
        }
      }
    }
  }
}

template <class E> inline constexpr bool is_leaf = false;
template <class F> inline constexpr bool is_leaf<leaf<F>> = true;
template <class F> inline constexpr bool is_leaf<owned<F>> = true;

/// The ReduceSum of Tensor::matmul (keepdim shape [batch..., n, 1, m]). Lowers to the same
/// primitives; on the host it runs as a loop nest of its own (i, k, j: the inner loop vectorizes).
template <class A, class B>
struct matmul_node
    : expression<matmul_node<A, B>>,
      node_info<promote(A::dtype, B::dtype), typename matmul_dims<A, B>::keep_shape> {
  A a{};
  B b{};
  constexpr matmul_node() = default;
  constexpr matmul_node(A a_, B b_) : a(std::move(a_)), b(std::move(b_)) {}
  using dims = matmul_dims<A, B>;
  using out_shape = typename dims::out_shape;
  static constexpr DType t = promote(A::dtype, B::dtype);
  static constexpr bool is_symbolic = A::is_symbolic || B::is_symbolic, has_reduce = true,
                        aligned = false;
  using C = compute_t<t>;

  /// The primitive expression the run-time front end builds.
  constexpr auto primitive() const {
    using O = ops<A>;
    auto pa = O::template expand_to<typename dims::full>(
        O::template expand_to<typename dims::sa>(O::template unsqueeze<-1>(a)));
    auto pb = O::template expand_to<typename dims::full>(
        O::template expand_to<typename dims::sb>(O::template unsqueeze<-3>(b)));
    auto prodt = O::template alu<Op::Mul>(pa, pb);
    return reduce_node<Op::ReduceSum, decltype(prodt), int(dims::full::rank - 2)>(prodt);
  }
  template <class Bld> constexpr int emit(Bld& bld) const { return primitive().emit(bld); }
  constexpr bool reads(const void* q) const { return a.reads(q) || b.reads(q); }

  template <class Shape, class E> static constexpr auto operand(const E& e) {
    using O = ops<E>;
    return O::template expand_to<Shape>(O::template cast_to<t>(e));
  }
  /// Writes the product (shape [batch..., n, m], row-major) to out.
  constexpr void compute(C* out) const {
    auto ea = operand<typename dims::a_shape>(a);
    auto eb = operand<typename dims::b_shape>(b);
    using EA = decltype(ea);
    using EB = decltype(eb);
    auto run = [&](const C* pa, const C* pb) {
      gemm<C, dims::batch_size, dims::n, dims::k, dims::m>(out, pa, pb);
    };
    constexpr bool da = is_leaf<EA> && std::is_same_v<storage_t<EA::dtype>, C>;
    constexpr bool db = is_leaf<EB> && std::is_same_v<storage_t<EB::dtype>, C>;
    if constexpr (da && db)
      run(ea.contiguous_data(), eb.contiguous_data());
    else if constexpr (da) {
      fixed_for<t, typename dims::b_shape> tb;
      evaluate_into(tb.data(), eb);
      run(ea.contiguous_data(), tb.data());
    } else if constexpr (db) {
      fixed_for<t, typename dims::a_shape> ta;
      evaluate_into(ta.data(), ea);
      run(ta.data(), eb.contiguous_data());
    } else {
      fixed_for<t, typename dims::a_shape> ta;
      fixed_for<t, typename dims::b_shape> tb;
      evaluate_into(ta.data(), ea);
      evaluate_into(tb.data(), eb);
      run(ta.data(), tb.data());
    }
  }
  struct evaluator_t {
    fixed_for<t, typename dims::keep_shape> r;
    constexpr explicit evaluator_t(const matmul_node& m) {
      if constexpr (std::is_same_v<storage_t<t>, C>)
        m.compute(r.data());
      else {
        fixed<C, dims::keep_shape::size> tmp;
        m.compute(tmp.data());
        for (std::size_t i = 0; i < dims::keep_shape::size; ++i)
          r.data()[i] = storage_t<t>(tmp.data()[i]);
      }
    }
    TG_FX_INLINE constexpr C coeff(std::size_t i) const { return C(r.data()[i]); }
  };
  constexpr evaluator_t evaluator() const { return evaluator_t(*this); }
};

template <class E> inline constexpr bool is_matmul = false;
template <class A, class B> inline constexpr bool is_matmul<matmul_node<A, B>> = true;

/// Whether a product can be written in place (a matmul, or one read through reshapes only).
template <class T, class E> constexpr bool writes_product() {
  if constexpr (is_matmul<E>)
    return std::is_same_v<T, typename E::C>;
  else if constexpr (is_view<E>) {
    if constexpr (is_matmul<typename E::child_type>)
      return E::reshape_only && std::is_same_v<T, typename E::child_type::C>;
    else
      return false;
  } else
    return false;
}

/// Writes every element of `e` to out[0..size): one loop (out is Align-byte aligned).
template <std::size_t Align, class T, class E> constexpr void evaluate_into(T* out, const E& e) {
  if constexpr (writes_product<T, E>()) {
    if constexpr (is_matmul<E>)
      e.compute(out);
    else
      e.c.compute(out);
  } else {
    T* o = std::assume_aligned<Align>(out);
    const auto ev = e.evaluator();
    for (std::size_t i = 0; i < E::size; ++i) o[i] = T(ev.coeff(i));
  }
}
template <class T, class E> constexpr void evaluate_into(T* out, const E& e) {
  evaluate_into<alignof(T)>(out, e);
}

/// Both operands of a binary operator as nodes (a scalar takes its dtype from the other side).
template <class A, class B> constexpr auto lhs(A&& a, B&& b) {
  if constexpr (scalar<A>)
    return ops<>::scalar_for(ops<>::node(std::forward<B>(b)), a);
  else
    return ops<>::node(std::forward<A>(a));
}
template <class A, class B> constexpr auto rhs(A&& a, B&& b) {
  if constexpr (scalar<B>)
    return ops<>::scalar_for(ops<>::node(std::forward<A>(a)), b);
  else
    return ops<>::node(std::forward<B>(b));
}
/// An operand of a binary op: an expression or a scalar.
template <class T>
concept operand = expr<T> || scalar<T>;
template <class A, class B>
concept either_expr = expr<A> || expr<B>;
/// The second operand B of a binary op whose first is A: an operand, and one of them an
/// expression (a type constraint, so `template <operand A, operand_with<A> B>` needs no
/// requires-clause).
template <class B, class A>
concept operand_with = operand<B> && either_expr<A, B>;

/// tg::cat and tg::stack over expression nodes: one check, then the builder.
template <int Axis, class... E> constexpr auto cat_nodes(const E&... e) {
  if constexpr ((E::is_error || ...))
    return ops<>::error();
  else {
    static_assert(concatenable<op::cat, axes<Axis>, shape_of<E>...>,
                  "tg: cat: axis out of range, or shapes differ outside it");
    if constexpr (concatenable<op::cat, axes<Axis>, shape_of<E>...>)
      return ops<>::cat<Axis>(e...);
    else
      return ops<>::error();
  }
}
template <int Axis, class... E> constexpr auto stack_nodes(const E&... e) {
  if constexpr ((E::is_error || ...))
    return ops<>::error();
  else {
    static_assert(stackable<op::stack, axes<Axis>, shape_of<E>...>,
                  "tg: stack: axis out of range, or shapes differ");
    if constexpr (stackable<op::stack, axes<Axis>, shape_of<E>...>)
      return ops<>::stack<Axis>(e...);
    else
      return ops<>::error();
  }
}
} // namespace fx

// ---- operators
// --------------------------------------------------------------------------------------
template <fx::operand A, fx::operand_with<A> B> constexpr auto operator+(A&& a, B&& b) {
  auto x = fx::lhs(std::forward<A>(a), b);
  auto y = fx::rhs(a, std::forward<B>(b));
  using XN = decltype(x);
  using YN = decltype(y);
  if constexpr (XN::is_error || YN::is_error)
    return fx::ops<>::error();
  else {
    static_assert(broadcastable<op::add, fx::shape_of<XN>, fx::shape_of<YN>>,
                  "tg: add: shapes cannot be broadcast");
    if constexpr (broadcastable<op::add, fx::shape_of<XN>, fx::shape_of<YN>>)
      return fx::ops<>::add(x, y);
    else
      return fx::ops<>::error();
  }
}
template <fx::operand A, fx::operand_with<A> B> constexpr auto operator-(A&& a, B&& b) {
  auto x = fx::lhs(std::forward<A>(a), b);
  auto y = fx::rhs(a, std::forward<B>(b));
  using XN = decltype(x);
  using YN = decltype(y);
  if constexpr (XN::is_error || YN::is_error)
    return fx::ops<>::error();
  else {
    static_assert(broadcastable<op::sub, fx::shape_of<XN>, fx::shape_of<YN>>,
                  "tg: sub: shapes cannot be broadcast");
    static_assert(defined_for<op::sub, fx::elem_of<XN>> && defined_for<op::sub, fx::elem_of<YN>>,
                  "tg: sub: not defined for bool (use logical_xor)");
    if constexpr (broadcastable<op::sub, fx::shape_of<XN>, fx::shape_of<YN>>)
      return fx::ops<>::sub(x, y);
    else
      return fx::ops<>::error();
  }
}
template <fx::operand A, fx::operand_with<A> B> constexpr auto operator*(A&& a, B&& b) {
  auto x = fx::lhs(std::forward<A>(a), b);
  auto y = fx::rhs(a, std::forward<B>(b));
  using XN = decltype(x);
  using YN = decltype(y);
  if constexpr (XN::is_error || YN::is_error)
    return fx::ops<>::error();
  else {
    static_assert(broadcastable<op::mul, fx::shape_of<XN>, fx::shape_of<YN>>,
                  "tg: mul: shapes cannot be broadcast");
    if constexpr (broadcastable<op::mul, fx::shape_of<XN>, fx::shape_of<YN>>)
      return fx::ops<>::mul(x, y);
    else
      return fx::ops<>::error();
  }
}
template <fx::operand A, fx::operand_with<A> B> constexpr auto operator/(A&& a, B&& b) {
  auto x = fx::lhs(std::forward<A>(a), b);
  auto y = fx::rhs(a, std::forward<B>(b));
  using XN = decltype(x);
  using YN = decltype(y);
  if constexpr (XN::is_error || YN::is_error)
    return fx::ops<>::error();
  else {
    static_assert(broadcastable<op::div, fx::shape_of<XN>, fx::shape_of<YN>>,
                  "tg: div: shapes cannot be broadcast");
    if constexpr (broadcastable<op::div, fx::shape_of<XN>, fx::shape_of<YN>>)
      return fx::ops<>::div(x, y);
    else
      return fx::ops<>::error();
  }
}
template <fx::operand A, fx::operand_with<A> B> constexpr auto operator<(A&& a, B&& b) {
  auto x = fx::lhs(std::forward<A>(a), b);
  auto y = fx::rhs(a, std::forward<B>(b));
  using XN = decltype(x);
  using YN = decltype(y);
  if constexpr (XN::is_error || YN::is_error)
    return fx::ops<>::error();
  else {
    static_assert(broadcastable<op::lt, fx::shape_of<XN>, fx::shape_of<YN>>,
                  "tg: lt: shapes cannot be broadcast");
    if constexpr (broadcastable<op::lt, fx::shape_of<XN>, fx::shape_of<YN>>)
      return fx::ops<>::lt(x, y);
    else
      return fx::ops<>::error();
  }
}
template <fx::operand A, fx::operand_with<A> B> constexpr auto operator>(A&& a, B&& b) {
  auto x = fx::lhs(std::forward<A>(a), b);
  auto y = fx::rhs(a, std::forward<B>(b));
  using XN = decltype(x);
  using YN = decltype(y);
  if constexpr (XN::is_error || YN::is_error)
    return fx::ops<>::error();
  else {
    static_assert(broadcastable<op::gt, fx::shape_of<XN>, fx::shape_of<YN>>,
                  "tg: gt: shapes cannot be broadcast");
    if constexpr (broadcastable<op::gt, fx::shape_of<XN>, fx::shape_of<YN>>)
      return fx::ops<>::gt(x, y);
    else
      return fx::ops<>::error();
  }
}
template <fx::operand A, fx::operand_with<A> B> constexpr auto operator<=(A&& a, B&& b) {
  auto x = fx::lhs(std::forward<A>(a), b);
  auto y = fx::rhs(a, std::forward<B>(b));
  using XN = decltype(x);
  using YN = decltype(y);
  if constexpr (XN::is_error || YN::is_error)
    return fx::ops<>::error();
  else {
    static_assert(broadcastable<op::le, fx::shape_of<XN>, fx::shape_of<YN>>,
                  "tg: le: shapes cannot be broadcast");
    if constexpr (broadcastable<op::le, fx::shape_of<XN>, fx::shape_of<YN>>)
      return fx::ops<>::le(x, y);
    else
      return fx::ops<>::error();
  }
}
template <fx::operand A, fx::operand_with<A> B> constexpr auto operator>=(A&& a, B&& b) {
  auto x = fx::lhs(std::forward<A>(a), b);
  auto y = fx::rhs(a, std::forward<B>(b));
  using XN = decltype(x);
  using YN = decltype(y);
  if constexpr (XN::is_error || YN::is_error)
    return fx::ops<>::error();
  else {
    static_assert(broadcastable<op::ge, fx::shape_of<XN>, fx::shape_of<YN>>,
                  "tg: ge: shapes cannot be broadcast");
    if constexpr (broadcastable<op::ge, fx::shape_of<XN>, fx::shape_of<YN>>)
      return fx::ops<>::ge(x, y);
    else
      return fx::ops<>::error();
  }
}
template <fx::operand A, fx::operand_with<A> B> constexpr auto operator==(A&& a, B&& b) {
  auto x = fx::lhs(std::forward<A>(a), b);
  auto y = fx::rhs(a, std::forward<B>(b));
  using XN = decltype(x);
  using YN = decltype(y);
  if constexpr (XN::is_error || YN::is_error)
    return fx::ops<>::error();
  else {
    static_assert(broadcastable<op::eq, fx::shape_of<XN>, fx::shape_of<YN>>,
                  "tg: eq: shapes cannot be broadcast");
    if constexpr (broadcastable<op::eq, fx::shape_of<XN>, fx::shape_of<YN>>)
      return fx::ops<>::eq(x, y);
    else
      return fx::ops<>::error();
  }
}
template <fx::operand A, fx::operand_with<A> B> constexpr auto operator!=(A&& a, B&& b) {
  auto x = fx::lhs(std::forward<A>(a), b);
  auto y = fx::rhs(a, std::forward<B>(b));
  using XN = decltype(x);
  using YN = decltype(y);
  if constexpr (XN::is_error || YN::is_error)
    return fx::ops<>::error();
  else {
    static_assert(broadcastable<op::ne, fx::shape_of<XN>, fx::shape_of<YN>>,
                  "tg: ne: shapes cannot be broadcast");
    if constexpr (broadcastable<op::ne, fx::shape_of<XN>, fx::shape_of<YN>>)
      return fx::ops<>::ne(x, y);
    else
      return fx::ops<>::error();
  }
}
template <fx::operand A, fx::operand_with<A> B> constexpr auto operator&&(A&& a, B&& b) {
  auto x = fx::lhs(std::forward<A>(a), b);
  auto y = fx::rhs(a, std::forward<B>(b));
  using XN = decltype(x);
  using YN = decltype(y);
  if constexpr (XN::is_error || YN::is_error)
    return fx::ops<>::error();
  else {
    static_assert(broadcastable<op::logical_and, fx::shape_of<XN>, fx::shape_of<YN>>,
                  "tg: logical_and: shapes cannot be broadcast");
    if constexpr (broadcastable<op::logical_and, fx::shape_of<XN>, fx::shape_of<YN>>)
      return fx::ops<>::logical_and(x, y);
    else
      return fx::ops<>::error();
  }
}
template <fx::operand A, fx::operand_with<A> B> constexpr auto operator||(A&& a, B&& b) {
  auto x = fx::lhs(std::forward<A>(a), b);
  auto y = fx::rhs(a, std::forward<B>(b));
  using XN = decltype(x);
  using YN = decltype(y);
  if constexpr (XN::is_error || YN::is_error)
    return fx::ops<>::error();
  else {
    static_assert(broadcastable<op::logical_or, fx::shape_of<XN>, fx::shape_of<YN>>,
                  "tg: logical_or: shapes cannot be broadcast");
    if constexpr (broadcastable<op::logical_or, fx::shape_of<XN>, fx::shape_of<YN>>)
      return fx::ops<>::logical_or(x, y);
    else
      return fx::ops<>::error();
  }
}

template <fx::expr A> constexpr auto operator-(A&& a) { return a.neg(); }
template <fx::expr A> constexpr auto operator!(A&& a) { return a.logical_not(); }

/// cond ? a : b elementwise, broadcast together (a or b may be a scalar).
template <fx::expr C, fx::operand A, fx::operand_with<A> B>
constexpr auto where(C&& c, A&& a, B&& b) {
  auto cn = fx::ops<>::node(std::forward<C>(c));
  auto x = fx::lhs(std::forward<A>(a), b);
  auto y = fx::rhs(a, std::forward<B>(b));
  using CN = decltype(cn);
  using XN = decltype(x);
  using YN = decltype(y);
  if constexpr (CN::is_error || XN::is_error || YN::is_error)
    return fx::ops<>::error();
  else {
    static_assert(broadcastable<op::where, fx::shape_of<CN>, fx::shape_of<XN>, fx::shape_of<YN>>,
                  "tg: where: shapes cannot be broadcast");
    if constexpr (broadcastable<op::where, fx::shape_of<CN>, fx::shape_of<XN>, fx::shape_of<YN>>)
      return fx::ops<>::where3(cn, x, y);
    else
      return fx::ops<>::error();
  }
}
template <fx::expr A, class B> constexpr auto matmul(A&& a, B&& b) {
  return a.matmul(std::forward<B>(b));
}
template <fx::expr A, class B> constexpr auto maximum(A&& a, B&& b) {
  return a.maximum(std::forward<B>(b));
}
template <fx::expr A, class B> constexpr auto minimum(A&& a, B&& b) {
  return a.minimum(std::forward<B>(b));
}
/// Concatenation along a compile-time axis: tg::cat<1>(a, b, c).
template <int Axis = 0, fx::expr E0, fx::expr... E> constexpr auto cat(E0&& e0, E&&... e) {
  return fx::cat_nodes<Axis>(fx::ops<>::node(std::forward<E0>(e0)),
                             fx::ops<>::node(std::forward<E>(e))...);
}
/// Stacking along a new compile-time axis: tg::stack<0>(a, b) has shape [2, a's shape...].
template <int Axis = 0, fx::expr E0, fx::expr... E> constexpr auto stack(E0&& e0, E&&... e) {
  return fx::stack_nodes<Axis>(fx::ops<>::node(std::forward<E0>(e0)),
                               fx::ops<>::node(std::forward<E>(e))...);
}
/// The value of an expression as a new tg::fixed.
template <fx::expr E> constexpr auto eval(E&& e) { return e.eval(); }

// Free spellings of the methods that take template arguments: inside a template, where the
// expression's type is dependent, x.sum<1>() must be written x.template sum<1>(); tg::sum<1>(x)
// needs no `template`.
template <int... Ax, fx::expr E> constexpr auto sum(const E& e) { return e.template sum<Ax...>(); }
template <int... Ax, fx::expr E> constexpr auto sum(const E& e, keepdim_t k) {
  return e.template sum<Ax...>(k);
}
template <int... Ax, fx::expr E> constexpr auto prod(const E& e) {
  return e.template prod<Ax...>();
}
template <int... Ax, fx::expr E> constexpr auto prod(const E& e, keepdim_t k) {
  return e.template prod<Ax...>(k);
}
template <int... Ax, fx::expr E> constexpr auto max(const E& e) { return e.template max<Ax...>(); }
template <int... Ax, fx::expr E> constexpr auto max(const E& e, keepdim_t k) {
  return e.template max<Ax...>(k);
}
template <int... Ax, fx::expr E> constexpr auto min(const E& e) { return e.template min<Ax...>(); }
template <int... Ax, fx::expr E> constexpr auto min(const E& e, keepdim_t k) {
  return e.template min<Ax...>(k);
}
template <int... Ax, fx::expr E> constexpr auto mean(const E& e) {
  return e.template mean<Ax...>();
}
template <int... Ax, fx::expr E> constexpr auto mean(const E& e, keepdim_t k) {
  return e.template mean<Ax...>(k);
}
template <int... Ax, fx::expr E> constexpr auto any(const E& e) { return e.template any<Ax...>(); }
template <int... Ax, fx::expr E> constexpr auto all(const E& e) { return e.template all<Ax...>(); }
template <int... Ax, fx::expr E> constexpr auto logsumexp(const E& e) {
  return e.template logsumexp<Ax...>();
}
template <int Axis, fx::expr E> constexpr auto softmax(const E& e) {
  return e.template softmax<Axis>();
}
template <int Axis, fx::expr E> constexpr auto log_softmax(const E& e) {
  return e.template log_softmax<Axis>();
}
template <int Axis, fx::expr E> constexpr auto argmax(const E& e) {
  return e.template argmax<Axis>();
}
template <int Axis, fx::expr E> constexpr auto argmin(const E& e) {
  return e.template argmin<Axis>();
}
template <int Axis, fx::expr E> constexpr auto cumsum(const E& e) {
  return e.template cumsum<Axis>();
}
template <int Axis, fx::expr E, class I>
constexpr auto gather(const E& e, I&& index,
                      std::source_location loc = std::source_location::current()) {
  return e.template gather<Axis>(std::forward<I>(index), loc);
}
template <int Axis, fx::expr E, class I>
constexpr auto index_select(const E& e, I&& index,
                            std::source_location loc = std::source_location::current()) {
  return e.template index_select<Axis>(std::forward<I>(index), loc);
}
/// tg::split<Size, Axis>(x), tg::split<tg::dims<S0, S1, ...>, Axis>(x): a std::tuple of views.
template <std::int64_t Size, int Axis = 0, fx::expr E> constexpr auto split(const E& e) {
  return e.template split<Size, Axis>();
}
template <class Sizes, int Axis = 0, fx::expr E> constexpr auto split(const E& e) {
  return e.template split<Sizes, Axis>();
}
template <std::int64_t Chunks, int Axis = 0, fx::expr E> constexpr auto chunk(const E& e) {
  return e.template chunk<Chunks, Axis>();
}
template <std::int64_t... To, fx::expr E> constexpr auto reshape(const E& e) {
  return e.template reshape<To...>();
}
template <int... P, fx::expr E> constexpr auto permute(const E& e) {
  return e.template permute<P...>();
}
template <int A, int B, fx::expr E> constexpr auto transpose(const E& e) {
  return e.template transpose<A, B>();
}
template <std::int64_t... To, fx::expr E> constexpr auto expand(const E& e) {
  return e.template expand<To...>();
}
template <int Axis, fx::expr E> constexpr auto unsqueeze(const E& e) {
  return e.template unsqueeze<Axis>();
}
template <int... Axis, fx::expr E> constexpr auto squeeze(const E& e) {
  return e.template squeeze<Axis...>();
}
template <int Axis, std::int64_t Start, std::int64_t Stop = none, std::int64_t Step = 1, fx::expr E>
constexpr auto slice(const E& e) {
  return e.template slice<Axis, Start, Stop, Step>();
}
template <class U, fx::expr E> constexpr auto cast(const E& e) { return e.template cast<U>(); }

} // namespace tg
