#pragma once
// The primitive expression nodes of the static front end, one per Graph op: leaf (a Buffer),
// constant (Const), unary, cast, bitcast, binary, where, reduce, view; plus matmul, a composite
// that lowers to the same primitives but evaluates on the host with its own loop order.
//
// Every node has: dtype, shape_type, evaluator() (an object whose coeff(i) computes the element at
// flat row-major index i, as the C renderer's kernel would), emit(builder) (its Graph node, see
// graph.hpp) and reads(p) (whether it reads the fixed tensor at p). Default-constructed, a node is
// a stand-in with no data, whose emit() gives the graph of its type (proto.hpp).
#include <memory>
#include <tuple>
#include <type_traits>

#include "base.hpp"

namespace tg::fx {

// ---- scalar semantics of the primitive ops (those of the C renderer) ----------------------------
template <class T> TG_FX_INLINE constexpr T wrap_add(T a, T b) {
  if constexpr (std::is_same_v<T, bool>)
    return a || b;
  else if constexpr (std::is_integral_v<T> && std::is_signed_v<T>)
    return T(std::make_unsigned_t<T>(a) + std::make_unsigned_t<T>(b));
  else
    return T(a + b);
}
template <class T> TG_FX_INLINE constexpr T wrap_mul(T a, T b) {
  if constexpr (std::is_same_v<T, bool>)
    return a && b;
  else if constexpr (std::is_integral_v<T> && std::is_signed_v<T>)
    return T(std::make_unsigned_t<T>(a) * std::make_unsigned_t<T>(b));
  else
    return T(a * b);
}

template <DType D> constexpr compute_t<D> scalar_value(const Scalar& s) {
  if constexpr (is_float(D))
    return compute_t<D>(s.f);
  else if constexpr (D == DType::Bool)
    return s.i != 0;
  else
    return compute_t<D>(s.i);
}

template <Op O, DType D> TG_FX_INLINE constexpr compute_t<D> alu1(compute_t<D> a) {
  using T = compute_t<D>;
  if constexpr (O == Op::Neg) {
    if constexpr (D == DType::Bool)
      return !a;
    else if constexpr (std::is_integral_v<T> && std::is_signed_v<T>)
      return T(std::make_unsigned_t<T>(0) - std::make_unsigned_t<T>(a));
    else
      return T(-a);
  } else if constexpr (O == Op::Recip)
    return T(1) / a;
  else if constexpr (O == Op::Sqrt)
    return cmath::sqrt_(a);
  else if constexpr (O == Op::Exp2)
    return cmath::exp2_(a);
  else if constexpr (O == Op::Log2)
    return cmath::log2_(a);
  else if constexpr (O == Op::Sin)
    return cmath::sin_(a);
  else if constexpr (O == Op::Trunc)
    return cmath::trunc_(a);
  else
    return a;
}

template <Op O, DType In> TG_FX_INLINE constexpr auto alu2(compute_t<In> a, compute_t<In> b) {
  using T = compute_t<In>;
  if constexpr (O == Op::Add)
    return wrap_add(a, b);
  else if constexpr (O == Op::Mul)
    return wrap_mul(a, b);
  else if constexpr (O == Op::Div)
    return T(a / b);
  else if constexpr (O == Op::Mod) {
    if constexpr (std::is_integral_v<T>)
      return T(a % b);
    else
      return T(a - cmath::trunc_(a / b) * b);
  } else if constexpr (O == Op::Max) {
    if constexpr (std::is_floating_point_v<T>)
      return (a > b || a != a) ? a : b;
    else
      return a > b ? a : b;
  } else if constexpr (O == Op::Pow)
    return cmath::pow_(a, b);
  else if constexpr (O == Op::CmpLt)
    return bool(a < b);
  else if constexpr (O == Op::CmpEq)
    return bool(a == b);
  else if constexpr (O == Op::CmpNe)
    return bool(a != b);
  else if constexpr (O == Op::And)
    return T(a & b);
  else if constexpr (O == Op::Or)
    return T(a | b);
  else
    return T(a ^ b);
}

/// Cast with the C renderer's semantics.
template <DType From, DType To> TG_FX_INLINE constexpr compute_t<To> convert(compute_t<From> a) {
  if constexpr (To == DType::Bool)
    return a != compute_t<From>(0);
  else if constexpr (To == DType::Float16)
    return float(half(float(a)));
  else if constexpr (To == DType::BFloat16)
    return float(bfloat16_t(float(a)));
  else
    return static_cast<compute_t<To>>(a);
}
template <DType From, DType To>
TG_FX_INLINE constexpr compute_t<To> reinterpret(compute_t<From> a) {
  if constexpr (From == DType::Float16)
    return compute_t<To>(half(a).bits);
  else if constexpr (From == DType::BFloat16)
    return compute_t<To>(bfloat16_t(a).bits);
  else if constexpr (To == DType::Float16)
    return half::to_float(std::uint16_t(a));
  else if constexpr (To == DType::BFloat16)
    return bfloat16_t::to_float(std::uint16_t(a));
  else
    return std::bit_cast<compute_t<To>>(a);
}

template <Op O, DType D> constexpr compute_t<D> reduce_identity() {
  if constexpr (O == Op::ReduceSum)
    return compute_t<D>(0);
  else if constexpr (O == Op::ReduceProd)
    return compute_t<D>(1);
  else if constexpr (is_float(D))
    return -std::numeric_limits<compute_t<D>>::infinity();
  else
    return std::numeric_limits<compute_t<D>>::lowest();
}
template <Op O, DType D>
TG_FX_INLINE constexpr compute_t<D> accumulate(compute_t<D> acc, compute_t<D> v) {
  if constexpr (O == Op::ReduceSum)
    return alu2<Op::Add, D>(acc, v);
  else if constexpr (O == Op::ReduceMax)
    return alu2<Op::Max, D>(acc, v);
  else
    return alu2<Op::Mul, D>(acc, v);
}

// ---- shapes as the graph layer sees them
// ---------------------------------------------------------
template <class S> constexpr Shape sym() {
  Shape r;
  for (std::size_t d : S::dims) r.push_back(SInt(std::int64_t(d)));
  return r;
}
template <class S> constexpr std::vector<SInt> sym_values() { return sym<S>(); }

/// Common static members of a node.
template <DType Dt, class S> struct node_info {
  static constexpr DType dtype = Dt;
  using shape_type = S;
  using value_type = compute_t<Dt>;
  static constexpr std::size_t rank = S::rank, size = S::size;
  static constexpr bool is_error = false;
};

/// Adds a node whose sources were emitted after `mark` (see graph_builder::add).
template <class B>
constexpr int add_node(B& b, int mark, Op op, DType t, const Shape& shape, int s0 = -1, int s1 = -1,
                       int s2 = -1) {
  Node n;
  n.op = op;
  n.dtype = t;
  n.src = {s0, s1, s2};
  n.shape = shape;
  return b.add(std::move(n), mark);
}

// ---- the error stand-in
// --------------------------------------------------------------------------
template <auto... A> constexpr error_expr make_error();
template <class... A> constexpr error_expr make_error_t();
/// N error stand-ins, for a failed split or chunk (N: the pieces the user most likely expects).
template <std::size_t N, class E = error_expr> constexpr auto error_pieces() {
  auto each = []<std::size_t... I>(std::index_sequence<I...>) {
    return std::make_tuple((void(I), E{})...);
  };
  return each(std::make_index_sequence<N>{});
}
} // namespace tg::fx

