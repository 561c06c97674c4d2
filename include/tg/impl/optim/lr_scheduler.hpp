#pragma once
// What optim/lr_scheduler.hpp declares (TG_API, config.hpp).
#include <algorithm>
#include <cmath>

#include "../../tg.hpp"

namespace tg::optim {

TG_API LRScheduler::~LRScheduler() = default;

TG_API void LRScheduler::step() {
  if (tg::detail::active_export()) return record_step();
  ++last_epoch_;
  detail::write_scalar(epoch_, double(last_epoch_));
  apply();
}

TG_API std::int64_t LRScheduler::last_epoch() const { return last_epoch_; }

TG_API std::vector<double> LRScheduler::get_last_lr() const {
  std::vector<double> r;
  for (std::size_t g = 0; g < opt_->num_groups(); ++g) r.push_back(opt_->lr(g));
  return r;
}

TG_API StateDict LRScheduler::state_dict() const { return {{"last_epoch", epoch_}}; }

TG_API void LRScheduler::load_state_dict(const StateDict& sd) {
  last_epoch_ = std::llround(sd.at("last_epoch").item<double>());
  detail::write_scalar(epoch_, double(last_epoch_));
  apply();
}

TG_API LRScheduler::LRScheduler(Optimizer& opt)
    : opt_(&opt), epoch_(detail::scalar_buffer(0, DType::Float32, opt.lr_tensor(0).device())) {}

TG_API void LRScheduler::start() { apply(); }

TG_API void LRScheduler::apply() {
  for (std::size_t g = 0; g < opt_->num_groups(); ++g)
    opt_->set_lr(g, lr_at(last_epoch_, opt_->initial_lr(g)));
}

TG_API void LRScheduler::record_step() {
  Tensor next = epoch_ + 1.0;
  std::vector<std::pair<Tensor, Tensor>> writes = {{epoch_, next}};
  for (std::size_t g = 0; g < opt_->num_groups(); ++g) {
    const Tensor& lr = opt_->lr_tensor(g);
    writes.emplace_back(lr, lr_expr(next, opt_->initial_lr(g)).cast(lr.dtype()));
  }
  tg::assign(writes);
}

TG_API Tensor LRScheduler::constant(const Tensor& epoch, double v) {
  return Tensor::full_on({}, v, epoch.dtype(), epoch.device());
}

TG_API StepLR::StepLR(Optimizer& opt, std::int64_t step_size_, double gamma_)
    : LRScheduler(opt), step_size(step_size_), gamma(gamma_) {
  if (step_size < 1) throw error("tg.optim.StepLR: step_size must be positive");
  start();
}

TG_API double StepLR::lr_at(std::int64_t e, double base) const {
  return base * std::pow(gamma, double(e / step_size));
}

TG_API Tensor StepLR::lr_expr(const Tensor& e, double base) const { // (+0.5: exact floors)
  return constant(e, gamma).pow(((e + 0.5) / double(step_size)).floor()) * base;
}

TG_API MultiStepLR::MultiStepLR(Optimizer& opt, std::vector<std::int64_t> milestones_,
                                double gamma_)
    : LRScheduler(opt), milestones(std::move(milestones_)), gamma(gamma_) {
  std::sort(milestones.begin(), milestones.end());
  start();
}

TG_API double MultiStepLR::lr_at(std::int64_t e, double base) const {
  auto n = std::upper_bound(milestones.begin(), milestones.end(), e) - milestones.begin();
  return base * std::pow(gamma, double(n));
}

TG_API Tensor MultiStepLR::lr_expr(const Tensor& e, double base) const {
  Tensor n = constant(e, 0);
  for (std::int64_t m : milestones) n = n + (e >= double(m)).cast(e.dtype());
  return constant(e, gamma).pow(n) * base;
}

TG_API CosineAnnealingLR::CosineAnnealingLR(Optimizer& opt, std::int64_t T_max_, double eta_min_)
    : LRScheduler(opt), T_max(T_max_), eta_min(eta_min_) {
  if (T_max < 1) throw error("tg.optim.CosineAnnealingLR: T_max must be positive");
  start();
}

TG_API double CosineAnnealingLR::lr_at(std::int64_t e, double base) const {
  return eta_min +
         (base - eta_min) * (1 + std::cos(3.141592653589793 * double(e) / double(T_max))) / 2;
}

TG_API Tensor CosineAnnealingLR::lr_expr(const Tensor& e, double base) const {
  return ((e * (3.141592653589793 / double(T_max))).cos() + 1.0) * ((base - eta_min) / 2) + eta_min;
}

TG_API LinearLR::LinearLR(Optimizer& opt, double start_factor_, double end_factor_,
                          std::int64_t total_iters_)
    : LRScheduler(opt), start_factor(start_factor_), end_factor(end_factor_),
      total_iters(total_iters_) {
  if (start_factor <= 0 || start_factor > 1 || end_factor < 0 || end_factor > 1)
    throw error("tg.optim.LinearLR: start_factor must be in (0, 1] and end_factor in [0, 1]");
  if (total_iters < 1) throw error("tg.optim.LinearLR: total_iters must be positive");
  start();
}

TG_API double LinearLR::lr_at(std::int64_t e, double base) const {
  double f = double(std::min(e, total_iters)) / double(total_iters);
  return base * (start_factor + (end_factor - start_factor) * f);
}

TG_API Tensor LinearLR::lr_expr(const Tensor& e, double base) const {
  Tensor f = e.minimum(constant(e, double(total_iters))) / double(total_iters);
  return (f * (end_factor - start_factor) + start_factor) * base;
}

TG_API LambdaLR::LambdaLR(Optimizer& opt, tg::detail::Function<double(std::int64_t)> fn_)
    : LRScheduler(opt), fn(std::move(fn_)) {
  start();
}

TG_API double LambdaLR::lr_at(std::int64_t e, double base) const { return base * fn(e); }

TG_API Tensor LambdaLR::lr_expr(const Tensor&, double) const {
  throw export_error("tg.optim.LambdaLR: its rate is a C++ function, which an exported step "
                     "cannot compute; set the rate between calls (the exported API's "
                     "set_weight of optim.param_groups.<g>.lr), or use StepLR, MultiStepLR, "
                     "CosineAnnealingLR, LinearLR or SequentialLR");
}

TG_API SequentialLR::SequentialLR(Optimizer& opt, std::vector<Rc<LRScheduler>> schedulers_,
                                  std::vector<std::int64_t> milestones_)
    : LRScheduler(opt), schedulers(std::move(schedulers_)), milestones(std::move(milestones_)) {
  if (schedulers.empty() || milestones.size() + 1 != schedulers.size())
    throw error("tg.optim.SequentialLR: needs one milestone fewer than schedulers");
  start();
}

TG_API double SequentialLR::lr_at(std::int64_t e, double base) const {
  std::size_t k =
      std::size_t(std::upper_bound(milestones.begin(), milestones.end(), e) - milestones.begin());
  return schedulers[k]->lr_at(k ? e - milestones[k - 1] : e, base);
}

TG_API Tensor SequentialLR::lr_expr(const Tensor& e, double base) const {
  Tensor r = schedulers[0]->lr_expr(e, base);
  for (std::size_t k = 1; k < schedulers.size(); ++k)
    r = where(e >= double(milestones[k - 1]),
              schedulers[k]->lr_expr(e - double(milestones[k - 1]), base), r);
  return r;
}

} // namespace tg::optim
