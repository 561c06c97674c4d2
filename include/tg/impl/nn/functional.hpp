#pragma once
// What nn/functional.hpp declares (TG_API, config.hpp).
#include <algorithm>
#include <cmath>
#include <map>
#include <mutex>
#include <ostream>

#include "../../graph/sint_text.hpp"
#include "../../tg.hpp"
#include "../../util/rc.hpp"
#include "../../util/rng.hpp"

namespace tg::nn::functional {

TG_API Tensor linear(const Tensor& x, const Tensor& weight, const Tensor& bias, Loc loc) {
  Tensor y = x.matmul(weight.T(loc), loc);
  if (bias.defined()) y = TensorArg(y, loc) + bias;
  // With gradients, the output is materialized so that backward's two products read its gradient
  // once (autograd mirrors contiguous) instead of each recomputing it; without (inference, under
  // no_grad), an activation or a cast that follows runs in the product's kernel.
  return y.requires_grad() ? y.contiguous(loc) : y;
}

} // namespace tg::nn::functional

namespace tg::nn::functional::detail {

TG_API std::int64_t ceil_div(std::int64_t a, std::int64_t b) { return (a + b - 1) / b; }

TG_API Shape leading(const Tensor& x, int drop) {
  return Shape(x.sym_shape().begin(), x.sym_shape().end() - drop);
}

TG_API Shape with(Shape s, std::initializer_list<SInt> tail) {
  s.insert(s.end(), tail.begin(), tail.end());
  return s;
}

TG_API Tensor windows_last(const Tensor& x, std::int64_t k, std::int64_t stride,
                           std::int64_t dilation, bool large) {
  const std::int64_t L = x.size(-1);
  const std::int64_t o = (L - dilation * (k - 1) - 1) / stride + 1;
  Shape lead = leading(x, 1);
  if (dilation == 1 && k <= stride) { // windows that do not overlap: one reshape
    Tensor y = x;
    if (o * stride > L)
      y = y.pad({0, o * stride - L});
    else if (o * stride < L)
      y = y.slice(-1, 0, o * stride);
    y = y.reshape(with(lead, {o, stride}));
    return k < stride ? y.slice(-1, 0, k) : y;
  }
  if (k <= 8 && !large) {
    // Small kernels: the k taps as strided slices stacked on a new last axis. Each element is
    // then one of k gated loads, and the gradient of x is an elementwise sum of k shifted views
    // (no index division anywhere: much faster columns and dX than below; docs/performance.md).
    std::vector<Tensor> taps;
    for (std::int64_t t = 0; t < k; ++t)
      taps.push_back(x.slice(-1, t * dilation, t * dilation + (o - 1) * stride + 1, stride));
    return tg::stack(taps, -1);
  }
  // Large kernels: repeat the axis r times and read it back with rows of L + dilation: row k then
  // starts at x[k * dilation] (tinygrad's pool trick), and a strided slice keeps every stride-th
  // start.
  const std::int64_t r = ceil_div(k * (L + dilation), L);
  Tensor y = x.unsqueeze(-2).expand(with(lead, {r, L})).reshape(with(lead, {r * L}));
  y = y.slice(-1, 0, k * (L + dilation)).reshape(with(lead, {k, L + dilation}));
  y = y.slice(-1, 0, (o - 1) * stride + 1, stride); // [..., K, O]
  return y.transpose(-1, -2);
}

TG_API Tensor windows2d(const Tensor& x, std::array<std::int64_t, 2> k,
                        std::array<std::int64_t, 2> s, std::array<std::int64_t, 2> d, bool large) {
  Tensor w = windows_last(x, k[1], s[1], d[1], large);                   // [N, C, H, OW, KW]
  w = windows_last(w.permute({0, 1, 3, 4, 2}), k[0], s[0], d[0], large); // [N, C, OW, KW, OH, KH]
  return w.permute({0, 1, 4, 2, 5, 3});
}

TG_API Tensor window_view(const Tensor& xp, std::int64_t KH, std::int64_t KW, Pair stride,
                          Pair dilation) {
  return xp.move({MoveOp::Window,
                  {0, 0, KH, KW},
                  {1, 1, 1, 1, stride[0], dilation[0], stride[1], dilation[1]}});
}

TG_API Tensor conv_windows(const Tensor& xp, const Tensor& f, Pair stride, Pair dilation, Loc loc) {
  const SInt N = xp.sym_shape()[0];
  const std::int64_t g = f.size(0), Og = f.size(1), Cg = f.size(2), KH = f.size(3), KW = f.size(4);
  Tensor win = window_view(xp, KH, KW, stride, dilation);
  const std::int64_t OH = win.size(2), OW = win.size(3);
  // in NCHW order, so that the CPU's register tiles run along the output channels (which share
  // every window load) and the output columns (docs/performance.md)
  Tensor a = win.reshape({N, g, 1, Cg, OH, OW, KH, KW}, loc).permute({0, 1, 2, 4, 5, 3, 6, 7}, loc);
  Tensor w = f.reshape({1, g, Og, 1, 1, Cg, KH, KW}, loc);
  return (TensorArg(a, loc) * w).reduce(Op::ReduceSum, {5, 6, 7}, true, "conv2d", loc);
}

TG_API ConvGrad::ConvGrad(Tensor xp, Tensor weight, Shape x_shape, Pair stride, Pair padding,
                          Pair dilation, std::int64_t groups, bool x_grad, Loc loc)
    : xp_(std::move(xp)), weight_(std::move(weight)), x_shape_(std::move(x_shape)), stride_(stride),
      padding_(padding), dilation_(dilation), groups_(groups), x_grad_(x_grad), loc_(loc) {}

TG_API std::vector<Tensor> ConvGrad::operator()(const Tensor& grad) const {
  const std::int64_t g = groups_, O = weight_.size(0), Og = O / g, Cg = weight_.size(1),
                     KH = weight_.size(2), KW = weight_.size(3), OH = grad.size(3),
                     OW = grad.size(4);
  const SInt N = grad.sym_shape()[0];
  const Loc loc = loc_;
  // (materialized once: dX and dW each copy it, and an unmaterialized gradient, a pooling's and
  // a batch norm's, would be computed again in each copy)
  Tensor dy = grad.reshape({N, O, OH, OW}, loc);
  if (!dy.is_realized()) dy = dy.contiguous(loc);
  std::vector<Tensor> out(2);
  // dX: the convolution of the output gradient, spread by the stride (zeros between rows and
  // columns) and padded by the reach of a flipped window, with the filters flipped and each
  // group's in and out channels swapped
  if (x_grad_) {
    // dX[h] = sum over taps k of D[h + padding - k * dilation] * W[k], where D holds the output
    // gradient at every stride-th place: the taps flipped, a window over D padded by the
    // window's reach less the padding (a negative pad crops)
    Tensor d = dy;
    if (stride_[0] > 1 || stride_[1] > 1)
      d = d.reshape({N, O, OH, 1, OW, 1}, loc)
              .pad({0, stride_[1] - 1, 0, 0, 0, stride_[0] - 1}, 0, loc)
              .reshape({N, O, OH * stride_[0], OW * stride_[1]}, loc);
    std::vector<std::int64_t> pads(4);
    for (std::size_t i = 0; i < 2; ++i) {
      const std::int64_t reach = dilation_[i] * ((i ? KW : KH) - 1),
                         size = x_shape_[2 + i].constant(), spread = (i ? OW : OH) * stride_[i];
      pads[2 - 2 * i] = reach - padding_[i];         // before (Tensor::pad: the last axis first)
      pads[3 - 2 * i] = size + padding_[i] - spread; // after
    }
    d = d.pad(pads, 0, loc).contiguous(loc);
    Tensor f = weight_.reshape({g, Og, Cg, KH, KW}, loc).flip({3, 4}, loc).transpose(1, 2, loc);
    out[0] = conv_windows(d, f, Pair(1, 1), dilation_, loc)
                 .reshape({N, g * Cg, x_shape_[2], x_shape_[3]}, loc);
  }
  // dW: the windows times the output gradient in channels-last order (whose output channels
  // then load as vectors), as partial sums over P groups of images (the groups are the
  // kernel's parallel loop; a sum over output channels and taps alone has few outputs), then
  // summed over the groups. P divides the batch, at most 32 and P x |W| at most 2^24 floats.
  {
    std::int64_t parts = 1;
    if (N.is_const())
      for (std::int64_t p = std::min<std::int64_t>(
               {N.constant(), 32,
                std::max<std::int64_t>(1, (std::int64_t(1) << 24) / (O * Cg * KH * KW))});
           p > 1; --p)
        if (N.constant() % p == 0) {
          parts = p;
          break;
        }
    const SInt per = parts == 1 ? N : SInt(N.constant() / parts);
    Tensor dyt = dy.permute({0, 2, 3, 1}, loc).contiguous(loc); // [N, OH, OW, O]
    Tensor win = window_view(xp_, KH, KW, stride_, dilation_);
    // [P, N / P, g, Cg, 1, OH, OW, KH, KW] -> [P, g, KH, KW, Cg, 1, N / P, OH, OW]
    Tensor a = win.reshape({parts, per, g, Cg, 1, OH, OW, KH, KW}, loc)
                   .permute({0, 2, 7, 8, 3, 4, 1, 5, 6}, loc);
    // [P, N / P, OH, OW, g, Og] -> [P, g, 1, 1, 1, Og, N / P, OH, OW]
    Tensor b = dyt.reshape({parts, per, OH, OW, g, 1, 1, 1, Og}, loc)
                   .permute({0, 4, 5, 6, 7, 8, 1, 2, 3}, loc);
    // [P, g, KH, KW, Cg, Og], summed in that layout (contiguous), then seen as [O, Cg, KH, KW]
    Tensor dw = (TensorArg(a, loc) * b).sum({6, 7, 8}, false, loc).sum({0}, false, loc);
    out[1] = dw.permute({0, 4, 3, 1, 2}, loc).reshape({O, Cg, KH, KW}, loc);
  }
  return out;
}

TG_API void check_pos(const char* op, const char* what, std::array<std::int64_t, 2> v,
                      bool allow_zero, Loc loc) {
  for (std::int64_t x : v)
    if (x < 0 || (!allow_zero && x == 0))
      tg::detail::fail<shape_error>(op,
                                    std::string(what) + " must be " +
                                        (allow_zero ? "non-negative" : "positive") + ", got " +
                                        std::to_string(x),
                                    loc);
}

TG_API void check_4d(const Tensor& x, const char* op, Loc loc) {
  if (x.ndim() != 4)
    tg::detail::fail<shape_error>(
        op, "needs an input of shape [N, C, H, W], got " + tg::detail::shape_of(x), loc);
}

TG_API void check_window_fits(const char* op, const Tensor& x, Pair kernel, Pair padding,
                              Pair dilation, Loc loc) {
  for (int i = 0; i < 2; ++i)
    if (x.size(2 + i) + 2 * padding[i] < dilation[i] * (kernel[i] - 1) + 1)
      tg::detail::fail<shape_error>(
          op,
          "the (padded) input " + tg::detail::shape_of(x) + " is smaller than the kernel (" +
              std::to_string(kernel[0]) + ", " + std::to_string(kernel[1]) + ")" +
              (padding[0] || padding[1] ? " with padding (" + std::to_string(padding[0]) + ", " +
                                              std::to_string(padding[1]) + ")"
                                        : std::string()) +
              (dilation[0] != 1 || dilation[1] != 1
                   ? " and dilation (" + std::to_string(dilation[0]) + ", " +
                         std::to_string(dilation[1]) + ")"
                   : std::string()),
          loc);
}

} // namespace tg::nn::functional::detail

