// The static front end (tg::fixed and its expressions): every op against the run-time Tensor on
// random data, the Graph it builds against the run-time front end's node by node, construction,
// storage, printing, aliasing and the bridges to tg::Tensor.
#include <doctest/doctest.h>

#include <tg/fixed.hpp>
#include <tg/schedule.hpp>
#include <tg/tg.hpp>

#include <cmath>
#include <random>
#include <sstream>

namespace {

std::mt19937& rng() {
  static std::mt19937 g(1234);
  return g;
}
template <class F> F random_fixed(double lo, double hi) {
  F f;
  std::uniform_real_distribution<double> u(lo, hi);
  for (auto& x : f) {
    using T = typename F::value_type;
    if constexpr (std::is_same_v<T, bool>)
      x = u(rng()) > (lo + hi) / 2;
    else if constexpr (std::is_integral_v<T>)
      x = T(std::floor(u(rng())));
    else
      x = T(u(rng()));
  }
  return f;
}
/// The run-time tensor with the same values.
template <class T, std::size_t... D> tg::Tensor rt(const tg::fixed<T, D...>& f) {
  return tg::Tensor::from_data(f.data(), tg::Shape{std::int64_t(D)...});
}

template <class E> void check_same(const char* what, const E& e, const tg::Tensor& t, double tol) {
  INFO(std::string(what));
  auto v = e.eval();
  using V = decltype(v);
  std::vector<std::int64_t> shape(V::dims.begin(), V::dims.end());
  REQUIRE(t.shape() == shape);
  CHECK(t.dtype() == V::dtype);
  std::vector<double> want = t.to_vector<double>();
  REQUIRE(want.size() == V::size);
  for (std::size_t i = 0; i < V::size; ++i) {
    double got;
    if constexpr (std::is_same_v<typename V::value_type, tg::half> ||
                  std::is_same_v<typename V::value_type, tg::bfloat16_t>)
      got = double(float(v[i]));
    else
      got = double(v[i]);
    if (std::isnan(want[i])) {
      CHECK(std::isnan(got));
      continue;
    }
    if (std::isinf(want[i])) {
      CHECK(got == want[i]);
      continue;
    }
    double err = std::fabs(got - want[i]), scale = std::max(1.0, std::fabs(want[i]));
    if (err > tol * scale) {
      INFO("element " << i << ": static " << got << ", run-time " << want[i]);
      CHECK(err <= tol * scale);
      return;
    }
  }
}
#define SAME(S, ...) check_same(#S, S, __VA_ARGS__, 2e-5)
#define SAME_TOL(TOL, S, ...) check_same(#S, S, __VA_ARGS__, TOL)
/// Every piece of a static split (a std::tuple) against the run-time split's tensors.
template <class Tuple>
void check_pieces(const char* what, const Tuple& pieces, const std::vector<tg::Tensor>& ts) {
  INFO(std::string(what));
  constexpr std::size_t n = std::tuple_size_v<Tuple>;
  REQUIRE(n == ts.size());
  auto each = [&]<std::size_t... K>(std::index_sequence<K...>) {
    (check_same(what, std::get<K>(pieces), ts[K], 0), ...);
  };
  each(std::make_index_sequence<n>{});
}
#define SAME_PIECES(S, ...) check_pieces(#S, S, __VA_ARGS__)

struct Data {
  tg::fixed<float, 4, 5> a = random_fixed<tg::fixed<float, 4, 5>>(-2, 2),
                         b = random_fixed<tg::fixed<float, 4, 5>>(-2, 2);
  tg::fixed<float, 4, 5> pos = random_fixed<tg::fixed<float, 4, 5>>(0.1, 3);
  tg::fixed<float, 5> bias = random_fixed<tg::fixed<float, 5>>(-1, 1);
  tg::fixed<float, 4, 1> col = random_fixed<tg::fixed<float, 4, 1>>(-1, 1);
  tg::fixed<float, 5, 3> m = random_fixed<tg::fixed<float, 5, 3>>(-1, 1);
  tg::fixed<float, 2, 4, 5> batch = random_fixed<tg::fixed<float, 2, 4, 5>>(-1, 1);
  tg::fixed<float, 2, 3, 4> cube = random_fixed<tg::fixed<float, 2, 3, 4>>(-3, 3);
  tg::fixed<float, 5> v = random_fixed<tg::fixed<float, 5>>(-1, 1);
  tg::fixed<double, 4, 5> d = random_fixed<tg::fixed<double, 4, 5>>(-2, 2);
  tg::fixed<int, 4, 5> ia = random_fixed<tg::fixed<int, 4, 5>>(-6, 6),
                       ib = random_fixed<tg::fixed<int, 4, 5>>(1, 5);
  tg::fixed<bool, 4, 5> mask = random_fixed<tg::fixed<bool, 4, 5>>(0, 1);
  tg::Tensor A = rt(a), B = rt(b), POS = rt(pos), BIAS = rt(bias), COL = rt(col), M = rt(m),
             BATCH = rt(batch), CUBE = rt(cube), V = rt(v), D = rt(d), IA = rt(ia), IB = rt(ib),
             MASK = rt(mask);
};

} // namespace

TEST_CASE("fixed: construction, element access, iteration and value semantics") {
  tg::fixed<float, 2, 3> a{{1, 2, 3}, {4, 5, 6}};
  CHECK(a(0, 0) == 1);
  CHECK(a(1, 2) == 6);
  CHECK(a[4] == 5);
  CHECK(a.at(-1, -1) == 6);
  CHECK_THROWS_AS(a.at(2, 0), std::out_of_range);
  float s = 0;
  for (float x : a) s += x;
  CHECK(s == 21);
  tg::fixed<float, 2, 3> b = a; // a copy
  b(0, 0) = 10;
  CHECK(a(0, 0) == 1);
  tg::fixed<int, 3> v{1, 2, 3};
  CHECK(v(2) == 3);
  tg::fixed<float, 2, 2, 2> c{{{1, 2}, {3, 4}}, {{5, 6}, {7, 8}}};
  CHECK(c(1, 0, 1) == 6);
  tg::fixed<float> scalar{2.5f};
  CHECK(float(scalar) == 2.5f);
  CHECK(tg::fixed<float, 3>::full(2)(1) == 2);
  CHECK(tg::fixed<float, 3>::ones()(2) == 1);
  CHECK(tg::fixed<float, 3>()(0) == 0);
  double raw[4] = {1, 2, 3, 4};
  CHECK(tg::fixed<float, 2, 2>::from(raw)(1, 0) == 3);
  static_assert(sizeof(tg::fixed<float, 4, 4>) == 64); // inline
  static_assert(tg::fixed<float, 4, 4>::is_inline);
  static_assert(!tg::fixed<float, 64, 64>::is_inline); // past fixed_inline_bytes: on the heap
  static_assert(sizeof(tg::fixed<float, 64, 64>) == sizeof(void*));
  tg::fixed<float, 64, 64> big = tg::fixed<float, 64, 64>::full(1);
  tg::fixed<float, 64, 64> big2 = big;
  big2[0] = 5;
  CHECK(big[0] == 1);
  tg::fixed<float, 64, 64> moved = std::move(big2);
  CHECK(moved[0] == 5);
  big2 = moved; // a moved-from tensor can be assigned to
  CHECK(big2[0] == 5);
  CHECK(reinterpret_cast<std::uintptr_t>(big.data()) % 64 == 0);
}

TEST_CASE("fixed: printing is the run-time Tensor's") {
  Data x;
  std::ostringstream a, b, c, d;
  a << x.a;
  b << x.A;
  CHECK(a.str() == b.str());
  c << (x.ia * 2).sum<1>();
  d << (x.IA * 2).sum(1);
  CHECK(c.str() == d.str());
  std::ostringstream e, f;
  e << (x.a > 0.0f);
  f << (x.A > 0.0f);
  CHECK(e.str() == f.str());
}

TEST_CASE("fixed: elementwise ops equal the run-time Tensor's") {
  Data x;
  auto& a = x.a;
  auto& b = x.b;
  auto& pos = x.pos;
  auto& bias = x.bias;
  auto& col = x.col;
  auto& A = x.A;
  auto& B = x.B;
  auto& POS = x.POS;
  auto& BIAS = x.BIAS;
  auto& COL = x.COL;
  SAME(a + b, A + B);
  SAME(a - b, A - B);
  SAME(a * b, A * B);
  SAME(a / pos, A / POS);
  SAME(a + bias, A + BIAS);
  SAME(col * bias, COL * BIAS);
  SAME(a - col, A - COL);
  SAME(a * 2.5f + 1, A * 2.5f + 1);
  SAME(3.0 - a, 3.0 - A);
  SAME(1.0f / pos, 1.0f / POS);
  SAME(-a, -A);
  SAME(a < b, A < B);
  SAME(a > 0.5f, A > 0.5f);
  SAME(a <= b, A <= B);
  SAME(a >= 0.0f, A >= 0.0f);
  SAME(a == a, A == A);
  SAME(a != b, A != B);
  SAME((a > 0.0f) && (b > 0.0f), (A > 0.0f) && (B > 0.0f));
  SAME((a > 0.0f) || (b > 0.0f), (A > 0.0f) || (B > 0.0f));
  SAME(!(a > 0.0f), !(A > 0.0f));
  SAME(a.abs(), A.abs());
  SAME(a.sign(), A.sign());
  SAME(a.exp(), A.exp());
  SAME(a.exp2(), A.exp2());
  SAME(pos.log(), POS.log());
  SAME(pos.log2(), POS.log2());
  SAME(pos.sqrt(), POS.sqrt());
  SAME(pos.rsqrt(), POS.rsqrt());
  SAME(pos.reciprocal(), POS.reciprocal());
  SAME(a.sin(), A.sin());
  SAME(a.cos(), A.cos());
  SAME(a.tan(), A.tan());
  SAME(a.tanh(), A.tanh());
  SAME(a.sigmoid(), A.sigmoid());
  SAME(a.relu(), A.relu());
  SAME(a.leaky_relu(0.1), A.leaky_relu(0.1));
  SAME(a.gelu(), A.gelu());
  SAME(a.gelu_tanh(), A.gelu("tanh"));
  SAME(a.silu(), A.silu());
  SAME(a.softplus(), A.softplus());
  SAME(a.softplus(2, 1), A.softplus(2, 1));
  SAME(a.square(), A.square());
  SAME((a * 3.0f).floor(), (A * 3.0f).floor());
  SAME((a * 3.0f).ceil(), (A * 3.0f).ceil());
  SAME((a * 3.0f).round(), (A * 3.0f).round());
  SAME((a * 3.0f).trunc(), (A * 3.0f).trunc());
  SAME((a / (b * 0.0f)).isnan(), (A / (B * 0.0f)).isnan());
  SAME((a / (b * 0.0f)).isinf(), (A / (B * 0.0f)).isinf());
  SAME((a > 0.0f).logical_xor(b > 0.0f), (A > 0.0f).logical_xor(B > 0.0f));
  SAME(pos.pow(b), POS.pow(B));
  SAME(pos.pow(1.5), POS.pow(1.5));
  SAME(a.maximum(b), A.maximum(B));
  SAME(a.minimum(b), A.minimum(B));
  SAME(tg::maximum(a, 0.25f), tg::maximum(A, tg::Tensor::full_on({}, 0.25, tg::float32, "CPU")));
  SAME(a.clamp(-0.5, 0.75), A.clamp(-0.5, 0.75));
  SAME(a.cast<int>(), A.cast(tg::int32));
  SAME(a.cast<double>() * 2, A.cast(tg::float64) * 2);
  SAME(a.cast<tg::half>() + 1.0f, A.cast(tg::float16) + 1.0f);
  SAME(a.bitcast<std::int32_t>(), A.bitcast(tg::int32));
  SAME(tg::where(x.mask, a, b), tg::where(x.MASK, A, B));
  SAME(tg::where(a > 0.0f, a, 0.0f), tg::where(A > 0.0f, A, 0.0f));
  SAME(tg::where(a > 0.0f, 1.0f, bias), tg::where(A > 0.0f, 1.0f, BIAS));
  SAME(x.d.exp() * 0.5, x.D.exp() * 0.5);
}

