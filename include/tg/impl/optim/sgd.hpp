#pragma once
// What optim/sgd.hpp declares (TG_API, config.hpp).
#include "../../tg.hpp"

namespace tg::optim {

TG_API SGD::SGD(std::vector<Tensor> params, SGDOptions o) : SGD(one_group(std::move(params)), o) {}

TG_API SGD::SGD(std::vector<ParamGroup> groups, SGDOptions o)
    : Optimizer(std::move(groups), o.lr, o.weight_decay, "SGD"), opt_(o) {
  detail::check_hyper(o.momentum >= 0, "SGD: invalid momentum " + std::to_string(o.momentum));
  detail::check_hyper(!o.nesterov || (o.momentum > 0 && o.dampening == 0),
                      "SGD: Nesterov momentum requires a momentum and zero dampening");
  // the momentum buffer starts at zero: buf = momentum * 0 + g is g exactly when there is no
  // dampening; with dampening a step counter tells the first step apart
  init_state([&](std::size_t i, const Tensor& p) {
    if (opt_.momentum == 0) return;
    state(i, "momentum_buffer", p);
    if (opt_.dampening != 0) state(i, "step", p, 0, DType::Float32, true);
  });
}

TG_API const SGDOptions& SGD::options() const { return opt_; }

TG_API void SGD::update(std::size_t g, std::size_t i, const Tensor& p, const Tensor& grad0,
                        std::vector<std::pair<Tensor, Tensor>>& writes) {
  Tensor grad = opt_.maximize ? -grad0 : grad0;
  double wd = groups_[g].weight_decay;
  if (wd != 0) grad = grad + p * wd;
  if (opt_.momentum != 0) {
    Tensor& buf = state(i, "momentum_buffer", p);
    Tensor next = buf * opt_.momentum + grad * (1.0 - opt_.dampening);
    if (opt_.dampening != 0) {
      Tensor& step = state(i, "step", p, 0, DType::Float32, true);
      next = where(step == 0.0f, grad, next);
      writes.emplace_back(step, step + 1.0f);
    }
    writes.emplace_back(buf, next);
    grad = opt_.nesterov ? grad + next * opt_.momentum : next;
  }
  writes.emplace_back(p, p - lr_of(g, p) * grad);
}

} // namespace tg::optim
