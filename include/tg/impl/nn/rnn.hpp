#pragma once
// What nn/rnn.hpp declares (TG_API, config.hpp).
#include <cmath>

#include "../../tg.hpp"

namespace tg::nn {

TG_API Tensor& RNNBase::param(std::int64_t l, int d, int k) {
  return flat_weights[std::size_t(4 * (l * directions() + d) + k)];
}

TG_API int RNNBase::directions() const { return bidirectional ? 2 : 1; }

TG_API RNNBase::RNNBase(const char* type, int gates, std::int64_t input_size_,
                        std::int64_t hidden_size_, std::int64_t num_layers_, bool with_bias_,
                        bool batch_first_, double dropout_, bool bidirectional_, TensorOptions o)
    : input_size(input_size_), hidden_size(hidden_size_), num_layers(num_layers_),
      with_bias(with_bias_), batch_first(batch_first_), bidirectional(bidirectional_),
      dropout(dropout_), type_(type), gates_(gates) {
  if (num_layers < 1 || num_layers > kMaxLayers || hidden_size < 1 || input_size < 1)
    throw shape_error(std::string("tg.nn.") + type + ": needs input_size and hidden_size >= 1 " +
                      "and 1 <= num_layers <= " + std::to_string(kMaxLayers) + ", got " +
                      std::to_string(input_size) + ", " + std::to_string(hidden_size) + ", " +
                      std::to_string(num_layers));
  if (dropout < 0 || dropout > 1)
    throw error(std::string("tg.nn.") + type + ": dropout must be in [0, 1], got " +
                std::to_string(dropout));
  const double k = 1.0 / std::sqrt(double(hidden_size));
  const char* names[] = {"weight_ih_l", "weight_hh_l", "bias_ih_l", "bias_hh_l"};
  for (std::int64_t l = 0; l < num_layers; ++l)
    for (int d = 0; d < directions(); ++d) {
      const std::int64_t in = l == 0 ? input_size : hidden_size * directions();
      const Shape shapes[] = {{gates * hidden_size, in},
                              {gates * hidden_size, hidden_size},
                              {gates * hidden_size},
                              {gates * hidden_size}};
      for (int p = 0; p < (with_bias ? 4 : 2); ++p)
        register_parameter(names[p] + std::to_string(l) + (d ? "_reverse" : ""),
                           param(l, d, p) = init::uniform(shapes[p], -k, k, o));
    }
}

TG_API std::tuple<Tensor, Tensor, Tensor> RNNBase::run(const Tensor& input, const Tensor& h0,
                                                       const Tensor& c0, Step step) {
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
    if (!s0.defined()) return tg::zeros({S, N, H}, TensorOptions(x.as_float().dtype(), x.device()));
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

TG_API std::string RNNBase::type_name() const { return type_; }

TG_API std::string RNNBase::extra_repr() const {
  std::string r = std::to_string(input_size) + ", " + std::to_string(hidden_size);
  if (num_layers != 1) r += ", num_layers=" + std::to_string(num_layers);
  if (!with_bias) r += ", bias=False";
  if (batch_first) r += ", batch_first=True";
  if (dropout > 0) r += ", dropout=" + std::to_string(dropout);
  if (bidirectional) r += ", bidirectional=True";
  return r;
}

TG_API LSTM::LSTM(std::int64_t input_size_, std::int64_t hidden_size_, std::int64_t num_layers_,
                  bool with_bias_, bool batch_first_, double dropout_, bool bidirectional_,
                  TensorOptions o)
    : RNNBase("LSTM", 4, input_size_, hidden_size_, num_layers_, with_bias_, batch_first_, dropout_,
              bidirectional_, o) {}

TG_API Tensor LSTM::forward(const Tensor& x) { return std::get<0>(forward(x, Tensor(), Tensor())); }

TG_API std::tuple<Tensor, Tensor, Tensor> LSTM::forward(const Tensor& x, const Tensor& h0,
                                                        const Tensor& c0) {
  const std::int64_t H = hidden_size;
  return run(x, h0, c0,
             [H](const Tensor& gi, const Tensor& h, const Tensor& c, const Tensor& w_hh,
                 const Tensor& b_hh) {
               Tensor g = gi + h.matmul(w_hh.T());
               if (b_hh.defined()) g = g + b_hh;
               Tensor i = g.slice(-1, 0, H).sigmoid(), f = g.slice(-1, H, 2 * H).sigmoid(),
                      gg = g.slice(-1, 2 * H, 3 * H).tanh(),
                      o = g.slice(-1, 3 * H, 4 * H).sigmoid();
               Tensor c2 = f * c + i * gg;
               return std::pair<Tensor, Tensor>{o * c2.tanh(), c2};
             });
}

TG_API GRU::GRU(std::int64_t input_size_, std::int64_t hidden_size_, std::int64_t num_layers_,
                bool with_bias_, bool batch_first_, double dropout_, bool bidirectional_,
                TensorOptions o)
    : RNNBase("GRU", 3, input_size_, hidden_size_, num_layers_, with_bias_, batch_first_, dropout_,
              bidirectional_, o) {}

TG_API Tensor GRU::forward(const Tensor& x) { return forward(x, Tensor()).first; }

TG_API std::pair<Tensor, Tensor> GRU::forward(const Tensor& x, const Tensor& h0) {
  const std::int64_t H = hidden_size;
  auto [out, hn, cn] =
      run(x, h0, Tensor(),
          [H](const Tensor& gi, const Tensor& h, const Tensor&, const Tensor& w_hh,
              const Tensor& b_hh) {
            Tensor gh = h.matmul(w_hh.T());
            if (b_hh.defined()) gh = gh + b_hh;
            Tensor r = (gi.slice(-1, 0, H) + gh.slice(-1, 0, H)).sigmoid();
            Tensor z = (gi.slice(-1, H, 2 * H) + gh.slice(-1, H, 2 * H)).sigmoid();
            Tensor n = (gi.slice(-1, 2 * H, 3 * H) + r * gh.slice(-1, 2 * H, 3 * H)).tanh();
            return std::pair<Tensor, Tensor>{(1.0 - z) * n + z * h, Tensor()};
          });
  return {out, hn};
}

} // namespace tg::nn
