#pragma once
// What optim/optimizer.hpp declares (TG_API, config.hpp).
#include <algorithm>

#include "../../tg.hpp"

namespace tg::optim::detail {

TG_API void write_scalar(const Tensor& t, double v) {
  const LazyPtr& n = t.lazy();
  if (n->op != Op::Buffer) throw error("tg.optim: internal: a scalar state tensor is not a buffer");
  unsigned char value[8];
  tg::detail::convert_values(&v, DType::Float64, value, t.dtype(), 1);
  n->buffer->device->copy_in(n->buffer->ptr, value, std::size_t(itemsize(t.dtype())));
}

TG_API Tensor scalar_buffer(double v, DType t, const std::string& device) {
  return Tensor::from_data(std::vector<double>{v}, Shape{}, TensorOptions(t, device));
}

TG_API void check_hyper(bool ok, const std::string& msg) {
  if (!ok) throw error("tg.optim: " + msg);
}

} // namespace tg::optim::detail

namespace tg::optim {

TG_API Optimizer::~Optimizer() = default;

TG_API void Optimizer::step() {
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

TG_API void Optimizer::zero_grad() {
  for (Group& g : groups_)
    for (Tensor& p : g.params) p.set_grad(Tensor());
}

TG_API std::size_t Optimizer::num_groups() const { return groups_.size(); }

TG_API const std::vector<Tensor>& Optimizer::params(std::size_t group) const {
  return group_at(group).params;
}

TG_API double Optimizer::lr(std::size_t group) const { return group_at(group).lr; }

TG_API double Optimizer::initial_lr(std::size_t group) const { return group_at(group).initial_lr; }

TG_API double Optimizer::weight_decay(std::size_t group) const {
  return group_at(group).weight_decay;
}

TG_API const Tensor& Optimizer::lr_tensor(std::size_t group) const { return group_at(group).lr_t; }

TG_API void Optimizer::set_lr(double lr) {
  for (std::size_t g = 0; g < groups_.size(); ++g) set_lr(g, lr);
}

TG_API void Optimizer::set_lr(std::size_t group, double lr) {
  detail::check_hyper(lr >= 0, "invalid learning rate " + std::to_string(lr));
  Group& g = groups_.at(group);
  g.lr = lr;
  detail::write_scalar(g.lr_t, lr);
}

TG_API StateDict Optimizer::state_dict() const {
  StateDict sd;
  for (std::size_t i = 0; i < state_.size(); ++i)
    for (const auto& [name, t] : state_[i]) sd.insert("state." + std::to_string(i) + "." + name, t);
  for (std::size_t g = 0; g < groups_.size(); ++g)
    sd.insert("param_groups." + std::to_string(g) + ".lr", groups_[g].lr_t);
  return sd;
}

TG_API void Optimizer::load_state_dict(const StateDict& sd) {
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

TG_API Optimizer::Optimizer(std::vector<ParamGroup> groups, double lr, double weight_decay,
                            const char* name) {
  detail::check_hyper(lr >= 0, std::string(name) + ": invalid learning rate " + std::to_string(lr));
  detail::check_hyper(weight_decay >= 0,
                      std::string(name) + ": invalid weight_decay " + std::to_string(weight_decay));
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
      if (!p.defined()) throw error(std::string("tg.optim.") + name + ": a parameter is undefined");
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

TG_API std::vector<ParamGroup> Optimizer::one_group(std::vector<Tensor> params) {
  return {ParamGroup{std::move(params)}};
}

TG_API Tensor& Optimizer::state(std::size_t index, const std::string& name, const Tensor& like,
                                double init, std::optional<DType> dtype, bool scalar) {
  for (auto& [k, t] : state_[index])
    if (k == name) return t;
  DType t = dtype.value_or(like.dtype());
  Shape s = scalar ? Shape{} : like.sym_shape();
  Tensor v = Tensor::full_on(s, init, t, like.device()).contiguous().realize();
  state_[index].emplace_back(name, v);
  return state_[index].back().second;
}

TG_API void Optimizer::init_state(tg::detail::FunctionRef<void(std::size_t, const Tensor&)> make) {
  std::size_t index = 0;
  for (const Group& g : groups_)
    for (const Tensor& p : g.params) make(index++, p);
}

TG_API auto Optimizer::group_at(std::size_t g) const -> const Group& {
  if (g >= groups_.size())
    throw error("tg.optim: group " + std::to_string(g) + " does not exist (" +
                std::to_string(groups_.size()) + " groups)");
  return groups_[g];
}

TG_API DType Optimizer::scalar_dtype(const Tensor& p) {
  return p.dtype() == DType::Float64 ? DType::Float64 : DType::Float32;
}

TG_API Tensor Optimizer::lr_of(std::size_t g, const Tensor& p) const {
  return groups_[g].lr_t.cast(p.dtype());
}

} // namespace tg::optim
