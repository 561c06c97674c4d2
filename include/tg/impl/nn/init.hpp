#pragma once
// What nn/init.hpp declares (TG_API, config.hpp).
#include <cmath>

#include "../../tg.hpp"
#include "../../util/rng.hpp"

namespace tg::nn::init {

TG_API double calculate_gain(const std::string& nonlinearity, std::optional<double> param) {
  if (nonlinearity == "linear" || nonlinearity == "identity" || nonlinearity == "sigmoid" ||
      nonlinearity.rfind("conv", 0) == 0)
    return 1.0;
  if (nonlinearity == "tanh") return 5.0 / 3.0;
  if (nonlinearity == "relu") return std::sqrt(2.0);
  if (nonlinearity == "leaky_relu") {
    double a = param.value_or(0.01);
    return std::sqrt(2.0 / (1 + a * a));
  }
  if (nonlinearity == "selu") return 3.0 / 4.0;
  throw error("tg.nn.init.calculate_gain: unsupported nonlinearity '" + nonlinearity + "'");
}

TG_API std::pair<std::int64_t, std::int64_t>
calculate_fan_in_and_fan_out(const std::vector<std::int64_t>& shape) {
  if (shape.size() < 2)
    throw shape_error("tg.nn.init: fan in and fan out need a tensor of at least 2 dims, got " +
                      std::to_string(shape.size()));
  std::int64_t field = 1;
  for (std::size_t i = 2; i < shape.size(); ++i) field *= shape[i];
  return {shape[1] * field, shape[0] * field};
}

} // namespace tg::nn::init

namespace tg::nn::init::detail {

TG_API std::vector<double> draw_uniform(std::int64_t n, double a, double b) {
  std::vector<double> v(static_cast<std::size_t>(n));
  for (double& x : v) x = a + (b - a) * (double(tg::detail::rng()() >> 11) * 0x1p-53);
  return v;
}

TG_API std::vector<double> draw_normal(std::int64_t n, double mean, double std) {
  std::vector<double> v(static_cast<std::size_t>(n));
  for (std::size_t i = 0; i < v.size(); i += 2) {
    double u1 = (double(tg::detail::rng()() >> 11) + 1.0) * 0x1p-53,
           u2 = double(tg::detail::rng()() >> 11) * 0x1p-53;
    double r = std::sqrt(-2.0 * std::log(u1));
    v[i] = mean + std * r * std::cos(2 * tg::detail::kPi * u2);
    if (i + 1 < v.size()) v[i + 1] = mean + std * r * std::sin(2 * tg::detail::kPi * u2);
  }
  return v;
}

TG_API Tensor& fill(Tensor& t, const std::vector<double>& v) {
  if (!t.defined()) throw error("tg.nn.init: the tensor is undefined");
  if (!is_float(t.dtype()))
    throw dtype_error(std::string("tg.nn.init: needs a floating point tensor, got ") +
                      dtype_name(t.dtype()));
  Tensor values = Tensor::from_data(v, t.sym_shape(), TensorOptions(t.dtype(), t.device()));
  if (t.lazy()->op == Op::Buffer) {
    tg::assign({{t, values}});
  } else {
    bool rg = t.requires_grad() && !t.lazy()->grad_fn;
    t = values;
    if (rg) t.requires_grad_();
  }
  return t;
}

TG_API std::int64_t fan(const Tensor& t, const std::string& mode) {
  auto [in, out] = calculate_fan_in_and_fan_out(t.shape());
  if (mode == "fan_in") return in;
  if (mode == "fan_out") return out;
  throw error("tg.nn.init: mode must be \"fan_in\" or \"fan_out\", not \"" + mode + "\"");
}

} // namespace tg::nn::init::detail