TEST_CASE("fixed: integer and bool ops equal the run-time Tensor's") {
  Data x;
  SAME(x.ia + x.ib, x.IA + x.IB);
  SAME(x.ia * x.ib - 3, x.IA * x.IB - 3);
  SAME(x.ia / x.ib, x.IA / x.IB);
  SAME(x.ia * 2.5, x.IA * 2.5);
  SAME(x.ia.abs(), x.IA.abs());
  SAME(x.ia.sign(), x.IA.sign());
  SAME(x.ia.relu(), x.IA.relu());
  SAME(x.ia.pow(x.ib.cast<int>()), x.IA.pow(x.IB));
  SAME(x.ia.clamp(-2, 3), x.IA.clamp(-2, 3));
  // fractional bounds make an integer tensor float32 at run time; a static expression refuses
  CHECK_THROWS_AS(x.ia.clamp(-2.5, 3.5), tg::dtype_error);
  SAME(x.ia.minimum(x.ib), x.IA.minimum(x.IB));
  SAME(x.ia.sum(), x.IA.sum());
  SAME(x.ia.sum<1>(), x.IA.sum(1));
  SAME(x.ia.prod<0>(), x.IA.prod(0));
  SAME(x.ia.max<1>(), x.IA.max(1));
  SAME(x.ia.min<0>(), x.IA.min(0));
  SAME(x.ia.exp(), x.IA.exp());
  SAME(x.mask.any<1>(), x.MASK.any(1));
  SAME(x.mask.all<0>(), x.MASK.all(0));
  SAME(x.mask.min<1>(), x.MASK.min(1));
  SAME(x.mask.cast<int>().sum(), x.MASK.cast(tg::int32).sum());
  SAME(x.ia.matmul(x.ib.T()), x.IA.matmul(x.IB.T()));
}

TEST_CASE("fixed: reductions equal the run-time Tensor's") {
  Data x;
  auto& a = x.a;
  auto& A = x.A;
  SAME(a.sum(), A.sum());
  SAME(a.sum<1>(), A.sum(1));
  SAME(a.sum<0>(tg::keepdim), A.sum(0, true));
  SAME(x.cube.sum<0, 2>(), x.CUBE.sum({0, 2}));
  SAME(x.cube.sum<-1>(tg::keepdim), x.CUBE.sum(-1, true));
  SAME(x.cube.max<1>(), x.CUBE.max(1));
  SAME(x.cube.min<0, 1>(), x.CUBE.min({0, 1}));
  SAME(a.prod<1>(), A.prod(1));
  SAME(a.max(), A.max());
  SAME(a.min<1>(), A.min(1));
  SAME(a.mean(), A.mean());
  SAME(a.mean<0>(), A.mean(0));
  SAME(x.cube.mean<1, 2>(tg::keepdim), x.CUBE.mean({1, 2}, true));
  SAME((a > 0.0f).any(), (A > 0.0f).any());
  SAME((a > -1.5f).all<1>(), (A > -1.5f).all(1));
  SAME(a.var<1>(), A.var({1}));
  SAME(a.var<0>(0), A.var({0}, 0));
  SAME(a.std(), A.std());
  SAME(a.std<1>(tg::keepdim), A.std({1}, 1, true));
  SAME(a.logsumexp<1>(), A.logsumexp(1));
  SAME(a.logsumexp<0>(tg::keepdim), A.logsumexp(0, true));
  SAME(a.softmax<1>(), A.softmax(1));
  SAME(a.softmax<0>(), A.softmax(0));
  SAME(x.cube.softmax<-1>(), x.CUBE.softmax(-1));
  SAME(a.log_softmax<1>(), A.log_softmax(1));
  SAME((a * x.b).sum<1>() + x.col.reshape<4>(), (A * x.B).sum(1) + x.COL.reshape({4}));
  SAME(a - a.max<1>(tg::keepdim), A - A.max(1, true));
  SAME(a.sum<1>().max(), A.sum(1).max());
}

TEST_CASE("fixed: argmax and argmin equal the run-time Tensor's") {
  Data x;
  auto& a = x.a;
  auto& A = x.A;
  SAME(a.argmax<1>(), A.argmax(1));
  SAME(a.argmax<0>(tg::keepdim), A.argmax(0, true));
  SAME(a.argmax(), A.argmax());
  SAME(a.argmax(tg::keepdim), A.argmax(std::nullopt, true));
  SAME(a.argmin<-1>(), A.argmin(-1));
  SAME(a.argmin(), A.argmin());
  SAME(x.cube.argmax<1>(), x.CUBE.argmax(1));
  SAME(x.cube.argmin<2>(tg::keepdim), x.CUBE.argmin(2, true));
  SAME(x.d.argmax<0>(), x.D.argmax(0));
  SAME(x.ia.argmax<1>(), x.IA.argmax(1)); // small integers: ties, the first index wins
  SAME(x.ia.argmin<0>(), x.IA.argmin(0));
  SAME(x.ia.argmin(tg::keepdim), x.IA.argmin(std::nullopt, true));
  SAME(x.mask.argmax<1>(), x.MASK.argmax(1));
  SAME((a * x.b).argmax<1>() + 1, (A * x.B).argmax(1) + 1);
  tg::fixed<float, 3> nan{1, NAN, 2}; // NaN is the maximum, as in PyTorch
  SAME(nan.argmax(), rt(nan).argmax());
}

TEST_CASE("fixed: cumsum equals the run-time Tensor's") {
  Data x;
  SAME(x.a.cumsum<1>(), x.A.cumsum(1));
  SAME(x.a.cumsum<0>(), x.A.cumsum(0));
  SAME(x.cube.cumsum<1>(), x.CUBE.cumsum(1));
  SAME(x.cube.cumsum<-1>() * 2.0f, x.CUBE.cumsum(-1) * 2.0f);
  SAME(x.v.cumsum<0>(), x.V.cumsum(0));
  SAME(x.d.cumsum<1>(), x.D.cumsum(1));
  SAME(x.ia.cumsum<1>(), x.IA.cumsum(1)); // int64, as on tg::Tensor
  SAME(x.mask.cumsum<0>(), x.MASK.cumsum(0));
  SAME((x.a + x.b).cumsum<1>().sum<0>(), (x.A + x.B).cumsum(1).sum(0));
}

TEST_CASE("fixed: bitwise ops, masked_fill, lerp, tril/triu, amax/amin, cumprod and outer equal "
          "the run-time Tensor's") {
  Data x;
  SAME(x.ia.bitwise_and(x.ib), x.IA.bitwise_and(x.IB));
  SAME(x.ia | x.ib, x.IA | x.IB);
  SAME(x.ia ^ 3, x.IA ^ 3);
  SAME(6 & x.ia, 6 & x.IA);
  SAME(~x.ia, ~x.IA);
  SAME(x.ia.cast<std::uint8_t>() & x.ib.cast<std::int16_t>(),
       x.IA.cast(tg::uint8) & x.IB.cast(tg::int16)); // promoted
  SAME(x.mask & (x.a > 0.0f), x.MASK & (x.A > 0.0f));
  SAME(x.mask ^ x.mask.T().T(), x.MASK ^ x.MASK);
  SAME(~x.mask, ~x.MASK);
  SAME(x.a.masked_fill(x.mask, -1.5), x.A.masked_fill(x.MASK, -1.5));
  SAME(x.ia.masked_fill(x.a.sum<0>(tg::keepdim) > 0.0f, 7),
       x.IA.masked_fill(x.A.sum(0, true) > 0.0f, 7)); // a broadcast mask
  SAME(x.a.lerp(x.b, 0.25), x.A.lerp(x.B, 0.25));
  SAME(x.a.lerp(x.b, 0.75), x.A.lerp(x.B, 0.75));
  SAME(x.a.lerp(x.bias, x.pos * 0.3f), x.A.lerp(x.BIAS, x.POS * 0.3f));
  SAME(tg::lerp(x.d, x.d * 2.0, 0.5), x.D.lerp(x.D * 2.0, 0.5));
  SAME(x.a.tril(), x.A.tril());
  SAME(x.a.triu<1>(), x.A.triu(1));
  SAME(x.batch.tril<-2>(), x.BATCH.tril(-2));
  SAME(tg::triu<-1>(x.ia), x.IA.triu(-1));
  SAME(x.a.amax<1>(), x.A.amax({1}));
  SAME(x.cube.amin<0, 2>(tg::keepdim), x.CUBE.amin({0, 2}, true));
  SAME(tg::amax(x.ia), x.IA.amax());
  SAME(x.pos.cumprod<1>(), x.POS.cumprod(1));
  SAME(x.ib.cumprod<0>(), x.IB.cumprod(0)); // int64, as on tg::Tensor
  SAME(tg::cumprod<-1>(x.cube * 0.5f), (x.CUBE * 0.5f).cumprod(-1));
  SAME(tg::outer(x.v, x.bias), tg::outer(x.V, x.BIAS));
  SAME(tg::outer(x.v, x.ia.sum<0>()), tg::outer(x.V, x.IA.sum(0))); // float32 x int64
}

