#pragma once
// Losses (torch.nn.functional's, with the same reductions and defaults) and their module forms.
// Class-index targets are turned into one-hot masks on the device (no host read of the labels,
// so a training step stays capturable by tg::jit); a target outside [0, C) other than
// ignore_index contributes nothing instead of raising as in PyTorch.
#include "functional.hpp"

namespace tg::nn::functional {

namespace detail {
TG_API Tensor reduce(const Tensor& loss, const std::string& reduction, const char* op, Loc loc);
TG_API void same_shape(const Tensor& a, const Tensor& b, const char* op, Loc loc);
/// Class dim (1, or 0 for a single sample) moved last: [N, d..., C].
TG_API Tensor classes_last(const Tensor& x);
TG_API void check_class_target(const Tensor& input, const Tensor& target, const char* op, Loc loc);
/// (-logp[target] * w[target], w[target] masked by ignore_index) for log-probabilities [..., C].
TG_API std::pair<Tensor, Tensor> pick(const Tensor& logp_last, const Tensor& target,
                                      const Tensor& weight, std::int64_t ignore_index, Loc loc);
} // namespace detail

TG_API Tensor mse_loss(const Tensor& input, const Tensor& target,
                       const std::string& reduction = "mean", Loc loc = Loc::current());
TG_API Tensor l1_loss(const Tensor& input, const Tensor& target,
                      const std::string& reduction = "mean", Loc loc = Loc::current());

/// Negative log likelihood of log-probabilities input [N, C, d...] (or [C]) at class indices
/// target [N, d...]; "mean" divides by the summed weights of the targets that are not ignored.
TG_API Tensor nll_loss(const Tensor& input, const Tensor& target, const Tensor& weight = Tensor(),
                       std::int64_t ignore_index = -100, const std::string& reduction = "mean",
                       Loc loc = Loc::current());

/// Cross entropy of logits input [N, C, d...] (or [C]) with class indices target [N, d...]
/// (integers) or class probabilities (floats, the input's shape). label_smoothing mixes the
/// target with the uniform distribution, as in PyTorch.
TG_API Tensor cross_entropy(const Tensor& input, const Tensor& target,
                            const Tensor& weight = Tensor(), std::int64_t ignore_index = -100,
                            const std::string& reduction = "mean", double label_smoothing = 0,
                            Loc loc = Loc::current());

/// -w (t log(x) + (1 - t) log(1 - x)) for probabilities x, with the logs clamped at -100.
TG_API Tensor binary_cross_entropy(const Tensor& input, const Tensor& target,
                                   const Tensor& weight = Tensor(),
                                   const std::string& reduction = "mean", Loc loc = Loc::current());

/// binary_cross_entropy(sigmoid(x), t) computed stably; pos_weight weighs the positive term.
TG_API Tensor binary_cross_entropy_with_logits(const Tensor& input, const Tensor& target,
                                               const Tensor& weight = Tensor(),
                                               const std::string& reduction = "mean",
                                               const Tensor& pos_weight = Tensor(),
                                               Loc loc = Loc::current());

} // namespace tg::nn::functional

namespace tg::nn {

/// Module-style losses: CrossEntropyLoss(...)(input, target).
struct CrossEntropyLoss {
  Tensor weight{};
  std::int64_t ignore_index = -100;
  std::string reduction = "mean";
  double label_smoothing = 0;
  Tensor operator()(const Tensor& input, const Tensor& target) const {
    return F::cross_entropy(input, target, weight, ignore_index, reduction, label_smoothing);
  }
};
struct NLLLoss {
  Tensor weight{};
  std::int64_t ignore_index = -100;
  std::string reduction = "mean";
  Tensor operator()(const Tensor& input, const Tensor& target) const {
    return F::nll_loss(input, target, weight, ignore_index, reduction);
  }
};
struct MSELoss {
  std::string reduction = "mean";
  Tensor operator()(const Tensor& input, const Tensor& target) const {
    return F::mse_loss(input, target, reduction);
  }
};
struct L1Loss {
  std::string reduction = "mean";
  Tensor operator()(const Tensor& input, const Tensor& target) const {
    return F::l1_loss(input, target, reduction);
  }
};
struct BCELoss {
  Tensor weight{};
  std::string reduction = "mean";
  Tensor operator()(const Tensor& input, const Tensor& target) const {
    return F::binary_cross_entropy(input, target, weight, reduction);
  }
};
struct BCEWithLogitsLoss {
  Tensor weight{};
  std::string reduction = "mean";
  Tensor pos_weight{};
  Tensor operator()(const Tensor& input, const Tensor& target) const {
    return F::binary_cross_entropy_with_logits(input, target, weight, reduction, pos_weight);
  }
};

} // namespace tg::nn