namespace tg::nn::init {

TG_API Tensor& uniform_(Tensor& t, double a, double b) {
  return detail::fill(t, detail::draw_uniform(t.numel(), a, b));
}

TG_API Tensor& normal_(Tensor& t, double mean, double std) {
  return detail::fill(t, detail::draw_normal(t.numel(), mean, std));
}

TG_API Tensor& constant_(Tensor& t, double v) {
  return detail::fill(t, std::vector<double>(std::size_t(t.numel()), v));
}

TG_API Tensor& zeros_(Tensor& t) { return constant_(t, 0); }

TG_API Tensor& ones_(Tensor& t) { return constant_(t, 1); }

TG_API Tensor& kaiming_uniform_(Tensor& t, double a, const std::string& mode,
                                const std::string& nonlinearity) {
  double bound =
      std::sqrt(3.0) * calculate_gain(nonlinearity, a) / std::sqrt(double(detail::fan(t, mode)));
  return uniform_(t, -bound, bound);
}

TG_API Tensor& kaiming_normal_(Tensor& t, double a, const std::string& mode,
                               const std::string& nonlinearity) {
  return normal_(t, 0, calculate_gain(nonlinearity, a) / std::sqrt(double(detail::fan(t, mode))));
}

TG_API Tensor& xavier_uniform_(Tensor& t, double gain) {
  auto [in, out] = calculate_fan_in_and_fan_out(t.shape());
  double bound = gain * std::sqrt(6.0 / double(in + out));
  return uniform_(t, -bound, bound);
}

TG_API Tensor& xavier_normal_(Tensor& t, double gain) {
  auto [in, out] = calculate_fan_in_and_fan_out(t.shape());
  return normal_(t, 0, gain * std::sqrt(2.0 / double(in + out)));
}

} // namespace tg::nn::init

namespace tg::nn::init::detail {

TG_API Tensor fresh(const Shape& shape, TensorOptions o, const std::vector<double>& v) {
  if (!o.dtype) o.dtype = DType::Float32;
  if (!is_float(*o.dtype))
    throw dtype_error(std::string("tg.nn.init: needs a floating point dtype, got ") +
                      dtype_name(*o.dtype));
  return Tensor::from_data(v, shape, o);
}

TG_API std::int64_t numel(const Shape& s) { return tg::prod(s).eval(); }

TG_API std::vector<std::int64_t> dims(const Shape& s) {
  std::vector<std::int64_t> r;
  for (const SInt& d : s) r.push_back(d.eval());
  return r;
}

TG_API std::int64_t fan(const Shape& s, const std::string& mode) {
  auto [in, out] = calculate_fan_in_and_fan_out(dims(s));
  if (mode == "fan_in") return in;
  if (mode == "fan_out") return out;
  throw error("tg.nn.init: mode must be \"fan_in\" or \"fan_out\", not \"" + mode + "\"");
}

} // namespace tg::nn::init::detail

namespace tg::nn::init {

TG_API Tensor uniform(const Shape& shape, double a, double b, TensorOptions o) {
  return detail::fresh(shape, o, detail::draw_uniform(detail::numel(shape), a, b));
}

TG_API Tensor normal(const Shape& shape, double mean, double std, TensorOptions o) {
  return detail::fresh(shape, o, detail::draw_normal(detail::numel(shape), mean, std));
}

TG_API Tensor constant(const Shape& shape, double v, TensorOptions o) {
  return detail::fresh(shape, o, std::vector<double>(std::size_t(detail::numel(shape)), v));
}

TG_API Tensor zeros(const Shape& shape, TensorOptions o) { return constant(shape, 0, o); }

TG_API Tensor ones(const Shape& shape, TensorOptions o) { return constant(shape, 1, o); }

TG_API Tensor kaiming_uniform(const Shape& shape, double a, const std::string& mode,
                              const std::string& nonlinearity, TensorOptions o) {
  double bound = std::sqrt(3.0) * calculate_gain(nonlinearity, a) /
                 std::sqrt(double(detail::fan(shape, mode)));
  return uniform(shape, -bound, bound, o);
}

TG_API Tensor kaiming_normal(const Shape& shape, double a, const std::string& mode,
                             const std::string& nonlinearity, TensorOptions o) {
  return normal(shape, 0,
                calculate_gain(nonlinearity, a) / std::sqrt(double(detail::fan(shape, mode))), o);
}

TG_API Tensor xavier_uniform(const Shape& shape, double gain, TensorOptions o) {
  auto [in, out] = calculate_fan_in_and_fan_out(detail::dims(shape));
  double bound = gain * std::sqrt(6.0 / double(in + out));
  return uniform(shape, -bound, bound, o);
}

TG_API Tensor xavier_normal(const Shape& shape, double gain, TensorOptions o) {
  auto [in, out] = calculate_fan_in_and_fan_out(detail::dims(shape));
  return normal(shape, 0, gain * std::sqrt(2.0 / double(in + out)), o);
}

} // namespace tg::nn::init