namespace tg::nn::functional {

TG_API Tensor conv2d(const Tensor& x, const Tensor& weight, const Tensor& bias, Pair stride,
                     Pair padding, Pair dilation, std::int64_t groups, Loc loc) {
  detail::check_4d(x, "conv2d", loc);
  if (weight.ndim() != 4)
    tg::detail::fail<shape_error>("conv2d",
                                  "needs a weight of shape [O, C / groups, KH, KW], got " +
                                      tg::detail::shape_of(weight),
                                  loc);
  detail::check_pos("conv2d", "stride", stride.v, false, loc);
  detail::check_pos("conv2d", "dilation", dilation.v, false, loc);
  detail::check_pos("conv2d", "padding", padding.v, true, loc);
  const SInt N = x.sym_shape()[0]; // (a symbolic batch stays symbolic)
  const std::int64_t C = x.size(1), O = weight.size(0), KH = weight.size(2), KW = weight.size(3);
  if (groups < 1 || C % groups || O % groups || weight.size(1) != C / groups)
    tg::detail::fail<shape_error>(
        "conv2d",
        "input " + tg::detail::shape_of(x) + " and weight " + tg::detail::shape_of(weight) +
            " do not match with groups = " + std::to_string(groups) +
            " (channels and filters must divide by groups; weight dim 1 = C / groups)",
        loc);
  detail::check_window_fits("conv2d", x, Pair(KH, KW), padding, dilation, loc);
  if (bias.defined() && (bias.ndim() != 1 || bias.size(0) != O))
    tg::detail::fail<shape_error>("conv2d",
                                  "bias " + tg::detail::shape_of(bias) + " does not fit weight " +
                                      tg::detail::shape_of(weight) + " (one value per filter: [" +
                                      std::to_string(O) + "])",
                                  loc);
  // The padded input is materialized (a no-op for a realized tensor without padding): each
  // element is read by KH x KW windows, which are then one strided view of it (an
  // unmaterialized producer, a batch norm and a ReLU, would be recomputed for every read).
  const std::int64_t g = groups, Og = O / g, Cg = C / g;
  Tensor xp = x, out;
  {
    no_grad guard; // (the gradients: detail::ConvGrad)
    if (padding[0] || padding[1])
      xp = xp.pad({padding[1], padding[1], padding[0], padding[0]}, 0, loc);
    xp = xp.contiguous(loc);
    out = detail::conv_windows(xp, weight.reshape({g, Og, Cg, KH, KW}, loc), stride, dilation, loc);
  }
  out = out.with_grad_rule({x, weight},
                           make_rc<detail::ConvGrad>(xp, weight, x.sym_shape(), stride, padding,
                                                     dilation, groups, x.requires_grad(), loc));
  const std::int64_t OH = out.size(3), OW = out.size(4);
  out = out.reshape({N, O, OH, OW}, loc);
  if (bias.defined()) out = TensorArg(out, loc) + bias.reshape({1, O, 1, 1}, loc);
  return out;
}

} // namespace tg::nn::functional

