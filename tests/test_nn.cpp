// tg::nn: modules (dotted names, state dicts, modes), initializers, every layer's forward against
// plain C++ loops and its gradients against central finite differences in float64, losses.
#include <doctest/doctest.h>

#include <tg/tg.hpp>

#include "gradcheck.hpp"

#include <cmath>
#include <functional>
#include <memory>
#include <optional>
#include <random>

namespace nn = tg::nn;
namespace F = tg::nn::functional;
using tg::Tensor;

namespace {
const tg::TensorOptions f64(tg::float64);

using tg_test::check_grad;

/// The same for a module: its input and every parameter (swapped in through get_parameter).
void check_module_grad(const std::string& name, nn::Module& m, const tg::Shape& input,
                       double lo = -2, double hi = 2) {
  std::vector<std::string> names;
  std::vector<tg::Shape> shapes{input};
  for (auto& [k, p] : m.named_parameters()) {
    names.push_back(k);
    shapes.push_back(p.sym_shape());
  }
  check_grad(
      name,
      [&](const std::vector<Tensor>& xs) {
        for (std::size_t i = 0; i < names.size(); ++i) m.get_parameter(names[i]) = xs[i + 1];
        return m(xs[0]);
      },
      shapes, lo, hi);
}

std::vector<double> rnd(std::size_t n, std::uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<double> d;
  std::vector<double> v(n);
  for (double& x : v) x = d(rng);
  return v;
}

/// conv2d by the definition, in plain loops.
std::vector<double> conv_ref(const std::vector<double>& x, std::array<std::int64_t, 4> xs,
                             const std::vector<double>& w, std::array<std::int64_t, 4> ws,
                             const std::vector<double>& b, std::array<std::int64_t, 2> s,
                             std::array<std::int64_t, 2> p, std::array<std::int64_t, 2> d,
                             std::int64_t groups, std::int64_t& OH, std::int64_t& OW) {
  auto [N, C, H, W] = xs;
  auto [O, Cg, KH, KW] = ws;
  OH = (H + 2 * p[0] - d[0] * (KH - 1) - 1) / s[0] + 1;
  OW = (W + 2 * p[1] - d[1] * (KW - 1) - 1) / s[1] + 1;
  std::int64_t Og = O / groups;
  std::vector<double> out(std::size_t(N * O * OH * OW));
  for (std::int64_t n = 0; n < N; ++n)
    for (std::int64_t o = 0; o < O; ++o)
      for (std::int64_t i = 0; i < OH; ++i)
        for (std::int64_t j = 0; j < OW; ++j) {
          double acc = b.empty() ? 0 : b[std::size_t(o)];
          std::int64_t g = o / Og;
          for (std::int64_t c = 0; c < Cg; ++c)
            for (std::int64_t kh = 0; kh < KH; ++kh)
              for (std::int64_t kw = 0; kw < KW; ++kw) {
                std::int64_t h = i * s[0] + kh * d[0] - p[0], ww = j * s[1] + kw * d[1] - p[1];
                if (h < 0 || h >= H || ww < 0 || ww >= W) continue;
                acc += x[std::size_t(((n * C + g * Cg + c) * H + h) * W + ww)] *
                       w[std::size_t(((o * Cg + c) * KH + kh) * KW + kw)];
              }
          out[std::size_t(((n * O + o) * OH + i) * OW + j)] = acc;
        }
  return out;
}

void check_close(const std::vector<double>& a, const std::vector<double>& b, double tol = 1e-9) {
  REQUIRE(a.size() == b.size());
  for (std::size_t i = 0; i < a.size(); ++i) {
    CAPTURE(i);
    CHECK(a[i] == doctest::Approx(b[i]).epsilon(tol).scale(1.0));
  }
}

struct Block : nn::Module {
  nn::Linear fc;
  nn::LayerNorm norm;
  Block(std::int64_t d) : fc(d, d), norm(d) {
    register_module("fc", fc);
    register_module("norm", norm);
  }
  Tensor forward(const Tensor& x) override { return norm(fc(x).relu() + x); }
  std::string type_name() const override { return "Block"; }
};

struct Net : nn::Module {
  nn::Sequential stem{nn::Linear(3, 4), nn::ReLU()};
  nn::ModuleList layers;
  nn::BatchNorm2d bn{2};
  Tensor scale;
  Net() {
    layers.push_back(Block(4)).push_back(std::make_shared<Block>(4));
    register_module("stem", stem);
    register_module("layers", layers);
    register_module("bn", bn);
    register_parameter("scale", scale = tg::ones({1}));
  }
  Tensor forward(const Tensor& x) override {
    Tensor h = stem(x);
    for (auto& l : layers) h = (*l)(h);
    return h * scale;
  }
  std::string type_name() const override { return "Net"; }
};
} // namespace

TEST_CASE("modules: dotted names from one registration per member") {
  tg::manual_seed(1);
  Net net;
  std::vector<std::string> names;
  for (auto& [k, v] : net.named_parameters()) names.push_back(k);
  std::vector<std::string> want{"scale",
                                "stem.0.weight",
                                "stem.0.bias",
                                "layers.0.fc.weight",
                                "layers.0.fc.bias",
                                "layers.0.norm.weight",
                                "layers.0.norm.bias",
                                "layers.1.fc.weight",
                                "layers.1.fc.bias",
                                "layers.1.norm.weight",
                                "layers.1.norm.bias",
                                "bn.weight",
                                "bn.bias"};
  CHECK(names == want);
  CHECK(net.parameters().size() == want.size());
  CHECK(net.num_parameters() == 1 + 12 + 4 + 2 * (16 + 4 + 4 + 4) + 4);
  auto keys = net.state_dict().keys();
  CHECK(keys.size() == want.size() + 3); // + running_mean, running_var, num_batches_tracked
  CHECK(net.state_dict().contains("bn.num_batches_tracked"));
  CHECK(net.named_buffers().size() == 3);
  CHECK(&net.get_submodule("layers.1.fc") == &net.layers.at<Block>(1).fc);
  CHECK(net.get_parameter("layers.0.fc.weight").lazy() == net.layers.at<Block>(0).fc.weight.lazy());
  CHECK_THROWS_WITH_AS(net.get_parameter("layers.0.nope"), doctest::Contains("no parameter"),
                       tg::error);
  for (const Tensor& p : net.parameters()) CHECK(p.requires_grad());
  for (const Tensor& b : net.buffers()) CHECK(!b.requires_grad());
  std::string repr = net.to_string();
  CHECK(repr.find("(stem): Sequential(") != std::string::npos);
  CHECK(repr.find("(0): Linear(in_features=3, out_features=4, bias=True)") != std::string::npos);
  auto mods = net.named_modules();
  CHECK(mods[0].first == "");
  CHECK(std::any_of(mods.begin(), mods.end(), [](auto& m) { return m.first == "layers.1.norm"; }));
  // a forward pass and gradients for every parameter that takes part
  Tensor y = net(tg::randn({5, 3}));
  CHECK(y.shape() == std::vector<std::int64_t>{5, 4});
  y.sum().backward();
  CHECK(net.get_parameter("layers.1.fc.weight").grad().defined());
  net.zero_grad();
  for (const Tensor& p : net.parameters()) CHECK(!p.grad().defined());
  struct Dup : nn::Module {
    Tensor a, b;
    Dup() {
      register_parameter("a", a = tg::ones({1}));
      register_parameter("a", b = tg::ones({1}));
    }
  };
  CHECK_THROWS_WITH_AS(Dup(), doctest::Contains("registered twice"), tg::error);
}

