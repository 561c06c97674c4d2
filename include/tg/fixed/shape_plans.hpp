#pragma once
// The static front end's compile-time shape computations: for each op that reshapes, pads, slices,
// repeats or splits, the shapes its primitive steps go through, computed once as holder types (see
// shape_from) for the builders (builders.hpp).
#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>

#include "../util/slice.hpp"
#include "tensor.hpp"

namespace tg {
namespace fx {

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
/// Tensor::unfold's window (MoveOp::Window) over axis D of a rank-R shape: each axis's window
/// size (0: not windowed), and each axis's step and dilation.
template <std::size_t R, std::size_t D, std::int64_t Size, std::int64_t Step> struct unfold_plan {
  struct k_h {
    static constexpr auto value = [] {
      dims_t<R> r{};
      r[D] = std::size_t(Size);
      return r;
    }();
  };
  struct sd_h {
    static constexpr auto value = [] {
      dims_t<2 * R> r{};
      for (auto& v : r) v = 1;
      r[2 * D] = std::size_t(Step);
      return r;
    }();
  };
};
/// Tensor::slice's plan (Python's semantics, clamped: slice_bounds): shrink, then flip (negative
/// step), then stride.
template <class S, std::size_t D, std::int64_t Start, std::int64_t Stop, std::int64_t Step>
struct slice_plan {
  struct plan_t {
    dims_t<S::rank> lo{}, hi{}, flags{}, steps{};
    bool shrink = false, flip = false, stride = false;
  };
  static constexpr plan_t value = [] {
    plan_t r{};
    const std::int64_t n = std::int64_t(S::dims[D]);
    auto bound = [](std::int64_t v) {
      return v == none ? std::nullopt : std::optional<std::int64_t>(v);
    };
    const SliceBounds b = slice_bounds(n, bound(Start), bound(Stop), Step);
    r.hi = S::dims;
    r.lo[D] = std::size_t(b.lo);
    r.hi[D] = std::size_t(b.hi);
    r.shrink = !(b.lo == 0 && b.hi == n);
    r.flip = Step < 0;
    r.flags[D] = 1;
    std::int64_t k = Step < 0 ? -Step : Step;
    for (auto& st : r.steps) st = 1;
    r.steps[D] = std::size_t(k);
    r.stride = k != 1 && b.count > 0;
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

} // namespace fx
} // namespace tg
