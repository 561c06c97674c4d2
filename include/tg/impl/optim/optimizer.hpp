#pragma once
// What optim/optimizer.hpp declares (TG_API, config.hpp).
#include "../../tg.hpp"

namespace tg::optim::detail {

TG_API void write_scalar(const Tensor& t, double v) {
  const LazyPtr& n = t.lazy();
  if (n->op != Op::Buffer) throw error("tg.optim: internal: a scalar state tensor is not a buffer");
  visit_dtype(t.dtype(), [&](auto x) {
    using D = decltype(x);
    D value;
    if constexpr (std::is_same_v<D, half> || std::is_same_v<D, bfloat16_t>)
      value = D(float(v));
    else
      value = static_cast<D>(v);
    n->buffer->device->copy_in(n->buffer->ptr, &value, sizeof(D));
  });
}

TG_API Tensor scalar_buffer(double v, DType t, const std::string& device) {
  return Tensor::from_data(std::vector<double>{v}, Shape{}, TensorOptions(t, device));
}

TG_API void check_hyper(bool ok, const std::string& msg) {
  if (!ok) throw error("tg.optim: " + msg);
}

} // namespace tg::optim::detail
