#pragma once
// Gradient clipping (torch.nn.utils.clip_grad_norm_ / clip_grad_value_), lazily: the scaled
// gradients are new lazy tensors, so clipping adds no synchronization to a training step.
#include "optimizer.hpp"

namespace tg::optim {

/// Scales the gradients of `params` so their total norm is at most max_norm:
/// g *= min(1, max_norm / (total_norm + 1e-6)). Returns the total norm before clipping (a lazy
/// 0-d tensor). norm_type may be INFINITY. error_if_nonfinite reads the norm on the host.
TG_API Tensor clip_grad_norm_(const std::vector<Tensor>& params, double max_norm,
                              double norm_type = 2.0, bool error_if_nonfinite = false);

/// Clamps every gradient to [-clip_value, clip_value].
TG_API void clip_grad_value_(const std::vector<Tensor>& params, double clip_value);

} // namespace tg::optim
