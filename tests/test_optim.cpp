// tg::optim: SGD / Adam / AdamW against plain C++ implementations of PyTorch's update rules,
// parameter groups, LR schedulers, gradient clipping, optimizer state, and training steps
// compiled with tg::jit against the same steps run eagerly.
#include <doctest/doctest.h>

#include <tg/tg.hpp>

#include <cmath>
#include <memory>
#include <random>

namespace nn = tg::nn;
namespace F = tg::nn::functional;
namespace optim = tg::optim;
using tg::Tensor;

namespace {
std::vector<float> rnd(std::size_t n, std::uint32_t seed, double scale = 1) {
  std::mt19937 rng(seed);
  std::normal_distribution<double> d(0, scale);
  std::vector<float> v(n);
  for (float& x : v) x = float(d(rng));
  return v;
}

void check_close(const std::vector<float>& a, const std::vector<float>& b, double tol = 1e-5) {
  REQUIRE(a.size() == b.size());
  for (std::size_t i = 0; i < a.size(); ++i) {
    CAPTURE(i);
    CHECK(a[i] == doctest::Approx(b[i]).epsilon(tol).scale(1e-3));
  }
}

/// torch.optim.SGD's single-tensor update, in plain C++ (float tensors, double hyperparameters).
struct RefSGD {
  double lr, momentum, dampening, wd;
  bool nesterov, maximize;
  std::vector<float> buf;
  bool started = false;
  void step(std::vector<float>& p, std::vector<float> g) {
    for (std::size_t i = 0; i < p.size(); ++i) {
      if (maximize) g[i] = -g[i];
      if (wd != 0) g[i] = g[i] + float(wd) * p[i];
    }
    if (momentum != 0) {
      if (!started)
        buf = g;
      else
        for (std::size_t i = 0; i < p.size(); ++i)
          buf[i] = buf[i] * float(momentum) + float(1 - dampening) * g[i];
      started = true;
      for (std::size_t i = 0; i < p.size(); ++i)
        g[i] = nesterov ? g[i] + float(momentum) * buf[i] : buf[i];
    }
    for (std::size_t i = 0; i < p.size(); ++i) p[i] = p[i] - float(lr) * g[i];
  }
};

/// torch.optim.Adam / AdamW's single-tensor update, in plain C++.
struct RefAdam {
  double lr, b1, b2, eps, wd;
  bool amsgrad, decoupled, maximize;
  std::vector<float> m, v, vmax;
  int t = 0;
  void step(std::vector<float>& p, std::vector<float> g) {
    if (m.empty()) m = v = vmax = std::vector<float>(p.size(), 0.f);
    ++t;
    for (std::size_t i = 0; i < p.size(); ++i) {
      if (maximize) g[i] = -g[i];
      if (decoupled)
        p[i] = p[i] * float(1 - lr * wd);
      else if (wd != 0)
        g[i] = g[i] + float(wd) * p[i];
      m[i] = m[i] + (g[i] - m[i]) * float(1 - b1);
      v[i] = v[i] * float(b2) + g[i] * g[i] * float(1 - b2);
      vmax[i] = std::max(vmax[i], v[i]);
    }
    double bc1 = 1 - std::pow(b1, t), bc2 = 1 - std::pow(b2, t);
    float step_size = float(lr / bc1), bc2_sqrt = float(std::sqrt(bc2));
    for (std::size_t i = 0; i < p.size(); ++i) {
      float denom = std::sqrt(amsgrad ? vmax[i] : v[i]) / bc2_sqrt + float(eps);
      p[i] = p[i] - step_size * (m[i] / denom);
    }
  }
};

/// Runs `steps` updates of `opt` on two parameters with host-made gradients, and the same on the
/// reference; compares the parameters after every step.
template <class Ref>
void compare(optim::Optimizer& opt, std::vector<Tensor> params, std::vector<Ref> refs, int steps) {
  std::vector<std::vector<float>> host;
  for (const Tensor& p : params) host.push_back(p.to_vector<float>());
  for (int s = 0; s < steps; ++s) {
    CAPTURE(s);
    for (std::size_t k = 0; k < params.size(); ++k) {
      auto g = rnd(host[k].size(), std::uint32_t(100 * s + k), 0.5);
      params[k].set_grad(Tensor::from_data(g, params[k].sym_shape()));
      refs[k].step(host[k], g);
    }
    opt.step();
    for (std::size_t k = 0; k < params.size(); ++k)
      check_close(params[k].to_vector<float>(), host[k]);
  }
}

std::vector<Tensor> make_params() {
  return {Tensor::from_data(rnd(12, 1), {3, 4}).requires_grad_(),
          Tensor::from_data(rnd(5, 2), {5}).requires_grad_()};
}
} // namespace

