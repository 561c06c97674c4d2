#pragma once
// Gradient checks for the test suites: backward() against central finite differences in float64.
#include <doctest/doctest.h>

#include <tg/tg.hpp>

#include <algorithm>
#include <cmath>
#include <functional>
#include <random>
#include <string>
#include <vector>

namespace tg_test {

using Fn = std::function<tg::Tensor(const std::vector<tg::Tensor>&)>;

/// Random values in [lo, hi] kept at least `gap` away from each other and from zero, so that
/// kinks (relu, abs, max ties) are not straddled by the finite difference.
inline std::vector<double> values(std::size_t n, std::mt19937& rng, double lo = -2, double hi = 2,
                                  bool distinct = true) {
  std::uniform_real_distribution<double> d(lo, hi);
  std::vector<double> v;
  const double gap = std::min(0.02, (hi - lo) / double(4 * n + 4));
  while (v.size() < n) {
    double x = d(rng);
    bool ok = std::abs(x) > 0.05 || !distinct;
    for (double y : v) ok = ok && (!distinct || std::abs(x - y) > gap);
    if (ok) v.push_back(x);
  }
  return v;
}

inline double loss_value(const Fn& f, const std::vector<std::vector<double>>& data,
                         const std::vector<tg::Shape>& shapes, const std::vector<double>& w) {
  tg::no_grad guard;
  std::vector<tg::Tensor> xs;
  for (std::size_t i = 0; i < data.size(); ++i)
    xs.push_back(tg::Tensor::from_data(data[i], shapes[i]));
  tg::Tensor y = f(xs).cast(tg::float64);
  auto yv = y.to_vector<double>();
  double s = 0;
  for (std::size_t k = 0; k < yv.size(); ++k) s += yv[k] * w[k];
  return s;
}

/// d(sum(f(xs) * w))/dxs by backward() against central differences, in float64, for inputs of
/// the given shapes drawn from [lo, hi] and random weights w.
inline void check_grad(const std::string& name, const Fn& f, const std::vector<tg::Shape>& shapes,
                       double lo = -2, double hi = 2, std::uint32_t seed = 1, double tol = 1e-5) {
  CAPTURE(name);
  std::mt19937 rng(seed);
  std::vector<std::vector<double>> data;
  std::vector<tg::Tensor> xs;
  for (const tg::Shape& s : shapes) {
    data.push_back(values(std::size_t(tg::prod(s).eval()), rng, lo, hi));
    xs.push_back(tg::Tensor::from_data(data.back(), s).requires_grad_());
  }
  tg::Tensor y = f(xs);
  std::vector<double> w = values(std::size_t(y.numel()), rng, 0.5, 1.5, false);
  tg::Tensor wt = tg::Tensor::from_data(w, y.sym_shape()).cast(y.dtype());
  (y * wt).sum().backward();
  const double eps = 1e-6;
  for (std::size_t i = 0; i < xs.size(); ++i) {
    REQUIRE(xs[i].grad().defined());
    auto g = xs[i].grad().to_vector<double>();
    for (std::size_t j = 0; j < data[i].size(); ++j) {
      auto plus = data, minus = data;
      plus[i][j] += eps;
      minus[i][j] -= eps;
      double num = (loss_value(f, plus, shapes, w) - loss_value(f, minus, shapes, w)) / (2 * eps);
      CAPTURE(i);
      CAPTURE(j);
      CHECK(g[j] == doctest::Approx(num).epsilon(tol).scale(1.0));
    }
  }
}
} // namespace tg_test