TEST_CASE(
    "modules: copies and moves keep their registrations; train and eval reach every submodule") {
  tg::manual_seed(2);
  Net a;
  Net b = a; // shares the parameters' storage, has its own members
  CHECK(b.get_parameter("stem.0.weight").lazy() == a.get_parameter("stem.0.weight").lazy());
  CHECK(&b.get_submodule("bn") == &b.bn);
  Net c = std::move(b);
  CHECK(&c.get_submodule("bn") == &c.bn);
  CHECK(c.named_parameters().size() == a.named_parameters().size());
  CHECK(a.is_training());
  a.eval();
  CHECK(!a.bn.is_training());
  CHECK(!a.layers.at<Block>(1).fc.is_training());
  CHECK(c.bn.is_training()); // c has its own mode flags
  a.train();
  CHECK(a.bn.is_training());
}

TEST_CASE("modules: load_state_dict copies in place, strict by default, lists every problem") {
  tg::manual_seed(3);
  Net a, b;
  Tensor wb = b.get_parameter("stem.0.weight");
  auto before = a.get_parameter("stem.0.weight").to_vector<float>();
  CHECK(before != wb.to_vector<float>());
  b.load_state_dict(a.state_dict());
  CHECK(b.get_parameter("stem.0.weight").lazy() == wb.lazy()); // same tensor, new values
  CHECK(wb.to_vector<float>() == before);
  CHECK(b.bn.running_var.to_vector<float>() == a.bn.running_var.to_vector<float>());

  tg::StateDict sd = a.state_dict();
  sd.erase("scale");
  sd.erase("bn.bias");
  sd.insert("extra.weight", tg::ones({2}));
  sd.insert("stem.0.bias", tg::ones({5}));
  try {
    b.load_state_dict(sd);
    FAIL("no error");
  } catch (const tg::error& e) {
    std::string m = e.what();
    CHECK(m.find("missing key(s): \"scale\", \"bn.bias\"") != std::string::npos);
    CHECK(m.find("unexpected key(s): \"extra.weight\"") != std::string::npos);
    CHECK(m.find("size mismatch for stem.0.bias") != std::string::npos);
    CHECK(m.find("[5]") != std::string::npos);
  }
  sd.insert("stem.0.bias", a.get_parameter("stem.0.bias"));
  nn::LoadResult r = b.load_state_dict(sd, false);
  CHECK(r.missing_keys == std::vector<std::string>{"scale", "bn.bias"});
  CHECK(r.unexpected_keys == std::vector<std::string>{"extra.weight"});
  // values of another dtype are converted to the parameter's
  tg::StateDict half;
  for (auto& [k, v] : a.state_dict())
    half.insert(k, tg::is_float(v.dtype()) ? v.cast(tg::float64) : v);
  b.load_state_dict(half);
  CHECK(b.get_parameter("scale").dtype() == tg::float32);
}

TEST_CASE("init: PyTorch's bounds and gains, reproducible with manual_seed") {
  CHECK(nn::init::calculate_gain("relu") == doctest::Approx(std::sqrt(2.0)));
  CHECK(nn::init::calculate_gain("tanh") == doctest::Approx(5.0 / 3));
  CHECK(nn::init::calculate_gain("leaky_relu", std::sqrt(5.0)) ==
        doctest::Approx(std::sqrt(1.0 / 3)));
  auto [fi, fo] = nn::init::calculate_fan_in_and_fan_out({8, 4, 3, 3});
  CHECK(fi == 36);
  CHECK(fo == 72);
  tg::manual_seed(7);
  nn::Linear a(64, 32);
  tg::manual_seed(7);
  nn::Linear b(64, 32);
  CHECK(a.weight.to_vector<float>() == b.weight.to_vector<float>());
  auto w = a.weight.to_vector<float>();
  double bound = 1 / std::sqrt(64.0), mx = 0, mean = 0;
  for (float x : w) {
    mx = std::max(mx, std::abs(double(x)));
    mean += x;
  }
  CHECK(mx <= bound);
  CHECK(mx > 0.9 * bound);
  CHECK(std::abs(mean / double(w.size())) < 0.01);
  Tensor t = nn::init::kaiming_normal({256, 128}, 0, "fan_in", "relu");
  auto v = t.to_vector<float>();
  double s2 = 0;
  for (float x : v) s2 += double(x) * x;
  CHECK(std::sqrt(s2 / double(v.size())) == doctest::Approx(std::sqrt(2.0 / 128)).epsilon(0.03));
  Tensor xu = nn::init::xavier_uniform({100, 50});
  auto xv = xu.to_vector<float>();
  double xb = std::sqrt(6.0 / 150);
  CHECK(*std::max_element(xv.begin(), xv.end()) <= xb);
  // in place: a parameter keeps its identity and its requires_grad
  auto node = a.weight.lazy();
  nn::init::zeros_(a.weight);
  CHECK(a.weight.lazy() == node);
  CHECK(a.weight.requires_grad());
  CHECK(a.weight.abs().sum().item<float>() == 0);
  nn::init::normal_(a.weight, 3, 0.5);
  CHECK(a.weight.mean().item<float>() == doctest::Approx(3).epsilon(0.05));
  nn::init::uniform_(a.bias, -0.25, 0.25);
  CHECK(a.bias.abs().max().item<float>() <= 0.25);
  nn::init::ones_(a.bias);
  CHECK(a.bias.sum().item<float>() == 32);
}

