#pragma once
// Factories (torch.zeros, torch.arange, torch.rand, ...). Constants are lazy (they fuse into
// their consumers); ranges and random values are generated on the host from a seeded generator.
#include "movement.hpp"

namespace tg {

namespace detail {
TG_API std::string device_of(const TensorOptions& o);
TG_API void check_shape(const Shape& s, const char* op, std::source_location loc);
template <class T>
Tensor host_tensor(std::vector<T> v, const Shape& s, DType t, const std::string& dev) {
  return Tensor::from_data(v, s, TensorOptions(t, dev));
}
} // namespace detail

/// Uninitialized memory in PyTorch; here, zeros (cheap, and never garbage).
TG_API Tensor empty(Shape shape, TensorOptions o = {},
                    std::source_location loc = std::source_location::current());
TG_API Tensor full(Shape shape, double value, TensorOptions o = {},
                   std::source_location loc = std::source_location::current());
TG_API Tensor zeros(Shape shape, TensorOptions o = {},
                    std::source_location loc = std::source_location::current());
TG_API Tensor ones(Shape shape, TensorOptions o = {},
                   std::source_location loc = std::source_location::current());
namespace detail {
TG_API TensorOptions like(const Tensor& t, TensorOptions o);
} // namespace detail
TG_API Tensor zeros_like(const Tensor& t, TensorOptions o = {});
TG_API Tensor ones_like(const Tensor& t, TensorOptions o = {});
TG_API Tensor empty_like(const Tensor& t, TensorOptions o = {});
TG_API Tensor full_like(const Tensor& t, double v, TensorOptions o = {});

/// [start, end) by step. Integer arguments give int64 (as PyTorch), otherwise float32.
TG_API Tensor arange(double start, double end, double step = 1, TensorOptions o = {},
                     std::source_location loc = std::source_location::current());
TG_API Tensor arange(double end, TensorOptions o = {},
                     std::source_location loc = std::source_location::current());
TG_API Tensor linspace(double start, double end, std::int64_t steps, TensorOptions o = {},
                       std::source_location loc = std::source_location::current());
TG_API Tensor eye(std::int64_t n, std::optional<std::int64_t> m = std::nullopt,
                  TensorOptions o = {}, std::source_location loc = std::source_location::current());
/// Uniform in [0, 1).
TG_API Tensor rand(Shape shape, TensorOptions o = {},
                   std::source_location loc = std::source_location::current());
/// Standard normal (Box-Muller).
TG_API Tensor randn(Shape shape, TensorOptions o = {},
                    std::source_location loc = std::source_location::current());
/// Integers uniform in [low, high); int64 by default.
TG_API Tensor randint(std::int64_t low, std::int64_t high, Shape shape, TensorOptions o = {},
                      std::source_location loc = std::source_location::current());
TG_API Tensor rand_like(const Tensor& t, TensorOptions o = {});
TG_API Tensor randn_like(const Tensor& t, TensorOptions o = {});

/// A tensor from data: `tg::tensor({1.f, 2.f})`, `tg::tensor(v, {2, 3})`.
template <Arithmetic T>
Tensor tensor(const std::vector<T>& data, Shape shape = {}, TensorOptions o = {},
              std::source_location loc = std::source_location::current()) {
  return Tensor::from_data(data, std::move(shape), o, loc);
}
template <Arithmetic T>
Tensor tensor(std::initializer_list<T> data, TensorOptions o = {},
              std::source_location loc = std::source_location::current()) {
  return Tensor::from_data(std::vector<T>(data), {}, o, loc);
}

} // namespace tg
