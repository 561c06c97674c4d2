#pragma once
// tg::fixed<T, dims...>: a tensor whose shape is part of its type. Value semantics; the elements
// live inline up to tg::fixed_inline_bytes (4 KiB by default, TG_FIXED_INLINE_BYTES to change) and
// on the heap past it. Assigning an expression evaluates it in one fused loop.
//
//   tg::fixed<float, 2, 3> a{{1, 2, 3}, {4, 5, 6}};
//   tg::fixed<float, 3> b{1, 2, 3};
//   tg::fixed<float, 2, 3> c = (a * b + 1.0f).relu();   // shapes checked at compile time
#include <algorithm>
#include <memory>
#include <new>
#include <stdexcept>
#include <string>

#include "nodes.hpp"

#ifndef TG_FIXED_INLINE_BYTES
#define TG_FIXED_INLINE_BYTES 4096
#endif

namespace tg {

/// Tensors up to this many bytes keep their elements inline (no allocation).
inline constexpr std::size_t fixed_inline_bytes = TG_FIXED_INLINE_BYTES;

namespace fx {

template <class T, std::size_t N, bool Inline = (N * sizeof(T) <= fixed_inline_bytes)>
struct storage {
  static constexpr std::size_t alignment = N * sizeof(T) >= 32 ? 32 : alignof(T);
  alignas(alignment) T v[N == 0 ? 1 : N]{};
  constexpr T* data() { return v; }
  constexpr const T* data() const { return v; }
  static constexpr bool is_inline = true;
};
template <class T, std::size_t N> struct storage<T, N, false> {
  static constexpr bool is_inline = false;
  static constexpr std::size_t alignment = 64;
  static constexpr std::align_val_t align{64};
  T* p = nullptr;
  static constexpr T* allocate() {
    if (std::is_constant_evaluated()) return new T[N]{};
    T* q = static_cast<T*>(::operator new(N * sizeof(T), align));
    std::uninitialized_value_construct_n(q, N);
    return q;
  }
  static constexpr void release(T* q) {
    if (!q) return;
    if (std::is_constant_evaluated())
      delete[] q;
    else
      ::operator delete(q, align);
  }
  constexpr storage() : p(allocate()) {}
  constexpr storage(const storage& o) : p(allocate()) { std::copy(o.p, o.p + N, p); }
  /// The moved-from tensor holds no elements: it can only be assigned to or destroyed.
  constexpr storage(storage&& o) noexcept : p(o.p) { o.p = nullptr; }
  constexpr storage& operator=(const storage& o) {
    if (this != &o) {
      if (!p) p = allocate();
      std::copy(o.p, o.p + N, p);
    }
    return *this;
  }
  constexpr storage& operator=(storage&& o) noexcept {
    std::swap(p, o.p);
    return *this;
  }
  constexpr ~storage() { release(p); }
  constexpr T* data() { return p; }
  constexpr const T* data() const { return p; }
};

} // namespace fx

template <class T, std::size_t... D> class fixed : public expression<fixed<T, D...>> {
  static_assert(fx::element<T>, "tg: fixed: the element type has no dtype (bool, int8..int64, "
                                "uint8..uint64, tg::half, tg::bfloat16_t, float, double)");
  static_assert(sizeof...(D) <= fixed_max_rank, "tg: fixed: at most 8 axes");

public:
  using value_type = T;
  using shape_type = shape<D...>;
  static constexpr DType dtype = dtype_of<T>;
  static constexpr std::size_t rank = sizeof...(D);
  static constexpr std::size_t size = (std::size_t(1) * ... * D);
  static constexpr std::array<std::size_t, rank> dims{D...};
  static constexpr bool is_error = false, is_symbolic = false;

  /// Zeros.
  constexpr fixed() = default;
  constexpr fixed(const fixed&) = default;
  constexpr fixed(fixed&&) noexcept = default;
  constexpr fixed& operator=(const fixed&) = default;
  constexpr fixed& operator=(fixed&&) noexcept = default;

  /// A 0-d tensor, or the elements of a 1-D one: fixed<float, 3>{1, 2, 3}.
  template <fx::scalar... S>
    requires(sizeof...(S) >= 1 && (rank <= 1))
  constexpr fixed(S... v) {
    if constexpr (rank == 0) {
      static_assert(sizeof...(S) == 1, "tg: init: a 0-d tensor takes one value");
    } else {
      static_assert(initializer_fits<shape_type, rows<sizeof...(S)>>,
                    "tg: init: the number of values does not match the shape");
    }
    if constexpr (sizeof...(S) <= size) {
      std::size_t i = 0;
      ((data()[i++] = static_cast<T>(v)), ...);
    }
  }
  /// Nested lists, one per row: fixed<float, 2, 3>{{1, 2, 3}, {4, 5, 6}}.
  template <std::size_t... N>
    requires(rank == 2)
  constexpr fixed(const T (&... r)[N]) {
    static_assert(initializer_fits<shape_type, rows<N...>>,
                  "tg: init: the nested lists do not match the shape");
    if constexpr (initializer_fits<shape_type, rows<N...>>) {
      std::size_t i = 0;
      ((void)std::copy(r, r + N, data() + (i++) * N), ...);
    }
  }
  template <std::size_t... A, std::size_t... B>
    requires(rank == 3)
  constexpr fixed(const T (&... r)[A][B]) {
    static_assert(initializer_fits<shape_type, rows<(A * B)...>> && ((B == dims[rank - 1]) && ...),
                  "tg: init: the nested lists do not match the shape");
    if constexpr (initializer_fits<shape_type, rows<(A * B)...>> &&
                  ((B == dims[rank - 1]) && ...)) {
      std::size_t i = 0;
      ((void)std::copy(&r[0][0], &r[0][0] + A * B, data() + (i++) * A * B), ...);
    }
  }
  template <std::size_t... A, std::size_t... B, std::size_t... C>
    requires(rank == 4)
  constexpr fixed(const T (&... r)[A][B][C]) {
    constexpr bool ok = initializer_fits<shape_type, rows<(A * B * C)...>> &&
                        ((B == dims[2] && C == dims[3]) && ...);
    static_assert(ok, "tg: init: the nested lists do not match the shape");
    if constexpr (ok) {
      std::size_t i = 0;
      ((void)std::copy(&r[0][0][0], &r[0][0][0] + A * B * C, data() + (i++) * A * B * C), ...);
    }
  }

  /// A run-time tensor's values (bridge.hpp; the shape and dtype are checked at run time).
  template <class R>
    requires(fx::bridge<R>::enabled)
  explicit fixed(const R& r) {
    fx::bridge<R>::copy_to(r, data(), dtype, std::array<std::int64_t, rank>{std::int64_t(D)...});
  }
  /// The value of an expression of this shape and element type, computed in one fused loop.
  template <fx::expr E>
    requires(!std::is_same_v<std::remove_cvref_t<E>, fixed>)
  constexpr fixed(E&& e) {
    using NE = fx::node_t<E>;
    static_assert(same_shape<op::assign, shape_type, fx::shape_of<NE>>,
                  "tg: assign: the expression has another shape");
    static_assert(same_dtype<op::assign, T, fx::elem_or<T, NE>>,
                  "tg: assign: the expression has another element type (use .cast<T>())");
    static_assert(has_data<op::assign, NE>, "tg: assign: a tg::input placeholder has no data");
    assign_(std::forward<E>(e));
  }
  template <fx::expr E>
    requires(!std::is_same_v<std::remove_cvref_t<E>, fixed>)
  constexpr fixed& operator=(E&& e) {
    using NE = fx::node_t<E>;
    static_assert(same_shape<op::assign, shape_type, fx::shape_of<NE>>,
                  "tg: assign: the expression has another shape");
    static_assert(same_dtype<op::assign, T, fx::elem_or<T, NE>>,
                  "tg: assign: the expression has another element type (use .cast<T>())");
    static_assert(has_data<op::assign, NE>, "tg: assign: a tg::input placeholder has no data");
    assign_(std::forward<E>(e));
    return *this;
  }

  static constexpr fixed full(T v) {
    fixed r;
    r.fill(v);
    return r;
  }
  static constexpr fixed zeros() { return fixed(); }
  static constexpr fixed ones() { return full(T(1)); }
  /// Copies `size` elements (row-major) from p.
  template <class U> static constexpr fixed from(const U* p) {
    fixed r;
    for (std::size_t i = 0; i < size; ++i) r.data()[i] = static_cast<T>(p[i]);
    return r;
  }
  constexpr void fill(T v) { std::fill(data(), data() + size, v); }

  // ---- element access ------------------------------------------------------------------------
  constexpr T* data() { return s_.data(); }
  constexpr const T* data() const { return s_.data(); }
  constexpr T* begin() { return data(); }
  constexpr T* end() { return data() + size; }
  constexpr const T* begin() const { return data(); }
  constexpr const T* end() const { return data() + size; }
  /// Element i of the row-major order.
  constexpr T& operator[](std::size_t i) { return data()[i]; }
  constexpr const T& operator[](std::size_t i) const { return data()[i]; }
  /// a(i, j): one index per axis.
  template <std::integral... I> constexpr T& operator()(I... idx) {
    static_assert(index_count_matches<shape_type, rows<sizeof...(I)>>,
                  "tg: index: one index per axis is needed");
    return data()[flat_(idx...)];
  }
  template <std::integral... I> constexpr const T& operator()(I... idx) const {
    static_assert(index_count_matches<shape_type, rows<sizeof...(I)>>,
                  "tg: index: one index per axis is needed");
    return data()[flat_(idx...)];
  }
  /// Bounds-checked a(i, j) (negative indices count from the end).
  template <std::integral... I> constexpr const T& at(I... idx) const {
    static_assert(index_count_matches<shape_type, rows<sizeof...(I)>>,
                  "tg: index: one index per axis is needed");
    return data()[checked_(idx...)];
  }
  template <std::integral... I> constexpr T& at(I... idx) {
    static_assert(index_count_matches<shape_type, rows<sizeof...(I)>>,
                  "tg: index: one index per axis is needed");
    return data()[checked_(idx...)];
  }
  /// Whether the elements are inline (no allocation), and their alignment in bytes.
  static constexpr bool is_inline = fx::storage<T, size>::is_inline;
  static constexpr std::size_t alignment = fx::storage<T, size>::alignment;

private:
  template <class... I> constexpr std::size_t flat_(I... idx) const {
    std::size_t f = 0, k = 0;
    ((f = f * dims[k++] + std::size_t(idx)), ...);
    return f;
  }
  template <class... I> constexpr std::size_t checked_(I... idx) const {
    std::size_t f = 0, k = 0;
    auto one = [&](std::int64_t i) {
      std::int64_t n = std::int64_t(dims[k]);
      if (i < -n || i >= n)
        throw std::out_of_range("tg.fixed.at: index " + std::to_string(i) +
                                " is out of range for axis " + std::to_string(k) + " of size " +
                                std::to_string(n));
      f = f * dims[k++] + std::size_t(i < 0 ? i + n : i);
    };
    (one(std::int64_t(idx)), ...);
    return f;
  }
  template <class E> constexpr void assign_(E&& e) {
    using NE = fx::node_t<E>;
    if constexpr (!NE::is_error) {
      if constexpr (same_shape<op::assign, shape_type, fx::shape_of<NE>> &&
                    same_dtype<op::assign, T, fx::elem_of<NE>> && has_data<op::assign, NE>) {
        decltype(auto) n = fx::ops<NE>::node(std::forward<E>(e));
        // An expression that reads this tensor at other positions than it writes is evaluated
        // into a temporary first.
        if constexpr (!NE::aligned) {
          if (n.reads(this)) {
            fixed tmp;
            fx::evaluate_into(tmp.data(), n);
            *this = std::move(tmp);
            return;
          }
        }
        fx::evaluate_into<alignment>(data(), n);
      }
    }
  }

  fx::storage<T, size> s_;
};

/// A named input of a static expression with no data: for graphs and kernel sources computed at
/// compile time. Two inputs with the same Id are the same buffer.
template <int Id, class T, std::size_t... D>
struct input : expression<input<Id, T, D...>>, fx::node_info<dtype_of<T>, shape<D...>> {
  static constexpr bool is_symbolic = true, has_reduce = false, aligned = true;
  struct evaluator_t {
    constexpr fx::compute_t<dtype_of<T>> coeff(std::size_t) const { return {}; }
  };
  constexpr evaluator_t evaluator() const { return {}; }
  template <class B> constexpr int emit(B& b) const {
    return b.buffer(nullptr, Id, dtype_of<T>, fx::sym<shape<D...>>(), nullptr);
  }
  constexpr bool reads(const void*) const { return false; }
};

} // namespace tg
