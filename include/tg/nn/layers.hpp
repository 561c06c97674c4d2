#pragma once
// nn layers with PyTorch's parameter names, shapes, defaults and initialization.
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
         TensorOptions o = {})
      : in_features(in_features_), out_features(out_features_) {
    register_parameter("weight",
                       weight = init::kaiming_uniform({out_features, in_features}, std::sqrt(5.0),
                                                      "fan_in", "leaky_relu", o));
    if (with_bias) {
      double bound = in_features > 0 ? 1.0 / std::sqrt(double(in_features)) : 0.0;
      register_parameter("bias", bias = init::uniform({out_features}, -bound, bound, o));
    }
  }
  Tensor forward(const Tensor& x) override { return F::linear(x, weight, bias); }
  std::string type_name() const override { return "Linear"; }
  std::string extra_repr() const override {
    return "in_features=" + std::to_string(in_features) +
           ", out_features=" + std::to_string(out_features) + ", bias=" + detail::b(bias.defined());
  }
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
         bool with_bias = true, TensorOptions o = {})
      : in_channels(in_channels_), out_channels(out_channels_), groups(groups_),
        kernel_size(kernel_size_), stride(stride_), padding(padding_), dilation(dilation_) {
    if (groups < 1 || in_channels % groups || out_channels % groups)
      throw shape_error("tg.nn.Conv2d: in_channels (" + std::to_string(in_channels) +
                        ") and out_channels (" + std::to_string(out_channels) +
                        ") must be divisible by groups (" + std::to_string(groups) + ")");
    register_parameter("weight",
                       weight = init::kaiming_uniform(
                           {out_channels, in_channels / groups, kernel_size[0], kernel_size[1]},
                           std::sqrt(5.0), "fan_in", "leaky_relu", o));
    if (with_bias) {
      std::int64_t fan_in = in_channels / groups * kernel_size[0] * kernel_size[1];
      double bound = fan_in > 0 ? 1.0 / std::sqrt(double(fan_in)) : 0.0;
      register_parameter("bias", bias = init::uniform({out_channels}, -bound, bound, o));
    }
  }
  Tensor forward(const Tensor& x) override {
    return F::conv2d(x, weight, bias, stride, padding, dilation, groups);
  }
  std::string type_name() const override { return "Conv2d"; }
  std::string extra_repr() const override {
    std::string r = std::to_string(in_channels) + ", " + std::to_string(out_channels) +
                    ", kernel_size=" + detail::pair_str(kernel_size) +
                    ", stride=" + detail::pair_str(stride);
    if (padding[0] || padding[1]) r += ", padding=" + detail::pair_str(padding);
    if (dilation[0] != 1 || dilation[1] != 1) r += ", dilation=" + detail::pair_str(dilation);
    if (groups != 1) r += ", groups=" + std::to_string(groups);
    if (!bias.defined()) r += ", bias=False";
    return r;
  }
};

/// 1-D convolution: weight [out, in / groups, K], initialized as Conv2d's.
class Conv1d : public Module {
public:
  std::int64_t in_channels, out_channels, kernel_size, stride, padding, dilation, groups;
  Tensor weight, bias;

