#pragma once
// The operators and free functions of the static front end (a + b, tg::where, tg::cat,
// tg::sum<1>(x), ...): each checks its operands with one static_assert, then calls a builder.
#include <cstdint>
#include <utility>

#include "composite.hpp"

namespace tg {
namespace fx {

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
/// a & b, a | b, a ^ b: bitwise on integers, logical on bool (Tensor's operators).
template <fx::operand A, fx::operand_with<A> B> constexpr auto operator&(A&& a, B&& b) {
  if constexpr (fx::scalar<A>)
    return fx::ops<>::node(std::forward<B>(b)).bitwise_and(a);
  else
    return fx::ops<>::node(std::forward<A>(a)).bitwise_and(std::forward<B>(b));
}
template <fx::operand A, fx::operand_with<A> B> constexpr auto operator|(A&& a, B&& b) {
  if constexpr (fx::scalar<A>)
    return fx::ops<>::node(std::forward<B>(b)).bitwise_or(a);
  else
    return fx::ops<>::node(std::forward<A>(a)).bitwise_or(std::forward<B>(b));
}
template <fx::operand A, fx::operand_with<A> B> constexpr auto operator^(A&& a, B&& b) {
  if constexpr (fx::scalar<A>)
    return fx::ops<>::node(std::forward<B>(b)).bitwise_xor(a);
  else
    return fx::ops<>::node(std::forward<A>(a)).bitwise_xor(std::forward<B>(b));
}
template <fx::expr E> constexpr auto operator~(E&& e) {
  return fx::ops<>::node(std::forward<E>(e)).bitwise_not();
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
template <int Axis, fx::expr E> constexpr auto cumprod(const E& e) {
  return e.template cumprod<Axis>();
}
template <int... Ax, fx::expr E> constexpr auto amax(const E& e) {
  return e.template amax<Ax...>();
}
template <int... Ax, fx::expr E> constexpr auto amin(const E& e) {
  return e.template amin<Ax...>();
}
template <std::int64_t K = 0, fx::expr E> constexpr auto tril(const E& e) {
  return e.template tril<K>();
}
template <std::int64_t K = 0, fx::expr E> constexpr auto triu(const E& e) {
  return e.template triu<K>();
}
/// The outer product of two 1-D expressions: [n] x [m] -> [n, m].
template <fx::expr A, fx::expr B> constexpr auto outer(A&& a, B&& b) {
  auto x = fx::ops<>::node(std::forward<A>(a));
  auto y = fx::ops<>::node(std::forward<B>(b));
  using XN = decltype(x);
  using YN = decltype(y);
  if constexpr (XN::is_error || YN::is_error)
    return fx::ops<>::error();
  else {
    static_assert(XN::rank == 1 && YN::rank == 1, "tg: outer: needs two 1-D tensors");
    if constexpr (XN::rank == 1 && YN::rank == 1)
      return fx::ops<>::outer(x, y);
    else
      return fx::ops<>::error();
  }
}
/// tg::einsum with the equation as a template argument: tg::einsum<"ij,jk->ik">(a, b) (every
/// operand's shape checked against it at compile time).
template <fx::equation Eq, class... E> constexpr auto einsum(E&&... operands) {
  static_assert(sizeof...(E) > 0, "tg: einsum: needs at least one operand");
  static_assert(fx::einsum_fits<Eq, fx::shape_of<fx::node_t<E>>...>,
                "tg: einsum: the equation does not fit the operands (see einsum_plan's error)");
  if constexpr (sizeof...(E) > 0 && fx::einsum_fits<Eq, fx::shape_of<fx::node_t<E>>...>)
    return fx::composites<>::template einsum<Eq>(fx::ops<>::node(std::forward<E>(operands))...);
  else
    return fx::ops<>::error();
}
/// nn::functional::one_hot(index, N): int64 [..., N], 1 at each index; every index in [0, N)
/// (else tg::index_error, a compile error in a constant expression).
template <std::int64_t N, class I>
constexpr auto one_hot(I&& index, std::source_location loc = std::source_location::current()) {
  using IN = fx::node_t<I>;
  static_assert(N >= 0, "tg: one_hot: the number of classes must not be negative");
  static_assert(integral<op::one_hot, fx::elem_or<int, IN>>,
                "tg: one_hot: needs integer class indices");
  if constexpr (N >= 0 && integral<op::one_hot, fx::elem_or<int, IN>> && !IN::is_error)
    return fx::composites<>::template one_hot<N>(fx::ops<>::node(std::forward<I>(index)), loc);
  else
    return fx::ops<>::error();
}
template <fx::expr E, class B> constexpr auto lerp(E&& e, B&& end, auto&& weight) {
  return e.lerp(std::forward<B>(end), std::forward<decltype(weight)>(weight));
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