TEST_CASE("conv2d against loops: stride, padding, dilation, groups") {
  struct Case {
    std::array<std::int64_t, 4> x, w;
    std::array<std::int64_t, 2> s, p, d;
    std::int64_t g;
  };
  std::vector<Case> cases{
      {{2, 3, 7, 6}, {4, 3, 3, 3}, {1, 1}, {0, 0}, {1, 1}, 1},
      {{1, 2, 8, 8}, {3, 2, 3, 3}, {2, 2}, {1, 1}, {1, 1}, 1},
      {{1, 2, 9, 7}, {2, 2, 3, 2}, {1, 2}, {2, 1}, {2, 1}, 1},
      {{2, 4, 6, 6}, {6, 2, 3, 3}, {1, 1}, {1, 1}, {1, 1}, 2},
      {{1, 4, 5, 5}, {4, 1, 3, 3}, {2, 1}, {1, 0}, {1, 2}, 4},
      {{1, 1, 6, 6}, {2, 1, 1, 1}, {3, 3}, {0, 0}, {1, 1}, 1},
      {{1, 2, 5, 5}, {2, 2, 5, 5}, {1, 1}, {0, 0}, {1, 1}, 1},
      {{1, 1, 12, 11}, {2, 1, 9, 3}, {1, 2}, {1, 0}, {1, 1}, 1}, // 9 taps: the repeat trick
  };
  std::uint32_t seed = 0;
  for (const Case& c : cases) {
    CAPTURE(seed);
    auto xv = rnd(std::size_t(c.x[0] * c.x[1] * c.x[2] * c.x[3]), ++seed);
    auto wv = rnd(std::size_t(c.w[0] * c.w[1] * c.w[2] * c.w[3]), ++seed);
    auto bv = rnd(std::size_t(c.w[0]), ++seed);
    std::int64_t OH, OW;
    auto want = conv_ref(xv, c.x, wv, c.w, bv, c.s, c.p, c.d, c.g, OH, OW);
    Tensor x = Tensor::from_data(xv, {c.x[0], c.x[1], c.x[2], c.x[3]});
    Tensor w = Tensor::from_data(wv, {c.w[0], c.w[1], c.w[2], c.w[3]});
    Tensor y = F::conv2d(x, w, Tensor::from_data(bv, {c.w[0]}), c.s, c.p, c.d, c.g);
    CHECK(y.shape() == std::vector<std::int64_t>{c.x[0], c.w[0], OH, OW});
    check_close(y.to_vector<double>(), want);
  }
  // the module: PyTorch's shapes, init bounds and errors
  tg::manual_seed(4);
  nn::Conv2d conv(4, 6, {3, 2}, 1, 1, 1, 2);
  CHECK(conv.weight.shape() == std::vector<std::int64_t>{6, 2, 3, 2});
  double bound = 1 / std::sqrt(12.0);
  CHECK(conv.weight.abs().max().item<float>() <= bound);
  CHECK(conv.bias.abs().max().item<float>() <= bound);
  CHECK(conv(tg::randn({2, 4, 5, 5})).shape() == std::vector<std::int64_t>{2, 6, 5, 6});
  CHECK_THROWS_WITH_AS(conv(tg::randn({2, 3, 5, 5})), doctest::Contains("groups"), tg::shape_error);
  CHECK_THROWS_AS(nn::Conv2d(3, 4, 3, 1, 0, 1, 2), tg::shape_error);
  CHECK_THROWS_WITH_AS(F::conv2d(tg::randn({1, 1, 2, 2}), tg::randn({1, 1, 3, 3})),
                       doctest::Contains("smaller than the kernel"), tg::shape_error);
}

TEST_CASE("conv2d's gradients against loops: dX and dW as reductions over windows") {
  // conv2d has a gradient rule of its own (F::detail::ConvGrad): dX a convolution of the spread
  // and padded output gradient with the flipped filters, dW over groups of images in channels-last
  // order
  struct Case {
    std::array<std::int64_t, 4> x, w;
    std::array<std::int64_t, 2> s, p, d;
    std::int64_t g;
  };
  std::vector<Case> cases{
      {{2, 3, 7, 6}, {4, 3, 3, 3}, {1, 1}, {1, 1}, {1, 1}, 1},
      {{2, 4, 9, 8}, {6, 2, 3, 2}, {2, 1}, {1, 0}, {1, 2}, 2},
      {{1, 6, 11, 10}, {6, 2, 3, 3}, {3, 2}, {2, 1}, {2, 1}, 3},
      {{3, 2, 5, 5}, {4, 2, 1, 1}, {2, 2}, {0, 0}, {1, 1}, 1},
      {{2, 4, 8, 8}, {4, 1, 5, 5}, {1, 1}, {4, 3}, {1, 1}, 4},
      {{40, 2, 5, 4}, {3, 2, 3, 3}, {1, 1}, {1, 1}, {1, 1}, 1}, // dW's partials: 20 groups of 2
  };
  std::uint32_t seed = 100;
  for (const Case& c : cases) {
    CAPTURE(seed);
    auto xv = rnd(std::size_t(c.x[0] * c.x[1] * c.x[2] * c.x[3]), ++seed);
    auto wv = rnd(std::size_t(c.w[0] * c.w[1] * c.w[2] * c.w[3]), ++seed);
    Tensor x = Tensor::from_data(xv, {c.x[0], c.x[1], c.x[2], c.x[3]}).requires_grad_();
    Tensor w = Tensor::from_data(wv, {c.w[0], c.w[1], c.w[2], c.w[3]}).requires_grad_();
    Tensor y = F::conv2d(x, w, Tensor(), c.s, c.p, c.d, c.g);
    auto gv = rnd(std::size_t(y.numel()), ++seed);
    (y * Tensor::from_data(gv, y.sym_shape())).sum().backward();
    // d(sum(y * g)) / dx and / dw by the definition: each product x * w feeds one output
    auto [N, C, H, W] = c.x;
    auto [O, Cg, KH, KW] = c.w;
    const std::int64_t OH = y.size(2), OW = y.size(3), Og = O / c.g;
    std::vector<double> dx(xv.size()), dw(wv.size());
    for (std::int64_t n = 0; n < N; ++n)
      for (std::int64_t o = 0; o < O; ++o)
        for (std::int64_t i = 0; i < OH; ++i)
          for (std::int64_t j = 0; j < OW; ++j)
            for (std::int64_t ci = 0; ci < Cg; ++ci)
              for (std::int64_t kh = 0; kh < KH; ++kh)
                for (std::int64_t kw = 0; kw < KW; ++kw) {
                  const std::int64_t h = i * c.s[0] + kh * c.d[0] - c.p[0],
                                     ww = j * c.s[1] + kw * c.d[1] - c.p[1];
                  if (h < 0 || h >= H || ww < 0 || ww >= W) continue;
                  const auto xi = std::size_t(((n * C + o / Og * Cg + ci) * H + h) * W + ww),
                             wi = std::size_t(((o * Cg + ci) * KH + kh) * KW + kw);
                  const double gy = gv[std::size_t(((n * O + o) * OH + i) * OW + j)];
                  dx[xi] += gy * wv[wi];
                  dw[wi] += gy * xv[xi];
                }
    check_close(x.grad().to_vector<double>(), dx);
    check_close(w.grad().to_vector<double>(), dw);
  }
}