TEST_CASE(
    "SGD equals PyTorch's update rule (momentum, dampening, nesterov, weight decay, maximize)") {
  struct Case {
    optim::SGDOptions o;
  };
  for (optim::SGDOptions o :
       {optim::SGDOptions{.lr = 0.1}, optim::SGDOptions{.lr = 0.05, .momentum = 0.9},
        optim::SGDOptions{.lr = 0.05, .momentum = 0.9, .dampening = 0.3, .weight_decay = 0.01},
        optim::SGDOptions{.lr = 0.05, .momentum = 0.8, .weight_decay = 0.1, .nesterov = true},
        optim::SGDOptions{.lr = 0.02, .momentum = 0.5, .maximize = true}}) {
    CAPTURE(o.momentum);
    CAPTURE(o.dampening);
    CAPTURE(o.nesterov);
    auto ps = make_params();
    optim::SGD opt(ps, o);
    RefSGD r{o.lr, o.momentum, o.dampening, o.weight_decay, o.nesterov, o.maximize, {}, false};
    compare(opt, ps, std::vector<RefSGD>{r, r}, 5);
  }
  auto ps = make_params();
  CHECK_THROWS_WITH_AS(optim::SGD(ps, {.lr = 0.1, .nesterov = true}), doctest::Contains("Nesterov"),
                       tg::error);
  CHECK_THROWS_WITH_AS(optim::SGD(ps, {.lr = -1}), doctest::Contains("invalid learning rate"),
                       tg::error);
  CHECK_THROWS_WITH_AS(optim::SGD(std::vector<Tensor>{ps[0], ps[0]}, {}),
                       doctest::Contains("twice"), tg::error);
  CHECK_THROWS_WITH_AS(optim::SGD(std::vector<Tensor>{ps[0] * 2.0}, {}),
                       doctest::Contains("realized"), tg::error);
}

TEST_CASE("Adam and AdamW equal PyTorch's update rules (weight decay, amsgrad, maximize)") {
  for (optim::AdamOptions o :
       {optim::AdamOptions{.lr = 1e-2},
        optim::AdamOptions{.lr = 3e-3, .betas = {0.8, 0.99}, .eps = 1e-6, .weight_decay = 0.05},
        optim::AdamOptions{.lr = 1e-2, .amsgrad = true},
        optim::AdamOptions{.lr = 1e-2, .maximize = true}}) {
    CAPTURE(o.weight_decay);
    CAPTURE(o.amsgrad);
    auto ps = make_params();
    optim::Adam opt(ps, o);
    RefAdam r{o.lr,
              o.betas.first,
              o.betas.second,
              o.eps,
              o.weight_decay,
              o.amsgrad,
              false,
              o.maximize,
              {},
              {},
              {},
              0};
    compare(opt, ps, std::vector<RefAdam>{r, r}, 6);
  }
  for (optim::AdamWOptions o :
       {optim::AdamWOptions{},
        optim::AdamWOptions{.lr = 5e-3, .weight_decay = 0.3, .amsgrad = true}}) {
    CAPTURE(o.weight_decay);
    auto ps = make_params();
    optim::AdamW opt(ps, o);
    RefAdam r{o.lr,
              o.betas.first,
              o.betas.second,
              o.eps,
              o.weight_decay,
              o.amsgrad,
              true,
              o.maximize,
              {},
              {},
              {},
              0};
    compare(opt, ps, std::vector<RefAdam>{r, r}, 6);
  }
  auto ps = make_params();
  CHECK_THROWS_WITH_AS(optim::Adam(ps, {.betas = {1.0, 0.9}}), doctest::Contains("beta1"),
                       tg::error);
}

