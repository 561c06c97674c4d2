#pragma once
// What optim/adam.hpp declares (TG_API, config.hpp).
#include "../../tg.hpp"

namespace tg::optim {

TG_API Adam::Adam(std::vector<Tensor> params, AdamOptions o)
    : Adam(one_group(std::move(params)), o) {}

TG_API Adam::Adam(std::vector<ParamGroup> groups, AdamOptions o)
    : Adam(std::move(groups), o, false, "Adam") {}

TG_API const AdamOptions& Adam::options() const { return opt_; }

TG_API Adam::Adam(std::vector<ParamGroup> groups, AdamOptions o, bool decoupled, const char* name)
    : Optimizer(std::move(groups), o.lr, o.weight_decay, name), opt_(o), decoupled_(decoupled) {
  auto [b1, b2] = o.betas;
  detail::check_hyper(b1 >= 0 && b1 < 1,
                      std::string(name) + ": invalid beta1 " + std::to_string(b1));
  detail::check_hyper(b2 >= 0 && b2 < 1,
                      std::string(name) + ": invalid beta2 " + std::to_string(b2));
  detail::check_hyper(o.eps >= 0, std::string(name) + ": invalid eps " + std::to_string(o.eps));
  init_state([&](std::size_t i, const Tensor& p) {
    state(i, "step", p, 0, scalar_dtype(p), true);
    state(i, "exp_avg", p);
    state(i, "exp_avg_sq", p);
    if (opt_.amsgrad) state(i, "max_exp_avg_sq", p);
  });
}

TG_API void Adam::update(std::size_t g, std::size_t i, const Tensor& p0, const Tensor& grad0,
                         std::vector<std::pair<Tensor, Tensor>>& writes) {
  auto [b1, b2] = opt_.betas;
  const double wd = groups_[g].weight_decay;
  const DType t = p0.dtype();
  Tensor grad = opt_.maximize ? -grad0 : grad0;
  Tensor lr = groups_[g].lr_t;
  Tensor p = p0;
  if (decoupled_ && wd != 0) p = p * (1.0 - lr * wd).cast(t);
  if (!decoupled_ && wd != 0) grad = grad + p * wd;
  Tensor& step = state(i, "step", p0, 0, scalar_dtype(p0), true);
  Tensor& m = state(i, "exp_avg", p0);
  Tensor& v = state(i, "exp_avg_sq", p0);
  Tensor step1 = step + 1.0;
  Tensor m1 = m + (grad - m) * (1.0 - b1);
  Tensor v1 = v * b2 + grad * grad * (1.0 - b2);
  // per-step scalars in the step count's dtype, computed once (contiguous: not per element)
  Tensor b1t = Tensor::full_on({}, b1, step.dtype(), p0.device());
  Tensor b2t = Tensor::full_on({}, b2, step.dtype(), p0.device());
  Tensor step_size = (lr / (1.0 - b1t.pow(step1))).cast(t).contiguous();
  // 1 / sqrt(1 - beta2^step): a multiply per element where PyTorch divides (the update is the
  // same but for the last bit; a vector division costs as much as the square root)
  Tensor inv_bc2_sqrt = (1.0 / (1.0 - b2t.pow(step1)).sqrt()).cast(t).contiguous();
  Tensor second = v1;
  if (opt_.amsgrad) {
    Tensor& vmax = state(i, "max_exp_avg_sq", p0);
    second = vmax.maximum(v1);
    writes.emplace_back(vmax, second);
  }
  Tensor denom = second.sqrt() * inv_bc2_sqrt + opt_.eps;
  writes.emplace_back(step, step1);
  writes.emplace_back(m, m1);
  writes.emplace_back(v, v1);
  writes.emplace_back(p0, p - step_size * (m1 / denom));
}

TG_API AdamWOptions::operator AdamOptions() const {
  return AdamOptions{lr, betas, eps, weight_decay, amsgrad, maximize};
}

TG_API AdamW::AdamW(std::vector<Tensor> params, AdamWOptions o)
    : AdamW(one_group(std::move(params)), o) {}

TG_API AdamW::AdamW(std::vector<ParamGroup> groups, AdamWOptions o)
    : Adam(std::move(groups), o, true, "AdamW") {}

} // namespace tg::optim
