#pragma once
// nn layers with PyTorch's parameter names, shapes, defaults and initialization.
#include "../util/function.hpp"
#include "functional.hpp"

namespace tg::nn {

namespace detail {
inline std::string b(bool v) { return v ? "True" : "False"; }
inline std::string pair_str(const F::Pair& p) {
  return "(" + std::to_string(p[0]) + ", " + std::to_string(p[1]) + ")";
}
inline std::string dims_str(const std::vector<std::int64_t>& v) {
  std::string s = "(";
  for (std::size_t i = 0; i < v.size(); ++i) {
    if (i) s += ", ";
    s += std::to_string(v[i]);
  }
  return s + (v.size() == 1 ? ",)" : ")");
}
} // namespace detail

/// y = x W^T + b. W [out, in] ~ kaiming_uniform(a = sqrt(5)), b ~ U(-1/sqrt(in), 1/sqrt(in)).
class Linear : public Module {
public:
  std::int64_t in_features, out_features;
  Tensor weight, bias;

  Linear(std::int64_t in_features_, std::int64_t out_features_, bool with_bias = true,
         TensorOptions o = {});
  Tensor forward(const Tensor& x) override;
  std::string type_name() const override;
  std::string extra_repr() const override;
};

/// 2-D convolution. weight [out, in / groups, KH, KW] ~ kaiming_uniform(a = sqrt(5)),
/// bias ~ U(-1/sqrt(fan_in), 1/sqrt(fan_in)).
class Conv2d : public Module {
public:
  std::int64_t in_channels, out_channels, groups;
  F::Pair kernel_size, stride, padding, dilation;
  Tensor weight, bias;

  Conv2d(std::int64_t in_channels_, std::int64_t out_channels_, F::Pair kernel_size_,
         F::Pair stride_ = 1, F::Pair padding_ = 0, F::Pair dilation_ = 1, std::int64_t groups_ = 1,
         bool with_bias = true, TensorOptions o = {});
  Tensor forward(const Tensor& x) override;
  std::string type_name() const override;
  std::string extra_repr() const override;
};

/// 1-D convolution: weight [out, in / groups, K], initialized as Conv2d's.
class Conv1d : public Module {
public:
  std::int64_t in_channels, out_channels, kernel_size, stride, padding, dilation, groups;
  Tensor weight, bias;

  Conv1d(std::int64_t in_channels_, std::int64_t out_channels_, std::int64_t kernel_size_,
         std::int64_t stride_ = 1, std::int64_t padding_ = 0, std::int64_t dilation_ = 1,
         std::int64_t groups_ = 1, bool with_bias = true, TensorOptions o = {});
  Tensor forward(const Tensor& x) override;
  std::string type_name() const override;
  std::string extra_repr() const override;
};

/// Transposed 2-D convolution: weight [in, out / groups, KH, KW] (PyTorch's layout and init).
class ConvTranspose2d : public Module {
public:
  std::int64_t in_channels, out_channels, groups;
  F::Pair kernel_size, stride, padding, output_padding, dilation;
  Tensor weight, bias;

