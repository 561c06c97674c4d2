#pragma once
// Movement ops (reshape, permute, expand, pad, shrink, flip, stride, window) as the run-time front
// end records them on lazy nodes and the Graph carries them on View nodes; graph/view.hpp turns
// them into strided views.
#include "sint.hpp"

namespace tg {

enum class MoveOp : std::uint8_t { Reshape, Permute, Expand, Pad, Shrink, Flip, Stride, Window };

constexpr const char* move_name(MoveOp m) {
  constexpr const char* names[] = {"reshape", "permute", "expand", "pad",
                                   "shrink",  "flip",    "stride", "window"};
  return names[static_cast<int>(m)];
}

/// One movement op and its arguments (per axis; `b` is used by pad (after) and shrink (end)).
/// Window (sliding windows, PyTorch's unfold): `a` holds each axis's window size (0: the axis is
/// not windowed) and `b` each axis's step and dilation (b[2i], b[2i + 1]); windowed axis i keeps
/// its place with one entry per window, and an axis of the window's taps is appended for each.
struct Movement {
  MoveOp op;
  std::vector<SInt> a, b;
  constexpr bool operator==(const Movement&) const = default;
};

/// The shape after a movement op (the op's arguments are assumed checked).
constexpr Shape moved_shape(const Shape& s, const Movement& m) {
  switch (m.op) {
  case MoveOp::Reshape:
  case MoveOp::Expand:
    return m.a;
  case MoveOp::Permute: {
    Shape r;
    for (const SInt& o : m.a) r.push_back(s[std::size_t(o.constant())]);
    return r;
  }
  case MoveOp::Pad: {
    Shape r = s;
    for (std::size_t i = 0; i < s.size(); ++i) r[i] = s[i] + m.a[i] + m.b[i];
    return r;
  }
  case MoveOp::Shrink: {
    Shape r = s;
    for (std::size_t i = 0; i < s.size(); ++i) r[i] = m.b[i] - m.a[i];
    return r;
  }
  case MoveOp::Flip:
    return s;
  case MoveOp::Stride: {
    Shape r = s;
    for (std::size_t i = 0; i < s.size(); ++i) {
      std::int64_t k = m.a[i].constant();
      if (k != 1) r[i] = (s[i].constant() + k - 1) / k;
    }
    return r;
  }
  case MoveOp::Window: {
    Shape r = s;
    for (std::size_t i = 0; i < s.size(); ++i)
      if (std::int64_t k = m.a[i].constant()) {
        const std::int64_t step = m.b[2 * i].constant(), d = m.b[2 * i + 1].constant();
        r[i] = (s[i].constant() - d * (k - 1) - 1) / step + 1;
      }
    for (std::size_t i = 0; i < s.size(); ++i)
      if (!(m.a[i] == 0)) r.push_back(m.a[i]);
    return r;
  }
  }
  return s;
}

} // namespace tg