  Conv1d(std::int64_t in_channels_, std::int64_t out_channels_, std::int64_t kernel_size_,
         std::int64_t stride_ = 1, std::int64_t padding_ = 0, std::int64_t dilation_ = 1,
         std::int64_t groups_ = 1, bool with_bias = true, TensorOptions o = {})
      : in_channels(in_channels_), out_channels(out_channels_), kernel_size(kernel_size_),
        stride(stride_), padding(padding_), dilation(dilation_), groups(groups_) {
    if (groups < 1 || in_channels % groups || out_channels % groups)
      throw shape_error("tg.nn.Conv1d: in_channels (" + std::to_string(in_channels) +
                        ") and out_channels (" + std::to_string(out_channels) +
                        ") must be divisible by groups (" + std::to_string(groups) + ")");
    register_parameter(
        "weight", weight = init::kaiming_uniform({out_channels, in_channels / groups, kernel_size},
                                                 std::sqrt(5.0), "fan_in", "leaky_relu", o));
    if (with_bias) {
      std::int64_t fan_in = in_channels / groups * kernel_size;
      double bound = fan_in > 0 ? 1.0 / std::sqrt(double(fan_in)) : 0.0;
      register_parameter("bias", bias = init::uniform({out_channels}, -bound, bound, o));
    }
  }
  Tensor forward(const Tensor& x) override {
    return F::conv1d(x, weight, bias, stride, padding, dilation, groups);
  }
  std::string type_name() const override { return "Conv1d"; }
  std::string extra_repr() const override {
    std::string r = std::to_string(in_channels) + ", " + std::to_string(out_channels) +
                    ", kernel_size=(" + std::to_string(kernel_size) + ",), stride=(" +
                    std::to_string(stride) + ",)";
    if (padding) r += ", padding=(" + std::to_string(padding) + ",)";
    if (dilation != 1) r += ", dilation=(" + std::to_string(dilation) + ",)";
    if (groups != 1) r += ", groups=" + std::to_string(groups);
    if (!bias.defined()) r += ", bias=False";
    return r;
  }
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
                  TensorOptions o = {})
      : in_channels(in_channels_), out_channels(out_channels_), groups(groups_),
        kernel_size(kernel_size_), stride(stride_), padding(padding_),
        output_padding(output_padding_), dilation(dilation_) {
    if (groups < 1 || in_channels % groups || out_channels % groups)
      throw shape_error("tg.nn.ConvTranspose2d: in_channels (" + std::to_string(in_channels) +
                        ") and out_channels (" + std::to_string(out_channels) +
                        ") must be divisible by groups (" + std::to_string(groups) + ")");
    // PyTorch computes fan_in from dim 1 of this weight: out / groups * KH * KW
    register_parameter("weight",
                       weight = init::kaiming_uniform(
                           {in_channels, out_channels / groups, kernel_size[0], kernel_size[1]},
                           std::sqrt(5.0), "fan_in", "leaky_relu", o));
    if (with_bias) {
      std::int64_t fan_in = out_channels / groups * kernel_size[0] * kernel_size[1];
      double bound = fan_in > 0 ? 1.0 / std::sqrt(double(fan_in)) : 0.0;
      register_parameter("bias", bias = init::uniform({out_channels}, -bound, bound, o));
    }
  }
  Tensor forward(const Tensor& x) override {
    return F::conv_transpose2d(x, weight, bias, stride, padding, output_padding, groups, dilation);
  }
  std::string type_name() const override { return "ConvTranspose2d"; }
  std::string extra_repr() const override {
    std::string r = std::to_string(in_channels) + ", " + std::to_string(out_channels) +
                    ", kernel_size=" + detail::pair_str(kernel_size) +
                    ", stride=" + detail::pair_str(stride);
    if (padding[0] || padding[1]) r += ", padding=" + detail::pair_str(padding);
    if (output_padding[0] || output_padding[1])
      r += ", output_padding=" + detail::pair_str(output_padding);
    if (dilation[0] != 1 || dilation[1] != 1) r += ", dilation=" + detail::pair_str(dilation);
    if (groups != 1) r += ", groups=" + std::to_string(groups);
    if (!bias.defined()) r += ", bias=False";
    return r;
  }
};

class MaxPool2d : public Module {
public:
  F::Pair kernel_size, stride, padding, dilation;
  bool ceil_mode;
  /// PyTorch's MaxPool2d takes return_indices before ceil_mode; tg has no return_indices.
  MaxPool2d(F::Pair kernel_size_, std::optional<F::Pair> stride_ = std::nullopt,
            F::Pair padding_ = 0, F::Pair dilation_ = 1, bool ceil_mode_ = false)
      : kernel_size(kernel_size_), stride(stride_.value_or(kernel_size_)), padding(padding_),
        dilation(dilation_), ceil_mode(ceil_mode_) {}
  Tensor forward(const Tensor& x) override {
    return F::max_pool2d(x, kernel_size, stride, padding, dilation, ceil_mode);
  }
  std::string type_name() const override { return "MaxPool2d"; }
  std::string extra_repr() const override {
    return "kernel_size=" + detail::pair_str(kernel_size) + ", stride=" + detail::pair_str(stride) +
           ", padding=" + detail::pair_str(padding) + ", dilation=" + detail::pair_str(dilation) +
           ", ceil_mode=" + (ceil_mode ? "True" : "False");
  }
};