  ConvTranspose2d(std::int64_t in_channels_, std::int64_t out_channels_, F::Pair kernel_size_,
                  F::Pair stride_ = 1, F::Pair padding_ = 0, F::Pair output_padding_ = 0,
                  std::int64_t groups_ = 1, bool with_bias = true, F::Pair dilation_ = 1,
                  TensorOptions o = {});
  Tensor forward(const Tensor& x) override;
  std::string type_name() const override;
  std::string extra_repr() const override;
};

class MaxPool2d : public Module {
public:
  F::Pair kernel_size, stride, padding, dilation;
  bool ceil_mode;
  /// PyTorch's MaxPool2d takes return_indices before ceil_mode; here forward_with_indices()
  /// returns the indices.
  MaxPool2d(F::Pair kernel_size_, std::optional<F::Pair> stride_ = std::nullopt,
            F::Pair padding_ = 0, F::Pair dilation_ = 1, bool ceil_mode_ = false);
  Tensor forward(const Tensor& x) override;
  /// The output and where each maximum is in the input (F::max_pool2d_with_indices).
  std::pair<Tensor, Tensor> forward_with_indices(const Tensor& x);
  std::string type_name() const override;
  std::string extra_repr() const override;
};

class AvgPool2d : public Module {
public:
  F::Pair kernel_size, stride, padding;
  bool ceil_mode, count_include_pad;
  std::optional<std::int64_t> divisor_override;
  AvgPool2d(F::Pair kernel_size_, std::optional<F::Pair> stride_ = std::nullopt,
            F::Pair padding_ = 0, bool ceil_mode_ = false, bool count_include_pad_ = true,
            std::optional<std::int64_t> divisor_override_ = std::nullopt);
  Tensor forward(const Tensor& x) override;
  std::string type_name() const override;
  std::string extra_repr() const override;
};

/// Batch normalization over [N, C, H, W] per channel. In training mode it normalizes with the
/// batch's statistics and updates running_mean / running_var (unbiased) in place with tg::assign:
/// running = (1 - momentum) * running + momentum * batch (momentum = nullopt: a cumulative
/// average). In eval mode it normalizes with the running statistics.
namespace detail {
/// BatchNorm1d/2d/3d: batch statistics in training (and the running ones updated), the running
/// ones in evaluation; momentum nullopt is the cumulative average (1 / batches seen).
template <int Dims> class BatchNorm : public Module {
public:
  std::int64_t num_features;
  double eps;
  std::optional<double> momentum;
  bool affine, track_running_stats;
  Tensor weight, bias, running_mean, running_var, num_batches_tracked;

  explicit BatchNorm(std::int64_t num_features_, double eps_ = 1e-5,
                     std::optional<double> momentum_ = 0.1, bool affine_ = true,
                     bool track_running_stats_ = true, TensorOptions o = {})
      : num_features(num_features_), eps(eps_), momentum(momentum_), affine(affine_),
        track_running_stats(track_running_stats_) {
    if (affine) {
      register_parameter("weight", weight = init::ones({num_features}, o));
      register_parameter("bias", bias = init::zeros({num_features}, o));
    }
    if (track_running_stats) {
      register_buffer("running_mean", running_mean = init::zeros({num_features}, o));
      register_buffer("running_var", running_var = init::ones({num_features}, o));
      register_buffer("num_batches_tracked", num_batches_tracked = Tensor::from_data(
                                                 std::vector<std::int64_t>{0}, Shape{},
                                                 TensorOptions(DType::Int64, o.device)));
    }
  }
  Tensor forward(const Tensor& x) override {
    // BatchNorm1d takes [N, C] or [N, C, L]; 2d [N, C, H, W]; 3d [N, C, D, H, W]
    const bool rank_ok = Dims == 1 ? x.ndim() == 2 || x.ndim() == 3 : x.ndim() == Dims + 2;
    if (!rank_ok || x.size(1) != num_features) {
      std::string want = Dims == 1 ? "[N, " + std::to_string(num_features) + "] or [N, " +
                                         std::to_string(num_features) + ", L]"
                         : Dims == 2 ? "[N, " + std::to_string(num_features) + ", H, W]"
                                     : "[N, " + std::to_string(num_features) + ", D, H, W]";
      throw shape_error("tg.nn." + type_name() + ": expected an input " + want + ", got " +
                        tg::detail::shape_of(x));
    }
    if (!is_training() && track_running_stats)
      return F::batch_norm(x, running_mean, running_var, weight, bias, false, 0, eps);
    std::vector<std::pair<Tensor, Tensor>> updates;
    if (!is_training() || !track_running_stats)
      return F::detail::batch_norm_train(x, Tensor(), Tensor(), weight, bias, Tensor(), eps,
                                         updates, std::source_location::current());
    Tensor count = num_batches_tracked + std::int64_t(1);
    Tensor m = momentum ? Tensor::full_on({}, *momentum, running_mean.dtype(), x.device())
                        : (1.0 / count.cast(DType::Float64)).cast(running_mean.dtype());
    Tensor y = F::detail::batch_norm_train(x, running_mean, running_var, weight, bias, m, eps,
                                           updates, std::source_location::current());
    updates.push_back({num_batches_tracked, count});
    tg::assign(updates);
    return y;
  }
  std::string type_name() const override { return "BatchNorm" + std::to_string(Dims) + "d"; }
  std::string extra_repr() const override {
    return std::to_string(num_features) + ", eps=" + std::to_string(eps) +
           ", momentum=" + (momentum ? std::to_string(*momentum) : "None") +
           ", affine=" + detail::b(affine) +
           ", track_running_stats=" + detail::b(track_running_stats);
  }
};
} // namespace detail

using BatchNorm1d = detail::BatchNorm<1>;
using BatchNorm2d = detail::BatchNorm<2>;
using BatchNorm3d = detail::BatchNorm<3>;

/// Normalization over the last dims: weight = 1, bias = 0.
class LayerNorm : public Module {
public:
  std::vector<std::int64_t> normalized_shape;
  double eps;
  Tensor weight, bias;
  explicit LayerNorm(std::vector<std::int64_t> normalized_shape_, double eps_ = 1e-5,
                     bool elementwise_affine = true, bool with_bias = true, TensorOptions o = {});
  explicit LayerNorm(std::int64_t dim, double eps_ = 1e-5, bool elementwise_affine = true,
                     bool with_bias = true, TensorOptions o = {});
  Tensor forward(const Tensor& x) override;
  std::string type_name() const override;
  std::string extra_repr() const override;
};

/// Normalization over groups of channels (F::group_norm); weight ones, bias zeros.
class GroupNorm : public Module {
public:
  std::int64_t num_groups, num_channels;
  double eps;
  Tensor weight, bias;
  GroupNorm(std::int64_t num_groups_, std::int64_t num_channels_, double eps_ = 1e-5,
            bool affine = true, TensorOptions o = {});
  Tensor forward(const Tensor& x) override;
  std::string type_name() const override;
  std::string extra_repr() const override;
};

/// x / sqrt(mean(x^2) + eps) * weight over the last dims (eps: the dtype's epsilon by default).
class RMSNorm : public Module {
public:
  std::vector<std::int64_t> normalized_shape;
  std::optional<double> eps;
  Tensor weight;
  explicit RMSNorm(std::vector<std::int64_t> normalized_shape_,
                   std::optional<double> eps_ = std::nullopt, bool elementwise_affine = true,
                   TensorOptions o = {});
  explicit RMSNorm(std::int64_t dim, std::optional<double> eps_ = std::nullopt,
                   bool elementwise_affine = true, TensorOptions o = {});
  Tensor forward(const Tensor& x) override;
  std::string type_name() const override;
  std::string extra_repr() const override;
};

/// A lookup table: weight [num_embeddings, embedding_dim] ~ N(0, 1); the padding_idx row is zero
/// and gets no gradient.
class Embedding : public Module {
public:
  std::int64_t num_embeddings, embedding_dim;
  std::optional<std::int64_t> padding_idx;
  Tensor weight;
  Embedding(std::int64_t num_embeddings_, std::int64_t embedding_dim_,
            std::optional<std::int64_t> padding_idx_ = std::nullopt, TensorOptions o = {});
  Tensor forward(const Tensor& idx) override;
  std::string type_name() const override;
  std::string extra_repr() const override;
};

/// Zeroes elements with probability p (on the device, fresh on every call, also under tg::jit)
/// and scales the rest by 1 / (1 - p) in training mode; the identity in eval mode.
class Dropout : public Module {
public:
  double p;
  explicit Dropout(double p_ = 0.5);
  Tensor forward(const Tensor& x) override;
  std::string type_name() const override;
  std::string extra_repr() const override;
};

/// Multi-head attention (torch.nn.MultiheadAttention, with kdim = vdim = embed_dim): the packed
/// in_proj_weight [3E, E] ~ xavier_uniform, in_proj_bias = 0, out_proj a Linear with bias 0.
/// Inputs are [L, N, E] ([N, L, E] with batch_first). As in PyTorch, a bool attn_mask or
/// key_padding_mask is true where attention is NOT allowed; a float mask is added to the scores.
/// forward returns the output only (no attention weights).
class MultiheadAttention : public Module {
public:
  std::int64_t embed_dim, num_heads;
  double dropout;
  bool batch_first;
  Tensor in_proj_weight, in_proj_bias;
  Linear out_proj;