TEST_CASE("fixed: log1p, expm1, sinh, cosh, asinh, acosh, atanh and hypot equal the run-time "
          "Tensor's") {
  Data x;
  tg::fixed<float, 8> edge{0.0f, -0.0f, 1e-8f, -1e-8f, -1.0f, -2.0f, INFINITY, NAN};
  tg::Tensor EDGE = rt(edge);
  SAME(x.a.log1p(), x.A.log1p());
  SAME((x.a * 1e-4f).log1p(), (x.A * 1e-4f).log1p());
  SAME(edge.log1p(), EDGE.log1p());
  SAME(x.a.expm1(), x.A.expm1());
  SAME((x.a * 1e-4f).expm1(), (x.A * 1e-4f).expm1());
  SAME(edge.expm1(), EDGE.expm1());
  SAME(x.d.log1p(), x.D.log1p());
  SAME(x.ia.expm1(), x.IA.expm1()); // float32, as on tg::Tensor
  SAME(x.a.sinh(), x.A.sinh());
  SAME(x.a.cosh(), x.A.cosh());
  SAME(x.d.sinh(), x.D.sinh());
  SAME(edge.cosh(), EDGE.cosh());
  SAME(x.a.hypot(x.b), x.A.hypot(x.B));
  SAME(x.a.hypot(x.bias), x.A.hypot(x.BIAS));
  SAME(x.ia.hypot(x.ib), x.IA.hypot(x.IB));
  SAME(edge.hypot(edge.flip<0>()), EDGE.hypot(EDGE.flip({0})));
  SAME((x.a * 1e30f).hypot(x.b * 1e30f), (x.A * 1e30f).hypot(x.B * 1e30f));
  SAME(x.a.asinh(), x.A.asinh());
  SAME((x.a * 1e9f).asinh(), (x.A * 1e9f).asinh());
  SAME(edge.asinh(), EDGE.asinh());
  SAME(x.pos.acosh(), x.POS.acosh());
  SAME((x.pos * 1e9f).acosh(), (x.POS * 1e9f).acosh());
  SAME(edge.acosh(), EDGE.acosh());
  SAME((x.a * 0.45f).atanh(), (x.A * 0.45f).atanh());
  SAME(edge.atanh(), EDGE.atanh());
  SAME(x.d.asinh(), x.D.asinh());
}

TEST_CASE("fixed: norm, cummax, cummin, logcumsumexp, sort, argsort and topk equal the run-time "
          "Tensor's") {
  Data x;
  SAME(x.a.norm(), x.A.norm());
  SAME((x.a.norm<2, 1>()), x.A.norm(2, {1}));
  SAME((x.a.norm<1, 0>(tg::keepdim)), x.A.norm(1, {0}, true));
  SAME((x.a.norm<3, 1>()), x.A.norm(3, {1}));
  SAME((x.a.norm<4>()), x.A.norm(4));
  SAME((x.a.norm<0, 1>()), x.A.norm(0, {1}));
  SAME((x.a.norm<tg::norm_inf, 1>()), x.A.norm(INFINITY, {1}));
  SAME((x.a.norm<-tg::norm_inf>()), x.A.norm(-INFINITY));
  SAME(x.ia.norm(), x.IA.norm()); // float32, as on tg::Tensor
  SAME(x.d.norm<2, 0>(), x.D.norm(2, {0}));
  tg::fixed<float, 2, 6> tie{{1.0f, NAN, 3.0f, 3.0f, -INFINITY, 0.5f},
                             {-0.0f, 0.0f, 2.0f, NAN, 2.0f, INFINITY}};
  tg::Tensor TIE = rt(tie);
  auto check_pair = [](const char* what, const auto& s, const auto& r) {
    check_same(what, s.first, r.first, 2e-5);
    check_same(what, s.second, r.second, 0);
  };
  check_pair("cummax<1>", x.a.cummax<1>(), x.A.cummax(1));
  check_pair("cummax<0>", x.cube.cummax<0>(), x.CUBE.cummax(0));
  check_pair("cummax ties", tie.cummax<1>(), TIE.cummax(1));
  check_pair("cummax int", x.ia.cummax<-1>(), x.IA.cummax(-1));
  check_pair("cummin<1>", x.a.cummin<1>(), x.A.cummin(1));
  check_pair("cummin ties", tie.cummin<1>(), TIE.cummin(1));
  check_pair("cummin int", x.ia.cummin<0>(), x.IA.cummin(0));
  SAME(x.a.logcumsumexp<1>(), x.A.logcumsumexp(1));
  SAME((x.a * 100.0f).logcumsumexp<0>(), (x.A * 100.0f).logcumsumexp(0));
  SAME(tie.logcumsumexp<1>(), TIE.logcumsumexp(1));
  SAME(x.ia.logcumsumexp<1>(), x.IA.logcumsumexp(1));
  check_pair("sort", x.a.sort(), x.A.sort());
  check_pair("sort<0, true>", (x.a.sort<0, true>()), x.A.sort(0, true));
  check_pair("sort ties", tie.sort<1>(), TIE.sort(1));
  check_pair("sort ties descending", (tie.sort<1, true>()), TIE.sort(1, true));
  check_pair("sort int", x.ia.sort<1>(), x.IA.sort(1));
  check_pair("sort bool", x.mask.sort<0>(), x.MASK.sort(0));
  check_same("argsort", x.cube.argsort<1>(), x.CUBE.argsort(1), 0);
  check_pair("topk", x.a.topk<2>(), x.A.topk(2));
  check_pair("topk smallest", (x.a.topk<3, 0, false>()), x.A.topk(3, 0, false));
  check_pair("topk ties", tie.topk<4>(), TIE.topk(4));
  check_pair("topk int", (x.ia.topk<5, 1>()), x.IA.topk(5, 1));
  check_pair("topk 0", x.a.topk<0>(), x.A.topk(0));
  // in an expression, and compile-time evaluation
  SAME(x.a.sort<1>().first * 2.0f + x.a.cummax<1>().first,
       x.A.sort(1).first * 2.0f + x.A.cummax(1).first);
  static constexpr tg::fixed<float, 4> c{3.0f, -1.0f, 2.0f, -1.0f};
  constexpr auto s = c.sort().second.eval();
  static_assert(s[0] == 1 && s[1] == 3 && s[2] == 2 && s[3] == 0);
  constexpr auto m = c.cummin<0>().first.eval();
  static_assert(m[0] == 3.0f && m[3] == -1.0f);
}

TEST_CASE("fixed: scatter, scatter_add, index_add and one_hot equal the run-time Tensor's") {
  Data x;
  namespace F = tg::nn::functional;
  tg::fixed<int, 2, 5> i0{{0, 3, 1, 2, 3}, {2, 0, 3, -1, 1}}; // rows of a [4, 5], twice 3 and 2
  tg::fixed<std::int64_t, 4, 2> i1{{0, 4}, {1, 1}, {3, 2}, {-1, 0}};
  tg::fixed<int, 3> sel{2, 0, 2};
  auto s0 = random_fixed<tg::fixed<float, 3, 5>>(-1, 1);
  auto s1 = random_fixed<tg::fixed<float, 4, 3>>(-1, 1);
  SAME(x.a.scatter<0>(i0, x.b), x.A.scatter(0, rt(i0), x.B)); // src larger than the index
  SAME(x.a.scatter_add<0>(i0, x.b), x.A.scatter_add(0, rt(i0), x.B));
  SAME(x.a.scatter<-1>(i1, x.b), x.A.scatter(-1, rt(i1), x.B));
  SAME(x.ia.scatter_add<1>(i1, x.ib), x.IA.scatter_add(1, rt(i1), x.IB));
  SAME(x.a.scatter<1>(i1, x.ib), x.A.scatter(1, rt(i1), x.IB)); // src cast to the tensor's dtype
  SAME(x.a.scatter<0>(i0 + 1 - 1, x.b) * 2.0f, x.A.scatter(0, rt(i0) + 1 - 1, x.B) * 2.0f);
  SAME(x.a.index_add<0>(sel, s0), x.A.index_add(0, rt(sel), rt(s0)));
  SAME(x.a.index_add<1>(sel, s1), x.A.index_add(1, rt(sel), rt(s1)));
  SAME(x.ia.index_add<-1>(sel, s1), x.IA.index_add(-1, rt(sel), rt(s1)));
  tg::fixed<int, 2, 3> cls{{0, 2, 1}, {3, 3, 0}};
  SAME(tg::one_hot<4>(cls), F::one_hot(rt(cls), 4));
  SAME(tg::one_hot<6>(x.ib), F::one_hot(x.IB, 6)); // int32 classes 1..4
  SAME(tg::one_hot<6>(i1 + 1), F::one_hot(rt(i1) + 1, 6));
  CHECK_THROWS_AS(tg::one_hot<3>(cls), tg::index_error);
  tg::fixed<int, 2, 5> bad{{0, 1, 2, 3, 4}, {0, 0, 0, 0, 0}};
  CHECK_THROWS_AS(x.a.scatter<0>(bad, x.b), tg::index_error);
  tg::fixed<int, 3> bad_sel{0, 5, 1};
  CHECK_THROWS_AS(x.a.index_add<1>(bad_sel, s1), tg::index_error);
  static constexpr tg::fixed<int, 3> c{1, 0, 1};
  constexpr auto h = tg::one_hot<2>(c).eval();
  static_assert(h(0, 1) == 1 && h(1, 0) == 1 && h(2, 0) == 0);
}

