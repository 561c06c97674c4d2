#pragma once
// What tensor/creation.hpp declares (TG_API, config.hpp).
#include <algorithm>
#include <cmath>

#include "../../graph/sint_text.hpp"
#include "../../tensor/tensor.hpp"
#include "../../util/rng.hpp"

namespace tg::detail {

TG_API std::string device_of(const TensorOptions& o) {
  return o.device.empty() ? default_device() : canonical_device(o.device);
}

TG_API void check_shape(const Shape& s, const char* op, std::source_location loc) {
  for (const SInt& d : s)
    if (d.eval() < 0) fail<shape_error>(op, "negative size in shape " + shape_str(s), loc);
}

} // namespace tg::detail

namespace tg {

TG_API Tensor empty(Shape shape, TensorOptions o, std::source_location loc) {
  detail::check_shape(shape, "empty", loc);
  return Tensor::full_on(shape, 0, o.dtype.value_or(DType::Float32), detail::device_of(o));
}

TG_API Tensor full(Shape shape, double value, TensorOptions o, std::source_location loc) {
  detail::check_shape(shape, "full", loc);
  return Tensor::full_on(shape, value, o.dtype.value_or(DType::Float32), detail::device_of(o));
}

TG_API Tensor zeros(Shape shape, TensorOptions o, std::source_location loc) {
  return full(std::move(shape), 0, o, loc);
}

TG_API Tensor ones(Shape shape, TensorOptions o, std::source_location loc) {
  return full(std::move(shape), 1, o, loc);
}

} // namespace tg

namespace tg::detail {

TG_API TensorOptions like(const Tensor& t, TensorOptions o) {
  if (!o.dtype) o.dtype = t.dtype();
  if (o.device.empty()) o.device = t.device();
  return o;
}

} // namespace tg::detail

namespace tg {

TG_API Tensor zeros_like(const Tensor& t, TensorOptions o) {
  return zeros(t.sym_shape(), detail::like(t, o));
}

TG_API Tensor ones_like(const Tensor& t, TensorOptions o) {
  return ones(t.sym_shape(), detail::like(t, o));
}

TG_API Tensor empty_like(const Tensor& t, TensorOptions o) {
  return empty(t.sym_shape(), detail::like(t, o));
}

TG_API Tensor full_like(const Tensor& t, double v, TensorOptions o) {
  return full(t.sym_shape(), v, detail::like(t, o));
}

TG_API Tensor arange(double start, double end, double step, TensorOptions o,
                     std::source_location loc) {
  if (step == 0) detail::fail<shape_error>("arange", "step must be nonzero", loc);
  double count = std::ceil((end - start) / step);
  if (!(count < 1e12)) detail::fail<shape_error>("arange", "range too large", loc);
  std::int64_t n = std::max<std::int64_t>(0, std::int64_t(count));
  bool integral = start == std::floor(start) && step == std::floor(step) && end == std::floor(end);
  DType t = o.dtype.value_or(integral ? DType::Int64 : DType::Float32);
  std::vector<double> v(static_cast<std::size_t>(n));
  for (std::int64_t i = 0; i < n; ++i) v[std::size_t(i)] = start + double(i) * step;
  return detail::host_tensor(v, {n}, t, detail::device_of(o));
}

TG_API Tensor arange(double end, TensorOptions o, std::source_location loc) {
  return arange(0, end, 1, o, loc);
}

TG_API Tensor linspace(double start, double end, std::int64_t steps, TensorOptions o,
                       std::source_location loc) {
  if (steps < 0) detail::fail<shape_error>("linspace", "steps must be non-negative", loc);
  std::vector<double> v(static_cast<std::size_t>(steps));
  for (std::int64_t i = 0; i < steps; ++i)
    v[std::size_t(i)] = steps == 1 ? start
                        : i < steps / 2
                            ? start + (end - start) / double(steps - 1) * double(i)
                            : end - (end - start) / double(steps - 1) * double(steps - 1 - i);
  return detail::host_tensor(v, {steps}, o.dtype.value_or(DType::Float32), detail::device_of(o));
}

TG_API Tensor eye(std::int64_t n, std::optional<std::int64_t> m, TensorOptions o,
                  std::source_location loc) {
  std::int64_t cols = m.value_or(n);
  if (n < 0 || cols < 0) detail::fail<shape_error>("eye", "sizes must be non-negative", loc);
  std::vector<double> v(static_cast<std::size_t>(n * cols), 0.0);
  for (std::int64_t i = 0; i < std::min(n, cols); ++i) v[std::size_t(i * cols + i)] = 1;
  return detail::host_tensor(v, {n, cols}, o.dtype.value_or(DType::Float32), detail::device_of(o));
}

TG_API Tensor rand(Shape shape, TensorOptions o, std::source_location loc) {
  detail::check_shape(shape, "rand", loc);
  DType t = o.dtype.value_or(DType::Float32);
  if (!is_float(t))
    detail::fail<dtype_error>("rand", std::string("needs a float dtype, got ") + dtype_name(t),
                              loc);
  std::int64_t n = prod(shape).eval();
  std::vector<double> v(static_cast<std::size_t>(n));
  for (auto& x : v) {
    std::uint64_t r = detail::rng()();
    x = t == DType::Float64 ? double(r >> 11) * 0x1p-53
                            : double(r >> 40) * 0x1p-24; // exact, never 1.0
    if (is_half(t)) x = double(r >> 53) * 0x1p-11;
  }
  return detail::host_tensor(v, shape, t, detail::device_of(o));
}

TG_API Tensor randn(Shape shape, TensorOptions o, std::source_location loc) {
  detail::check_shape(shape, "randn", loc);
  DType t = o.dtype.value_or(DType::Float32);
  if (!is_float(t))
    detail::fail<dtype_error>("randn", std::string("needs a float dtype, got ") + dtype_name(t),
                              loc);
  std::int64_t n = prod(shape).eval();
  std::vector<double> v(static_cast<std::size_t>(n));
  for (std::size_t i = 0; i < v.size(); i += 2) {
    double u1 = (double(detail::rng()() >> 11) + 1.0) * 0x1p-53,
           u2 = double(detail::rng()() >> 11) * 0x1p-53;
    double r = std::sqrt(-2.0 * std::log(u1));
    v[i] = r * std::cos(2 * detail::kPi * u2);
    if (i + 1 < v.size()) v[i + 1] = r * std::sin(2 * detail::kPi * u2);
  }
  return detail::host_tensor(v, shape, t, detail::device_of(o));
}

TG_API Tensor randint(std::int64_t low, std::int64_t high, Shape shape, TensorOptions o,
                      std::source_location loc) {
  detail::check_shape(shape, "randint", loc);
  if (high <= low) detail::fail<shape_error>("randint", "high must be greater than low", loc);
  std::int64_t n = prod(shape).eval();
  std::uint64_t span = std::uint64_t(high - low);
  std::vector<std::int64_t> v(static_cast<std::size_t>(n));
  for (auto& x : v) x = low + std::int64_t(detail::rng()() % span);
  return detail::host_tensor(v, shape, o.dtype.value_or(DType::Int64), detail::device_of(o));
}

TG_API Tensor rand_like(const Tensor& t, TensorOptions o) {
  return rand(t.sym_shape(), detail::like(t, o));
}

TG_API Tensor randn_like(const Tensor& t, TensorOptions o) {
  return randn(t.sym_shape(), detail::like(t, o));
}

} // namespace tg