namespace tg::nn::functional::detail {

TG_API std::array<std::int64_t, 2> ceil_extra(const Tensor& x, Pair k, Pair s, Pair p, Pair d) {
  std::array<std::int64_t, 2> extra{};
  for (int i = 0; i < 2; ++i) {
    const std::int64_t in = x.size(2 + i) + 2 * p[i], span = d[i] * (k[i] - 1) + 1;
    std::int64_t out = (in - span + s[i] - 1) / s[i] + 1;
    if ((out - 1) * s[i] >= x.size(2 + i) + p[i]) --out;
    extra[std::size_t(i)] = std::max<std::int64_t>(0, (out - 1) * s[i] + span - in);
  }
  return extra;
}

} // namespace tg::nn::functional::detail

namespace tg::nn::functional {

namespace detail {
/// max_pool2d's checks, and its windows [N, C, OH, OW, KH, KW] over the input padded with -inf.
inline Tensor max_pool_windows(const char* op, const Tensor& x, Pair kernel_size, Pair s,
                               Pair padding, Pair dilation, bool ceil_mode, Loc loc) {
  detail::check_4d(x, op, loc);
  detail::check_pos(op, "kernel_size", kernel_size.v, false, loc);
  detail::check_pos(op, "stride", s.v, false, loc);
  detail::check_pos(op, "dilation", dilation.v, false, loc);
  detail::check_pos(op, "padding", padding.v, true, loc);
  if (padding[0] * 2 > kernel_size[0] || padding[1] * 2 > kernel_size[1])
    tg::detail::fail<shape_error>(op, "padding should be at most half the kernel size", loc);
  detail::check_window_fits(op, x, kernel_size, padding, dilation, loc);
  auto extra = ceil_mode ? detail::ceil_extra(x, kernel_size, s, padding, dilation)
                         : std::array<std::int64_t, 2>{};
  // Materialized, with its gradient, as in conv2d: the gradient routes through a gather by
  // window, and a producer's gradient fused into it (a batch norm's, with its reductions) was
  // recomputed with that gather for every read.
  Tensor xc = x.contiguous(loc);
  Tensor xp = (padding[0] || padding[1] || extra[0] || extra[1])
                  ? xc.pad({padding[1], padding[1] + extra[1], padding[0], padding[0] + extra[0]},
                           -INFINITY, loc)
                  : xc;
  return detail::windows2d(xp, kernel_size.v, s.v, dilation.v);
}
} // namespace detail

TG_API Tensor max_pool2d(const Tensor& x, Pair kernel_size, std::optional<Pair> stride,
                         Pair padding, Pair dilation, bool ceil_mode, Loc loc) {
  return detail::max_pool_windows("max_pool2d", x, kernel_size, stride.value_or(kernel_size),
                                  padding, dilation, ceil_mode, loc)
      .max({4, 5}, false, loc);
}

TG_API std::pair<Tensor, Tensor> max_pool2d_with_indices(const Tensor& x, Pair kernel_size,
                                                         std::optional<Pair> stride, Pair padding,
                                                         Pair dilation, bool ceil_mode, Loc loc) {
  const Pair s = stride.value_or(kernel_size);
  Tensor win = detail::max_pool_windows("max_pool2d_with_indices", x, kernel_size, s, padding,
                                        dilation, ceil_mode, loc);
  const std::int64_t H = x.size(2), W = x.size(3), OH = win.size(2), OW = win.size(3),
                     KH = kernel_size[0], KW = kernel_size[1];
  // where each window element reads in the input; a padded one names the window's first element
  // inside the input (where PyTorch's search starts, so an all -inf window agrees)
  std::vector<std::int64_t> at(std::size_t(OH * OW * KH * KW));
  std::size_t i = 0;
  for (std::int64_t oh = 0; oh < OH; ++oh)
    for (std::int64_t ow = 0; ow < OW; ++ow) {
      const std::int64_t h0 = oh * s[0] - padding[0], w0 = ow * s[1] - padding[1];
      std::int64_t fh = h0, fw = w0;
      while (fh < 0) fh += dilation[0];
      while (fw < 0) fw += dilation[1];
      for (std::int64_t kh = 0; kh < KH; ++kh)
        for (std::int64_t kw = 0; kw < KW; ++kw) {
          const std::int64_t h = h0 + kh * dilation[0], w = w0 + kw * dilation[1];
          at[i++] = h >= 0 && h < H && w >= 0 && w < W ? h * W + w : fh * W + fw;
        }
    }
  const Shape& xs = x.sym_shape();
  const Shape flat{xs[0], xs[1], OH, OW, KH * KW};
  Tensor values = win.reshape(flat, loc);
  // PyTorch's search: the first maximum, or the last NaN of a window that has one
  Tensor first = values.argmax(4, true, loc);
  if (is_float(x.dtype())) {
    Tensor nan = values.isnan(loc);
    Tensor last_nan = Tensor::full_on({}, double(KH * KW - 1), DType::Int64, x.device()) -
                      nan.flip({4}, loc).argmax(4, true, loc);
    first = where(nan.any(4, true, loc), last_nan, first, loc);
  }
  Tensor where_in =
      Tensor::from_data(at, {1, 1, OH, OW, KH * KW}, TensorOptions(DType::Int64, x.device()), loc);
  return {win.max({4, 5}, false, loc), where_in.expand(flat, loc).gather(4, first, loc).squeeze(4)};
}

TG_API Tensor avg_pool2d(const Tensor& x, Pair kernel_size, std::optional<Pair> stride,
                         Pair padding, bool ceil_mode, bool count_include_pad,
                         std::optional<std::int64_t> divisor_override, Loc loc) {
  detail::check_4d(x, "avg_pool2d", loc);
  Pair s = stride.value_or(kernel_size);
  detail::check_pos("avg_pool2d", "kernel_size", kernel_size.v, false, loc);
  detail::check_pos("avg_pool2d", "stride", s.v, false, loc);
  detail::check_pos("avg_pool2d", "padding", padding.v, true, loc);
  if (padding[0] * 2 > kernel_size[0] || padding[1] * 2 > kernel_size[1])
    tg::detail::fail<shape_error>("avg_pool2d", "padding should be at most half the kernel size",
                                  loc);
  if (divisor_override && *divisor_override == 0)
    tg::detail::fail<error>("avg_pool2d", "divisor_override must be nonzero", loc);
  detail::check_window_fits("avg_pool2d", x, kernel_size, padding, 1, loc);
  auto extra =
      ceil_mode ? detail::ceil_extra(x, kernel_size, s, padding, 1) : std::array<std::int64_t, 2>{};
  const bool padded = padding[0] || padding[1], extended = extra[0] || extra[1];
  std::vector<std::int64_t> pads{padding[1], padding[1] + extra[1], padding[0],
                                 padding[0] + extra[0]};
  Tensor xf = x.as_float();
  Tensor xp = padded || extended ? xf.pad(pads) : xf;
  Tensor sum = detail::windows2d(xp, kernel_size.v, s.v, {1, 1}).sum({4, 5}, false, loc);
  if (divisor_override) return sum / double(*divisor_override);
  if (!extended && (count_include_pad || !padded))
    return sum / double(kernel_size[0] * kernel_size[1]);
  // divide by what each window covers (the input, and the zero padding if it counts): a constant
  const TensorOptions o(xf.dtype(), x.device());
  Tensor ones = count_include_pad
                    ? tg::ones({1, 1, x.size(2) + 2 * padding[0], x.size(3) + 2 * padding[1]}, o)
                          .pad({0, extra[1], 0, extra[0]})
                    : tg::ones({1, 1, x.size(2), x.size(3)}, o).pad(pads);
  Tensor count = detail::windows2d(ones, kernel_size.v, s.v, {1, 1}).sum({4, 5}, false, loc);
  return sum / count;
}

} // namespace tg::nn::functional

