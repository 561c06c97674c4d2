#pragma once
// What nn/loss.hpp declares (TG_API, config.hpp).
#include "../../tg.hpp"

namespace tg::nn::functional::detail {

TG_API Tensor reduce(const Tensor& loss, const std::string& reduction, const char* op, Loc loc) {
  if (reduction == "mean") return loss.mean({}, false, loc);
  if (reduction == "sum") return loss.sum({}, false, loc);
  if (reduction == "none") return loss;
  tg::detail::fail<error>(
      op, "reduction must be \"mean\", \"sum\" or \"none\", not \"" + reduction + "\"", loc);
}

TG_API void same_shape(const Tensor& a, const Tensor& b, const char* op, Loc loc) {
  if (a.shape() != b.shape())
    tg::detail::fail<shape_error>(op,
                                  "input " + tg::detail::shape_of(a) + " and target " +
                                      tg::detail::shape_of(b) + " must have the same shape",
                                  loc);
}

TG_API Tensor classes_last(const Tensor& x) {
  if (x.ndim() <= 2) return x;
  std::vector<int> p{0};
  for (int i = 2; i < x.ndim(); ++i) p.push_back(i);
  p.push_back(1);
  return x.permute(p);
}

TG_API void check_class_target(const Tensor& input, const Tensor& target, const char* op, Loc loc) {
  if (!is_int(target.dtype()))
    tg::detail::fail<dtype_error>(
        op, std::string("class-index targets must be integers, got ") + dtype_name(target.dtype()),
        loc);
  auto in = input.shape(), t = target.shape();
  bool ok = input.ndim() >= 1 && in.size() == t.size() + 1;
  if (ok && input.ndim() == 1)
    ok = t.empty();
  else if (ok) {
    ok = in[0] == t[0];
    for (std::size_t i = 2; ok && i < in.size(); ++i) ok = in[i] == t[i - 1];
  }
  if (!ok)
    tg::detail::fail<shape_error>(op,
                                  "input " + tg::detail::shape_of(input) +
                                      " ([N, C, d...]) does not fit the target " +
                                      tg::detail::shape_of(target) + " ([N, d...])",
                                  loc);
}

TG_API std::pair<Tensor, Tensor> pick(const Tensor& logp_last, const Tensor& target,
                                      const Tensor& weight, std::int64_t ignore_index, Loc loc) {
  const std::int64_t C = logp_last.size(-1);
  Tensor hot = one_hot_mask(target, C);
  Tensor zero = Tensor::full_on({}, 0, logp_last.dtype(), logp_last.device());
  Tensor picked = where(hot, logp_last, zero, loc).sum(-1, false, loc);
  Tensor w = weight.defined()
                 ? where(hot, weight.cast(logp_last.dtype()), zero, loc).sum(-1, false, loc)
                 : hot.any(-1, false, loc).cast(logp_last.dtype());
  Tensor valid = detail::index_ne(target, ignore_index);
  w = where(valid, w, zero, loc);
  return {-picked * w, w};
}

} // namespace tg::nn::functional::detail

