#pragma once
// Printing like PyTorch: tensor([[1.0000, 2.5000], ...], dtype=int32).
#include <cstdio>
#include <sstream>

#include "creation.hpp"

namespace tg {

inline std::string Tensor::to_string() const {
  std::vector<std::int64_t> s = shape();
  std::int64_t n = numel();
  const bool summarize = n > 1000;
  DType t = dtype();
  std::vector<double> fv;
  std::vector<std::int64_t> iv;
  if (is_float(t))
    fv = to_vector<double>();
  else if (is_unsigned(t)) {
    for (auto x : to_vector<std::uint64_t>()) iv.push_back(std::int64_t(x));
  } else
    iv = to_vector<std::int64_t>();
  // Summarized, only the edge items (3 each side of a dim longer than 6) are shown, and, as in
  // PyTorch, only they decide the format.
  auto shown = [&](std::int64_t i) {
    if (!summarize) return true;
    for (std::size_t d = s.size(); d-- > 0; i /= s[d]) {
      std::int64_t k = i % s[d];
      if (s[d] > 6 && k >= 3 && k < s[d] - 3) return false;
    }
    return true;
  };
  // one number format for the whole tensor, from its nonzero finite values (PyTorch's _Formatter)
  bool all_int = true, sci = false;
  double amax = 0, amin = INFINITY;
  for (std::size_t i = 0; i < fv.size(); ++i) {
    double x = fv[i];
    if (!std::isfinite(x) || x == 0 || !shown(std::int64_t(i))) continue;
    all_int = all_int && x == std::floor(x);
    amax = std::max(amax, std::fabs(x));
    amin = std::min(amin, std::fabs(x));
  }
  if (amax > 1e8 || amin < 1e-4 || amax / amin > 1000) sci = true;
  auto fmt = [&](std::int64_t i) {
    char buf[64];
    if (t == DType::Bool) return std::string(iv[std::size_t(i)] ? "True" : "False");
    if (!is_float(t)) {
      if (is_unsigned(t))
        std::snprintf(buf, sizeof buf, "%llu", static_cast<unsigned long long>(iv[std::size_t(i)]));
      else
        std::snprintf(buf, sizeof buf, "%lld", static_cast<long long>(iv[std::size_t(i)]));
      return std::string(buf);
    }
    double x = fv[std::size_t(i)];
    if (std::isnan(x)) return std::string("nan");
    if (std::isinf(x)) return std::string(x > 0 ? "inf" : "-inf");
    if (sci)
      std::snprintf(buf, sizeof buf, "%.4e", x);
    else if (all_int)
      std::snprintf(buf, sizeof buf, "%.0f.", x);
    else
      std::snprintf(buf, sizeof buf, "%.4f", x);
    return std::string(buf);
  };
  std::size_t width = 1; // floats: the widest nonzero finite value (nan, inf and 0 do not count)
  for (std::int64_t i = 0; i < n; ++i)
    if (shown(i) &&
        (!is_float(t) || (std::isfinite(fv[std::size_t(i)]) && fv[std::size_t(i)] != 0)))
      width = std::max(width, fmt(i).size());
  auto padded = [&](std::string v) {
    return v.size() < width ? std::string(width - v.size(), ' ') + v : v;
  };
  std::ostringstream o;
  o << "tensor(";
  std::vector<std::int64_t> strides(s.size(), 1);
  for (std::size_t i = s.size(); i-- > 1;) strides[i - 1] = strides[i] * s[i];
  std::function<void(std::size_t, std::int64_t, int)> rec = [&](std::size_t dim, std::int64_t base,
                                                                int indent) {
    if (dim == s.size()) {
      o << padded(fmt(base));
      return;
    }
    const bool cut = summarize && s[dim] > 6;
    if (dim + 1 == s.size()) { // a row: " ..." for the cut, wrapped at 80 columns
      std::vector<std::string> items;
      for (std::int64_t i = 0; i < s[dim]; ++i) {
        if (cut && i == 3) {
          items.push_back(" ...");
          i = s[dim] - 3;
        }
        items.push_back(padded(fmt(base + i * strides[dim])));
      }
      std::size_t per_line = std::size_t(std::max(1, (80 - indent) / int(width + 2)));
      o << '[';
      for (std::size_t k = 0; k < items.size(); ++k) {
        if (k)
          o << (k % per_line ? std::string(", ")
                             : ",\n" + std::string(std::size_t(indent + 1), ' '));
        o << items[k];
      }
      o << ']';
      return;
    }
    const std::string sep =
        ',' + std::string(s.size() - dim - 1, '\n') + std::string(std::size_t(indent + 1), ' ');
    o << '[';
    for (std::int64_t i = 0; i < s[dim]; ++i) {
      if (i) o << sep;
      if (cut && i == 3) {
        o << "..." << sep;
        i = s[dim] - 3;
      }
      rec(dim + 1, base + i * strides[dim], indent + 1);
    }
    o << ']';
  };
  rec(0, 0, 7);
  if (t != DType::Float32 && t != DType::Int64 && t != DType::Bool)
    o << ", dtype=" << dtype_name(t);
  if (device() != "CPU") o << ", device='" << device() << "'";
  o << ')';
  return o.str();
}

inline std::ostream& operator<<(std::ostream& os, const Tensor& t) { return os << t.to_string(); }
inline std::ostream& operator<<(std::ostream& os, DType t) { return os << dtype_name(t); }

} // namespace tg