namespace tg::nn::functional::detail {

TG_API Tensor normalize_channels(const Tensor& x, const Tensor& mean, const Tensor& var,
                                 const Tensor& weight, const Tensor& bias, double eps, Loc loc) {
  Shape s(std::size_t(x.ndim()), SInt(1));
  s[1] = x.sym_shape()[1];
  Tensor y = (x - mean.reshape(s, loc)) * (var.reshape(s, loc) + eps).rsqrt(loc);
  if (weight.defined()) y = y * weight.reshape(s, loc);
  if (bias.defined()) y = y + bias.reshape(s, loc);
  return y;
}

TG_API Tensor batch_norm_train(const Tensor& x, const Tensor& running_mean,
                               const Tensor& running_var, const Tensor& weight, const Tensor& bias,
                               const Tensor& momentum, double eps,
                               std::vector<std::pair<Tensor, Tensor>>& updates, Loc loc) {
  std::vector<int> axes{0};
  for (int d = 2; d < x.ndim(); ++d) axes.push_back(d);
  Shape s(std::size_t(x.ndim()), SInt(1));
  s[1] = x.sym_shape()[1];
  Tensor xf = x.as_float();
  Tensor mean = xf.mean(axes, false, loc);
  Tensor d = xf - mean.reshape(s, loc);
  Tensor var = (d * d).mean(axes, false, loc);
  Tensor y = normalize_channels(xf, mean, var, weight, bias, eps, loc);
  if (running_mean.defined() || running_var.defined()) {
    no_grad guard;
    const double n = double(x.numel() / std::max<std::int64_t>(x.size(1), 1));
    auto move = [&](const Tensor& r, const Tensor& v) {
      Tensor m = momentum.cast(r.dtype());
      updates.push_back({r, (1.0 - m) * r + m * v.detach().cast(r.dtype())});
    };
    if (running_mean.defined()) move(running_mean, mean);
    if (running_var.defined()) move(running_var, var * (n / std::max(n - 1, 1.0)));
  }
  return y;
}

TG_API void check_running(const Tensor& x, const Tensor& t, const char* what, Loc loc) {
  if (t.defined() && (t.ndim() != 1 || t.size(0) != x.size(1)))
    tg::detail::fail<shape_error>("batch_norm",
                                  std::string(what) + " " + tg::detail::shape_of(t) +
                                      " does not fit input " + tg::detail::shape_of(x) +
                                      " (one value per channel: [" + std::to_string(x.size(1)) +
                                      "])",
                                  loc);
}

} // namespace tg::nn::functional::detail

