#pragma once
// nn::functional (torch.nn.functional): the layers' computations as functions of tensors, all
// composed from tg's primitives, so they fuse and are differentiable.
//
// Convolution and pooling gather their windows with movement ops only: each spatial axis
// becomes (output position, kernel tap) through padding and strided slices stacked per tap (a
// repeat and a skewing reshape for kernels above 8 taps), so pooling is one reduction over a
// view. A convolution materializes those columns once (im2col) and multiplies them with the
// weight as a matmul whose reductions run along contiguous memory, forward and backward.
#include <array>
#include <limits>
#include <optional>

#include "init.hpp"

namespace tg::nn::functional {

using Loc = std::source_location;

/// y = x W^T + b for x [..., in], W [out, in], b [out].
///
/// The layers materialize their outputs (contiguous(): the matmul kernel writes them, no extra
/// kernel), which also materializes the gradient there (autograd mirrors contiguous). Otherwise
/// a gradient expression (softmax's, relu's) is fused into the dW and dX reductions and
/// recomputed for every element of the broadcast axis: several times slower training steps
/// (docs/performance.md).
TG_API Tensor linear(const Tensor& x, const Tensor& weight, const Tensor& bias = Tensor(),
                     Loc loc = Loc::current());

namespace detail {
TG_API std::int64_t ceil_div(std::int64_t a, std::int64_t b);
TG_API Shape leading(const Tensor& x, int drop);
TG_API Shape with(Shape s, std::initializer_list<SInt> tail);

/// Sliding windows over the last axis: x [..., L] -> [..., O, K] with
/// out[..., o, k] = x[..., o * stride + k * dilation], O = (L - dilation * (K - 1) - 1) / stride
/// + 1. Movement ops only (a view); `large` forces the repeat trick used for kernels above 8 taps.
TG_API Tensor windows_last(const Tensor& x, std::int64_t k, std::int64_t stride,
                           std::int64_t dilation, bool large = false);

/// x [N, C, H, W] (already padded) -> [N, C, OH, OW, KH, KW].
TG_API Tensor windows2d(const Tensor& x, std::array<std::int64_t, 2> k,
                        std::array<std::int64_t, 2> s, std::array<std::int64_t, 2> d,
                        bool large = false);

TG_API void check_pos(const char* op, const char* what, std::array<std::int64_t, 2> v,
                      bool allow_zero, Loc loc);
TG_API void check_4d(const Tensor& x, const char* op, Loc loc);
} // namespace detail

/// A pair of sizes for the two spatial axes; an integer means both.
struct Pair {
  std::array<std::int64_t, 2> v;
  Pair(std::int64_t a) : v{a, a} {}
  Pair(std::int64_t a, std::int64_t b) : v{a, b} {}
  Pair(std::array<std::int64_t, 2> a) : v(a) {}
  std::int64_t operator[](int i) const { return v[std::size_t(i)]; }
};

namespace detail {
/// The (padded) input must hold one dilated window in each spatial axis.
TG_API void check_window_fits(const char* op, const Tensor& x, Pair kernel, Pair padding,
                              Pair dilation, Loc loc);

/// The windows [N, C, OH, OW, KH, KW] of xp [N, C, H, W] as one strided view (MoveOp::Window):
/// window (oh, ow) starts at row oh * stride, column ow * stride; tap (kh, kw) lies kh * dilation
/// rows and kw * dilation columns on.
TG_API Tensor window_view(const Tensor& xp, std::int64_t KH, std::int64_t KW, Pair stride,
                          Pair dilation);

/// The convolution of a padded, contiguous xp [N, C, H, W] with filters f [groups, O / groups,
/// C / groups, KH, KW]: one reduction over a strided window view of xp (no columns), shaped
/// [N, groups, O / groups, OH, OW, 1, 1, 1].
TG_API Tensor conv_windows(const Tensor& xp, const Tensor& f, Pair stride, Pair dilation, Loc loc);

/// conv2d's gradients, each a reduction over windows as the forward pass: dX a convolution of
/// the output gradient (spread by the stride, padded) with the flipped filters, dW the windows
/// times the output gradient in channels-last order, in partial sums over groups of images, then
/// summed over the groups.
class ConvGrad final : public CustomGrad {
public:
  ConvGrad(Tensor xp, Tensor weight, Shape x_shape, Pair stride, Pair padding, Pair dilation,
           std::int64_t groups, bool x_grad, Loc loc);
  std::vector<Tensor> operator()(const Tensor& grad) const override;

private:
  Tensor xp_, weight_; // the padded input the forward pass read, and the filters
  Shape x_shape_;
  Pair stride_, padding_, dilation_;
  std::int64_t groups_;
  bool x_grad_;
  Loc loc_;
};
} // namespace detail

/// 2-D convolution (cross-correlation, as PyTorch): x [N, C, H, W], weight [O, C / groups, KH, KW].
TG_API Tensor conv2d(const Tensor& x, const Tensor& weight, const Tensor& bias = Tensor(),
                     Pair stride = 1, Pair padding = 0, Pair dilation = 1, std::int64_t groups = 1,
                     Loc loc = Loc::current());

namespace detail {
/// The extra bottom/right padding that makes windows2d give ceil_mode's output size: windows
/// that pass the end of the input by less than a stride are kept, unless one would start in the
/// right padding (PyTorch's rule).
TG_API std::array<std::int64_t, 2> ceil_extra(const Tensor& x, Pair k, Pair s, Pair p, Pair d);
} // namespace detail

/// Max over windows; padding reads as -inf. ceil_mode keeps the last, partial windows.
TG_API Tensor max_pool2d(const Tensor& x, Pair kernel_size,
                         std::optional<Pair> stride = std::nullopt, Pair padding = 0,
                         Pair dilation = 1, bool ceil_mode = false, Loc loc = Loc::current());

/// max_pool2d and, for each output, where its maximum is in the input: int64 indices into each
/// [H, W] plane (h * W + w), as PyTorch's return_indices (F.max_pool2d_with_indices): the first
/// maximum of a window in row-major order, or its last NaN; a window whose values are all -inf
/// names its first element inside the input.
TG_API std::pair<Tensor, Tensor> max_pool2d_with_indices(const Tensor& x, Pair kernel_size,
                                                         std::optional<Pair> stride = std::nullopt,
                                                         Pair padding = 0, Pair dilation = 1,
                                                         bool ceil_mode = false,
                                                         Loc loc = Loc::current());

/// Mean over windows. The divisor is the window's size within the padded input (zero padding
/// counts) unless count_include_pad is false (only input elements count), or divisor_override.
/// ceil_mode keeps the last, partial windows (their divisor counts what they cover).
TG_API Tensor avg_pool2d(const Tensor& x, Pair kernel_size,
                         std::optional<Pair> stride = std::nullopt, Pair padding = 0,
                         bool ceil_mode = false, bool count_include_pad = true,
                         std::optional<std::int64_t> divisor_override = std::nullopt,
                         Loc loc = Loc::current());

namespace detail {
/// (x - mean) / sqrt(var + eps) * weight + bias, the statistics per channel (axis 1).
TG_API Tensor normalize_channels(const Tensor& x, const Tensor& mean, const Tensor& var,
                                 const Tensor& weight, const Tensor& bias, double eps, Loc loc);
/// Batch normalization by the batch's statistics (every axis but 1); where running_mean and
/// running_var are given, they move toward the batch's mean and unbiased variance by `momentum`
/// (a 0-d tensor, so that BatchNorm's cumulative average needs no host read): the updates are
/// added to `updates`, for the caller's one tg::assign.
TG_API Tensor batch_norm_train(const Tensor& x, const Tensor& running_mean,
                               const Tensor& running_var, const Tensor& weight, const Tensor& bias,
                               const Tensor& momentum, double eps,
                               std::vector<std::pair<Tensor, Tensor>>& updates, Loc loc);
TG_API void check_running(const Tensor& x, const Tensor& t, const char* what, Loc loc);
} // namespace detail

/// torch.nn.functional.batch_norm: normalizes each channel (axis 1). Not training: by
/// running_mean and running_var. Training: by the batch's statistics, and the running
/// statistics, where given, are updated in place (new = (1 - momentum) old + momentum batch,
/// with the batch's unbiased variance).
TG_API Tensor batch_norm(const Tensor& x, const Tensor& running_mean, const Tensor& running_var,
                         const Tensor& weight = Tensor(), const Tensor& bias = Tensor(),
                         bool training = false, double momentum = 0.1, double eps = 1e-5,
                         Loc loc = Loc::current());

TG_API std::vector<int> last_axes(const Tensor& x, std::size_t n, const char* op, Loc loc);
TG_API void check_normalized(const Tensor& x, const std::vector<std::int64_t>& shape,
                             const char* op, Loc loc);

/// (x - mean) / sqrt(var + eps) * weight + bias over the last dims (biased variance).
TG_API Tensor layer_norm(const Tensor& x, const std::vector<std::int64_t>& normalized_shape,
                         const Tensor& weight = Tensor(), const Tensor& bias = Tensor(),
                         double eps = 1e-5, Loc loc = Loc::current());

/// x / sqrt(mean(x^2) + eps) * weight over the last dims; eps defaults to the dtype's epsilon.
TG_API Tensor rms_norm(const Tensor& x, const std::vector<std::int64_t>& normalized_shape,
                       const Tensor& weight = Tensor(), std::optional<double> eps = std::nullopt,
                       Loc loc = Loc::current());

namespace detail {
/// [0, n) as int64 on a device, uploaded once per (n, device, dtype).
TG_API Tensor cached_arange(std::int64_t n, const std::string& device, DType t);
/// One-hot of integer indices: idx [...] -> bool [..., n].
/// The dtype integer indices are compared in: int32 unless they are 64-bit, so that devices
/// without 64-bit types (WGSL's) run embeddings and classification losses.
TG_API DType index_dtype(const Tensor& idx);
TG_API Tensor one_hot_mask(const Tensor& idx, std::int64_t n);
/// idx != value, compared in index_dtype (a value outside its range is never equal).
TG_API Tensor index_ne(const Tensor& idx, std::int64_t value);
} // namespace detail

/// Rows of `weight` [V, D] picked by the integer tensor `idx`: [..., D]. Computed as a one-hot
/// product (no host read of the indices, so it can be captured by tg::jit); an index outside
/// [0, V) gives a row of zeros. Rows at padding_idx get no gradient.
TG_API Tensor embedding(const Tensor& idx, const Tensor& weight,
                        std::optional<std::int64_t> padding_idx = std::nullopt,
                        Loc loc = Loc::current());

// ---- randomness on the device ----------------------------------------------------------------
namespace detail {
TG_API Tensor u32(std::uint32_t v, const std::string& dev);
TG_API Tensor shr(const Tensor& x, int k);
TG_API Tensor xor_(const Tensor& a, const Tensor& b);
/// Chris Wellons' lowbias32 integer hash.
TG_API Tensor hash32(Tensor x);
/// A device-side random state: a uint32 counter per device, seeded from tg's generator.
TG_API Tensor& rng_state(const std::string& device);
} // namespace detail

/// Uniform [0, 1) float32 values of `shape`, generated on the device from a counter-based hash.
/// Each call takes a fresh key from the device's random state and advances it with tg::assign,
/// so a function captured by tg::jit draws new values on every replay.
TG_API Tensor device_rand(const Shape& shape, const std::string& device = "");

/// Zeroes elements with probability p and scales the rest by 1 / (1 - p) in training; the
/// identity otherwise.
TG_API Tensor dropout(const Tensor& x, double p = 0.5, bool training = true,
                      Loc loc = Loc::current());

/// softmax(q k^T * scale + mask) v. q [..., L, E], k [..., S, E], v [..., S, Ev]; attn_mask
/// is bool (true: may attend) or float (added to the scores); is_causal masks j > i.
TG_API Tensor scaled_dot_product_attention(const Tensor& q, const Tensor& k, const Tensor& v,
                                           const Tensor& attn_mask = Tensor(), double dropout_p = 0,
                                           bool is_causal = false,
                                           std::optional<double> scale = std::nullopt,
                                           Loc loc = Loc::current());

/// One-hot rows of class indices (int64, [..., num_classes]); num_classes = -1 takes the largest
/// index + 1 (read on the host).
TG_API Tensor one_hot(const Tensor& idx, std::int64_t num_classes = -1, Loc loc = Loc::current());

/// 1-D convolution: x [N, C, L], weight [O, C / groups, K] (conv2d over a height of 1).
TG_API Tensor conv1d(const Tensor& x, const Tensor& weight, const Tensor& bias = Tensor(),
                     std::int64_t stride = 1, std::int64_t padding = 0, std::int64_t dilation = 1,
                     std::int64_t groups = 1, Loc loc = Loc::current());

/// The transpose (gradient) of conv2d: x [N, Cin, H, W], weight [Cin, Cout / groups, KH, KW];
/// out size (H - 1) stride - 2 padding + dilation (KH - 1) + output_padding + 1. A conv2d over
/// the input spread out by stride and padded, with the kernel flipped.
TG_API Tensor conv_transpose2d(const Tensor& x, const Tensor& weight, const Tensor& bias = Tensor(),
                               Pair stride = 1, Pair padding = 0, Pair output_padding = 0,
                               std::int64_t groups = 1, Pair dilation = 1,
                               Loc loc = Loc::current());

/// Normalization over groups of channels: x [N, C, ...], C divisible by num_groups; weight and
/// bias [C] (biased variance, as PyTorch).
TG_API Tensor group_norm(const Tensor& x, std::int64_t num_groups, const Tensor& weight = Tensor(),
                         const Tensor& bias = Tensor(), double eps = 1e-5,
                         Loc loc = Loc::current());
/// Normalization of each channel of each sample over its spatial dims (no running statistics).
TG_API Tensor instance_norm(const Tensor& x, const Tensor& weight = Tensor(),
                            const Tensor& bias = Tensor(), double eps = 1e-5,
                            Loc loc = Loc::current());

namespace detail {
/// [out, in] weights of adaptive average pooling along one axis: window o is [floor(o in / out),
/// ceil((o + 1) in / out)).
TG_API Tensor adaptive_matrix(std::int64_t in, std::int64_t out, DType t, const std::string& dev);
/// [out, in] weights of bilinear interpolation along one axis (align_corners as PyTorch).
TG_API Tensor linear_matrix(std::int64_t in, std::int64_t out, double scale, bool align_corners,
                            DType t, const std::string& dev);
} // namespace detail

/// Average pooling to a given output size [OH, OW]: x [N, C, H, W] (two small matrix products).
TG_API Tensor adaptive_avg_pool2d(const Tensor& x, Pair output_size, Loc loc = Loc::current());

/// Resizes x [N, C, H, W] to `size` or by `scale_factor`: mode "nearest" (PyTorch's: source
/// index floor(o * in / out)) or "bilinear" (align_corners as PyTorch).
TG_API Tensor interpolate(const Tensor& x, std::optional<Pair> size,
                          std::optional<std::array<double, 2>> scale_factor = std::nullopt,
                          const std::string& mode = "nearest", bool align_corners = false,
                          Loc loc = Loc::current());

} // namespace tg::nn::functional

namespace tg::nn {
namespace F = functional;
} // namespace tg::nn

namespace tg {

/// torch.multinomial: `num_samples` category indices (int64) per row of `input` ([C] or [N, C]
/// non-negative weights, not necessarily normalized), drawn with or without replacement. Each draw
/// is the exponential race: category i wins with key w_i / E_i, E_i ~ Exp(1) from
/// nn::F::device_rand, so a call draws on the device and a function captured by tg::jit draws anew
/// on every replay. With replacement, every sample races all categories ([N, S, C] keys, one fused
/// reduction); without, the `num_samples` largest keys of one race are the samples, in order.
/// The weights are not read back to the host: negative, NaN or all-zero rows are not refused (as
/// PyTorch does) and give unspecified indices; a zero-weight category is drawn only when a row has
/// fewer positive weights than samples without replacement.
TG_API Tensor multinomial(const Tensor& input, std::int64_t num_samples, bool replacement = false,
                          std::source_location loc = std::source_location::current());

} // namespace tg
