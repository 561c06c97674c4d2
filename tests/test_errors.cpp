// Bad input gets a clear error: which op, which shapes or dtypes, and the user's call site.
#include <doctest/doctest.h>

#include <tg/tg.hpp>

namespace {
template <class E, class F> std::string message_of(F&& f) {
  try {
    f();
  } catch (const E& e) {
    return e.what();
  } catch (const std::exception& e) {
    FAIL("wrong exception type: " << e.what());
  }
  FAIL("no exception");
  return "";
}
bool contains(const std::string& hay, const std::string& needle) {
  return hay.find(needle) != std::string::npos;
}
const std::string here = "test_errors.cpp";
} // namespace

TEST_CASE("broadcasting mismatches name the op, both shapes and the call site") {
  auto a = tg::ones({2, 3}), b = tg::ones({4});
  int line = __LINE__ + 1;
  std::string m = message_of<tg::shape_error>([&] { auto c = a + b; });
  CHECK(contains(m, "tg.add"));
  CHECK(contains(m, "[2, 3]"));
  CHECK(contains(m, "[4]"));
  CHECK(contains(m, here + ":" + std::to_string(line)));
  CHECK(contains(message_of<tg::shape_error>([&] { auto c = a * b; }), "tg.mul"));
  CHECK(contains(message_of<tg::shape_error>([&] { auto c = a - b; }), "[2, 3]"));
  CHECK(contains(message_of<tg::shape_error>([&] { auto c = a < b; }), "tg.lt"));
  CHECK(contains(message_of<tg::shape_error>([&] { auto c = tg::where(a > 0.0f, a, b); }),
                 "tg.where"));
  CHECK(contains(message_of<tg::shape_error>([&] { auto c = a.maximum(b); }), here));
}

TEST_CASE("matmul, reshape, axes, expand, permute") {
  auto a = tg::ones({2, 3}), b = tg::ones({4, 5});
  std::string m = message_of<tg::shape_error>([&] { auto c = a.matmul(b); });
  CHECK(contains(m, "tg.matmul"));
  CHECK(contains(m, "[2, 3]"));
  CHECK(contains(m, "[4, 5]"));
  CHECK(contains(m, here));
  m = message_of<tg::shape_error>([&] { auto c = a.reshape({4, 2}); });
  CHECK(contains(m, "tg.reshape"));
  CHECK(contains(m, "[4, 2]"));
  CHECK(contains(m, "6 elements"));
  CHECK(contains(message_of<tg::shape_error>([&] { auto c = a.reshape({-1, -1}); }),
                 "only one dimension can be -1"));
  CHECK(contains(message_of<tg::shape_error>([&] { auto c = a.reshape({-1, 4}); }),
                 "cannot reshape [2, 3] into [-1, 4]"));
  m = message_of<tg::shape_error>([&] { auto c = a.sum(2); });
  CHECK(contains(m, "tg.sum"));
  CHECK(contains(m, "axis 2 is out of range"));
  CHECK(contains(m, here));
  CHECK(contains(message_of<tg::shape_error>([&] { auto c = a.softmax(-3); }), "axis -3"));
  CHECK(contains(message_of<tg::shape_error>([&] { auto c = a.expand({3, 3}); }), "tg.expand"));
  CHECK(contains(message_of<tg::shape_error>([&] { auto c = a.permute({0, 0}); }), "repeats"));
  CHECK(contains(message_of<tg::shape_error>([&] { auto c = a.permute({0}); }), "tg.permute"));
  CHECK(contains(message_of<tg::shape_error>([&] { auto c = tg::ones({2, 3, 4}).T(); }), "tg.T"));
  CHECK(contains(message_of<tg::shape_error>([&] { auto c = tg::cat({a, b}, 0); }), "tg.cat"));
  CHECK(contains(message_of<tg::shape_error>([&] { auto c = tg::stack({a, b}); }), "tg.stack"));
  CHECK(contains(message_of<tg::shape_error>([&] { auto c = a.split({1, 1}, 1); }), "tg.split"));
  CHECK(
      contains(message_of<tg::shape_error>([&] { auto c = a.pad({1, 1, 1, 1, 1, 1}); }), "tg.pad"));
  CHECK(contains(message_of<tg::shape_error>([&] { (void)a.item<float>(); }), "tg.item"));
  CHECK(
      contains(message_of<tg::shape_error>([&] { auto c = tg::zeros({2, -1}); }), "negative size"));
  CHECK(contains(message_of<tg::shape_error>([&] { auto c = tg::Tensor({{1, 2}, {3}}); }),
                 "different lengths"));
  CHECK(contains(message_of<tg::shape_error>(
                     [&] { auto c = tg::tensor(std::vector<float>{1, 2, 3}, {2, 2}); }),
                 "do not fill"));
}

