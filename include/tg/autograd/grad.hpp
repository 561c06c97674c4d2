#pragma once
// tg::grad (torch.autograd.grad); Tensor::backward is a member. Both are defined, over the engine
// of autograd/backward.hpp, in tg/impl/autograd.hpp.
#include "../tensor/class.hpp"

namespace tg {

/// torch.autograd.grad: the gradients of `outputs` (scalars, or weighted by `grad_outputs`)
/// with respect to `inputs`, without touching any .grad().
TG_API std::vector<Tensor> grad(const std::vector<Tensor>& outputs,
                                const std::vector<Tensor>& inputs,
                                std::vector<Tensor> grad_outputs = {},
                                std::source_location loc = std::source_location::current());

} // namespace tg
