// Every differentiable op's gradient against central finite differences, in float64.
#include <doctest/doctest.h>

#include <tg/autograd/backward.hpp> // white-box: permutes_last
#include <tg/schedule.hpp>
#include <tg/tg.hpp>

#include "gradcheck.hpp"

#include <cmath>
#include <functional>
#include <limits>
#include <random>

namespace {
using tg_test::check_grad;
} // namespace

TEST_CASE("unary math") {
  tg::Shape s{2, 3};
  check_grad("neg", [](auto& x) { return -x[0]; }, {s});
  check_grad("abs", [](auto& x) { return x[0].abs(); }, {s});
  check_grad("exp", [](auto& x) { return x[0].exp(); }, {s});
  check_grad("exp2", [](auto& x) { return x[0].exp2(); }, {s});
  auto log_fn = [](auto& x) { return x[0].log(); };
  check_grad("log", log_fn, {s}, 0.1, 3);
  auto log2_fn = [](auto& x) { return x[0].log2(); };
  check_grad("log2", log2_fn, {s}, 0.1, 3);
  auto sqrt_fn = [](auto& x) { return x[0].sqrt(); };
  check_grad("sqrt", sqrt_fn, {s}, 0.1, 3);
  auto rsqrt_fn = [](auto& x) { return x[0].rsqrt(); };
  check_grad("rsqrt", rsqrt_fn, {s}, 0.1, 3);
  auto reciprocal_fn = [](auto& x) { return x[0].reciprocal(); };
  check_grad("reciprocal", reciprocal_fn, {s}, 0.2, 3);
  check_grad("sin", [](auto& x) { return x[0].sin(); }, {s});
  check_grad("cos", [](auto& x) { return x[0].cos(); }, {s});
  auto tan_fn = [](auto& x) { return x[0].tan(); };
  check_grad("tan", tan_fn, {s}, -1, 1);
  check_grad("tanh", [](auto& x) { return x[0].tanh(); }, {s});
  check_grad("sigmoid", [](auto& x) { return x[0].sigmoid(); }, {s});
  check_grad("relu", [](auto& x) { return x[0].relu(); }, {s});
  check_grad("leaky_relu", [](auto& x) { return x[0].leaky_relu(0.1); }, {s});
  check_grad("gelu", [](auto& x) { return x[0].gelu(); }, {s});
  check_grad("gelu tanh", [](auto& x) { return x[0].gelu("tanh"); }, {s});
  check_grad("silu", [](auto& x) { return x[0].silu(); }, {s});
  check_grad("softplus", [](auto& x) { return x[0].softplus(); }, {s});
  check_grad("square", [](auto& x) { return x[0].square(); }, {s});
  check_grad("pow scalar", [](auto& x) { return x[0].pow(3.0); }, {s});
  auto pow_tensor_fn = [](auto& x) { return x[0].pow(x[1]); };
  check_grad("pow tensor", pow_tensor_fn, {s, s}, 0.2, 2);
  check_grad("clamp", [](auto& x) { return x[0].clamp(-1.0, 1.0); }, {s});
}

TEST_CASE("binary ops with broadcasting") {
  check_grad("add", [](auto& x) { return x[0] + x[1]; }, {{2, 3}, {3}});
  check_grad("sub", [](auto& x) { return x[0] - x[1]; }, {{2, 1}, {1, 3}});
  check_grad("mul", [](auto& x) { return x[0] * x[1]; }, {{2, 3}, {2, 3}});
  auto div_fn = [](auto& x) { return x[0] / x[1]; };
  check_grad("div", div_fn, {{2, 3}, {3}}, 0.5, 2);
  check_grad("scalar mix", [](auto& x) { return 2.0 * x[0] - x[0] / 3.0 + 1.0; }, {{4}});
  check_grad("maximum", [](auto& x) { return x[0].maximum(x[1]); }, {{2, 3}, {2, 3}});
  check_grad("minimum", [](auto& x) { return x[0].minimum(x[1]); }, {{2, 3}, {3}});
  check_grad("where", [](auto& x) { return tg::where(x[0] > 0.0, x[0], x[1] * 2.0); },
             {{2, 3}, {2, 3}});
}

TEST_CASE("reductions") {
  tg::Shape s{3, 4};
  check_grad("sum all", [](auto& x) { return x[0].sum(); }, {s});
  check_grad("sum axis", [](auto& x) { return x[0].sum(1); }, {s});
  check_grad("sum keepdim", [](auto& x) { return x[0].sum(0, true) * x[0]; }, {s});
  check_grad("mean", [](auto& x) { return x[0].mean({0, 1}); }, {s});
  check_grad("max", [](auto& x) { return x[0].max(1); }, {s});
  check_grad("min", [](auto& x) { return x[0].min(0); }, {s});
  check_grad("prod", [](auto& x) { return x[0].prod(1); }, {s});
  check_grad("var", [](auto& x) { return x[0].var({1}); }, {s});
  check_grad("std", [](auto& x) { return x[0].std({0}); }, {s});
  check_grad("logsumexp", [](auto& x) { return x[0].logsumexp(1); }, {s});
  check_grad("softmax", [](auto& x) { return x[0].softmax(-1); }, {s});
  check_grad("log_softmax", [](auto& x) { return x[0].log_softmax(0); }, {s});
  check_grad("cumsum", [](auto& x) { return x[0].cumsum(1); }, {s});
}

