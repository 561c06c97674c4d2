// tg::assign (in-place updates) and tg::jit (capture once, replay without scheduling or compiling).
#include <doctest/doctest.h>

#include <tg/tg.hpp>

TEST_CASE("assign writes into the target's buffer; the value aliases it afterwards") {
  auto p = tg::Tensor({1.f, 2.f, 3.f});
  void* before = p.lazy()->buffer->ptr;
  auto v = p * 2.0f + 1.0f;
  p.assign(v);
  CHECK(p.lazy()->buffer->ptr == before);
  CHECK(p.to_vector<float>() == std::vector<float>{3, 5, 7});
  CHECK(v.to_vector<float>() == std::vector<float>{3, 5, 7});
  // several targets in one schedule; values that read the old contents see the old contents
  auto a = tg::Tensor({1.f, 2.f}), b = tg::Tensor({10.f, 20.f});
  tg::assign({{a, a + b}, {b, a * b}});
  CHECK(a.to_vector<float>() == std::vector<float>{11, 22});
  CHECK(b.to_vector<float>() == std::vector<float>{10, 40});
  // reading the target at other indices while writing it: computed aside, then copied
  auto r = tg::Tensor({1.f, 2.f, 3.f, 4.f});
  r.assign(r.flip({0}) * 10.0f);
  CHECK(r.to_vector<float>() == std::vector<float>{40, 30, 20, 10});
  auto s = tg::Tensor({1.f, 2.f, 3.f});
  s.assign(s.sum().expand({3}) - s);
  CHECK(s.to_vector<float>() == std::vector<float>{5, 4, 3});
  // copying a realized tensor, and casting to the target's dtype
  auto c = tg::zeros({3}, tg::float64).contiguous().realize();
  c.assign(tg::Tensor({1, 2, 3}));
  CHECK(c.dtype() == tg::float64);
  CHECK(c.to_vector<double>() == std::vector<double>{1, 2, 3});
}

TEST_CASE("assign rejects what it cannot do") {
  auto p = tg::Tensor({1.f, 2.f, 3.f, 4.f});
  CHECK_THROWS_WITH_AS(p.reshape({2, 2}).assign(tg::ones({2, 2})),
                       doctest::Contains("realized tensor"), tg::error);
  CHECK_THROWS_WITH_AS(p.assign(tg::ones({3})), doctest::Contains("[3]"), tg::shape_error);
  CHECK_THROWS_AS(p.assign(tg::ones({4}).to("INTERP")), tg::device_error);
}

namespace {
struct Linear {
  tg::Tensor w =
      tg::Tensor::from_data(std::vector<float>{0.1f, -0.2f, 0.3f}, {3, 1}).requires_grad_();
  tg::Tensor b = tg::zeros({1}).contiguous().realize().requires_grad_();
  tg::Tensor lr = tg::Tensor::scalar(0.1f);
  tg::Tensor step(const tg::Tensor& x, const tg::Tensor& y) {
    auto loss = (x.matmul(w) + b - y).square().mean();
    loss.backward();
    {
      tg::no_grad g;
      tg::assign({{w, w - lr * w.grad()}, {b, b - lr * b.grad()}});
    }
    w.set_grad(tg::Tensor());
    b.set_grad(tg::Tensor());
    return loss.detach();
  }
};
std::vector<float> batch(int i, int n = 8) {
  std::vector<float> v;
  for (int k = 0; k < n * 3; ++k) v.push_back(float((k * 7 + i * 13) % 11) / 11.0f - 0.5f);
  return v;
}
tg::Tensor target(const tg::Tensor& x) {
  return x.matmul(tg::Tensor::from_data(std::vector<float>{1, 2, -1}, {3, 1})) + 0.5f;
}
} // namespace

TEST_CASE(
    "a jitted training step matches the eager one and replays without scheduling or compiling") {
  Linear eager, compiled;
  // replays unchecked (the suite runs with TG_JIT_VERIFY=2, which re-runs every second one)
  const char* verify = std::getenv("TG_JIT_VERIFY");
  const std::string saved = verify ? verify : "";
  setenv("TG_JIT_VERIFY", "0", 1);
  auto step = tg::jit([&](tg::Tensor x, tg::Tensor y) { return compiled.step(x, y); });
  if (verify)
    setenv("TG_JIT_VERIFY", saved.c_str(), 1);
  else
    unsetenv("TG_JIT_VERIFY");
  std::vector<float> eager_losses, jit_losses;
  for (int i = 0; i < 12; ++i) {
    auto x = tg::Tensor::from_data(batch(i), {8, 3}), y = target(x).realize();
    eager_losses.push_back(eager.step(x, y).item<float>());
    if (i == 3) tg::reset_stats();
    auto l = step(x, y);
    jit_losses.push_back(l.item<float>());
    if (i == 3) {
      CHECK(tg::stats().realizes == 0); // the replay built and scheduled nothing
      CHECK(tg::stats().kernels_compiled == 0);
      // kernels, plus copies where an update reads its target at other indices
      CHECK(tg::stats().kernels_launched > 0);
      CHECK(tg::stats().kernels_launched <= std::int64_t(step.captured_launches()));
    }
  }
  for (int i = 0; i < 12; ++i)
    CHECK(jit_losses[std::size_t(i)] ==
          doctest::Approx(eager_losses[std::size_t(i)]).epsilon(1e-6));
  CHECK(jit_losses.back() < jit_losses.front());
  auto we = eager.w.to_vector<float>(), wc = compiled.w.to_vector<float>();
  for (std::size_t k = 0; k < 3; ++k) CHECK(wc[k] == doctest::Approx(we[k]).epsilon(1e-6));
  // the learning rate lives in a tensor: changing it needs no recapture
  compiled.lr.assign(tg::Tensor::scalar(0.0f));
  auto w_before = compiled.w.to_vector<float>();
  auto x = tg::Tensor::from_data(batch(50), {8, 3});
  step(x, target(x).realize());
  CHECK(compiled.w.to_vector<float>() == w_before);
}

