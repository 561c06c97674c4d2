#pragma once
// The math functions of the primitive ops (sqrt, exp2, log2, sin, trunc, pow), usable in constant
// expressions: <cmath> at run time, portable double-precision versions during constant
// evaluation (libstdc++'s <cmath> is not constexpr under Clang).
#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>

namespace tg::fx::cmath {

inline constexpr double inf = std::numeric_limits<double>::infinity();
inline constexpr double nan = std::numeric_limits<double>::quiet_NaN();

constexpr bool isnan(double x) { return x != x; }
constexpr double trunc(double x) {
  if (isnan(x) || x >= 4503599627370496.0 || x <= -4503599627370496.0) return x;
  double r = double(std::int64_t(x));
  return r == 0 && std::bit_cast<std::uint64_t>(x) >> 63 ? -0.0 : r;
}
constexpr double floor(double x) {
  double t = trunc(x);
  return t > x ? t - 1 : t;
}
constexpr double sqrt(double x) {
  if (isnan(x) || x < 0) return nan;
  if (x == 0 || x == inf) return x;
  // scale into [1, 4) by powers of 4, then Newton
  double s = 1, m = x;
  while (m >= 4) {
    m *= 0.25;
    s *= 2;
  }
  while (m < 1) {
    m *= 4;
    s *= 0.5;
  }
  double r = 1.5;
  for (int i = 0; i < 8; ++i) r = 0.5 * (r + m / r);
  return r * s;
}
/// 2^n for an integer n (with subnormals and overflow).
constexpr double pow2i(std::int64_t n) {
  if (n > 1023) return inf;
  if (n < -1074) return 0;
  if (n < -1022) return pow2i(n + 64) / 18446744073709551616.0;
  return std::bit_cast<double>(std::uint64_t(n + 1023) << 52);
}
constexpr double exp2(double x) {
  if (isnan(x)) return x;
  if (x >= 1024) return inf;
  if (x < -1080) return 0;
  double n = floor(x + 0.5), f = x - n; // f in [-0.5, 0.5]
  double y = f * 0.6931471805599453094, term = 1, sum = 1;
  for (int k = 1; k < 24; ++k) {
    term *= y / k;
    sum += term;
  }
  std::int64_t e = std::int64_t(n);
  // split the scaling so that neither factor over- or underflows on its own
  return sum * pow2i(e / 2) * pow2i(e - e / 2);
}
constexpr double log2(double x) {
  if (isnan(x) || x < 0) return nan;
  if (x == 0) return -inf;
  if (x == inf) return inf;
  std::int64_t e = 0;
  while (x < 1) {
    x *= 2;
    --e;
  }
  while (x >= 2) {
    x *= 0.5;
    ++e;
  }
  if (x > 1.4142135623730951) {
    x *= 0.5;
    ++e;
  }
  // ln(x) = 2 atanh((x - 1) / (x + 1))
  double z = (x - 1) / (x + 1), z2 = z * z, term = z, sum = 0;
  for (int k = 1; k < 60; k += 2) {
    sum += term / k;
    term *= z2;
  }
  return double(e) + 2 * sum * 1.4426950408889634074;
}
constexpr double sin(double x) {
  if (isnan(x) || x == inf || x == -inf) return nan;
  constexpr double pi = 3.141592653589793238, two_pi = 6.283185307179586477;
  double k = floor(x / two_pi + 0.5);
  double r = x - k * two_pi; // [-pi, pi]
  if (r > pi / 2) r = pi - r;
  if (r < -pi / 2) r = -pi - r;
  double r2 = r * r, term = r, sum = r;
  for (int n = 1; n < 14; ++n) {
    term *= -r2 / double((2 * n) * (2 * n + 1));
    sum += term;
  }
  return sum;
}
constexpr double pow(double a, double b) {
  if (b == 0 || a == 1) return 1;
  if (isnan(a) || isnan(b)) return nan;
  bool int_b = trunc(b) == b, odd_b = int_b && trunc(b * 0.5) * 2 != b;
  if (a == 0) {
    if (b > 0) return odd_b ? a : 0.0;
    return odd_b && std::bit_cast<std::uint64_t>(a) >> 63 ? -inf : inf;
  }
  if (a < 0) {
    if (!int_b) return nan;
    double r = exp2(b * log2(-a));
    return odd_b ? -r : r;
  }
  return exp2(b * log2(a));
}

// Dispatch: <cmath> at run time, the versions above in constant expressions.
template <class T> constexpr T sqrt_(T x) {
  if (std::is_constant_evaluated()) return T(sqrt(double(x)));
  return std::sqrt(x);
}
template <class T> constexpr T exp2_(T x) {
  if (std::is_constant_evaluated()) return T(exp2(double(x)));
  return std::exp2(x);
}
template <class T> constexpr T log2_(T x) {
  if (std::is_constant_evaluated()) return T(log2(double(x)));
  return std::log2(x);
}
template <class T> constexpr T sin_(T x) {
  if (std::is_constant_evaluated()) return T(sin(double(x)));
  return std::sin(x);
}
template <class T> constexpr T trunc_(T x) {
  if (std::is_constant_evaluated()) return T(trunc(double(x)));
  return std::trunc(x);
}
template <class T> constexpr T pow_(T a, T b) {
  if (std::is_constant_evaluated()) return T(pow(double(a), double(b)));
  return std::pow(a, b);
}

} // namespace tg::fx::cmath
