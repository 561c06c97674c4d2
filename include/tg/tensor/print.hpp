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
  if (is_float(t)) fv = to_vector<double>();
  else if (is_unsigned(t)) { for (auto x : to_vector<std::uint64_t>()) iv.push_back(std::int64_t(x)); }
  else iv = to_vector<std::int64_t>();
  // one number format for the whole tensor
  bool all_int = true, sci = false;
  double amax = 0, amin = INFINITY;
  for (double x : fv) {
    if (!std::isfinite(x)) continue;
    all_int = all_int && x == std::floor(x);
    amax = std::max(amax, std::fabs(x));
    if (x != 0) amin = std::min(amin, std::fabs(x));
  }
  if (amax >= 1e8 || (amin < 1e-4 && !all_int) || (amax / amin > 1000 && !all_int && amin < 1e-3)) sci = true;
  auto fmt = [&](std::int64_t i) {
    char buf[64];
    if (t == DType::Bool) return std::string(iv[std::size_t(i)] ? "True" : "False");
    if (!is_float(t)) {
      if (is_unsigned(t)) std::snprintf(buf, sizeof buf, "%llu", static_cast<unsigned long long>(iv[std::size_t(i)]));
      else std::snprintf(buf, sizeof buf, "%lld", static_cast<long long>(iv[std::size_t(i)]));
      return std::string(buf);
    }
    double x = fv[std::size_t(i)];
    if (std::isnan(x)) return std::string("nan");
    if (std::isinf(x)) return std::string(x > 0 ? "inf" : "-inf");
    if (sci) std::snprintf(buf, sizeof buf, "%.4e", x);
    else if (all_int) std::snprintf(buf, sizeof buf, "%.0f.", x);
    else std::snprintf(buf, sizeof buf, "%.4f", x);
    return std::string(buf);
  };
  std::size_t width = 0;
  for (std::int64_t i = 0; i < n; ++i) width = std::max(width, fmt(i).size());
  std::ostringstream o;
  o << "tensor(";
  std::vector<std::int64_t> strides(s.size(), 1);
  for (std::size_t i = s.size(); i-- > 1;) strides[i - 1] = strides[i] * s[i];
  std::function<void(std::size_t, std::int64_t, int)> rec = [&](std::size_t dim, std::int64_t base, int indent) {
    if (dim == s.size()) {
      std::string v = fmt(base);
      o << std::string(width - v.size(), ' ') << v;
      return;
    }
    o << '[';
    for (std::int64_t i = 0; i < s[dim]; ++i) {
      if (summarize && s[dim] > 6 && i == 3) {
        o << "...";
        if (dim + 1 == s.size()) o << ", ";
        else o << ",\n" << std::string(std::size_t(indent + 1), ' ');
        i = s[dim] - 3;
      }
      rec(dim + 1, base + i * strides[dim], indent + 1);
      if (i + 1 < s[dim]) {
        if (dim + 1 == s.size()) o << ", ";
        else o << ',' << std::string(s.size() - dim - 1, '\n') << std::string(std::size_t(indent + 1), ' ');
      }
    }
    o << ']';
  };
  rec(0, 0, 7);
  if (t != DType::Float32 && t != DType::Int64 && t != DType::Bool) o << ", dtype=" << dtype_name(t);
  if (device() != "CPU") o << ", device='" << device() << "'";
  o << ')';
  return o.str();
}

inline std::ostream& operator<<(std::ostream& os, const Tensor& t) { return os << t.to_string(); }

} // namespace tg