namespace tg {
/// Every method of an error stand-in gives another: one mistake, one diagnostic.
template <> struct expression<fx::error_expr> : fx::expr_tag {
#define TG_FX_ABSORB(NAME)                                                                         \
  template <auto... A> constexpr auto NAME(auto&&...) const { return fx::make_error<A...>(); }     \
  template <class A0, class... A> constexpr auto NAME(auto&&...) const {                           \
    return fx::make_error_t<A0, A...>();                                                           \
  }
  TG_FX_ABSORB(neg)
  TG_FX_ABSORB(abs)
  TG_FX_ABSORB(sign)
  TG_FX_ABSORB(relu)
  TG_FX_ABSORB(exp)
  TG_FX_ABSORB(exp2)
  TG_FX_ABSORB(log)
  TG_FX_ABSORB(log2)
  TG_FX_ABSORB(sqrt)
  TG_FX_ABSORB(rsqrt)
  TG_FX_ABSORB(reciprocal)
  TG_FX_ABSORB(sin)
  TG_FX_ABSORB(cos)
  TG_FX_ABSORB(tan)
  TG_FX_ABSORB(tanh)
  TG_FX_ABSORB(sigmoid)
  TG_FX_ABSORB(silu)
  TG_FX_ABSORB(gelu)
  TG_FX_ABSORB(gelu_tanh)
  TG_FX_ABSORB(leaky_relu)
  TG_FX_ABSORB(softplus)
  TG_FX_ABSORB(square)
  TG_FX_ABSORB(trunc)
  TG_FX_ABSORB(floor)
  TG_FX_ABSORB(ceil)
  TG_FX_ABSORB(round)
  TG_FX_ABSORB(isnan)
  TG_FX_ABSORB(isinf)
  TG_FX_ABSORB(logical_not)
  TG_FX_ABSORB(clamp)
  TG_FX_ABSORB(cast)
  TG_FX_ABSORB(bitcast)
  TG_FX_ABSORB(sum)
  TG_FX_ABSORB(prod)
  TG_FX_ABSORB(max)
  TG_FX_ABSORB(min)
  TG_FX_ABSORB(any)
  TG_FX_ABSORB(all)
  TG_FX_ABSORB(logsumexp)
  TG_FX_ABSORB(mean)
  TG_FX_ABSORB(var)
  TG_FX_ABSORB(std)
  TG_FX_ABSORB(softmax)
  TG_FX_ABSORB(log_softmax)
  TG_FX_ABSORB(reshape)
  TG_FX_ABSORB(view)
  TG_FX_ABSORB(permute)
  TG_FX_ABSORB(transpose)
  TG_FX_ABSORB(T)
  TG_FX_ABSORB(expand)
  TG_FX_ABSORB(broadcast_to)
  TG_FX_ABSORB(squeeze)
  TG_FX_ABSORB(unsqueeze)
  TG_FX_ABSORB(flatten)
  TG_FX_ABSORB(pad)
  TG_FX_ABSORB(slice)
  TG_FX_ABSORB(select)
  TG_FX_ABSORB(flip)
  TG_FX_ABSORB(unfold)
  TG_FX_ABSORB(repeat)
  TG_FX_ABSORB(matmul)
  TG_FX_ABSORB(dot)
  TG_FX_ABSORB(pow)
  TG_FX_ABSORB(maximum)
  TG_FX_ABSORB(minimum)
  TG_FX_ABSORB(logical_and)
  TG_FX_ABSORB(logical_or)
  TG_FX_ABSORB(logical_xor)
  TG_FX_ABSORB(argmax)
  TG_FX_ABSORB(argmin)
  TG_FX_ABSORB(cumsum)
  TG_FX_ABSORB(cumprod)
  TG_FX_ABSORB(tril)
  TG_FX_ABSORB(triu)
  TG_FX_ABSORB(amax)
  TG_FX_ABSORB(amin)
  TG_FX_ABSORB(bitwise_and)
  TG_FX_ABSORB(bitwise_or)
  TG_FX_ABSORB(bitwise_xor)
  TG_FX_ABSORB(bitwise_not)
  TG_FX_ABSORB(masked_fill)
  TG_FX_ABSORB(lerp)
  TG_FX_ABSORB(log1p)
  TG_FX_ABSORB(expm1)
  TG_FX_ABSORB(sinh)
  TG_FX_ABSORB(cosh)
  TG_FX_ABSORB(asinh)
  TG_FX_ABSORB(acosh)
  TG_FX_ABSORB(atanh)
  TG_FX_ABSORB(hypot)
  TG_FX_ABSORB(erf)
  TG_FX_ABSORB(erfc)
  TG_FX_ABSORB(atan)
  TG_FX_ABSORB(asin)
  TG_FX_ABSORB(acos)
  TG_FX_ABSORB(atan2)
  TG_FX_ABSORB(norm)
  TG_FX_ABSORB(logcumsumexp)
  TG_FX_ABSORB(cummax)
  TG_FX_ABSORB(cummin)
  TG_FX_ABSORB(sort)
  TG_FX_ABSORB(argsort)
  TG_FX_ABSORB(topk)
  TG_FX_ABSORB(scatter)
  TG_FX_ABSORB(scatter_add)
  TG_FX_ABSORB(index_add)
  TG_FX_ABSORB(fmod)
  TG_FX_ABSORB(remainder)
  TG_FX_ABSORB(floor_divide)
  TG_FX_ABSORB(bitwise_left_shift)
  TG_FX_ABSORB(bitwise_right_shift)
  TG_FX_ABSORB(gather)
  TG_FX_ABSORB(index_select)
  TG_FX_ABSORB(eval)
  TG_FX_ABSORB(item)
#undef TG_FX_ABSORB
};
} // namespace tg

