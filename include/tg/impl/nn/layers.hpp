#pragma once
// What nn/layers.hpp declares (TG_API, config.hpp).
#include <cmath>

#include "../../tg.hpp"

namespace tg::nn {

TG_API Linear::Linear(std::int64_t in_features_, std::int64_t out_features_, bool with_bias,
                      TensorOptions o)
    : in_features(in_features_), out_features(out_features_) {
  register_parameter("weight",
                     weight = init::kaiming_uniform({out_features, in_features}, std::sqrt(5.0),
                                                    "fan_in", "leaky_relu", o));
  if (with_bias) {
    double bound = in_features > 0 ? 1.0 / std::sqrt(double(in_features)) : 0.0;
    register_parameter("bias", bias = init::uniform({out_features}, -bound, bound, o));
  }
}

TG_API Tensor Linear::forward(const Tensor& x) { return F::linear(x, weight, bias); }

TG_API std::string Linear::type_name() const { return "Linear"; }

TG_API std::string Linear::extra_repr() const {
  return "in_features=" + std::to_string(in_features) +
         ", out_features=" + std::to_string(out_features) + ", bias=" + detail::b(bias.defined());
}

TG_API Conv2d::Conv2d(std::int64_t in_channels_, std::int64_t out_channels_, F::Pair kernel_size_,
                      F::Pair stride_, F::Pair padding_, F::Pair dilation_, std::int64_t groups_,
                      bool with_bias, TensorOptions o)
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

TG_API Tensor Conv2d::forward(const Tensor& x) {
  return F::conv2d(x, weight, bias, stride, padding, dilation, groups);
}

TG_API std::string Conv2d::type_name() const { return "Conv2d"; }

TG_API std::string Conv2d::extra_repr() const {
  std::string r = std::to_string(in_channels) + ", " + std::to_string(out_channels) +
                  ", kernel_size=" + detail::pair_str(kernel_size) +
                  ", stride=" + detail::pair_str(stride);
  if (padding[0] || padding[1]) r += ", padding=" + detail::pair_str(padding);
  if (dilation[0] != 1 || dilation[1] != 1) r += ", dilation=" + detail::pair_str(dilation);
  if (groups != 1) r += ", groups=" + std::to_string(groups);
  if (!bias.defined()) r += ", bias=False";
  return r;
}

TG_API Conv1d::Conv1d(std::int64_t in_channels_, std::int64_t out_channels_,
                      std::int64_t kernel_size_, std::int64_t stride_, std::int64_t padding_,
                      std::int64_t dilation_, std::int64_t groups_, bool with_bias, TensorOptions o)
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

TG_API Tensor Conv1d::forward(const Tensor& x) {
  return F::conv1d(x, weight, bias, stride, padding, dilation, groups);
}

TG_API std::string Conv1d::type_name() const { return "Conv1d"; }

TG_API std::string Conv1d::extra_repr() const {
  std::string r = std::to_string(in_channels) + ", " + std::to_string(out_channels) +
                  ", kernel_size=(" + std::to_string(kernel_size) + ",), stride=(" +
                  std::to_string(stride) + ",)";
  if (padding) r += ", padding=(" + std::to_string(padding) + ",)";
  if (dilation != 1) r += ", dilation=(" + std::to_string(dilation) + ",)";
  if (groups != 1) r += ", groups=" + std::to_string(groups);
  if (!bias.defined()) r += ", bias=False";
  return r;
}

TG_API ConvTranspose2d::ConvTranspose2d(std::int64_t in_channels_, std::int64_t out_channels_,
                                        F::Pair kernel_size_, F::Pair stride_, F::Pair padding_,
                                        F::Pair output_padding_, std::int64_t groups_,
                                        bool with_bias, F::Pair dilation_, TensorOptions o)
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

TG_API Tensor ConvTranspose2d::forward(const Tensor& x) {
  return F::conv_transpose2d(x, weight, bias, stride, padding, output_padding, groups, dilation);
}

TG_API std::string ConvTranspose2d::type_name() const { return "ConvTranspose2d"; }

TG_API std::string ConvTranspose2d::extra_repr() const {
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

TG_API MaxPool2d::MaxPool2d(F::Pair kernel_size_, std::optional<F::Pair> stride_, F::Pair padding_,
                            F::Pair dilation_, bool ceil_mode_)
    : kernel_size(kernel_size_), stride(stride_.value_or(kernel_size_)), padding(padding_),
      dilation(dilation_), ceil_mode(ceil_mode_) {}

TG_API Tensor MaxPool2d::forward(const Tensor& x) {
  return F::max_pool2d(x, kernel_size, stride, padding, dilation, ceil_mode);
}

TG_API std::pair<Tensor, Tensor> MaxPool2d::forward_with_indices(const Tensor& x) {
  return F::max_pool2d_with_indices(x, kernel_size, stride, padding, dilation, ceil_mode);
}

TG_API std::string MaxPool2d::type_name() const { return "MaxPool2d"; }

TG_API std::string MaxPool2d::extra_repr() const {
  return "kernel_size=" + detail::pair_str(kernel_size) + ", stride=" + detail::pair_str(stride) +
         ", padding=" + detail::pair_str(padding) + ", dilation=" + detail::pair_str(dilation) +
         ", ceil_mode=" + (ceil_mode ? "True" : "False");
}

TG_API AvgPool2d::AvgPool2d(F::Pair kernel_size_, std::optional<F::Pair> stride_, F::Pair padding_,
                            bool ceil_mode_, bool count_include_pad_,
                            std::optional<std::int64_t> divisor_override_)
    : kernel_size(kernel_size_), stride(stride_.value_or(kernel_size_)), padding(padding_),
      ceil_mode(ceil_mode_), count_include_pad(count_include_pad_),
      divisor_override(divisor_override_) {}

TG_API Tensor AvgPool2d::forward(const Tensor& x) {
  return F::avg_pool2d(x, kernel_size, stride, padding, ceil_mode, count_include_pad,
                       divisor_override);
}

TG_API std::string AvgPool2d::type_name() const { return "AvgPool2d"; }

TG_API std::string AvgPool2d::extra_repr() const {
  return "kernel_size=" + detail::pair_str(kernel_size) + ", stride=" + detail::pair_str(stride) +
         ", padding=" + detail::pair_str(padding);
}

TG_API LayerNorm::LayerNorm(std::vector<std::int64_t> normalized_shape_, double eps_,
                            bool elementwise_affine, bool with_bias, TensorOptions o)
    : normalized_shape(std::move(normalized_shape_)), eps(eps_) {
  Shape s(normalized_shape.begin(), normalized_shape.end());
  if (elementwise_affine) {
    register_parameter("weight", weight = init::ones(s, o));
    if (with_bias) register_parameter("bias", bias = init::zeros(s, o));
  }
}

TG_API LayerNorm::LayerNorm(std::int64_t dim, double eps_, bool elementwise_affine, bool with_bias,
                            TensorOptions o)
    : LayerNorm(std::vector<std::int64_t>{dim}, eps_, elementwise_affine, with_bias, o) {}

TG_API Tensor LayerNorm::forward(const Tensor& x) {
  return F::layer_norm(x, normalized_shape, weight, bias, eps);
}

TG_API std::string LayerNorm::type_name() const { return "LayerNorm"; }

TG_API std::string LayerNorm::extra_repr() const {
  return detail::dims_str(normalized_shape) + ", eps=" + std::to_string(eps) +
         ", elementwise_affine=" + detail::b(weight.defined());
}

TG_API GroupNorm::GroupNorm(std::int64_t num_groups_, std::int64_t num_channels_, double eps_,
                            bool affine, TensorOptions o)
    : num_groups(num_groups_), num_channels(num_channels_), eps(eps_) {
  if (num_groups < 1 || num_channels % num_groups)
    throw shape_error("tg.nn.GroupNorm: num_channels (" + std::to_string(num_channels) +
                      ") must be divisible by num_groups (" + std::to_string(num_groups) + ")");
  if (affine) {
    register_parameter("weight", weight = init::ones({num_channels}, o));
    register_parameter("bias", bias = init::zeros({num_channels}, o));
  }
}

TG_API Tensor GroupNorm::forward(const Tensor& x) {
  return F::group_norm(x, num_groups, weight, bias, eps);
}

TG_API std::string GroupNorm::type_name() const { return "GroupNorm"; }

TG_API std::string GroupNorm::extra_repr() const {
  return std::to_string(num_groups) + ", " + std::to_string(num_channels) +
         ", eps=" + std::to_string(eps) + ", affine=" + detail::b(weight.defined());
}

TG_API RMSNorm::RMSNorm(std::vector<std::int64_t> normalized_shape_, std::optional<double> eps_,
                        bool elementwise_affine, TensorOptions o)
    : normalized_shape(std::move(normalized_shape_)), eps(eps_) {
  if (elementwise_affine)
    register_parameter(
        "weight", weight = init::ones(Shape(normalized_shape.begin(), normalized_shape.end()), o));
}

TG_API RMSNorm::RMSNorm(std::int64_t dim, std::optional<double> eps_, bool elementwise_affine,
                        TensorOptions o)
    : RMSNorm(std::vector<std::int64_t>{dim}, eps_, elementwise_affine, o) {}

TG_API Tensor RMSNorm::forward(const Tensor& x) {
  return F::rms_norm(x, normalized_shape, weight, eps);
}

TG_API std::string RMSNorm::type_name() const { return "RMSNorm"; }

TG_API std::string RMSNorm::extra_repr() const {
  return detail::dims_str(normalized_shape) + ", eps=" + (eps ? std::to_string(*eps) : "None") +
         ", elementwise_affine=" + detail::b(weight.defined());
}

TG_API Embedding::Embedding(std::int64_t num_embeddings_, std::int64_t embedding_dim_,
                            std::optional<std::int64_t> padding_idx_, TensorOptions o)
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
  register_parameter("weight", weight = init::detail::fresh({num_embeddings, embedding_dim}, o, v));
}

TG_API Tensor Embedding::forward(const Tensor& idx) {
  return F::embedding(idx, weight, padding_idx);
}

TG_API std::string Embedding::type_name() const { return "Embedding"; }

TG_API std::string Embedding::extra_repr() const {
  return std::to_string(num_embeddings) + ", " + std::to_string(embedding_dim) +
         (padding_idx ? ", padding_idx=" + std::to_string(*padding_idx) : "");
}

TG_API Dropout::Dropout(double p_) : p(p_) {
  if (p < 0 || p > 1) throw error("tg.nn.Dropout: p must be in [0, 1], got " + std::to_string(p));
}

TG_API Tensor Dropout::forward(const Tensor& x) { return F::dropout(x, p, is_training()); }

TG_API std::string Dropout::type_name() const { return "Dropout"; }

TG_API std::string Dropout::extra_repr() const { return "p=" + std::to_string(p); }

TG_API MultiheadAttention::MultiheadAttention(std::int64_t embed_dim_, std::int64_t num_heads_,
                                              double dropout_, bool with_bias, bool batch_first_,
                                              TensorOptions o)
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

TG_API Tensor MultiheadAttention::forward(const Tensor& x) { return forward(x, x, x); }

TG_API Tensor MultiheadAttention::forward(const Tensor& query, const Tensor& key,
                                          const Tensor& value, const Tensor& attn_mask,
                                          bool is_causal, const Tensor& key_padding_mask) {
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
    throw shape_error("tg.nn.MultiheadAttention: query " + tg::detail::shape_of(query) + ", key " +
                      tg::detail::shape_of(key) + " and value " + tg::detail::shape_of(value) +
                      " do not fit embed_dim " + std::to_string(E));
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

TG_API std::string MultiheadAttention::type_name() const { return "MultiheadAttention"; }

TG_API std::string MultiheadAttention::extra_repr() const {
  return "embed_dim=" + std::to_string(embed_dim) + ", num_heads=" + std::to_string(num_heads) +
         ", batch_first=" + detail::b(batch_first);
}

TG_API Tensor Identity::forward(const Tensor& x) { return x; }

TG_API std::string Identity::type_name() const { return "Identity"; }

TG_API Tensor ReLU::forward(const Tensor& x) { return x.relu(); }

TG_API std::string ReLU::type_name() const { return "ReLU"; }

TG_API LeakyReLU::LeakyReLU(double negative_slope_) : negative_slope(negative_slope_) {}

TG_API Tensor LeakyReLU::forward(const Tensor& x) { return x.leaky_relu(negative_slope); }

TG_API std::string LeakyReLU::type_name() const { return "LeakyReLU"; }

TG_API GELU::GELU(std::string approximate_) : approximate(std::move(approximate_)) {}

TG_API Tensor GELU::forward(const Tensor& x) { return x.gelu(approximate); }

TG_API std::string GELU::type_name() const { return "GELU"; }

TG_API Tensor SiLU::forward(const Tensor& x) { return x.silu(); }

TG_API std::string SiLU::type_name() const { return "SiLU"; }

TG_API Tensor Tanh::forward(const Tensor& x) { return x.tanh(); }

TG_API std::string Tanh::type_name() const { return "Tanh"; }

TG_API Tensor Sigmoid::forward(const Tensor& x) { return x.sigmoid(); }

TG_API std::string Sigmoid::type_name() const { return "Sigmoid"; }

TG_API Softmax::Softmax(int dim_) : dim(dim_) {}

TG_API Tensor Softmax::forward(const Tensor& x) { return x.softmax(dim); }

TG_API std::string Softmax::type_name() const { return "Softmax"; }

TG_API Flatten::Flatten(int start_dim_, int end_dim_) : start_dim(start_dim_), end_dim(end_dim_) {}

TG_API Tensor Flatten::forward(const Tensor& x) { return x.flatten(start_dim, end_dim); }

TG_API std::string Flatten::type_name() const { return "Flatten"; }

TG_API Lambda::Lambda(tg::detail::Function<Tensor(const Tensor&)> f) : fn(std::move(f)) {}

TG_API Tensor Lambda::forward(const Tensor& x) { return fn(x); }

TG_API std::string Lambda::type_name() const { return "Lambda"; }

} // namespace tg::nn