TEST_CASE("fixed: einsum with the equation as a template argument equals the run-time one") {
  Data x;
  auto sq = x.a.slice<1, 0, 4>().eval();
  tg::Tensor SQ = x.A.slice(1, 0, 4);
  SAME(tg::einsum<"ij,jk->ik">(x.a, x.m), tg::einsum("ij,jk->ik", {x.A, x.M}));
  SAME(tg::einsum<"ij->ji">(x.a), tg::einsum("ij->ji", {x.A}));
  SAME(tg::einsum<"ij">(x.a), tg::einsum("ij", {x.A}));
  SAME(tg::einsum<"ij,kj">(x.a, x.b), tg::einsum("ij,kj", {x.A, x.B})); // implicit output "ik"
  SAME(tg::einsum<"ii->i">(sq), tg::einsum("ii->i", {SQ}));
  SAME(tg::einsum<"ii">(sq), tg::einsum("ii", {SQ})); // the trace
  SAME(tg::einsum<"bij, jk -> bki">(x.batch, x.m), tg::einsum("bij, jk -> bki", {x.BATCH, x.M}));
  SAME(tg::einsum<"i,i">(x.v, x.v), tg::einsum("i,i", {x.V, x.V}));
  SAME(tg::einsum<"ij,ij->">(x.a, x.b), tg::einsum("ij,ij->", {x.A, x.B}));
  SAME(tg::einsum<"i,j,ij->j">(x.col.reshape<4>(), x.v, x.a),
       tg::einsum("i,j,ij->j", {x.COL.reshape({4}), x.V, x.A}));
  SAME(tg::einsum<"ij,j->i">(x.ia, x.ib.sum<0>()), tg::einsum("ij,j->i", {x.IA, x.IB.sum(0)}));
  SAME(tg::einsum<"ij,kj->ik">(x.a, x.bias.reshape<1, 5>()),
       tg::einsum("ij,kj->ik", {x.A, x.BIAS.reshape({1, 5})})); // a size-1 letter broadcasts
  static constexpr tg::fixed<int, 2, 2> c{{1, 2}, {3, 4}};
  constexpr auto t = tg::einsum<"ii">(c).eval();
  static_assert(t() == 5);
}

TEST_CASE("fixed: erf, erfc, atan, atan2, asin and acos (composite ops) equal the run-time "
          "Tensor's") {
  Data x;
  tg::fixed<float, 10> edge{0.0f,  -0.0f, 1e-8f,     -1e-8f,   1.0f,
                            -1.0f, 30.0f, -INFINITY, INFINITY, NAN};
  tg::Tensor EDGE = rt(edge);
  SAME(x.a.erf(), x.A.erf());
  SAME((x.a * 3.0f).erf(), (x.A * 3.0f).erf());
  SAME(edge.erf(), EDGE.erf());
  SAME(x.d.erf(), x.D.erf());
  SAME((x.d * 4.0).erfc(), (x.D * 4.0).erfc());
  SAME(x.a.erfc(), x.A.erfc());
  SAME(edge.erfc(), EDGE.erfc());
  SAME(x.ia.erf(), x.IA.erf()); // float32, as on tg::Tensor
  SAME(x.a.atan(), x.A.atan());
  SAME((x.a * 100.0f).atan(), (x.A * 100.0f).atan());
  SAME(edge.atan(), EDGE.atan());
  SAME(x.d.atan(), x.D.atan());
  SAME(x.a.atan2(x.b), x.A.atan2(x.B));
  SAME(x.a.atan2(x.bias), x.A.atan2(x.BIAS));
  SAME(x.ia.atan2(x.ib), x.IA.atan2(x.IB));
  SAME(edge.atan2(edge.flip<0>()), EDGE.atan2(EDGE.flip({0})));
  SAME(x.d.atan2(x.d.flip<1>()), x.D.atan2(x.D.flip({1})));
  SAME((x.a * 0.45f).asin(), (x.A * 0.45f).asin());
  SAME((x.a * 0.45f).acos(), (x.A * 0.45f).acos());
  SAME(edge.asin(), EDGE.asin());
  SAME(edge.acos(), EDGE.acos());
  SAME((x.d * 0.4).acos(), (x.D * 0.4).acos());
  // a composite inside an expression, twice over one leaf, and over another composite
  SAME(x.a.erf() + x.a.erf() * 2.0f, x.A.erf() + x.A.erf() * 2.0f);
  SAME((x.a.atan() - x.b).erf().sum<1>(), (x.A.atan() - x.B).erf().sum(1));
  SAME(x.a.sum<0>(tg::keepdim).erfc() * x.a, x.A.sum(0, true).erfc() * x.A);
  SAME(x.d.gelu(), x.D.gelu()); // float64: erf itself
  SAME_TOL(1e-12, (x.d * 3.0).gelu(), (x.D * 3.0).gelu());
  // compile-time evaluation
  static constexpr tg::fixed<float, 3> c{-1.0f, 0.5f, 2.5f};
  constexpr tg::fixed<float, 3> ce = c.erf();
  static_assert(ce[1] > 0.5204f && ce[1] < 0.5205f);
  constexpr tg::fixed<float, 3> ca = c.atan2(c.flip<0>());
  static_assert(ca[0] < -0.38f && ca[0] > -0.39f); // atan2(-1, 2.5)
}

TEST_CASE("fixed: fmod, remainder and floor_divide equal the run-time Tensor's") {
  Data x;
  tg::fixed<float, 8> edge{0.0f, -0.0f, 5.5f, -5.5f, INFINITY, -INFINITY, NAN, 1e30f},
      by{1.5f, -1.5f, 0.0f, -0.0f, 2.0f, INFINITY, -3.0f, 7.0f};
  tg::Tensor EDGE = rt(edge), BY = rt(by);
#define TG_DIVISIONS(OP)                                                                           \
  SAME(x.a.OP(x.b), x.A.OP(x.B));                                                                  \
  SAME(x.a.OP(x.bias), x.A.OP(x.BIAS));                                                            \
  SAME(x.ia.OP(x.ib), x.IA.OP(x.IB));                                                              \
  SAME((-x.ia).OP(x.ib), (-x.IA).OP(x.IB));                                                        \
  SAME(x.ia.OP(x.ib * -1), x.IA.OP(x.IB * -1));                                                    \
  SAME(x.d.OP(x.a), x.D.OP(x.A));                                                                  \
  SAME(x.ia.OP(x.a), x.IA.OP(x.A));                                                                \
  SAME(edge.OP(by), EDGE.OP(BY));                                                                  \
  SAME(by.OP(edge), BY.OP(EDGE))
  TG_DIVISIONS(fmod);
  TG_DIVISIONS(remainder);
  TG_DIVISIONS(floor_divide);
#undef TG_DIVISIONS
}

TEST_CASE("fixed: bitwise_left_shift and bitwise_right_shift equal the run-time Tensor's") {
  Data x;
  tg::fixed<std::int64_t, 6> big{1, -1, 3, -7, 1ll << 40, -(1ll << 40)};
  tg::fixed<std::int64_t, 6> by{0, 1, 2, 3, 20, 62}, left{0, 1, 2, 3, 20, 2};
  tg::Tensor BIG = rt(big), BY = rt(by), LEFT = rt(left);
  SAME(x.ia.bitwise_left_shift(x.ib), x.IA.bitwise_left_shift(x.IB));
  SAME(x.ia.bitwise_right_shift(x.ib), x.IA.bitwise_right_shift(x.IB));
  SAME(x.ia.bitwise_left_shift(3),
       x.IA.bitwise_left_shift(tg::Tensor::scalar(3, tg::TensorOptions(tg::int32))));
  SAME(x.ia.bitwise_right_shift(1),
       x.IA.bitwise_right_shift(tg::Tensor::scalar(1, tg::TensorOptions(tg::int32))));
  SAME(big.bitwise_left_shift(left), BIG.bitwise_left_shift(LEFT));
  SAME(big.bitwise_right_shift(by), BIG.bitwise_right_shift(BY));
  SAME(x.mask.bitwise_left_shift(x.ib), x.MASK.bitwise_left_shift(x.IB));
}

TEST_CASE("fixed: cat and stack equal the run-time Tensor's") {
  Data x;
  SAME(tg::cat<0>(x.a, x.b), tg::cat({x.A, x.B}, 0));
  SAME(tg::cat<1>(x.a, x.col, x.b), tg::cat({x.A, x.COL, x.B}, 1));
  SAME(tg::cat<-1>(x.a, x.ia), tg::cat({x.A, x.IA}, -1)); // promoted to float32
  SAME(tg::cat<1>(x.cube, x.cube * 2.0f), tg::cat({x.CUBE, x.CUBE * 2.0f}, 1));
  SAME(tg::cat<0>(x.v, x.bias, x.v), tg::cat({x.V, x.BIAS, x.V}, 0));
  SAME(tg::cat<0>(x.a), tg::cat({x.A}, 0));
  SAME(tg::cat<0>(x.mask, x.mask), tg::cat({x.MASK, x.MASK}, 0));
  SAME(tg::cat<1>(x.a.T(), x.m).sum<0>(), tg::cat({x.A.T(), x.M}, 1).sum(0));
  SAME(tg::stack<0>(x.a, x.b), tg::stack({x.A, x.B}, 0));
  SAME(tg::stack<1>(x.a, x.b, x.pos), tg::stack({x.A, x.B, x.POS}, 1));
  SAME(tg::stack<-1>(x.ia, x.ib), tg::stack({x.IA, x.IB}, -1));
}

TEST_CASE("fixed: gather and index_select equal the run-time Tensor's") {
  Data x;
  // indices in [-n, n): negative ones count from the end
  auto g0 = random_fixed<tg::fixed<std::int64_t, 3, 5>>(-4, 4);
  auto g1 = random_fixed<tg::fixed<int, 4, 7>>(-5, 5);
  auto g2 = random_fixed<tg::fixed<std::int64_t, 2, 2, 4>>(-3, 3);
  auto s0 = random_fixed<tg::fixed<int, 6>>(-4, 4);
  auto s1 = random_fixed<tg::fixed<std::int64_t, 3>>(0, 5);
  SAME(x.a.gather<0>(g0), x.A.gather(0, rt(g0)));
  SAME(x.a.gather<1>(g1), x.A.gather(1, rt(g1)));
  SAME(x.a.gather<-1>(g1.slice<1, 0, 3>()), x.A.gather(-1, rt(g1).slice(1, 0, 3)));
  SAME(x.cube.gather<1>(g2), x.CUBE.gather(1, rt(g2)));
  SAME(x.ia.gather<1>(g1) * 2, x.IA.gather(1, rt(g1)) * 2);
  SAME(x.a.index_select<0>(s0), x.A.index_select(0, rt(s0)));
  SAME(x.a.index_select<1>(s1), x.A.index_select(1, rt(s1)));
  SAME(x.cube.index_select<2>(s1 - 1), x.CUBE.index_select(2, rt(s1) - 1));
  SAME(x.v.index_select<0>(s0), x.V.index_select(0, rt(s0)));
}

