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
