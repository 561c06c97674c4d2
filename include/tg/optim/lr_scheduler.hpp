#pragma once
// Learning-rate schedules (torch.optim.lr_scheduler), in closed form: each step() sets every
// group's learning rate to f(epoch, initial lr) through Optimizer::set_lr, which writes the lr
// tensor the update kernels read (so a step captured by tg::jit follows the schedule).
// As in PyTorch, constructing a scheduler applies its epoch-0 rate. Each also writes f in tensor
// ops (lr_expr): a training step exported with tg::export_model that calls step() computes its
// next rate itself.
#include "../util/rc.hpp"
#include "optimizer.hpp"

namespace tg::optim {

class LRScheduler {
public:
  TG_API virtual ~LRScheduler();
  /// Advances one epoch (or iteration) and sets the learning rates. Inside a method that
  /// tg::export_model traces, records that instead: the exported method advances its epoch
  /// counter and sets each group's rate to lr_expr of it, with the method's other updates
  /// (declare both as state: spec.state(opt.state_dict(), "optim.") and
  /// spec.state(scheduler.state_dict(), "sched.")).
  void step();
  std::int64_t last_epoch() const;
  /// The learning rates the last step set, per group.
  std::vector<double> get_last_lr() const;
  /// The rate at `epoch` for a group that started at `base`.
  virtual double lr_at(std::int64_t epoch, double base) const = 0;
  /// The same in tensor ops of `epoch` (a float32 0-d tensor): what an exported step computes.
  virtual Tensor lr_expr(const Tensor& epoch, double base) const = 0;
  /// The epoch counter ("last_epoch", a float32 0-d tensor): the state of an exported step.
  StateDict state_dict() const;
  /// Restores what state_dict() returned, and sets the rates of that epoch.
  void load_state_dict(const StateDict& sd);

protected:
  explicit LRScheduler(Optimizer& opt);
  /// Called at the end of each derived constructor (epoch 0).
  void start();
  void apply();
  void record_step();
  /// v as a 0-d tensor beside `epoch`.
  static Tensor constant(const Tensor& epoch, double v);
  Optimizer* opt_;
  std::int64_t last_epoch_ = 0;
  Tensor epoch_;
};

/// base * gamma^(epoch / step_size).
class StepLR : public LRScheduler {
public:
  StepLR(Optimizer& opt, std::int64_t step_size_, double gamma_ = 0.1);
  double lr_at(std::int64_t e, double base) const override;
  Tensor lr_expr(const Tensor& e, double base) const override;
  std::int64_t step_size;
  double gamma;
};

/// base * gamma^(number of milestones <= epoch).
class MultiStepLR : public LRScheduler {
public:
  MultiStepLR(Optimizer& opt, std::vector<std::int64_t> milestones_, double gamma_ = 0.1);
  double lr_at(std::int64_t e, double base) const override;
  Tensor lr_expr(const Tensor& e, double base) const override;
  std::vector<std::int64_t> milestones;
  double gamma;
};

/// eta_min + (base - eta_min) * (1 + cos(pi * epoch / T_max)) / 2.
class CosineAnnealingLR : public LRScheduler {
public:
  CosineAnnealingLR(Optimizer& opt, std::int64_t T_max_, double eta_min_ = 0);
  double lr_at(std::int64_t e, double base) const override;
  Tensor lr_expr(const Tensor& e, double base) const override;
  std::int64_t T_max;
  double eta_min;
};

/// Linear warm-up: base * (start_factor + (end_factor - start_factor) * min(epoch, total_iters) /
/// total_iters).
class LinearLR : public LRScheduler {
public:
  LinearLR(Optimizer& opt, double start_factor_ = 1.0 / 3, double end_factor_ = 1.0,
           std::int64_t total_iters_ = 5);
  double lr_at(std::int64_t e, double base) const override;
  Tensor lr_expr(const Tensor& e, double base) const override;
  double start_factor, end_factor;
  std::int64_t total_iters;
};

/// base * fn(epoch).
class LambdaLR : public LRScheduler {
public:
  LambdaLR(Optimizer& opt, tg::detail::Function<double(std::int64_t)> fn_);
  double lr_at(std::int64_t e, double base) const override;
  Tensor lr_expr(const Tensor&, double) const override;
  tg::detail::Function<double(std::int64_t)> fn;
};

/// Schedulers one after another: schedulers[k] runs from milestones[k - 1] on, counting its
/// epochs from there (warm-up then cosine: SequentialLR(opt, {warmup, cosine}, {100})).
class SequentialLR : public LRScheduler {
public:
  SequentialLR(Optimizer& opt, std::vector<Rc<LRScheduler>> schedulers_,
               std::vector<std::int64_t> milestones_);
  /// From a vector of std::shared_ptrs (of LRScheduler or a scheduler type).
  template <class P, std::enable_if_t<tg::detail::adoptable_pointer<P, LRScheduler>, int> = 0>
  SequentialLR(Optimizer& opt, const std::vector<P>& schedulers_,
               std::vector<std::int64_t> milestones_)
      : SequentialLR(opt, std::vector<Rc<LRScheduler>>(schedulers_.begin(), schedulers_.end()),
                     std::move(milestones_)) {}
  double lr_at(std::int64_t e, double base) const override;
  Tensor lr_expr(const Tensor& e, double base) const override;
  std::vector<Rc<LRScheduler>> schedulers;
  std::vector<std::int64_t> milestones;
};

} // namespace tg::optim
