#pragma once
// tg::grad (torch.autograd.grad); Tensor::backward is a member. Both are defined, over the engine
// of autograd/backward.hpp, in tg/impl/autograd.hpp.
#include "../tensor/class.hpp"
#include "../util/function.hpp"

namespace tg {

/// torch.autograd.grad: the gradients of `outputs` (scalars, or weighted by `grad_outputs`)
/// with respect to `inputs`, without touching any .grad().
TG_API std::vector<Tensor> grad(const std::vector<Tensor>& outputs,
                                const std::vector<Tensor>& inputs,
                                std::vector<Tensor> grad_outputs = {},
                                std::source_location loc = std::source_location::current());

namespace detail {
/// Runs `hook` after every Tensor::backward() has added its gradients to .grad(), in the order
/// hooks were added (nn::DistributedDataParallel averages gradients across processes there).
/// Returns what remove_backward_hook takes.
TG_API std::size_t add_backward_hook(Function<void()> hook);
TG_API void remove_backward_hook(std::size_t id);
} // namespace detail

} // namespace tg