class AvgPool2d : public Module {
public:
  F::Pair kernel_size, stride, padding;
  bool ceil_mode, count_include_pad;
  std::optional<std::int64_t> divisor_override;
  AvgPool2d(F::Pair kernel_size_, std::optional<F::Pair> stride_ = std::nullopt,
            F::Pair padding_ = 0, bool ceil_mode_ = false, bool count_include_pad_ = true,
            std::optional<std::int64_t> divisor_override_ = std::nullopt)
      : kernel_size(kernel_size_), stride(stride_.value_or(kernel_size_)), padding(padding_),
        ceil_mode(ceil_mode_), count_include_pad(count_include_pad_),
        divisor_override(divisor_override_) {}
  Tensor forward(const Tensor& x) override {
    return F::avg_pool2d(x, kernel_size, stride, padding, ceil_mode, count_include_pad,
                         divisor_override);
  }
  std::string type_name() const override { return "AvgPool2d"; }
  std::string extra_repr() const override {
    return "kernel_size=" + detail::pair_str(kernel_size) + ", stride=" + detail::pair_str(stride) +
           ", padding=" + detail::pair_str(padding);
  }
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
                     bool elementwise_affine = true, bool with_bias = true, TensorOptions o = {})
      : normalized_shape(std::move(normalized_shape_)), eps(eps_) {
    Shape s(normalized_shape.begin(), normalized_shape.end());
    if (elementwise_affine) {
      register_parameter("weight", weight = init::ones(s, o));
      if (with_bias) register_parameter("bias", bias = init::zeros(s, o));
    }
  }
  explicit LayerNorm(std::int64_t dim, double eps_ = 1e-5, bool elementwise_affine = true,
                     bool with_bias = true, TensorOptions o = {})
      : LayerNorm(std::vector<std::int64_t>{dim}, eps_, elementwise_affine, with_bias, o) {}
  Tensor forward(const Tensor& x) override {
    return F::layer_norm(x, normalized_shape, weight, bias, eps);
  }
  std::string type_name() const override { return "LayerNorm"; }
  std::string extra_repr() const override {
    return detail::dims_str(normalized_shape) + ", eps=" + std::to_string(eps) +
           ", elementwise_affine=" + detail::b(weight.defined());
  }
};

/// Normalization over groups of channels (F::group_norm); weight ones, bias zeros.
class GroupNorm : public Module {
public:
  std::int64_t num_groups, num_channels;
  double eps;
  Tensor weight, bias;
  GroupNorm(std::int64_t num_groups_, std::int64_t num_channels_, double eps_ = 1e-5,
            bool affine = true, TensorOptions o = {})
      : num_groups(num_groups_), num_channels(num_channels_), eps(eps_) {
    if (num_groups < 1 || num_channels % num_groups)
      throw shape_error("tg.nn.GroupNorm: num_channels (" + std::to_string(num_channels) +
                        ") must be divisible by num_groups (" + std::to_string(num_groups) + ")");
    if (affine) {
      register_parameter("weight", weight = init::ones({num_channels}, o));
      register_parameter("bias", bias = init::zeros({num_channels}, o));
    }
  }
  Tensor forward(const Tensor& x) override {
    return F::group_norm(x, num_groups, weight, bias, eps);
  }
  std::string type_name() const override { return "GroupNorm"; }
  std::string extra_repr() const override {
    return std::to_string(num_groups) + ", " + std::to_string(num_channels) +
           ", eps=" + std::to_string(eps) + ", affine=" + detail::b(weight.defined());
  }
};

/// x / sqrt(mean(x^2) + eps) * weight over the last dims (eps: the dtype's epsilon by default).
class RMSNorm : public Module {
public:
  std::vector<std::int64_t> normalized_shape;
  std::optional<double> eps;
  Tensor weight;
  explicit RMSNorm(std::vector<std::int64_t> normalized_shape_,
                   std::optional<double> eps_ = std::nullopt, bool elementwise_affine = true,
                   TensorOptions o = {})
      : normalized_shape(std::move(normalized_shape_)), eps(eps_) {
    if (elementwise_affine)
      register_parameter("weight", weight = init::ones(
                                       Shape(normalized_shape.begin(), normalized_shape.end()), o));
  }
  explicit RMSNorm(std::int64_t dim, std::optional<double> eps_ = std::nullopt,
                   bool elementwise_affine = true, TensorOptions o = {})
      : RMSNorm(std::vector<std::int64_t>{dim}, eps_, elementwise_affine, o) {}
  Tensor forward(const Tensor& x) override { return F::rms_norm(x, normalized_shape, weight, eps); }
  std::string type_name() const override { return "RMSNorm"; }
  std::string extra_repr() const override {
    return detail::dims_str(normalized_shape) + ", eps=" + (eps ? std::to_string(*eps) : "None") +
           ", elementwise_affine=" + detail::b(weight.defined());
  }
};