TEST_CASE("after step() the gradients are the ones the update used, stored, not recomputed") {
  // A lazy gradient read after the update would be recomputed from the new parameter values.
  Tensor w = Tensor({1.0f, 2.0f}).requires_grad_();
  optim::SGD opt({w}, {.lr = 0.1});
  (w * w).sum().backward(); // grad 2w = [2, 4]
  opt.step();               // w = [0.8, 1.6]
  CHECK(w.to_vector<float>()[0] == doctest::Approx(0.8f));
  CHECK(w.to_vector<float>()[1] == doctest::Approx(1.6f));
  CHECK(w.grad().is_realized());
  CHECK(w.grad().to_vector<float>() == std::vector<float>{2.0f, 4.0f});
}

TEST_CASE("parameter groups have their own learning rate and weight decay; parameters without a "
          "gradient stay") {
  auto ps = make_params();
  Tensor frozen = Tensor::from_data(rnd(3, 3), {3}).requires_grad_();
  optim::SGD opt({{{ps[0]}, 0.1, 0.0}, {{ps[1], frozen}, std::nullopt, 0.5}},
                 {.lr = 0.01, .momentum = 0.9, .weight_decay = 0.1});
  CHECK(opt.num_groups() == 2);
  CHECK(opt.lr(0) == 0.1);
  CHECK(opt.lr(1) == 0.01);
  CHECK(opt.weight_decay(0) == 0.0);
  CHECK(opt.weight_decay(1) == 0.5);
  auto before = frozen.to_vector<float>();
  std::vector<std::vector<float>> host{ps[0].to_vector<float>(), ps[1].to_vector<float>()};
  RefSGD r0{0.1, 0.9, 0, 0.0, false, false, {}, false},
      r1{0.01, 0.9, 0, 0.5, false, false, {}, false};
  for (int s = 0; s < 3; ++s) {
    auto g0 = rnd(12, std::uint32_t(s), 0.5), g1 = rnd(5, std::uint32_t(s + 50), 0.5);
    ps[0].set_grad(Tensor::from_data(g0, {3, 4}));
    ps[1].set_grad(Tensor::from_data(g1, {5}));
    r0.step(host[0], g0);
    r1.step(host[1], g1);
    opt.step();
  }
  check_close(ps[0].to_vector<float>(), host[0]);
  check_close(ps[1].to_vector<float>(), host[1]);
  CHECK(frozen.to_vector<float>() == before);
  opt.zero_grad();
  CHECK(!ps[0].grad().defined());
  CHECK(!ps[1].grad().defined());
  opt.set_lr(1, 0.5);
  CHECK(opt.lr(1) == 0.5);
  CHECK(opt.lr_tensor(1).item<double>() == 0.5);
  CHECK(opt.initial_lr(1) == 0.01);
}