namespace tg::nn::functional {

TG_API Tensor batch_norm(const Tensor& x, const Tensor& running_mean, const Tensor& running_var,
                         const Tensor& weight, const Tensor& bias, bool training, double momentum,
                         double eps, Loc loc) {
  if (x.ndim() < 2)
    tg::detail::fail<shape_error>(
        "batch_norm", "needs an input of at least 2 dims, got " + tg::detail::shape_of(x), loc);
  detail::check_running(x, running_mean, "running_mean", loc);
  detail::check_running(x, running_var, "running_var", loc);
  detail::check_running(x, weight, "weight", loc);
  detail::check_running(x, bias, "bias", loc);
  if (training) {
    if (x.numel() == x.size(1))
      tg::detail::fail<shape_error>("batch_norm",
                                    "expected more than 1 value per channel when training, got " +
                                        tg::detail::shape_of(x),
                                    loc);
    for (const Tensor* r : {&running_mean, &running_var})
      if (r->defined() && (!r->lazy() || r->lazy()->op != Op::Buffer))
        tg::detail::fail<error>("batch_norm",
                                std::string(r == &running_mean ? "running_mean" : "running_var") +
                                    " is updated in place in training: it must be a realized "
                                    "tensor that owns its buffer (call .contiguous().realize())",
                                loc);
    std::vector<std::pair<Tensor, Tensor>> updates;
    Tensor y = detail::batch_norm_train(x, running_mean, running_var, weight, bias,
                                        Tensor::full_on({}, momentum, DType::Float64, x.device()),
                                        eps, updates, loc);
    if (!updates.empty()) tg::assign(updates, {}, loc);
    return y;
  }
  if (!running_mean.defined() || !running_var.defined())
    tg::detail::fail<error>("batch_norm", "needs running_mean and running_var when not training",
                            loc);
  return detail::normalize_channels(x, running_mean, running_var, weight, bias, eps, loc);
}

TG_API std::vector<int> last_axes(const Tensor& x, std::size_t n, const char* op, Loc loc) {
  if (n == 0 || n > std::size_t(x.ndim()))
    tg::detail::fail<shape_error>(op,
                                  "cannot normalize the last " + std::to_string(n) + " dims of " +
                                      tg::detail::shape_of(x),
                                  loc);
  std::vector<int> axes;
  for (std::size_t i = 0; i < n; ++i) axes.push_back(x.ndim() - int(n) + int(i));
  return axes;
}

TG_API void check_normalized(const Tensor& x, const std::vector<std::int64_t>& shape,
                             const char* op, Loc loc) {
  auto xs = x.shape();
  bool ok = shape.size() <= xs.size();
  for (std::size_t i = 0; ok && i < shape.size(); ++i)
    ok = xs[xs.size() - shape.size() + i] == shape[i];
  if (!ok) {
    Shape s(shape.begin(), shape.end());
    tg::detail::fail<shape_error>(op,
                                  "input " + tg::detail::shape_of(x) +
                                      " does not end with the normalized shape " +
                                      tg::detail::shape_str(s),
                                  loc);
  }
}

TG_API Tensor layer_norm(const Tensor& x, const std::vector<std::int64_t>& normalized_shape,
                         const Tensor& weight, const Tensor& bias, double eps, Loc loc) {
  check_normalized(x, normalized_shape, "layer_norm", loc);
  std::vector<int> axes = last_axes(x, normalized_shape.size(), "layer_norm", loc);
  Tensor xf = x.as_float();
  Tensor mean = xf.mean(axes, true, loc);
  Tensor d = xf - mean;
  Tensor var = (d * d).mean(axes, true, loc);
  Tensor y = d * (var + eps).rsqrt(loc);
  if (weight.defined()) y = y * weight;
  if (bias.defined()) y = y + bias;
  return y.contiguous(loc); // read by the next matmul once per output column (see linear)
}

TG_API Tensor rms_norm(const Tensor& x, const std::vector<std::int64_t>& normalized_shape,
                       const Tensor& weight, std::optional<double> eps, Loc loc) {
  check_normalized(x, normalized_shape, "rms_norm", loc);
  std::vector<int> axes = last_axes(x, normalized_shape.size(), "rms_norm", loc);
  Tensor xf = x.as_float();
  double e = eps                             ? *eps
             : xf.dtype() == DType::Float64  ? 2.220446049250313e-16
             : xf.dtype() == DType::Float16  ? 0.0009765625
             : xf.dtype() == DType::BFloat16 ? 0.0078125
                                             : 1.1920928955078125e-07;
  Tensor y = xf * ((xf * xf).mean(axes, true, loc) + e).rsqrt(loc);
  return (weight.defined() ? y * weight : y).contiguous(loc);
}

} // namespace tg::nn::functional

namespace tg::nn::functional::detail {

TG_API Tensor cached_arange(std::int64_t n, const std::string& device, DType t) {
  // never destroyed: buffers must not outlive their device's driver at exit
  static std::mutex m;
  static auto& cache = *new std::map<std::tuple<std::int64_t, std::string, DType>, Tensor>();
  std::lock_guard<std::mutex> lock(m);
  auto key = std::make_tuple(n, device, t);
  auto it = cache.find(key);
  if (it != cache.end()) return it->second;
  std::vector<std::int64_t> v(static_cast<std::size_t>(n));
  for (std::int64_t i = 0; i < n; ++i) v[std::size_t(i)] = i;
  Tensor a = Tensor::from_data(v, {n}, TensorOptions(t, device));
  if (cache.size() > 64) cache.clear();
  cache.emplace(key, a);
  return a;
}

TG_API DType index_dtype(const Tensor& idx) {
  return itemsize(idx.dtype()) == 8 ? DType::Int64 : DType::Int32;
}

TG_API Tensor one_hot_mask(const Tensor& idx, std::int64_t n) {
  const DType t = n > std::numeric_limits<std::int32_t>::max() ? DType::Int64 : index_dtype(idx);
  Tensor ar = cached_arange(n, idx.device(), t);
  return idx.cast(t).unsqueeze(-1) == ar;
}

TG_API Tensor index_ne(const Tensor& idx, std::int64_t value) {
  const DType t = index_dtype(idx);
  if (t == DType::Int32 && (value < std::numeric_limits<std::int32_t>::min() ||
                            value > std::numeric_limits<std::int32_t>::max()))
    return Tensor::full_on(idx.sym_shape(), 1, DType::Bool, idx.device());
  return idx.cast(t) != Tensor::full_on({}, value, t, idx.device());
}

} // namespace tg::nn::functional::detail