/// A lookup table: weight [num_embeddings, embedding_dim] ~ N(0, 1); the padding_idx row is zero
/// and gets no gradient.
class Embedding : public Module {
public:
  std::int64_t num_embeddings, embedding_dim;
  std::optional<std::int64_t> padding_idx;
  Tensor weight;
  Embedding(std::int64_t num_embeddings_, std::int64_t embedding_dim_,
            std::optional<std::int64_t> padding_idx_ = std::nullopt, TensorOptions o = {})
      : num_embeddings(num_embeddings_), embedding_dim(embedding_dim_), padding_idx(padding_idx_) {
    if (padding_idx) {
      if (*padding_idx < -num_embeddings || *padding_idx >= num_embeddings)
        throw index_error("tg.nn.Embedding: padding_idx " + std::to_string(*padding_idx) +
                          " is out of range");
      if (*padding_idx < 0) *padding_idx += num_embeddings;
    }
    std::vector<double> v = init::detail::draw_normal(num_embeddings * embedding_dim, 0, 1);
    if (padding_idx)
      for (std::int64_t j = 0; j < embedding_dim; ++j)
        v[std::size_t(*padding_idx * embedding_dim + j)] = 0;
    register_parameter("weight",
                       weight = init::detail::fresh({num_embeddings, embedding_dim}, o, v));
  }
  Tensor forward(const Tensor& idx) override { return F::embedding(idx, weight, padding_idx); }
  std::string type_name() const override { return "Embedding"; }
  std::string extra_repr() const override {
    return std::to_string(num_embeddings) + ", " + std::to_string(embedding_dim) +
           (padding_idx ? ", padding_idx=" + std::to_string(*padding_idx) : "");
  }
};

/// Zeroes elements with probability p (on the device, fresh on every call, also under tg::jit)
/// and scales the rest by 1 / (1 - p) in training mode; the identity in eval mode.
class Dropout : public Module {
public:
  double p;
  explicit Dropout(double p_ = 0.5) : p(p_) {
    if (p < 0 || p > 1) throw error("tg.nn.Dropout: p must be in [0, 1], got " + std::to_string(p));
  }
  Tensor forward(const Tensor& x) override { return F::dropout(x, p, is_training()); }
  std::string type_name() const override { return "Dropout"; }
  std::string extra_repr() const override { return "p=" + std::to_string(p); }
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
                     bool with_bias = true, bool batch_first_ = false, TensorOptions o = {})
      : embed_dim(embed_dim_), num_heads(num_heads_), dropout(dropout_), batch_first(batch_first_),
        out_proj(embed_dim_, embed_dim_, with_bias, o) {
    if (num_heads < 1 || embed_dim % num_heads)
      throw shape_error("tg.nn.MultiheadAttention: embed_dim (" + std::to_string(embed_dim) +
                        ") must be divisible by num_heads (" + std::to_string(num_heads) + ")");
    register_parameter("in_proj_weight",
                       in_proj_weight = init::xavier_uniform({3 * embed_dim, embed_dim}, 1.0, o));
    if (with_bias) {
      register_parameter("in_proj_bias", in_proj_bias = init::zeros({3 * embed_dim}, o));
      init::zeros_(out_proj.bias);
    }
    register_module("out_proj", out_proj);
  }

  /// Self-attention: forward(x, x, x).
  Tensor forward(const Tensor& x) override { return forward(x, x, x); }
  Tensor forward(const Tensor& query, const Tensor& key, const Tensor& value,
                 const Tensor& attn_mask = Tensor(), bool is_causal = false,
                 const Tensor& key_padding_mask = Tensor()) {
    if (query.ndim() != 3 || key.ndim() != 3 || value.ndim() != 3)
      throw shape_error("tg.nn.MultiheadAttention: needs 3-D query, key and value, got " +
                        tg::detail::shape_of(query) + ", " + tg::detail::shape_of(key) + ", " +
                        tg::detail::shape_of(value));
    Tensor q = batch_first ? query : query.transpose(0, 1),
           k = batch_first ? key : key.transpose(0, 1),
           v = batch_first ? value : value.transpose(0, 1); // [N, L, E]
    const std::int64_t N = q.size(0), L = q.size(1), S = k.size(1), E = embed_dim, H = num_heads,
                       D = E / H;
    if (q.size(2) != E || k.size(2) != E || v.size(2) != E || k.size(0) != N || v.size(0) != N ||
        v.size(1) != S)
      throw shape_error("tg.nn.MultiheadAttention: query " + tg::detail::shape_of(query) +
                        ", key " + tg::detail::shape_of(key) + " and value " +
                        tg::detail::shape_of(value) + " do not fit embed_dim " + std::to_string(E));
    auto w = in_proj_weight.split(E, 0);
    std::vector<Tensor> bs(3);
    if (in_proj_bias.defined()) bs = in_proj_bias.split(E, 0);
    auto heads = [&](const Tensor& x, std::int64_t len, int i) {
      return F::linear(x, w[std::size_t(i)], bs[std::size_t(i)])
          .reshape({N, len, H, D})
          .transpose(1, 2); // [N, H, len, D]
    };
    Tensor qh = heads(q, L, 0), kh = heads(k, S, 1), vh = heads(v, S, 2);
    Tensor mask;
    if (attn_mask.defined()) {
      Tensor m = attn_mask;
      if (m.ndim() == 3) m = m.reshape({N, H, L, S}); // [N * H, L, S]
      mask = m.dtype() == DType::Bool ? m.logical_not() : m;
    }
    if (key_padding_mask.defined()) {
      Tensor kp = key_padding_mask.reshape({N, 1, 1, S});
      Tensor add = kp.dtype() == DType::Bool ? kp.logical_not() : kp;
      if (!mask.defined())
        mask = add;
      else if (mask.dtype() == DType::Bool && add.dtype() == DType::Bool)
        mask = mask.logical_and(add);
      else {
        auto to_float = [&](const Tensor& t) {
          return t.dtype() == DType::Bool
                     ? where(t, 0.0, Tensor::full_on({}, -INFINITY, qh.dtype(), qh.device()))
                     : t;
        };
        mask = to_float(mask) + to_float(add);
      }
    }
    Tensor out =
        F::scaled_dot_product_attention(qh, kh, vh, mask, is_training() ? dropout : 0.0, is_causal);
    out = out.transpose(1, 2).reshape({N, L, E});
    out = out_proj(out);
    return batch_first ? out : out.transpose(0, 1);
  }
  std::string type_name() const override { return "MultiheadAttention"; }
  std::string extra_repr() const override {
    return "embed_dim=" + std::to_string(embed_dim) + ", num_heads=" + std::to_string(num_heads) +
           ", batch_first=" + detail::b(batch_first);
  }
};