TEST_CASE("learning-rate schedulers follow PyTorch's formulas") {
  auto ps = make_params();
  optim::SGD opt({{{ps[0]}, 0.1}, {{ps[1]}, 0.4}}, {.lr = 0.1});
  // each rate also as the tensor ops an exported step computes (float32), and the epoch counter
  auto same_in_tensors = [&](optim::LRScheduler& s) {
    Tensor e = Tensor::from_data(std::vector<float>{float(s.last_epoch())}, tg::Shape{});
    CHECK(s.lr_expr(e, opt.initial_lr(0)).item<double>() ==
          doctest::Approx(opt.lr(0)).epsilon(1e-6));
    CHECK(s.state_dict().at("last_epoch").item<double>() == double(s.last_epoch()));
  };
  auto lrs = [&](optim::LRScheduler& s, int n) {
    std::vector<double> r{opt.lr(0)};
    same_in_tensors(s);
    for (int i = 1; i < n; ++i) {
      s.step();
      r.push_back(opt.lr(0));
      same_in_tensors(s);
    }
    return r;
  };
  auto near = [](const std::vector<double>& a, const std::vector<double>& b) {
    REQUIRE(a.size() == b.size());
    for (std::size_t i = 0; i < a.size(); ++i) CHECK(a[i] == doctest::Approx(b[i]).epsilon(1e-12));
  };
  {
    optim::StepLR s(opt, 2, 0.5);
    near(lrs(s, 6), {0.1, 0.1, 0.05, 0.05, 0.025, 0.025});
    CHECK(opt.lr(1) == doctest::Approx(0.1)); // group 1: 0.4 * 0.5^2
    CHECK(opt.lr_tensor(1).item<double>() == doctest::Approx(0.1));
  }
  {
    optim::MultiStepLR s(opt, {1, 3}, 0.1);
    near(lrs(s, 5), {0.1, 0.01, 0.01, 0.001, 0.001});
  }
  {
    optim::CosineAnnealingLR s(opt, 4, 0.01);
    std::vector<double> want;
    for (int e = 0; e < 6; ++e) want.push_back(0.01 + 0.09 * (1 + std::cos(M_PI * e / 4)) / 2);
    near(lrs(s, 6), want);
    CHECK(want[4] == doctest::Approx(0.01));
  }
  {
    optim::LinearLR s(opt, 0.25, 1.0, 3);
    near(lrs(s, 5), {0.025, 0.05, 0.075, 0.1, 0.1});
  }
  {
    optim::LambdaLR s(opt, [](std::int64_t e) { return 1.0 / double(e + 1); });
    std::vector<double> r{opt.lr(0)};
    for (int i = 1; i < 3; ++i) {
      s.step();
      r.push_back(opt.lr(0));
    }
    near(r, {0.1, 0.05, 0.1 / 3});
    CHECK_THROWS_AS(s.lr_expr(Tensor::from_data(std::vector<float>{1}, tg::Shape{}), 0.1),
                    tg::export_error); // a C++ function: no tensor form to export
  }
  {
    auto warm = std::make_shared<optim::LinearLR>(opt, 0.5, 1.0, 2);
    auto cos = std::make_shared<optim::CosineAnnealingLR>(opt, 2);
    optim::SequentialLR s(opt, {warm, cos}, {2});
    near(lrs(s, 5), {0.05, 0.075, 0.1, 0.05, 0.0});
    CHECK(s.get_last_lr()[1] == doctest::Approx(0.0));
    // the epoch counter restored: the rates of that epoch
    optim::SequentialLR again(opt, {warm, cos}, {2});
    again.load_state_dict(s.state_dict());
    CHECK(again.last_epoch() == 4);
    CHECK(opt.lr(0) == doctest::Approx(0.0));
  }
}

TEST_CASE("clip_grad_norm_ and clip_grad_value_") {
  auto ps = make_params();
  auto g0 = rnd(12, 7), g1 = rnd(5, 8);
  double total = 0, mx = 0;
  for (float x : g0) total += double(x) * x, mx = std::max(mx, double(std::abs(x)));
  for (float x : g1) total += double(x) * x, mx = std::max(mx, double(std::abs(x)));
  total = std::sqrt(total);
  ps[0].set_grad(Tensor::from_data(g0, {3, 4}));
  ps[1].set_grad(Tensor::from_data(g1, {5}));
  Tensor n = optim::clip_grad_norm_(ps, 1.0);
  CHECK(n.item<float>() == doctest::Approx(total).epsilon(1e-5));
  double after = 0;
  for (const Tensor& p : ps)
    for (float x : p.grad().to_vector<float>()) after += double(x) * x;
  CHECK(std::sqrt(after) == doctest::Approx(1.0).epsilon(1e-4));
  // below the limit: unchanged
  Tensor n2 = optim::clip_grad_norm_(ps, 10.0);
  CHECK(n2.item<float>() == doctest::Approx(1.0).epsilon(1e-4));
  ps[0].set_grad(Tensor::from_data(g0, {3, 4}));
  ps[1].set_grad(Tensor::from_data(g1, {5}));
  CHECK(optim::clip_grad_norm_(ps, 100.0, INFINITY).item<float>() ==
        doctest::Approx(mx).epsilon(1e-6));
  optim::clip_grad_value_(ps, 0.1);
  CHECK(ps[0].grad().abs().max().item<float>() <= 0.1f);
  ps[0].set_grad(Tensor::from_data(std::vector<float>(12, INFINITY), {3, 4}));
  CHECK_THROWS_WITH_AS(optim::clip_grad_norm_(ps, 1.0, 2.0, true), doctest::Contains("nonfinite"),
                       tg::error);
}