  MultiheadAttention(std::int64_t embed_dim_, std::int64_t num_heads_, double dropout_ = 0,
                     bool with_bias = true, bool batch_first_ = false, TensorOptions o = {});

  /// Self-attention: forward(x, x, x).
  Tensor forward(const Tensor& x) override;
  Tensor forward(const Tensor& query, const Tensor& key, const Tensor& value,
                 const Tensor& attn_mask = Tensor(), bool is_causal = false,
                 const Tensor& key_padding_mask = Tensor());
  std::string type_name() const override;
  std::string extra_repr() const override;
};

// ---- parameter-free modules (for Sequential) -------------------------------------------------
class Identity : public Module {
public:
  Tensor forward(const Tensor& x) override;
  std::string type_name() const override;
};
class ReLU : public Module {
public:
  Tensor forward(const Tensor& x) override;
  std::string type_name() const override;
};
class LeakyReLU : public Module {
public:
  double negative_slope;
  explicit LeakyReLU(double negative_slope_ = 0.01);
  Tensor forward(const Tensor& x) override;
  std::string type_name() const override;
};
class GELU : public Module {
public:
  std::string approximate;
  explicit GELU(std::string approximate_ = "none");
  Tensor forward(const Tensor& x) override;
  std::string type_name() const override;
};
class SiLU : public Module {
public:
  Tensor forward(const Tensor& x) override;
  std::string type_name() const override;
};
class Tanh : public Module {
public:
  Tensor forward(const Tensor& x) override;
  std::string type_name() const override;
};
class Sigmoid : public Module {
public:
  Tensor forward(const Tensor& x) override;
  std::string type_name() const override;
};
class Softmax : public Module {
public:
  int dim;
  explicit Softmax(int dim_);
  Tensor forward(const Tensor& x) override;
  std::string type_name() const override;
};
class Flatten : public Module {
public:
  int start_dim, end_dim;
  explicit Flatten(int start_dim_ = 1, int end_dim_ = -1);
  Tensor forward(const Tensor& x) override;
  std::string type_name() const override;
};
/// Any function of one tensor as a module: Lambda([](const Tensor& x) { return x * 2; }).
class Lambda : public Module {
public:
  tg::detail::Function<Tensor(const Tensor&)> fn;
  explicit Lambda(tg::detail::Function<Tensor(const Tensor&)> f);
  Tensor forward(const Tensor& x) override;
  std::string type_name() const override;
};

} // namespace tg::nn