TEST_CASE("fixed: split and chunk equal the run-time Tensor's") {
  Data x;
  auto& a = x.a; // [4, 5]
  auto& A = x.A;
  auto& c = x.cube; // [2, 3, 4]
  auto& C = x.CUBE;
  auto w = random_fixed<tg::fixed<float, 3, 7, 2>>(-1, 1);
  tg::Tensor W = rt(w);
  SAME_PIECES(a.split<2, 1>(), A.split(2, 1));   // 2, 2, 1: the last piece is shorter
  SAME_PIECES(a.split<3>(), A.split(3));         // 3, 1
  SAME_PIECES(a.split<5, -1>(), A.split(5, -1)); // one piece, the whole axis
  SAME_PIECES(a.split<7, 1>(), A.split(7, 1));   // a size past the axis: one piece
  SAME_PIECES(a.split<1, 0>(), A.split(1, 0));
  SAME_PIECES(c.split<2, -1>(), C.split(2, -1));
  SAME_PIECES(w.split<3, 1>(), W.split(3, 1)); // 3, 3, 1
  SAME_PIECES(w.split<1, 2>(), W.split(1, 2));
  SAME_PIECES(x.ia.split<3, 1>(), x.IA.split(3, 1));
  SAME_PIECES((a + x.b).split<3, 0>(), (A + x.B).split(3, 0));
  SAME_PIECES(c.split<tg::dims<1, 2>, 1>(), C.split(std::vector<std::int64_t>{1, 2}, 1));
  SAME_PIECES(w.split<tg::dims<2, 4, 1>, -2>(), W.split(std::vector<std::int64_t>{2, 4, 1}, -2));
  SAME_PIECES(tg::split<tg::dims<4>, 0>(a), A.split(std::vector<std::int64_t>{4}, 0));
  SAME_PIECES(c.split<tg::dims<2, 0, 2>, -1>(), C.split(std::vector<std::int64_t>{2, 0, 2}, -1));
  SAME_PIECES(a.chunk<2, 1>(), A.chunk(2, 1));   // 3, 2
  SAME_PIECES(a.chunk<3, 0>(), A.chunk(3, 0));   // pieces of 2: two chunks, not three
  SAME_PIECES(a.chunk<4, 1>(), A.chunk(4, 1));   // 2, 2, 1
  SAME_PIECES(a.chunk<6, -1>(), A.chunk(6, -1)); // pieces of 1: five
  SAME_PIECES(c.chunk<2, 2>(), C.chunk(2, 2));
  SAME_PIECES(w.chunk<3, 1>(), W.chunk(3, 1)); // 3, 3, 1
  SAME_PIECES(tg::chunk<2>(x.v), x.V.chunk(2));
  static_assert(std::tuple_size_v<decltype(a.chunk<3, 0>())> == 2);
  static_assert(std::tuple_size_v<decltype(a.chunk<6, 1>())> == 5);
  // the pieces are expressions: views of the operand
  auto [p, q, r] = a.split<2, 1>();
  static_assert(std::is_same_v<decltype(r)::shape_type, tg::shape<4, 1>>);
  SAME((p * 2.0f + q).sum<0>(), (A.split(2, 1)[0] * 2.0f + A.split(2, 1)[1]).sum(0));
  SAME(r.squeeze<1>() + 1.0f, A.split(2, 1)[2].squeeze(1) + 1.0f);
  tg::fixed<float, 4, 2> p2 = p;
  CHECK(p2(3, 1) == a(3, 1));
}

TEST_CASE("fixed: gather and index_select check their indices as the run-time Tensor's") {
  Data x;
  // the message of an index_error, and the call site's line in it
  auto message = [](auto f) {
    try {
      f();
    } catch (const tg::index_error& e) {
      return std::string(e.what());
    }
    return std::string("no index_error");
  };
  auto before_site = [](const std::string& m) { return m.substr(0, m.find(" (at ")); };
  tg::fixed<std::int64_t, 2, 5> high{{0, 1, 4, 2, 3}, {-1, -4, 0, 1, 2}}; // 4: axis 0 has 4
  tg::fixed<int, 2, 5> low{{0, 1, 2, 3, -5}, {0, 0, 0, 0, 0}};            // -5 < -4
  tg::fixed<int, 3> s_high{0, 5, 1};                                      // 5: axis 1 has 5
  tg::fixed<std::int64_t, 2> s_low{-6, 0};
  const int line = __LINE__ + 1;
  std::string m = message([&] { return x.a.gather<0>(high); });
  CHECK(m.find("tg.gather: index 4 is out of range for dim 0 of [4, 5] (at ") == 0);
  CHECK(m.find("test_fixed.cpp:" + std::to_string(line) + " ") != std::string::npos);
  // the run-time gather's message, up to the call site
  CHECK(before_site(m) == before_site(message([&] { return x.A.gather(0, rt(high)); })));
  CHECK(before_site(message([&] { return tg::gather<0>(x.a, low); })) ==
        before_site(message([&] { return x.A.gather(0, rt(low)); })));
  const int line2 = __LINE__ + 1;
  std::string m2 = message([&] { return x.a.index_select<1>(s_high); });
  CHECK(before_site(m2) == "tg.index_select: index 5 is out of range for dim 1 of [4, 5]");
  CHECK(m2.find("test_fixed.cpp:" + std::to_string(line2) + " ") != std::string::npos);
  CHECK(before_site(message([&] { return tg::index_select<0>(x.a, s_low); })) ==
        before_site(message([&] { return x.A.index_select(0, rt(s_low)); })));
  // evaluated on the host, and bridged to a run-time tensor
  CHECK_THROWS_AS((tg::fixed<float, 2, 5>(x.a.gather<0>(high))), tg::index_error);
  CHECK_THROWS_AS((tg::fixed<float, 4, 3>(x.a.index_select<1>(s_high) * 2.0f)), tg::index_error);
  CHECK_THROWS_AS(tg::to_tensor(x.a.gather<0>(low) + 1.0f), tg::index_error);
  CHECK_THROWS_AS((void)tg::Tensor(x.a.index_select<0>(s_low)), tg::index_error);
  CHECK_THROWS_AS(tg::to_tensor(x.cube.gather<2>(high.reshape<2, 1, 5>()), "INTERP"),
                  tg::index_error); // a view of an index
  // a computed index is evaluated and checked too
  CHECK_THROWS_AS(x.a.gather<1>(high + 1), tg::index_error);
  CHECK_THROWS_AS(x.a.index_select<0>((s_high - 1).cast<std::int8_t>()), tg::index_error);
  // negative indices in [-n, n) count from the end
  tg::fixed<std::int64_t, 2, 5> neg{{-4, -3, -2, -1, 0}, {3, -4, 2, -1, 1}};
  tg::fixed<int, 4> s_neg{-5, -1, 4, 0};
  SAME(x.a.gather<0>(neg), x.A.gather(0, rt(neg)));
  SAME(x.a.gather<0>(neg - 0), x.A.gather(0, rt(neg) - 0));
  SAME(x.a.index_select<1>(s_neg), x.A.index_select(1, rt(s_neg)));
  SAME(x.a.index_select<-1>(s_neg * -1 - 1), x.A.index_select(-1, rt(s_neg) * -1 - 1));
  tg::Tensor t = tg::Tensor(x.a.index_select<1>(s_neg));
  CHECK(t.to_vector<float>() == x.A.index_select(1, rt(s_neg)).to_vector<float>());
  tg::fixed<float, 2, 5> g = x.a.gather<0>(neg);
  CHECK(g(0, 0) == x.a(0, 0));
  CHECK(g(1, 1) == x.a(0, 1));
}

TEST_CASE("fixed: movement ops equal the run-time Tensor's") {
  Data x;
  auto& a = x.a;
  auto& A = x.A;
  auto& c = x.cube;
  auto& C = x.CUBE;
  SAME(a.reshape<5, 4>(), A.reshape({5, 4}));
  SAME(a.reshape<2, -1>(), A.reshape({2, -1}));
  SAME(c.permute<2, 0, 1>(), C.permute({2, 0, 1}));
  SAME(c.transpose<0, 2>(), C.transpose(0, 2));
  SAME(a.T(), A.T());
  SAME(a.T() + 1.0f, A.T() + 1.0f);
  SAME(x.bias.expand<3, 5>(), x.BIAS.expand({3, 5}));
  SAME(x.col.expand<-1, 6>(), x.COL.expand({-1, 6}));
  SAME(x.col.squeeze(), x.COL.squeeze());
  SAME(x.col.squeeze<1>(), x.COL.squeeze(1));
  SAME(a.unsqueeze<1>(), A.unsqueeze(1));
  SAME(a.unsqueeze<-1>() * 2.0f, A.unsqueeze(-1) * 2.0f);
  SAME(c.flatten(), C.flatten());
  SAME(c.flatten<1>(), C.flatten(1));
  SAME(a.pad<1, 2>(), A.pad({1, 2}));
  SAME(a.pad<1, 0, 0, 2>(1.5), A.pad({1, 0, 0, 2}, 1.5));
  SAME(a.pad<-1, 1>(), A.pad({-1, 1}));
  SAME(a.slice<1, 1, 4>(), A.slice(1, 1, 4));
  SAME(a.slice<0, 1, tg::none, 2>(), A.slice(0, 1, std::nullopt, 2));
  SAME(a.slice<1, tg::none, tg::none, -2>(), A.slice(1, std::nullopt, std::nullopt, -2));
  SAME(a.slice<1, -2, tg::none>() * 3.0f, A.slice(1, -2, std::nullopt) * 3.0f);
  SAME(a.select<0, 2>(), A.index({2}));
  SAME(c.select<1, -1>(), C.index({tg::Slice{}, -1}));
  SAME(c.flip<0, 2>(), C.flip({0, 2}));
  SAME(a.unfold<1, 2, 1>(), A.unfold(1, 2, 1));
  SAME(c.unfold<-1, 3, 2>().sum<-1>(), C.unfold(-1, 3, 2).sum(-1));
  SAME(a.pad<1, 1>().unfold<1, 3, 2>(), A.pad({1, 1}).unfold(1, 3, 2)); // windows over padding
  SAME(a.repeat<2, 1>(), A.repeat({2, 1}));
  SAME(x.bias.repeat<2, 3>(), x.BIAS.repeat({2, 3}));
  SAME((a.T().reshape<2, 10>() + 1.0f).sum<1>(), (A.T().reshape({2, 10}) + 1.0f).sum(1));
}

