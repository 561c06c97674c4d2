#pragma once
// Adam and AdamW: torch.optim.Adam / AdamW's single-tensor update, with amsgrad.
#include "optimizer.hpp"

namespace tg::optim {

struct AdamOptions {
  double lr = 1e-3;
  std::pair<double, double> betas = {0.9, 0.999};
  double eps = 1e-8;
  double weight_decay = 0;
  bool amsgrad = false;
  bool maximize = false;
};

/// step += 1; g = grad (+ weight_decay * p for Adam); m = lerp(m, g, 1 - beta1);
/// v = beta2 * v + (1 - beta2) * g^2; p = p - lr / (1 - beta1^step) * m / (sqrt(v) / sqrt(1 -
/// beta2^step) + eps) (with amsgrad, the running maximum of v). AdamW first decays p = p * (1 - lr
/// * weight_decay).
class Adam : public Optimizer {
public:
  Adam(std::vector<Tensor> params, AdamOptions o = {});
  Adam(std::vector<ParamGroup> groups, AdamOptions o = {});
  const AdamOptions& options() const;

protected:
  Adam(std::vector<ParamGroup> groups, AdamOptions o, bool decoupled, const char* name);

  void update(std::size_t g, std::size_t i, const Tensor& p0, const Tensor& grad0,
              std::vector<std::pair<Tensor, Tensor>>& writes) override;

  AdamOptions opt_;
  bool decoupled_;
};

/// AdamW's options: Adam's, with weight_decay defaulting to 1e-2 as in PyTorch.
struct AdamWOptions {
  double lr = 1e-3;
  std::pair<double, double> betas = {0.9, 0.999};
  double eps = 1e-8;
  double weight_decay = 1e-2;
  bool amsgrad = false;
  bool maximize = false;
  operator AdamOptions() const;
};
/// Adam with decoupled weight decay.
class AdamW : public Adam {
public:
  AdamW(std::vector<Tensor> params, AdamWOptions o = {});
  AdamW(std::vector<ParamGroup> groups, AdamWOptions o = {});
};

} // namespace tg::optim
