#pragma once
// Printing a tensor as PyTorch does (torch/_tensor_str.py): one function both front ends call
// (tg::Tensor::to_string and tg::fixed's operator<<) over a flat, row-major copy of the values, so
// the same values print the same whichever front end holds them.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "../graph/dtype.hpp"
#include "print_options.hpp"

namespace tg {

namespace detail {

/// PyTorch's _Formatter: one number format (and width) for every value shown.
class ValueFormat {
public:
  ValueFormat(std::span<const double> floats, std::span<const std::int64_t> ints, DType t,
              const PrintOptions& opt, const std::vector<std::int64_t>& shown)
      : t_(t), precision_(opt.precision) {
    if (!is_float(t)) {
      for (std::int64_t i : shown) width_ = std::max(width_, text(floats, ints, i).size());
      return;
    }
    double amax = 0, amin = INFINITY;
    bool any = false;
    for (std::int64_t i : shown) {
      const double x = floats[std::size_t(i)];
      if (!std::isfinite(x) || x == 0) continue;
      any = true;
      int_mode_ = int_mode_ && x == std::ceil(x);
      amax = std::max(amax, std::fabs(x));
      amin = std::min(amin, std::fabs(x));
    }
    if (any) {
      sci_ = amax / amin > 1000.0 || amax > 1.0e8 || (!int_mode_ && amin < 1.0e-4);
      for (std::int64_t i : shown) {
        const double x = floats[std::size_t(i)];
        if (std::isfinite(x) && x != 0) width_ = std::max(width_, text(floats, ints, i).size());
      }
    }
    // as in PyTorch, the width is the chosen format's even when sci_mode overrides it
    if (opt.sci_mode) sci_ = *opt.sci_mode;
  }
  std::size_t width() const { return width_; }
  /// Element i, right-aligned to the width.
  std::string operator()(std::span<const double> floats, std::span<const std::int64_t> ints,
                         std::int64_t i) const {
    std::string s = text(floats, ints, i);
    return s.size() < width_ ? std::string(width_ - s.size(), ' ') + s : s;
  }

private:
  std::string text(std::span<const double> floats, std::span<const std::int64_t> ints,
                   std::int64_t i) const {
    char buf[512];
    if (!is_float(t_)) {
      const std::int64_t v = ints[std::size_t(i)];
      if (t_ == DType::Bool) return v ? "True" : "False";
      if (is_unsigned(t_))
        std::snprintf(buf, sizeof buf, "%llu",
                      static_cast<unsigned long long>(static_cast<std::uint64_t>(v)));
      else
        std::snprintf(buf, sizeof buf, "%lld", static_cast<long long>(v));
      return buf;
    }
    const double x = floats[std::size_t(i)];
    if (std::isnan(x)) return "nan"; // Python never writes "-nan"
    if (std::isinf(x)) return x > 0 ? "inf" : "-inf";
    if (sci_)
      std::snprintf(buf, sizeof buf, "%.*e", precision_, x);
    else if (int_mode_)
      std::snprintf(buf, sizeof buf, "%.0f.", x);
    else
      std::snprintf(buf, sizeof buf, "%.*f", precision_, x);
    return buf;
  }
  DType t_;
  int precision_;
  bool int_mode_ = true, sci_ = false;
  std::size_t width_ = 1;
};

} // namespace detail

/// The text PyTorch prints for a tensor of dtype `t` and `shape` whose row-major values are
/// `floats` (a floating dtype, as doubles) or `ints` (any other: unsigned values as their 64-bit
/// pattern, bools as 0 and 1); the other span is empty. `device` is named unless it is "CPU".
/// dtypes are named as tg names them (dtype=int32).
inline std::string format_tensor(std::span<const double> floats, std::span<const std::int64_t> ints,
                                 std::span<const std::int64_t> shape, DType t,
                                 std::string_view device = "CPU",
                                 const PrintOptions& opt = print_options()) {
  const std::size_t rank = shape.size();
  std::int64_t n = 1;
  for (std::int64_t d : shape) n *= d;
  const std::int64_t edge = std::max<std::int64_t>(opt.edgeitems, 1);
  const bool summarize = n > opt.threshold;
  const std::string prefix = "tensor(";
  const int indent0 = int(prefix.size());
  std::vector<std::string> suffixes;
  if (device != "CPU") suffixes.push_back("device='" + std::string(device) + "'");
  std::string out = prefix;
  if (n == 0) {
    // an empty tensor: its size unless it is (0,), and its dtype unless it is the default
    if (rank != 1) {
      std::string s = "size=(";
      for (std::size_t d = 0; d < rank; ++d) s += (d ? ", " : "") + std::to_string(shape[d]);
      suffixes.push_back(s + ")");
    }
    if (t != DType::Float32) suffixes.push_back(std::string("dtype=") + dtype_name(t));
    out += "[]";
  } else {
    if (t != DType::Float32 && t != DType::Int64 && t != DType::Bool)
      suffixes.push_back(std::string("dtype=") + dtype_name(t));
    // summarized, a dim longer than 2 * edge shows `edge` items at each end: only they are shown,
    // and only they decide the format
    auto cut = [&](std::int64_t size) { return summarize && size > 2 * edge; };
    std::vector<std::int64_t> shown;
    for (std::int64_t i = 0; i < n; ++i) {
      bool keep = true;
      std::int64_t r = i;
      for (std::size_t d = rank; d-- > 0 && keep; r /= shape[d]) {
        const std::int64_t k = r % shape[d];
        keep = !(cut(shape[d]) && k >= edge && k < shape[d] - edge);
      }
      if (keep) shown.push_back(i);
    }
    const detail::ValueFormat fmt(floats, ints, t, opt, shown);
    std::vector<std::int64_t> strides(rank, 1);
    for (std::size_t d = rank; d-- > 1;) strides[d - 1] = strides[d] * shape[d];
    // the text of the sub-tensor at axis d starting at flat index base, indented by `indent`
    auto rec = [&](auto& self, std::size_t d, std::int64_t base, int indent) -> std::string {
      if (d == rank) return fmt(floats, ints, base);
      const std::int64_t size = shape[d];
      std::vector<std::string> items;
      auto item = [&](std::int64_t i) {
        items.push_back(self(self, d + 1, base + i * strides[d], indent + 1));
      };
      for (std::int64_t i = 0; i < size; ++i) {
        if (cut(size) && i == edge) {
          items.push_back(d + 1 == rank ? " ..." : "...");
          i = size - edge;
        }
        item(i);
      }
      std::string s = "[";
      if (d + 1 == rank) { // a row, wrapped at the line width
        const std::size_t per_line = std::size_t(
            std::max<std::int64_t>(1, (opt.linewidth - indent) / std::int64_t(fmt.width() + 2)));
        for (std::size_t k = 0; k < items.size(); ++k) {
          if (k) s += k % per_line ? ", " : ",\n" + std::string(std::size_t(indent + 1), ' ');
          s += items[k];
        }
      } else {
        const std::string sep =
            ',' + std::string(rank - d - 1, '\n') + std::string(std::size_t(indent + 1), ' ');
        for (std::size_t k = 0; k < items.size(); ++k) s += (k ? sep : "") + items[k];
      }
      return s + ']';
    };
    out += rec(rec, 0, 0, indent0);
  }
  // suffixes go on the last line while it stays within the line width (PyTorch's _add_suffixes)
  const std::size_t nl = out.rfind('\n');
  std::int64_t last_line =
      std::int64_t(out.size()) - (nl == std::string::npos ? -1 : std::int64_t(nl)) + 1;
  for (const std::string& s : suffixes) {
    const std::int64_t len = std::int64_t(s.size());
    if (last_line + len + 2 > opt.linewidth) {
      out += ",\n" + std::string(std::size_t(indent0), ' ') + s;
      last_line = indent0 + len;
    } else {
      out += ", " + s;
      last_line += len + 2;
    }
  }
  return out + ')';
}

} // namespace tg
