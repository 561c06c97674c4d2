#pragma once
// Recurrent layers, torch.nn.LSTM and torch.nn.GRU: the same parameters (names, shapes, gate
// order, initialization U(-1/sqrt(hidden), 1/sqrt(hidden))), layers, directions, batch_first,
// dropout between layers, and unbatched input. The time loop runs on the host, building one
// lazy step per time step; the input projections of all steps are one product per layer.
#include <array>
#include <tuple>
#include <utility>

#include "../util/function.hpp"
#include "layers.hpp"

namespace tg::nn {

/// What LSTM and GRU share. The parameters live in `flat_weights`, in PyTorch's order: per layer
/// and direction weight_ih, weight_hh, bias_ih, bias_hh (named weight_ih_l0, ..._reverse).
class RNNBase : public Module {
public:
  static constexpr int kMaxLayers = 8;
  std::int64_t input_size, hidden_size, num_layers;
  bool with_bias, batch_first, bidirectional;
  double dropout;
  std::array<Tensor, 4 * 2 * kMaxLayers> flat_weights;

  /// The parameters of layer l, direction d (0 forward, 1 reverse): w_ih, w_hh, b_ih, b_hh.
  Tensor& param(std::int64_t l, int d, int k);
  int directions() const;

protected:
  RNNBase(const char* type, int gates, std::int64_t input_size_, std::int64_t hidden_size_,
          std::int64_t num_layers_, bool with_bias_, bool batch_first_, double dropout_,
          bool bidirectional_, TensorOptions o);

  /// One time step: (input projection of step t, h, c, w_hh, b_hh) -> (h, c).
  using Step = tg::detail::FunctionRef<std::pair<Tensor, Tensor>(
      const Tensor&, const Tensor&, const Tensor&, const Tensor&, const Tensor&)>;
  /// Runs every layer and direction: the output [T, N, D * H] (or batch first) and the last
  /// hidden (and, for LSTM, cell) states [layers * D, N, H].
  std::tuple<Tensor, Tensor, Tensor> run(const Tensor& input, const Tensor& h0, const Tensor& c0,
                                         Step step);

public:
  std::string type_name() const override;
  std::string extra_repr() const override;

private:
  const char* type_;
  int gates_;
};

/// Long short-term memory: gates i, f, g, o; c' = f c + i g, h' = o tanh(c').
class LSTM : public RNNBase {
public:
  LSTM(std::int64_t input_size_, std::int64_t hidden_size_, std::int64_t num_layers_ = 1,
       bool with_bias_ = true, bool batch_first_ = false, double dropout_ = 0,
       bool bidirectional_ = false, TensorOptions o = {});
  /// The output only (forward(x, h0, c0) also gives the final states).
  Tensor forward(const Tensor& x) override;
  /// (output, h_n, c_n); h0 and c0 default to zeros.
  std::tuple<Tensor, Tensor, Tensor> forward(const Tensor& x, const Tensor& h0, const Tensor& c0);
};

/// Gated recurrent unit: gates r, z, n; n = tanh(W_in x + b_in + r (W_hn h + b_hn)),
/// h' = (1 - z) n + z h.
class GRU : public RNNBase {
public:
  GRU(std::int64_t input_size_, std::int64_t hidden_size_, std::int64_t num_layers_ = 1,
      bool with_bias_ = true, bool batch_first_ = false, double dropout_ = 0,
      bool bidirectional_ = false, TensorOptions o = {});
  Tensor forward(const Tensor& x) override;
  /// (output, h_n); h0 defaults to zeros.
  std::pair<Tensor, Tensor> forward(const Tensor& x, const Tensor& h0);
};

} // namespace tg::nn