namespace tg::nn::functional {

TG_API Tensor mse_loss(const Tensor& input, const Tensor& target, const std::string& reduction,
                       Loc loc) {
  detail::same_shape(input, target, "mse_loss", loc);
  Tensor d = input.as_float() - target;
  return detail::reduce(d * d, reduction, "mse_loss", loc);
}

TG_API Tensor l1_loss(const Tensor& input, const Tensor& target, const std::string& reduction,
                      Loc loc) {
  detail::same_shape(input, target, "l1_loss", loc);
  return detail::reduce((input.as_float() - target).abs(loc), reduction, "l1_loss", loc);
}

TG_API Tensor nll_loss(const Tensor& input, const Tensor& target, const Tensor& weight,
                       std::int64_t ignore_index, const std::string& reduction, Loc loc) {
  detail::check_class_target(input, target, "nll_loss", loc);
  auto [loss, w] =
      detail::pick(detail::classes_last(input.as_float()), target, weight, ignore_index, loc);
  if (reduction == "mean") return loss.sum({}, false, loc) / w.sum({}, false, loc);
  return detail::reduce(loss, reduction, "nll_loss", loc);
}

TG_API Tensor cross_entropy(const Tensor& input, const Tensor& target, const Tensor& weight,
                            std::int64_t ignore_index, const std::string& reduction,
                            double label_smoothing, Loc loc) {
  if (label_smoothing < 0 || label_smoothing > 1)
    tg::detail::fail<error>(
        "cross_entropy",
        "label_smoothing must be in [0, 1], got " + std::to_string(label_smoothing), loc);
  const int cdim = input.ndim() == 1 ? 0 : 1;
  Tensor logp = input.as_float().log_softmax(cdim, loc);
  const std::int64_t C = input.size(cdim);
  Tensor lp = detail::classes_last(logp); // [..., C]
  Tensor wc = weight.defined() ? weight.cast(lp.dtype()) : Tensor();
  if (is_float(target.dtype())) { // probabilities
    detail::same_shape(input, target, "cross_entropy", loc);
    Tensor y = detail::classes_last(target.cast(lp.dtype()));
    if (label_smoothing > 0) y = y * (1.0 - label_smoothing) + label_smoothing / double(C);
    Tensor terms = lp * y;
    if (wc.defined()) terms = terms * wc;
    Tensor loss = -terms.sum(-1, false, loc);
    return detail::reduce(loss, reduction, "cross_entropy", loc);
  }
  detail::check_class_target(input, target, "cross_entropy", loc);
  auto [nll, w] = detail::pick(lp, target, wc, ignore_index, loc);
  Tensor loss = nll;
  if (label_smoothing > 0) {
    Tensor smooth = -(wc.defined() ? lp * wc : lp).sum(-1, false, loc);
    Tensor valid = detail::index_ne(target, ignore_index);
    smooth = where(valid, smooth, Tensor::full_on({}, 0, lp.dtype(), lp.device()), loc);
    loss = nll * (1.0 - label_smoothing) + smooth * (label_smoothing / double(C));
  }
  if (reduction == "mean") return loss.sum({}, false, loc) / w.sum({}, false, loc);
  return detail::reduce(loss, reduction, "cross_entropy", loc);
}

TG_API Tensor binary_cross_entropy(const Tensor& input, const Tensor& target, const Tensor& weight,
                                   const std::string& reduction, Loc loc) {
  detail::same_shape(input, target, "binary_cross_entropy", loc);
  Tensor x = input.as_float(), t = target.cast(x.dtype());
  Tensor lo = Tensor::full_on({}, -100, x.dtype(), x.device());
  Tensor loss = -(t * x.log(loc).maximum(lo) + (1.0 - t) * (1.0 - x).log(loc).maximum(lo));
  if (weight.defined()) loss = loss * weight;
  return detail::reduce(loss, reduction, "binary_cross_entropy", loc);
}

TG_API Tensor binary_cross_entropy_with_logits(const Tensor& input, const Tensor& target,
                                               const Tensor& weight, const std::string& reduction,
                                               const Tensor& pos_weight, Loc loc) {
  detail::same_shape(input, target, "binary_cross_entropy_with_logits", loc);
  Tensor x = input.as_float(), t = target.cast(x.dtype());
  Tensor softplus_neg =
      (1.0 + (-x.abs(loc)).exp(loc)).log(loc) + (-x).relu(loc); // log(1 + exp(-x))
  Tensor loss = pos_weight.defined() ? (1.0 - t) * x + ((pos_weight - 1.0) * t + 1.0) * softplus_neg
                                     : (1.0 - t) * x + softplus_neg;
  if (weight.defined()) loss = loss * weight;
  return detail::reduce(loss, reduction, "binary_cross_entropy_with_logits", loc);
}

} // namespace tg::nn::functional
