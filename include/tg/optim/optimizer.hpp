#pragma once
// optim::Optimizer: parameter groups, a learning rate held in a tensor, state tensors, and one
// tg::assign per step that writes every parameter and every state tensor in place.
//
// Everything a step reads or writes lives in device buffers that keep their identity (the
// parameters, the moments, a step counter per parameter, a 0-d float64 learning rate per group
// that set_lr() overwrites), so a training step captured by tg::jit replays correctly:
//
//   auto step = tg::jit([&](tg::Tensor x, tg::Tensor y) {
//     opt.zero_grad();                       // gradients become undefined: fresh each step
//     tg::Tensor loss = tg::nn::F::cross_entropy(model(x), y);
//     loss.realize();                        // the loss before the parameters change
//     loss.backward();
//     opt.step();                            // one tg::assign for all parameters and state
//     return loss;
//   });
//
// Hyperparameters other than the learning rate (momentum, betas, weight decay) are constants of
// the captured kernels: change them only between captures.
#include "../state/state_dict.hpp"
#include "../util/function.hpp"

namespace tg::optim {

/// A group of parameters with its own learning rate and weight decay (unset: the optimizer's).
struct ParamGroup {
  std::vector<Tensor> params;
  std::optional<double> lr = std::nullopt;
  std::optional<double> weight_decay = std::nullopt;
};

namespace detail {
/// Overwrites a 0-d buffer with a host value (no kernel).
TG_API void write_scalar(const Tensor& t, double v);
TG_API Tensor scalar_buffer(double v, DType t, const std::string& device);
TG_API void check_hyper(bool ok, const std::string& msg);
} // namespace detail

class Optimizer {
public:
  TG_API virtual ~Optimizer();
  Optimizer(const Optimizer&) = delete;
  Optimizer& operator=(const Optimizer&) = delete;

  /// One update of every parameter that has a gradient: one tg::assign for the parameters and
  /// the optimizer's state together. The gradients are realized in the same schedule (stored as
  /// the kernels compute them): a lazy gradient would be recomputed from the updated parameters
  /// when read after the step, and it references its own parameter (a cycle of shared pointers
  /// that would outlive the model).
  void step();
  /// Sets every gradient to undefined (zero_grad(set_to_none=True), PyTorch's default).
  void zero_grad();

  std::size_t num_groups() const;
  const std::vector<Tensor>& params(std::size_t group = 0) const;
  double lr(std::size_t group = 0) const;
  /// The learning rate the group started with (the base of LR schedulers).
  double initial_lr(std::size_t group = 0) const;
  double weight_decay(std::size_t group = 0) const;
  /// The 0-d tensor the update kernels read the learning rate from (float32, or float64 where a
  /// parameter of the group is float64).
  const Tensor& lr_tensor(std::size_t group = 0) const;
  /// Sets the learning rate of every group (writes the lr tensors; no recapture needed).
  void set_lr(double lr);
  void set_lr(std::size_t group, double lr);

  /// The state tensors by name ("state.<param index>.<name>") and each group's learning rate
  /// ("param_groups.<group>.lr"): save it with safetensors to resume training.
  StateDict state_dict() const;
  /// Restores what state_dict() returned (every key must be present with its shape).
  void load_state_dict(const StateDict& sd);

protected:
  struct Group {
    std::vector<Tensor> params;
    double lr = 0, initial_lr = 0, weight_decay = 0;
    Tensor lr_t;
  };

  Optimizer(std::vector<ParamGroup> groups, double lr, double weight_decay, const char* name);
  static std::vector<ParamGroup> one_group(std::vector<Tensor> params);

  /// Appends (target, new value) pairs for parameter `p` (flat index `index`) of group `g`.
  virtual void update(std::size_t g, std::size_t index, const Tensor& p, const Tensor& grad,
                      std::vector<std::pair<Tensor, Tensor>>& writes) = 0;

  /// A state tensor of parameter `index`, created as a realized buffer on first use.
  Tensor& state(std::size_t index, const std::string& name, const Tensor& like, double init = 0,
                std::optional<DType> dtype = std::nullopt, bool scalar = false);
  /// Creates every state tensor up front (before a capture, so none is made while capturing).
  void init_state(tg::detail::FunctionRef<void(std::size_t, const Tensor&)> make);
  const Group& group_at(std::size_t g) const;
  /// The dtype of scalar state (a step count; the learning rate): float32 as in PyTorch, float64
  /// beside float64 parameters. Every update casts it to its parameter's dtype, and devices
  /// without 64-bit types (WEBGPU, an exported WebGPU step) can hold it.
  static DType scalar_dtype(const Tensor& p);
  /// The group's learning rate as a 0-d tensor of the parameter's dtype.
  Tensor lr_of(std::size_t g, const Tensor& p) const;

  std::vector<Group> groups_;
  std::vector<std::vector<std::pair<std::string, Tensor>>> state_;
};

} // namespace tg::optim