namespace tg::fx {
struct error_expr : expression<error_expr>, node_info<DType::Float32, shape<>> {
  static constexpr bool is_error = true, is_symbolic = false, has_reduce = false, aligned = true;
  struct evaluator_t {
    constexpr float coeff(std::size_t) const { return 0; }
  };
  constexpr evaluator_t evaluator() const { return {}; }
  template <class B> constexpr int emit(B&) const { return -1; }
  constexpr bool reads(const void*) const { return false; }
  // split and chunk give tuples of stand-ins: one, as many as the sizes given, or Chunks
  template <auto... A> constexpr auto split(auto&&...) const { return error_pieces<1>(); }
  template <class Sizes, auto... A> constexpr auto split(auto&&...) const {
    return error_pieces<split_sizes<Sizes>::count>();
  }
  template <std::int64_t Chunks, auto... A> constexpr auto chunk(auto&&...) const {
    return error_pieces<(Chunks > 0 ? std::size_t(Chunks) : 1)>();
  }
};
template <auto... A> constexpr error_expr make_error() { return {}; }
template <class... A> constexpr error_expr make_error_t() { return {}; }

// ---- leaves
// ----------------------------------------------------------------------------------------
/// A fixed tensor read by reference (the user keeps it alive until the expression is assigned).
template <class F> struct leaf : expression<leaf<F>>, node_info<F::dtype, typename F::shape_type> {
  const F* p = nullptr;
  constexpr leaf() = default;
  constexpr explicit leaf(const F& f) : p(&f) {}
  static constexpr bool is_symbolic = false, has_reduce = false, aligned = true;
  struct evaluator_t {
    const typename F::value_type* d;
    TG_FX_INLINE constexpr compute_t<F::dtype> coeff(std::size_t i) const {
      return compute_t<F::dtype>(d[i]);
    }
  };
  constexpr evaluator_t evaluator() const { return {std::assume_aligned<F::alignment>(p->data())}; }
  template <class B> constexpr int emit(B& b) const {
    return b.buffer(p, -1, F::dtype, sym<typename F::shape_type>(), p ? p->data() : nullptr);
  }
  constexpr bool reads(const void* q) const { return static_cast<const void*>(p) == q; }
  constexpr const typename F::value_type* contiguous_data() const { return p->data(); }
};
/// A fixed tensor that was an rvalue operand: the expression keeps it.
template <class F>
struct owned : expression<owned<F>>, node_info<F::dtype, typename F::shape_type> {
  F value{};
  constexpr owned() = default;
  constexpr explicit owned(F&& f) : value(std::move(f)) {}
  static constexpr bool is_symbolic = false, has_reduce = false, aligned = true;
  using evaluator_t = typename leaf<F>::evaluator_t;
  constexpr evaluator_t evaluator() const {
    return {std::assume_aligned<F::alignment>(value.data())};
  }
  template <class B> constexpr int emit(B& b) const {
    return b.buffer(&value, -1, F::dtype, sym<typename F::shape_type>(), value.data());
  }
  constexpr bool reads(const void*) const { return false; }
  constexpr const typename F::value_type* contiguous_data() const { return value.data(); }
};

/// An index that gather or index_select computed when it was built (the run-time front end
/// realizes such an index): the expression keeps its values. Told apart by value, not by address:
/// the builders read an index more than once (copies), and copies are one Buffer node.
template <class F> struct kept : expression<kept<F>>, node_info<F::dtype, typename F::shape_type> {
  F value{};
  constexpr kept() = default;
  constexpr explicit kept(F&& f) : value(std::move(f)) {}
  static constexpr bool is_symbolic = false, has_reduce = false, aligned = true;
  using evaluator_t = typename leaf<F>::evaluator_t;
  constexpr evaluator_t evaluator() const {
    return {std::assume_aligned<F::alignment>(value.data())};
  }
  template <class B> constexpr int emit(B& b) const {
    std::vector<std::int64_t> v;
    for (const auto& x : value) v.push_back(std::int64_t(x));
    return b.kept_buffer(std::move(v), F::dtype, sym<typename F::shape_type>(), value.data());
  }
  constexpr bool reads(const void*) const { return false; }
};

/// The index constants that the run-time argmax, cumsum, gather and index_select upload with
/// Tensor::from_data (n - i for argmax, i for the others), as static data: one Buffer. The
/// ranges i are int32 where they fit, as detail::arange_on makes them.
enum class index_kind { countdown, arange };
template <index_kind K, std::size_t N>
inline constexpr DType index_dtype =
    N <= 2147483647u && K == index_kind::arange ? DType::Int32 : DType::Int64;
template <index_kind K, std::size_t N>
using index_t = std::conditional_t<index_dtype<K, N> == DType::Int32, std::int32_t, std::int64_t>;
template <index_kind K, std::size_t N>
inline constexpr auto index_data = [] {
  std::array<index_t<K, N>, N == 0 ? 1 : N> r{};
  for (std::size_t i = 0; i < N; ++i) r[i] = index_t<K, N>(K == index_kind::countdown ? N - i : i);
  return r;
}();
/// index_data<K, S::size> as a leaf of shape S.
template <index_kind K, class S>
struct index_leaf : expression<index_leaf<K, S>>, node_info<index_dtype<K, S::size>, S> {
  static constexpr bool is_symbolic = false, has_reduce = false, aligned = false;
  struct evaluator_t {
    const index_t<K, S::size>* d;
    TG_FX_INLINE constexpr index_t<K, S::size> coeff(std::size_t i) const { return d[i]; }
  };
  constexpr evaluator_t evaluator() const { return {index_data<K, S::size>.data()}; }
  template <class B> constexpr int emit(B& b) const {
    const auto* p = &index_data<K, S::size>;
    return b.buffer(p, -1, index_dtype<K, S::size>, sym<S>(), p->data());
  }
  constexpr bool reads(const void*) const { return false; }
};

/// A scalar constant (shape []), Op::Const.
template <DType D> struct constant : expression<constant<D>>, node_info<D, shape<>> {
  Scalar value{};
  /// Nonzero: this constant is one value that its builder uses more than once (the run-time front
  /// end's one Tensor used twice); equal constants with the same tag are one node.
  int share = 0;
  constexpr constant() = default;
  constexpr explicit constant(Scalar v, int share_ = 0) : value(v), share(share_) {}
  static constexpr bool is_symbolic = false, has_reduce = false, aligned = true;
  struct evaluator_t {
    compute_t<D> v;
    TG_FX_INLINE constexpr compute_t<D> coeff(std::size_t) const { return v; }
  };
  constexpr evaluator_t evaluator() const { return {scalar_value<D>(value)}; }
  template <class B> constexpr int emit(B& b) const {
    Node n;
    n.op = Op::Const;
    n.dtype = D;
    n.value = value;
    return b.add(std::move(n), b.mark(), share);
  }
  constexpr bool reads(const void*) const { return false; }
};
template <class E> inline constexpr bool is_constant = false;
template <DType D> inline constexpr bool is_constant<constant<D>> = true;

// ---- elementwise
// ---------------------------------------------------------------------------------
template <Op O, class C>
struct unary : expression<unary<O, C>>, node_info<C::dtype, typename C::shape_type> {
  C c{};
  int salt = 0; // where it was made (see ops::unary_op)
  constexpr unary() = default;
  constexpr explicit unary(C c_, int salt_ = 0) : c(std::move(c_)), salt(salt_) {}
  static constexpr bool is_symbolic = C::is_symbolic, has_reduce = C::has_reduce,
                        aligned = C::aligned;
  struct evaluator_t {
    decltype(std::declval<const C&>().evaluator()) e;
    TG_FX_INLINE constexpr compute_t<C::dtype> coeff(std::size_t i) const {
      return alu1<O, C::dtype>(e.coeff(i));
    }
  };
  constexpr evaluator_t evaluator() const { return {c.evaluator()}; }
  template <class B> constexpr int emit(B& b) const {
    int mark = b.mark();
    int s = c.emit(b);
    Node n;
    n.op = O;
    n.dtype = C::dtype;
    n.src = {s, -1, -1};
    n.shape = sym<typename C::shape_type>();
    return b.add(std::move(n), mark, 0, salt);
  }
  constexpr bool reads(const void* q) const { return c.reads(q); }
};

template <DType D, class C>
struct cast_node : expression<cast_node<D, C>>, node_info<D, typename C::shape_type> {
  C c{};
  /// Where the cast was made (see ops::cast_to): casts from different places are different nodes.
  int salt = 0;
  constexpr cast_node() = default;
  constexpr explicit cast_node(C c_, int salt_ = 0) : c(std::move(c_)), salt(salt_) {}
  static constexpr bool is_symbolic = C::is_symbolic, has_reduce = C::has_reduce,
                        aligned = C::aligned;
  struct evaluator_t {
    decltype(std::declval<const C&>().evaluator()) e;
    TG_FX_INLINE constexpr compute_t<D> coeff(std::size_t i) const {
      return convert<C::dtype, D>(e.coeff(i));
    }
  };
  constexpr evaluator_t evaluator() const { return {c.evaluator()}; }
  template <class B> constexpr int emit(B& b) const {
    int mark = b.mark();
    int s = c.emit(b);
    Node n;
    n.op = Op::Cast;
    n.dtype = D;
    n.src = {s, -1, -1};
    n.shape = sym<typename C::shape_type>();
    return b.add(std::move(n), mark, 0, salt);
  }
  constexpr bool reads(const void* q) const { return c.reads(q); }
};

template <DType D, class C>
struct bitcast_node : expression<bitcast_node<D, C>>, node_info<D, typename C::shape_type> {
  C c{};
  constexpr bitcast_node() = default;
  constexpr explicit bitcast_node(C c_) : c(std::move(c_)) {}
  static constexpr bool is_symbolic = C::is_symbolic, has_reduce = C::has_reduce,
                        aligned = C::aligned;
  struct evaluator_t {
    decltype(std::declval<const C&>().evaluator()) e;
    TG_FX_INLINE constexpr compute_t<D> coeff(std::size_t i) const {
      return reinterpret<C::dtype, D>(e.coeff(i));
    }
  };
  constexpr evaluator_t evaluator() const { return {c.evaluator()}; }
  template <class B> constexpr int emit(B& b) const {
    int mark = b.mark();
    int s = c.emit(b);
    return add_node(b, mark, Op::Bitcast, D, sym<typename C::shape_type>(), s);
  }
  constexpr bool reads(const void* q) const { return c.reads(q); }
};

/// Operands of one shape and one dtype (the builders expand and cast them first).
template <Op O, class L, class R>
struct binary : expression<binary<O, L, R>>,
                node_info<is_compare(O) ? DType::Bool : L::dtype, typename L::shape_type> {
  L l{};
  R r{};
  constexpr binary() = default;
  constexpr binary(L l_, R r_) : l(std::move(l_)), r(std::move(r_)) {}
  static constexpr DType dtype = is_compare(O) ? DType::Bool : L::dtype;
  static constexpr bool is_symbolic = L::is_symbolic || R::is_symbolic;
  static constexpr bool has_reduce = L::has_reduce || R::has_reduce,
                        aligned = L::aligned && R::aligned;
  struct evaluator_t {
    decltype(std::declval<const L&>().evaluator()) a;
    decltype(std::declval<const R&>().evaluator()) b;
    TG_FX_INLINE constexpr compute_t<dtype> coeff(std::size_t i) const {
      return compute_t<dtype>(alu2<O, L::dtype>(a.coeff(i), b.coeff(i)));
    }
  };
  constexpr evaluator_t evaluator() const { return {l.evaluator(), r.evaluator()}; }
  template <class B> constexpr int emit(B& b) const {
    int mark = b.mark();
    int s0 = l.emit(b);
    int s1 = r.emit(b);
    return add_node(b, mark, O, dtype, sym<typename L::shape_type>(), s0, s1);
  }
  constexpr bool reads(const void* q) const { return l.reads(q) || r.reads(q); }
};

template <class C, class A, class B2>
struct where_node : expression<where_node<C, A, B2>>, node_info<A::dtype, typename A::shape_type> {
  C c{};
  A a{};
  B2 b{};
  constexpr where_node() = default;
  constexpr where_node(C c_, A a_, B2 b_) : c(std::move(c_)), a(std::move(a_)), b(std::move(b_)) {}
  static constexpr bool is_symbolic = C::is_symbolic || A::is_symbolic || B2::is_symbolic;
  static constexpr bool has_reduce = C::has_reduce || A::has_reduce || B2::has_reduce;
  static constexpr bool aligned = C::aligned && A::aligned && B2::aligned;
  struct evaluator_t {
    decltype(std::declval<const C&>().evaluator()) ec;
    decltype(std::declval<const A&>().evaluator()) ea;
    decltype(std::declval<const B2&>().evaluator()) eb;
    TG_FX_INLINE constexpr compute_t<A::dtype> coeff(std::size_t i) const {
      return ec.coeff(i) ? ea.coeff(i) : eb.coeff(i);
    }
  };
  constexpr evaluator_t evaluator() const { return {c.evaluator(), a.evaluator(), b.evaluator()}; }
  template <class Bld> constexpr int emit(Bld& bld) const {
    int mark = bld.mark();
    int s0 = c.emit(bld);
    int s1 = a.emit(bld);
    int s2 = b.emit(bld);
    return add_node(bld, mark, Op::Where, A::dtype, sym<typename A::shape_type>(), s0, s1, s2);
  }
  constexpr bool reads(const void* q) const { return c.reads(q) || a.reads(q) || b.reads(q); }
};

// ---- materializing a sub-expression (what a kernel boundary is on the host) ---------------------
template <DType D, class S> struct fixed_for_t;
template <DType D, std::size_t... Dims> struct fixed_for_t<D, shape<Dims...>> {
  using type = fixed<storage_t<D>, Dims...>;
};
/// The fixed tensor that holds an expression of dtype D and shape S.
template <DType D, class S> using fixed_for = typename fixed_for_t<D, S>::type;

/// Writes every element of `e` to out[0..size) (one loop).
template <class T, class E> constexpr void evaluate_into(T* out, const E& e);
template <std::size_t Align, class T, class E> constexpr void evaluate_into(T* out, const E& e);

template <class C> struct materialized {
  fixed_for<C::dtype, typename C::shape_type> t;
  constexpr explicit materialized(const C& c) { evaluate_into(t.data(), c); }
  TG_FX_INLINE constexpr compute_t<C::dtype> coeff(std::size_t i) const {
    return compute_t<C::dtype>(t.data()[i]);
  }
};

// ---- reductions
// ----------------------------------------------------------------------------------
inline constexpr std::size_t kViewRank = 16;
using idx_array = std::array<std::int64_t, kViewRank>;

template <class In, int... Ax> struct reduce_info {
  struct info_t {
    idx_array in_stride{}, out_shape{}, out_div{}, r_size{}, r_stride{}, r_div{};
    std::array<bool, kViewRank> red{};
    std::int64_t R = 1;
    bool suffix = true;
  };
  static constexpr std::size_t rank = In::rank, nred = sizeof...(Ax);
  static constexpr info_t value = [] {
    info_t r{};
    std::array<int, nred> ax{Ax...};
    std::int64_t acc = 1;
    for (std::size_t d = rank; d-- > 0;) {
      r.in_stride[d] = acc;
      acc *= std::int64_t(In::dims[d]);
    }
    for (int a : ax) r.red[std::size_t(a)] = true;
    for (std::size_t d = 0; d < rank; ++d)
      r.out_shape[d] = r.red[d] ? 1 : std::int64_t(In::dims[d]);
    acc = 1;
    for (std::size_t d = rank; d-- > 0;) {
      r.out_div[d] = acc;
      acc *= r.out_shape[d];
    }
    for (std::size_t j = 0; j < nred; ++j) {
      r.r_size[j] = std::int64_t(In::dims[std::size_t(ax[j])]);
      r.r_stride[j] = r.in_stride[std::size_t(ax[j])];
      r.R *= r.r_size[j];
    }
    acc = 1;
    for (std::size_t j = nred; j-- > 0;) {
      r.r_div[j] = acc;
      acc *= r.r_size[j];
    }
    for (std::size_t j = 0; j < nred; ++j) r.suffix = r.suffix && ax[j] == int(rank - nred + j);
    return r;
  }();
};

/// A reduction over sorted, normalized axes; its shape keeps them as size 1.
template <Op O, class C, int... Ax> struct reduce_dims {
  static constexpr auto value = [] {
    dims_t<C::rank> r = C::shape_type::dims;
    for (int a : std::array<int, sizeof...(Ax)>{Ax...}) r[std::size_t(a)] = 1;
    return r;
  }();
};
template <Op O, class C, int... Ax> struct reduce_shape_t {
  using type = shape_from<reduce_dims<O, C, Ax...>>;
};

template <Op O, class C, int... Ax>
struct reduce_node : expression<reduce_node<O, C, Ax...>>,
                     node_info<C::dtype, typename reduce_shape_t<O, C, Ax...>::type> {
  C c{};
  constexpr reduce_node() = default;
  constexpr explicit reduce_node(C c_) : c(std::move(c_)) {}
  static constexpr bool is_symbolic = C::is_symbolic, has_reduce = true, aligned = false;
  using info = reduce_info<typename C::shape_type, Ax...>;
  using value_type = compute_t<C::dtype>;
  struct evaluator_t {
    decltype(std::declval<const C&>().evaluator()) e;
    template <std::size_t D>
    TG_FX_INLINE static constexpr void add_dim(std::int64_t o, std::int64_t& b) {
      constexpr const auto& I = info::value;
      if constexpr (!I.red[D] && I.out_shape[D] != 1) {
        std::int64_t x = o;
        if constexpr (I.out_div[D] != 1) x /= I.out_div[D];
        if constexpr (D > 0) x %= I.out_shape[D];
        b += x * I.in_stride[D];
      }
    }
    template <std::size_t J>
    TG_FX_INLINE static constexpr void add_red(std::int64_t r, std::int64_t& b) {
      constexpr const auto& I = info::value;
      std::int64_t x = r;
      if constexpr (I.r_div[J] != 1) x /= I.r_div[J];
      if constexpr (J > 0) x %= I.r_size[J];
      b += x * I.r_stride[J];
    }
    constexpr value_type coeff(std::size_t o) const {
      constexpr const auto& I = info::value;
      auto base_of = [&]<std::size_t... D>(std::index_sequence<D...>) {
        std::int64_t b = 0;
        (add_dim<D>(std::int64_t(o), b), ...);
        return b;
      };
      const std::int64_t base = base_of(std::make_index_sequence<info::rank>{});
      value_type acc = reduce_identity<O, C::dtype>();
      if constexpr (I.suffix) {
        for (std::int64_t r = 0; r < I.R; ++r)
          acc = accumulate<O, C::dtype>(acc, e.coeff(std::size_t(base + r)));
      } else if constexpr (info::nred == 1) {
        for (std::int64_t r = 0; r < I.R; ++r)
          acc = accumulate<O, C::dtype>(acc, e.coeff(std::size_t(base + r * I.r_stride[0])));
      } else {
        for (std::int64_t r = 0; r < I.R; ++r) {
          auto offset_of = [&]<std::size_t... J>(std::index_sequence<J...>) {
            std::int64_t b = base;
            (add_red<J>(r, b), ...);
            return b;
          };
          std::int64_t off = offset_of(std::make_index_sequence<info::nred>{});
          acc = accumulate<O, C::dtype>(acc, e.coeff(std::size_t(off)));
        }
      }
      return acc;
    }
  };
  constexpr evaluator_t evaluator() const { return {c.evaluator()}; }
  template <class B> constexpr int emit(B& b) const {
    int mark = b.mark();
    int s = c.emit(b);
    Node n;
    n.op = O;
    n.dtype = C::dtype;
    n.src = {s, -1, -1};
    n.shape = sym<typename reduce_node::shape_type>();
    n.axes = {Ax...};
    return b.add(std::move(n), mark);
  }
  constexpr bool reads(const void* q) const { return c.reads(q); }
};

// ---- views
// -----------------------------------------------------------------------------------------
namespace mv {
template <std::size_t N>
constexpr dims_t<N> add3(dims_t<N> a, const dims_t<N>& b, const dims_t<N>& c) {
  for (std::size_t i = 0; i < N; ++i) a[i] += b[i] + c[i];
  return a;
}
template <class S> struct reshape {
  static constexpr bool is_reshape = true;
  template <class In> using out = S;
  static constexpr Movement movement() { return {MoveOp::Reshape, sym<S>(), {}}; }
};
template <std::size_t... P> struct permute {
  static constexpr bool is_reshape = false;
  template <class In> using out = shape<In::dims[P]...>;
  static constexpr Movement movement() { return {MoveOp::Permute, {SInt(std::int64_t(P))...}, {}}; }
};
template <class S> struct expand {
  static constexpr bool is_reshape = false;
  template <class In> using out = S;
  static constexpr Movement movement() { return {MoveOp::Expand, sym<S>(), {}}; }
};
template <class Before, class After> struct pad {
  static constexpr bool is_reshape = false;
  template <class In> struct out_t {
    static constexpr auto value = add3(In::dims, Before::dims, After::dims);
  };
  template <class In> using out = shape_from<out_t<In>>;
  static constexpr Movement movement() { return {MoveOp::Pad, sym<Before>(), sym<After>()}; }
};
template <class Lo, class Hi> struct shrink {
  static constexpr bool is_reshape = false;
  template <class In> struct out_t {
    static constexpr auto value = [] {
      auto r = Hi::dims;
      for (std::size_t i = 0; i < r.size(); ++i) r[i] -= Lo::dims[i];
      return r;
    }();
  };
  template <class In> using out = shape_from<out_t<In>>;
  static constexpr Movement movement() { return {MoveOp::Shrink, sym<Lo>(), sym<Hi>()}; }
};
template <class Flags> struct flip {
  static constexpr bool is_reshape = false;
  template <class In> using out = In;
  static constexpr Movement movement() { return {MoveOp::Flip, sym<Flags>(), {}}; }
};
template <class Steps> struct stride {
  static constexpr bool is_reshape = false;
  template <class In> struct out_t {
    static constexpr auto value = [] {
      auto r = In::dims;
      for (std::size_t i = 0; i < r.size(); ++i)
        if (Steps::dims[i] != 1) r[i] = (r[i] + Steps::dims[i] - 1) / Steps::dims[i];
      return r;
    }();
  };
  template <class In> using out = shape_from<out_t<In>>;
  static constexpr Movement movement() { return {MoveOp::Stride, sym<Steps>(), {}}; }
};
/// Sliding windows (MoveOp::Window): K holds each axis's window size (0: not windowed), SD each
/// axis's step and dilation.
template <class K, class SD> struct window {
  static constexpr bool is_reshape = false;
  template <class In> struct out_t {
    static constexpr std::size_t taps = [] {
      std::size_t n = 0;
      for (auto k : K::dims) n += k != 0;
      return n;
    }();
    static constexpr auto value = [] {
      std::array<std::size_t, In::rank + taps> r{};
      std::size_t t = In::rank;
      for (std::size_t i = 0; i < In::rank; ++i) {
        r[i] = In::dims[i];
        if (const std::size_t k = K::dims[i]) {
          const std::size_t step = SD::dims[2 * i], d = SD::dims[2 * i + 1];
          r[i] = (In::dims[i] - d * (k - 1) - 1) / step + 1;
          r[t++] = k;
        }
      }
      return r;
    }();
  };
  template <class In> using out = shape_from<out_t<In>>;
  static constexpr Movement movement() { return {MoveOp::Window, sym<K>(), sym<SD>()}; }
};
} // namespace mv

template <class S, class... M> struct moved_t : std::type_identity<S> {};
template <class S, class M, class... R> struct moved_t<S, M, R...> {
  using type = typename moved_t<typename M::template out<S>, R...>::type;
};
/// The shape after a list of movement ops.
template <class S, class... M> using moved = typename moved_t<S, M...>::type;

/// One view of a ShapeTracker, flattened into arrays for the host index computation.
struct fview {
  std::size_t ndim = 0;
  idx_array shape{}, strides{}, div{}, mlo{}, mhi{};
  std::int64_t offset = 0;
  bool masked = false;
};
struct ftracker {
  std::array<fview, 4> views{};
  std::size_t n = 0;
  bool identity = false, masked = false;
};

/// The ShapeTracker of a view, computed at compile time by the graph layer's own code.
template <class In, class... M> struct view_map {
  static constexpr ShapeTracker tracker() {
    ShapeTracker t = ShapeTracker::contiguous(sym<In>());
    ((t = t.apply(M::movement())), ...);
    return t;
  }
  static constexpr ftracker value = [] {
    ShapeTracker t = tracker();
    ftracker r{};
    r.n = t.views.size();
    if (r.n > r.views.size()) throw "tg: a view of more than 4 stacked views";
    for (std::size_t k = 0; k < r.n; ++k) {
      const View& v = t.views[k];
      fview& f = r.views[k];
      f.ndim = v.ndim();
      if (f.ndim > kViewRank) throw "tg: a view of more than 16 axes";
      f.offset = v.offset.constant();
      f.masked = v.has_mask();
      r.masked = r.masked || f.masked;
      std::int64_t acc = 1;
      for (std::size_t d = f.ndim; d-- > 0;) {
        f.shape[d] = v.shape[d].constant();
        f.strides[d] = v.strides[d].constant();
        f.div[d] = acc;
        acc *= f.shape[d];
        if (f.masked) {
          f.mlo[d] = v.mask[d].first.constant();
          f.mhi[d] = v.mask[d].second.constant();
        }
      }
    }
    r.identity = r.n == 1 && t.views[0].is_contiguous();
    return r;
  }();
};

template <class Map> struct view_index {
  static constexpr const ftracker& T = Map::value;
  template <std::size_t K, std::size_t D>
  TG_FX_INLINE static constexpr void dim(std::int64_t i, std::int64_t& e, bool& valid) {
    constexpr const fview& V = T.views[K];
    constexpr bool lo = V.masked && V.mlo[D] != 0, hi = V.masked && V.mhi[D] != V.shape[D];
    if constexpr (V.strides[D] != 0 || lo || hi) {
      // (a view with no elements has sizes and divisors 0: it is never read, only instantiated)
      std::int64_t x = i;
      if constexpr (V.div[D] > 1) x /= V.div[D];
      if constexpr (D > 0 && V.shape[D] != 0) x %= V.shape[D];
      if constexpr (V.strides[D] != 0) e += x * V.strides[D];
      if constexpr (lo) valid = valid && x >= V.mlo[D];
      if constexpr (hi) valid = valid && x < V.mhi[D];
    }
  }
  template <std::size_t K>
  TG_FX_INLINE static constexpr std::int64_t step(std::int64_t i, bool& valid) {
    auto through_view = [&]<std::size_t... D>(std::index_sequence<D...>) {
      std::int64_t e = T.views[K].offset;
      (dim<K, D>(i, e, valid), ...);
      return e;
    };
    return through_view(std::make_index_sequence<T.views[K].ndim>{});
  }
  TG_FX_INLINE static constexpr std::int64_t map(std::int64_t i, bool& valid) {
    auto through_views = [&]<std::size_t... K>(std::index_sequence<K...>) {
      std::int64_t e = i;
      ((e = step<T.n - 1 - K>(e, valid)), ...);
      return e;
    };
    return through_views(std::make_index_sequence<T.n>{});
  }
};

template <class E> inline constexpr bool is_view = false;

/// Movement ops over a node that is not itself a view (views of views compose, as
/// Tensor::move does in the run-time front end).
template <class C, class... M>
struct view : expression<view<C, M...>>, node_info<C::dtype, moved<typename C::shape_type, M...>> {
  C c{};
  /// Nonzero: a view of a constant that its builder uses more than once (see ops::share).
  int share = 0;
  /// Nonzero: made at a place of the builders where the run-time front end makes a second, equal
  /// View node (graph.hpp keeps nodes of different sites apart).
  int site = 0;
  constexpr view() = default;
  constexpr explicit view(C c_, int share_ = 0) : c(std::move(c_)), share(share_) {}
  using child_type = C;
  using map = view_map<typename C::shape_type, M...>;
  static constexpr bool reshape_only = (M::is_reshape && ...);
  /// A reduction read through a view that is not a reshape is computed once, into a temporary
  /// (the fuser makes it a kernel of its own for the same reason).
  static constexpr bool materialize = C::has_reduce && !reshape_only;
  static constexpr bool is_symbolic = C::is_symbolic, has_reduce = C::has_reduce && !materialize;
  static constexpr bool aligned = is_constant<C> || (C::aligned && map::value.identity);
  using value_type = compute_t<C::dtype>;
  using inner_t = std::conditional_t<materialize, materialized<C>,
                                     decltype(std::declval<const C&>().evaluator())>;
  struct evaluator_t {
    inner_t in;
    TG_FX_INLINE constexpr value_type coeff(std::size_t i) const {
      if constexpr (map::value.identity)
        return in.coeff(i);
      else if constexpr (is_constant<C> && !map::value.masked)
        return in.coeff(0);
      else {
        bool valid = true;
        std::int64_t e = view_index<map>::map(std::int64_t(i), valid);
        if constexpr (map::value.masked)
          if (!valid) return value_type{};
        return in.coeff(std::size_t(e));
      }
    }
  };
  constexpr evaluator_t evaluator() const {
    if constexpr (materialize)
      return {materialized<C>(c)};
    else
      return {c.evaluator()};
  }
  template <class B> constexpr int emit(B& b) const {
    int mark = b.mark();
    int s = c.emit(b);
    Node n;
    n.op = Op::View;
    n.dtype = C::dtype;
    n.src = {s, -1, -1};
    n.shape = sym<typename view::shape_type>();
    (n.moves.push_back(M::movement()), ...);
    return b.add(std::move(n), mark, share, site);
  }
  constexpr bool reads(const void* q) const { return c.reads(q); }
};
template <class C, class... M> inline constexpr bool is_view<view<C, M...>> = true;

} // namespace tg::fx