TEST_CASE("optimizer state round-trips through its state_dict") {
  auto ps = make_params();
  optim::Adam a(ps, {.lr = 1e-2});
  for (int s = 0; s < 3; ++s) {
    ps[0].set_grad(Tensor::from_data(rnd(12, std::uint32_t(s)), {3, 4}));
    ps[1].set_grad(Tensor::from_data(rnd(5, std::uint32_t(s + 9)), {5}));
    a.step();
  }
  tg::StateDict sd = a.state_dict();
  CHECK(sd.contains("state.0.exp_avg"));
  CHECK(sd.contains("state.1.step"));
  CHECK(sd.at("state.1.step").item<double>() == 3);
  CHECK(sd.contains("param_groups.0.lr"));
  auto qs = make_params();
  optim::Adam b(qs, {.lr = 1});
  b.load_state_dict(tg::safetensors::load(tg::safetensors::save(sd)));
  CHECK(b.lr() == doctest::Approx(1e-2));
  CHECK(b.state_dict().at("state.0.exp_avg").to_vector<float>() ==
        sd.at("state.0.exp_avg").to_vector<float>());
}

namespace {
struct Mlp : nn::Module {
  nn::Linear fc1{8, 16}, fc2{16, 3};
  Mlp() {
    register_module("fc1", fc1);
    register_module("fc2", fc2);
  }
  Tensor forward(const Tensor& x) override { return fc2(fc1(x).relu()); }
};
struct ConvNet : nn::Module {
  nn::Conv2d conv{1, 4, 3, 1, 1};
  nn::BatchNorm2d bn{4};
  nn::Linear fc{4 * 3 * 3, 3};
  ConvNet() {
    register_module("conv", conv);
    register_module("bn", bn);
    register_module("fc", fc);
  }
  Tensor forward(const Tensor& x) override {
    return fc(F::max_pool2d(bn(conv(x)).relu(), 2).flatten(1));
  }
};
std::pair<Tensor, Tensor> batch(int s, std::int64_t n = 16) {
  std::vector<std::int64_t> y(static_cast<std::size_t>(n));
  for (std::int64_t i = 0; i < n; ++i) y[std::size_t(i)] = (i * 7 + s) % 3;
  return {Tensor::from_data(rnd(std::size_t(n * 8), std::uint32_t(1000 + s)), {n, 8}),
          Tensor::from_data(y, {n})};
}
std::pair<Tensor, Tensor> image_batch(int s) {
  std::vector<std::int64_t> y(8);
  for (int i = 0; i < 8; ++i) y[std::size_t(i)] = (i + s) % 3;
  return {Tensor::from_data(rnd(8 * 36, std::uint32_t(2000 + s)), {8, 1, 6, 6}),
          Tensor::from_data(y, {8})};
}
void same_params(nn::Module& a, nn::Module& b, double tol) {
  auto pa = a.state_dict(), pb = b.state_dict();
  for (auto& [k, v] : pa) {
    CAPTURE(k);
    if (!tg::is_float(v.dtype())) {
      CHECK(v.to_vector<std::int64_t>() == pb.at(k).to_vector<std::int64_t>());
      continue;
    }
    check_close(v.to_vector<float>(), pb.at(k).to_vector<float>(), tol);
  }
}
} // namespace

