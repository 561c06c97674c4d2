#pragma once
// Views make movement ops zero-copy: a View maps an index in its shape to a flat offset
// (offset + sum(idx * stride)) that is valid inside `mask` (padding reads as zero).
// A ShapeTracker is a stack of views for reshapes that one view cannot express: the flat
// offset of views[k+1] is unravelled in the shape of views[k].
#include "../errors.hpp"
#include "movement.hpp"

namespace tg {

/// Thrown by the graph layer on arguments the front end should have rejected.
struct graph_error : error {
  using error::error;
};

struct View {
  Shape shape, strides;
  SInt offset = 0;
  std::vector<std::pair<SInt, SInt>> mask; // empty: every index valid

  static constexpr View contiguous(const Shape& s) { return View{s, contiguous_strides(s), 0, {}}; }
  constexpr std::size_t ndim() const { return shape.size(); }
  constexpr bool has_mask() const { return !mask.empty(); }
  /// Whether some index of axis d is masked off.
  constexpr bool masked(std::size_t d) const {
    return has_mask() && !(mask[d].first == 0 && mask[d].second == shape[d]);
  }
  constexpr bool is_contiguous() const {
    return offset == 0 && mask.empty() && strides == contiguous_strides(shape);
  }

  constexpr View permute(const std::vector<int>& order) const {
    View v;
    for (int o : order) {
      v.shape.push_back(shape[std::size_t(o)]);
      v.strides.push_back(strides[std::size_t(o)]);
      if (has_mask()) v.mask.push_back(mask[std::size_t(o)]);
    }
    v.offset = offset;
    return v;
  }
  constexpr View expand(const Shape& to) const {
    View v = *this;
    for (std::size_t i = 0; i < to.size(); ++i) {
      if (shape[i] == to[i]) continue;
      v.shape[i] = to[i];
      v.strides[i] = 0;
      if (has_mask() && mask[i].second == 1 && mask[i].first == 0) v.mask[i] = {0, to[i]};
    }
    return v;
  }
  constexpr View pad(const std::vector<SInt>& before, const std::vector<SInt>& after) const {
    View v = *this;
    bool any = false;
    for (std::size_t i = 0; i < shape.size(); ++i)
      any = any || !(before[i] == 0) || !(after[i] == 0);
    if (!any) return v;
    if (!has_mask())
      for (const SInt& s : shape) v.mask.push_back({0, s});
    for (std::size_t i = 0; i < shape.size(); ++i) {
      v.offset = v.offset - before[i] * strides[i];
      v.mask[i] = {v.mask[i].first + before[i], v.mask[i].second + before[i]};
      v.shape[i] = shape[i] + before[i] + after[i];
    }
    return v;
  }
  constexpr View shrink(const std::vector<SInt>& lo, const std::vector<SInt>& hi) const {
    View v = *this;
    for (std::size_t i = 0; i < shape.size(); ++i) {
      v.offset = v.offset + lo[i] * strides[i];
      v.shape[i] = hi[i] - lo[i];
      if (has_mask()) {
        SInt a = mask[i].first - lo[i], b = mask[i].second - lo[i];
        v.mask[i] = {clamp(a, v.shape[i]), clamp(b, v.shape[i])};
      }
    }
    v.drop_full_mask();
    return v;
  }
  constexpr View flip(const std::vector<std::uint8_t>& axes) const { // not vector<bool>: constexpr
    View v = *this;
    for (std::size_t i = 0; i < shape.size(); ++i) {
      if (!axes[i]) continue;
      v.offset = v.offset + (shape[i] - 1) * strides[i];
      v.strides[i] = -strides[i];
      if (has_mask()) v.mask[i] = {shape[i] - mask[i].second, shape[i] - mask[i].first};
    }
    return v;
  }
  /// Positive steps: every step-th element.
  constexpr View stride(const std::vector<SInt>& steps) const {
    View v = *this;
    for (std::size_t i = 0; i < shape.size(); ++i) {
      if (steps[i] == 1) continue;
      std::int64_t s = shape[i].constant(), k = steps[i].constant();
      v.shape[i] = (s + k - 1) / k;
      v.strides[i] = strides[i] * SInt(k);
      if (has_mask())
        v.mask[i] = {(mask[i].first.constant() + k - 1) / k,
                     (mask[i].second.constant() + k - 1) / k};
    }
    v.drop_full_mask();
    return v;
  }
  /// Sliding windows (MoveOp::Window) over axes no mask covers: a window's entry steps by
  /// step * stride along its axis, and its taps by dilation * stride along the appended axis.
  constexpr View window(const std::vector<SInt>& k, const std::vector<SInt>& sd) const {
    View v = *this;
    for (std::size_t i = 0; i < shape.size(); ++i) {
      if (k[i] == 0) continue;
      const std::int64_t step = sd[2 * i].constant(), d = sd[2 * i + 1].constant();
      v.shape[i] = (shape[i].constant() - d * (k[i].constant() - 1) - 1) / step + 1;
      v.strides[i] = strides[i] * SInt(step);
      v.shape.push_back(k[i]);
      v.strides.push_back(strides[i] * SInt(d));
      if (has_mask()) v.mask.push_back({0, k[i]});
    }
    return v;
  }
  /// A reshape expressed in this single view, if one exists.
  constexpr bool reshape(const Shape& to, View& out) const {
    if (shape == to) {
      out = *this;
      return true;
    }
    if (!has_mask() && strides == contiguous_strides(shape)) {
      out = View{to, contiguous_strides(to), offset, {}};
      return true;
    }
    // Only inserting or removing 1-sized axes keeps a masked view simple.
    std::vector<std::size_t> old_big, new_big;
    for (std::size_t i = 0; i < shape.size(); ++i)
      if (!(shape[i] == 1)) old_big.push_back(i);
    for (std::size_t i = 0; i < to.size(); ++i)
      if (!(to[i] == 1)) new_big.push_back(i);
    bool same_big = old_big.size() == new_big.size();
    for (std::size_t k = 0; same_big && k < old_big.size(); ++k)
      same_big = shape[old_big[k]] == to[new_big[k]];
    if (same_big) {
      // 1-sized axes must be fully valid to be dropped.
      for (std::size_t i = 0; i < shape.size(); ++i)
        if (has_mask() && shape[i] == 1 && !(mask[i].first == 0 && mask[i].second == 1))
          return false;
      out = View{to, Shape(to.size(), SInt(0)), offset, {}};
      if (has_mask()) out.mask.assign(to.size(), {0, 1});
      for (std::size_t k = 0; k < old_big.size(); ++k) {
        out.strides[new_big[k]] = strides[old_big[k]];
        if (has_mask()) out.mask[new_big[k]] = mask[old_big[k]];
      }
      return true;
    }
    // Merge / split groups of axes whose strides chain (numpy's no-copy reshape). A masked axis
    // must keep its size (its mask moves with it): a padded [N, C, H, W] read as [N * C, H, W].
    for (const SInt& d : shape)
      if (!d.is_const()) return false;
    for (const SInt& d : to)
      if (!d.is_const()) return false;
    std::vector<std::int64_t> os, ost, ns;
    std::vector<std::size_t> oax; // the old axis of each entry of os
    for (std::size_t i = 0; i < shape.size(); ++i)
      if (!(shape[i] == 1)) {
        os.push_back(shape[i].constant());
        ost.push_back(strides[i].constant());
        oax.push_back(i);
      } else if (masked(i)) {
        return false;
      }
    std::vector<std::pair<SInt, SInt>> nmask;
    if (has_mask())
      for (const SInt& d : to) nmask.push_back({SInt(0), d});
    for (const SInt& d : to) ns.push_back(d.constant());
    std::vector<std::int64_t> nst(ns.size(), 0);
    std::size_t i = 0, j = 0;
    while (i < os.size() && j < ns.size()) {
      if (ns[j] == 1) {
        ++j;
        continue;
      }
      std::int64_t np = ns[j], op = os[i];
      std::size_t oi = i + 1, nj = j + 1;
      while (np != op) {
        if (np < op) {
          if (nj >= ns.size()) return false;
          np *= ns[nj++];
        } else {
          if (oi >= os.size()) return false;
          op *= os[oi++];
        }
      }
      for (std::size_t k = i; k + 1 < oi; ++k)
        if (ost[k] != ost[k + 1] * os[k + 1]) return false;
      for (std::size_t k = i; k < oi; ++k)
        if (masked(oax[k])) {
          if (oi != i + 1 || nj != j + 1) return false;
          nmask[j] = mask[oax[k]];
        }
      std::int64_t st = ost[oi - 1];
      for (std::size_t k = nj; k-- > j;) {
        nst[k] = ns[k] == 1 ? 0 : st;
        st *= ns[k];
      }
      i = oi;
      j = nj;
    }
    out = View{to, {}, offset, std::move(nmask)};
    for (std::int64_t s : nst) out.strides.push_back(s);
    out.drop_full_mask();
    return true;
  }

private:
  static constexpr SInt clamp(const SInt& x, const SInt& hi) {
    if (x.is_const() && hi.is_const())
      return std::max<std::int64_t>(0, std::min(x.constant(), hi.constant()));
    if (x == 0 || x == hi) return x;
    throw graph_error("a masked view cannot be shrunk on a symbolic axis");
  }
  constexpr void drop_full_mask() {
    if (!has_mask()) return;
    for (std::size_t i = 0; i < shape.size(); ++i)
      if (!(mask[i].first == 0 && mask[i].second == shape[i])) return;
    mask.clear();
  }
};

struct ShapeTracker {
  std::vector<View> views;

