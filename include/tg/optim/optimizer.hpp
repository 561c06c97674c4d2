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
#include <cstring>
#include <functional>

#include "../state/state_dict.hpp"

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
  virtual ~Optimizer() = default;
  Optimizer(const Optimizer&) = delete;
  Optimizer& operator=(const Optimizer&) = delete;

  /// One update of every parameter that has a gradient: one tg::assign for the parameters and
  /// the optimizer's state together. The gradients are realized in the same schedule (stored as
  /// the kernels compute them): a lazy gradient would be recomputed from the updated parameters
  /// when read after the step, and it references its own parameter (a cycle of shared pointers
  /// that would outlive the model).
  void step() {
    no_grad guard;
    std::vector<std::pair<Tensor, Tensor>> writes;
    std::vector<Tensor> grads;
    std::size_t index = 0;
    for (std::size_t g = 0; g < groups_.size(); ++g)
      for (const Tensor& p : groups_[g].params) {
        Tensor grad = p.grad();
        if (grad.defined()) {
          update(g, index, p, grad.detach(), writes);
          grads.push_back(grad);
        }
        ++index;
      }
    if (!writes.empty()) tg::assign(writes, grads);
  }
  /// Sets every gradient to undefined (zero_grad(set_to_none=True), PyTorch's default).
  void zero_grad() {
    for (Group& g : groups_)
      for (Tensor& p : g.params) p.set_grad(Tensor());
  }

  std::size_t num_groups() const { return groups_.size(); }
  const std::vector<Tensor>& params(std::size_t group = 0) const { return group_at(group).params; }
  double lr(std::size_t group = 0) const { return group_at(group).lr; }
  /// The learning rate the group started with (the base of LR schedulers).
  double initial_lr(std::size_t group = 0) const { return group_at(group).initial_lr; }
  double weight_decay(std::size_t group = 0) const { return group_at(group).weight_decay; }
  /// The 0-d tensor the update kernels read the learning rate from (float32, or float64 where a
  /// parameter of the group is float64).
  const Tensor& lr_tensor(std::size_t group = 0) const { return group_at(group).lr_t; }
  /// Sets the learning rate of every group (writes the lr tensors; no recapture needed).
  void set_lr(double lr) {
    for (std::size_t g = 0; g < groups_.size(); ++g) set_lr(g, lr);
  }
  void set_lr(std::size_t group, double lr) {
    detail::check_hyper(lr >= 0, "invalid learning rate " + std::to_string(lr));
    Group& g = groups_.at(group);
    g.lr = lr;
    detail::write_scalar(g.lr_t, lr);
  }

  /// The state tensors by name ("state.<param index>.<name>") and each group's learning rate
  /// ("param_groups.<group>.lr"): save it with safetensors to resume training.
  StateDict state_dict() const {
    StateDict sd;
    for (std::size_t i = 0; i < state_.size(); ++i)
      for (const auto& [name, t] : state_[i])
        sd.insert("state." + std::to_string(i) + "." + name, t);
    for (std::size_t g = 0; g < groups_.size(); ++g)
      sd.insert("param_groups." + std::to_string(g) + ".lr", groups_[g].lr_t);
    return sd;
  }
  /// Restores what state_dict() returned (every key must be present with its shape).
  void load_state_dict(const StateDict& sd) {
    std::vector<std::pair<Tensor, Tensor>> writes;
    std::string missing;
    for (const auto& [k, t] : state_dict()) {
      const Tensor* v = sd.find(k);
      if (!v || v->shape() != t.shape()) {
        missing += (missing.empty() ? "" : ", ") + k;
        continue;
      }
      writes.emplace_back(t, v->to(t.device()).detach());
    }
    if (!missing.empty())
      throw error("tg.optim.load_state_dict: missing or mis-shaped key(s): " + missing);
    no_grad guard;
    if (!writes.empty()) tg::assign(writes);
    for (std::size_t g = 0; g < groups_.size(); ++g) groups_[g].lr = groups_[g].lr_t.item<double>();
  }