TEST_CASE("cast passes the gradient through, in the input's dtype") {
  auto x = tg::Tensor({1.0, -2.0}).requires_grad_();
  (x.cast(tg::float32) * 3.0f).sum().backward();
  CHECK(x.grad().dtype() == tg::float64);
  CHECK(x.grad().to_vector<double>() == std::vector<double>{3, 3});
}

TEST_CASE("max ties split the gradient evenly") {
  auto x = tg::Tensor({1.0, 3.0, 3.0, 2.0}).requires_grad_();
  x.max().backward();
  CHECK(x.grad().to_vector<double>() == std::vector<double>{0, 0.5, 0.5, 0});
  auto z = tg::Tensor({2.0, 0.0, 3.0}).requires_grad_();
  z.prod().backward();
  CHECK(z.grad().to_vector<double>() == std::vector<double>{0, 6, 0});
}

TEST_CASE("movement ops") {
  tg::Shape s{2, 3, 4};
  check_grad("reshape", [](auto& x) { return x[0].reshape({4, 6}) * x[0].reshape({4, 6}); }, {s});
  check_grad("permute", [](auto& x) { return x[0].permute({2, 0, 1}); }, {s});
  check_grad("transpose", [](auto& x) { return x[0].transpose(0, 2); }, {s});
  check_grad("expand", [](auto& x) { return x[0].expand({3, 2, 3, 4}); }, {{2, 1, 4}});
  check_grad("squeeze/unsqueeze", [](auto& x) { return x[0].unsqueeze(1).squeeze(); }, {s});
  check_grad("flatten", [](auto& x) { return x[0].flatten(1); }, {s});
  check_grad("pad", [](auto& x) { return x[0].pad({1, 2, 0, 1}, 0.5); }, {s});
  check_grad("pad crop", [](auto& x) { return x[0].pad({-1, 1}); }, {s});
  check_grad("slice step", [](auto& x) { return x[0].slice(2, 0, std::nullopt, 2); }, {s});
  check_grad("slice step 3", [](auto& x) { return x[0].slice(2, 1, std::nullopt, 3); }, {s});
  check_grad("slice negative step",
             [](auto& x) { return x[0].slice(1, std::nullopt, std::nullopt, -2); }, {s});
  check_grad("index", [](auto& x) { return x[0].index({1, tg::Slice{1, 3}}); }, {s});
  check_grad("flip", [](auto& x) { return x[0].flip({0, 2}); }, {s});
  check_grad("cat", [](auto& x) { return tg::cat({x[0], x[1] * 2.0}, 1); }, {{2, 3}, {2, 2}});
  check_grad("stack", [](auto& x) { return tg::stack({x[0], x[1]}, 0); }, {{2, 3}, {2, 3}});
  check_grad("split", [](auto& x) { return x[0].split(2, 2)[1] * x[0].chunk(2, 2)[0]; }, {s});
  check_grad("repeat", [](auto& x) { return x[0].repeat({2, 1, 3}); }, {{2, 3}});
  auto gather_fn = [](auto& x) { return x[0].gather(1, tg::Tensor({{0, 2, 2}, {1, 1, 0}})); };
  check_grad("gather", gather_fn, {{2, 3}});
  auto index_select_fn = [](auto& x) { return x[0].index_select(0, tg::Tensor({2, 0, 2})); };
  check_grad("index_select", index_select_fn, {{3, 2}});
}

TEST_CASE("matmul and friends") {
  check_grad("matmul 2d", [](auto& x) { return x[0].matmul(x[1]); }, {{3, 4}, {4, 2}});
  check_grad("matmul batched broadcast", [](auto& x) { return x[0].matmul(x[1]); },
             {{2, 3, 4}, {4, 2}});
  check_grad("matmul 1d", [](auto& x) { return x[0].matmul(x[1]); }, {{4}, {4, 2}});
  check_grad("dot", [](auto& x) { return x[0].dot(x[1]); }, {{5}, {5}});
  check_grad("mlp",
             [](auto& x) { return (x[0].matmul(x[1]) + x[2]).relu().matmul(x[1].T()).tanh(); },
             {{3, 4}, {4, 5}, {5}});
}