namespace tg::nn::functional {

TG_API Tensor embedding(const Tensor& idx, const Tensor& weight,
                        std::optional<std::int64_t> padding_idx, Loc loc) {
  if (!is_int(idx.dtype()))
    tg::detail::fail<dtype_error>(
        "embedding", std::string("indices must be integers, got ") + dtype_name(idx.dtype()), loc);
  if (weight.ndim() != 2)
    tg::detail::fail<shape_error>(
        "embedding", "weight must be [V, D], got " + tg::detail::shape_of(weight), loc);
  const std::int64_t V = weight.size(0);
  Tensor hot = detail::one_hot_mask(idx, V).unsqueeze(-1); // [..., V, 1]
  Tensor zero = Tensor::full_on({}, 0, weight.dtype(), weight.device());
  Tensor out = where(hot, weight, zero, loc).sum(-2, false, loc); // [..., D]
  if (padding_idx) {
    std::int64_t p = *padding_idx < 0 ? *padding_idx + V : *padding_idx;
    Tensor keep = detail::index_ne(idx, p).unsqueeze(-1);
    out = where(keep, out, out.detach(), loc);
  }
  return out;
}

} // namespace tg::nn::functional

namespace tg::nn::functional::detail {

TG_API Tensor u32(std::uint32_t v, const std::string& dev) {
  return Tensor::full_on({}, Scalar::of_int(DType::UInt32, v), DType::UInt32, dev);
}

TG_API Tensor shr(const Tensor& x, int k) {
  return Tensor::alu(Op::Div, x, u32(1u << k, x.device()), "shr", Loc::current());
}

TG_API Tensor xor_(const Tensor& a, const Tensor& b) {
  return Tensor::alu(Op::Xor, a, b, "xor", Loc::current());
}

TG_API Tensor hash32(Tensor x) {
  const std::string& d = x.device();
  x = xor_(x, shr(x, 16)) * u32(0x7feb352du, d);
  x = xor_(x, shr(x, 15)) * u32(0x846ca68bu, d);
  return xor_(x, shr(x, 16));
}

TG_API Tensor& rng_state(const std::string& device) {
  static std::mutex m;
  static auto& states = *new std::map<std::string, Tensor>(); // never destroyed (see cached_arange)
  std::lock_guard<std::mutex> lock(m);
  auto it = states.find(device);
  if (it == states.end()) {
    std::uint32_t seed = std::uint32_t(tg::detail::rng()() >> 32);
    it = states
             .emplace(device, Tensor::from_data(std::vector<std::uint32_t>{seed}, Shape{},
                                                TensorOptions(DType::UInt32, device)))
             .first;
  }
  return it->second;
}

} // namespace tg::nn::functional::detail