TEST_CASE("pooling against loops") {
  auto xv = rnd(2 * 3 * 7 * 6, 11);
  Tensor x = Tensor::from_data(xv, {2, 3, 7, 6});
  auto at = [&](std::int64_t n, std::int64_t c, std::int64_t h, std::int64_t w) {
    return xv[std::size_t(((n * 3 + c) * 7 + h) * 6 + w)];
  };
  struct Case {
    std::array<std::int64_t, 2> k, s, p, d;
  };
  for (Case c : {Case{{2, 2}, {2, 2}, {0, 0}, {1, 1}}, Case{{3, 3}, {1, 1}, {1, 1}, {1, 1}},
                 Case{{3, 2}, {2, 1}, {1, 0}, {1, 2}}, Case{{2, 3}, {3, 2}, {0, 1}, {2, 1}},
                 Case{{3, 3}, {2, 2}, {1, 1}, {1, 1}}, Case{{2, 2}, {3, 3}, {1, 0}, {1, 1}}})
    for (bool ceil : {false, true}) {
      CAPTURE(ceil);
      std::int64_t out[2];
      const std::int64_t in[2] = {7, 6};
      for (int a = 0; a < 2; ++a) { // PyTorch's pooling output size
        std::int64_t span = c.d[a] * (c.k[a] - 1) + 1, len = in[a] + 2 * c.p[a] - span;
        out[a] = (ceil ? (len + c.s[a] - 1) / c.s[a] : len / c.s[a]) + 1;
        if (ceil && (out[a] - 1) * c.s[a] >= in[a] + c.p[a]) --out[a];
      }
      std::vector<double> mx, avg, avg_nopad;
      std::vector<std::int64_t> argmx; // PyTorch's: the first strict maximum in row-major order
      for (std::int64_t n = 0; n < 2; ++n)
        for (std::int64_t ch = 0; ch < 3; ++ch)
          for (std::int64_t i = 0; i < out[0]; ++i)
            for (std::int64_t j = 0; j < out[1]; ++j) {
              double m = -INFINITY, s = 0;
              int cnt = 0;
              std::int64_t mi = -1;
              for (std::int64_t a = 0; a < c.k[0]; ++a)
                for (std::int64_t b = 0; b < c.k[1]; ++b) {
                  std::int64_t h = i * c.s[0] + a * c.d[0] - c.p[0],
                               w = j * c.s[1] + b * c.d[1] - c.p[1];
                  if (h < 0 || h >= 7 || w < 0 || w >= 6) continue;
                  if (mi < 0 || at(n, ch, h, w) > m) mi = h * 6 + w;
                  m = std::max(m, at(n, ch, h, w));
                  s += at(n, ch, h, w);
                  ++cnt;
                }
              // with padding counted: the window clipped to the padded input
              std::int64_t h0 = i * c.s[0] - c.p[0], w0 = j * c.s[1] - c.p[1];
              double area = double((std::min(h0 + c.k[0], 7 + c.p[0]) - h0) *
                                   (std::min(w0 + c.k[1], 6 + c.p[1]) - w0));
              mx.push_back(m);
              argmx.push_back(mi);
              avg.push_back(s / area);
              avg_nopad.push_back(s / cnt);
            }
      Tensor m = F::max_pool2d(x, c.k, c.s, c.p, c.d, ceil);
      CHECK(m.shape() == std::vector<std::int64_t>{2, 3, out[0], out[1]});
      check_close(m.to_vector<double>(), mx);
      auto [mv, mi] = F::max_pool2d_with_indices(x, c.k, c.s, c.p, c.d, ceil);
      CHECK(mi.dtype() == tg::int64);
      CHECK(mi.shape() == m.shape());
      CHECK(mi.to_vector<std::int64_t>() == argmx);
      check_close(mv.to_vector<double>(), mx);
      if (c.d == std::array<std::int64_t, 2>{1, 1}) {
        check_close(F::avg_pool2d(x, c.k, c.s, c.p, ceil).to_vector<double>(), avg);
        check_close(F::avg_pool2d(x, c.k, c.s, c.p, ceil, false).to_vector<double>(), avg_nopad);
      }
    }
  nn::MaxPool2d pool(2);
  CHECK(pool(x).shape() == std::vector<std::int64_t>{2, 3, 3, 3});
  CHECK(pool.forward_with_indices(x).second.shape() == std::vector<std::int64_t>{2, 3, 3, 3});
  // a window of -inf only names its first element inside the input, as PyTorch does
  Tensor ninf = tg::full({1, 1, 3, 3}, -INFINITY);
  CHECK(F::max_pool2d_with_indices(ninf, 3, 2, 1).second.to_vector<std::int64_t>() ==
        std::vector<std::int64_t>{0, 1, 3, 4});
  // NaN wins, and the last one is named, as in PyTorch's search
  Tensor nans = Tensor({1.f, NAN, 2.f, NAN, 5.f, 5.f}).reshape({1, 1, 1, 6});
  CHECK(F::max_pool2d_with_indices(nans, F::Pair(1, 6)).second.item<std::int64_t>() == 3);
  CHECK(F::max_pool2d_with_indices(nans, F::Pair(1, 2)).second.to_vector<std::int64_t>() ==
        std::vector<std::int64_t>{1, 3, 4});
  CHECK_THROWS_WITH_AS(F::max_pool2d_with_indices(x, 2, 2, 2), doctest::Contains("half the kernel"),
                       tg::shape_error);
  nn::AvgPool2d apool(3, 2, 1);
  CHECK(apool(x).shape() == std::vector<std::int64_t>{2, 3, 4, 3});
  CHECK_THROWS_WITH_AS(F::max_pool2d(x, 2, 2, 2), doctest::Contains("half the kernel"),
                       tg::shape_error);
}

