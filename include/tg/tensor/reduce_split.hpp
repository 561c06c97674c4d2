#pragma once
// How Tensor's reductions are cut in two for a GPU (tg/impl/tensor/core.hpp uses it).
#include <algorithm>
#include <cstdint>
#include <vector>

namespace tg::detail {

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

} // namespace tg::detail
