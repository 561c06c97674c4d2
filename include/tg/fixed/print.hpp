#pragma once
// Printing a fixed tensor (or any static expression, evaluated first) exactly as tg::Tensor prints
// the same values: tensor([[1.0000, 2.5000], ...]), PyTorch's format.
#include <cmath>
#include <cstdio>
#include <ostream>
#include <sstream>
#include <string>
#include <vector>

#include "ops.hpp"

namespace tg {

namespace fx {

/// The text of a row-major array of `shape` (as tg::Tensor::to_string formats it on the CPU).
template <class T> std::string format(const T* data, const std::vector<std::int64_t>& s, DType t) {
  std::int64_t n = 1;
  for (std::int64_t d : s) n *= d;
  const bool summarize = n > 1000;
  std::vector<double> fv;
  std::vector<std::int64_t> iv;
  auto to_double = [](const T& x) {
    if constexpr (std::is_same_v<T, half> || std::is_same_v<T, bfloat16_t>)
      return double(float(x));
    else
      return double(x);
  };
  for (std::int64_t i = 0; i < n; ++i) {
    if (is_float(t))
      fv.push_back(to_double(data[i]));
    else if constexpr (std::is_integral_v<T>) {
      if (is_unsigned(t))
        iv.push_back(std::int64_t(std::uint64_t(data[i])));
      else
        iv.push_back(std::int64_t(data[i]));
    }
  }
  bool all_int = true, sci = false;
  double amax = 0, amin = INFINITY;
  for (double x : fv) {
    if (!std::isfinite(x)) continue;
    all_int = all_int && x == std::floor(x);
    amax = std::max(amax, std::fabs(x));
    if (x != 0) amin = std::min(amin, std::fabs(x));
  }
  if (amax >= 1e8 || (amin < 1e-4 && !all_int) || (amax / amin > 1000 && !all_int && amin < 1e-3))
    sci = true;
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
  std::size_t width = 0;
  for (std::int64_t i = 0; i < n; ++i) width = std::max(width, fmt(i).size());
  std::ostringstream o;
  o << "tensor(";
  std::vector<std::int64_t> strides(s.size(), 1);
  for (std::size_t i = s.size(); i-- > 1;) strides[i - 1] = strides[i] * s[i];
  struct Rec {
    const std::vector<std::int64_t>& s;
    const std::vector<std::int64_t>& strides;
    std::ostringstream& o;
    const decltype(fmt)& f;
    std::size_t width;
    bool summarize;
    void operator()(std::size_t dim, std::int64_t base, int indent) const {
      if (dim == s.size()) {
        std::string v = f(base);
        o << std::string(width - v.size(), ' ') << v;
        return;
      }
      o << '[';
      for (std::int64_t i = 0; i < s[dim]; ++i) {
        if (summarize && s[dim] > 6 && i == 3) {
          o << "...";
          if (dim + 1 == s.size())
            o << ", ";
          else
            o << ",\n" << std::string(std::size_t(indent + 1), ' ');
          i = s[dim] - 3;
        }
        (*this)(dim + 1, base + i * strides[dim], indent + 1);
        if (i + 1 < s[dim]) {
          if (dim + 1 == s.size())
            o << ", ";
          else
            o << ',' << std::string(s.size() - dim - 1, '\n')
              << std::string(std::size_t(indent + 1), ' ');
        }
      }
      o << ']';
    }
  };
  Rec{s, strides, o, fmt, width, summarize}(0, 0, 7);
  if (t != DType::Float32 && t != DType::Int64 && t != DType::Bool)
    o << ", dtype=" << dtype_name(t);
  o << ')';
  return o.str();
}

} // namespace fx

template <class T, std::size_t... D> std::string to_string(const fixed<T, D...>& x) {
  return fx::format(x.data(), {std::int64_t(D)...}, dtype_of<T>);
}
template <class T, std::size_t... D>
std::ostream& operator<<(std::ostream& os, const fixed<T, D...>& x) {
  return os << to_string(x);
}
/// An expression prints its value.
template <fx::expr E>
  requires(!fx::is_fixed<E>)
std::ostream& operator<<(std::ostream& os, const E& e) {
  return os << to_string(e.eval());
}

} // namespace tg