TEST_CASE("fixed: matmul equals the run-time Tensor's") {
  Data x;
  SAME(x.a.matmul(x.m), x.A.matmul(x.M));
  SAME(tg::matmul(x.a.T(), x.a), tg::matmul(x.A.T(), x.A));
  SAME(x.batch.matmul(x.m), x.BATCH.matmul(x.M));
  SAME(x.v.matmul(x.m), x.V.matmul(x.M));
  SAME(x.a.matmul(x.v), x.A.matmul(x.V));
  SAME(x.v.dot(x.v), x.V.dot(x.V));
  SAME((x.a.matmul(x.m) + 1.0f).relu(), (x.A.matmul(x.M) + 1.0f).relu());
  SAME(x.a.matmul(x.m).softmax<1>(), x.A.matmul(x.M).softmax(1));
  SAME((x.a * 2.0f).matmul(x.m.T().T()), (x.A * 2.0f).matmul(x.M.T().T()));
  SAME(x.d.matmul(x.m), x.D.matmul(x.M));
}

namespace {
bool same_graph(const tg::Graph& s, const tg::Graph& r, std::string& why) {
  if (s.size() != r.size())
    why = "sizes " + std::to_string(s.size()) + " and " + std::to_string(r.size());
  for (std::size_t i = 0; i < std::min(s.size(), r.size()); ++i)
    if (!tg::fx::same_node(s.nodes[i], r.nodes[i])) {
      why += " node " + std::to_string(i) + ": " + tg::op_name(s.nodes[i].op) + " and " +
             tg::op_name(r.nodes[i].op);
      return false;
    }
  if (!why.empty()) return false;
  if (s.buffers.size() != r.buffers.size() || s.outputs != r.outputs) {
    why = "buffers or outputs";
    return false;
  }
  for (std::size_t i = 0; i < s.buffers.size(); ++i)
    if (s.buffers[i].dtype != r.buffers[i].dtype || !(s.buffers[i].numel == r.buffers[i].numel)) {
      why = "buffer " + std::to_string(i);
      return false;
    }
  return true;
}
template <class E> void check_graph(const char* what, const E& e, const tg::Tensor& t) {
  INFO(std::string(what));
  tg::Graph s = tg::graph_of(e);
  // the pass list on both front ends: the CPU's, and what tg::Tensor(expr) runs on the CPU
  const tg::Target cpu = tg::Target::cpu(), planned = tg::Target::cpu().planned();
  auto info = tg::schedule({t}, cpu);
  std::string why;
  bool ok = same_graph(s, info.graph, why);
  if (!ok) {
    INFO(why << "\nstatic:\n"
             << tg::dump(s).view() << "run-time:\n"
             << tg::dump(info.graph).view());
    CHECK(ok);
  }
  CHECK(tg::kernel_count(e, cpu) == info.kernels());
  for (std::size_t k = 0; k < info.kernels() && ok; ++k)
    CHECK(tg::kernel_source(e, k, cpu).view() == info.sources[k]);
  auto plan = tg::schedule({t}, planned);
  CHECK(tg::kernel_count(e) == plan.kernels());
  for (std::size_t k = 0; k < plan.kernels() && ok; ++k)
    CHECK(tg::kernel_source(e, k).view() == plan.sources[k]);
}
#define SAME_GRAPH(S, ...) check_graph(#S, S, __VA_ARGS__)
} // namespace

TEST_CASE("fixed: the Graph of an expression is the run-time front end's, node by node") {
  Data x;
  auto& a = x.a;
  auto& b = x.b;
  auto& A = x.A;
  auto& B = x.B;
  SAME_GRAPH(a * b + x.bias, A * B + x.BIAS);
  SAME_GRAPH((a - b).exp().sum<1>(), (A - B).exp().sum(1));
  SAME_GRAPH(a.softmax<1>(), A.softmax(1));
  SAME_GRAPH(a.log_softmax<1>(), A.log_softmax(1));
  SAME_GRAPH(a.matmul(x.m), A.matmul(x.M));
  SAME_GRAPH((a.matmul(x.m) + 1.0f).relu(), (A.matmul(x.M) + 1.0f).relu());
  SAME_GRAPH(x.batch.matmul(x.m), x.BATCH.matmul(x.M));
  SAME_GRAPH(x.v.matmul(x.m), x.V.matmul(x.M));
  SAME_GRAPH(x.v.dot(x.v), x.V.dot(x.V));
  SAME_GRAPH(a.gelu(), A.gelu());
  SAME_GRAPH(a.gelu_tanh(), A.gelu("tanh"));
  SAME_GRAPH(a.round(), A.round());
  SAME_GRAPH(a.tanh(), A.tanh());
  SAME_GRAPH(a.sigmoid() + b.sigmoid(), A.sigmoid() + B.sigmoid());
  SAME_GRAPH(a.sign(), A.sign());
  SAME_GRAPH(a.softplus(), A.softplus());
  SAME_GRAPH(a.silu(), A.silu());
  SAME_GRAPH(a.clamp(-0.5, 0.5), A.clamp(-0.5, 0.5));
  SAME_GRAPH(a.minimum(b), A.minimum(B));
  SAME_GRAPH(a.abs() - a, A.abs() - A);
  SAME_GRAPH(a.cos(), A.cos());
  SAME_GRAPH(a.isinf(), A.isinf());
  SAME_GRAPH(a <= b, A <= B);
  SAME_GRAPH(a.pow(b), A.pow(B));
  SAME_GRAPH(x.ia.pow(x.ia), x.IA.pow(x.IA));
  SAME_GRAPH(x.ia.sum(), x.IA.sum());
  SAME_GRAPH(x.ia.min<0>(), x.IA.min(0));
  SAME_GRAPH(x.ia.clamp(-2, 3), x.IA.clamp(-2, 3));
  SAME_GRAPH(x.ia / 2, x.IA / 2);
  SAME_GRAPH(a.var<1>(), A.var({1}));
  SAME_GRAPH(a.std<0>(), A.std({0}));
  SAME_GRAPH(a.mean(), A.mean());
  SAME_GRAPH(a.logsumexp<1>(), A.logsumexp(1));
  SAME_GRAPH((a > -1.0f).all<1>(), (A > -1.0f).all(1));
  SAME_GRAPH(a.slice<0, 1, 4, 2>() * 2.0f, A.slice(0, 1, 4, 2) * 2.0f);
  SAME_GRAPH(a.pad<1, 2>(3.0) + 1.0f, A.pad({1, 2}, 3.0) + 1.0f);
  SAME_GRAPH(a.flip<0>() + 1.0f, A.flip({0}) + 1.0f);
  SAME_GRAPH(a.unfold<1, 2, 2>() * 2.0f, A.unfold(1, 2, 2) * 2.0f);
  SAME_GRAPH(a.repeat<2, 1>() + 1.0f, A.repeat({2, 1}) + 1.0f);
  SAME_GRAPH(a.select<1, 2>() + 1.0f, A.index({tg::Slice{}, 2}) + 1.0f);
  SAME_GRAPH(a.T().reshape<2, 10>() * b.reshape<2, 10>(),
             A.T().reshape({2, 10}) * B.reshape({2, 10}));
  SAME_GRAPH(tg::where(a > 0.0f, a, b), tg::where(A > 0.0f, A, B));
  SAME_GRAPH(a.leaky_relu(0.1), A.leaky_relu(0.1));
  SAME_GRAPH(a.argmax<1>(), A.argmax(1));
  SAME_GRAPH(a.argmax<0>(tg::keepdim), A.argmax(0, true));
  SAME_GRAPH(a.argmax(), A.argmax());
  SAME_GRAPH(a.argmin<1>(), A.argmin(1));
  SAME_GRAPH(x.cube.argmax<2>(tg::keepdim), x.CUBE.argmax(2, true));
  SAME_GRAPH(x.ia.argmin<0>(), x.IA.argmin(0));
  SAME_GRAPH(x.ia.argmax(tg::keepdim), x.IA.argmax(std::nullopt, true));
  SAME_GRAPH(a.erf(), A.erf());
  SAME_GRAPH(x.d.erfc(), x.D.erfc());
  SAME_GRAPH(a.atan() * b, A.atan() * B);
  SAME_GRAPH(x.d.atan(), x.D.atan());
  SAME_GRAPH(a.atan2(x.bias), A.atan2(x.BIAS));
  SAME_GRAPH(x.ia.atan2(a), x.IA.atan2(A));
  SAME_GRAPH(a.asin(), A.asin());
  SAME_GRAPH(a.acos() + a.erf(), A.acos() + A.erf());
  SAME_GRAPH(x.d.gelu(), x.D.gelu());
  SAME_GRAPH(a.norm(), A.norm());
  SAME_GRAPH((a.norm<3, 1>()), A.norm(3, {1}));
  SAME_GRAPH((a.norm<tg::norm_inf, 0>(tg::keepdim)), A.norm(INFINITY, {0}, true));
  SAME_GRAPH(a.cummax<1>().first, A.cummax(1).first);
  SAME_GRAPH(x.ia.cummin<0>().second, x.IA.cummin(0).second);
  SAME_GRAPH(a.logcumsumexp<1>(), A.logcumsumexp(1));
  SAME_GRAPH(a.sort<1>().first, A.sort(1).first);
  SAME_GRAPH((a.sort<0, true>().second), A.sort(0, true).second);
  SAME_GRAPH(a.topk<2>().first + 1.0f, A.topk(2).first + 1.0f);
  tg::fixed<int, 2, 5> i0{{0, 3, 1, 2, 3}, {2, 0, 3, -1, 1}};
  tg::fixed<std::int64_t, 4, 2> i1{{0, 4}, {1, 1}, {3, 2}, {-1, 0}};
  tg::fixed<int, 3> sel{2, 0, 2};
  SAME_GRAPH(a.scatter<0>(i0, b), A.scatter(0, rt(i0), B));
  SAME_GRAPH(a.scatter_add<1>(i1, b), A.scatter_add(1, rt(i1), B));
  SAME_GRAPH(a.index_add<1>(sel, b.slice<1, 0, 3>()), A.index_add(1, rt(sel), B.slice(1, 0, 3)));
  SAME_GRAPH(tg::one_hot<5>(i0 + 1), tg::nn::functional::one_hot(rt(i0) + 1, 5));
  SAME_GRAPH(tg::einsum<"ij,jk->ik">(a, x.m), tg::einsum("ij,jk->ik", {A, x.M}));
  SAME_GRAPH(tg::einsum<"bij,jk->bki">(x.batch, x.m), tg::einsum("bij,jk->bki", {x.BATCH, x.M}));
  SAME_GRAPH(tg::einsum<"ii->i">(a.slice<1, 0, 4>()), tg::einsum("ii->i", {A.slice(1, 0, 4)}));
  SAME_GRAPH(a.cumsum<1>(), A.cumsum(1));
  SAME_GRAPH(x.cube.cumsum<0>() + 1.0f, x.CUBE.cumsum(0) + 1.0f);
  SAME_GRAPH(x.ia.cumsum<-1>(), x.IA.cumsum(-1));
  SAME_GRAPH(tg::cat<1>(a, x.col, b), tg::cat({A, x.COL, B}, 1));
  SAME_GRAPH(tg::cat<0>(a, x.ia) * 2.0f, tg::cat({A, x.IA}, 0) * 2.0f);
  SAME_GRAPH(tg::cat<0>(x.mask, x.mask), tg::cat({x.MASK, x.MASK}, 0));
  SAME_GRAPH(tg::cat<1>(a.T(), x.m), tg::cat({A.T(), x.M}, 1));
  SAME_GRAPH(tg::stack<1>(a, b), tg::stack({A, B}, 1));
  tg::fixed<std::int64_t, 3, 5> g0{{0, 1, 2, 3, -1}, {3, 2, 1, 0, 0}, {1, 1, 1, -4, 2}};
  tg::fixed<int, 4, 2> g1{{0, 4}, {1, 3}, {2, -2}, {3, 1}};
  tg::fixed<int, 3> s0{3, -1, 0};
  SAME_GRAPH(a.gather<0>(g0), A.gather(0, rt(g0)));
  SAME_GRAPH(a.gather<1>(g1) + 1.0f, A.gather(1, rt(g1)) + 1.0f);
  SAME_GRAPH(a.gather<1>(g1.slice<0, 0, 2>()), A.gather(1, rt(g1).slice(0, 0, 2))); // crops a
  SAME_GRAPH(a.index_select<0>(s0), A.index_select(0, rt(s0)));
  SAME_GRAPH(x.cube.index_select<2>(s0), x.CUBE.index_select(2, rt(s0)));
  // a computed index: evaluated when the op is built, a Buffer in both graphs
  SAME_GRAPH(x.cube.index_select<2>(s0 * 1), x.CUBE.index_select(2, rt(s0) * 1));
  SAME_GRAPH(a.gather<1>(g1 - 0) * 2.0f, A.gather(1, rt(g1) - 0) * 2.0f);
  SAME_GRAPH(std::get<1>(a.split<2, 1>()) + 1.0f, A.split(2, 1)[1] + 1.0f);
  SAME_GRAPH(std::get<2>(a.chunk<3, 1>()) * b.slice<1, 4, 5>(),
             A.chunk(3, 1)[2] * B.slice(1, 4, 5));
  SAME_GRAPH(std::get<0>(a.split<4, 0>()).exp(), A.split(4, 0)[0].exp()); // the whole axis
  SAME_GRAPH(std::get<1>(x.cube.split<tg::dims<1, 3>, -1>()).sum<2>(),
             x.CUBE.split(std::vector<std::int64_t>{1, 3}, -1)[1].sum(2));
  auto e = (a - a.max<1>(tg::keepdim)).exp(); // one sub-expression used twice is one node
  auto E = (A - A.max(1, true)).exp();
  SAME_GRAPH(e / e.sum<1>(tg::keepdim), E / E.sum(1, true));
}

