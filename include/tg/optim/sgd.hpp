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
  SGD(std::vector<Tensor> params, SGDOptions o);
  SGD(std::vector<ParamGroup> groups, SGDOptions o);
  const SGDOptions& options() const;

protected:
  void update(std::size_t g, std::size_t i, const Tensor& p, const Tensor& grad0,
              std::vector<std::pair<Tensor, Tensor>>& writes) override;

private:
  SGDOptions opt_;
};

} // namespace tg::optim