TEST_CASE("out-of-range indices and slices") {
  auto a = tg::arange(0, 6, 1, tg::float32).reshape({2, 3});
  std::string m = message_of<tg::index_error>([&] { auto c = a[2]; });
  CHECK(contains(m, "index 2 is out of range"));
  CHECK(contains(m, "size 2"));
  CHECK(contains(message_of<tg::index_error>([&] { auto c = a.index({0, -4}); }), "index -4"));
  CHECK(contains(message_of<tg::shape_error>([&] { auto c = a.index({0, 0, 0}); }),
                 "too many indices"));
  CHECK(contains(message_of<tg::shape_error>([&] { auto c = a.slice(0, 0, 1, 0); }),
                 "step cannot be zero"));
  // out-of-range slice bounds clamp, as in Python
  CHECK(a.slice(1, 1, 100).shape() == std::vector<std::int64_t>{2, 2});
  CHECK(a.slice(1, -100, 2).shape() == std::vector<std::int64_t>{2, 2});
  auto idx = tg::Tensor({0, 5});
  m = message_of<tg::index_error>([&] { auto c = a.index_select(1, idx); });
  CHECK(contains(m, "tg.index_select"));
  CHECK(contains(m, "index 5"));
  CHECK(contains(message_of<tg::index_error>([&] { auto c = a.gather(1, tg::Tensor({{0}, {3}})); }),
                 "tg.gather"));
  CHECK(contains(
      message_of<tg::dtype_error>([&] { auto c = a.gather(1, tg::Tensor({{0.5f}, {1.f}})); }),
      "integer"));
}

TEST_CASE("dtype errors") {
  auto i = tg::Tensor({1, 2, 3});
  std::string m = message_of<tg::dtype_error>([&] { auto c = i.mean(); });
  CHECK(contains(m, "tg.mean"));
  CHECK(contains(m, "int32"));
  CHECK(contains(m, here));
  auto b = i > 1;
  CHECK(contains(message_of<tg::dtype_error>([&] { auto c = -b; }), "bool"));
  CHECK(contains(message_of<tg::dtype_error>([&] { auto c = b - b; }), "tg.sub"));
  CHECK(contains(message_of<tg::dtype_error>([&] { auto c = i.bitcast(tg::float64); }),
                 "different sizes"));
  CHECK(contains(message_of<tg::dtype_error>([&] { auto c = tg::rand({2}, tg::int32); }),
                 "float dtype"));
}

TEST_CASE("misuse of the API is an error, not a crash") {
  tg::Tensor undefined;
  CHECK_THROWS_AS(undefined.shape(), tg::error);
  CHECK_THROWS_AS(tg::arange(0, 1, 0), tg::shape_error);
  CHECK_THROWS_AS(tg::ones({2}).gelu("fast"), tg::error);
  CHECK_THROWS_AS(tg::ones({0}).max(), tg::shape_error);
  CHECK_THROWS_AS(tg::sym("9lives", 1, 2, 1), tg::shape_error);
}

