#pragma once
// Learning-rate schedules (torch.optim.lr_scheduler), in closed form: each step() sets every
// group's learning rate to f(epoch, initial lr) through Optimizer::set_lr, which writes the lr
// tensor the update kernels read (so a step captured by tg::jit follows the schedule).
// As in PyTorch, constructing a scheduler applies its epoch-0 rate. Each also writes f in tensor
// ops (lr_expr): a training step exported with tg::export_model that calls step() computes its
// next rate itself.
#include <algorithm>
#include <cmath>

#include "optimizer.hpp"

namespace tg::optim {

class LRScheduler {
public:
  virtual ~LRScheduler() = default;
  /// Advances one epoch (or iteration) and sets the learning rates. Inside a method that
  /// tg::export_model traces, records that instead: the exported method advances its epoch
  /// counter and sets each group's rate to lr_expr of it, with the method's other updates
  /// (declare both as state: spec.state(opt.state_dict(), "optim.") and
  /// spec.state(scheduler.state_dict(), "sched.")).
  void step() {
    if (tg::detail::active_export()) return record_step();
    ++last_epoch_;
    detail::write_scalar(epoch_, double(last_epoch_));
    apply();
  }
  std::int64_t last_epoch() const { return last_epoch_; }
  /// The learning rates the last step set, per group.
  std::vector<double> get_last_lr() const {
    std::vector<double> r;
    for (std::size_t g = 0; g < opt_->num_groups(); ++g) r.push_back(opt_->lr(g));
    return r;
  }
  /// The rate at `epoch` for a group that started at `base`.
  virtual double lr_at(std::int64_t epoch, double base) const = 0;
  /// The same in tensor ops of `epoch` (a float32 0-d tensor): what an exported step computes.
  virtual Tensor lr_expr(const Tensor& epoch, double base) const = 0;
  /// The epoch counter ("last_epoch", a float32 0-d tensor): the state of an exported step.
  StateDict state_dict() const { return {{"last_epoch", epoch_}}; }
  /// Restores what state_dict() returned, and sets the rates of that epoch.
  void load_state_dict(const StateDict& sd) {
    last_epoch_ = std::llround(sd.at("last_epoch").item<double>());
    detail::write_scalar(epoch_, double(last_epoch_));
    apply();
  }

protected:
  explicit LRScheduler(Optimizer& opt)
      : opt_(&opt), epoch_(detail::scalar_buffer(0, DType::Float32, opt.lr_tensor(0).device())) {}
  /// Called at the end of each derived constructor (epoch 0).
  void start() { apply(); }
  void apply() {
    for (std::size_t g = 0; g < opt_->num_groups(); ++g)
      opt_->set_lr(g, lr_at(last_epoch_, opt_->initial_lr(g)));
  }
  void record_step() {
    Tensor next = epoch_ + 1.0;
    std::vector<std::pair<Tensor, Tensor>> writes = {{epoch_, next}};
    for (std::size_t g = 0; g < opt_->num_groups(); ++g) {
      const Tensor& lr = opt_->lr_tensor(g);
      writes.emplace_back(lr, lr_expr(next, opt_->initial_lr(g)).cast(lr.dtype()));
    }
    tg::assign(writes);
  }
  /// v as a 0-d tensor beside `epoch`.
  static Tensor constant(const Tensor& epoch, double v) {
    return Tensor::full_on({}, v, epoch.dtype(), epoch.device());
  }
  Optimizer* opt_;
  std::int64_t last_epoch_ = 0;
  Tensor epoch_;
};

/// base * gamma^(epoch / step_size).
class StepLR : public LRScheduler {
public:
  StepLR(Optimizer& opt, std::int64_t step_size_, double gamma_ = 0.1)
      : LRScheduler(opt), step_size(step_size_), gamma(gamma_) {
    if (step_size < 1) throw error("tg.optim.StepLR: step_size must be positive");
    start();
  }
  double lr_at(std::int64_t e, double base) const override {
    return base * std::pow(gamma, double(e / step_size));
  }
  Tensor lr_expr(const Tensor& e, double base) const override { // (+0.5: exact floors)
    return constant(e, gamma).pow(((e + 0.5) / double(step_size)).floor()) * base;
  }
  std::int64_t step_size;
  double gamma;
};

/// base * gamma^(number of milestones <= epoch).
class MultiStepLR : public LRScheduler {
public:
  MultiStepLR(Optimizer& opt, std::vector<std::int64_t> milestones_, double gamma_ = 0.1)
      : LRScheduler(opt), milestones(std::move(milestones_)), gamma(gamma_) {
    std::sort(milestones.begin(), milestones.end());
    start();
  }
  double lr_at(std::int64_t e, double base) const override {
    auto n = std::upper_bound(milestones.begin(), milestones.end(), e) - milestones.begin();
    return base * std::pow(gamma, double(n));
  }
  Tensor lr_expr(const Tensor& e, double base) const override {
    Tensor n = constant(e, 0);
    for (std::int64_t m : milestones) n = n + (e >= double(m)).cast(e.dtype());
    return constant(e, gamma).pow(n) * base;
  }
  std::vector<std::int64_t> milestones;
  double gamma;
};

/// eta_min + (base - eta_min) * (1 + cos(pi * epoch / T_max)) / 2.
class CosineAnnealingLR : public LRScheduler {
public:
  CosineAnnealingLR(Optimizer& opt, std::int64_t T_max_, double eta_min_ = 0)
      : LRScheduler(opt), T_max(T_max_), eta_min(eta_min_) {
    if (T_max < 1) throw error("tg.optim.CosineAnnealingLR: T_max must be positive");
    start();
  }
  double lr_at(std::int64_t e, double base) const override {
    return eta_min +
           (base - eta_min) * (1 + std::cos(3.141592653589793 * double(e) / double(T_max))) / 2;
  }
  Tensor lr_expr(const Tensor& e, double base) const override {
    return ((e * (3.141592653589793 / double(T_max))).cos() + 1.0) * ((base - eta_min) / 2) +
           eta_min;
  }
  std::int64_t T_max;
  double eta_min;
};

/// Linear warm-up: base * (start_factor + (end_factor - start_factor) * min(epoch, total_iters) /
/// total_iters).
class LinearLR : public LRScheduler {
public:
  LinearLR(Optimizer& opt, double start_factor_ = 1.0 / 3, double end_factor_ = 1.0,
           std::int64_t total_iters_ = 5)
      : LRScheduler(opt), start_factor(start_factor_), end_factor(end_factor_),
        total_iters(total_iters_) {
    if (start_factor <= 0 || start_factor > 1 || end_factor < 0 || end_factor > 1)
      throw error("tg.optim.LinearLR: start_factor must be in (0, 1] and end_factor in [0, 1]");
    if (total_iters < 1) throw error("tg.optim.LinearLR: total_iters must be positive");
    start();
  }
  double lr_at(std::int64_t e, double base) const override {
    double f = double(std::min(e, total_iters)) / double(total_iters);
    return base * (start_factor + (end_factor - start_factor) * f);
  }
  Tensor lr_expr(const Tensor& e, double base) const override {
    Tensor f = e.minimum(constant(e, double(total_iters))) / double(total_iters);
    return (f * (end_factor - start_factor) + start_factor) * base;
  }
  double start_factor, end_factor;
  std::int64_t total_iters;
};

/// base * fn(epoch).
class LambdaLR : public LRScheduler {
public:
  LambdaLR(Optimizer& opt, std::function<double(std::int64_t)> fn_)
      : LRScheduler(opt), fn(std::move(fn_)) {
    start();
  }
  double lr_at(std::int64_t e, double base) const override { return base * fn(e); }
  Tensor lr_expr(const Tensor&, double) const override {
    throw export_error("tg.optim.LambdaLR: its rate is a C++ function, which an exported step "
                       "cannot compute; set the rate between calls (the exported API's "
                       "set_weight of optim.param_groups.<g>.lr), or use StepLR, MultiStepLR, "
                       "CosineAnnealingLR, LinearLR or SequentialLR");
  }
  std::function<double(std::int64_t)> fn;
};

/// Schedulers one after another: schedulers[k] runs from milestones[k - 1] on, counting its
/// epochs from there (warm-up then cosine: SequentialLR(opt, {warmup, cosine}, {100})).
class SequentialLR : public LRScheduler {
public:
  SequentialLR(Optimizer& opt, std::vector<std::shared_ptr<LRScheduler>> schedulers_,
               std::vector<std::int64_t> milestones_)
      : LRScheduler(opt), schedulers(std::move(schedulers_)), milestones(std::move(milestones_)) {
    if (schedulers.empty() || milestones.size() + 1 != schedulers.size())
      throw error("tg.optim.SequentialLR: needs one milestone fewer than schedulers");
    start();
  }
  double lr_at(std::int64_t e, double base) const override {
    std::size_t k =
        std::size_t(std::upper_bound(milestones.begin(), milestones.end(), e) - milestones.begin());
    return schedulers[k]->lr_at(k ? e - milestones[k - 1] : e, base);
  }
  Tensor lr_expr(const Tensor& e, double base) const override {
    Tensor r = schedulers[0]->lr_expr(e, base);
    for (std::size_t k = 1; k < schedulers.size(); ++k)
      r = where(e >= double(milestones[k - 1]),
                schedulers[k]->lr_expr(e - double(milestones[k - 1]), base), r);
    return r;
  }
  std::vector<std::shared_ptr<LRScheduler>> schedulers;
  std::vector<std::int64_t> milestones;
};

} // namespace tg::optim