TEST_CASE("a jitted function refuses inputs unlike the captured ones") {
  auto f = tg::jit([](tg::Tensor a) { return (a * 2.0f).sum(); });
  for (int i = 0; i < 3; ++i) CHECK(f(tg::ones({4})).item<float>() == 8.0f);
  CHECK_THROWS_WITH_AS(f(tg::ones({5})), doctest::Contains("captured with [4] float32"), tg::error);
  CHECK_THROWS_WITH_AS(f(tg::ones({4}, tg::float64)), doctest::Contains("float64"), tg::error);
  // lazy inputs are realized first; the replay reads their new values
  CHECK(f(tg::ones({4}) * 3.0f).item<float>() == 24.0f);
}

TEST_CASE("a symbolic size may change within its bounds between replays") {
  auto f = tg::jit([](tg::Tensor a) { return (a * 2.0f).sum(1) + 1.0f; });
  std::vector<float> data(65 * 3); // input(65) reads 65 rows before it throws
  for (std::size_t i = 0; i < data.size(); ++i) data[i] = float(i % 5);
  auto input = [&](std::int64_t n) {
    return tg::Tensor::from_data(data.data(), {n * 3})
        .reshape({tg::sym("batch", 1, 64, n), 3})
        .contiguous()
        .realize();
  };
  for (std::int64_t n : {4, 4, 7, 2, 64}) {
    auto out = f(input(n));
    REQUIRE(out.shape() == std::vector<std::int64_t>{n});
    auto v = out.to_vector<float>();
    for (std::int64_t i = 0; i < n; ++i)
      CHECK(v[std::size_t(i)] ==
            1.0f + 2.0f * (data[std::size_t(3 * i)] + data[std::size_t(3 * i + 1)] +
                           data[std::size_t(3 * i + 2)]));
  }
  CHECK_THROWS_AS(input(65), tg::shape_error);
}

TEST_CASE("a jitted function that reads a changing host value is refused, never replayed wrong") {
  // A C++ number inside the function is a constant of its kernel: PyTorch-style code that
  // changes it between calls would replay the captured value forever (TinyJit does). Call 2
  // (the capture) built another kernel than call 1, so call 3 runs the function again and is
  // compared with the capture.
  double scale = 1;
  const int line = __LINE__ + 1;
  auto f = tg::jit([&](tg::Tensor x) { return (x * scale).sum(); });
  auto x = tg::Tensor({1.f, 1.f, 1.f, 1.f});
  CHECK(f(x).item<float>() == doctest::Approx(4));
  scale = 2;
  CHECK(f(x).item<float>() == doctest::Approx(8));
  scale = 3;
  try {
    f(x);
    FAIL("call 3 built another kernel than the capture and was not refused");
  } catch (const tg::error& e) {
    std::string m = e.what();
    CHECK(m.find("tg.jit: call 3") != std::string::npos);
    // the changed constant, with the op and the call site that made it
    const std::string site = "(`*` at " + std::string(__FILE__) + ":" + std::to_string(line) + ")";
    CHECK_MESSAGE(m.find("`constant 3 " + site + "` where it was `constant 2 " + site + "`") !=
                      std::string::npos,
                  m);
  }
  // the capture was forgotten: with the value held still, it warms up, captures and replays
  for (int call = 0; call < 4; ++call) CHECK(f(x).item<float>() == doctest::Approx(12));

  // a vector made into a tensor inside the function: an upload whose data changed
  std::vector<float> w{1, 1, 1, 1};
  const int line_w = __LINE__ + 1;
  auto g = tg::jit([&](tg::Tensor v) { return (v * tg::Tensor::from_data(w)).sum(); });
  CHECK(g(x).item<float>() == doctest::Approx(4));
  w[0] = 5;
  CHECK(g(x).item<float>() == doctest::Approx(8));
  w[0] = 7;
  const std::string upload = "(upload [4] float32 made at " + std::string(__FILE__) + ":" +
                             std::to_string(line_w) + ") differs in its data";
  CHECK_THROWS_WITH_AS(g(x), doctest::Contains(upload.c_str()), tg::error);
}

TEST_CASE("TG_JIT_VERIFY=N re-runs every Nth replay and throws on any difference") {
  setenv("TG_JIT_VERIFY", "1", 1);
  double scale = 2;
  auto f = tg::jit([&](tg::Tensor x) { return (x * scale).sum(); });
  auto x = tg::Tensor({1.f, 2.f});
  for (int call = 0; call < 3; ++call) CHECK(f(x).item<float>() == doctest::Approx(6));
  scale = 3; // after the capture: only a verified replay sees it
  CHECK_THROWS_WITH_AS(f(x), doctest::Contains("tg.jit: call 4"), tg::error);
  scale = 2;
  CHECK(f(x).item<float>() == doctest::Approx(6));
  unsetenv("TG_JIT_VERIFY");
  auto g = tg::jit([&](tg::Tensor v) { return (v * scale).sum(); }); // off: replays unchecked
  for (int call = 0; call < 3; ++call) g(x);
  scale = 5;
  CHECK(g(x).item<float>() == doctest::Approx(6)); // the captured value: documented footgun
}