TEST_CASE("gradients of every layer (finite differences, float64)") {
  tg::manual_seed(5);
  SUBCASE("linear") {
    check_grad("linear", [](auto& v) { return F::linear(v[0], v[1], v[2]); },
               {{3, 4}, {2, 4}, {2}});
  }
  SUBCASE("conv2d") {
    check_grad("conv2d", [](auto& v) { return F::conv2d(v[0], v[1], v[2]); },
               {{1, 2, 4, 4}, {3, 2, 3, 3}, {3}});
    auto strided = [](auto& v) { return F::conv2d(v[0], v[1], Tensor(), {2, 1}, {1, 2}, {1, 2}); };
    check_grad("conv2d stride/padding/dilation", strided, {{1, 2, 5, 5}, {2, 2, 2, 3}});
    check_grad("conv2d groups", [](auto& v) { return F::conv2d(v[0], v[1], v[2], 1, 1, 1, 2); },
               {{1, 4, 3, 3}, {4, 2, 2, 2}, {4}});
    // padding beyond the window's reach (dX crops), a stride that skips rows, both with groups
    auto far = [](auto& v) { return F::conv2d(v[0], v[1], v[2], {3, 2}, {3, 1}, 1, 2); };
    check_grad("conv2d padding past the reach", far, {{2, 4, 4, 5}, {2, 2, 2, 3}, {2}});
  }
  SUBCASE("unfold: each element's windows summed") {
    // a window over a padded (masked) axis reads through a view of its own
    Tensor row = Tensor::from_data(std::vector<double>{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}, {2, 5});
    CHECK(row.pad({1, 1}).unfold(1, 3, 2).to_vector<double>() ==
          std::vector<double>{0, 0, 1, 1, 2, 3, 3, 4, 0, 0, 5, 6, 6, 7, 8, 8, 9, 0});
    auto padded = [](auto& v) { return v[0].pad({2, 1}).unfold(1, 2, 3); };
    check_grad("unfold of a padded axis", padded, {{2, 6}});
    check_grad("unfold", [](auto& v) { return v[0].unfold(1, 3, 2); }, {{2, 8, 3}});
    check_grad("unfold twice", [](auto& v) { return v[0].unfold(0, 2, 1).unfold(1, 2, 3); },
               {{4, 7}});
  }
  SUBCASE("windows: stacked taps and the repeat trick for large kernels") {
    for (bool large : {false, true}) {
      check_grad(large ? "windows (repeat)" : "windows (taps)",
                 [&](auto& v) { return F::detail::windows_last(v[0], 3, 2, 2, large); }, {{2, 9}});
      Tensor x = Tensor::from_data(rnd(2 * 3 * 9 * 8, 3), {2, 3, 9, 8});
      CHECK(F::detail::windows2d(x, {3, 2}, {2, 1}, {1, 3}, large).to_vector<double>() ==
            F::detail::windows2d(x, {3, 2}, {2, 1}, {1, 3}, !large).to_vector<double>());
    }
  }
  SUBCASE("pooling") {
    check_grad("max_pool2d", [](auto& v) { return F::max_pool2d(v[0], 2); }, {{1, 2, 4, 5}});
    check_grad("max_pool2d overlapping, padded",
               [](auto& v) { return F::max_pool2d(v[0], 3, 2, 1); }, {{1, 2, 5, 5}});
    check_grad("avg_pool2d", [](auto& v) { return F::avg_pool2d(v[0], 3, 2, 1, false, false); },
               {{1, 2, 5, 4}});
    check_grad("max_pool2d ceil_mode",
               [](auto& v) { return F::max_pool2d(v[0], 2, 2, 0, 1, true); }, {{1, 2, 5, 5}});
    check_grad("avg_pool2d ceil_mode", [](auto& v) { return F::avg_pool2d(v[0], 3, 2, 1, true); },
               {{1, 2, 6, 5}});
  }
  SUBCASE("batch norm, layer norm, rms norm") {
    nn::BatchNorm2d bn(3, 1e-5, 0.1, true, true, f64);
    check_module_grad("batch_norm (train)", bn, {2, 3, 2, 2});
    bn.eval();
    check_module_grad("batch_norm (eval)", bn, {2, 3, 2, 2});
    nn::BatchNorm1d bn1(3, 1e-5, 0.1, true, true, f64);
    check_module_grad("batch_norm1d (train, [N, C])", bn1, {4, 3});
    check_module_grad("batch_norm1d (train, [N, C, L])", bn1, {2, 3, 2});
    nn::BatchNorm3d bn3(2, 1e-5, 0.1, true, true, f64);
    check_module_grad("batch_norm3d (train)", bn3, {2, 2, 2, 1, 2});
    CHECK_THROWS_WITH_AS(bn1(tg::ones({2, 3, 2, 2})), doctest::Contains("BatchNorm1d"),
                         tg::shape_error);
    CHECK_THROWS_WITH_AS(bn3(tg::ones({2, 2, 2, 2})), doctest::Contains("[N, 2, D, H, W]"),
                         tg::shape_error);
    // the functional form, in training, updates the running statistics it is given
    CHECK_THROWS_WITH_AS(
        F::batch_norm(tg::ones({2, 2}), tg::zeros({2}), tg::ones({2}), Tensor(), Tensor(), true),
        doctest::Contains("running_mean is updated in place"), tg::error);
    Tensor rm = tg::zeros({2}).realize(), rv = tg::ones({2}).realize();
    Tensor xb = Tensor::from_data(std::vector<float>{1, 2, 3, 5, 0, 4, 2, 10}, {2, 2, 2});
    Tensor yb = F::batch_norm(xb, rm, rv, Tensor(), Tensor(), true, 0.5);
    check_close(rm.to_vector<double>(), {0.5 * 1.75, 0.5 * 5}, 1e-6); // channel means
    // unbiased variances of {1, 2, 0, 4} and {3, 5, 2, 10}: 35/12 and 38/3
    check_close(rv.to_vector<double>(), {0.5 + 0.5 * 35.0 / 12, 0.5 + 0.5 * 38.0 / 3}, 1e-6);
    CHECK(yb.to_vector<double>()[0] == doctest::Approx((1 - 1.75) / std::sqrt(35.0 / 16 + 1e-5)));
    CHECK(F::batch_norm(xb, rm, rv).to_vector<double>()[1] ==
          doctest::Approx((2 - 0.875) / std::sqrt(0.5 + 35.0 / 24 + 1e-5)));
    CHECK_THROWS_WITH_AS(F::batch_norm(xb, Tensor(), Tensor()),
                         doctest::Contains("running_mean and running_var"), tg::error);
    CHECK_THROWS_WITH_AS(F::batch_norm(xb, tg::zeros({3}), rv), doctest::Contains("running_mean"),
                         tg::shape_error);
    CHECK_THROWS_WITH_AS(
        F::batch_norm(tg::ones({1, 2}), Tensor(), Tensor(), Tensor(), Tensor(), true),
        doctest::Contains("more than 1 value per channel"), tg::shape_error);
    nn::LayerNorm ln(std::vector<std::int64_t>{2, 3}, 1e-5, true, true, f64);
    check_module_grad("layer_norm", ln, {2, 2, 3});
    nn::RMSNorm rms(4, std::nullopt, true, f64);
    check_module_grad("rms_norm", rms, {3, 4});
  }
  SUBCASE("embedding") {
    Tensor idx = Tensor::from_data(std::vector<std::int64_t>{1, 3, 0, 3, 2}, {5});
    check_grad("embedding", [&](auto& v) { return F::embedding(idx, v[0]); }, {{4, 3}});
    nn::Embedding e(4, 3, 1, f64);
    e.weight.requires_grad_();
    e(idx).sum().backward();
    auto g = e.weight.grad().to_vector<double>();
    CHECK(g == std::vector<double>{1, 1, 1, 0, 0, 0, 1, 1, 1, 2, 2, 2}); // row 1 is padding
  }
  SUBCASE("attention") {
    check_grad("sdpa", [](auto& v) { return F::scaled_dot_product_attention(v[0], v[1], v[2]); },
               {{2, 3, 4}, {2, 5, 4}, {2, 5, 3}});
    check_grad("sdpa causal",
               [](auto& v) {
                 return F::scaled_dot_product_attention(v[0], v[1], v[2], Tensor(), 0, true);
               },
               {{1, 4, 2}, {1, 4, 2}, {1, 4, 2}});
    nn::MultiheadAttention mha(4, 2, 0, true, false, f64);
    check_module_grad("multihead attention", mha, {3, 2, 4}, -1, 1);
  }
  SUBCASE("modules: Linear and Conv2d") {
    nn::Linear lin(3, 2, true, f64);
    check_module_grad("Linear", lin, {2, 3});
    nn::Conv2d conv(2, 2, 2, 1, 1, 1, 1, true, f64);
    check_module_grad("Conv2d", conv, {1, 2, 3, 3});
  }
}

