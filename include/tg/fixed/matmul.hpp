#pragma once
// The matmul node of the static front end: the ReduceSum of Tensor::matmul, which on the host runs
// as a loop nest of its own (gemm), and evaluate_into, which lets a product be written in place.
#include <array>
#include <cstddef>
#include <memory>
#include <type_traits>
#include <utility>

#include "builders.hpp"

namespace tg {
namespace fx {

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

} // namespace fx
} // namespace tg