namespace tg::nn::functional {

TG_API Tensor device_rand(const Shape& shape, const std::string& device) {
  std::string dev = device.empty() ? tg::default_device() : tg::detail::canonical_device(device);
  no_grad guard;
  Tensor& state = detail::rng_state(dev);
  Tensor key =
      Tensor::make(Op::Contiguous, DType::UInt32, {}, {state.lazy()}, dev).realize(); // snapshot
  tg::assign({{state, state + detail::u32(1, dev)}});
  std::int64_t n = tg::prod(shape).eval();
  Tensor idx = detail::cached_arange(n, dev, DType::UInt32);
  Tensor seed = detail::hash32(detail::xor_(key, detail::u32(0x9e3779b9u, dev)));
  Tensor h = detail::hash32(detail::hash32(detail::xor_(idx, seed)) + seed);
  return (detail::shr(h, 8).cast(DType::Float32) * float(0x1p-24)).reshape(shape);
}

TG_API Tensor dropout(const Tensor& x, double p, bool training, Loc loc) {
  if (p < 0 || p > 1)
    tg::detail::fail<error>("dropout", "p must be in [0, 1], got " + std::to_string(p), loc);
  if (!training || p == 0) return x;
  if (p == 1) // zeros (also for infinite inputs), with a zero gradient
    return where(Tensor::full_on(x.sym_shape(), 0, DType::Bool, x.device()), x,
                 Tensor::full_on({}, 0, x.dtype(), x.device()), loc);
  Tensor keep = device_rand(x.sym_shape(), x.device()) >= float(p);
  return where(keep, x * (1.0 / (1.0 - p)), Tensor::full_on({}, 0, x.dtype(), x.device()), loc);
}

TG_API Tensor scaled_dot_product_attention(const Tensor& q, const Tensor& k, const Tensor& v,
                                           const Tensor& attn_mask, double dropout_p,
                                           bool is_causal, std::optional<double> scale, Loc loc) {
  if (q.ndim() < 2 || k.ndim() < 2 || v.ndim() < 2)
    tg::detail::fail<shape_error>("scaled_dot_product_attention", "q, k and v need at least 2 dims",
                                  loc);
  const std::int64_t L = q.size(-2), S = k.size(-2), E = q.size(-1);
  double sc = scale.value_or(1.0 / std::sqrt(double(E)));
  Tensor scores = q.matmul(k.transpose(-2, -1, loc), loc) * sc;
  const double ninf = -INFINITY;
  if (is_causal) {
    std::vector<bool> m(static_cast<std::size_t>(L * S));
    for (std::int64_t i = 0; i < L; ++i)
      for (std::int64_t j = 0; j < S; ++j) m[std::size_t(i * S + j)] = j <= i;
    Tensor causal = Tensor::from_data(m, {L, S}, TensorOptions(DType::Bool, q.device()));
    scores = where(causal, scores, ninf, loc);
  }
  if (attn_mask.defined()) {
    if (attn_mask.dtype() == DType::Bool)
      scores = where(attn_mask, scores, ninf, loc);
    else
      scores = scores + attn_mask;
  }
  Tensor attn = scores.softmax(-1, loc).contiguous(loc); // read once per column of v (see linear)
  if (dropout_p > 0) attn = dropout(attn, dropout_p, true, loc);
  return attn.matmul(v, loc).contiguous(loc);
}

TG_API Tensor one_hot(const Tensor& idx, std::int64_t num_classes, Loc loc) {
  if (!is_int(idx.dtype()))
    tg::detail::fail<dtype_error>(
        "one_hot", std::string("needs integer class indices, got ") + dtype_name(idx.dtype()), loc);
  if (num_classes < 0)
    num_classes = idx.numel() == 0 ? 0 : idx.max().cast(DType::Int64).item<std::int64_t>() + 1;
  if (idx.numel() > 0) { // as PyTorch: every index in [0, num_classes)
    std::vector<std::int64_t> v = idx.to_vector<std::int64_t>();
    for (std::int64_t i : v)
      if (i < 0 || i >= num_classes)
        tg::detail::fail<index_error>("one_hot",
                                      "class index " + std::to_string(i) + " is outside [0, " +
                                          std::to_string(num_classes) + ")",
                                      loc);
  }
  return detail::one_hot_mask(idx, num_classes).cast(DType::Int64);
}

TG_API Tensor conv1d(const Tensor& x, const Tensor& weight, const Tensor& bias, std::int64_t stride,
                     std::int64_t padding, std::int64_t dilation, std::int64_t groups, Loc loc) {
  if (x.ndim() != 3 || weight.ndim() != 3)
    tg::detail::fail<shape_error>("conv1d",
                                  "needs an input [N, C, L] and a weight [O, C / groups, K], got " +
                                      tg::detail::shape_of(x) + " and " +
                                      tg::detail::shape_of(weight),
                                  loc);
  return conv2d(x.unsqueeze(2, loc), weight.unsqueeze(2, loc), bias, Pair(1, stride),
                Pair(0, padding), Pair(1, dilation), groups, loc)
      .squeeze(2, loc);
}

TG_API Tensor conv_transpose2d(const Tensor& x, const Tensor& weight, const Tensor& bias,
                               Pair stride, Pair padding, Pair output_padding, std::int64_t groups,
                               Pair dilation, Loc loc) {
  detail::check_4d(x, "conv_transpose2d", loc);
  detail::check_pos("conv_transpose2d", "stride", stride.v, false, loc);
  detail::check_pos("conv_transpose2d", "dilation", dilation.v, false, loc);
  detail::check_pos("conv_transpose2d", "padding", padding.v, true, loc);
  detail::check_pos("conv_transpose2d", "output_padding", output_padding.v, true, loc);
  const std::int64_t Cin = x.size(1);
  if (weight.ndim() != 4 || weight.size(0) != Cin || groups < 1 || Cin % groups)
    tg::detail::fail<shape_error>(
        "conv_transpose2d",
        "input " + tg::detail::shape_of(x) + " and weight " + tg::detail::shape_of(weight) +
            " ([Cin, Cout / groups, KH, KW]) do not match with groups = " + std::to_string(groups),
        loc);
  for (int i = 0; i < 2; ++i)
    if (output_padding[i] >= std::max(stride[i], dilation[i]))
      tg::detail::fail<shape_error>("conv_transpose2d",
                                    "output_padding must be smaller than stride or dilation", loc);
  const std::int64_t N = x.size(0), H = x.size(2), W = x.size(3), g = groups, Cog = weight.size(1),
                     KH = weight.size(2), KW = weight.size(3);
  // spread: a zero after each element but the last, stride - 1 of them (a pad and a reshape)
  Tensor xs = x;
  if (stride[0] > 1 || stride[1] > 1) {
    xs = x.reshape({N, Cin, H, 1, W, 1}, loc)
             .pad({0, stride[1] - 1, 0, 0, 0, stride[0] - 1}, 0, loc)
             .reshape({N, Cin, H * stride[0], W * stride[1]}, loc)
             .pad({0, 1 - stride[1], 0, 1 - stride[0]}, 0, loc);
  }
  std::array<std::int64_t, 2> k{KH, KW}, lo{}, hi{};
  for (int i = 0; i < 2; ++i) {
    lo[std::size_t(i)] = dilation[i] * (k[std::size_t(i)] - 1) - padding[i];
    hi[std::size_t(i)] = lo[std::size_t(i)] + output_padding[i];
  }
  xs = xs.pad({lo[1], hi[1], lo[0], hi[0]}, 0, loc); // negative values crop
  // weight [Cin, Cout/g, KH, KW] -> [Cout, Cin/g, KH, KW], flipped in space
  Tensor w = weight.reshape({g, Cin / g, Cog, KH, KW}, loc)
                 .permute({0, 2, 1, 3, 4}, loc)
                 .reshape({g * Cog, Cin / g, KH, KW}, loc)
                 .flip({2, 3}, loc);
  return conv2d(xs, w, bias, 1, 0, dilation, groups, loc);
}

TG_API Tensor group_norm(const Tensor& x, std::int64_t num_groups, const Tensor& weight,
                         const Tensor& bias, double eps, Loc loc) {
  if (x.ndim() < 2 || num_groups < 1 || x.size(1) % num_groups)
    tg::detail::fail<shape_error>("group_norm",
                                  "needs an input [N, C, ...] with C divisible by num_groups = " +
                                      std::to_string(num_groups) + ", got " +
                                      tg::detail::shape_of(x),
                                  loc);
  Tensor xf = x.as_float();
  Tensor g = xf.reshape({x.size(0), num_groups, -1}, loc);
  Tensor mean = g.mean({2}, true, loc), d = g - mean;
  Tensor y = (d * ((d * d).mean({2}, true, loc) + eps).rsqrt(loc)).reshape(x.sym_shape(), loc);
  Shape s(std::size_t(x.ndim()), SInt(1));
  s[1] = x.sym_shape()[1];
  if (weight.defined()) y = y * weight.reshape(s, loc);
  if (bias.defined()) y = y + bias.reshape(s, loc);
  return y;
}

TG_API Tensor instance_norm(const Tensor& x, const Tensor& weight, const Tensor& bias, double eps,
                            Loc loc) {
  if (x.ndim() < 3)
    tg::detail::fail<shape_error>(
        "instance_norm",
        "needs an input [N, C, ...] with spatial dims, got " + tg::detail::shape_of(x), loc);
  return group_norm(x, x.size(1), weight, bias, eps, loc);
}

} // namespace tg::nn::functional

