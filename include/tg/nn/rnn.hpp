#pragma once
// Recurrent layers, torch.nn.LSTM and torch.nn.GRU: the same parameters (names, shapes, gate
// order, initialization U(-1/sqrt(hidden), 1/sqrt(hidden))), layers, directions, batch_first,
// dropout between layers, and unbatched input. The time loop runs on the host, building one
// lazy step per time step; the input projections of all steps are one product per layer.
#include <array>
#include <tuple>

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

  /// Runs every layer and direction: the output [T, N, D * H] (or batch first) and the last
  /// hidden (and, for LSTM, cell) states [layers * D, N, H]. `step` advances one time step:
  /// (input projection of step t, h, c, w_hh, b_hh) -> (h, c).
  template <class Step>
  std::tuple<Tensor, Tensor, Tensor> run(const Tensor& input, const Tensor& h0, const Tensor& c0,
                                         Step step) {
    const bool batched = input.ndim() == 3;
    if (input.ndim() != 2 && input.ndim() != 3)
      throw shape_error(std::string("tg.nn.") + type_ + ": needs an input of shape [T, N, " +
                        std::to_string(input_size) + "] (or batch first, or unbatched [T, " +
                        std::to_string(input_size) + "]), got " + tg::detail::shape_of(input));
    Tensor x = batched ? (batch_first ? input.transpose(0, 1) : input) : input.unsqueeze(1);
    if (x.size(2) != input_size)
      throw shape_error(std::string("tg.nn.") + type_ + ": input " + tg::detail::shape_of(input) +
                        " has " + std::to_string(x.size(2)) + " features, the layer takes " +
                        std::to_string(input_size));
    const std::int64_t T = x.size(0), N = x.size(1), H = hidden_size, S = num_layers * directions();
    auto state = [&](const Tensor& s0, const char* what) {
      if (!s0.defined())
        return tg::zeros({S, N, H}, TensorOptions(x.as_float().dtype(), x.device()));
      Tensor s = batched ? s0 : s0.unsqueeze(1);
      if (s.shape() != std::vector<std::int64_t>{S, N, H})
        throw shape_error(std::string("tg.nn.") + type_ + ": " + what + " must be [" +
                          std::to_string(S) + ", " + std::to_string(N) + ", " + std::to_string(H) +
                          "], got " + tg::detail::shape_of(s0));
      return s;
    };
    Tensor hs0 = state(h0, "h0"), cs0 = gates_ == 4 ? state(c0, "c0") : Tensor();
    std::vector<Tensor> h_n, c_n;
    for (std::int64_t l = 0; l < num_layers; ++l) {
      std::vector<Tensor> outs;
      for (int d = 0; d < directions(); ++d) {
        const std::int64_t s = l * directions() + d;
        Tensor gi = x.matmul(param(l, d, 0).T()); // every step's input projection
        if (with_bias) gi = gi + param(l, d, 2);
        Tensor h = hs0[s], c = cs0.defined() ? cs0[s] : Tensor();
        std::vector<Tensor> ys(static_cast<std::size_t>(T));
        for (std::int64_t k = 0; k < T; ++k) {
          const std::int64_t t = d ? T - 1 - k : k;
          std::tie(h, c) = step(gi[t], h, c, param(l, d, 1), with_bias ? param(l, d, 3) : Tensor());
          ys[std::size_t(t)] = h;
        }
        h_n.push_back(h);
        if (c.defined()) c_n.push_back(c);
        outs.push_back(T > 0 ? stack(ys, 0) : tg::zeros({0, N, H}));
      }
      x = outs.size() == 1 ? outs[0] : cat(outs, -1);
      if (dropout > 0 && is_training() && l + 1 < num_layers) x = F::dropout(x, dropout, true);
    }
    Tensor out = batched ? (batch_first ? x.transpose(0, 1) : x) : x.squeeze(1);
    Tensor hn = stack(h_n, 0), cn = c_n.empty() ? Tensor() : stack(c_n, 0);
    if (!batched) {
      hn = hn.squeeze(1);
      if (cn.defined()) cn = cn.squeeze(1);
    }
    return {out, hn, cn};
  }

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
