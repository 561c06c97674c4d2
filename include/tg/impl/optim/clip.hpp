#pragma once
// What optim/clip.hpp declares (TG_API, config.hpp).
#include <cmath>

#include "../../tg.hpp"

namespace tg::optim {

TG_API Tensor clip_grad_norm_(const std::vector<Tensor>& params, double max_norm, double norm_type,
                              bool error_if_nonfinite) {
  no_grad guard;
  std::vector<Tensor> grads;
  for (const Tensor& p : params)
    if (p.grad().defined()) grads.push_back(p.grad());
  if (grads.empty()) return Tensor::full_on({}, 0.0, DType::Float32, default_device());
  DType t = grads[0].dtype();
  Tensor total;
  for (const Tensor& g : grads) {
    Tensor a = g.cast(t).abs();
    Tensor part = std::isinf(norm_type) ? a.max() : a.pow(norm_type).sum();
    total = !total.defined() ? part : std::isinf(norm_type) ? total.maximum(part) : total + part;
  }
  if (!std::isinf(norm_type)) total = total.pow(1.0 / norm_type);
  total = total.contiguous();
  if (error_if_nonfinite) {
    double n = total.item<double>();
    if (!std::isfinite(n))
      throw error("tg.optim.clip_grad_norm_: the total norm of the gradients is " +
                  std::to_string(n) + " (error_if_nonfinite = true)");
  }
  Tensor coef = (Tensor::full_on({}, max_norm, t, total.device()) / (total + 1e-6))
                    .minimum(Tensor::full_on({}, 1.0, t, total.device()));
  for (Tensor p : params) { // a copy of the handle: the gradient lives in the shared node
    Tensor g = p.grad();
    if (g.defined()) p.set_grad(g * coef.cast(g.dtype()));
  }
  return total;
}

TG_API void clip_grad_value_(const std::vector<Tensor>& params, double clip_value) {
  no_grad guard;
  for (Tensor p : params) {
    Tensor g = p.grad();
    if (g.defined()) p.set_grad(g.clamp(-clip_value, clip_value));
  }
}

} // namespace tg::optim
