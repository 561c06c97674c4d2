#pragma once
// Autograd's entry points (declared in tensor/class.hpp and autograd/grad.hpp) over the engine
// in autograd/backward.hpp.
#include <mutex>

#include "../autograd/backward.hpp"
#include "../util/rc.hpp"

namespace tg {

namespace detail {
struct BackwardHooks {
  std::mutex m;
  std::size_t next = 1;
  std::vector<std::pair<std::size_t, Rc<Function<void()>>>> hooks;
};
inline BackwardHooks& backward_hooks() {
  static BackwardHooks h;
  return h;
}

TG_API std::size_t add_backward_hook(Function<void()> hook) {
  BackwardHooks& h = backward_hooks();
  std::lock_guard<std::mutex> lock(h.m);
  h.hooks.push_back({h.next, make_rc<Function<void()>>(std::move(hook))});
  return h.next++;
}

TG_API void remove_backward_hook(std::size_t id) {
  BackwardHooks& h = backward_hooks();
  std::lock_guard<std::mutex> lock(h.m);
  std::erase_if(h.hooks, [id](const auto& e) { return e.first == id; });
}
} // namespace detail

TG_API Tensor& Tensor::requires_grad_(bool on, Loc loc) {
  if (on && !is_float(dtype()))
    detail::fail<dtype_error>("requires_grad_",
                              std::string("only floating point tensors can require grad, got ") +
                                  dtype_name(dtype()),
                              loc);
  if (n_->grad_fn)
    detail::fail<error>("requires_grad_",
                        "only leaf tensors can be made to require grad (use detach())", loc);
  n_->requires_grad = on;
  return *this;
}

TG_API Tensor Tensor::detach() const {
  if (!requires_grad()) return *this;
  if (node().op == Op::Buffer) {
    Tensor r = make(Op::Buffer, dtype(), sym_shape(), {}, device());
    r.n_->buffer = n_->buffer;
    return r;
  }
  no_grad guard;
  return make(Op::Contiguous, dtype(), sym_shape(), {n_}, device());
}

TG_API void Tensor::backward(const Tensor& gradient, Loc loc) const {
  if (!requires_grad())
    detail::fail<error>("backward",
                        "the tensor does not require grad (no input of it called requires_grad_())",
                        loc);
  Tensor seed = gradient;
  if (!seed.defined()) {
    if (numel() != 1)
      detail::fail<shape_error>(
          "backward",
          "needs a gradient for a non-scalar tensor of shape " + detail::shape_of(*this), loc);
    seed = full_on(sym_shape(), 1, dtype(), device());
  } else if (!(seed.sym_shape() == sym_shape())) {
    detail::fail<shape_error>("backward",
                              "gradient of shape " + detail::shape_of(seed) +
                                  " for a tensor of shape " + detail::shape_of(*this),
                              loc);
  }
  detail::gradients({*this}, {seed.cast(dtype())}, {}, true);
  std::vector<Rc<detail::Function<void()>>> hooks;
  {
    detail::BackwardHooks& h = detail::backward_hooks();
    std::lock_guard<std::mutex> lock(h.m);
    for (const auto& e : h.hooks) hooks.push_back(e.second);
  }
  for (const auto& hook : hooks) (*hook)();
}

TG_API std::vector<Tensor> grad(const std::vector<Tensor>& outputs,
                                const std::vector<Tensor>& inputs, std::vector<Tensor> grad_outputs,
                                std::source_location loc) {
  if (grad_outputs.empty())
    for (const Tensor& o : outputs) {
      if (o.numel() != 1)
        detail::fail<shape_error>(
            "grad", "needs grad_outputs for a non-scalar output of shape " + detail::shape_of(o),
            loc);
      grad_outputs.push_back(Tensor::full_on(o.sym_shape(), 1, o.dtype(), o.device()));
    }
  std::vector<LazyPtr> wanted;
  for (const Tensor& i : inputs) {
    if (!i.requires_grad()) detail::fail<error>("grad", "an input does not require grad", loc);
    wanted.push_back(i.lazy());
  }
  std::vector<Tensor> gs = detail::gradients(outputs, grad_outputs, wanted, false);
  for (std::size_t k = 0; k < gs.size(); ++k)
    if (!gs[k].defined()) gs[k] = zeros_like(inputs[k]);
  return gs;
}

} // namespace tg