namespace tg::nn::functional::detail {

TG_API Tensor adaptive_matrix(std::int64_t in, std::int64_t out, DType t, const std::string& dev) {
  std::vector<double> m(std::size_t(in * out), 0.0);
  for (std::int64_t o = 0; o < out; ++o) {
    std::int64_t a = o * in / out, b = ((o + 1) * in + out - 1) / out;
    for (std::int64_t i = a; i < b; ++i) m[std::size_t(o * in + i)] = 1.0 / double(b - a);
  }
  return Tensor::from_data(m, {out, in}, TensorOptions(t, dev));
}

TG_API Tensor linear_matrix(std::int64_t in, std::int64_t out, double scale, bool align_corners,
                            DType t, const std::string& dev) {
  std::vector<double> m(std::size_t(in * out), 0.0);
  for (std::int64_t o = 0; o < out; ++o) {
    double src = align_corners ? (out > 1 ? double(o) * double(in - 1) / double(out - 1) : 0.0)
                               : std::max((double(o) + 0.5) * scale - 0.5, 0.0);
    auto i0 = std::min<std::int64_t>(std::int64_t(std::floor(src)), in - 1);
    std::int64_t i1 = std::min<std::int64_t>(i0 + 1, in - 1);
    double l = src - double(i0);
    m[std::size_t(o * in + i0)] += 1.0 - l;
    m[std::size_t(o * in + i1)] += l;
  }
  return Tensor::from_data(m, {out, in}, TensorOptions(t, dev));
}

} // namespace tg::nn::functional::detail

namespace tg::nn::functional {

TG_API Tensor adaptive_avg_pool2d(const Tensor& x, Pair output_size, Loc loc) {
  detail::check_4d(x, "adaptive_avg_pool2d", loc);
  detail::check_pos("adaptive_avg_pool2d", "output_size", output_size.v, false, loc);
  Tensor xf = x.as_float();
  Tensor mh = detail::adaptive_matrix(x.size(2), output_size[0], xf.dtype(), x.device());
  Tensor mw = detail::adaptive_matrix(x.size(3), output_size[1], xf.dtype(), x.device());
  return mh.matmul(xf, loc).matmul(mw.T(loc), loc);
}

TG_API Tensor interpolate(const Tensor& x, std::optional<Pair> size,
                          std::optional<std::array<double, 2>> scale_factor,
                          const std::string& mode, bool align_corners, Loc loc) {
  detail::check_4d(x, "interpolate", loc);
  if (size.has_value() == scale_factor.has_value())
    tg::detail::fail<error>("interpolate", "give exactly one of size and scale_factor", loc);
  std::array<std::int64_t, 2> in{x.size(2), x.size(3)}, out{};
  std::array<double, 2> scale{}; // input units per output unit
  for (std::size_t i = 0; i < 2; ++i) {
    if (size) {
      out[i] = (*size)[int(i)];
      scale[i] = double(in[i]) / double(out[i]);
    } else {
      out[i] = std::int64_t(std::floor(double(in[i]) * (*scale_factor)[i]));
      scale[i] = 1.0 / (*scale_factor)[i];
    }
    if (out[i] <= 0)
      tg::detail::fail<shape_error>(
          "interpolate", "output size must be positive, got " + std::to_string(out[i]), loc);
  }
  if (mode == "nearest") {
    std::array<Tensor, 2> idx;
    for (std::size_t i = 0; i < 2; ++i) {
      std::vector<std::int64_t> v(static_cast<std::size_t>(out[i]));
      for (std::int64_t o = 0; o < out[i]; ++o)
        v[std::size_t(o)] =
            std::min<std::int64_t>(std::int64_t(std::floor(double(o) * scale[i])), in[i] - 1);
      idx[i] = Tensor::from_data(v, {out[i]}, TensorOptions(DType::Int64, x.device()));
    }
    return x.index_select(2, idx[0], loc).index_select(3, idx[1], loc);
  }
  if (mode == "bilinear") {
    Tensor xf = x.as_float();
    Tensor mh =
        detail::linear_matrix(in[0], out[0], scale[0], align_corners, xf.dtype(), x.device());
    Tensor mw =
        detail::linear_matrix(in[1], out[1], scale[1], align_corners, xf.dtype(), x.device());
    return mh.matmul(xf, loc).matmul(mw.T(loc), loc);
  }
  tg::detail::fail<error>("interpolate",
                          "mode must be \"nearest\" or \"bilinear\", not \"" + mode + "\"", loc);
}

} // namespace tg::nn::functional

namespace tg {

TG_API Tensor multinomial(const Tensor& input, std::int64_t num_samples, bool replacement,
                          std::source_location loc) {
  const char* op = "multinomial";
  if (input.ndim() != 1 && input.ndim() != 2)
    detail::fail<shape_error>(
        op, "needs a 1-D or 2-D input of weights, got " + detail::shape_of(input), loc);
  if (!is_float(input.dtype()))
    detail::fail<dtype_error>(
        op, std::string("needs floating weights, got ") + dtype_name(input.dtype()), loc);
  const std::int64_t C = input.size(-1);
  if (num_samples <= 0)
    detail::fail<shape_error>(
        op, "num_samples must be positive, got " + std::to_string(num_samples), loc);
  if (C == 0)
    detail::fail<shape_error>(
        op, "cannot sample from " + detail::shape_of(input) + ": no categories", loc);
  if (!replacement && num_samples > C)
    detail::fail<shape_error>(op,
                              "cannot draw " + std::to_string(num_samples) +
                                  " samples without replacement from " + std::to_string(C) +
                                  " categories (" + detail::shape_of(input) + ")",
                              loc);
  no_grad guard;
  Tensor w = input.dtype() == DType::Float64 ? input.detach() : input.detach().cast(DType::Float32);
  Shape rows = w.sym_shape();
  rows.pop_back();
  Shape keys = rows;
  if (replacement) {
    keys.push_back(num_samples);
    w = w.unsqueeze(-2, loc);
  }
  keys.push_back(C);
  Tensor u = nn::F::device_rand(keys, input.device());
  if (w.dtype() == DType::Float64) u = u.cast(DType::Float64);
  Tensor e = -(1.0 - u).log(loc); // Exp(1) (1 - u is exact); 0 only where u is 0
  Tensor zero = Tensor::full_on({}, 0, w.dtype(), w.device());
  Tensor key = where(w > zero, w / e, Tensor::full_on({}, -1, w.dtype(), w.device()), loc);
  if (replacement || num_samples == 1) {
    Tensor i = key.argmax(-1, false, loc);
    return replacement ? i : i.unsqueeze(-1, loc);
  }
  return key.topk(num_samples, -1, true, loc).second;
}

} // namespace tg

namespace tg::nn {

TG_API std::ostream& operator<<(std::ostream& os, const Module& m) { return os << m.to_string(); }

} // namespace tg::nn