protected:
  struct Group {
    std::vector<Tensor> params;
    double lr = 0, initial_lr = 0, weight_decay = 0;
    Tensor lr_t;
  };

  Optimizer(std::vector<ParamGroup> groups, double lr, double weight_decay, const char* name) {
    detail::check_hyper(lr >= 0,
                        std::string(name) + ": invalid learning rate " + std::to_string(lr));
    detail::check_hyper(weight_decay >= 0, std::string(name) + ": invalid weight_decay " +
                                               std::to_string(weight_decay));
    if (groups.empty()) throw error(std::string("tg.optim.") + name + ": got no parameter groups");
    std::vector<const LazyNode*> seen;
    for (ParamGroup& pg : groups) {
      Group g;
      g.lr = g.initial_lr = pg.lr.value_or(lr);
      g.weight_decay = pg.weight_decay.value_or(weight_decay);
      detail::check_hyper(g.lr >= 0,
                          std::string(name) + ": invalid learning rate " + std::to_string(g.lr));
      detail::check_hyper(g.weight_decay >= 0, std::string(name) + ": invalid weight_decay " +
                                                   std::to_string(g.weight_decay));
      for (const Tensor& p : pg.params) {
        if (!p.defined())
          throw error(std::string("tg.optim.") + name + ": a parameter is undefined");
        if (p.lazy()->op != Op::Buffer)
          throw error(std::string("tg.optim.") + name +
                      ": parameters must be realized tensors that own their buffer (updated in "
                      "place); got a lazy "
                      "tensor of shape " +
                      tg::detail::shape_of(p) + " (call contiguous().realize() first)");
        if (!is_float(p.dtype()))
          throw dtype_error(std::string("tg.optim.") + name +
                            ": parameters must be floating point, got " + dtype_name(p.dtype()));
        if (std::find(seen.begin(), seen.end(), p.lazy().get()) != seen.end())
          throw error(std::string("tg.optim.") + name +
                      ": a parameter appears twice (in one group or in two groups)");
        seen.push_back(p.lazy().get());
        g.params.push_back(p);
      }
      std::string dev = g.params.empty() ? default_device() : g.params[0].device();
      bool wide = false;
      for (const Tensor& p : g.params) wide = wide || p.dtype() == DType::Float64;
      g.lr_t = detail::scalar_buffer(g.lr, wide ? DType::Float64 : DType::Float32, dev);
      groups_.push_back(std::move(g));
    }
    state_.resize(seen.size());
  }
  static std::vector<ParamGroup> one_group(std::vector<Tensor> params) {
    return {ParamGroup{std::move(params)}};
  }

  /// Appends (target, new value) pairs for parameter `p` (flat index `index`) of group `g`.
  virtual void update(std::size_t g, std::size_t index, const Tensor& p, const Tensor& grad,
                      std::vector<std::pair<Tensor, Tensor>>& writes) = 0;

  /// A state tensor of parameter `index`, created as a realized buffer on first use.
  Tensor& state(std::size_t index, const std::string& name, const Tensor& like, double init = 0,
                std::optional<DType> dtype = std::nullopt, bool scalar = false) {
    for (auto& [k, t] : state_[index])
      if (k == name) return t;
    DType t = dtype.value_or(like.dtype());
    Shape s = scalar ? Shape{} : like.sym_shape();
    Tensor v = Tensor::full_on(s, init, t, like.device()).contiguous().realize();
    state_[index].emplace_back(name, v);
    return state_[index].back().second;
  }
  /// Creates every state tensor up front (before a capture, so none is made while capturing).
  void init_state(const std::function<void(std::size_t, const Tensor&)>& make) {
    std::size_t index = 0;
    for (const Group& g : groups_)
      for (const Tensor& p : g.params) make(index++, p);
  }
  const Group& group_at(std::size_t g) const {
    if (g >= groups_.size())
      throw error("tg.optim: group " + std::to_string(g) + " does not exist (" +
                  std::to_string(groups_.size()) + " groups)");
    return groups_[g];
  }
  /// The dtype of scalar state (a step count; the learning rate): float32 as in PyTorch, float64
  /// beside float64 parameters. Every update casts it to its parameter's dtype, and devices
  /// without 64-bit types (WEBGPU, an exported WebGPU step) can hold it.
  static DType scalar_dtype(const Tensor& p) {
    return p.dtype() == DType::Float64 ? DType::Float64 : DType::Float32;
  }
  /// The group's learning rate as a 0-d tensor of the parameter's dtype.
  Tensor lr_of(std::size_t g, const Tensor& p) const { return groups_[g].lr_t.cast(p.dtype()); }

  std::vector<Group> groups_;
  std::vector<std::vector<std::pair<std::string, Tensor>>> state_;
};

} // namespace tg::optim
