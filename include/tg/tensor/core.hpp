#pragma once
// The mechanics every op is built from: node creation, broadcasting, views, reductions, casts,
// and moving data in and out.
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

/// How a GPU reduction is split into two (a reduced axis cut into [k, extent / k]: the first
/// kernel reduces the inner part, the second the k partial results), or k = 0 to keep it whole.
/// gpu_program gives each output of a reduction with fewer than 16,384 outputs a work-group of
/// its own: that runs too few groups when the outputs are fewer still (a full sum was two orders
/// of magnitude slower than PyTorch's, docs/performance.md; on lavapipe it passed llvmpipe's
/// loop limit), and when the last axis is kept, a group's lanes read one column, each lane a
/// different row. So: a reduction over the last axis gets about 4,096 groups of at least 1,024
/// elements each; a reduction over other axes gets at least 262,144 outputs in its first kernel
/// (one thread each, neighbouring threads reading neighbouring columns), each still reducing at
/// least 16 elements (the fastest of the shapes measured for a column sum: docs/performance.md).
/// Where no divisor of a reduced axis comes within 16 times of the k wanted (a prime length),
/// the axis is padded with the reduction's identity to a multiple of a k that does (`pad`
/// elements more): lavapipe refused a sum of a prime 16,777,259 floats in one work-group.
struct ReduceSplit {
  int axis = -1;
  std::int64_t k = 0;
  std::int64_t pad = 0;
};
constexpr ReduceSplit gpu_reduce_split(const std::vector<std::int64_t>& shape,
                                       const std::vector<int>& axes) {
  if (shape.empty() || axes.empty()) return {};
  std::int64_t items = 1, len = 1;
  for (std::size_t i = 0; i < shape.size(); ++i)
    (std::find(axes.begin(), axes.end(), int(i)) == axes.end() ? items : len) *= shape[i];
  // over the last axis, or over the last one longer than 1: each output's elements lie together
  bool last = true;
  for (std::size_t i = std::size_t(axes.back()) + 1; i < shape.size(); ++i)
    last = last && shape[i] == 1;
  const std::int64_t min_part = last ? 1024 : 16;
  if (items == 0 || len < (last ? 65536 : 256) || items >= (last ? 1024 : 16384)) return {};
  const std::int64_t want = last ? (4096 + items - 1) / items : (262144 + items - 1) / items;
  // over the last axis: the largest k up to `want`; else the smallest from `want` up (the
  // largest below it when there is none). Divisors in pairs, up to the square root.
  ReduceSplit best;
  auto consider = [&](int a, std::int64_t k) {
    if (k < 2 || len / k < min_part) return;
    if (last ? (k <= want && k > best.k) : (best.k < want ? k > best.k : k >= want && k < best.k))
      best = {a, k};
  };
  int longest = axes[0];
  for (int a : axes) {
    const std::int64_t d = shape[std::size_t(a)];
    if (d > shape[std::size_t(longest)]) longest = a;
    for (std::int64_t i = 1; i * i <= d; ++i)
      if (d % i == 0) {
        consider(a, i);
        consider(a, d / i);
      }
  }
  if (best.k * 16 >= want) return best;
  // no divisor near `want`: pad the longest reduced axis to a multiple of one that is
  const std::int64_t d = shape[std::size_t(longest)];
  const std::int64_t k = std::min(want, d / min_part);
  if (k < 2 || k <= best.k) return best;
  return {longest, k, (k - d % k) % k};
}

/// Whether reductions on `device` are split for a GPU launch (Target::split_reductions).
TG_API bool splits_reductions(const std::string& device);

// The non-template parts of Tensor::from_data, to_vector and item (which convert the values).
/// The element count of a new tensor's shape (refusing a negative size).
TG_API std::int64_t checked_numel(const Shape& shape, std::source_location loc);
/// The shape of a tensor made from `count` values (1-D by default); they must fill it.
TG_API void fill_shape(Shape& shape, std::size_t count, std::source_location loc);
TG_API void check_item(const Tensor& t, std::source_location loc);
/// A new realized tensor of `shape` on device `dev` ("": the default) holding `host` (its values
/// in dtype t), made at `loc`.
TG_API Tensor upload(std::vector<unsigned char> host, DType t, Shape shape, const std::string& dev,
                     std::source_location loc);
/// The values of `t`, realized, in its dtype and row-major order (Tensor::to_vector converts).
TG_API std::vector<unsigned char> download(const Tensor& t, std::source_location loc);

} // namespace detail

template <Arithmetic E>
Tensor Tensor::from_data(const E* data, Shape shape, TensorOptions o, Loc loc) {
  DType t = o.dtype.value_or(dtype_of<E>);
  std::int64_t n = detail::checked_numel(shape, loc);
  std::vector<unsigned char> host(std::size_t(n) * std::size_t(itemsize(t)));
  visit_dtype(t, [&](auto x) {
    using D = decltype(x);
    D* out = reinterpret_cast<D*>(host.data());
    for (std::int64_t i = 0; i < n; ++i) {
      if constexpr (std::is_same_v<D, half> || std::is_same_v<D, bfloat16_t>)
        out[i] = D(static_cast<float>(data[i]));
      else if constexpr (std::is_same_v<E, half> || std::is_same_v<E, bfloat16_t>)
        out[i] = static_cast<D>(static_cast<float>(data[i]));
      else
        out[i] = static_cast<D>(data[i]);
    }
  });
  return detail::upload(std::move(host), t, std::move(shape), o.device, loc);
}
template <Arithmetic E>
Tensor Tensor::from_data(const std::vector<E>& data, Shape shape, TensorOptions o, Loc loc) {
  detail::fill_shape(shape, data.size(), loc);
  if constexpr (std::is_same_v<E, bool>) { // std::vector<bool> is packed: it has no data()
    std::unique_ptr<bool[]> flat(new bool[data.size()]);
    std::copy(data.begin(), data.end(), flat.get());
    return from_data(static_cast<const bool*>(flat.get()), std::move(shape), o, loc);
  } else {
    return from_data(data.data(), std::move(shape), o, loc);
  }
}

template <Arithmetic E> std::vector<E> Tensor::to_vector(Loc loc) const {
  std::vector<unsigned char> host = detail::download(*this, loc);
  std::int64_t n = numel();
  std::vector<E> out(static_cast<std::size_t>(n));
  visit_dtype(dtype(), [&](auto x) {
    using D = decltype(x);
    const D* in = reinterpret_cast<const D*>(host.data());
    for (std::int64_t i = 0; i < n; ++i) {
      if constexpr (std::is_same_v<D, half> || std::is_same_v<D, bfloat16_t>)
        out[std::size_t(i)] = static_cast<E>(static_cast<float>(in[i]));
      else
        out[std::size_t(i)] = static_cast<E>(in[i]);
    }
  });
  return out;
}

template <Arithmetic E> E Tensor::item(Loc loc) const {
  detail::check_item(*this, loc);
  return to_vector<E>(loc)[0];
}

/// Realizes several tensors with one schedule (as Tensor::realize).
TG_API void realize(std::vector<Tensor> ts);

} // namespace tg