  static constexpr ShapeTracker contiguous(const Shape& s) { return {{View::contiguous(s)}}; }
  constexpr const Shape& shape() const { return views.back().shape; }
  constexpr bool is_contiguous() const { return views.size() == 1 && views[0].is_contiguous(); }

  constexpr ShapeTracker apply(const Movement& m) const {
    ShapeTracker t = *this;
    View& v = t.views.back();
    switch (m.op) {
    case MoveOp::Reshape: {
      View r;
      if (v.reshape(m.a, r))
        v = r;
      else
        t.views.push_back(View::contiguous(m.a));
      break;
    }
    case MoveOp::Permute: {
      std::vector<int> order;
      for (const SInt& o : m.a) order.push_back(int(o.constant()));
      v = v.permute(order);
      break;
    }
    case MoveOp::Expand:
      v = v.expand(m.a);
      break;
    case MoveOp::Pad:
      v = v.pad(m.a, m.b);
      break;
    case MoveOp::Shrink:
      v = v.shrink(m.a, m.b);
      break;
    case MoveOp::Flip: {
      std::vector<std::uint8_t> axes;
      for (const SInt& o : m.a) axes.push_back(o.constant() != 0);
      v = v.flip(axes);
      break;
    }
    case MoveOp::Stride:
      v = v.stride(m.a);
      break;
    case MoveOp::Window: {
      // a window over a masked axis (padding) needs the mask of a sum of two indices: the windows
      // then read the view's elements in order, through a view of their own
      bool masked = false;
      for (std::size_t i = 0; i < m.a.size(); ++i)
        masked = masked || (!(m.a[i] == 0) && v.masked(i));
      if (masked) {
        View w = View::contiguous(v.shape).window(m.a, m.b);
        t.views.push_back(std::move(w));
      } else {
        v = v.window(m.a, m.b);
      }
      break;
    }
    }
    t.simplify();
    return t;
  }
  constexpr ShapeTracker apply(const std::vector<Movement>& ms) const {
    ShapeTracker t = *this;
    for (const Movement& m : ms) t = t.apply(m);
    return t;
  }
  /// Drops views that map flat offsets to themselves.
  constexpr void simplify() {
    for (std::size_t k = views.size(); k-- > 1;) {
      // a contiguous view below the top is the identity on flat offsets
      if (k < views.size() - 1 && views[k].is_contiguous())
        views.erase(views.begin() + std::ptrdiff_t(k));
    }
    while (views.size() > 1) {
      View r;
      if (views.back().is_contiguous() && views[views.size() - 2].reshape(views.back().shape, r)) {
        views.pop_back();
        views.back() = r;
      } else
        break;
    }
    if (views.size() > 1 && views[0].is_contiguous()) views.erase(views.begin());
  }
};

} // namespace tg
