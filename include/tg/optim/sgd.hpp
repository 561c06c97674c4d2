#pragma once
// SGD with momentum, dampening, Nesterov momentum and weight decay: torch.optim.SGD's update.
#include "optimizer.hpp"

namespace tg::optim {

struct SGDOptions {
  double lr = 1e-3;
  double momentum = 0;
  double dampening = 0;
  double weight_decay = 0;
  bool nesterov = false;
  bool maximize = false;
};

/// g = grad + weight_decay * p; with momentum: buf = g on the first step, then
/// buf = momentum * buf + (1 - dampening) * g, and g = buf (or g + momentum * buf with nesterov);
/// p = p - lr * g.
class SGD : public Optimizer {
public:
  SGD(std::vector<Tensor> params, SGDOptions o) : SGD(one_group(std::move(params)), o) {}
  SGD(std::vector<ParamGroup> groups, SGDOptions o)
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
  const SGDOptions& options() const { return opt_; }

protected:
  void update(std::size_t g, std::size_t i, const Tensor& p, const Tensor& grad0,
              std::vector<std::pair<Tensor, Tensor>>& writes) override {
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

private:
  SGDOptions opt_;
};

} // namespace tg::optim