TEST_CASE("fixed: assignment evaluates in place, or through a temporary when it reads itself") {
  tg::fixed<float, 3, 3> a{{1, 2, 3}, {4, 5, 6}, {7, 8, 9}};
  a = a * 2.0f + 1.0f; // elementwise: in place
  CHECK(a(1, 1) == 11);
  a = a.T(); // reads other positions: through a temporary
  CHECK(a(0, 1) == 9);
  CHECK(a(1, 0) == 5);
  a = a - a.sum<1>(tg::keepdim);
  CHECK(a(0, 0) == doctest::Approx(3 - (3 + 9 + 15)));
  tg::fixed<float, 3, 3> m = a.matmul(a);
  tg::fixed<float, 3, 3> ref;
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 3; ++j)
      for (int k = 0; k < 3; ++k) ref(i, j) += a(i, k) * a(k, j);
  for (std::size_t i = 0; i < 9; ++i) CHECK(m[i] == ref[i]);
  a = a.matmul(a);
  for (std::size_t i = 0; i < 9; ++i) CHECK(a[i] == ref[i]);
}

TEST_CASE("fixed: bridges to and from tg::Tensor") {
  Data x;
  auto e = (x.a * x.b + x.bias).relu().sum<1>();
  tg::Tensor t = tg::Tensor(e);
  CHECK(t.to_vector<float>() == (x.A * x.B + x.BIAS).relu().sum(1).to_vector<float>());
  tg::Tensor lazy = tg::lazy_tensor(e); // the run-time front end's graph, fused when realized
  CHECK(!lazy.is_realized());
  CHECK(lazy.to_vector<float>() == t.to_vector<float>());
  tg::Tensor on_interp = tg::to_tensor(x.a.softmax<1>(), "INTERP");
  CHECK(on_interp.device() == "INTERP");
  auto s = x.a.softmax<1>().eval();
  auto iv = on_interp.to_vector<float>();
  for (std::size_t i = 0; i < s.size; ++i) CHECK(iv[i] == doctest::Approx(s[i]).epsilon(1e-6));
  tg::fixed<float, 4, 5> back(tg::Tensor(x.a * 2.0f));
  for (std::size_t i = 0; i < back.size; ++i) CHECK(back[i] == x.a[i] * 2.0f);
  auto f = tg::to_fixed<tg::fixed<float, 4, 5>>(x.A.exp());
  CHECK(f[3] == doctest::Approx(std::exp(x.a[3])));
  CHECK_THROWS_AS((tg::fixed<float, 5, 4>(x.A)), tg::shape_error);
  CHECK_THROWS_AS((tg::fixed<double, 4, 5>(x.A)), tg::dtype_error);
  // an rvalue fixed tensor in an expression is kept by the expression
  tg::Tensor r = tg::Tensor(tg::fixed<float, 2>{1, 2} * 3.0f);
  CHECK(r.to_vector<float>() == std::vector<float>{3, 6});
}

TEST_CASE("fixed: tg::Tensor(expr) runs kernels fused and lowered at compile time") {
  Data x;
  auto e = ((x.a * 2.0f + x.bias).relu().matmul(x.m)).softmax<1>();
  static_assert(tg::fx::plannable<decltype(e)>);
  // the builders' copies (relu's operand, softmax's input) are one node, as in graph_of: the same
  // kernels as fuse(graph_of(e)) (matmul, max, sum, the normalized exponentials)
  const std::size_t kernels = tg::kernel_count(e);
  CHECK(kernels == 4);
  std::vector<float> want =
      ((x.A * 2.0f + x.BIAS).relu().matmul(x.M)).softmax(1).to_vector<float>();
  for (const char* device : {"CPU", "INTERP"}) {
    INFO(device);
    tg::reset_stats();
    tg::Tensor y = tg::to_tensor(e, device);
    CHECK(tg::stats().realizes == 0); // nothing fused or lowered at run time
    CHECK(tg::stats().kernels_launched == std::int64_t(kernels));
    CHECK(y.is_realized());
    CHECK(y.device() == device);
    CHECK(y.shape() == std::vector<std::int64_t>{4, 3});
    CHECK(y.to_vector<float>() == want);
  }
  // scalars are uploaded, not compiled into the source: a new value compiles nothing
  for (float s : {2.0f, 3.0f, -0.5f}) {
    (void)tg::Tensor(x.a * s + x.b); // the first may compile
    tg::reset_stats();
    tg::Tensor y = tg::Tensor(x.a * (s + 1.0f) + x.b);
    CHECK(tg::stats().realizes == 0);
    CHECK(tg::stats().kernels_compiled == 0);
    CHECK(y.to_vector<float>() == (x.A * (s + 1.0f) + x.B).to_vector<float>());
  }
  // the plan merges the two sums (or exps) as copies; it holds when their leaves hold equal data
  // (one tensor, or an equal copy) and scalars equal values, and the run-time front end computes
  // the rest. A view of one leaf is not taken for a view of another.
  tg::fixed<float, 4, 5> same = x.a;
  auto check = [&](const auto& expr, const tg::Tensor& ref, bool planned) {
    tg::reset_stats();
    tg::Tensor y = tg::Tensor(expr);
    CHECK(tg::stats().realizes == (planned ? 0 : 1));
    auto got = y.to_vector<float>();
    auto r = ref.to_vector<float>();
    REQUIRE(got.size() == r.size());
    for (std::size_t i = 0; i < r.size(); ++i) CHECK(got[i] == doctest::Approx(r[i]).epsilon(1e-6));
  };
  check(x.a.sum<1>() + x.a.sum<1>(), x.A.sum(1) + x.A.sum(1), true);
  check(x.a.sum<1>() + same.sum<1>(), x.A.sum(1) + x.A.sum(1), true);
  check(x.a.sum<1>() + x.b.sum<1>(), x.A.sum(1) + x.B.sum(1), false);
  check((x.a * 2.0f).sum<1>() + (x.a * 3.0f).sum<1>(), (x.A * 2.0f).sum(1) + (x.A * 3.0f).sum(1),
        false);
  check(x.a.exp() + x.a.exp(), x.A.exp() + x.A.exp(), true);
  check(x.a.exp() + x.b.exp(), x.A.exp() + x.B.exp(), false);
  check(x.a * 2.0f + x.a * 3.0f, x.A * 2.0f + x.A * 3.0f, false);
  check(x.a.T() + x.b.T(), x.A.T() + x.B.T(), true);
  check(x.a.softmax<1>() * x.b.abs(), x.A.softmax(1) * x.B.abs(), true); // the builders' copies
  check(x.a * 2.0f + x.a, x.A * 2.0f + x.A, true); // one leaf read twice: two uploads of one buffer
  check(x.a.permute<1, 0>(), x.A.permute({1, 0}).contiguous(), true); // a view: a copy kernel
}