TEST_CASE("tg::jit: a compiled training step gives the parameters of the eager one") {
  const int steps = 7;
  tg::manual_seed(21);
  Mlp eager;
  tg::manual_seed(21);
  Mlp compiled;
  optim::Adam oe(eager.parameters(), {.lr = 1e-2}), oc(compiled.parameters(), {.lr = 1e-2});
  optim::StepLR se(oe, 3, 0.5), sc(oc, 3, 0.5); // the learning rate changes between replays
  auto train_step = [](nn::Module& m, optim::Optimizer& o, const Tensor& x, const Tensor& y) {
    o.zero_grad();
    Tensor loss = F::cross_entropy(m(x), y);
    loss.realize();
    loss.backward();
    optim::clip_grad_norm_(m.parameters(), 1.0);
    o.step();
    return loss;
  };
  auto step = tg::jit([&](Tensor x, Tensor y) { return train_step(compiled, oc, x, y); });
  std::vector<float> le, lc;
  for (int s = 0; s < steps; ++s) {
    auto [x, y] = batch(s);
    le.push_back(train_step(eager, oe, x, y).item<float>());
    lc.push_back(step(x, y).item<float>());
    se.step();
    sc.step();
  }
  CHECK(step.captured_launches() > 0);
  for (int s = 0; s < steps; ++s)
    CHECK(lc[std::size_t(s)] == doctest::Approx(le[std::size_t(s)]).epsilon(1e-5));
  same_params(eager, compiled, 1e-5);
  CHECK(le.back() < le.front());
  // an inference function compiled beside the step reads the same parameter buffers: after a
  // training step its replay gives the updated model's output
  auto infer = tg::jit([&](Tensor xb) {
    tg::no_grad g;
    return compiled(xb);
  });
  auto [xi, yi] = batch(1);
  for (int k = 0; k < 3; ++k) infer(xi); // warm-up, capture, replay
  std::vector<float> before = infer(xi).to_vector<float>();
  step(xi, yi);
  std::vector<float> after = infer(xi).to_vector<float>();
  CHECK(infer.captured_launches() > 0);
  CHECK(after != before);
  {
    tg::no_grad g;
    std::vector<float> fresh = compiled(xi).to_vector<float>();
    REQUIRE(fresh.size() == after.size());
    for (std::size_t k = 0; k < fresh.size(); ++k)
      CHECK(after[k] == doctest::Approx(fresh[k]).epsilon(1e-5));
  }
  // a changed input shape is refused with both shapes named
  auto [x, y] = batch(0, 12);
  CHECK_THROWS_WITH_AS(step(x, y), doctest::Contains("captured with"), tg::error);
}

TEST_CASE("tg::jit: batch norm statistics, momentum and a conv net replay like the eager step") {
  tg::manual_seed(22);
  ConvNet eager;
  tg::manual_seed(22);
  ConvNet compiled;
  optim::SGD oe(eager.parameters(), {.lr = 0.05, .momentum = 0.9, .weight_decay = 1e-3}),
      oc(compiled.parameters(), {.lr = 0.05, .momentum = 0.9, .weight_decay = 1e-3});
  auto train_step = [](nn::Module& m, optim::Optimizer& o, const Tensor& x, const Tensor& y) {
    o.zero_grad();
    Tensor loss = F::cross_entropy(m(x), y, Tensor(), -100, "mean", 0.1);
    loss.realize();
    loss.backward();
    o.step();
    return loss;
  };
  auto step = tg::jit([&](Tensor x, Tensor y) { return train_step(compiled, oc, x, y); });
  for (int s = 0; s < 5; ++s) {
    auto [x, y] = image_batch(s);
    float a = train_step(eager, oe, x, y).item<float>(), b = step(x, y).item<float>();
    CHECK(a == doctest::Approx(b).epsilon(1e-5));
  }
  same_params(eager, compiled, 1e-5); // includes running_mean, running_var, num_batches_tracked
  CHECK(compiled.bn.num_batches_tracked.item<std::int64_t>() == 5);
}

TEST_CASE("tg::jit: dropout draws a fresh mask on every replay") {
  tg::manual_seed(23);
  auto f = tg::jit([](Tensor x) { return F::dropout(x, 0.5); });
  Tensor x = tg::ones({64});
  std::vector<std::vector<float>> outs;
  for (int i = 0; i < 5; ++i) outs.push_back(f(x).to_vector<float>());
  for (int i = 1; i < 5; ++i) CHECK(outs[std::size_t(i)] != outs[std::size_t(i - 1)]);
}
