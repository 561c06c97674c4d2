#pragma once
// The mechanics every op is built from: node creation, broadcasting, views, reductions, casts,
// and moving data in and out.
#include <cstring>

#include "class.hpp"

namespace tg {

namespace detail {
/// Whether a call site is in the user's code rather than in tg's headers (where composite ops
/// call other ops): tg's root is the directory of this header's `tg/`.
TG_API bool user_site(const std::source_location& loc);
/// Marks a constant made from a C++ number at the user's call `loc` of `op` while tg::jit records
/// a call (it names the constant when that number changes between calls; nothing is done
/// outside a jitted function).
inline const Tensor& made_at(const Tensor& c, const char* op, const std::source_location& loc) {
  if (!active_trace()) return c;
  LazyNode& n = *c.lazy();
  if (n.op == Op::Const && !n.made_by && user_site(loc)) {
    n.made_by = op;
    n.made_at = loc;
  }
  return c;
}
} // namespace detail

namespace detail {

/// Whether reductions on `device` are split for a GPU launch (Target::split_reductions).
TG_API bool splits_reductions(const std::string& device);

// The non-template parts of Tensor::from_data, to_vector and item: the values cross as bytes of
// a dtype and are converted in the library.
/// The shape of a tensor made from `count` values (1-D by default); they must fill it.
TG_API void fill_shape(Shape& shape, std::size_t count, std::source_location loc);
TG_API void check_item(const Tensor& t, std::source_location loc);
/// A new realized tensor of `shape` on o.device holding the numel(shape) values at `data` (of
/// dtype `from`) converted to o.dtype (default: `from`), made at `loc`.
TG_API Tensor upload(const void* data, DType from, Shape shape, const TensorOptions& o,
                     std::source_location loc);
/// n values at `in` (dtype `from`) converted to dtype `to` at `out`, as static_cast does (half
/// and bfloat16 through float).
TG_API void convert_values(const void* in, DType from, void* out, DType to, std::int64_t n);
/// The values of `t`, realized, in row-major order, converted to dtype `to`.
TG_API std::vector<unsigned char> download(const Tensor& t, DType to, std::source_location loc);

/// Whether some dtype stores E's values as they are.
template <class E, class = void> inline constexpr bool has_dtype = false;
template <class E> inline constexpr bool has_dtype<E, decltype(void(dtype_of_t<E>::value))> = true;
/// The type an element type's values cross as: itself, or a 64-bit type for the arithmetic types
/// no dtype matches (char, wchar_t, long double).
template <class E>
using transfer_t = std::conditional_t<
    has_dtype<E>, E,
    std::conditional_t<std::is_floating_point_v<E>, double,
                       std::conditional_t<std::is_signed_v<E>, std::int64_t, std::uint64_t>>>;

} // namespace detail

template <Arithmetic E>
Tensor Tensor::from_data(const E* data, Shape shape, TensorOptions o, Loc loc) {
  static_assert(detail::has_dtype<E>,
                "tg::Tensor::from_data: no tg dtype has this element type; use bool, a "
                "fixed-width integer, float, double, tg::half or tg::bfloat16_t");
  return detail::upload(data, dtype_of<detail::transfer_t<E>>, std::move(shape), o, loc);
}
template <Arithmetic E>
Tensor Tensor::from_data(const std::vector<E>& data, Shape shape, TensorOptions o, Loc loc) {
  detail::fill_shape(shape, data.size(), loc);
  if constexpr (std::is_same_v<E, bool>) { // std::vector<bool> is packed: it has no data()
    std::vector<unsigned char> flat(data.begin(), data.end());
    return detail::upload(flat.data(), dtype_of<bool>, std::move(shape), o, loc);
  } else {
    return from_data(data.data(), std::move(shape), o, loc);
  }
}

template <Arithmetic E> std::vector<E> Tensor::to_vector(Loc loc) const {
  using H = detail::transfer_t<E>;
  std::vector<unsigned char> host = detail::download(*this, dtype_of<H>, loc);
  if constexpr (std::is_same_v<E, bool>) { // std::vector<bool> is packed: it has no data()
    return std::vector<E>(host.begin(), host.end());
  } else {
    std::vector<H> values(host.size() / sizeof(H));
    std::memcpy(values.data(), host.data(), host.size());
    if constexpr (std::is_same_v<H, E>)
      return values;
    else
      return std::vector<E>(values.begin(), values.end());
  }
}

template <Arithmetic E> E Tensor::item(Loc loc) const {
  detail::check_item(*this, loc);
  return to_vector<E>(loc)[0];
}

/// Realizes several tensors with one schedule (as Tensor::realize).
TG_API void realize(std::vector<Tensor> ts);

} // namespace tg