TEST_CASE("gradients of the losses (finite differences, float64)") {
  Tensor t = Tensor::from_data(std::vector<std::int64_t>{2, 0, 1, -100}, {4});
  Tensor t2 = Tensor::from_data(std::vector<std::int64_t>{1, 0, 2, 2, 1, 0}, {2, 3});
  Tensor w = Tensor::from_data(std::vector<double>{0.5, 2.0, 1.5});
  check_grad("cross_entropy", [&](auto& v) { return F::cross_entropy(v[0], t); }, {{4, 3}});
  check_grad("cross_entropy weighted, smoothed",
             [&](auto& v) { return F::cross_entropy(v[0], t, w, -100, "mean", 0.1); }, {{4, 3}});
  check_grad("cross_entropy [N, C, d]",
             [&](auto& v) { return F::cross_entropy(v[0], t2, Tensor(), -100, "sum", 0.2); },
             {{2, 3, 3}});
  check_grad("cross_entropy probabilities",
             [&](auto& v) { return F::cross_entropy(v[0], v[1].softmax(1)); }, {{3, 4}, {3, 4}});
  check_grad("nll_loss", [&](auto& v) { return F::nll_loss(v[0].log_softmax(1), t, w); }, {{4, 3}});
  check_grad("mse_loss", [&](auto& v) { return F::mse_loss(v[0], v[1]); }, {{2, 3}, {2, 3}});
  check_grad("l1_loss", [&](auto& v) { return F::l1_loss(v[0], v[1], "sum"); }, {{2, 3}, {2, 3}});
  check_grad("binary_cross_entropy",
             [&](auto& v) { return F::binary_cross_entropy(v[0].sigmoid(), v[1].sigmoid()); },
             {{2, 3}, {2, 3}});
  check_grad("binary_cross_entropy_with_logits",
             [&](auto& v) {
               return F::binary_cross_entropy_with_logits(v[0], v[1].sigmoid(), Tensor(), "mean",
                                                          v[2].abs());
             },
             {{2, 3}, {2, 3}, {3}});
}

