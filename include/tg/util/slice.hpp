#pragma once
// Python's slice semantics for one axis, shared by both front ends (Tensor::slice and tg::fixed's
// slice plan) so they cut the same elements.
#include <cstdint>
#include <optional>

namespace tg {

/// What x[start:stop:step] keeps of an axis of size n: the range [lo, hi) to shrink the axis to,
/// then a flip when step < 0, then a stride of |step|; `count` elements remain.
struct SliceBounds {
  std::int64_t lo = 0, hi = 0, count = 0;
};

/// Python's start/stop/step normalization: negative bounds count from the end, out-of-range bounds
/// clamp, a missing bound is the axis's end in the step's direction. step must be nonzero.
constexpr SliceBounds slice_bounds(std::int64_t n, std::optional<std::int64_t> start,
                                   std::optional<std::int64_t> stop, std::int64_t step) {
  auto norm = [n](std::optional<std::int64_t> v, std::int64_t dflt, std::int64_t lo,
                  std::int64_t hi) {
    if (!v) return dflt;
    const std::int64_t x = *v < 0 ? *v + n : *v;
    return x < lo ? lo : x > hi ? hi : x;
  };
  SliceBounds r;
  if (step > 0) {
    const std::int64_t b = norm(start, 0, 0, n), e = norm(stop, n, 0, n);
    r.count = e > b ? (e - b + step - 1) / step : 0;
    r.lo = b;
    r.hi = b + (r.count ? (r.count - 1) * step + 1 : 0);
  } else {
    // the elements b, b+step, ... downwards: [b - (count-1)*|step|, b], flipped afterwards
    const std::int64_t b = norm(start, n - 1, -1, n - 1), e = norm(stop, -1, -1, n - 1);
    r.count = b > e ? (b - e - step - 1) / (-step) : 0;
    r.lo = r.count ? b - (r.count - 1) * (-step) : 0;
    r.hi = r.count ? b + 1 : 0;
  }
  return r;
}

} // namespace tg
