#pragma once
// nn::init: PyTorch's initializers (torch.nn.init), drawn on the host from tg's seeded generator
// (tg::manual_seed makes them reproducible) and written into the tensor in place. The same
// formulas as PyTorch: fan_in/fan_out from the shape (dim 1 and dim 0, times the receptive
// field), gains from calculate_gain.

#include "module.hpp"

namespace tg::nn::init {

/// The recommended gain for a nonlinearity (torch.nn.init.calculate_gain).
TG_API double calculate_gain(const std::string& nonlinearity,
                             std::optional<double> param = std::nullopt);

/// (fan_in, fan_out) of a weight: [out, in, *receptive field].
TG_API std::pair<std::int64_t, std::int64_t>
calculate_fan_in_and_fan_out(const std::vector<std::int64_t>& shape);

namespace detail {
TG_API std::vector<double> draw_uniform(std::int64_t n, double a, double b);
TG_API std::vector<double> draw_normal(std::int64_t n, double mean, double std);
/// Writes host values into `t`: in place when it is a buffer (a parameter keeps its identity),
/// otherwise `t` becomes a new buffer (keeping requires_grad).
TG_API Tensor& fill(Tensor& t, const std::vector<double>& v);
TG_API std::int64_t fan(const Tensor& t, const std::string& mode);
} // namespace detail

/// U(a, b).
TG_API Tensor& uniform_(Tensor& t, double a = 0, double b = 1);
/// N(mean, std^2).
TG_API Tensor& normal_(Tensor& t, double mean = 0, double std = 1);
TG_API Tensor& constant_(Tensor& t, double v);
TG_API Tensor& zeros_(Tensor& t);
TG_API Tensor& ones_(Tensor& t);
/// He et al.: U(-b, b) with b = gain * sqrt(3 / fan).
TG_API Tensor& kaiming_uniform_(Tensor& t, double a = 0, const std::string& mode = "fan_in",
                                const std::string& nonlinearity = "leaky_relu");
/// He et al.: N(0, std^2) with std = gain / sqrt(fan).
TG_API Tensor& kaiming_normal_(Tensor& t, double a = 0, const std::string& mode = "fan_in",
                               const std::string& nonlinearity = "leaky_relu");
/// Glorot & Bengio: U(-b, b) with b = gain * sqrt(6 / (fan_in + fan_out)).
TG_API Tensor& xavier_uniform_(Tensor& t, double gain = 1);
/// Glorot & Bengio: N(0, std^2) with std = gain * sqrt(2 / (fan_in + fan_out)).
TG_API Tensor& xavier_normal_(Tensor& t, double gain = 1);

// Fresh tensors (realized buffers), for module constructors: init::kaiming_uniform({out, in},
// std::sqrt(5.0)).
namespace detail {
TG_API Tensor fresh(const Shape& shape, TensorOptions o, const std::vector<double>& v);
TG_API std::int64_t numel(const Shape& s);
TG_API std::vector<std::int64_t> dims(const Shape& s);
TG_API std::int64_t fan(const Shape& s, const std::string& mode);
} // namespace detail
TG_API Tensor uniform(const Shape& shape, double a = 0, double b = 1, TensorOptions o = {});
TG_API Tensor normal(const Shape& shape, double mean = 0, double std = 1, TensorOptions o = {});
TG_API Tensor constant(const Shape& shape, double v, TensorOptions o = {});
TG_API Tensor zeros(const Shape& shape, TensorOptions o = {});
TG_API Tensor ones(const Shape& shape, TensorOptions o = {});
TG_API Tensor kaiming_uniform(const Shape& shape, double a = 0, const std::string& mode = "fan_in",
                              const std::string& nonlinearity = "leaky_relu", TensorOptions o = {});
TG_API Tensor kaiming_normal(const Shape& shape, double a = 0, const std::string& mode = "fan_in",
                             const std::string& nonlinearity = "leaky_relu", TensorOptions o = {});
TG_API Tensor xavier_uniform(const Shape& shape, double gain = 1, TensorOptions o = {});
TG_API Tensor xavier_normal(const Shape& shape, double gain = 1, TensorOptions o = {});

} // namespace tg::nn::init