// ---- parameter-free modules (for Sequential) -------------------------------------------------
class Identity : public Module {
public:
  Tensor forward(const Tensor& x) override { return x; }
  std::string type_name() const override { return "Identity"; }
};
class ReLU : public Module {
public:
  Tensor forward(const Tensor& x) override { return x.relu(); }
  std::string type_name() const override { return "ReLU"; }
};
class LeakyReLU : public Module {
public:
  double negative_slope;
  explicit LeakyReLU(double negative_slope_ = 0.01) : negative_slope(negative_slope_) {}
  Tensor forward(const Tensor& x) override { return x.leaky_relu(negative_slope); }
  std::string type_name() const override { return "LeakyReLU"; }
};
class GELU : public Module {
public:
  std::string approximate;
  explicit GELU(std::string approximate_ = "none") : approximate(std::move(approximate_)) {}
  Tensor forward(const Tensor& x) override { return x.gelu(approximate); }
  std::string type_name() const override { return "GELU"; }
};
class SiLU : public Module {
public:
  Tensor forward(const Tensor& x) override { return x.silu(); }
  std::string type_name() const override { return "SiLU"; }
};
class Tanh : public Module {
public:
  Tensor forward(const Tensor& x) override { return x.tanh(); }
  std::string type_name() const override { return "Tanh"; }
};
class Sigmoid : public Module {
public:
  Tensor forward(const Tensor& x) override { return x.sigmoid(); }
  std::string type_name() const override { return "Sigmoid"; }
};
class Softmax : public Module {
public:
  int dim;
  explicit Softmax(int dim_) : dim(dim_) {}
  Tensor forward(const Tensor& x) override { return x.softmax(dim); }
  std::string type_name() const override { return "Softmax"; }
};
class Flatten : public Module {
public:
  int start_dim, end_dim;
  explicit Flatten(int start_dim_ = 1, int end_dim_ = -1)
      : start_dim(start_dim_), end_dim(end_dim_) {}
  Tensor forward(const Tensor& x) override { return x.flatten(start_dim, end_dim); }
  std::string type_name() const override { return "Flatten"; }
};
/// Any function of one tensor as a module: Lambda([](const Tensor& x) { return x * 2; }).
class Lambda : public Module {
public:
  std::function<Tensor(const Tensor&)> fn;
  explicit Lambda(std::function<Tensor(const Tensor&)> f) : fn(std::move(f)) {}
  Tensor forward(const Tensor& x) override { return fn(x); }
  std::string type_name() const override { return "Lambda"; }
};

} // namespace tg::nn