namespace {
constexpr tg::input<0, float, 4, 5> px;
constexpr tg::input<1, float, 5> pb;
constexpr tg::input<2, float, 5, 3> pw;
} // namespace

TEST_CASE(
    "fixed: an expression precompiled at compile time runs on any device with no scheduling") {
  constexpr auto k =
      tg::precompile([] { return ((px * 2.0f + pb).relu().matmul(pw)).softmax<1>(); });
  static_assert(decltype(k)::kernels == 4); // matmul, max, sum, the normalized exponentials
  Data x;
  auto want = ((x.a * 2.0f + x.bias).relu().matmul(x.m)).softmax<1>().eval();
  for (const char* device : {"CPU", "INTERP"}) {
    INFO(device);
    tg::reset_stats();
    tg::Tensor y = k.run(device, x.a, x.bias, x.m);
    CHECK(tg::stats().realizes == 0); // nothing fused or lowered at run time
    CHECK(tg::stats().kernels_launched == 4);
    CHECK(y.device() == device);
    CHECK(y.shape() == std::vector<std::int64_t>{4, 3});
    auto got = y.to_vector<float>();
    for (std::size_t i = 0; i < want.size; ++i)
      CHECK(got[i] == doctest::Approx(want[i]).epsilon(1e-5));
  }
  // the programs are the ones the run-time front end lowers for the same graph
  auto ps = decltype(k)::programs();
  // (with the fuser's defaults: the CPU device's row reductions would make it 2 kernels)
  auto info =
      tg::schedule({((x.A * 2.0f + x.BIAS).relu().matmul(x.M)).softmax(1)}, tg::Target::portable());
  REQUIRE(ps.size() == info.lowered.size());
  for (std::size_t i = 0; i < ps.size(); ++i)
    CHECK(tg::render_c(ps[i]).view() == tg::render_c(info.lowered[i]).view());
}

namespace {
/// The text of `f` through tg::fixed and through a tg::Tensor of the same values.
template <class T, std::size_t... D>
std::pair<std::string, std::string> both_prints(const tg::fixed<T, D...>& f) {
  std::ostringstream a, b;
  a << f;
  b << tg::Tensor::from_data(f.data(), {std::int64_t(D)...},
                             tg::TensorOptions(tg::dtype_of<T>, "CPU"));
  return {a.str(), b.str()};
}
template <class T, std::size_t... D>
void check_prints(const tg::fixed<T, D...>& f, const std::string& want) {
  auto [fixed_text, tensor_text] = both_prints(f);
  CHECK(fixed_text == want);
  CHECK(tensor_text == want);
}
template <class F> F iota_fixed(double scale = 1) {
  F f;
  double v = 0;
  for (auto& x : f) x = typename F::value_type(v++ * scale);
  return f;
}
} // namespace

TEST_CASE("fixed and tg::Tensor print the same values the same way, as PyTorch does") {
  const double nan = std::nan(""), inf = INFINITY;
  // integer mode: every nonzero finite value an integer; 1e8 is not above 1e8, so no exponent
  check_prints(tg::fixed<float, 2>{0.f, 1e8f}, "tensor([        0., 100000000.])");
  // nonzero magnitudes spanning more than 1000x: scientific
  check_prints(tg::fixed<float, 3>{0.f, .5f, 2000.f},
               "tensor([0.0000e+00, 5.0000e-01, 2.0000e+03])");
  check_prints(tg::fixed<float, 2>{1e9f, 0.f}, "tensor([1.0000e+09, 0.0000e+00])");
  check_prints(tg::fixed<float, 3>{1.f, 1000.f, 0.f}, "tensor([   1., 1000.,    0.])");
  check_prints(tg::fixed<float, 2>{1e-5f, 1.f}, "tensor([1.0000e-05, 1.0000e+00])");
  check_prints(tg::fixed<float, 2>{0.5f, 100.f}, "tensor([  0.5000, 100.0000])");
  check_prints(tg::fixed<float, 2>{-1.f, 2.f}, "tensor([-1.,  2.])");
  check_prints(tg::fixed<float, 2, 2>{{1.f, 2.f}, {3.f, 4.f}},
               "tensor([[1., 2.],\n        [3., 4.]])");
  check_prints(tg::fixed<float, 2, 1, 2>{{{1.f, 2.f}}, {{3.f, 4.f}}},
               "tensor([[[1., 2.]],\n\n        [[3., 4.]]])");
  check_prints(tg::fixed<float>{3.5f}, "tensor(3.5000)");
  // nan and inf take no part in the format
  check_prints(tg::fixed<double, 3>{nan, -inf, 2.0}, "tensor([nan, -inf, 2.], dtype=float64)");
  check_prints(tg::fixed<float, 2>{float(nan), 1.5f}, "tensor([   nan, 1.5000])");
  check_prints(tg::fixed<float, 2>{0.f, 0.f}, "tensor([0., 0.])");
  // integers, bools, and the dtype named unless float32, int64 or bool
  check_prints(tg::fixed<int, 3>{1, 2, 3}, "tensor([1, 2, 3], dtype=int32)");
  check_prints(tg::fixed<std::int64_t, 2>{5, -12}, "tensor([  5, -12])");
  check_prints(tg::fixed<std::uint8_t, 2>{200, 7}, "tensor([200,   7], dtype=uint8)");
  check_prints(tg::fixed<bool, 2>{true, false}, "tensor([ True, False])");
  check_prints(tg::fixed<tg::half, 2>{tg::half(0.5f), tg::half(1.f)},
               "tensor([0.5000, 1.0000], dtype=float16)");
  // rows wrap at 80 columns; a suffix that does not fit goes on a line of its own
  check_prints(iota_fixed<tg::fixed<std::int64_t, 30>>(),
               "tensor([ 0,  1,  2,  3,  4,  5,  6,  7,  8,  9, 10, 11, 12, 13, 14, 15, 16, 17,\n"
               "        18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29])");
  check_prints(iota_fixed<tg::fixed<double, 40>>(),
               "tensor([ 0.,  1.,  2.,  3.,  4.,  5.,  6.,  7.,  8.,  9., 10., 11., 12., 13.,\n"
               "        14., 15., 16., 17., 18., 19., 20., 21., 22., 23., 24., 25., 26., 27.,\n"
               "        28., 29., 30., 31., 32., 33., 34., 35., 36., 37., 38., 39.],\n"
               "       dtype=float64)");
  // above 1000 elements, 3 edge items each side; only they decide the format
  check_prints(iota_fixed<tg::fixed<std::int64_t, 2000>>(),
               "tensor([   0,    1,    2,  ..., 1997, 1998, 1999])");
  auto ones = iota_fixed<tg::fixed<float, 1001>>(0);
  for (auto& x : ones) x = 1.f;
  ones[500] = 1e9f; // hidden: no exponent
  check_prints(ones, "tensor([1., 1., 1.,  ..., 1., 1., 1.])");
  check_prints(iota_fixed<tg::fixed<std::int64_t, 1000, 3>>(),
               "tensor([[   0,    1,    2],\n        [   3,    4,    5],\n"
               "        [   6,    7,    8],\n        ...,\n"
               "        [2991, 2992, 2993],\n        [2994, 2995, 2996],\n"
               "        [2997, 2998, 2999]])");
  // empty tensors (tg::Tensor only: a tg::fixed has no zero-size axis) show their size
  std::ostringstream e1, e2;
  e1 << tg::Tensor::from_data(std::vector<float>{}, {2, 0}, tg::TensorOptions(tg::float32, "CPU"));
  e2 << tg::Tensor::from_data(std::vector<std::int64_t>{}, {0},
                              tg::TensorOptions(tg::int64, "CPU"));
  CHECK(e1.str() == "tensor([], size=(2, 0))");
  CHECK(e2.str() == "tensor([], dtype=int64)");
}

TEST_CASE("print options apply to both front ends") {
  const tg::PrintOptions saved = tg::print_options();
  tg::PrintOptions o;
  o.sci_mode = false; // the width stays the one the chosen (scientific) format needed
  tg::set_printoptions(o);
  check_prints(tg::fixed<float, 3>{0.f, .5f, 2000.f},
               "tensor([    0.0000,     0.5000,  2000.0000])");
  o.sci_mode = true;
  tg::set_printoptions(o);
  check_prints(tg::fixed<float, 2>{1.f, 2.f}, "tensor([1.0000e+00, 2.0000e+00])");
  o = {};
  o.precision = 2;
  tg::set_printoptions(o);
  check_prints(tg::fixed<float, 2>{1.5f, 2.f}, "tensor([1.50, 2.00])");
  o = {};
  o.threshold = 5;
  o.edgeitems = 1;
  o.linewidth = 20;
  tg::set_printoptions(o);
  check_prints(iota_fixed<tg::fixed<std::int64_t, 10>>(), "tensor([0,  ..., 9])");
  check_prints(iota_fixed<tg::fixed<int, 3>>(), "tensor([0, 1, 2],\n       dtype=int32)");
  tg::set_printoptions(saved);
  check_prints(tg::fixed<float, 2>{1.5f, 2.f}, "tensor([1.5000, 2.0000])");
}