TEST_CASE("losses: values as PyTorch defines them") {
  std::vector<double> x{1.0, 2.0, 0.5, -1.0, 0.0, 3.0};
  Tensor logits = Tensor::from_data(x, {2, 3});
  Tensor t = Tensor::from_data(std::vector<std::int64_t>{1, 2}, {2});
  auto logp = [&](int i, int c) {
    double m = std::max(
               {x[std::size_t(3 * i)], x[std::size_t(3 * i + 1)], x[std::size_t(3 * i + 2)]}),
           s = 0;
    for (int k = 0; k < 3; ++k) s += std::exp(x[std::size_t(3 * i + k)] - m);
    return x[std::size_t(3 * i + c)] - m - std::log(s);
  };
  double ce = -(logp(0, 1) + logp(1, 2)) / 2;
  CHECK(F::cross_entropy(logits, t).item<double>() == doctest::Approx(ce));
  CHECK(F::cross_entropy(logits, t, Tensor(), -100, "sum").item<double>() ==
        doctest::Approx(2 * ce));
  auto none = F::cross_entropy(logits, t, Tensor(), -100, "none").to_vector<double>();
  CHECK(none[0] == doctest::Approx(-logp(0, 1)));
  // label smoothing: (1 - e) * nll + e / C * sum_c(-logp)
  double e = 0.1, smooth = 0;
  for (int i = 0; i < 2; ++i)
    for (int c = 0; c < 3; ++c) smooth -= logp(i, c);
  CHECK(F::cross_entropy(logits, t, Tensor(), -100, "mean", e).item<double>() ==
        doctest::Approx((1 - e) * ce + e / 3 * smooth / 2));
  // weights and ignore_index: the mean divides by the weights of the counted targets
  Tensor w = Tensor::from_data(std::vector<double>{1.0, 2.0, 3.0});
  CHECK(F::cross_entropy(logits, t, w).item<double>() ==
        doctest::Approx((-2 * logp(0, 1) - 3 * logp(1, 2)) / 5));
  Tensor ti = Tensor::from_data(std::vector<std::int64_t>{1, -100}, {2});
  CHECK(F::cross_entropy(logits, ti).item<double>() == doctest::Approx(-logp(0, 1)));
  CHECK(F::nll_loss(logits.log_softmax(1), t).item<double>() == doctest::Approx(ce));
  nn::CrossEntropyLoss crit{.label_smoothing = e};
  CHECK(crit(logits, t).item<double>() == doctest::Approx((1 - e) * ce + e / 3 * smooth / 2));
  // binary losses
  Tensor p = Tensor::from_data(std::vector<double>{0.2, 0.9}),
         y = Tensor::from_data(std::vector<double>{0.0, 1.0});
  double bce = -(std::log(0.8) + std::log(0.9)) / 2;
  CHECK(F::binary_cross_entropy(p, y).item<double>() == doctest::Approx(bce));
  Tensor z = Tensor::from_data(std::vector<double>{-30.0, 2.0, 40.0}),
         yz = Tensor::from_data(std::vector<double>{1.0, 0.0, 0.0});
  auto bl = F::binary_cross_entropy_with_logits(z, yz, Tensor(), "none").to_vector<double>();
  CHECK(bl[0] == doctest::Approx(30.0)); // stable for large |x|
  CHECK(bl[1] == doctest::Approx(std::log(1 + std::exp(2.0))));
  CHECK(bl[2] == doctest::Approx(40.0));
  CHECK(F::mse_loss(p, y).item<double>() == doctest::Approx((0.04 + 0.01) / 2));
  CHECK(F::l1_loss(p, y, "sum").item<double>() == doctest::Approx(0.3));
  CHECK_THROWS_WITH_AS(
      F::cross_entropy(logits, Tensor::from_data(std::vector<std::int64_t>{1, 2, 0}, {3})),
      doctest::Contains("does not fit the target"), tg::shape_error);
  CHECK_THROWS_WITH_AS(F::mse_loss(p, logits), doctest::Contains("same shape"), tg::shape_error);
}

TEST_CASE("batch norm: batch statistics in training, running statistics updated in place, eval "
          "uses them") {
  auto xv = rnd(4 * 2 * 3 * 3, 21);
  Tensor x = Tensor::from_data(xv, {4, 2, 3, 3});
  nn::BatchNorm2d bn(2, 1e-5, 0.1, true, true, f64);
  auto rm_node = bn.running_mean.lazy();
  Tensor y = bn(x);
  std::vector<double> mean(2, 0), var(2, 0);
  for (int c = 0; c < 2; ++c) {
    for (int n = 0; n < 4; ++n)
      for (int k = 0; k < 9; ++k) mean[std::size_t(c)] += xv[std::size_t((n * 2 + c) * 9 + k)] / 36;
    for (int n = 0; n < 4; ++n)
      for (int k = 0; k < 9; ++k)
        var[std::size_t(c)] +=
            std::pow(xv[std::size_t((n * 2 + c) * 9 + k)] - mean[std::size_t(c)], 2) / 36;
  }
  auto yv = y.to_vector<double>();
  CHECK(yv[0] == doctest::Approx((xv[0] - mean[0]) / std::sqrt(var[0] + 1e-5)));
  CHECK(bn.running_mean.lazy() == rm_node);
  auto rm = bn.running_mean.to_vector<double>(), rv = bn.running_var.to_vector<double>();
  CHECK(rm[1] == doctest::Approx(0.1 * mean[1]));
  CHECK(rv[1] == doctest::Approx(0.9 + 0.1 * var[1] * 36 / 35));
  CHECK(bn.num_batches_tracked.item<std::int64_t>() == 1);
  bn(x);
  CHECK(bn.num_batches_tracked.item<std::int64_t>() == 2);
  CHECK(bn.running_mean.to_vector<double>()[1] ==
        doctest::Approx(0.9 * 0.1 * mean[1] + 0.1 * mean[1]));
  bn.eval();
  auto ye = bn(x).to_vector<double>();
  rm = bn.running_mean.to_vector<double>();
  rv = bn.running_var.to_vector<double>();
  CHECK(ye[0] == doctest::Approx((xv[0] - rm[0]) / std::sqrt(rv[0] + 1e-5)));
  CHECK(bn.num_batches_tracked.item<std::int64_t>() == 2);
  // momentum = nullopt: a cumulative average
  nn::BatchNorm2d cum(2, 1e-5, std::nullopt, true, true, f64);
  cum(x);
  cum(x * 3.0);
  CHECK(cum.running_mean.to_vector<double>()[0] == doctest::Approx((mean[0] + 3 * mean[0]) / 2));
}