TEST_CASE("errors of composite ops name the op called, the input's shape and the user's line") {
  namespace F = tg::nn::F;
  auto x = tg::ones({2, 3});
  // (op name, input shape, call site) of each; the composite ops are built from others
  auto check = [&](const std::string& m, const std::string& op, const std::string& shape) {
    CHECK_MESSAGE(contains(m, "tg." + op + ":"), m);
    CHECK_MESSAGE(contains(m, shape), m);
    CHECK_MESSAGE(contains(m, here), m);
  };
  check(message_of<tg::shape_error>([&] { x.mean(2); }), "mean", "[2, 3]");
  check(message_of<tg::shape_error>([&] { x.var({5}); }), "var", "[2, 3]");
  check(message_of<tg::shape_error>([&] { x.std({5}); }), "std", "[2, 3]");
  check(message_of<tg::shape_error>([&] { x.logsumexp(3); }), "logsumexp", "[2, 3]");
  check(message_of<tg::shape_error>([&] { x.softmax(2); }), "softmax", "[2, 3]");
  check(message_of<tg::shape_error>([&] { x.log_softmax(-3); }), "log_softmax", "[2, 3]");
  check(message_of<tg::shape_error>([&] { tg::ones({5}).dot(tg::ones({4})); }), "dot", "[4]");
  check(message_of<tg::shape_error>([&] { x.reshape({-1, -1}); }), "reshape", "[2, 3]");
  check(message_of<tg::shape_error>([&] { x.permute({0, 0}); }), "permute", "[2, 3]");
  check(message_of<tg::shape_error>([&] { x.flatten(1, 0); }), "flatten", "[2, 3]");
  check(message_of<tg::shape_error>([&] { x.flip({1, 1}); }), "flip", "[2, 3]");
  check(message_of<tg::shape_error>([&] { x.slice(1, 0, 2, 0); }), "slice", "[2, 3]");
  check(message_of<tg::shape_error>([&] { x.pad({1, 1, 1, 1, 1, 1}); }), "pad", "[2, 3]");
  check(message_of<tg::shape_error>([&] { x.pad({-4, 0}); }), "pad", "[2, 3]");
  check(message_of<tg::shape_error>([&] { x.split(0); }), "split", "[2, 3]");
  check(message_of<tg::shape_error>([&] { x.split({1, 1}, 1); }), "split", "[2, 3]");
  check(message_of<tg::shape_error>([&] { x.chunk(0); }), "chunk", "[2, 3]");
  check(message_of<tg::shape_error>([&] { x.repeat({2}); }), "repeat", "[2, 3]");
  check(message_of<tg::shape_error>([&] { x.repeat({1, -1}); }), "repeat", "[2, 3]");
  check(message_of<tg::index_error>([&] { x.index_select(1, tg::Tensor({5})); }), "index_select",
        "[2, 3]");
  check(message_of<tg::index_error>([&] { x.gather(1, tg::Tensor({{0, 3}, {1, 1}})); }), "gather",
        "[2, 3]");
  check(message_of<tg::shape_error>([&] { tg::zeros({0, 3}).max(0); }), "max", "[0, 3]");
  check(message_of<tg::shape_error>([&] { tg::zeros({0, 3}).argmax(); }), "argmax", "[0, 3]");
  check(message_of<tg::shape_error>([&] { tg::zeros({0}).min(); }), "min", "[0]");
  check(message_of<tg::shape_error>([&] { tg::where(x > 0.0f, x, tg::ones({4})); }), "where",
        "[4]");
  auto img = tg::ones({1, 3, 2, 2});
  check(message_of<tg::shape_error>([&] { F::max_pool2d(img, 3, 1); }), "max_pool2d",
        "[1, 3, 2, 2]");
  check(message_of<tg::shape_error>([&] { F::avg_pool2d(img, 3, 1); }), "avg_pool2d",
        "[1, 3, 2, 2]");
  check(message_of<tg::shape_error>([&] { F::conv2d(img, tg::ones({4, 3, 1, 1}), tg::ones({3})); }),
        "conv2d", "[3]");
}

TEST_CASE("PyTorch's results where tg used to differ") {
  namespace F = tg::nn::F;
  // losses reduce over every axis
  auto a = tg::ones({3, 4}), z = tg::zeros({3, 4});
  for (auto loss : {F::mse_loss(a, z), F::l1_loss(a, z, "sum"), F::binary_cross_entropy(a * 0.5, z),
                    F::binary_cross_entropy_with_logits(a, z)})
    CHECK(loss.ndim() == 0);
  CHECK(F::cross_entropy(tg::zeros({2, 5, 3}), tg::zeros({2, 3}, tg::int64)).ndim() == 0);
  CHECK(a.sum({}, false).ndim() == 0); // {} is all axes, not axis 0
  // 0-d tensors count for less in promotion
  CHECK((tg::Tensor::scalar(1.0) + tg::ones({3})).dtype() == tg::float32);
  CHECK((tg::Tensor::scalar(std::int64_t(1)) + tg::ones({3}, tg::int32)).dtype() == tg::int32);
  CHECK((tg::Tensor::scalar(1.5) + tg::ones({3}, tg::int32)).dtype() == tg::float64);
  // empty tensors reduced along a non-empty axis
  CHECK(tg::zeros({0, 3}).max(1).shape() == std::vector<std::int64_t>{0});
  CHECK(tg::zeros({0, 3}).argmax(1).shape() == std::vector<std::int64_t>{0});
  CHECK(tg::zeros({0, 3}).logsumexp(0).to_vector<float>() ==
        std::vector<float>(3, -std::numeric_limits<float>::infinity()));
  // integer powers stay integers; fractional clamp bounds give floats
  auto i = tg::Tensor({1, 2, 3});
  CHECK(i.pow(3).dtype() == tg::int32);
  CHECK(i.pow(3).to_vector<int>() == std::vector<int>{1, 8, 27});
  CHECK(i.pow(0).to_vector<int>() == std::vector<int>{1, 1, 1});
  CHECK_THROWS_AS(i.pow(-1), tg::dtype_error);
  CHECK(i.clamp(1.5, 2.5).dtype() == tg::float32);
  CHECK(i.clamp(1.5, 2.5).to_vector<float>() == std::vector<float>{1.5f, 2, 2.5f});
  CHECK(i.clamp(2, 2).dtype() == tg::int32);
}