TEST_CASE("backward accumulates, detach and no_grad cut the graph, tg::grad leaves .grad alone") {
  auto w = tg::Tensor({1.0, 2.0, 3.0}).requires_grad_();
  (w * w).sum().backward();
  (w * 2.0).sum().backward();
  CHECK(w.grad().to_vector<double>() == std::vector<double>{4, 6, 8});
  auto d = (w.detach() * w).sum();
  auto g = tg::grad({d}, {w});
  CHECK(g[0].to_vector<double>() == std::vector<double>{1, 2, 3});
  CHECK(w.grad().to_vector<double>() == std::vector<double>{4, 6, 8});
  {
    tg::no_grad guard;
    CHECK(!(w * 2.0).requires_grad());
  }
  CHECK((w * 2.0).requires_grad());
  // a non-scalar output needs an explicit gradient
  auto v = w * 3.0;
  CHECK_THROWS_AS(v.backward(), tg::shape_error);
  v.backward(tg::Tensor({1.0, 0.0, 1.0}));
  CHECK(w.grad().to_vector<double>() == std::vector<double>{7, 6, 11});
  CHECK_THROWS_AS(tg::Tensor({1, 2}).requires_grad_(), tg::dtype_error);
  CHECK_THROWS_AS(tg::Tensor({1.0}).backward(), tg::error);
}

TEST_CASE("relu: PyTorch's gradient at 0 (none), NaN stays NaN") {
  auto x = tg::Tensor({-2.0, 0.0, 3.0, -0.0}).requires_grad_();
  x.relu().sum().backward();
  CHECK(x.grad().to_vector<double>() == std::vector<double>{0, 0, 1, 0});
  const double inf = std::numeric_limits<double>::infinity();
  auto y = tg::Tensor({std::nan(""), -inf, inf}).relu().to_vector<double>();
  CHECK(std::isnan(y[0]));
  CHECK(y[1] == 0);
  CHECK(y[2] == inf);
}

TEST_CASE("the weight gradient of x @ w.t() is computed in w's layout, without a copy") {
  auto x = tg::randn({32, 48}).realize(), w = tg::randn({40, 48}).realize().requires_grad_();
  tg::nn::functional::linear(x, w).sum().backward();
  // linear's output gradient (materialized, as its output is), then dW [40, 48] written by the
  // product's reduction as it is: no third kernel, a transposing copy
  CHECK(tg::schedule({w.grad()}).kernels() == 2);
  auto g = w.grad().to_vector<float>(), xv = x.to_vector<float>();
  for (std::size_t o = 0; o < 40; o += 3)
    for (std::size_t i = 0; i < 48; ++i) {
      double s = 0; // d(sum(x w^T)) / dw[o, i] = sum over the batch of x[b, i]
      for (std::size_t b = 0; b < 32; ++b) s += xv[b * 48 + i];
      CHECK(g[o * 48 + i] == doctest::Approx(s).epsilon(1e-5));
    }
  // the same view as the caller's moves, with the permute after the expand: its sum is in order
  tg::Shape in{40, 48};
  std::vector<tg::Movement> moves{{tg::MoveOp::Permute, {1, 0}, {}},
                                  {tg::MoveOp::Reshape, {1, 48, 40}, {}},
                                  {tg::MoveOp::Expand, {32, 48, 40}, {}}};
  std::vector<tg::Movement> last = tg::detail::permutes_last(in, moves);
  REQUIRE(last.size() == 3);
  CHECK(last[0].op == tg::MoveOp::Reshape);
  CHECK(last[1].op == tg::MoveOp::Expand);
  CHECK(last[2].op == tg::MoveOp::Permute);
  auto view = [&](const std::vector<tg::Movement>& m) {
    tg::View v = tg::ShapeTracker::contiguous(in).apply(m).views.back();
    return std::pair{v.shape, v.strides};
  };
  CHECK(view(last) == view(moves));
}

TEST_CASE("an expand's gradient over one long axis is summed in chunks, then over the chunks") {
  for (std::int64_t rows : {16384, 4096}) {
    CAPTURE(rows);
    auto a = tg::randn({rows, 8}).realize(), w = tg::randn({8}).realize().requires_grad_();
    (a * w).sum().backward();
    // 16384 rows: 64 partial sums of 256 rows, then their sum; 4096 rows: one sum
    CHECK(tg::schedule({w.grad()}).kernels() == (rows == 16384 ? 2 : 1));
    auto g = w.grad().to_vector<float>(), av = a.to_vector<float>();
    for (std::size_t j = 0; j < 8; ++j) {
      double s = 0;
      for (std::size_t r = 0; r < std::size_t(rows); ++r) s += av[r * 8 + j];
      CHECK(g[j] == doctest::Approx(s).epsilon(1e-4).scale(1.0));
    }
  }
}

TEST_CASE("gradients are graph nodes that fuse; realized values are reused") {
  auto x = tg::randn({32, 16}, tg::float32).realize(),
       w = tg::randn({16, 8}).realize().requires_grad_();
  auto loss = x.matmul(w).relu().sum();
  loss.realize();
  tg::reset_stats();
  loss.backward();
  w.grad().realize();
  // relu'(h) needs h (one matmul kernel) and dW = x^T g (one reduction): a handful of kernels, not
  // one per op
  CHECK(tg::stats().kernels_launched <= 3);
}