TEST_CASE(
    "dropout: drops with probability p and scales by 1 / (1 - p) in training, identity in eval") {
  tg::manual_seed(9);
  Tensor x = tg::ones({100, 100});
  nn::Dropout drop(0.3);
  auto a = drop(x).to_vector<float>(), b = drop(x).to_vector<float>();
  std::size_t zeros = 0;
  for (float v : a) {
    CHECK((v == 0 || v == doctest::Approx(1 / 0.7)));
    zeros += v == 0;
  }
  CHECK(double(zeros) / 1e4 == doctest::Approx(0.3).epsilon(0.1));
  CHECK(a != b); // a fresh mask every call
  drop.eval();
  CHECK(drop(x).to_vector<float>() == x.to_vector<float>());
  drop.train();
  Tensor p = tg::ones({50}).requires_grad_();
  Tensor y = F::dropout(p, 0.5);
  y.sum().backward();
  auto g = p.grad().to_vector<float>(), yv = y.to_vector<float>();
  for (std::size_t i = 0; i < g.size(); ++i) CHECK(g[i] == yv[i]); // mask / (1 - p)
  CHECK(F::dropout(x, 0.0).lazy() == x.lazy());
  CHECK(F::dropout(x, 1.0).sum().item<float>() == 0);
  // uniform in [0, 1)
  auto u = F::device_rand({4096}).to_vector<float>();
  double m = 0;
  for (float v : u) {
    CHECK((v >= 0 && v < 1));
    m += v;
  }
  CHECK(m / 4096 == doctest::Approx(0.5).epsilon(0.05));
}

TEST_CASE("embedding, attention and the parameter-free modules") {
  tg::manual_seed(10);
  nn::Embedding e(5, 3);
  Tensor idx = Tensor::from_data(std::vector<std::int64_t>{4, 0, 4, 2, 1, 3}, {2, 3});
  Tensor out = e(idx);
  CHECK(out.shape() == std::vector<std::int64_t>{2, 3, 3});
  auto wv = e.weight.to_vector<float>(), ov = out.to_vector<float>();
  for (int k = 0; k < 3; ++k) CHECK(ov[std::size_t(k)] == wv[std::size_t(12 + k)]);
  // causal attention equals attention with an explicit lower-triangular mask
  Tensor q = tg::randn({2, 4, 8}), k = tg::randn({2, 4, 8}), v = tg::randn({2, 4, 8});
  std::vector<bool> tri(16);
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 4; ++j) tri[std::size_t(i * 4 + j)] = j <= i;
  Tensor mask = Tensor::from_data(tri, {4, 4});
  auto a = F::scaled_dot_product_attention(q, k, v, Tensor(), 0, true).to_vector<float>();
  auto b = F::scaled_dot_product_attention(q, k, v, mask).to_vector<float>();
  for (std::size_t i = 0; i < a.size(); ++i) CHECK(a[i] == doctest::Approx(b[i]).epsilon(1e-5));
  // the first query sees only the first key: its output is v[0]
  auto vv = v.to_vector<float>();
  for (int c = 0; c < 8; ++c)
    CHECK(a[std::size_t(c)] == doctest::Approx(vv[std::size_t(c)]).epsilon(1e-5));
  nn::MultiheadAttention mha(8, 2, 0.0, true, true);
  CHECK(mha.in_proj_weight.shape() == std::vector<std::int64_t>{24, 8});
  CHECK(mha.out_proj.bias.abs().sum().item<float>() == 0);
  CHECK(mha(q).shape() == std::vector<std::int64_t>{2, 4, 8});
  // a PyTorch-style bool mask (true: masked) equals is_causal
  std::vector<bool> upper(16);
  for (int i = 0; i < 16; ++i) upper[std::size_t(i)] = !tri[std::size_t(i)];
  auto m1 = mha.forward(q, q, q, Tensor(), true).to_vector<float>();
  auto m2 = mha.forward(q, q, q, Tensor::from_data(upper, {4, 4})).to_vector<float>();
  for (std::size_t i = 0; i < m1.size(); ++i) CHECK(m1[i] == doctest::Approx(m2[i]).epsilon(1e-5));
  CHECK_THROWS_AS(nn::MultiheadAttention(6, 4), tg::shape_error);
  nn::Sequential seq(nn::Flatten(), nn::Linear(6, 4), nn::GELU(), nn::Linear(4, 2), nn::Tanh(),
                     nn::Lambda([](const Tensor& t) { return t * 2.0; }), nn::Identity());
  CHECK(seq(tg::randn({3, 2, 3})).shape() == std::vector<std::int64_t>{3, 2});
  CHECK(seq.size() == 7);
  CHECK(seq.named_parameters()[0].first == "1.weight");
  // a Lambda owns its function: a copy works after the original and what it captured are gone
  std::optional<nn::Lambda> scaled;
  {
    auto k = std::make_shared<double>(3.0);
    nn::Lambda original([k](const Tensor& t) { return t * *k; });
    scaled.emplace(original);
  }
  CHECK(scaled->forward(Tensor({1.f, 2.f})).to_vector<float>() == std::vector<float>{3.f, 6.f});
}

TEST_CASE("training: an MLP's loss falls below a threshold") {
  tg::manual_seed(12);
  // two interleaved spirals, 2 classes
  std::vector<float> xs;
  std::vector<std::int64_t> ys;
  for (int i = 0; i < 128; ++i) {
    int c = i % 2;
    double r = 0.2 + 0.8 * double(i / 2) / 64, a = 3.0 * r + c * 3.14159;
    xs.push_back(float(r * std::cos(a)));
    xs.push_back(float(r * std::sin(a)));
    ys.push_back(c);
  }
  Tensor x = Tensor::from_data(xs, {128, 2}), y = Tensor::from_data(ys, {128});
  nn::Sequential net(nn::Linear(2, 32), nn::ReLU(), nn::Linear(32, 32), nn::ReLU(),
                     nn::Linear(32, 2));
  tg::optim::Adam opt(net.parameters(), {.lr = 0.02});
  float first = 0, last = 0;
  for (int step = 0; step < 150; ++step) {
    opt.zero_grad();
    Tensor loss = F::cross_entropy(net(x), y);
    loss.realize();
    loss.backward();
    opt.step();
    if (step == 0) first = loss.item<float>();
    last = loss.item<float>();
  }
  CHECK(first > 0.6f);
  CHECK(last < 0.15f);
  Tensor acc = (net(x).argmax(1) == y).cast(tg::float32).mean();
  CHECK(acc.item<float>() > 0.95f);
}
