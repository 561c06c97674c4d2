// An MLP whose shapes are all template parameters: tg::fixed tensors and expressions, evaluated by
// loops the C++ compiler wrote (no kernel is compiled or launched at run time). The weights are
// loaded from a file (written first from a seeded generator when none is given). The same
// computation then runs through the run-time tg::Tensor path, and both results are printed and
// compared.
//
//   example_static_mlp [weights.bin]
#include <tg/fixed.hpp>
#include <tg/tg.hpp>

#include <cstdio>
#include <fstream>
#include <iostream>
#include <random>
#include <vector>

template <std::size_t Batch, std::size_t In, std::size_t Hidden, std::size_t Out> struct Mlp {
  tg::fixed<float, In, Hidden> w1;
  tg::fixed<float, Hidden> b1;
  tg::fixed<float, Hidden, Out> w2;
  tg::fixed<float, Out> b2;

  static constexpr std::size_t parameters = In * Hidden + Hidden + Hidden * Out + Out;

  /// Class probabilities. Two assignments: two fused loops (a matmul, then its epilogue).
  tg::fixed<float, Batch, Out> forward(const tg::fixed<float, Batch, In>& x) const {
    tg::fixed<float, Batch, Hidden> h = (x.matmul(w1) + b1).relu();
    return tg::softmax<1>(h.matmul(w2) +
                          b2); // in a template: tg::softmax<1>(e), or e.template softmax<1>()
  }

  /// Loads the parameters (float32, in the order above); false if the file is too short.
  bool load(const std::string& path) {
    std::ifstream f(path, std::ios::binary);
    auto read = [&](auto& t) {
      return bool(
          f.read(reinterpret_cast<char*>(t.data()), std::streamsize(t.size * sizeof(float))));
    };
    return read(w1) && read(b1) && read(w2) && read(b2);
  }
};

/// Writes `n` float32 values from a seeded generator, scaled like PyTorch's default init.
void write_weights(const std::string& path, std::size_t n, std::size_t fan_in) {
  std::mt19937 g(42);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::vector<float> w(n);
  for (float& x : w) x = u(g) / std::sqrt(float(fan_in));
  std::ofstream(path, std::ios::binary)
      .write(reinterpret_cast<const char*>(w.data()), std::streamsize(n * sizeof(float)));
}

int main(int argc, char** argv) {
  constexpr std::size_t batch = 4, in = 16, hidden = 32, out = 5;
  using Net = Mlp<batch, in, hidden, out>;
  std::string path = argc > 1 ? argv[1] : "static_mlp_weights.bin";
  if (argc <= 1) write_weights(path, Net::parameters, in);
  Net net;
  if (!net.load(path)) {
    std::cerr << "static_mlp: cannot read " << Net::parameters << " float32 values from " << path
              << "\n";
    return 1;
  }
  tg::fixed<float, batch, in> x;
  for (std::size_t i = 0; i < x.size; ++i) x[i] = float(int(i * 7 % 11) - 5) * 0.25f;

  // The static path: no run-time compiler.
  tg::reset_stats();
  tg::fixed<float, batch, out> p = net.forward(x);
  tg::Stats s = tg::stats();
  std::cout << "static path (tg::fixed): " << s.kernels_compiled << " kernels compiled, "
            << s.kernels_launched << " launched\n"
            << p << "\n";

  // The run-time path: the same computation on tg::Tensor.
  auto T = [](const auto& f) { return tg::Tensor(f); };
  tg::Tensor X = T(x), W1 = T(net.w1), B1 = T(net.b1), W2 = T(net.w2), B2 = T(net.b2);
  tg::Tensor P = ((X.matmul(W1) + B1).relu().matmul(W2) + B2).softmax(1);
  std::cout << "run-time path (tg::Tensor):\n" << P << "\n";

  std::vector<float> q = P.to_vector<float>();
  float worst = 0;
  for (std::size_t i = 0; i < p.size; ++i) worst = std::max(worst, std::fabs(p[i] - q[i]));
  std::printf("largest difference: %.3g\n", double(worst));
  // The forward pass's graph, fused and rendered by the same pipeline as the run-time path's.
  tg::fixed<float, batch, hidden> h = (x.matmul(net.w1) + net.b1).relu();
  std::printf("kernels for the second layer: %zu\n",
              tg::kernel_count((h.matmul(net.w2) + net.b2).softmax<1>()));
  if (s.kernels_compiled != 0 || s.kernels_launched != 0 || worst > 1e-5f) return 1;
  return 0;
}
