// Every op of the run-time front end against a plain C++ reference loop, on random data, on CPU
// and INTERP, in float32 and (where meaningful) float64 / int32, including broadcasting and
// non-contiguous inputs (permuted, sliced, expanded, flipped views).
//
// Layout of this file: a tiny host reference (`Ref`: a shape and row-major doubles, with the
// movement and elementwise helpers a reference needs), a `Batch` that realizes many results with
// one schedule and then compares each against its reference, and the test cases, one per area.
#include <doctest/doctest.h>
#include <tg/tg.hpp>

#include <tg/graph/sint_text.hpp>
#include <tg/tensor/reduce_split.hpp>

#include "devices.hpp" // every available device: CPU, INTERP, VULKAN, CUDA (or NVRTC checks)

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <iomanip>
#include <limits>
#include <numeric>
#include <optional>
#include <random>
#include <sstream>
#include <string>
#include <vector>

namespace {

using tg::Tensor;
using tg::TensorOptions;
using Shape64 = std::vector<std::int64_t>;
using Opt = std::optional<std::int64_t>;
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

const std::vector<std::string>& kDevices = tg_test::test_devices();

/// Runs `f(device)` once per device, each in its own doctest subcase (call once per test case).
template <class F> void for_each_device(F&& f) {
  for (const std::string& dev : kDevices) {
    DOCTEST_SUBCASE(dev.c_str()) { f(dev); }
  }
}

// ---- the host reference ----------------------------------------------------------------------

std::int64_t numel_of(const Shape64& s) {
  std::int64_t n = 1;
  for (std::int64_t d : s) n *= d;
  return n;
}

struct Ref {
  Shape64 shape;
  std::vector<double> v;
  double at(const Shape64& idx) const {
    std::int64_t f = 0;
    for (std::size_t i = 0; i < shape.size(); ++i) f = f * shape[i] + idx[i];
    return v[std::size_t(f)];
  }
};

/// A reference of the given shape whose element at each multi-index is f(index), in row-major
/// order.
template <class F> Ref build(const Shape64& shape, F f) {
  Ref r{shape, {}};
  std::int64_t n = numel_of(shape);
  r.v.reserve(std::size_t(n));
  Shape64 idx(shape.size(), 0);
  for (std::int64_t k = 0; k < n; ++k) {
    r.v.push_back(f(idx));
    for (std::size_t d = shape.size(); d-- > 0;) {
      if (++idx[d] < shape[d]) break;
      idx[d] = 0;
    }
  }
  return r;
}

/// Random values in [lo, hi), already representable in dtype t (float32: rounded; ints: floored).
Ref rnd(const Shape64& shape, unsigned seed, double lo = -2, double hi = 2,
        tg::DType t = tg::float32) {
  std::mt19937 g(seed);
  std::uniform_real_distribution<double> u(lo, hi);
  return build(shape, [&](const Shape64&) {
    double x = u(g);
    if (t == tg::float32) return double(float(x));
    if (t == tg::bool_) return x < (lo + hi) / 2 ? 0.0 : 1.0;
    if (tg::is_int(t)) return std::floor(x);
    return x;
  });
}

Ref values(const Shape64& shape, std::vector<double> v) { return Ref{shape, std::move(v)}; }

tg::Shape sh(const Shape64& s) { return tg::Shape(s.begin(), s.end()); }

Tensor make(const Ref& r, tg::DType t, const std::string& dev) {
  return Tensor::from_data(r.v, sh(r.shape), TensorOptions(t, dev));
}

// movement, on the reference
Ref r_reshape(Ref a, Shape64 s) {
  a.shape = std::move(s);
  return a;
}
Ref r_permute(const Ref& a, const std::vector<int>& dims) {
  Shape64 s;
  for (int d : dims) s.push_back(a.shape[std::size_t(d)]);
  return build(s, [&](const Shape64& i) {
    Shape64 j(i.size());
    for (std::size_t k = 0; k < dims.size(); ++k) j[std::size_t(dims[k])] = i[k];
    return a.at(j);
  });
}
/// The indices Python's a[start:stop:step] visits along a dim of size n.
std::vector<std::int64_t> py_slice(std::int64_t n, Opt start, Opt stop, std::int64_t step) {
  std::int64_t b, e;
  auto adj = [&](std::int64_t x, std::int64_t lo, std::int64_t hi) {
    if (x < 0) x += n;
    return std::clamp(x, lo, hi);
  };
  if (step > 0) {
    b = start ? adj(*start, 0, n) : 0;
    e = stop ? adj(*stop, 0, n) : n;
  } else {
    b = start ? adj(*start, -1, n - 1) : n - 1;
    e = stop ? adj(*stop, -1, n - 1) : -1;
  }
  std::vector<std::int64_t> r;
  for (std::int64_t i = b; step > 0 ? i < e : i > e; i += step) r.push_back(i);
  return r;
}
Ref r_slice(const Ref& a, int dim, Opt start, Opt stop, std::int64_t step = 1) {
  std::size_t d = std::size_t(dim < 0 ? dim + int(a.shape.size()) : dim);
  std::vector<std::int64_t> ix = py_slice(a.shape[d], start, stop, step);
  Shape64 s = a.shape;
  s[d] = std::int64_t(ix.size());
  return build(s, [&](Shape64 i) {
    i[d] = ix[std::size_t(i[d])];
    return a.at(i);
  });
}
Ref r_select(const Ref& a, int dim, std::int64_t k) { // a[..., k, ...]: drops the dim
  std::size_t d = std::size_t(dim);
  if (k < 0) k += a.shape[d];
  Shape64 s = a.shape;
  s.erase(s.begin() + std::ptrdiff_t(d));
  return build(s, [&](const Shape64& i) {
    Shape64 j = i;
    j.insert(j.begin() + std::ptrdiff_t(d), k);
    return a.at(j);
  });
}
Ref r_flip(const Ref& a, const std::vector<int>& dims) {
  return build(a.shape, [&](Shape64 i) {
    for (int d : dims) {
      std::size_t k = std::size_t(d < 0 ? d + int(a.shape.size()) : d);
      i[k] = a.shape[k] - 1 - i[k];
    }
    return a.at(i);
  });
}
/// Reads a (NumPy-broadcast, right-aligned) at an index of a larger shape.
double at_b(const Ref& a, const Shape64& idx) {
  std::size_t lead = idx.size() - a.shape.size();
  Shape64 j(a.shape.size());
  for (std::size_t k = 0; k < j.size(); ++k) j[k] = a.shape[k] == 1 ? 0 : idx[k + lead];
  return a.at(j);
}
Ref r_expand(const Ref& a, const Shape64& s) {
  return build(s, [&](const Shape64& i) { return at_b(a, i); });
}
Shape64 bshape(const Shape64& a, const Shape64& b) {
  std::size_t n = std::max(a.size(), b.size());
  Shape64 s(n, 1);
  for (std::size_t i = 0; i < n; ++i) {
    std::int64_t x = i < n - a.size() ? 1 : a[i - (n - a.size())],
                 y = i < n - b.size() ? 1 : b[i - (n - b.size())];
    s[i] = x == 1 ? y : x;
  }
  return s;
}

// elementwise, on the reference
template <class F> Ref map1(Ref a, F f) {
  for (double& x : a.v) x = f(x);
  return a;
}
template <class F> Ref map2(const Ref& a, const Ref& b, F f) {
  return build(bshape(a.shape, b.shape),
               [&](const Shape64& i) { return f(at_b(a, i), at_b(b, i)); });
}
template <class F> Ref map3(const Ref& a, const Ref& b, const Ref& c, F f) {
  return build(bshape(bshape(a.shape, b.shape), c.shape),
               [&](const Shape64& i) { return f(at_b(a, i), at_b(b, i), at_b(c, i)); });
}
Ref scalar_ref(double x) { return Ref{{}, {x}}; }
/// Rounds each value to float32 (a float32 result is compared against a float32-rounded reference
/// where the op is exact, e.g. float32 addition).
Ref f32(Ref a) {
  return map1(std::move(a), [](double x) { return double(float(x)); });
}

/// Reduces over `axes` (empty: all): f gets the values of each output position, in row-major order.
template <class F> Ref r_reduce(const Ref& a, std::vector<int> axes, bool keepdim, F f) {
  const int nd = int(a.shape.size());
  if (axes.empty())
    for (int i = 0; i < nd; ++i) axes.push_back(i);
  for (int& x : axes) x = x < 0 ? x + nd : x;
  Shape64 ks = a.shape;
  for (int x : axes) ks[std::size_t(x)] = 1;
  std::vector<std::vector<double>> buckets(std::size_t(numel_of(ks)));
  build(a.shape, [&](const Shape64& i) {
    std::int64_t flat = 0;
    for (std::size_t k = 0; k < i.size(); ++k) flat = flat * ks[k] + (ks[k] == 1 ? 0 : i[k]);
    buckets[std::size_t(flat)].push_back(a.at(i));
    return 0.0;
  });
  Ref r{ks, {}};
  for (auto& b : buckets) r.v.push_back(f(b));
  if (!keepdim) {
    Shape64 s;
    for (int k = 0; k < nd; ++k)
      if (std::find(axes.begin(), axes.end(), k) == axes.end())
        s.push_back(a.shape[std::size_t(k)]);
    r.shape = s;
  }
  return r;
}
double v_sum(const std::vector<double>& b) { return std::accumulate(b.begin(), b.end(), 0.0); }
double v_max(const std::vector<double>& b) {
  double m = -kInf;
  for (double x : b) m = (x > m || x != x) ? x : m;
  return m;
}

// ---- comparing results -----------------------------------------------------------------------

struct Tol {
  double rtol = 0, atol = 0;
};
constexpr Tol kExact{0, 0};
/// Default tolerances: float32 ~1e-5, float64 1e-10; `loose` for transcendental float32 math.
Tol tol_for(tg::DType t, bool loose = false) {
  if (t == tg::float64) return {1e-10, 1e-10};
  if (t == tg::float32) return loose ? Tol{1e-4, 1e-5} : Tol{1e-5, 1e-6};
  if (t == tg::float16 || t == tg::bfloat16) return {1e-2, 1e-3};
  return kExact;
}

bool close(double got, double want, Tol tol) {
  if (std::isnan(want)) return std::isnan(got);
  if (std::isinf(want)) return got == want;
  return std::fabs(got - want) <= tol.atol + tol.rtol * std::fabs(want);
}

/// Compares one tensor against a reference: shape, dtype and every value. On a device without
/// 64-bit types, a result whose kernels need them must be refused instead.
void check(const std::string& dev, const std::string& label, const Tensor& t, const Ref& want,
           tg::DType dtype, Tol tol) {
  INFO(label);
  try {
    if (t.shape() != want.shape)
      FAIL_CHECK("shape " << tg::detail::shape_str(t.sym_shape()) << ", expected "
                          << tg::detail::shape_str(sh(want.shape)));
    if (t.dtype() != dtype)
      FAIL_CHECK("dtype " << std::string(tg::dtype_name(t.dtype())) << ", expected "
                          << std::string(tg::dtype_name(dtype)));
    if (t.shape() != want.shape) return;
    std::vector<double> got = t.to_vector<double>();
    if (got.size() != want.v.size()) { // (no REQUIRE: this runs in Batch's destructor)
      FAIL_CHECK("got " << got.size() << " values for shape "
                        << tg::detail::shape_str(sh(want.shape)));
      return;
    }
    int bad = 0;
    for (std::size_t i = 0; i < got.size(); ++i)
      if (!close(got[i], want.v[i], tol) && bad++ < 4) {
        std::ostringstream o;
        o.precision(17);
        o << "element " << i << ": got " << got[i] << ", expected " << want.v[i];
        FAIL_CHECK(o.str());
      }
    if (bad) FAIL_CHECK(bad << " of " << got.size() << " elements differ");
  } catch (const std::exception& e) {
    if (!tg_test::refused_64bit(dev, e)) FAIL_CHECK("threw: " << std::string(e.what()));
  }
}

/// Collects results, realizes them together (one schedule), then compares each.
class Batch {
public:
  explicit Batch(std::string dev) : dev_(std::move(dev)) {}
  Batch(const Batch&) = delete;
  Batch& operator=(const Batch&) = delete;
  ~Batch() { run(); }
  void add(std::string label, Tensor t, Ref want, tg::DType dtype, Tol tol = kExact) {
    items_.push_back({std::move(label), std::move(t), std::move(want), dtype, tol});
  }
  /// dtype and tolerance follow the tensor's dtype.
  void add(std::string label, Tensor t, Ref want, bool loose = false) {
    tg::DType d = t.dtype();
    add(std::move(label), std::move(t), std::move(want), d, tol_for(d, loose));
  }
  void run() {
    if (items_.empty()) return;
    std::vector<Tensor> ts;
    for (const Item& c : items_) ts.push_back(c.t);
    try {
      tg::realize(ts);
    } catch (const std::exception& e) { // each result is realized again on its own below
      if (!tg_test::lacks_64bit(dev_))
        FAIL_CHECK("realizing " << items_.size() << " results together on " << dev_
                                << " threw: " << std::string(e.what()));
    }
    for (const Item& c : items_) check(dev_, c.label, c.t, c.want, c.dtype, c.tol);
    items_.clear();
  }

private:
  struct Item {
    std::string label;
    Tensor t;
    Ref want;
    tg::DType dtype;
    Tol tol;
  };
  std::string dev_;
  std::vector<Item> items_;
};

TensorOptions on_dev(const std::string& dev) {
  TensorOptions o;
  o.device = dev;
  return o;
}

std::vector<double> vec(const Tensor& t) { return t.to_vector<double>(); }

// ---- non-contiguous layouts -------------------------------------------------------------------

/// A way to produce a [3, 4] input: the stored data's shape, and the view applied to it.
struct Layout {
  std::string name;
  Shape64 base;
  std::function<Tensor(const Tensor&)> view;
  std::function<Ref(const Ref&)> ref;
};
const std::vector<Layout>& layouts() {
  // named: clang-format 14 and 19 disagree on lambdas with braced lists inside an initializer
  auto permute = [](const Tensor& t) { return t.permute({1, 0}); };
  auto permute_ref = [](const Ref& r) { return r_permute(r, {1, 0}); };
  auto expand = [](const Tensor& t) { return t.expand({3, 4}); };
  auto expand_ref = [](const Ref& r) { return r_expand(r, {3, 4}); };
  auto flip = [](const Tensor& t) { return t.flip({0, 1}); };
  auto flip_ref = [](const Ref& r) { return r_flip(r, {0, 1}); };
  auto mixed = [](const Tensor& t) {
    return t.flip({0}).permute({1, 0}).slice(1, 1, std::nullopt);
  };
  auto mixed_ref = [](const Ref& r) {
    return r_slice(r_permute(r_flip(r, {0}), {1, 0}), 1, 1, std::nullopt);
  };
  static const std::vector<Layout> l = {
      {"contiguous", {3, 4}, [](const Tensor& t) { return t; }, [](const Ref& r) { return r; }},
      {"permuted", {4, 3}, permute, permute_ref},
      {"sliced",
       {6, 9},
       [](const Tensor& t) { return t.slice(0, 1, 6, 2).slice(1, 0, 8, 2); },
       [](const Ref& r) { return r_slice(r_slice(r, 0, 1, 6, 2), 1, 0, 8, 2); }},
      {"expanded", {3, 1}, expand, expand_ref},
      {"flipped", {3, 4}, flip, flip_ref},
      {"negative step",
       {3, 9},
       [](const Tensor& t) { return t.slice(1, -2, 0, -2); },
       [](const Ref& r) { return r_slice(r, 1, -2, 0, -2); }},
      {"flip+permute+slice", {5, 3}, mixed, mixed_ref},
  };
  return l;
}

/// An input of shape [3, 4] in the given layout: the tensor and its reference.
std::pair<Tensor, Ref> input(const Layout& l, unsigned seed, tg::DType t, const std::string& dev,
                             double lo = -2, double hi = 2) {
  Ref base = rnd(l.base, seed, lo, hi, t);
  return {l.view(make(base, t, dev)), l.ref(base)};
}

// float16 / bfloat16 rounding, written out: round to nearest even on `bits` significant bits.
double round_to_bits(double x, int bits, int min_exp) {
  if (x == 0 || !std::isfinite(x)) return x;
  int e = std::max(std::ilogb(x), min_exp);
  return std::ldexp(std::nearbyint(std::ldexp(x, bits - 1 - e)), e - (bits - 1));
}
double to_f16(double x) {
  double r = round_to_bits(double(float(x)), 11, -14);
  return std::fabs(r) > 65504 ? std::copysign(kInf, r) : r;
}
double to_bf16(double x) { return round_to_bits(double(float(x)), 8, -126); }

const double kSqrt2 = std::sqrt(2.0);
double ref_gelu(double x) { return 0.5 * x * (1 + std::erf(x / kSqrt2)); }
double ref_gelu_tanh(double x) {
  return 0.5 * x * (1 + std::tanh(std::sqrt(2 / M_PI) * (x + 0.044715 * x * x * x)));
}
double ref_sigmoid(double x) { return 1 / (1 + std::exp(-x)); }
double ref_softplus(double x, double beta, double threshold) {
  return beta * x > threshold ? x : std::log1p(std::exp(beta * x)) / beta;
}
double ref_sign(double x) { return double((x > 0) - (x < 0)); }

} // namespace

// ================================================================================= creation ====

TEST_CASE("creation: zeros, ones, full, empty and *_like") {
  for_each_device([](const std::string& dev) {
    Batch b(dev);
    for (tg::DType t : {tg::float32, tg::float64, tg::int32, tg::bool_}) {
      std::string n = tg::dtype_name(t);
      b.add("zeros " + n, tg::zeros({2, 3}, TensorOptions(t, dev)),
            values({2, 3}, std::vector<double>(6, 0)), t);
      b.add("ones " + n, tg::ones({3, 1, 2}, TensorOptions(t, dev)),
            values({3, 1, 2}, std::vector<double>(6, 1)), t);
      Tensor e = tg::empty(
          {4, 0, 2}, TensorOptions(t, dev)); // uninitialized in PyTorch: check only what is defined
      CHECK(e.shape() == Shape64{4, 0, 2});
      CHECK(e.dtype() == t);
      CHECK(e.numel() == 0);
    }
    b.add("full float32", tg::full({2, 2}, 0.1, TensorOptions(tg::float32, dev)),
          values({2, 2}, std::vector<double>(4, double(0.1f))), tg::float32);
    b.add("full float64", tg::full({3}, 0.1, TensorOptions(tg::float64, dev)),
          values({3}, {0.1, 0.1, 0.1}), tg::float64);
    b.add("full int32", tg::full({2}, -7, TensorOptions(tg::int32, dev)), values({2}, {-7, -7}),
          tg::int32);
    b.add("full 0-d", tg::full({}, 2.5, TensorOptions(tg::float32, dev)), scalar_ref(2.5),
          tg::float32);
    b.add("full default dtype", tg::full({2}, 3, TensorOptions(tg::float32, dev)),
          values({2}, {3, 3}), tg::float32);

    Tensor x = make(rnd({2, 3}, 1, -5, 5, tg::int32), tg::int32, dev);
    b.add("zeros_like", tg::zeros_like(x), values({2, 3}, std::vector<double>(6, 0)), tg::int32);
    b.add("ones_like float64", tg::ones_like(x, TensorOptions(tg::float64)),
          values({2, 3}, std::vector<double>(6, 1)), tg::float64);
    b.add("full_like", tg::full_like(x, 4), values({2, 3}, std::vector<double>(6, 4)), tg::int32);
    CHECK(tg::empty_like(x).shape() == Shape64{2, 3});
    CHECK(tg::empty_like(x).dtype() == tg::int32);
    CHECK(tg::zeros_like(x).device() == dev);
    CHECK(tg::rand_like(tg::zeros({2, 5}, TensorOptions(tg::float64, dev))).dtype() == tg::float64);
    CHECK(tg::randn_like(x, TensorOptions(tg::float32)).shape() == Shape64{2, 3});
  });
}

TEST_CASE("creation: arange, linspace, eye") {
  for_each_device([](const std::string& dev) {
    Batch b(dev);
    TensorOptions on = on_dev(dev);
    b.add("arange(5)", tg::arange(5, on), values({5}, {0, 1, 2, 3, 4}), tg::int64);
    b.add("arange(10, 0, -3)", tg::arange(10, 0, -3, on), values({4}, {10, 7, 4, 1}), tg::int64);
    b.add("arange(1, 2.5, 0.5)", tg::arange(1, 2.5, 0.5, on), values({3}, {1, 1.5, 2}),
          tg::float32);
    b.add("arange(0, 1, 0.1)", tg::arange(0, 1, 0.1, on),
          f32(build({10}, [](const Shape64& i) { return 0.1 * double(i[0]); })), tg::float32,
          tol_for(tg::float32));
    b.add("arange float64", tg::arange(-2, 2, 1.5, TensorOptions(tg::float64, dev)),
          values({3}, {-2, -0.5, 1}), tg::float64);
    b.add("arange int32", tg::arange(4, TensorOptions(tg::int32, dev)), values({4}, {0, 1, 2, 3}),
          tg::int32);
    b.add("linspace(0, 1, 5)", tg::linspace(0, 1, 5, on), values({5}, {0, 0.25, 0.5, 0.75, 1}),
          tg::float32);
    b.add("linspace(-1, 2, 7) float64", tg::linspace(-1, 2, 7, TensorOptions(tg::float64, dev)),
          build({7}, [](const Shape64& i) { return -1 + 0.5 * double(i[0]); }), tg::float64,
          tol_for(tg::float64));
    b.add("linspace(3, 9, 1)", tg::linspace(3, 9, 1, on), values({1}, {3}), tg::float32);
    b.add("eye(3)", tg::eye(3, std::nullopt, on), values({3, 3}, {1, 0, 0, 0, 1, 0, 0, 0, 1}),
          tg::float32);
    b.add("eye(2, 4) int32", tg::eye(2, 4, TensorOptions(tg::int32, dev)),
          values({2, 4}, {1, 0, 0, 0, 0, 1, 0, 0}), tg::int32);
    b.add("eye(3, 2) float64", tg::eye(3, 2, TensorOptions(tg::float64, dev)),
          values({3, 2}, {1, 0, 0, 1, 0, 0}), tg::float64);
    b.add("arange(1, -1, -0.5)", tg::arange(1, -1, -0.5, on), values({4}, {1, 0.5, 0, -0.5}),
          tg::float32);
    b.add("linspace int64 truncates", tg::linspace(0, 10, 5, TensorOptions(tg::int64, dev)),
          values({5}, {0, 2, 5, 7, 10}), tg::int64);
    b.add("full bool", tg::full({2}, 2, TensorOptions(tg::bool_, dev)), values({2}, {1, 1}),
          tg::bool_);
    CHECK(tg::eye(3, 0, on).shape() == Shape64{3, 0});
    CHECK(tg::linspace(0, 1, 0, on).shape() == Shape64{0});
    CHECK(tg::arange(3, 3, 1, on).numel() == 0);
  });
}

TEST_CASE("creation: rand, randn, randint are seeded and reproducible") {
  for_each_device([](const std::string& dev) {
    TensorOptions on(tg::float32, dev);
    tg::manual_seed(1234);
    std::vector<double> a = vec(tg::rand({1000}, on));
    std::vector<double> a2 = vec(tg::rand({1000}, on));
    tg::manual_seed(1234);
    std::vector<double> b = vec(tg::rand({1000}, on));
    CHECK(a == b);
    CHECK(a != a2);
    tg::manual_seed(99);
    CHECK(vec(tg::rand({1000}, on)) != a);
    double mean = 0;
    for (double x : a) {
      CHECK((x >= 0 && x < 1));
      mean += x / double(a.size());
    }
    CHECK(mean == doctest::Approx(0.5).epsilon(0.05));

    tg::manual_seed(7);
    Tensor r64 = tg::rand({3, 4}, TensorOptions(tg::float64, dev));
    CHECK(r64.dtype() == tg::float64);
    CHECK(r64.shape() == Shape64{3, 4});
    for (double x : vec(r64)) CHECK((x >= 0 && x < 1));

    tg::manual_seed(5);
    std::vector<double> n1 = vec(tg::randn({4000}, on));
    tg::manual_seed(5);
    CHECK(vec(tg::randn({4000}, on)) == n1);
    double m = 0, s = 0;
    for (double x : n1) m += x / 4000;
    for (double x : n1) s += (x - m) * (x - m) / 3999;
    CHECK(std::fabs(m) < 0.1);
    CHECK(std::sqrt(s) == doctest::Approx(1).epsilon(0.1));

    tg::manual_seed(11);
    Tensor ri = tg::randint(-3, 7, {2000}, on_dev(dev));
    CHECK(ri.dtype() == tg::int64);
    std::vector<double> rv = vec(ri);
    std::vector<int> seen(10, 0);
    for (double x : rv) {
      REQUIRE((x >= -3 && x < 7 && x == std::floor(x)));
      seen[std::size_t(x + 3)]++;
    }
    for (int c : seen) CHECK(c > 100);
    tg::manual_seed(11);
    CHECK(vec(tg::randint(-3, 7, {2000}, TensorOptions(tg::int64, dev))) == rv);
    CHECK(tg::randint(0, 5, {3}, TensorOptions(tg::int32, dev)).dtype() == tg::int32);
    CHECK_THROWS_AS(tg::rand({2}, TensorOptions(tg::int32, dev)), tg::dtype_error);
    CHECK_THROWS_AS(tg::randint(3, 3, {2}, TensorOptions(tg::int32, dev)), tg::shape_error);
  });
  // the same seed gives the same values on every device (generated on the host)
  tg::manual_seed(3);
  std::vector<double> c = vec(tg::randn({16}, TensorOptions(tg::float32, "CPU")));
  tg::manual_seed(3);
  CHECK(vec(tg::randn({16}, TensorOptions(tg::float32, "INTERP"))) == c);
}

TEST_CASE("creation: from data, initializer lists, pointers and scalars") {
  for_each_device([](const std::string& dev) {
    Batch b(dev);
    TensorOptions on = on_dev(dev);
    b.add("1-level float", Tensor({1.5f, -2.f, 3.f}, on), values({3}, {1.5, -2, 3}), tg::float32);
    b.add("1-level int", Tensor({1, -2, 3}, on), values({3}, {1, -2, 3}), tg::int32);
    b.add("1-level double", Tensor({0.1, 0.2}, on), values({2}, {0.1, 0.2}), tg::float64);
    b.add("1-level bool", Tensor({true, false, true}, on), values({3}, {1, 0, 1}), tg::bool_);
    b.add("1-level int64", Tensor({std::int64_t(1) << 40, std::int64_t(-5)}, on),
          values({2}, {std::ldexp(1, 40), -5}), tg::int64);
    b.add("2-level", Tensor({{1.f, 2.f, 3.f}, {4.f, 5.f, 6.f}}, on),
          values({2, 3}, {1, 2, 3, 4, 5, 6}), tg::float32);
    b.add("3-level", Tensor({{{1, 2}, {3, 4}, {5, 6}}, {{7, 8}, {9, 10}, {11, 12}}}, on),
          build({2, 3, 2}, [](const Shape64& i) { return double(i[0] * 6 + i[1] * 2 + i[2] + 1); }),
          tg::int32);
    b.add("list with dtype", Tensor({1, 2, 3}, TensorOptions(tg::float64, dev)),
          values({3}, {1, 2, 3}), tg::float64);
    b.add("double list as float32", Tensor({0.1, 0.2}, TensorOptions(tg::float32, dev)),
          values({2}, {double(0.1f), double(0.2f)}), tg::float32);
    std::vector<float> data = {1, 2, 3, 4, 5, 6};
    b.add("vector, shape", Tensor::from_data(data, {3, 2}, on), values({3, 2}, {1, 2, 3, 4, 5, 6}),
          tg::float32);
    b.add("vector, 1-D", Tensor::from_data(data, {}, on), values({6}, {1, 2, 3, 4, 5, 6}),
          tg::float32);
    const std::int32_t raw[] = {9, 8, 7, 6};
    b.add("pointer", Tensor::from_data(raw, {2, 2}, on), values({2, 2}, {9, 8, 7, 6}), tg::int32);
    b.add("pointer, first 3", Tensor::from_data(raw + 1, {3}, TensorOptions(tg::int64, dev)),
          values({3}, {8, 7, 6}), tg::int64);
    b.add("tg::tensor", tg::tensor({2.f, 4.f}, on), values({2}, {2, 4}), tg::float32);
    b.add("tg::tensor(vector, shape)", tg::tensor(std::vector<double>{1, 2, 3, 4}, {2, 2}, on),
          values({2, 2}, {1, 2, 3, 4}), tg::float64);
    b.add("scalar float", Tensor::scalar(2.5f, on), scalar_ref(2.5), tg::float32);
    b.add("scalar int", Tensor::scalar(-3, on), scalar_ref(-3), tg::int32);
    b.add("scalar double as float32", Tensor::scalar(0.25, TensorOptions(tg::float32, dev)),
          scalar_ref(0.25), tg::float32);
    b.add("uint8 data", Tensor({std::uint8_t(0), std::uint8_t(200), std::uint8_t(255)}, on),
          values({3}, {0, 200, 255}), tg::uint8);
    b.add("half data",
          Tensor::from_data(std::vector<tg::half>{tg::half(1.5f), tg::half(-0.25f)}, {2}, on),
          values({2}, {1.5, -0.25}), tg::float16);
    b.add("half data as float32",
          Tensor::from_data(std::vector<tg::half>{tg::half(1.5f), tg::half(-0.25f)}, {2},
                            TensorOptions(tg::float32, dev)),
          values({2}, {1.5, -0.25}), tg::float32);
    b.add("int data as bfloat16", Tensor({3, -7, 300}, TensorOptions(tg::bfloat16, dev)),
          values({3}, {3, -7, 300}), tg::bfloat16);
    b.add("float data as uint8", Tensor({2.75f, 0.f, 255.f}, TensorOptions(tg::uint8, dev)),
          values({3}, {2, 0, 255}), tg::uint8);

    Tensor s = Tensor::scalar(4.0, on);
    CHECK(s.ndim() == 0);
    CHECK(s.numel() == 1);
    CHECK(s.shape().empty());
    CHECK(s.item<double>() == 4.0);
    CHECK(Tensor({1, 2, 3}, on).device() == dev);
    CHECK_THROWS_AS(Tensor({{1, 2}, {3}}, on), tg::shape_error);
    CHECK_THROWS_AS(Tensor::from_data(data, {4, 2}, on), tg::shape_error);
  });
}

// ============================================================================== elementwise ====

namespace {
struct UnaryCase {
  std::string name;
  std::function<Tensor(const Tensor&)> f;
  std::function<double(double)> ref;
  double lo, hi;
  bool loose = false; // transcendental: float32 with rtol 1e-4
  double atol = 0;    // extra absolute tolerance (approximations)
};
std::vector<UnaryCase> unary_cases() {
  using T = const Tensor&;
  return {
      {"neg", [](T x) { return -x; }, [](double x) { return -x; }, -3, 3},
      {"abs", [](T x) { return x.abs(); }, [](double x) { return std::fabs(x); }, -3, 3},
      {"sign", [](T x) { return x.sign(); }, ref_sign, -3, 3},
      {"exp", [](T x) { return x.exp(); }, [](double x) { return std::exp(x); }, -5, 5, true},
      {"exp2", [](T x) { return x.exp2(); }, [](double x) { return std::exp2(x); }, -5, 5, true},
      {"log", [](T x) { return x.log(); }, [](double x) { return std::log(x); }, 0.05, 6, true},
      {"log2", [](T x) { return x.log2(); }, [](double x) { return std::log2(x); }, 0.05, 6, true},
      {"sqrt", [](T x) { return x.sqrt(); }, [](double x) { return std::sqrt(x); }, 0, 6},
      {"rsqrt", [](T x) { return x.rsqrt(); }, [](double x) { return 1 / std::sqrt(x); }, 0.1, 6},
      {"reciprocal", [](T x) { return x.reciprocal(); }, [](double x) { return 1 / x; }, 0.2, 6},
      {"sin", [](T x) { return x.sin(); }, [](double x) { return std::sin(x); }, -4, 4, true},
      {"cos", [](T x) { return x.cos(); }, [](double x) { return std::cos(x); }, -4, 4, true},
      {"tan", [](T x) { return x.tan(); }, [](double x) { return std::tan(x); }, -1.2, 1.2, true},
      {"tanh", [](T x) { return x.tanh(); }, [](double x) { return std::tanh(x); }, -3, 3, true},
      {"sigmoid", [](T x) { return x.sigmoid(); }, ref_sigmoid, -6, 6, true},
      {"relu", [](T x) { return x.relu(); }, [](double x) { return x > 0 ? x : 0; }, -3, 3},
      {"leaky_relu", [](T x) { return x.leaky_relu(); },
       [](double x) { return x > 0 ? x : 0.01 * x; }, -3, 3},
      {"leaky_relu(0.2)", [](T x) { return x.leaky_relu(0.2); },
       [](double x) { return x > 0 ? x : 0.2 * x; }, -3, 3},
      {"gelu", [](T x) { return x.gelu(); }, ref_gelu, -4, 4, true, 1e-6},
      {"gelu tanh", [](T x) { return x.gelu("tanh"); }, ref_gelu_tanh, -4, 4, true},
      {"silu", [](T x) { return x.silu(); }, [](double x) { return x * ref_sigmoid(x); }, -5, 5,
       true},
      {"softplus", [](T x) { return x.softplus(); },
       [](double x) { return ref_softplus(x, 1, 20); }, -5, 5, true},
      {"softplus(2, 3)", [](T x) { return x.softplus(2, 3); },
       [](double x) { return ref_softplus(x, 2, 3); }, -4, 4, true},
      {"square", [](T x) { return x.square(); }, [](double x) { return x * x; }, -3, 3},
      {"floor", [](T x) { return x.floor(); }, [](double x) { return std::floor(x); }, -4, 4},
      {"ceil", [](T x) { return x.ceil(); }, [](double x) { return std::ceil(x); }, -4, 4},
      {"round", [](T x) { return x.round(); }, [](double x) { return std::nearbyint(x); }, -4, 4},
      {"trunc", [](T x) { return x.trunc(); }, [](double x) { return std::trunc(x); }, -4, 4},
      {"pow(3)", [](T x) { return x.pow(3.0); }, [](double x) { return x * x * x; }, -2, 2, true},
      {"pow(-1.5)", [](T x) { return x.pow(-1.5); }, [](double x) { return std::pow(x, -1.5); },
       0.2, 3, true},
      {"pow(2)", [](T x) { return x.pow(2.0); }, [](double x) { return x * x; }, -2, 2},
      {"pow(0.5)", [](T x) { return x.pow(0.5); }, [](double x) { return std::sqrt(x); }, 0, 3},
      {"clamp(-0.5, 0.7)", [](T x) { return x.clamp(-0.5, 0.7); },
       [](double x) { return std::clamp(x, -0.5, 0.7); }, -2, 2},
      {"clamp(max=0.3)", [](T x) { return x.clamp(std::nullopt, 0.3); },
       [](double x) { return std::min(x, 0.3); }, -2, 2},
      {"clamp(min=-0.2)", [](T x) { return x.clamp(-0.2, std::nullopt); },
       [](double x) { return std::max(x, -0.2); }, -2, 2},
  };
}
} // namespace

TEST_CASE("abs of a zero is +0 on every device, whichever its sign (1 / abs(x) is +inf)") {
  // A fuzz graph (seed 777, graph 2809) found 1 / abs(0) = -inf on VULKAN: abs canonicalized
  // max(x, -x) = -0 by adding +0, which lavapipe folds away.
  for_each_device([](const std::string& dev) {
    for (tg::DType t : {tg::float32, tg::float64}) {
      if (tg_test::skips(dev, t)) continue;
      CAPTURE(tg::dtype_name(t));
      Tensor z = Tensor::from_data(std::vector<double>{0, 0, 2, -4}, {4}).cast(t).to(dev);
      Tensor zeros = (z > 1.0).logical_and(z < 1.0).cast(t); // computed +0s, as a relu's
      for (const Tensor& x : {zeros, -zeros, z, -z}) {
        std::vector<double> r = x.abs().reciprocal().to_vector<double>();
        CHECK(r[0] == kInf);
        CHECK(r[1] == kInf);
        CHECK(r[2] == (x.to_vector<double>()[2] == 0 ? kInf : 0.5));
        CHECK(r[3] == (x.to_vector<double>()[3] == 0 ? kInf : 0.25));
      }
    }
  });
}

TEST_CASE("exp keeps subnormal results on every device (exp(-90) is 8.2e-40, not 0)") {
  // GLSL's exp2 gave 0 on lavapipe; the shader now carries the C kernels' polynomial. (WGSL lets
  // a device flush subnormal results: there 0 is right too.)
  for_each_device([](const std::string& dev) {
    Tensor x = Tensor::from_data(std::vector<float>{-90, -100, -103, -88, 0.5f, -104}, {6}).to(dev);
    std::vector<float> got = x.exp().to_vector<float>();
    std::vector<float> want = x.to("INTERP").exp().to_vector<float>();
    for (std::size_t i = 0; i < got.size(); ++i) {
      CAPTURE(i);
      const double e = std::exp(double(x.to_vector<float>()[i]));
      CHECK(std::abs(double(want[i]) - e) <= 1.5e-45 + 3e-5 * e); // x * log2(e) rounds: 1e-5
      std::int32_t a = std::bit_cast<std::int32_t>(got[i]),
                   b = std::bit_cast<std::int32_t>(want[i]);
      if (got[i] == 0 && want[i] < 0x1p-126f && tg_test::may_flush_subnormals(dev)) continue;
      if (i < 5) CHECK(got[i] > 0.0f);
      if (dev.rfind("CUDA", 0) == 0)
        CHECK(std::abs(a - b) <= 1); // CUDA's exp2f, not the polynomial
      else
        CHECK(a == b); // INTERP's bits (lavapipe's fma() rounds twice: it has an exact one)
    }
  });
}

/// sin and cos of T over every exponent against glibc's long double ones, within tol (GLSL and
/// WGSL define their sin on [-pi, pi] only: lavapipe's float32 sin(3e38) was -1, GLSL's float64
/// one inf; their kernels reduce the argument exactly first, decompose's sin_reduce).
template <class T> void check_sin_cos(double tol) {
  using Bits = std::conditional_t<sizeof(T) == 4, std::uint32_t, std::uint64_t>;
  std::vector<T> x = {T(0),
                      -T(0),
                      T(1e-30),
                      T(0.4999),
                      T(0.5),
                      T(0.785),
                      T(1.5707963267948966),
                      T(3.141592653589793),
                      T(12345.678),
                      T(1e4),
                      T(102939),
                      T(16777216),
                      T(1e22),
                      T(1e30),
                      T(-1e30),
                      T(3e38),
                      T(-3e38),
                      std::numeric_limits<T>::max()};
  if constexpr (sizeof(T) == 8) x.insert(x.end(), {T(1e300), T(-1e300), T(1e100)});
  std::mt19937_64 gen(7);
  for (int i = 0; i < 3000; ++i) { // random signs, exponents and significands
    T f = std::bit_cast<T>(Bits(gen()));
    if (std::isfinite(f)) x.push_back(f);
  }
  std::vector<bool> tiny(x.size(), false); // sin near a multiple of pi: relative error counts
  for (long k = 1; k < 20000000; k = k * 3 / 2 + 1) {
    x.push_back(T(double(k) * 1.5707963267948966));
    x.push_back(T(double(k) * 3.141592653589793));
    tiny.resize(x.size(), false);
    tiny.back() = true;
  }
  const std::int64_t n = std::int64_t(x.size());
  for_each_device([&](const std::string& dev) {
    if (tg_test::skips(dev, tg::dtype_of<T>)) return;
    Tensor t = Tensor::from_data(x, {n}).to(dev);
    std::vector<T> s = t.sin().template to_vector<T>(), c = t.cos().template to_vector<T>();
    int bad = 0;
    double worst_s = 0, worst_c = 0, worst_rel = 0;
    for (std::size_t i = 0; i < x.size(); ++i) {
      const long double es = std::sin((long double)x[i]), ec = std::cos((long double)x[i]);
      const double ds = double(std::abs(s[i] - es)), dc = double(std::abs(c[i] - ec));
      const double rel = tiny[i] && es != 0 ? ds / double(std::abs(es)) : 0;
      worst_s = std::max(worst_s, ds);
      worst_c = std::max(worst_c, dc);
      worst_rel = std::max(worst_rel, rel);
      // cos is 1 - 2 sin(x / 2)^2 everywhere: a few ulp of 1
      if ((ds > tol || dc > 2.5 * tol || rel > 1e-4) && bad++ < 4)
        FAIL_CHECK(dev << ": sin/cos(" << double(x[i]) << ") = " << double(s[i]) << ", "
                       << double(c[i]) << "; exact " << double(es) << ", " << double(ec));
    }
    CHECK(bad == 0);
    MESSAGE(dev << (sizeof(T) == 4 ? " float32" : " float64") << ": sin within " << worst_s
                << " (near multiples of pi " << worst_rel << " relative), cos within " << worst_c);
    const T inf = std::numeric_limits<T>::infinity();
    std::vector<T> special =
        Tensor::from_data(std::vector<T>{inf, -inf, std::numeric_limits<T>::quiet_NaN()}, {3})
            .to(dev)
            .sin()
            .template to_vector<T>();
    for (T v : special) CHECK(std::isnan(v));
  });
}

TEST_CASE("float32 sin and cos of every size on every device (sin(3e38) is 0.8749)") {
  check_sin_cos<float>(4e-7);
}

TEST_CASE("float64 sin and cos of every size on every device (sin(1e300) is -0.8178)") {
  check_sin_cos<double>(1e-15);
}

TEST_CASE("pow with an integer exponent is exact where the result is representable") {
  // A fuzz graph (seed 9001, graph 499) cast pow(3.0, 3) in float64 to int8: 26 on VULKAN, whose
  // pow was exp2(3 * log2(3)) = 26.999999999999996. x.pow(3), pow(-1) and pow(-2) are now products
  // and reciprocals, as PyTorch computes them, on every device; GLSL's pow multiplies by squaring
  // for integer exponents, as C's pow is exact there. CUDA's pow is the device library's (within
  // 2 ulp), not checked for exactness here.
  for_each_device([](const std::string& dev) {
    for (tg::DType t : {tg::float32, tg::float64}) {
      if (tg_test::skips(dev, t)) continue;
      CAPTURE(tg::dtype_name(t));
      Tensor x =
          Tensor::from_data(std::vector<double>{3, -3, 2, 5, 7, 10, 0.5, -2}, {8}).cast(t).to(dev);
      std::vector<double> cube = x.pow(3.0).to_vector<double>(),
                          inv = x.pow(-1.0).to_vector<double>(),
                          inv2 = x.pow(-2.0).to_vector<double>();
      CHECK(cube == std::vector<double>{27, -27, 8, 125, 343, 1000, 0.125, -8});
      CHECK(inv[2] == 0.5);
      CHECK(inv[6] == 2);
      CHECK(inv2[2] == 0.25);
      CHECK(inv2[7] == 0.25);
      CHECK(x.pow(3.0).cast(tg::int8).to_vector<double>()[0] == 27);
      if (dev.rfind("CUDA", 0) == 0) continue;
      Tensor e =
          Tensor::from_data(std::vector<double>{3, 3, 10, 4, 5, -3, 3, -3}, {8}).cast(t).to(dev);
      std::vector<double> got = x.pow(e).to_vector<double>();
      const std::vector<double> want = {27, -27, 1024, 625, 16807, 0.001, 0.125, -0.125};
      for (std::size_t i = 0; i < got.size(); ++i) {
        CAPTURE(i);
        // 10^-3 is 1 / 1000 rounded once in float64; float32 computes 1 / 1000.f
        CHECK(got[i] == (i == 5 && t == tg::float32 ? double(1.0f / 1000.0f) : want[i]));
      }
    }
  });
}

TEST_CASE("long reductions into few outputs: two kernels on a GPU, the same values everywhere") {
  // On an H200 a full sum of 2^26 floats took 8.5 ms in one work-group; lavapipe refused one of
  // 2^24. GPU devices now cut such a reduction in two (detail::gpu_reduce_split).
  using tg::detail::gpu_reduce_split;
  CHECK(gpu_reduce_split({1 << 26}, {0}).k == 4096);  // 4,096 groups of 16,384
  CHECK(gpu_reduce_split({4096, 4096}, {0}).k == 64); // 262,144 threads, 64 rows each
  CHECK(gpu_reduce_split({4096, 4096}, {1}).k == 0);  // 4,096 rows already
  // a prime length: padded to 4,096 x 4,097 with the reduction's identity
  CHECK(gpu_reduce_split({16777259}, {0}).k == 4096);
  CHECK(gpu_reduce_split({16777259}, {0}).pad == 4053);
  CHECK(gpu_reduce_split({100000, 3}, {0}).k == 6250);   // the largest k leaving 16 a thread
  CHECK(gpu_reduce_split({64, 2048}, {0, 1}).axis == 1); // the axis with the largest k
  CHECK(gpu_reduce_split({1 << 20, 1}, {0}).k == 1024);  // kept axes of 1: as a full sum
  // 2 (2^31 - 1), its divisors found quickly: 2 is too few, so padded by 2 to 4,096 x 2^20
  CHECK(gpu_reduce_split({(std::int64_t(1) << 32) - 2, 1}, {0}).k == 4096);
  CHECK(gpu_reduce_split({(std::int64_t(1) << 32) - 2, 1}, {0}).pad == 2);
  CHECK(gpu_reduce_split({1 << 20}, {0}).pad == 0);
  for_each_device([](const std::string& dev) {
    const bool gpu = dev != "CPU" && dev != "INTERP";
    auto kernels = [](const Tensor& r) { return tg::schedule({r}).lowered.size(); };
    const std::int64_t n = 1 << 17;
    std::vector<double> v(n), w(512 * 1000);
    for (std::size_t i = 0; i < v.size(); ++i) v[i] = double((i * 7919) % 1000) / 1000.0 - 0.25;
    for (std::size_t i = 0; i < w.size(); ++i) w[i] = double((i * 104729) % 997) / 997.0;
    Tensor x = Tensor::from_data(v, {n}).cast(tg::float32).to(dev);
    Tensor m = Tensor::from_data(w, {512, 1000}).cast(tg::float32).to(dev);
    double sum = 0, mx = -1, mn = 2, prod = 1;
    for (double e : v) sum += e, mx = std::max(mx, e), mn = std::min(mn, e);
    for (double e : v) prod *= 1 + double(float(e)) / 1000;
    CHECK(kernels(x.sum()) == (gpu ? 2u : 1u));
    CHECK(x.sum().item<double>() == doctest::Approx(sum).epsilon(1e-5));
    CHECK(x.sum(0, true).shape() == std::vector<std::int64_t>{1});
    CHECK(x.max().item<double>() == doctest::Approx(mx));
    CHECK(x.min().item<double>() == doctest::Approx(mn));
    Tensor ints = (x * 1000).cast(tg::int32);
    std::int64_t isum = 0;
    for (double e : v) isum += std::int64_t(std::trunc(float(float(e) * 1000.0f)));
    if (tg_test::computes_64bit(dev, [&] { ints.sum().realize(); }))
      CHECK(ints.sum().item<std::int64_t>() == isum); // integers: exactly
    if (tg_test::computes_64bit(dev, [&] { x.cast(tg::float64).prod().realize(); }))
      CHECK((x.cast(tg::float64) / 1000 + 1).prod().item<double>() ==
            doctest::Approx(prod).epsilon(1e-9));
    // over a kept last axis: columns, in two kernels of 32 row blocks (of 16 rows)
    CHECK(kernels(m.sum(0)) == (gpu ? 2u : 1u));
    std::vector<double> cols = m.sum(0).to_vector<double>();
    REQUIRE(cols.size() == 1000u);
    for (std::size_t c = 0; c < 1000; c += 37) {
      double want = 0;
      for (std::size_t r = 0; r < 512; ++r) want += double(float(w[r * 1000 + c]));
      CHECK(cols[c] == doctest::Approx(want).epsilon(1e-5));
    }
    CHECK(m.sum().item<double>() == doctest::Approx(m.sum(1).sum().item<double>()).epsilon(1e-5));
    // gradients flow through both kernels
    Tensor g = x.detach().requires_grad_();
    (g.sum() * 2).backward();
    std::vector<float> grad = g.grad().to_vector<float>();
    CHECK(std::all_of(grad.begin(), grad.end(), [](float e) { return e == 2.0f; }));
    // a prime length (65,537): padded to 64 x 1,025 with each reduction's identity
    const std::int64_t p = 65537;
    Tensor xp = Tensor::from_data(std::vector<double>(v.begin(), v.begin() + p), {p})
                    .cast(tg::float32)
                    .to(dev);
    double psum = 0, pmax = -1, pmin = 2, pprod = 1;
    for (std::int64_t i = 0; i < p; ++i) {
      const double e = double(float(v[std::size_t(i)]));
      psum += e, pmax = std::max(pmax, e), pmin = std::min(pmin, e), pprod *= 1 + e / 1000;
    }
    CHECK(kernels(xp.sum()) == (gpu ? 2u : 1u));
    CHECK(xp.sum().item<double>() == doctest::Approx(psum).epsilon(1e-5));
    CHECK(xp.max().item<double>() == doctest::Approx(pmax));
    CHECK(xp.min().item<double>() == doctest::Approx(pmin));
    if (tg_test::computes_64bit(dev, [&] { xp.cast(tg::float64).prod().realize(); }))
      CHECK((xp.cast(tg::float64) / 1000 + 1).prod().item<double>() ==
            doctest::Approx(pprod).epsilon(1e-9));
    Tensor neg = (xp * 1000 - 2000).cast(tg::int32); // all below 0: padding by 0 would be the max
    const std::int64_t top = neg.max().item<std::int64_t>();
    CHECK(top < 0);
    CHECK(top == neg.to("CPU").max().item<std::int64_t>()); // (the CPU device does not split)
    Tensor gp = xp.detach().requires_grad_();
    (gp.sum() * 3).backward();
    std::vector<float> gpg = gp.grad().to_vector<float>();
    REQUIRE(gpg.size() == std::size_t(p));
    CHECK(std::all_of(gpg.begin(), gpg.end(), [](float e) { return e == 3.0f; }));
  });
}

TEST_CASE("results of one shape: one kernel with several outputs on every device") {
  // (schedule/merge_outputs.hpp) a product's pre-activation and activation, results of several
  // dtypes (8- and 16-bit ones are packed words on WEBGPU, stored with atomics), Adam's update
  for_each_device([](const std::string& dev) {
    auto launches = [](const std::function<void()>& f) {
      tg::reset_stats();
      f();
      return tg::stats().kernels_launched;
    };
    const std::int64_t M = 64, K = 40, N = 96; // 6,144 outputs: shared tiles on a GPU
    std::vector<double> av(std::size_t(M * K)), wv(std::size_t(K * N)), bv(std::size_t{N});
    for (std::size_t i = 0; i < av.size(); ++i) av[i] = double((i * 7919) % 211) / 211.0 - 0.5;
    for (std::size_t i = 0; i < wv.size(); ++i) wv[i] = double((i * 104729) % 97) / 97.0 - 0.5;
    for (std::size_t i = 0; i < bv.size(); ++i) bv[i] = double(i % 7) / 7.0 - 0.4;
    auto on_dev = [&](const std::vector<double>& v, tg::Shape s) {
      return Tensor::from_data(v, std::move(s)).cast(tg::float32).to(dev).realize();
    };
    Tensor a = on_dev(av, {M, K}), w = on_dev(wv, {K, N}), bias = on_dev(bv, {N});
    Tensor z = a.matmul(w) + bias, y = z.relu();
    // (TG_OPT=0 merges nothing; FuseOptions::merge_epilogues: GPUs only)
    const tg::Target target = tg::device(dev)->target();
    const bool merges = target.fuse.merge_outputs;
    const std::int64_t joint = merges && target.fuse.merge_epilogues ? 1 : 2;
    CHECK(launches([&] { tg::realize({z, y}); }) == joint);
    std::vector<float> zg = z.to_vector<float>(), yg = y.to_vector<float>();
    for (std::int64_t i = 0; i < M; ++i)
      for (std::int64_t j = 0; j < N; ++j) {
        double s = double(float(bv[std::size_t(j)]));
        for (std::int64_t k = 0; k < K; ++k)
          s +=
              double(float(av[std::size_t(i * K + k)])) * double(float(wv[std::size_t(k * N + j)]));
        const std::size_t at = std::size_t(i * N + j);
        CHECK(zg[at] == doctest::Approx(s).epsilon(1e-5));
        CHECK(yg[at] == std::max(zg[at], 0.0f));
      }
    Tensor twice = a * 2, half = a.cast(tg::float16), pos = a > 0, ints = (a * 100).cast(tg::int8);
    CHECK(launches([&] { tg::realize({twice, half, pos, ints}); }) == (merges ? 1 : 4));
    Tensor ac = a.to("CPU");
    auto same = [](const Tensor& got, const Tensor& want) {
      return (got.to("CPU").cast(tg::float32) - want.cast(tg::float32)).abs().max().item<float>();
    };
    CHECK(same(twice, ac * 2) == 0);
    CHECK(same(half, ac.cast(tg::float16)) == 0);
    CHECK(same(pos, ac > 0) == 0);
    CHECK(same(ints, (ac * 100).cast(tg::int8)) == 0);
    // Adam: every parameter's step counter and per-step scalars in one kernel, then each
    // parameter's moments and update in one; the parameters of the same steps on the CPU
    tg::manual_seed(3);
    tg::nn::Linear cpu_layer(K, 8), layer(K, 8, true, {tg::float32, dev});
    for (const auto& [name, p] : cpu_layer.named_parameters())
      layer.get_parameter(name) = p.to(dev).detach().realize().requires_grad_();
    tg::optim::Adam cpu_opt(cpu_layer.parameters(), {.lr = 0.01}),
        opt(layer.parameters(), {.lr = 0.01});
    for (int step = 0; step < 2; ++step) {
      cpu_opt.zero_grad();
      cpu_layer(ac).square().mean().backward();
      cpu_opt.step();
      opt.zero_grad();
      layer(a).square().mean().backward();
      for (const Tensor& p : layer.parameters()) p.grad().realize();
      const std::int64_t n = launches([&] { opt.step(); });
      if (merges) CHECK(n == 3);
    }
    for (const auto& [name, p] : cpu_layer.named_parameters())
      CHECK(same(layer.get_parameter(name), p) < 1e-6f);
  });
}

TEST_CASE("a row's reductions: one kernel writes each on every device") {
  // (schedule/merge_outputs.hpp) on a GPU, reductions over the same rows share a kernel:
  // siblings share one pass over the row, a reduction that reads another's result broadcast
  // along its row runs after it in the same kernel; products keep kernels of their own
  for_each_device([](const std::string& dev) {
    auto launches = [](const std::function<void()>& f) {
      tg::reset_stats();
      f();
      return tg::stats().kernels_launched;
    };
    const tg::Target target = tg::device(dev)->target();
    const bool merges = target.fuse.merge_outputs && target.fuse.merge_reductions; // (GPUs)
    // few long rows (a GPU's work-group shares one; on the CPU, vector partial sums where the
    // row length allows) and many short ones (one thread a row)
    for (const auto& [R, C] :
         {std::pair<std::int64_t, std::int64_t>{6, 3000}, {4, 4096}, {500, 37}}) {
      CAPTURE(R);
      std::vector<double> xv(std::size_t(R * C));
      for (std::size_t i = 0; i < xv.size(); ++i) xv[i] = double((i * 7919) % 1013) / 101.3 - 4;
      Tensor x = Tensor::from_data(xv, {R, C}).cast(tg::float32).to(dev).realize();
      const std::size_t rows = std::size_t(R);
      std::vector<double> mx(rows, -kInf), sum(rows, 0), mean(rows), var(rows, 0), esum(rows, 0);
      for (std::int64_t r = 0; r < R; ++r) {
        for (std::int64_t c = 0; c < C; ++c) {
          const double v = double(float(xv[std::size_t(r * C + c)]));
          mx[std::size_t(r)] = std::max(mx[std::size_t(r)], v);
          sum[std::size_t(r)] += v;
        }
        mean[std::size_t(r)] = sum[std::size_t(r)] / double(C);
        for (std::int64_t c = 0; c < C; ++c) {
          const double v = double(float(xv[std::size_t(r * C + c)]));
          var[std::size_t(r)] +=
              (v - mean[std::size_t(r)]) * (v - mean[std::size_t(r)]) / double(C);
          esum[std::size_t(r)] += std::exp(v - mx[std::size_t(r)]);
        }
      }
      Tensor m = x.max(1), s = x.sum(1);
      CHECK(launches([&] { tg::realize({m, s}); }) == (merges ? 1 : 2));
      Tensor mu = x.mean(1, true), d = x - mu, v = (d * d).mean(1, true);
      CHECK(launches([&] { tg::realize({mu, v}); }) == (merges ? 1 : 2));
      Tensor xm = x.max(1, true), e = (x - xm).exp().sum(1, true);
      CHECK(launches([&] { tg::realize({xm, e}); }) == (merges ? 1 : 2));
      // a softmax: its max and sum in one kernel (the CPU's row reductions: all in one)
      const std::int64_t softmax = target.fuse.row_reductions ? 1 : merges ? 2 : 3;
      Tensor sm = x.softmax(1);
      CHECK(launches([&] { sm.realize(); }) == softmax);
      std::vector<float> mg = m.to_vector<float>(), sg = s.to_vector<float>(),
                         mug = mu.to_vector<float>(), vg = v.to_vector<float>(),
                         xmg = xm.to_vector<float>(), eg = e.to_vector<float>(),
                         smg = sm.to_vector<float>();
      for (std::int64_t r = 0; r < R; ++r) {
        const std::size_t at = std::size_t(r);
        CHECK(mg[at] == float(mx[at]));
        CHECK(sg[at] == doctest::Approx(sum[at]).epsilon(1e-4).scale(double(C)));
        CHECK(mug[at] == doctest::Approx(mean[at]).epsilon(1e-4).scale(1));
        CHECK(vg[at] == doctest::Approx(var[at]).epsilon(1e-4));
        CHECK(xmg[at] == float(mx[at]));
        CHECK(eg[at] == doctest::Approx(esum[at]).epsilon(1e-4));
        const double first = std::exp(double(float(xv[std::size_t(r * C)])) - mx[at]) / esum[at];
        CHECK(smg[std::size_t(r * C)] == doctest::Approx(first).epsilon(1e-4));
      }
    }
    // two products of one operand: a kernel each (their loops are a register tile's)
    Tensor a = tg::randn({64, 48}).to(dev), w1 = tg::randn({48, 32}).to(dev),
           w2 = tg::randn({48, 32}).to(dev);
    tg::realize({a, w1, w2});
    Tensor p1 = a.matmul(w1), p2 = a.matmul(w2);
    CHECK(launches([&] { tg::realize({p1, p2}); }) == 2);
  });
}

TEST_CASE("elementwise: unary ops in float32 and float64, contiguous and non-contiguous") {
  for_each_device([](const std::string& dev) {
    Batch b(dev);
    std::vector<UnaryCase> cases = unary_cases();
    const auto& ls = layouts();
    for (std::size_t k = 0; k < cases.size(); ++k) {
      const UnaryCase& c = cases[k];
      for (tg::DType t : {tg::float32, tg::float64}) {
        // float32 contiguous and in a non-contiguous layout; float64 (the same index math) in one
        // of the two, alternating (fewer kernels to compile)
        for (const Layout* l : {&ls[0], &ls[1 + k % (ls.size() - 1)]}) {
          if (t == tg::float64 && (l == &ls[0]) != (k % 2 == 0)) continue;
          auto x_in = input(*l, unsigned(100 + k), t, dev, c.lo, c.hi);
          Tensor x = x_in.first;
          Ref rx = x_in.second;
          Tol tol = tol_for(t, c.loose);
          tol.atol = std::max(tol.atol, c.atol);
          b.add(c.name + " " + tg::dtype_name(t) + " " + l->name, c.f(x), map1(rx, c.ref), t, tol);
        }
      }
    }
  });
}

TEST_CASE("elementwise: unary ops on integers") {
  for_each_device([](const std::string& dev) {
    Batch b(dev);
    auto x_in = input(layouts()[2], 7, tg::int32, dev, -6, 7);
    Tensor x = x_in.first;
    Ref rx = x_in.second;
    auto add = [&](const std::string& name, const Tensor& r, std::function<double(double)> f,
                   tg::DType t = tg::int32) { b.add(name, r, map1(rx, f), t, tol_for(t, true)); };
    add("neg", -x, [](double v) { return -v; });
    add("abs", x.abs(), [](double v) { return std::fabs(v); });
    add("sign", x.sign(), ref_sign);
    add("square", x.square(), [](double v) { return v * v; });
    add("relu", x.relu(), [](double v) { return std::max(v, 0.0); });
    add("clamp", x.clamp(-3, 5), [](double v) { return std::clamp(v, -3.0, 5.0); });
    add("floor", x.floor(), [](double v) { return v; });
    add("ceil", x.ceil(), [](double v) { return v; });
    add("round", x.round(), [](double v) { return v; });
    add("trunc", x.trunc(), [](double v) { return v; });
    add("pow(2)", x.pow(2.0), [](double v) { return v * v; });
    // float math on integers gives float32
    // named: clang-format 14 and 19 disagree on a lambda that is not the last argument
    auto exp_ref = [](double v) { return std::exp(v); };
    auto sin_ref = [](double v) { return std::sin(v); };
    auto cube = [](double v) { return v * v * v; };
    auto negate = [](double v) { return -v; };
    auto fabs_ref = [](double v) { return std::fabs(v); };
    add("exp", x.exp(), exp_ref, tg::float32);
    add("sigmoid", x.sigmoid(), ref_sigmoid, tg::float32);
    add("sin", x.sin(), sin_ref, tg::float32);
    add(
        "abs then sqrt", x.abs().sqrt(), [](double v) { return std::sqrt(std::fabs(v)); },
        tg::float32);
    add(
        "pow(0.5) of abs", x.abs().pow(0.5), [](double v) { return std::sqrt(std::fabs(v)); },
        tg::float32);
    add("pow(3) of int", x.pow(3.0), cube, x.dtype()); // an integer power keeps the dtype
    add("int64 neg", -x.cast(tg::int64), negate, tg::int64);
    add("int8 abs", x.cast(tg::int8).abs(), fabs_ref, tg::int8);
  });
}

TEST_CASE("elementwise: rounding edge cases (round half to even)") {
  for_each_device([](const std::string& dev) {
    Batch b(dev);
    std::vector<double> v32 = {0.5,   1.5,         2.5,          3.5,     -0.5,     -1.5,
                               -2.5,  0.49999997f, -0.49999997f, 2.7,     -2.7,     0,
                               -4,    8388607.5,   -8388607.5,   8388609, -8388609, 1e10,
                               -1e10, 1.0000001f,  0.25,         -0.75};
    for (double& x : v32) x = double(float(x));
    std::vector<double> v64 = {0.5,
                               1.5,
                               2.5,
                               -2.5,
                               0.49999999999999994,
                               -0.49999999999999994,
                               4503599627370495.5,
                               4503599627370497.0,
                               -4503599627370497.0,
                               1e300,
                               2.7,
                               -0.3};
    for (tg::DType t : {tg::float32, tg::float64}) {
      Ref r = values({std::int64_t(t == tg::float32 ? v32.size() : v64.size())},
                     t == tg::float32 ? v32 : v64);
      Tensor x = make(r, t, dev);
      std::string n = tg::dtype_name(t);
      b.add("round " + n, x.round(), map1(r, [](double v) { return std::nearbyint(v); }), t,
            kExact);
      b.add("floor " + n, x.floor(), map1(r, [](double v) { return std::floor(v); }), t, kExact);
      b.add("ceil " + n, x.ceil(), map1(r, [](double v) { return std::ceil(v); }), t, kExact);
      b.add("trunc " + n, x.trunc(), map1(r, [](double v) { return std::trunc(v); }), t, kExact);
    }
  });
}

namespace {
struct BinaryCase {
  std::string name;
  std::function<Tensor(const Tensor&, const Tensor&)> f;
  std::function<double(double, double)> ref;
  bool to_float = false; // integer inputs give float32
};
std::vector<BinaryCase> binary_cases() {
  using T = const Tensor&;
  return {
      {"add", [](T a, T b) { return a + b; }, [](double a, double b) { return a + b; }},
      {"sub", [](T a, T b) { return a - b; }, [](double a, double b) { return a - b; }},
      {"mul", [](T a, T b) { return a * b; }, [](double a, double b) { return a * b; }},
      {"div", [](T a, T b) { return a / b; }, [](double a, double b) { return a / b; }, true},
      {"maximum", [](T a, T b) { return a.maximum(b); },
       [](double a, double b) { return std::max(a, b); }},
      {"minimum", [](T a, T b) { return tg::minimum(a, b); },
       [](double a, double b) { return std::min(a, b); }},
      {"pow", [](T a, T b) { return a.pow(b); }, [](double a, double b) { return std::pow(a, b); }},
  };
}
} // namespace

TEST_CASE("elementwise: binary ops with broadcasting and non-contiguous inputs") {
  for_each_device([](const std::string& dev) {
    Batch b(dev);
    std::vector<BinaryCase> cases = binary_cases();
    const auto& ls = layouts();
    for (std::size_t k = 0; k < cases.size(); ++k) {
      const BinaryCase& c = cases[k];
      const bool is_pow = c.name == "pow", is_div = c.name == "div";
      for (tg::DType t : {tg::float32, tg::float64, tg::int32}) {
        const bool ints = t == tg::int32;
        // operands: pow wants a positive float base (any integer base) and small exponents
        double alo = is_pow ? (ints ? -3 : 0.3) : -4, ahi = is_pow ? (ints ? 4 : 2.5) : 4;
        double blo = is_pow ? (ints ? 0 : -2) : -4, bhi = is_pow ? (ints ? 4 : 2) : 4;
        // divisors away from zero
        auto nonzero = [&](Ref r) {
          if (!is_div) return r;
          return map1(std::move(r), [&](double v) {
            return ints ? (v == 0 ? 3 : v) : (std::fabs(v) < 0.5 ? 1.5 : v);
          });
        };
        tg::DType rt = c.to_float && ints ? tg::float32 : t;
        Tol tol = tol_for(rt, is_pow);
        std::string n = c.name + " " + tg::dtype_name(t);
        unsigned seed = unsigned(1000 + 10 * k + unsigned(t));

        // a non-contiguous [3, 4] with a contiguous [3, 4]
        const Layout& la = ls[1 + (k + unsigned(t)) % (ls.size() - 1)];
        auto a_in = input(la, seed, t, dev, alo, ahi);
        Tensor a = a_in.first;
        Ref ra = a_in.second;
        Ref rb = nonzero(rnd({3, 4}, seed + 1, blo, bhi, t));
        b.add(n + " " + la.name + " with contiguous", c.f(a, make(rb, t, dev)), map2(ra, rb, c.ref),
              rt, tol);
        // broadcasting [3, 4] with [4], [3, 1] with [2, 1, 4], and a 0-d tensor
        Ref rrow = nonzero(rnd({4}, seed + 2, blo, bhi, t));
        b.add(n + " [3,4] with [4]", c.f(a, make(rrow, t, dev)), map2(ra, rrow, c.ref), rt, tol);
        Ref rcol = rnd({3, 1}, seed + 3, alo, ahi, t),
            r3 = nonzero(rnd({2, 1, 4}, seed + 4, blo, bhi, t));
        b.add(n + " [3,1] with [2,1,4]", c.f(make(rcol, t, dev), make(r3, t, dev)),
              map2(rcol, r3, c.ref), rt, tol);
        Ref r0 = nonzero(rnd({}, seed + 5, blo, bhi, t));
        b.add(n + " with 0-d", c.f(a, make(r0, t, dev)), map2(ra, r0, c.ref), rt, tol);
        // both operands non-contiguous: a transposed [4, 3] view broadcast against an expanded one
        const Layout& lb = ls[1 + (k + 2) % (ls.size() - 1)];
        auto bb_in = input(lb, seed + 6, t, dev, blo, bhi);
        Tensor bb = bb_in.first;
        Ref rbb = bb_in.second;
        if (is_div) { // keep the divisor away from zero
          bb = bb.abs() + 1;
          rbb = map1(rbb, [](double v) { return std::fabs(v) + 1; });
        }
        b.add(n + " " + la.name + " with " + lb.name, c.f(a, bb), map2(ra, rbb, c.ref), rt, tol);
      }
    }
  });
}

TEST_CASE("elementwise: scalar operands on either side") {
  for_each_device([](const std::string& dev) {
    Batch b(dev);
    for (tg::DType t : {tg::float32, tg::float64, tg::int32}) {
      auto x_in = input(layouts()[1], 77, t, dev, -5, 5);
      Tensor x = x_in.first;
      Ref rx = x_in.second;
      Ref nz = map1(rx, [](double v) { return v == 0 ? 1.0 : v; });
      Tensor xnz = where(x == 0, tg::ones_like(x), x);
      tg::DType ft = t == tg::int32 ? tg::float32 : t; // a float scalar makes an int tensor float32
      std::string n = tg::dtype_name(t);
      auto add = [&](const std::string& name, const Tensor& r, const Ref& want, tg::DType rt) {
        b.add(n + " " + name, r, want, rt, tol_for(rt));
      };
      auto m = [&](const Ref& r, auto f) { return map1(r, f); };
      add("x + 2.5", x + 2.5, m(rx, [](double v) { return v + 2.5; }), ft);
      add("2.5 + x", 2.5 + x, m(rx, [](double v) { return 2.5 + v; }), ft);
      add("x + 3", x + 3, m(rx, [](double v) { return v + 3; }), t);
      add("x - 1.25", x - 1.25, m(rx, [](double v) { return v - 1.25; }), ft);
      add("3 - x", 3 - x, m(rx, [](double v) { return 3 - v; }), t);
      add("x * -2", x * -2, m(rx, [](double v) { return v * -2; }), t);
      add("0.5f * x", 0.5f * x, m(rx, [](double v) { return 0.5 * v; }), ft);
      add("x / 4", x / 4, m(rx, [](double v) { return v / 4; }), ft);
      add("2 / x", 2 / xnz, m(nz, [](double v) { return 2 / v; }), ft);
      add("-1.5 / x", -1.5 / xnz, m(nz, [](double v) { return -1.5 / v; }), ft);
      add("x * true", x * true, rx, t);
      Tensor acc = x;
      acc += x;
      acc *= make(values({4}, {1, 2, 3, 4}), t, dev);
      acc -= make(scalar_ref(1), t, dev);
      add("compound assignment", acc,
          map2(rx, values({4}, {1, 2, 3, 4}), [](double v, double w) { return 2 * v * w - 1; }), t);
      Tensor q = x;
      q /= make(scalar_ref(2), t, dev);
      add("x /= 2", q, m(rx, [](double v) { return v / 2; }), ft);
    }
  });
}

TEST_CASE("elementwise: comparisons give bool tensors") {
  for_each_device([](const std::string& dev) {
    Batch b(dev);
    for (tg::DType t : {tg::float32, tg::float64, tg::int32}) {
      // small integers, so that equal elements occur
      auto x_in = input(layouts()[3 + unsigned(t) % 3], 5 + unsigned(t), t, dev, -2, 3);
      Tensor x = x_in.first;
      Ref rx = x_in.second;
      if (t != tg::int32) {
        rx = map1(rx, [](double v) { return std::floor(v); });
        x = x.floor();
      }
      Ref ry = rnd({4}, 8 + unsigned(t), -2, 3, tg::int32);
      Tensor y = make(ry, t, dev);
      std::string n = std::string(tg::dtype_name(t)) + " ";
      auto add = [&](const std::string& name, const Tensor& r, const Ref& want) {
        b.add(n + name, r, want, tg::bool_);
      };
      auto cmp = [&](auto f) {
        return map2(rx, ry, [&](double a, double c) { return f(a, c) ? 1.0 : 0.0; });
      };
      auto cmps = [&](auto f) { return map1(rx, [&](double a) { return f(a) ? 1.0 : 0.0; }); };
      add("==", x == y, cmp([](double a, double c) { return a == c; }));
      add("!=", x != y, cmp([](double a, double c) { return a != c; }));
      add("<", x < y, cmp([](double a, double c) { return a < c; }));
      add("<=", x <= y, cmp([](double a, double c) { return a <= c; }));
      add(">", x > y, cmp([](double a, double c) { return a > c; }));
      add(">=", x >= y, cmp([](double a, double c) { return a >= c; }));
      add("< 0.5", x < 0.5, cmps([](double a) { return a < 0.5; }));
      add("1 <= x", 1 <= x, cmps([](double a) { return 1 <= a; }));
      add("x == 1", x == 1, cmps([](double a) { return a == 1; }));
      add("x != 0", x != 0, cmps([](double a) { return a != 0; }));
      add("x > -1", x > -1, cmps([](double a) { return a > -1; }));
      add("0 >= x", 0 >= x, cmps([](double a) { return 0 >= a; }));
      add("x >= 1.5", x >= 1.5, cmps([](double a) { return a >= 1.5; }));
    }
    // float and int operands compare by value after promotion
    Tensor f = make(values({3}, {0.5, 1, 2}), tg::float32, dev),
           i = make(values({3}, {1, 1, 1}), tg::int32, dev);
    b.add("float32 < int32", f < i, values({3}, {1, 0, 0}), tg::bool_);
    b.add("float32 == int32", f == i, values({3}, {0, 1, 0}), tg::bool_);
    // NaN compares unequal to everything
    Tensor nan = make(values({3}, {kNaN, 1, kNaN}), tg::float32, dev);
    b.add("nan == nan", nan == nan, values({3}, {0, 1, 0}), tg::bool_);
    b.add("nan != 1", nan != 1, values({3}, {1, 0, 1}), tg::bool_);
    b.add("nan <= 1", nan <= 1, values({3}, {0, 1, 0}), tg::bool_);
    b.add("nan >= 1", nan >= 1, values({3}, {0, 1, 0}), tg::bool_);
  });
}

TEST_CASE("elementwise: logical ops, isnan, isinf") {
  for_each_device([](const std::string& dev) {
    Batch b(dev);
    Ref rp = rnd({3, 4}, 21, 0, 1, tg::bool_), rq = rnd({4}, 22, 0, 1, tg::bool_);
    Tensor p = make(rp, tg::bool_, dev), q = make(rq, tg::bool_, dev);
    auto lg = [](const Ref& a, const Ref& c, auto f) {
      return map2(a, c, [&](double x, double y) { return f(x != 0, y != 0) ? 1.0 : 0.0; });
    };
    b.add("logical_and", p.logical_and(q), lg(rp, rq, [](bool x, bool y) { return x && y; }),
          tg::bool_);
    b.add("logical_or", p.logical_or(q), lg(rp, rq, [](bool x, bool y) { return x || y; }),
          tg::bool_);
    b.add("logical_xor", p.logical_xor(q), lg(rp, rq, [](bool x, bool y) { return x != y; }),
          tg::bool_);
    b.add("logical_not", p.logical_not(), map1(rp, [](double x) { return x != 0 ? 0.0 : 1.0; }),
          tg::bool_);
    b.add("&&", p && q, lg(rp, rq, [](bool x, bool y) { return x && y; }), tg::bool_);
    b.add("||", p || q, lg(rp, rq, [](bool x, bool y) { return x || y; }), tg::bool_);
    b.add("!", !p, map1(rp, [](double x) { return x != 0 ? 0.0 : 1.0; }), tg::bool_);
    b.add("not of a flipped view", p.flip({1}).logical_not(),
          map1(r_flip(rp, {1}), [](double x) { return x != 0 ? 0.0 : 1.0; }), tg::bool_);
    // non-bool inputs: nonzero is true
    Ref rf = map1(rnd({3, 4}, 23, -2, 2, tg::int32), [](double v) { return v / 2; });
    Ref ri = rnd({3, 1}, 24, -1, 2, tg::int32);
    Tensor f = make(rf, tg::float32, dev), i = make(ri, tg::int32, dev);
    b.add("logical_and float, int", f.logical_and(i),
          lg(rf, ri, [](bool x, bool y) { return x && y; }), tg::bool_);
    b.add("logical_xor float, int", f.logical_xor(i),
          lg(rf, ri, [](bool x, bool y) { return x != y; }), tg::bool_);
    b.add("logical_not float", f.logical_not(),
          map1(rf, [](double x) { return x == 0 ? 1.0 : 0.0; }), tg::bool_);

    for (tg::DType t : {tg::float32, tg::float64}) {
      Ref rs = values({2, 4}, {kNaN, kInf, -kInf, 0, 1.5, -2, 3e38, -kNaN});
      Tensor s = make(rs, t, dev);
      std::string n = tg::dtype_name(t);
      b.add("isnan " + n, s.isnan(), map1(rs, [](double x) { return std::isnan(x) ? 1.0 : 0.0; }),
            tg::bool_);
      b.add("isinf " + n, s.isinf(), map1(rs, [](double x) { return std::isinf(x) ? 1.0 : 0.0; }),
            tg::bool_);
      b.add("isnan transposed " + n, s.T().isnan(),
            map1(r_permute(rs, {1, 0}), [](double x) { return std::isnan(x) ? 1.0 : 0.0; }),
            tg::bool_);
      // computed specials: 0/0, 1/0, log(-1), exp(1000)
      Tensor z = tg::zeros({2}, TensorOptions(t, dev));
      b.add("isnan(0/0) " + n, (z / z).isnan(), values({2}, {1, 1}), tg::bool_);
      b.add("isinf(1/0) " + n, (1.0 / z).isinf(), values({2}, {1, 1}), tg::bool_);
      b.add("1/0 " + n, 1.0 / z, values({2}, {kInf, kInf}), t);
      b.add("log(-1) " + n, (z - 1).log(), values({2}, {kNaN, kNaN}), t);
      b.add("log(0) " + n, z.log(), values({2}, {-kInf, -kInf}), t);
      b.add("exp(1000) " + n, (z + 1000).exp(), values({2}, {kInf, kInf}), t);
      b.add("sigmoid(+-1000) " + n, make(values({2}, {-1000, 1000}), t, dev).sigmoid(),
            values({2}, {0, 1}), t);
    }
    Tensor ints = make(values({3}, {1, 0, -1}), tg::int32, dev);
    b.add("isnan int", ints.isnan(), values({3}, {0, 0, 0}), tg::bool_);
    b.add("isinf int", ints.isinf(), values({3}, {0, 0, 0}), tg::bool_);
  });
}

TEST_CASE("elementwise: where, maximum, minimum, clamp (NaN propagates)") {
  for_each_device([](const std::string& dev) {
    Batch b(dev);
    Ref rc = rnd({3, 1}, 31, 0, 1, tg::bool_);
    Tensor cond = make(rc, tg::bool_, dev);
    for (tg::DType t : {tg::float32, tg::float64, tg::int32}) {
      auto x_in = input(layouts()[4], 32, t, dev, -5, 5);
      Tensor x = x_in.first;
      Ref rx = x_in.second;
      Ref ry = rnd({4}, 33, -5, 5, t);
      Tensor y = make(ry, t, dev);
      auto sel = [](double c, double a, double d) { return c != 0 ? a : d; };
      std::string n = tg::dtype_name(t);
      b.add("where " + n, where(cond, x, y), map3(rc, rx, ry, sel), t);
      b.add("where(cond, x, 0.5) " + n, where(cond, x, 0.5), map3(rc, rx, scalar_ref(0.5), sel),
            t == tg::int32 ? tg::float32 : t, tol_for(tg::float32));
      b.add("where(cond, 2, y) " + n, where(cond, 2, y), map3(rc, scalar_ref(2), ry, sel), t);
      b.add("where(x > y, x, y) " + n, where(x > y, x, y),
            map2(rx, ry, [](double a, double c) { return std::max(a, c); }), t);
      b.add("where with a float condition " + n, where(x, tg::ones_like(x), 0),
            map1(rx, [](double a) { return a != 0 ? 1.0 : 0.0; }), t);
    }
    // mixed dtypes promote
    Tensor i = make(values({2}, {1, 2}), tg::int32, dev),
           f = make(values({2}, {0.5, 1.5}), tg::float32, dev);
    b.add("where int32 / float32", where(make(values({2}, {1, 0}), tg::bool_, dev), i, f),
          values({2}, {1, 1.5}), tg::float32);

    for (tg::DType t : {tg::float32, tg::float64}) {
      Tensor a = make(values({4}, {kNaN, 1, 2, kNaN}), t, dev),
             c = make(values({4}, {0, kNaN, 1, kNaN}), t, dev);
      std::string n = tg::dtype_name(t);
      b.add("maximum NaN " + n, a.maximum(c), values({4}, {kNaN, kNaN, 2, kNaN}), t);
      b.add("minimum NaN " + n, a.minimum(c), values({4}, {kNaN, kNaN, 1, kNaN}), t);
      b.add("clamp NaN " + n, a.clamp(0, 1.5), values({4}, {kNaN, 1, 1.5, kNaN}), t);
      b.add("relu NaN " + n, a.relu(), values({4}, {kNaN, 1, 2, kNaN}), t);
    }
    // integers of other widths
    Tensor u = make(values({4}, {0, 7, 200, 255}), tg::uint8, dev),
           v = make(values({4}, {3, 3, 250, 1}), tg::uint8, dev);
    b.add("maximum uint8", u.maximum(v), values({4}, {3, 7, 250, 255}), tg::uint8);
    b.add("minimum uint8", u.minimum(v), values({4}, {0, 3, 200, 1}), tg::uint8);
    b.add("clamp uint8", u.clamp(5, 201), values({4}, {5, 7, 200, 201}), tg::uint8);
    Tensor l = make(values({3}, {-5e12, 3, 4e12}), tg::int64, dev);
    b.add("clamp int64", l.clamp(-1e12, 1e12), values({3}, {-1e12, 3, 1e12}), tg::int64);
    b.add("clamp int32 to a fractional range", // float32, as PyTorch's promotion
          make(values({4}, {-3, 0, 1, 4}), tg::int32, dev).clamp(-1.5, 2.5),
          values({4}, {-1.5, 0, 1, 2.5}), tg::float32);
    // pow corner cases, as C's pow (and PyTorch)
    for (tg::DType t : {tg::float32, tg::float64}) {
      Tensor base = make(values({7}, {-2, -2, 0, 0, kNaN, 4, -8}), t, dev),
             ex = make(values({7}, {3, 2, 0, -1, 0, 0.5, 1.0 / 3}), t, dev);
      b.add(std::string("pow corner cases ") + tg::dtype_name(t), base.pow(ex),
            values({7}, {-8, 4, 1, kInf, 1, 2, kNaN}), t, tol_for(t, true));
      b.add(std::string("pow(x, 0.0) ") + tg::dtype_name(t), base.pow(0.0),
            values({7}, {1, 1, 1, 1, 1, 1, 1}), t);
    }
    // NaN is truthy
    Tensor nan = make(values({2}, {kNaN, 0}), tg::float32, dev);
    b.add("logical_not NaN", nan.logical_not(), values({2}, {0, 1}), tg::bool_);
    b.add("any NaN", nan.slice(0, 0, 1).any(), scalar_ref(1), tg::bool_);
    b.add("cast NaN to bool", nan.cast(tg::bool_), values({2}, {1, 0}), tg::bool_);
  });
}

// =============================================================================== reductions ====

namespace {
struct ReduceCase {
  std::string name;
  std::function<Tensor(const Tensor&, const std::vector<int>&, bool)> f;
  std::function<double(const std::vector<double>&)> ref;
  double lo, hi;
  bool loose = false;
};
double v_var(const std::vector<double>& b, double correction) {
  double m = v_sum(b) / double(b.size()), s = 0;
  for (double x : b) s += (x - m) * (x - m);
  return s / std::max(double(b.size()) - correction, 0.0);
}
std::vector<ReduceCase> reduce_cases() {
  using T = const Tensor&;
  using A = const std::vector<int>&;
  return {
      {"sum", [](T x, A a, bool k) { return x.sum(a, k); }, v_sum, -2, 2},
      {"mean", [](T x, A a, bool k) { return x.mean(a, k); },
       [](const std::vector<double>& b) { return v_sum(b) / double(b.size()); }, -2, 2},
      {"max", [](T x, A a, bool k) { return x.max(a, k); }, v_max, -2, 2},
      {"min", [](T x, A a, bool k) { return x.min(a, k); },
       [](const std::vector<double>& b) { return *std::min_element(b.begin(), b.end()); }, -2, 2},
      {"prod", [](T x, A a, bool k) { return x.prod(a, k); },
       [](const std::vector<double>& b) {
         return std::accumulate(b.begin(), b.end(), 1.0, std::multiplies<>());
       },
       0.6, 1.5},
      {"var", [](T x, A a, bool k) { return x.var(a, 1, k); },
       [](const std::vector<double>& b) { return v_var(b, 1); }, -2, 2},
      {"var(correction=0)", [](T x, A a, bool k) { return x.var(a, 0, k); },
       [](const std::vector<double>& b) { return v_var(b, 0); }, -2, 2},
      {"std", [](T x, A a, bool k) { return x.std(a, 1, k); },
       [](const std::vector<double>& b) { return std::sqrt(v_var(b, 1)); }, -2, 2},
      {"logsumexp", [](T x, A a, bool k) { return x.logsumexp(a, k); },
       [](const std::vector<double>& b) {
         double s = 0;
         for (double x : b) s += std::exp(x);
         return std::log(s);
       },
       -3, 3, true},
  };
}
} // namespace

TEST_CASE("reductions: over one axis, several axes, all, with keepdim") {
  for_each_device([](const std::string& dev) {
    Batch b(dev);
    const std::vector<std::pair<std::vector<int>, bool>> axes = {
        {{1}, false}, {{-1}, true}, {{0, 2}, false}, {{}, false}, {{2, 0, 1}, true}};
    std::vector<ReduceCase> cases = reduce_cases();
    for (std::size_t k = 0; k < cases.size(); ++k) {
      const ReduceCase& c = cases[k];
      for (tg::DType t : {tg::float32, tg::float64}) {
        Ref rx = rnd({3, 4, 5}, unsigned(200 + k), c.lo, c.hi, t);
        Tensor x = make(rx, t, dev);
        for (std::size_t v = 0; v < axes.size(); ++v) {
          if (t == tg::float64 && v % 2 == 1) continue; // float64: every other axes variant
          const auto& [ax, keep] = axes[v];
          std::string n = c.name + " " + tg::dtype_name(t) + " axes {";
          for (int a : ax) n += std::to_string(a) + ",";
          n += keep ? "} keepdim" : "}";
          b.add(n, c.f(x, ax, keep), r_reduce(rx, ax, keep, c.ref), t, tol_for(t, c.loose));
        }
      }
    }
    // the single-axis and no-axis overloads
    Ref rx = rnd({4, 6}, 250, -2, 2);
    Tensor x = make(rx, tg::float32, dev);
    b.add("sum()", x.sum(), r_reduce(rx, {}, false, v_sum), tg::float32, tol_for(tg::float32));
    b.add("sum(0)", x.sum(0), r_reduce(rx, {0}, false, v_sum), tg::float32, tol_for(tg::float32));
    b.add("sum(-1, keepdim)", x.sum(-1, true), r_reduce(rx, {1}, true, v_sum), tg::float32,
          tol_for(tg::float32));
    b.add("mean()", x.mean(),
          r_reduce(rx, {}, false,
                   [](const std::vector<double>& v) { return v_sum(v) / double(v.size()); }),
          tg::float32, tol_for(tg::float32));
    b.add("max(1)", x.max(1), r_reduce(rx, {1}, false, v_max), tg::float32);
    b.add("min()", x.min(), scalar_ref(*std::min_element(rx.v.begin(), rx.v.end())), tg::float32);
    b.add("prod(0, keepdim)", x.prod(0, true),
          r_reduce(rx, {0}, true,
                   [](const std::vector<double>& v) {
                     return std::accumulate(v.begin(), v.end(), 1.0, std::multiplies<>());
                   }),
          tg::float32, tol_for(tg::float32));
    b.add("var()", x.var(), scalar_ref(v_var(rx.v, 1)), tg::float32, tol_for(tg::float32));
    b.add("std({0}, correction 0)", x.std({0}, 0),
          r_reduce(rx, {0}, false,
                   [](const std::vector<double>& v) { return std::sqrt(v_var(v, 0)); }),
          tg::float32, tol_for(tg::float32));
    b.add("logsumexp(1)", x.logsumexp(1),
          r_reduce(rx, {1}, false,
                   [](const std::vector<double>& v) {
                     double s = 0;
                     for (double e : v) s += std::exp(e);
                     return std::log(s);
                   }),
          tg::float32, tol_for(tg::float32, true));
    // logsumexp is stable for large values and gives -inf for all -inf
    Tensor big = make(values({2, 2}, {1000, 1000, -1000, -kInf}), tg::float32, dev);
    b.add("logsumexp large", big.logsumexp(1), values({2}, {1000 + std::log(2.0), -1000}),
          tg::float32, tol_for(tg::float32));
    Tensor ninf = make(values({2}, {-kInf, -kInf}), tg::float32, dev);
    b.add("logsumexp -inf", ninf.logsumexp(0), scalar_ref(-kInf), tg::float32);
    // max / min propagate NaN, as PyTorch
    Tensor nan = make(values({2, 3}, {1, kNaN, 3, 4, 5, 6}), tg::float32, dev);
    b.add("max with NaN", nan.max(1), values({2}, {kNaN, 6}), tg::float32);
    b.add("min with NaN", nan.min(1), values({2}, {kNaN, 4}), tg::float32);
    b.add("sum of a 0-d tensor", Tensor::scalar(2.5f, TensorOptions(tg::float32, dev)).sum(),
          scalar_ref(2.5), tg::float32);
  });
}

TEST_CASE("reductions: integers, bools, argmax/argmin, any/all") {
  for_each_device([](const std::string& dev) {
    Batch b(dev);
    Ref ri = rnd({3, 4, 5}, 300, -50, 50, tg::int32);
    Tensor xi = make(ri, tg::int32, dev);
    auto prod = [](const std::vector<double>& v) {
      return std::accumulate(v.begin(), v.end(), 1.0, std::multiplies<>());
    };
    auto vmin = [](const std::vector<double>& v) { return *std::min_element(v.begin(), v.end()); };
    b.add("sum int32 -> int64", xi.sum(std::vector<int>{1}), r_reduce(ri, {1}, false, v_sum),
          tg::int64);
    b.add("sum int32 all", xi.sum(), r_reduce(ri, {}, false, v_sum), tg::int64);
    b.add("prod int32 -> int64", xi.prod(std::vector<int>{2}), r_reduce(ri, {2}, false, prod),
          tg::int64);
    b.add("max int32", xi.max({0, 2}, true), r_reduce(ri, {0, 2}, true, v_max), tg::int32);
    b.add("min int32", xi.min(std::vector<int>{1}), r_reduce(ri, {1}, false, vmin), tg::int32);
    b.add("min int32 all", xi.min(), r_reduce(ri, {}, false, vmin), tg::int32);
    Tensor u = make(values({2, 3}, {0, 255, 7, 200, 3, 100}), tg::uint8, dev);
    b.add("max uint8", u.max(1), values({2}, {255, 200}), tg::uint8);
    b.add("min uint8", u.min(1), values({2}, {0, 3}), tg::uint8);
    b.add("sum uint8 -> int64", u.sum(), scalar_ref(565), tg::int64);
    Tensor l = make(values({3}, {-4e15, 5e15, 1}), tg::int64, dev);
    b.add("min int64", l.min(), scalar_ref(-4e15), tg::int64);
    b.add("max int64", l.max(), scalar_ref(5e15), tg::int64);
    b.add("sum int64", l.sum(), scalar_ref(1e15 + 1), tg::int64);

    // argmax / argmin: the first index of the extreme (ties are common with small integers)
    auto argf = [](bool mx) {
      return [mx](const std::vector<double>& v) {
        std::size_t best = 0;
        for (std::size_t i = 1; i < v.size(); ++i)
          if (mx ? v[i] > v[best] : v[i] < v[best]) best = i;
        return double(best);
      };
    };
    for (tg::DType t : {tg::float32, tg::float64, tg::int32}) {
      Ref r = rnd({3, 4, 5}, 310 + unsigned(t), -3, 3, tg::int32);
      Tensor x = make(r, t, dev);
      std::string n = tg::dtype_name(t);
      b.add("argmax(1) " + n, x.argmax(1), r_reduce(r, {1}, false, argf(true)), tg::int64);
      b.add("argmax(-1, keepdim) " + n, x.argmax(-1, true), r_reduce(r, {2}, true, argf(true)),
            tg::int64);
      b.add("argmax() " + n, x.argmax(), r_reduce(r, {}, false, argf(true)), tg::int64);
      b.add("argmin(0) " + n, x.argmin(0), r_reduce(r, {0}, false, argf(false)), tg::int64);
      b.add("argmin() keepdim " + n, x.argmin(std::nullopt, true),
            r_reduce(r, {}, true, argf(false)), tg::int64);
    }
    Tensor nan = make(values({2, 3}, {1, kNaN, 3, 4, 6, 6}), tg::float32, dev);
    b.add("argmax with NaN and ties", nan.argmax(1), values({2}, {1, 1}), tg::int64);
    Tensor u8 = make(values({4}, {3, 250, 0, 250}), tg::uint8, dev);
    b.add("argmax uint8", u8.argmax(), scalar_ref(1), tg::int64);
    b.add("argmin uint8", u8.argmin(), scalar_ref(2), tg::int64);

    // any / all: on bools and on numbers (nonzero is true)
    Ref rb = values({3, 4}, {0, 0, 0, 0, 1, 0, 1, 0, 1, 1, 1, 1}); // rows: none, some, all true
    Tensor xb = make(rb, tg::bool_, dev);
    auto any = [](const std::vector<double>& v) {
      return std::any_of(v.begin(), v.end(), [](double e) { return e != 0; }) ? 1.0 : 0.0;
    };
    auto all = [](const std::vector<double>& v) {
      return std::all_of(v.begin(), v.end(), [](double e) { return e != 0; }) ? 1.0 : 0.0;
    };
    b.add("any(1)", xb.any(1), r_reduce(rb, {1}, false, any), tg::bool_);
    b.add("all(0, keepdim)", xb.all(0, true), r_reduce(rb, {0}, true, all), tg::bool_);
    b.add("any()", xb.any(), r_reduce(rb, {}, false, any), tg::bool_);
    b.add("all()", xb.all(), r_reduce(rb, {}, false, all), tg::bool_);
    Ref rf = map1(rnd({3, 4}, 321, -1, 3, tg::int32), [](double v) { return v > 0 ? v / 2 : 0.0; });
    Tensor xf = make(rf, tg::float32, dev);
    b.add("any float", xf.any(std::vector<int>{0}), r_reduce(rf, {0}, false, any), tg::bool_);
    b.add("all float", xf.all(std::vector<int>{1}), r_reduce(rf, {1}, false, all), tg::bool_);
    b.add("all int32", xi.all(std::vector<int>{2}), r_reduce(ri, {2}, false, all), tg::bool_);
    b.add("any of ones", tg::ones({2, 2}, TensorOptions(tg::bool_, dev)).any(), scalar_ref(1),
          tg::bool_);
    b.add("all of (x == x)", (xf == xf).all(), scalar_ref(1), tg::bool_);
    b.add("sum of bools", xb.sum(1), r_reduce(rb, {1}, false, v_sum), tg::int64);
    b.add("max of bools", xb.max(1), r_reduce(rb, {1}, false, v_max), tg::bool_);
  });
}

TEST_CASE("reductions: non-contiguous inputs") {
  for_each_device([](const std::string& dev) {
    Batch b(dev);
    const auto& ls = layouts();
    for (std::size_t k = 1; k < ls.size(); ++k) {
      for (tg::DType t : {tg::float32, tg::float64}) {
        auto x_in = input(ls[k], unsigned(400 + k), t, dev);
        Tensor x = x_in.first;
        Ref rx = x_in.second;
        std::string n = ls[k].name + " " + tg::dtype_name(t);
        b.add("sum(0) " + n, x.sum(0), r_reduce(rx, {0}, false, v_sum), t, tol_for(t));
        b.add("max(1) " + n, x.max(1, true), r_reduce(rx, {1}, true, v_max), t);
        if (t == tg::float32) {
          b.add("mean() " + n, x.mean(),
                r_reduce(rx, {}, false,
                         [](const std::vector<double>& v) { return v_sum(v) / double(v.size()); }),
                t, tol_for(t));
          b.add("argmax(1) " + n, x.argmax(1),
                r_reduce(rx, {1}, false,
                         [](const std::vector<double>& v) {
                           return double(std::max_element(v.begin(), v.end()) - v.begin());
                         }),
                tg::int64);
        }
      }
    }
    // an elementwise op feeding a reduction, on a transposed 3-D view
    Ref r3 = rnd({4, 3, 5}, 450);
    Tensor x3 = make(r3, tg::float32, dev).permute({2, 0, 1});
    Ref p3 = r_permute(r3, {2, 0, 1});
    b.add("sum((x*2+1).exp()) over a permuted view", (x3 * 2 + 1).exp().sum({0, 2}),
          r_reduce(map1(p3, [](double v) { return std::exp(v * 2 + 1); }), {0, 2}, false, v_sum),
          tg::float32, tol_for(tg::float32, true));
    b.add("max over a sliced 3-D view", x3.slice(1, 1, std::nullopt, 2).max(-1),
          r_reduce(r_slice(p3, 1, 1, std::nullopt, 2), {-1}, false, v_max), tg::float32);
  });
}

// ================================================================================= movement ====

TEST_CASE("movement: reshape, permute, transpose, T, expand, squeeze, unsqueeze, flatten") {
  for_each_device([](const std::string& dev) {
    Batch b(dev);
    for (tg::DType t : {tg::float32, tg::int32}) {
      Ref r = rnd({2, 3, 4}, 500 + unsigned(t), -9, 9, t);
      Tensor x = make(r, t, dev);
      std::string n = std::string(" ") + tg::dtype_name(t);
      b.add("reshape" + n, x.reshape({4, 6}), r_reshape(r, {4, 6}), t);
      b.add("reshape -1" + n, x.reshape({-1, 8}), r_reshape(r, {3, 8}), t);
      b.add("reshape -1 middle" + n, x.reshape({2, -1, 2}), r_reshape(r, {2, 6, 2}), t);
      b.add("view" + n, x.view({24}), r_reshape(r, {24}), t);
      b.add("permute" + n, x.permute({2, 0, 1}), r_permute(r, {2, 0, 1}), t);
      b.add("permute negative dims" + n, x.permute({-1, -3, -2}), r_permute(r, {2, 0, 1}), t);
      b.add("transpose" + n, x.transpose(0, 2), r_permute(r, {2, 1, 0}), t);
      b.add("transpose negative" + n, x.transpose(-1, 1), r_permute(r, {0, 2, 1}), t);
      b.add("T" + n, x.reshape({6, 4}).T(), r_permute(r_reshape(r, {6, 4}), {1, 0}), t);
      b.add("T of 1-D" + n, x.flatten().T(), r_reshape(r, {24}), t);
      b.add("reshape of a permuted view" + n, x.permute({1, 0, 2}).reshape({6, 4}),
            r_reshape(r_permute(r, {1, 0, 2}), {6, 4}), t);
      b.add("reshape of a transposed view, -1" + n, x.transpose(1, 2).reshape({2, -1}),
            r_reshape(r_permute(r, {0, 2, 1}), {2, 12}), t);
      b.add("permute of a reshape" + n, x.reshape({6, 4}).permute({1, 0}).reshape({2, 2, 6}),
            r_reshape(r_permute(r_reshape(r, {6, 4}), {1, 0}), {2, 2, 6}), t);
      Ref r1 = rnd({3, 1}, 510, -9, 9, t);
      Tensor x1 = make(r1, t, dev);
      b.add("expand" + n, x1.expand({2, 3, 4}), r_expand(r1, {2, 3, 4}), t);
      b.add("expand -1" + n, x1.expand({-1, 5}), r_expand(r1, {3, 5}), t);
      b.add("broadcast_to" + n, x1.broadcast_to({4, 3, 2}), r_expand(r1, {4, 3, 2}), t);
      b.add("expand of a transposed view" + n, x1.T().expand({3, 3}),
            r_expand(r_permute(r1, {1, 0}), {3, 3}), t);
      b.add("expand 0-d" + n, make(scalar_ref(5), t, dev).expand({2, 2}),
            values({2, 2}, {5, 5, 5, 5}), t);
      b.add("squeeze" + n, x1.reshape({1, 3, 1}).squeeze(), r_reshape(r1, {3}), t);
      b.add("squeeze(dim)" + n, x1.squeeze(1), r_reshape(r1, {3}), t);
      b.add("squeeze(dim) not 1" + n, x1.squeeze(0), r1, t);
      b.add("squeeze(-1)" + n, x1.squeeze(-1), r_reshape(r1, {3}), t);
      b.add("unsqueeze(0)" + n, x.unsqueeze(0), r_reshape(r, {1, 2, 3, 4}), t);
      b.add("unsqueeze(-1)" + n, x.unsqueeze(-1), r_reshape(r, {2, 3, 4, 1}), t);
      b.add("unsqueeze(2)" + n, x.unsqueeze(2), r_reshape(r, {2, 3, 1, 4}), t);
      b.add("flatten" + n, x.flatten(), r_reshape(r, {24}), t);
      b.add("flatten(1)" + n, x.flatten(1), r_reshape(r, {2, 12}), t);
      b.add("flatten(0, 1)" + n, x.flatten(0, 1), r_reshape(r, {6, 4}), t);
      b.add("flatten of a permuted view" + n, x.permute({2, 1, 0}).flatten(1),
            r_reshape(r_permute(r, {2, 1, 0}), {4, 6}), t);
      b.add("flatten 0-d" + n, make(scalar_ref(3), t, dev).flatten(), values({1}, {3}), t);
    }
    Tensor x = tg::zeros({2, 3, 4}, TensorOptions(tg::float32, dev));
    CHECK_THROWS_AS(x.reshape({5, 5}), tg::shape_error);
    CHECK_THROWS_AS(x.reshape({-1, -1}), tg::shape_error);
    CHECK_THROWS_AS(x.permute({0, 1}), tg::shape_error);
    CHECK_THROWS_AS(x.permute({0, 1, 1}), tg::shape_error);
    CHECK_THROWS_AS(x.expand({2, 5, 4}), tg::shape_error);
    CHECK_THROWS_AS(x.T(), tg::shape_error);
    CHECK_THROWS_AS(x.transpose(0, 3), tg::shape_error);
  });
}

namespace {
/// F.pad on the reference: pairs (before, after) from the last dim; negative values crop.
Ref r_pad(const Ref& a, const std::vector<std::int64_t>& pads, double value) {
  Shape64 s = a.shape, before(a.shape.size(), 0);
  for (std::size_t k = 0; k < pads.size() / 2; ++k) {
    std::size_t d = a.shape.size() - 1 - k;
    before[d] = pads[2 * k];
    s[d] += pads[2 * k] + pads[2 * k + 1];
  }
  return build(s, [&](const Shape64& i) {
    Shape64 j(i.size());
    for (std::size_t d = 0; d < i.size(); ++d) {
      j[d] = i[d] - before[d];
      if (j[d] < 0 || j[d] >= a.shape[d]) return value;
    }
    return a.at(j);
  });
}
} // namespace

TEST_CASE("movement: pad (F.pad order, constant value, negative pads crop)") {
  for_each_device([](const std::string& dev) {
    Batch b(dev);
    for (tg::DType t : {tg::float32, tg::float64, tg::int32}) {
      Ref r = rnd({2, 3, 4}, 520 + unsigned(t), -9, 9, t);
      Tensor x = make(r, t, dev);
      std::string n = std::string(" ") + tg::dtype_name(t);
      b.add("pad last dim" + n, x.pad({1, 2}), r_pad(r, {1, 2}, 0), t);
      b.add("pad two dims" + n, x.pad({0, 1, 2, 0}), r_pad(r, {0, 1, 2, 0}, 0), t);
      b.add("pad all dims, value 7" + n, x.pad({1, 1, 1, 0, 0, 2}, 7),
            r_pad(r, {1, 1, 1, 0, 0, 2}, 7), t);
      b.add("crop" + n, x.pad({-1, -2}), r_pad(r, {-1, -2}, 0), t);
      b.add("crop and grow, value -1.5" + n, x.pad({-1, 2, 1, -1}, -1.5),
            r_pad(r, {-1, 2, 1, -1}, t == tg::int32 ? -1 : -1.5), t);
      b.add("pad a permuted view" + n, x.permute({2, 0, 1}).pad({2, 0}, 3),
            r_pad(r_permute(r, {2, 0, 1}), {2, 0}, 3), t);
      b.add("pad a flipped view" + n, x.flip({2}).pad({1, 1}), r_pad(r_flip(r, {2}), {1, 1}, 0), t);
      b.add("pad then add" + n, x.pad({1, 0}) + x.pad({0, 1}),
            map2(r_pad(r, {1, 0}, 0), r_pad(r, {0, 1}, 0), std::plus<>()));
      b.add("pad then sum" + n, x.pad({2, 2}, 1).sum(-1),
            r_reduce(r_pad(r, {2, 2}, 1), {-1}, false, v_sum), t == tg::int32 ? tg::int64 : t,
            tol_for(t));
    }
    Tensor x = tg::zeros({2, 3}, TensorOptions(tg::float32, dev));
    CHECK_THROWS_AS(x.pad({1}), tg::shape_error);
    CHECK_THROWS_AS(x.pad({1, 1, 1, 1, 1, 1}), tg::shape_error);
    CHECK_THROWS_AS(x.pad({-2, -2}), tg::shape_error);
  });
}

TEST_CASE("movement: slice, index, negative indices and steps, flip") {
  for_each_device([](const std::string& dev) {
    Batch b(dev);
    for (tg::DType t : {tg::float32, tg::int32}) {
      Ref r = rnd({5, 7, 3}, 530 + unsigned(t), -9, 9, t);
      Tensor x = make(r, t, dev);
      std::string n = std::string(" ") + tg::dtype_name(t);
      const std::vector<std::tuple<int, Opt, Opt, std::int64_t>> slices = {
          {0, 1, 4, 1},
          {1, 2, std::nullopt, 1},
          {1, std::nullopt, 5, 2},
          {1, 1, 7, 3},
          {0, -3, -1, 1},
          {1, -2, std::nullopt, -1},
          {1, std::nullopt, std::nullopt, -1},
          {1, 5, 0, -2},
          {1, std::nullopt, std::nullopt, -3},
          {-1, 2, 0, -1},
          {0, 10, -10, -2},
          {0, -100, 100, 2},
          {1, 3, 3, 1},
          {2, 1, 2, 1},
          {1, 6, 2, 1}};
      for (const auto& [d, s, e, st] : slices) {
        std::string name = "slice(" + std::to_string(d) + ", " + (s ? std::to_string(*s) : "none") +
                           ", " + (e ? std::to_string(*e) : "none") + ", " + std::to_string(st) +
                           ")" + n;
        b.add(name, x.slice(d, s, e, st), r_slice(r, d, s, e, st), t);
      }
      b.add("slice of a slice" + n,
            x.slice(1, 1, std::nullopt, 2).slice(1, std::nullopt, std::nullopt, -1),
            r_slice(r_slice(r, 1, 1, std::nullopt, 2), 1, std::nullopt, std::nullopt, -1), t);
      b.add("slice of a permuted view" + n,
            x.permute({1, 2, 0}).slice(0, 6, 0, -2).slice(2, 1, 5, 3),
            r_slice(r_slice(r_permute(r, {1, 2, 0}), 0, 6, 0, -2), 2, 1, 5, 3), t);
      b.add("index int" + n, x.index({2}), r_select(r, 0, 2), t);
      b.add("operator[]" + n, x[-1], r_select(r, 0, -1), t);
      b.add("x[1][2]" + n, x[1][2], r_select(r_select(r, 0, 1), 0, 2), t);
      b.add("index {Slice, int}" + n, x.index({tg::Slice{1, std::nullopt}, 2}),
            r_select(r_slice(r, 0, 1, std::nullopt), 1, 2), t);
      b.add("index {int, Slice step -1, int}" + n,
            x.index({-2, tg::Slice{std::nullopt, std::nullopt, -1}, -1}),
            r_select(r_slice(r_select(r, 0, -2), 0, std::nullopt, std::nullopt, -1), 1, -1), t);
      b.add("index {Slice{}, Slice{-3, None, 2}}" + n,
            x.index({tg::Slice{}, tg::Slice{-3, std::nullopt, 2}}),
            r_slice(r, 1, -3, std::nullopt, 2), t);
      b.add("index all ints (0-d)" + n, x.index({4, 6, 2}), scalar_ref(r.at({4, 6, 2})), t);
      b.add("flip(0)" + n, x.flip({0}), r_flip(r, {0}), t);
      b.add("flip(-1, 1)" + n, x.flip({-1, 1}), r_flip(r, {2, 1}), t);
      b.add("flip all" + n, x.flip({0, 1, 2}), r_flip(r, {0, 1, 2}), t);
      b.add("flip twice" + n, x.flip({1}).flip({1}), r, t);
      b.add("flip of a slice" + n, x.slice(1, 1, 6, 2).flip({1}),
            r_flip(r_slice(r, 1, 1, 6, 2), {1}), t);
      b.add("flip of an expanded view" + n, x.slice(0, 0, 1).expand({3, 7, 3}).flip({0, 1}),
            r_flip(r_expand(r_slice(r, 0, 0, 1), {3, 7, 3}), {0, 1}), t);
    }
    Tensor x = tg::zeros({2, 3}, TensorOptions(tg::float32, dev));
    CHECK_THROWS_AS(x.index({2}), tg::index_error);
    CHECK_THROWS_AS(x.index({0, -4}), tg::index_error);
    CHECK_THROWS_AS(x.index({0, 0, 0}), tg::shape_error);
    CHECK_THROWS_AS(x.slice(0, 0, 1, 0), tg::shape_error);
  });
}

TEST_CASE("movement: cat, stack, split, chunk, repeat") {
  for_each_device([](const std::string& dev) {
    Batch b(dev);
    auto r_cat = [](const std::vector<Ref>& rs, int dim) {
      std::size_t d = std::size_t(dim < 0 ? dim + int(rs[0].shape.size()) : dim);
      Shape64 s = rs[0].shape;
      s[d] = 0;
      for (const Ref& r : rs) s[d] += r.shape[d];
      return build(s, [&](Shape64 i) {
        for (const Ref& r : rs) {
          if (i[d] < r.shape[d]) return r.at(i);
          i[d] -= r.shape[d];
        }
        return kNaN;
      });
    };
    for (tg::DType t : {tg::float32, tg::int32}) {
      Ref a = rnd({2, 3}, 540, -9, 9, t), c = rnd({2, 1}, 541, -9, 9, t),
          e = rnd({4, 3}, 542, -9, 9, t);
      Tensor ta = make(a, t, dev), tc = make(c, t, dev), te = make(e, t, dev);
      std::string n = std::string(" ") + tg::dtype_name(t);
      b.add("cat dim 1" + n, tg::cat({ta, tc, ta}, 1), r_cat({a, c, a}, 1), t);
      b.add("cat dim 0" + n, tg::cat({ta, te}), r_cat({a, e}, 0), t);
      b.add("cat dim -1" + n, tg::cat({tc, ta}, -1), r_cat({c, a}, -1), t);
      b.add("cat one tensor" + n, tg::cat({ta}, 0), a, t);
      b.add("cat non-contiguous" + n, tg::cat({te.T(), ta.flip({1}).T()}, 1),
            r_cat({r_permute(e, {1, 0}), r_permute(r_flip(a, {1}), {1, 0})}, 1), t);
      b.add("stack dim 0" + n, tg::stack({ta, ta * 2}),
            r_cat({r_reshape(a, {1, 2, 3}),
                   r_reshape(map1(a, [](double v) { return 2 * v; }), {1, 2, 3})},
                  0),
            t);
      b.add("stack dim 1" + n, tg::stack({ta, ta.flip({0})}, 1),
            r_cat({r_reshape(a, {2, 1, 3}), r_reshape(r_flip(a, {0}), {2, 1, 3})}, 1), t);
      b.add("stack dim -1" + n, tg::stack({ta, te.slice(0, 0, 2)}, -1),
            r_cat({r_reshape(a, {2, 3, 1}), r_reshape(r_slice(e, 0, 0, 2), {2, 3, 1})}, 2), t);
      Ref m = rnd({7, 4}, 543, -9, 9, t);
      Tensor tm = make(m, t, dev);
      std::vector<Tensor> parts = tm.split(3);
      REQUIRE(parts.size() == 3);
      b.add("split(3) [0]" + n, parts[0], r_slice(m, 0, 0, 3), t);
      b.add("split(3) [2]" + n, parts[2], r_slice(m, 0, 6, 7), t);
      std::vector<Tensor> ps = tm.split(std::vector<std::int64_t>{1, 3}, 1);
      REQUIRE(ps.size() == 2);
      b.add("split({1, 3}, 1) [0]" + n, ps[0], r_slice(m, 1, 0, 1), t);
      b.add("split({1, 3}, 1) [1]" + n, ps[1], r_slice(m, 1, 1, 4), t);
      std::vector<Tensor> ch = tm.chunk(3);
      REQUIRE(ch.size() == 3);
      CHECK(ch[0].shape() == Shape64{3, 4});
      CHECK(ch[2].shape() == Shape64{1, 4});
      b.add("chunk(3) [1]" + n, ch[1], r_slice(m, 0, 3, 6), t);
      std::vector<Tensor> ch2 = tm.chunk(2, -1);
      REQUIRE(ch2.size() == 2);
      b.add("chunk(2, -1) [1]" + n, ch2[1], r_slice(m, 1, 2, 4), t);
      b.add("split then cat" + n, tg::cat({parts[2], parts[0], parts[1]}),
            r_cat({r_slice(m, 0, 6, 7), r_slice(m, 0, 0, 3), r_slice(m, 0, 3, 6)}, 0), t);
      auto r_repeat = [](const Ref& x, const Shape64& reps) {
        Shape64 xs(reps.size() - x.shape.size(), 1);
        xs.insert(xs.end(), x.shape.begin(), x.shape.end());
        Shape64 s(reps.size());
        for (std::size_t i = 0; i < s.size(); ++i) s[i] = xs[i] * reps[i];
        Ref xr = r_reshape(x, xs);
        return build(s, [&](Shape64 i) {
          for (std::size_t k = 0; k < i.size(); ++k) i[k] %= xs[k];
          return xr.at(i);
        });
      };
      b.add("repeat {2, 3}" + n, ta.repeat({2, 3}), r_repeat(a, {2, 3}), t);
      b.add("repeat {2, 1, 2}" + n, ta.repeat({2, 1, 2}), r_repeat(a, {2, 1, 2}), t);
      b.add("repeat of a transposed view" + n, ta.T().repeat({1, 2}),
            r_repeat(r_permute(a, {1, 0}), {1, 2}), t);
    }
    // dtypes promote; bools concatenate
    Tensor i = make(values({2}, {1, 2}), tg::int32, dev),
           f = make(values({1}, {0.5}), tg::float32, dev);
    b.add("cat int32 with float32", tg::cat({i, f}), values({3}, {1, 2, 0.5}), tg::float32);
    Tensor p = make(values({2}, {1, 0}), tg::bool_, dev);
    b.add("cat bool", tg::cat({p, p.logical_not()}), values({4}, {1, 0, 0, 1}), tg::bool_);
    CHECK_THROWS_AS(tg::cat({i, tg::zeros({2, 2}, TensorOptions(tg::int32, dev))}),
                    tg::shape_error);
    CHECK_THROWS_AS(tg::stack({i, f}), tg::shape_error);
    CHECK_THROWS_AS(i.split(std::vector<std::int64_t>{1, 2}), tg::shape_error);
  });
}

TEST_CASE("movement: gather and index_select") {
  for_each_device([](const std::string& dev) {
    Batch b(dev);
    // int64 indices where the device has them (int32 ones are tested too)
    const tg::DType wide = tg_test::lacks_64bit(dev) ? tg::int32 : tg::int64;
    for (tg::DType t : {tg::float32, tg::float64, tg::int32}) {
      if (tg_test::skips(dev, t)) continue;
      Ref r = rnd({4, 5}, 550 + unsigned(t), -9, 9, t);
      Tensor x = make(r, t, dev);
      std::string n = std::string(" ") + tg::dtype_name(t);
      Ref i0 = values({2, 5}, {0, 3, -1, 2, 1, 3, 3, 0, -4, 2});
      b.add("gather dim 0" + n, x.gather(0, make(i0, wide, dev)),
            build({2, 5},
                  [&](const Shape64& i) {
                    std::int64_t k = std::int64_t(i0.at(i));
                    return r.at({k < 0 ? k + 4 : k, i[1]});
                  }),
            t);
      Ref i1 = values({3, 2}, {3, 0, -2, 1, 1, 1});
      b.add("gather dim 1, smaller index" + n, x.gather(1, make(i1, tg::int32, dev)),
            build({3, 2},
                  [&](const Shape64& i) {
                    std::int64_t k = std::int64_t(i1.at(i));
                    return r.at({i[0], k < 0 ? k + 5 : k});
                  }),
            t);
      b.add("gather -1 from a transposed view" + n,
            x.T().gather(-1, make(i1, wide, dev).slice(1, 0, 1)),
            build({3, 1},
                  [&](const Shape64& i) {
                    std::int64_t k = std::int64_t(i1.at({i[0], 0}));
                    return r.at({k < 0 ? k + 4 : k, i[0]});
                  }),
            t);
      Ref sel = values({4}, {3, 0, -1, 3});
      b.add("index_select dim 0" + n, x.index_select(0, make(sel, wide, dev)),
            build({4, 5},
                  [&](const Shape64& i) {
                    std::int64_t k = std::int64_t(sel.v[std::size_t(i[0])]);
                    return r.at({k < 0 ? k + 4 : k, i[1]});
                  }),
            t);
      b.add("index_select dim 1, int32 index" + n, x.index_select(1, make(sel, tg::int32, dev)),
            build({4, 4},
                  [&](const Shape64& i) {
                    std::int64_t k = std::int64_t(sel.v[std::size_t(i[1])]);
                    return r.at({i[0], k < 0 ? k + 5 : k});
                  }),
            t);
      auto flipped_pick = [&](const Shape64& i) { return r.at({i[0], i[1] == 0 ? 4 : 0}); };
      b.add("index_select of a flipped view" + n,
            x.flip({1}).index_select(1, make(values({2}, {0, 4}), wide, dev)),
            build({4, 2}, flipped_pick), t);
    }
    Tensor x = tg::zeros({2, 3}, TensorOptions(tg::float32, dev));
    CHECK_THROWS_AS(x.gather(1, make(values({2, 1}, {0, 3}), wide, dev)), tg::index_error);
    CHECK_THROWS_AS(x.index_select(0, make(values({1}, {-3}), wide, dev)), tg::index_error);
    CHECK_THROWS_AS(x.index_select(0, make(values({1}, {0}), tg::float32, dev)), tg::dtype_error);
  });
}

// ================================================================================ composite ====

namespace {
/// Batched matrix product on the reference, with NumPy broadcasting of the batch dims and
/// PyTorch's 1-D rules (a 1-D left operand is a row, a 1-D right operand a column, then dropped).
Ref r_matmul(Ref a, Ref b) {
  bool a1 = a.shape.size() == 1, b1 = b.shape.size() == 1;
  if (a1) a.shape.insert(a.shape.begin(), 1);
  if (b1) b.shape.push_back(1);
  Shape64 ab(a.shape.begin(), a.shape.end() - 2), bb(b.shape.begin(), b.shape.end() - 2);
  Shape64 s = bshape(ab, bb);
  std::int64_t n = a.shape[a.shape.size() - 2], k = a.shape.back(), m = b.shape.back();
  s.push_back(n);
  s.push_back(m);
  Ref r = build(s, [&](const Shape64& i) {
    Shape64 ia(i.begin(), i.end() - 2), ib = ia;
    double acc = 0;
    for (std::int64_t j = 0; j < k; ++j) {
      ia.push_back(i[i.size() - 2]), ia.push_back(j);
      ib.push_back(j), ib.push_back(i.back());
      acc += at_b(a, ia) * at_b(b, ib);
      ia.resize(ia.size() - 2), ib.resize(ib.size() - 2);
    }
    return acc;
  });
  if (a1) r.shape.erase(r.shape.end() - 2);
  if (b1) r.shape.pop_back();
  return r;
}
} // namespace

TEST_CASE("matmul and dot: 1-D, 2-D, batched with broadcasting, non-contiguous") {
  for_each_device([](const std::string& dev) {
    Batch b(dev);
    for (tg::DType t : {tg::float32, tg::float64, tg::int32}) {
      auto m = [&](const Shape64& s, unsigned seed) { return rnd(s, seed, -3, 3, t); };
      auto T = [&](const Ref& r) { return make(r, t, dev); };
      std::string n = std::string(" ") + tg::dtype_name(t);
      Ref a = m({3, 4}, 600), c = m({4, 5}, 601), v = m({4}, 602), w = m({4}, 603);
      b.add("2-D @ 2-D" + n, T(a).matmul(T(c)), r_matmul(a, c), t, tol_for(t));
      b.add("1-D @ 2-D" + n, T(v).matmul(T(c)), r_matmul(v, c), t, tol_for(t));
      b.add("2-D @ 1-D" + n, tg::matmul(T(a), T(v)), r_matmul(a, v), t, tol_for(t));
      b.add("1-D @ 1-D" + n, T(v).matmul(T(w)), r_matmul(v, w), t, tol_for(t));
      b.add("dot" + n, T(v).dot(T(w)), r_matmul(v, w), t, tol_for(t));
      Ref ba = m({2, 3, 4}, 604), bc = m({2, 4, 2}, 605);
      b.add("batched" + n, T(ba).matmul(T(bc)), r_matmul(ba, bc), t, tol_for(t));
      b.add("batched @ 2-D" + n, T(ba).matmul(T(c)), r_matmul(ba, c), t, tol_for(t));
      b.add("2-D @ batched" + n, T(a).matmul(T(bc)), r_matmul(a, bc), t, tol_for(t));
      b.add("batched @ 1-D" + n, T(ba).matmul(T(v)), r_matmul(ba, v), t, tol_for(t));
      b.add("1-D @ batched" + n, T(v).matmul(T(bc)), r_matmul(v, bc), t, tol_for(t));
      Ref p = m({2, 1, 3, 4}, 606), q = m({3, 4, 2}, 607);
      b.add("broadcast batch dims" + n, T(p).matmul(T(q)), r_matmul(p, q), t, tol_for(t));
      // non-contiguous operands
      Ref at = m({4, 3}, 608), ct = m({5, 4}, 609);
      b.add("A^T @ B^T" + n, T(at).T().matmul(T(ct).T()),
            r_matmul(r_permute(at, {1, 0}), r_permute(ct, {1, 0})), t, tol_for(t));
      Ref big = m({6, 9}, 610);
      b.add("sliced @ flipped" + n,
            T(big).slice(0, 1, 6, 2).slice(1, 0, 8, 2).matmul(T(c).flip({0, 1})),
            r_matmul(r_slice(r_slice(big, 0, 1, 6, 2), 1, 0, 8, 2), r_flip(c, {0, 1})), t,
            tol_for(t));
      Ref col = m({4, 1}, 611);
      b.add("expanded @ permuted batch" + n,
            T(col).expand({4, 3}).T().matmul(T(bc).permute({0, 1, 2})),
            r_matmul(r_permute(r_expand(col, {4, 3}), {1, 0}), bc), t, tol_for(t));
      b.add("permuted batch" + n, T(bc).permute({0, 2, 1}).matmul(T(ba).permute({0, 2, 1})),
            r_matmul(r_permute(bc, {0, 2, 1}), r_permute(ba, {0, 2, 1})), t, tol_for(t));
      b.add("matmul then add and relu" + n, (T(a).matmul(T(c)) + T(m({5}, 612))).relu(),
            map1(map2(r_matmul(a, c), m({5}, 612), std::plus<>()),
                 [](double x) { return std::max(x, 0.0); }),
            t, tol_for(t));
    }
    // mixed dtypes promote; shape errors are reported
    Tensor i = make(values({2, 2}, {1, 2, 3, 4}), tg::int32, dev),
           f = make(values({2}, {0.5, 1}), tg::float32, dev);
    b.add("int32 @ float32", i.matmul(f), values({2}, {2.5, 5.5}), tg::float32);
    CHECK_THROWS_AS(i.matmul(tg::zeros({3, 2}, TensorOptions(tg::int32, dev))), tg::shape_error);
    CHECK_THROWS_AS(i.dot(f), tg::shape_error);
    CHECK_THROWS_AS(Tensor::scalar(1, TensorOptions(tg::int32, dev)).matmul(i), tg::shape_error);
  });
}

// A 16-bit float's products accumulate in float32 and are rounded once; the CPU runs them as
// float32 vector kernels (its vector loads widen the elements), which must equal INTERP's
// programs bit for bit: sizes with and without tails, transposed operands (the copies of
// pack_panels and pack_rows), batches, an epilogue, row sums and maxima, and special values.
TEST_CASE("float16 and bfloat16 products and reductions accumulate in float32") {
  for_each_device([](const std::string& dev) {
    for (tg::DType t : {tg::float16, tg::bfloat16}) {
      CAPTURE(tg::dtype_name(t));
      const bool paired = t == tg::bfloat16 && tg::device("CPU")->target().bf16_pairs;
      auto in = [&](const Shape64& s, unsigned seed) { // exact 16-bit values, on INTERP
        return make(rnd(s, seed, -2, 2), t, "INTERP").realize();
      };
      auto ref = [](const Tensor& x) { return Ref{x.shape(), x.to_vector<double>()}; };
      std::vector<std::pair<std::string, std::function<Tensor(const std::vector<Tensor>&)>>> cases;
      std::vector<std::vector<Tensor>> args;
      std::vector<Ref> want;
      std::vector<Tol> tols;
      auto product = [&](std::string name, Tensor a, Tensor b, auto f, Ref r,
                         Tol tol = tol_for(tg::bfloat16)) {
        cases.push_back({std::move(name), f});
        args.push_back({a, b});
        want.push_back(std::move(r));
        tols.push_back(tol);
      };
      auto mm = [](const std::vector<Tensor>& x) { return x[0].matmul(x[1]); };
      Tensor a = in({37, 70}, 900), b = in({70, 53}, 901);
      product("tails", a, b, mm, r_matmul(ref(a), ref(b)));
      Tensor c = in({64, 256}, 902), d = in({256, 96}, 903);
      product("64 x 256 @ 256 x 96", c, d, mm, r_matmul(ref(c), ref(d)));
      Tensor at = in({256, 64}, 904), e = in({256, 48}, 905);
      product(
          "A^T", at, e, [](const std::vector<Tensor>& x) { return x[0].T().matmul(x[1]); },
          r_matmul(r_permute(ref(at), {1, 0}), ref(e)));
      Tensor bt = in({80, 256}, 906);
      product(
          "B^T", c, bt, [](const std::vector<Tensor>& x) { return x[0].matmul(x[1].T()); },
          r_matmul(ref(c), r_permute(ref(bt), {1, 0})));
      Tensor ba = in({3, 16, 64}, 907), bb = in({3, 64, 32}, 908);
      product("batched", ba, bb, mm, r_matmul(ref(ba), ref(bb)));
      Tensor bias = in({96}, 909);
      product(
          "linear then relu", c, d,
          [bias](const std::vector<Tensor>& x) {
            return (x[0].matmul(x[1]) + bias.to(x[0].device())).relu();
          },
          map1(map2(r_matmul(ref(c), ref(d)), ref(bias), std::plus<>()),
               [](double v) { return std::max(v, 0.0); }),
          // a GPU splits the reduction and rounds the product to 16 bits before the bias is
          // added (as PyTorch's two ops do): within a bfloat16 step of the products (< 32)
          Tol{1e-2, 0.125});
      Tensor rows = in({8, 4096}, 910);
      product(
          "row sums", rows, rows, [](const std::vector<Tensor>& x) { return x[0].sum(1); },
          r_reduce(ref(rows), {1}, false, v_sum));
      product(
          "row maxima", rows, rows, [](const std::vector<Tensor>& x) { return x[0].max(1); },
          r_reduce(ref(rows), {1}, false, v_max));
      // rows of inf, NaN, the largest finite values (sums past them overflow to inf) and the
      // smallest subnormals (results of subnormal size); the reference rounded to t
      const bool f16 = t == tg::float16;
      Ref sv = rnd({32, 32}, 911, -2, 2);
      for (std::size_t k = 0; k < 32; ++k)
        sv.v[5 * 32 + k] = (f16 ? 0x1p-24 : 0x1p-133) * double(k % 3);
      sv.v[0] = kInf, sv.v[33] = kNaN, sv.v[66] = f16 ? 65504 : 0x1p127, sv.v[99] = -sv.v[66];
      Tensor sp = make(sv, t, "INTERP").realize(), sb = in({32, 24}, 912);
      product("special values", sp, sb, mm, ref(make(r_matmul(ref(sp), ref(sb)), t, "INTERP")));

      Batch batch(dev);
      std::vector<Tensor> on_interp;
      for (std::size_t k = 0; k < cases.size(); ++k) {
        std::vector<Tensor> x;
        for (const Tensor& v : args[k]) x.push_back(v.to(dev));
        Tensor got = cases[k].second(x);
        batch.add(cases[k].first, got, want[k], t, tols[k]);
        if (dev != "CPU") continue;
        Tensor oracle = cases[k].second(args[k]);
        const auto bits = got.bitcast(tg::int16).to_vector<std::int16_t>(),
                   oracle_bits = oracle.bitcast(tg::int16).to_vector<std::int16_t>();
        if (!paired) {
          CHECK_MESSAGE(bits == oracle_bits,
                        cases[k].first << ": the CPU's kernel differs from INTERP's");
          continue;
        }
        // vdpbf16ps (pair_products.hpp) adds each pair k + 1 first and flushes subnormals: the
        // sums may round to the neighbouring bfloat16
        const auto g = got.cast(tg::float32).to_vector<float>(),
                   o = oracle.cast(tg::float32).to_vector<float>();
        std::size_t off = 0;
        for (std::size_t i = 0; i < g.size(); ++i)
          off +=
              !(bits[i] == oracle_bits[i] || std::fabs(g[i] - o[i]) <= std::fabs(o[i]) * 0x1p-7f ||
                std::fabs(g[i] - o[i]) < 0x1p-126f);
        CHECK_MESSAGE(off == 0, cases[k].first
                                    << ": " << off
                                    << " elements more than a bfloat16 step from INTERP's");
      }
    }
  });
}

TEST_CASE("softmax, log_softmax, cumsum") {
  for_each_device([](const std::string& dev) {
    Batch b(dev);
    auto r_softmax = [](const Ref& x, int dim, bool log) {
      std::size_t d = std::size_t(dim < 0 ? dim + int(x.shape.size()) : dim);
      return build(x.shape, [&](const Shape64& i) {
        double mx = -kInf, s = 0;
        Shape64 j = i;
        for (j[d] = 0; j[d] < x.shape[d]; ++j[d]) mx = std::max(mx, x.at(j));
        for (j[d] = 0; j[d] < x.shape[d]; ++j[d]) s += std::exp(x.at(j) - mx);
        return log ? x.at(i) - mx - std::log(s) : std::exp(x.at(i) - mx) / s;
      });
    };
    auto r_cumsum = [](const Ref& x, int dim) {
      std::size_t d = std::size_t(dim < 0 ? dim + int(x.shape.size()) : dim);
      return build(x.shape, [&](const Shape64& i) {
        double s = 0;
        Shape64 j = i;
        for (j[d] = 0; j[d] <= i[d]; ++j[d]) s += x.at(j);
        return s;
      });
    };
    for (tg::DType t : {tg::float32, tg::float64}) {
      Ref r = rnd({3, 4, 5}, 700 + unsigned(t), -4, 4, t);
      Tensor x = make(r, t, dev);
      std::string n = std::string(" ") + tg::dtype_name(t);
      for (int d : {0, 1, -1}) {
        std::string dn =
            std::to_string(d); // (not "(" + to_string(d): a GCC 12 -Wrestrict false positive)
        dn = " dim " + dn + n;
        b.add("softmax" + dn, x.softmax(d), r_softmax(r, d, false), t, tol_for(t, true));
        b.add("log_softmax" + dn, tg::log_softmax(x, d), r_softmax(r, d, true), t,
              tol_for(t, true));
        b.add("cumsum" + dn, x.cumsum(d), r_cumsum(r, d), t, tol_for(t));
      }
      b.add("softmax of a permuted view" + n, tg::softmax(x.permute({2, 0, 1}), 0),
            r_softmax(r_permute(r, {2, 0, 1}), 0, false), t, tol_for(t, true));
      b.add("cumsum of a flipped view" + n, x.flip({2}).cumsum(2), r_cumsum(r_flip(r, {2}), 2), t,
            tol_for(t));
      b.add("log_softmax of a sliced view" + n, x.slice(2, 4, std::nullopt, -2).log_softmax(-1),
            r_softmax(r_slice(r, 2, 4, std::nullopt, -2), -1, true), t, tol_for(t, true));
      // large logits stay finite
      Ref big = values({2, 3}, {1000, 1001, 1002, -1000, -1000, -1000});
      b.add("softmax large" + n, make(big, t, dev).softmax(1), r_softmax(big, 1, false), t,
            tol_for(t, true));
      b.add("log_softmax large" + n, make(big, t, dev).log_softmax(1), r_softmax(big, 1, true), t,
            tol_for(t, true));
    }
    Ref ri = rnd({4, 3}, 710, -9, 9, tg::int32);
    Tensor xi = make(ri, tg::int32, dev);
    b.add("cumsum int32 -> int64", xi.cumsum(0), r_cumsum(ri, 0), tg::int64);
    b.add("softmax int32 -> float32", xi.softmax(1), r_softmax(ri, 1, false), tg::float32,
          tol_for(tg::float32, true));
    b.add("cumsum 1-D", make(values({4}, {1, 2, 3, 4}), tg::float32, dev).cumsum(0),
          values({4}, {1, 3, 6, 10}), tg::float32);
  });
}

// ===================================================================== dtypes and properties ====

TEST_CASE("cast between dtypes, float16 and bfloat16 round trips") {
  for_each_device([](const std::string& dev) {
    Batch b(dev);
    Ref rf = values({8}, {-3.7, -0.5, 0, 0.5, 2.9, 100.2, -100.99, 127.5});
    Tensor f = make(rf, tg::float32, dev);
    auto trunc = [](double v) { return std::trunc(double(float(v))); };
    b.add("float32 -> int32 truncates", f.cast(tg::int32), map1(rf, trunc), tg::int32);
    b.add("float32 -> int64", f.cast(tg::int64), map1(rf, trunc), tg::int64);
    b.add("float32 -> int8", f.cast(tg::int8), map1(rf, trunc), tg::int8);
    b.add("float32 -> int16", f.cast(tg::int16), map1(rf, trunc), tg::int16);
    b.add("float32 -> float64", f.cast(tg::float64), f32(rf), tg::float64);
    b.add("float32 -> bool", f.cast(tg::bool_),
          map1(rf, [](double v) { return v != 0 ? 1.0 : 0.0; }), tg::bool_);
    Ref ru = values({4}, {0, 0.5, 2.9, 255.9});
    b.add("float32 -> uint8", make(ru, tg::float32, dev).cast(tg::uint8),
          values({4}, {0, 0, 2, 255}), tg::uint8);
    b.add("float64 -> float32 rounds",
          make(values({3}, {0.1, 1.0 / 3, -1e-3}), tg::float64, dev).cast(tg::float32),
          f32(values({3}, {0.1, 1.0 / 3, -1e-3})), tg::float32);
    Ref ri = values({6}, {-2, -1, 0, 1, 300, -200});
    Tensor i = make(ri, tg::int32, dev);
    b.add("int32 -> float32", i.cast(tg::float32), ri, tg::float32);
    b.add("int32 -> float64", i.cast(tg::float64), ri, tg::float64);
    b.add("int32 -> bool", i.cast(tg::bool_), values({6}, {1, 1, 0, 1, 1, 1}), tg::bool_);
    b.add("int32 -> int8 wraps", i.cast(tg::int8), values({6}, {-2, -1, 0, 1, 44, 56}), tg::int8);
    b.add("int32 -> uint8 wraps", i.cast(tg::uint8), values({6}, {254, 255, 0, 1, 44, 56}),
          tg::uint8);
    b.add("int32 -> int64", i.cast(tg::int64), ri, tg::int64);
    b.add("int64 -> int32", make(values({2}, {5e9, -7}), tg::int64, dev).cast(tg::int32),
          values({2}, {705032704, -7}), tg::int32);
    b.add("uint8 -> int32", make(values({2}, {200, 3}), tg::uint8, dev).cast(tg::int32),
          values({2}, {200, 3}), tg::int32);
    Tensor p = make(values({3}, {1, 0, 1}), tg::bool_, dev);
    b.add("bool -> float32", p.cast(tg::float32), values({3}, {1, 0, 1}), tg::float32);
    b.add("bool -> int32", p.cast(tg::int32), values({3}, {1, 0, 1}), tg::int32);
    b.add("cast of a permuted view", i.reshape({2, 3}).T().cast(tg::float64),
          r_permute(r_reshape(ri, {2, 3}), {1, 0}), tg::float64);

    // 16-bit floats: stored as 16 bits, computed in float32
    Ref rh = values({10}, {0.1, 1.0001, 65504, -2.5, 1e-5, 3.14159, 1.00048828125, 1.00146484375,
                           -7e-8, 1000.3});
    Ref rb = values({8}, {0.1, 1.00390625, 1.01171875, 3.14159, -1e30, 1e-40, 255.5, -0.3});
    Tensor h = make(rh, tg::float32, dev).cast(tg::float16),
           bf = make(rb, tg::float32, dev).cast(tg::bfloat16);
    b.add("float32 -> float16", h, map1(rh, to_f16), tg::float16, kExact);
    b.add("float16 -> float32", h.cast(tg::float32), map1(rh, to_f16), tg::float32, kExact);
    b.add("float32 -> float16 -> float64", h.cast(tg::float64), map1(rh, to_f16), tg::float64,
          kExact);
    b.add("float32 -> bfloat16", bf, map1(rb, to_bf16), tg::bfloat16, kExact);
    b.add("bfloat16 -> float32", bf.cast(tg::float32), map1(rb, to_bf16), tg::float32, kExact);
    b.add("float16 overflow -> inf",
          make(values({2}, {70000, -1e6}), tg::float32, dev).cast(tg::float16),
          values({2}, {kInf, -kInf}), tg::float16, kExact);
    b.add("float16 -> int32",
          make(values({3}, {2.75, -3.5, 100}), tg::float16, dev).cast(tg::int32),
          values({3}, {2, -3, 100}), tg::int32);
    b.add("int32 -> float16", i.cast(tg::float16), ri, tg::float16, kExact);
    b.add("float16 -> bfloat16", h.cast(tg::bfloat16), map1(map1(rh, to_f16), to_bf16),
          tg::bfloat16, kExact);
    // arithmetic in 16-bit types: the result is rounded back to 16 bits
    for (tg::DType t : {tg::float16, tg::bfloat16}) {
      auto rnd16 = t == tg::float16 ? to_f16 : to_bf16;
      Ref x = map1(rnd({3, 4}, 720, -4, 4), rnd16), y = map1(rnd({4}, 721, -4, 4), rnd16);
      Tensor tx = make(x, t, dev), ty = make(y, t, dev);
      std::string n = std::string(" ") + tg::dtype_name(t);
      b.add("add" + n, tx + ty,
            map1(map2(x, y, [](double u, double v) { return double(float(u) + float(v)); }), rnd16),
            t, kExact);
      b.add("mul" + n, tx * ty,
            map1(map2(x, y, [](double u, double v) { return double(float(u) * float(v)); }), rnd16),
            t, kExact);
      b.add("exp" + n, tx.exp(), map1(map1(x, [](double u) { return std::exp(u); }), rnd16), t,
            Tol{t == tg::float16 ? 2e-3 : 1.6e-2, 1e-3});
      b.add("sum" + n, tx.sum(1), map1(r_reduce(x, {1}, false, v_sum), rnd16), t,
            Tol{t == tg::float16 ? 2e-3 : 1.6e-2, 1e-2});
      b.add("max of a transposed view" + n, tx.T().max(0), r_reduce(x, {1}, false, v_max), t,
            kExact);
      b.add("with float32 -> float32" + n, tx + make(y, tg::float32, dev),
            map2(x, y, std::plus<>()), tg::float32, tol_for(tg::float32));
      b.add("times 0.5" + n, tx * 0.5, map1(x, [](double u) { return u * 0.5; }), t, kExact);
      auto less = [](double u, double v) { return u < v ? 1.0 : 0.0; };
      b.add("compare" + n, tx < ty, map2(x, y, less), tg::bool_);
    }
  });
}

/// Whether two arrays hold the same values bit for bit, NaNs of any payload counting as equal.
template <class T> std::string bit_differences(const std::vector<T>& a, const std::vector<T>& b) {
  std::string out;
  int n = 0;
  for (std::size_t k = 0; k < a.size(); ++k) {
    const bool nan = a[k] != a[k] && b[k] != b[k]; // (false for integers)
    if (nan || std::memcmp(&a[k], &b[k], sizeof(T)) == 0) continue;
    if (n++ < 4)
      out += " [" + std::to_string(k) + "] " + std::to_string(double(a[k])) + " vs " +
             std::to_string(double(b[k]));
  }
  return n ? std::to_string(n) + " differ:" + out : "";
}

// The conversions the pass list's decompose pass writes out as integer ops, against INTERP (which
// runs the ops' own semantics) bit for bit: every float16 and bfloat16 bit pattern, and float32
// and float64 values around every rounding and range boundary.
TEST_CASE("float16/bfloat16 codecs and float -> integer casts bit for bit (decompose)") {
  std::vector<std::uint16_t> bits(65536);
  for (std::size_t k = 0; k < bits.size(); ++k) bits[k] = std::uint16_t(k);
  std::vector<float> fs;
  for (int e = -27; e <= 17; ++e) // around each binade of float16 and its subnormals
    for (int k = 0; k < 64; ++k) {
      const float f = std::ldexp(1.0f + float(k) / 64, e);
      for (float g : {f, std::nextafter(f, 0.0f), std::nextafter(f, 1e30f)}) {
        fs.push_back(g);
        fs.push_back(-g);
      }
    }
  for (std::uint32_t m = 0; m < 8192; m += 7) // every rounding case of float16's mantissa
    for (std::uint32_t e : {100u, 103u, 112u, 113u, 127u, 142u, 143u}) {
      const std::uint32_t b = (e << 23) | (m << 1) | (m & 1u ? 0x1000u : 0u);
      fs.push_back(std::bit_cast<float>(b));
      fs.push_back(std::bit_cast<float>(b | 0x8000u));
    }
  for (double v :
       {0.0,           -0.0,          kInf,   -kInf,   kNaN,    -kNaN,        65504.0,
        65519.0,       65520.0,       1e-45,  5.96e-8, 2.98e-8, 3e38,         2147483648.0,
        -2147483648.0, -2147483904.0, 9.3e18, -9.3e18, 1.8e19,  4294967296.0, -1.0,
        -0.5,          255.5,         -129.0, 32768.0})
    fs.push_back(float(v));
  std::vector<double> ds(fs.begin(), fs.end());
  for (double v :
       {2147483647.5, -2147483648.5, -2147483649.0, 9223372036854775807.0, -9223372036854775808.0,
        18446744073709551615.0, 18446744073709551616.0, -0.999, 4294967295.9})
    ds.push_back(v);
  const std::int64_t nf = std::int64_t(fs.size()), nd = std::int64_t(ds.size());
  Tensor hi = Tensor::from_data(bits.data(), {65536}, TensorOptions(tg::uint16, "INTERP"));
  Tensor fi = Tensor::from_data(fs.data(), {nf}, TensorOptions(tg::float32, "INTERP"));
  Tensor di = Tensor::from_data(ds.data(), {nd}, TensorOptions(tg::float64, "INTERP"));
  for_each_device([&](const std::string& dev) {
    Tensor h = hi.to(dev), f = fi.to(dev), d = di.to(dev);
    auto same = [&](const char* what, const Tensor& got, const Tensor& want) {
      CAPTURE(what);
      std::string diff;
      switch (got.dtype()) {
      case tg::DType::Float32:
        diff = bit_differences(got.to_vector<float>(), want.to_vector<float>());
        break;
      case tg::DType::Float64:
        diff = bit_differences(got.to_vector<double>(), want.to_vector<double>());
        break;
      case tg::DType::UInt64:
        diff = bit_differences(got.to_vector<std::uint64_t>(), want.to_vector<std::uint64_t>());
        break;
      default: // every narrower integer fits in int64
        diff = bit_differences(got.to_vector<std::int64_t>(), want.to_vector<std::int64_t>());
      }
      CHECK_MESSAGE(diff.empty(), what << ": " << diff);
    };
    for (tg::DType half : {tg::float16, tg::bfloat16}) {
      const tg::DType other = half == tg::float16 ? tg::bfloat16 : tg::float16;
      CAPTURE(tg::dtype_name(half));
      same("decode", h.bitcast(half).cast(tg::float32), hi.bitcast(half).cast(tg::float32));
      same("bits round trip", h.bitcast(half).bitcast(tg::int16),
           hi.bitcast(half).bitcast(tg::int16));
      same("encode", f.cast(half).bitcast(tg::uint16), fi.cast(half).bitcast(tg::uint16));
      if (tg_test::computes_64bit(dev, [&] { d.cast(half).realize(); }))
        same("from float64", d.cast(half).bitcast(tg::uint16), di.cast(half).bitcast(tg::uint16));
      same("to the other 16-bit float", f.cast(half).cast(other).bitcast(tg::uint16),
           fi.cast(half).cast(other).bitcast(tg::uint16));
      same("to int32", h.bitcast(half).cast(tg::int32), hi.bitcast(half).cast(tg::int32));
      same("to uint8", h.bitcast(half).cast(tg::uint8), hi.bitcast(half).cast(tg::uint8));
    }
    for (tg::DType t : {tg::int8, tg::int16, tg::int32, tg::int64, tg::uint8, tg::uint16,
                        tg::uint32, tg::uint64}) {
      if (tg_test::skips(dev, t)) continue;
      CAPTURE(tg::dtype_name(t));
      same("float32 to integer", f.cast(t), fi.cast(t));
      if (tg_test::computes_64bit(dev, [&] { d.cast(t).realize(); }))
        same("float64 to integer", d.cast(t), di.cast(t));
    }
  });
}

// pow's special cases (C's, PyTorch's), which GLSL and WGSL leave undefined and decompose writes
// out: every pair of special and ordinary bases and exponents, as INTERP (glibc) computes them.
// Zero, infinite, NaN, +-1 and integer powers of integers below 2^24 (2^53) must match bit for bit;
// others within 16 units in the last place (squaring rounds once per step), plus |b log2|a||
// for the general case 2^(b log2|a|), whose error in the logarithm the product multiplies.
TEST_CASE("pow of every special base and exponent as C's pow (decompose)") {
  const std::vector<double> as = {0,    -0.0,  1,    -1,   2,   -2,   0.5, -0.5,  3,     -3,
                                  kInf, -kInf, kNaN, 1e-3, 1.5, -1.5, 7,   1e-30, -1e-3, 1e30},
                            bs = {0,   -0.0, 1,    -1,    2,    -2,       3,        -3,
                                  0.5, -0.5, kInf, -kInf, kNaN, 16777216, 16777218, 25,
                                  -25, 1e10, 2.5,  -1e10, 127,  1e-3,     -7,       0x1p53};
  std::vector<double> a, b;
  for (double x : as)
    for (double y : bs) {
      a.push_back(x);
      b.push_back(y);
    }
  const std::int64_t n = std::int64_t(a.size());
  for (tg::DType t : {tg::float32, tg::float64}) {
    const std::string dtype = tg::dtype_name(t);
    CAPTURE(dtype);
    Tensor ai = Tensor::from_data(a.data(), {n}, TensorOptions(tg::float64, "INTERP")).cast(t),
           bi = Tensor::from_data(b.data(), {n}, TensorOptions(tg::float64, "INTERP")).cast(t);
    const std::vector<double> want = ai.pow(bi).to_vector<double>();
    for_each_device([&](const std::string& dev) {
      if (tg_test::skips(dev, t)) return;
      const std::vector<double> got = ai.to(dev).pow(bi.to(dev)).to_vector<double>();
      const double ulp = t == tg::float32 ? 0x1p-23 : 0x1p-52;
      int bad = 0;
      for (std::size_t k = 0; k < got.size(); ++k) {
        const double w = want[k], g = got[k];
        const bool exact = w != w || w == 0 || std::isinf(w) || std::fabs(w) == 1 ||
                           (a[k] == std::trunc(a[k]) && b[k] == std::trunc(b[k]) && b[k] >= 0 &&
                            std::fabs(w) <= 2 / ulp);
        const double units = 16 + std::fabs(b[k] * std::log2(std::fabs(a[k])));
        const bool ok = exact ? (w != w ? g != g : std::memcmp(&g, &w, sizeof g) == 0)
                              : std::fabs(g - w) <= units * ulp * std::fabs(w);
        if (!ok && bad++ < 8)
          FAIL_CHECK(std::setprecision(17)
                     << "pow(" << a[k] << ", " << b[k] << ") = " << g << ", not " << w);
      }
      CHECK(bad == 0);
    });
  }
}

TEST_CASE("contiguous, realize, to_vector, item and properties") {
  for_each_device([](const std::string& dev) {
    Ref r = rnd({2, 3, 4}, 800);
    Tensor x = make(r, tg::float32, dev);
    CHECK(x.shape() == Shape64{2, 3, 4});
    CHECK(x.dtype() == tg::float32);
    CHECK(x.numel() == 24);
    CHECK(x.ndim() == 3);
    CHECK(x.size(-1) == 4);
    CHECK(x.size(1) == 3);
    CHECK(x.device() == dev);
    CHECK(x.is_realized());
    CHECK(x.defined());
    CHECK_FALSE(Tensor().defined());

    Tensor p = x.permute({2, 0, 1});
    CHECK(p.shape() == Shape64{4, 2, 3});
    CHECK(p.is_realized()); // a view of a buffer needs no kernel
    Tensor c = p.contiguous();
    CHECK_FALSE(c.is_realized());
    c.realize();
    CHECK(c.is_realized());
    CHECK(vec(c) == r_permute(r, {2, 0, 1}).v);
    CHECK(vec(p) == r_permute(r, {2, 0, 1}).v);
    CHECK(x.contiguous().is_realized()); // already a buffer: no copy

    Tensor y = (x * 2).sum(0);
    CHECK_FALSE(y.is_realized());
    CHECK(&y.realize() == &y);
    CHECK(y.is_realized());
    std::vector<float> yf = y.to_vector<float>();
    REQUIRE(yf.size() == 12);
    Ref ry = r_reduce(map1(r, [](double v) { return 2 * v; }), {0}, false, v_sum);
    for (std::size_t k = 0; k < yf.size(); ++k)
      CHECK(double(yf[k]) == doctest::Approx(ry.v[k]).epsilon(1e-5));

    Tensor n = make(values({2, 2}, {1, -2, 3, 4}), tg::int32, dev);
    CHECK(n.to_vector<int>() == std::vector<int>{1, -2, 3, 4});
    CHECK(n.to_vector<std::int64_t>() == std::vector<std::int64_t>{1, -2, 3, 4});
    CHECK(n.to_vector<float>() == std::vector<float>{1, -2, 3, 4});
    CHECK(n.T().to_vector<int>() == std::vector<int>{1, 3, -2, 4});
    CHECK((n > 0).to_vector<bool>() == std::vector<bool>{true, false, true, true});
    if (tg_test::computes_64bit(dev, [&] { n.sum().realize(); })) { // an int64 sum
      CHECK(n.sum().item<int>() == 6);
      CHECK(n.sum().item<double>() == 6.0);
    }
    CHECK(n[1][0].item<int>() == 3);
    CHECK(n.max().item<float>() == 4.0f);
    CHECK(make(values({1, 1}, {2.5}), tg::float32, dev).item<float>() == 2.5f);
    CHECK(x.mean().item<float>() == doctest::Approx(v_sum(r.v) / 24).epsilon(1e-5));
    CHECK(n.cast(tg::float16).to_vector<tg::half>()[1] == tg::half(-2.f));
    // any arithmetic type: the values cross in the library, converted as static_cast does (half
    // and bfloat16 through float; types no dtype matches through a 64-bit one)
    CHECK(n.to_vector<tg::bfloat16_t>()[3] == tg::bfloat16_t(4.f));
    CHECK(n.cast(tg::float16).to_vector<double>() == std::vector<double>{1, -2, 3, 4});
    CHECK(n.to_vector<char>() == std::vector<char>{1, -2, 3, 4});
    CHECK(n.to_vector<long double>() == std::vector<long double>{1, -2, 3, 4});
    CHECK(n.to_vector<std::uint8_t>()[3] == 4);
    CHECK(n.to_vector<bool>() == std::vector<bool>{true, true, true, true});
    CHECK_THROWS_AS(n.item<int>(), tg::shape_error);

    // realizing several tensors at once; a tensor used after its realize is not recomputed
    Tensor a = x + 1, d = a * 2;
    tg::realize({a, d});
    CHECK(a.is_realized());
    CHECK(d.is_realized());
    CHECK(vec(d.sum()) == vec((x * 2 + 2).sum()));
    CHECK(vec(a) == map1(r, [](double v) { return double(float(v) + 1.0f); }).v);
  });
}

TEST_CASE("printing like PyTorch") {
  TensorOptions cpu = on_dev("CPU");
  auto str = [](const Tensor& t) {
    std::ostringstream o;
    o << t;
    return o.str();
  };
  CHECK(str(Tensor({{1.f, 2.f}, {3.f, 4.f}}, cpu)) == "tensor([[1., 2.],\n        [3., 4.]])");
  CHECK(str(Tensor({1.5f, 2.f}, cpu)) == "tensor([1.5000, 2.0000])");
  CHECK(str(Tensor({1, 2, 3}, cpu)) == "tensor([1, 2, 3], dtype=int32)");
  CHECK(str(Tensor({-1.f, 2.f}, cpu)) == "tensor([-1.,  2.])");
  CHECK(str(Tensor({std::int64_t(5), std::int64_t(-12)}, cpu)) == "tensor([  5, -12])");
  CHECK(str(Tensor({true, false}, cpu)) == "tensor([ True, False])");
  CHECK(str(Tensor({0.5, 0.25}, cpu)) == "tensor([0.5000, 0.2500], dtype=float64)");
  CHECK(str(Tensor::scalar(3.5f, cpu)) == "tensor(3.5000)");
  CHECK(str(Tensor({{{1.f, 2.f}}, {{3.f, 4.f}}}, cpu)) ==
        "tensor([[[1., 2.]],\n\n        [[3., 4.]]])");
  CHECK(str(Tensor({{1.f, 2.f}, {3.f, 4.f}}, cpu).T()) == "tensor([[1., 3.],\n        [2., 4.]])");
  CHECK(str(Tensor({1.f, 2.f}, TensorOptions(tg::float32, "INTERP")) * 2) ==
        "tensor([2., 4.], device='INTERP')");
  CHECK(Tensor({1.5f}, cpu).to_string() == "tensor([1.5000])");
  // scientific notation when the nonzero magnitudes span more than 1000x, exceed 1e8 or go below
  // 1e-4
  CHECK(str(Tensor({1e-5f, 1.f}, cpu)) == "tensor([1.0000e-05, 1.0000e+00])");
  CHECK(str(Tensor({0.01f, 100.f}, cpu)) == "tensor([1.0000e-02, 1.0000e+02])");
  CHECK(str(Tensor({1.f, 2000.f}, cpu)) == "tensor([1.0000e+00, 2.0000e+03])");
  CHECK(str(Tensor({1e9f, 0.f}, cpu)) == "tensor([1.0000e+09, 0.0000e+00])");
  CHECK(str(Tensor({1.f, 1000.f, 0.f}, cpu)) == "tensor([   1., 1000.,    0.])");
  CHECK(str(Tensor({0.5f, 100.f}, cpu)) == "tensor([  0.5000, 100.0000])");
  CHECK(str(Tensor({kNaN, -kInf, 2.0}, cpu)) == "tensor([nan, -inf, 2.], dtype=float64)");
  CHECK(str(Tensor({float(kNaN), 1.5f}, cpu)) == "tensor([   nan, 1.5000])");
  // rows wrap at 80 columns; more than 1000 elements are summarized with the edge items
  CHECK(str(tg::arange(30, cpu)) ==
        "tensor([ 0,  1,  2,  3,  4,  5,  6,  7,  8,  9, 10, 11, 12, 13, 14, 15, 16, 17,\n"
        "        18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29])");
  CHECK(str(tg::arange(12, TensorOptions(tg::float32, "CPU")) / 8) ==
        "tensor([0.0000, 0.1250, 0.2500, 0.3750, 0.5000, 0.6250, 0.7500, 0.8750, 1.0000,\n"
        "        1.1250, 1.2500, 1.3750])");
  CHECK(str(tg::arange(2000, cpu)) == "tensor([   0,    1,    2,  ..., 1997, 1998, 1999])");
  CHECK(str(tg::arange(3000, cpu).reshape({1000, 3})) ==
        "tensor([[   0,    1,    2],\n        [   3,    4,    5],\n"
        "        [   6,    7,    8],\n        ...,\n"
        "        [2991, 2992, 2993],\n        [2994, 2995, 2996],\n"
        "        [2997, 2998, 2999]])");
}

TEST_CASE("dtype promotion follows PyTorch") {
  for_each_device([](const std::string& dev) {
    Batch b(dev);
    auto T = [&](std::vector<double> v, tg::DType t) {
      Shape64 s{std::int64_t(v.size())};
      return make(values(s, std::move(v)), t, dev);
    };
    Tensor i = T({7, -3}, tg::int32), j = T({2, 4}, tg::int32);
    b.add("int32 / int32 -> float32", i / j, values({2}, {3.5, -0.75}), tg::float32);
    b.add("int32 + 2.5 -> float32", i + 2.5, values({2}, {9.5, -0.5}), tg::float32);
    b.add("int32 + 3 -> int32", i + 3, values({2}, {10, 0}), tg::int32);
    b.add("int32 * int64 scalar -> int32", i * std::int64_t(2), values({2}, {14, -6}), tg::int32);
    b.add("sum int32 -> int64", i.sum(), scalar_ref(4), tg::int64);
    b.add("comparison -> bool", i < j, values({2}, {0, 1}), tg::bool_);
    b.add("uint8 + int8 -> int16", T({200, 100}, tg::uint8) + T({100, -100}, tg::int8),
          values({2}, {300, 0}), tg::int16);
    b.add("uint8 + uint8 stays uint8 (wraps)", T({200, 100}, tg::uint8) + T({100, 1}, tg::uint8),
          values({2}, {44, 101}), tg::uint8);
    b.add("int8 + int16 -> int16", T({100, -100}, tg::int8) + T({1000, 1}, tg::int16),
          values({2}, {1100, -99}), tg::int16);
    b.add("int32 + int64 -> int64", i + T({1, 2}, tg::int64), values({2}, {8, -1}), tg::int64);
    b.add("int32 + float32 -> float32", i + T({0.5, 0.5}, tg::float32), values({2}, {7.5, -2.5}),
          tg::float32);
    b.add("float32 + float64 -> float64", T({0.5, 1}, tg::float32) + T({0.25, 1}, tg::float64),
          values({2}, {0.75, 2}), tg::float64);
    b.add("float16 + float32 -> float32", T({0.5, 1}, tg::float16) + T({0.25, 1}, tg::float32),
          values({2}, {0.75, 2}), tg::float32);
    b.add("float16 + bfloat16 -> float32", T({0.5, 1}, tg::float16) + T({0.25, 1}, tg::bfloat16),
          values({2}, {0.75, 2}), tg::float32);
    b.add("int64 + float16 -> float16", T({3, 1}, tg::int64) + T({0.5, 1}, tg::float16),
          values({2}, {3.5, 2}), tg::float16);
    b.add("bool + int32 -> int32", T({1, 0}, tg::bool_) + i, values({2}, {8, -3}), tg::int32);
    b.add("bool * 2.5 -> float32", T({1, 0}, tg::bool_) * 2.5, values({2}, {2.5, 0}), tg::float32);
    b.add("bool + 1 -> int64", T({1, 0}, tg::bool_) + 1, values({2}, {2, 1}), tg::int64);
    b.add("float16 * 2.5 -> float16", T({1, 2}, tg::float16) * 2.5, values({2}, {2.5, 5}),
          tg::float16);
    b.add("float64 + 1.5 stays float64", T({0.1, 0.2}, tg::float64) + 1.5, values({2}, {1.6, 1.7}),
          tg::float64, tol_for(tg::float64));
    b.add("mean of float16 stays float16", T({1, 2}, tg::float16).mean(), scalar_ref(1.5),
          tg::float16);
    b.add("uint8 / uint8 -> float32", T({1, 200}, tg::uint8) / T({2, 8}, tg::uint8),
          values({2}, {0.5, 25}), tg::float32);
    b.add("sqrt int32 -> float32", T({4, 9}, tg::int32).sqrt(), values({2}, {2, 3}), tg::float32);
    b.add("where(bool, int32, float64) -> float64",
          where(T({1, 0}, tg::bool_), i, T({0.5, 0.5}, tg::float64)), values({2}, {7, 0.5}),
          tg::float64);
    b.add("maximum(int32, float32) -> float32", i.maximum(T({0.5, 0.5}, tg::float32)),
          values({2}, {7, 0.5}), tg::float32);
    b.add("argmax -> int64", T({1, 3}, tg::float32).argmax(), scalar_ref(1), tg::int64);
    b.add("argmax of a 0-d tensor", make(scalar_ref(3), tg::float32, dev).argmax(), scalar_ref(0),
          tg::int64);
    b.add("uint8 > int8 compares as int16", T({200, 1}, tg::uint8) > T({-1, 2}, tg::int8),
          values({2}, {1, 0}), tg::bool_);
    b.add("any -> bool", i.any(), scalar_ref(1), tg::bool_);
    CHECK_THROWS_AS(i.mean(), tg::dtype_error);
    CHECK_THROWS_AS(T({1, 0}, tg::bool_) - T({1, 0}, tg::bool_), tg::dtype_error);
    CHECK_THROWS_AS(-T({1, 0}, tg::bool_), tg::dtype_error);
    CHECK_THROWS_AS(i + tg::zeros({3}, TensorOptions(tg::int32, dev)), tg::shape_error);
    CHECK_THROWS_AS(i + T({1, 2}, tg::int32).to(dev == "CPU" ? "INTERP" : "CPU"), tg::device_error);
  });
}

// ========================================================== fusion, sizes and special shapes ====

TEST_CASE("views of computed (unrealized) tensors") {
  for_each_device([](const std::string& dev) {
    Batch b(dev);
    Ref r = rnd({3, 4}, 900), q = rnd({4, 3}, 901);
    Tensor x = make(r, tg::float32, dev), y = make(q, tg::float32, dev);
    auto ex1 = [](double v) { return std::exp(v) + 1; };
    Tensor e = x.exp() + 1; // never realized on its own: each view below fuses it
    Ref re = map1(r, ex1);
    const Tol tl = tol_for(tg::float32, true);
    b.add("pad of exp(x)+1", e.pad({1, 2, 1, 0}), r_pad(re, {1, 2, 1, 0}, 0), tg::float32, tl);
    b.add("pad of exp(x)+1, value 9", e.pad({0, 1}, 9), r_pad(re, {0, 1}, 9), tg::float32, tl);
    b.add("crop of exp(x)+1", e.pad({-1, 0, 0, -1}), r_pad(re, {-1, 0, 0, -1}, 0), tg::float32, tl);
    b.add("sum of a padded expression", e.pad({2, 2}).sum(1),
          r_reduce(r_pad(re, {2, 2}, 0), {1}, false, v_sum), tg::float32, tl);
    b.add("cat of expressions", tg::cat({x * 2, y.T() - 1, e}, 1),
          build({3, 12},
                [&](const Shape64& i) {
                  std::int64_t c = i[1];
                  return c < 4   ? 2 * r.at({i[0], c})
                         : c < 8 ? q.at({c - 4, i[0]}) - 1
                                 : ex1(r.at({i[0], c - 8}));
                }),
          tg::float32, tl);
    b.add("permute of an expression", (x * y.T()).T(),
          r_permute(map2(r, r_permute(q, {1, 0}), std::multiplies<>()), {1, 0}), tg::float32,
          tol_for(tg::float32));
    b.add("flip of an expression", e.flip({1}), r_flip(re, {1}), tg::float32, tl);
    b.add("strided slice of an expression", e.slice(1, 3, std::nullopt, -2),
          r_slice(re, 1, 3, std::nullopt, -2), tg::float32, tl);
    b.add("reshape of a permuted expression", (x + 1).T().reshape({2, 6}),
          r_reshape(r_permute(map1(r, [](double v) { return v + 1; }), {1, 0}), {2, 6}),
          tg::float32, tol_for(tg::float32));
    b.add("expand of a reduction", x.sum(1, true).expand({3, 5}),
          r_expand(r_reduce(r, {1}, true, v_sum), {3, 5}), tg::float32, tol_for(tg::float32));
    b.add("a reduction broadcast against a transposed input", y.T() - x.max(0),
          map2(r_permute(q, {1, 0}), r_reduce(r, {0}, false, v_max), std::minus<>()), tg::float32,
          tol_for(tg::float32));
    b.add("reduction of a reduction", x.exp().sum(1).max(0),
          r_reduce(r_reduce(re, {1}, false,
                            [](const std::vector<double>& v) {
                              double s = 0;
                              for (double z : v) s += z - 1;
                              return s;
                            }),
                   {0}, false, v_max),
          tg::float32, tl);
    b.add("x + x.T() + x.flip",
          (x.reshape({2, 6}).slice(1, 0, 2) +
           make(r, tg::float32, dev).reshape({6, 2}).slice(0, 1, 3).T() +
           x.reshape({2, 6}).flip({0, 1}).slice(1, 4, 6)),
          build({2, 2},
                [&](const Shape64& i) {
                  Ref a = r_reshape(r, {2, 6}), c = r_reshape(r, {6, 2});
                  return a.at({i[0], i[1]}) + c.at({i[1] + 1, i[0]}) + a.at({1 - i[0], 1 - i[1]});
                }),
          tg::float32, tol_for(tg::float32));
    b.add("a realized intermediate used twice", e.realize() * e.sum(),
          map1(re, [&](double v) { return v * v_sum(re.v); }), tg::float32, tl);
    b.add("matmul of expressions", (x * 2).matmul(y.relu().exp()),
          r_matmul(map1(r, [](double v) { return 2 * v; }),
                   map1(q, [](double v) { return std::exp(std::max(v, 0.0)); })),
          tg::float32, tl);
    Tensor big = make(rnd({2, 3, 4}, 902), tg::float32, dev);
    b.add("softmax of a padded, permuted expression",
          (big * 3).permute({2, 0, 1}).pad({1, 1}, -kInf).softmax(-1),
          build({4, 2, 5},
                [&](const Shape64& i) {
                  Ref rb =
                      r_pad(r_permute(map1(rnd({2, 3, 4}, 902), [](double v) { return 3 * v; }),
                                      {2, 0, 1}),
                            {1, 1}, -kInf);
                  double s = 0;
                  for (std::int64_t k = 0; k < 5; ++k) s += std::exp(rb.at({i[0], i[1], k}));
                  return std::exp(rb.at(i)) / s;
                }),
          tg::float32, tl);
  });
}

TEST_CASE("larger tensors (the CPU runtime splits them over threads)") {
  for_each_device([](const std::string& dev) {
    Batch b(dev);
    Ref r = rnd({130, 300}, 950), c = rnd({300}, 951);
    Tensor x = make(r, tg::float32, dev), col = make(c, tg::float32, dev);
    const Tol tl{1e-4, 1e-4};
    b.add("elementwise", (x * col + 1).relu(),
          map2(r, c, [](double u, double v) { return std::max(u * v + 1, 0.0); }), tg::float32, tl);
    b.add("transposed elementwise", x.T() * 2,
          map1(r_permute(r, {1, 0}), [](double v) { return 2 * v; }), tg::float32, tl);
    b.add("sum over rows", x.sum(0), r_reduce(r, {0}, false, v_sum), tg::float32, tl);
    b.add("sum over columns", x.sum(1), r_reduce(r, {1}, false, v_sum), tg::float32, tl);
    b.add("max of a transposed view", x.T().max(0), r_reduce(r, {1}, false, v_max), tg::float32);
    b.add("sum all", x.sum(), r_reduce(r, {}, false, v_sum), tg::float32, Tol{1e-4, 1e-3});
    b.add("softmax", x.softmax(1),
          build({130, 300},
                [&](const Shape64& i) {
                  double m = -kInf, s = 0;
                  for (std::int64_t k = 0; k < 300; ++k) m = std::max(m, r.at({i[0], k}));
                  for (std::int64_t k = 0; k < 300; ++k) s += std::exp(r.at({i[0], k}) - m);
                  return std::exp(r.at(i) - m) / s;
                }),
          tg::float32, tl);
    Ref a = rnd({70, 90}, 952), w = rnd({90, 60}, 953);
    b.add("matmul 70x90 @ 90x60", make(a, tg::float32, dev).matmul(make(w, tg::float32, dev)),
          r_matmul(a, w), tg::float32, tl);
    Ref ri = rnd({200, 200}, 954, -1000, 1000, tg::int32);
    Tensor xi = make(ri, tg::int32, dev);
    b.add("int32 sum", xi.sum(1), r_reduce(ri, {1}, false, v_sum), tg::int64);
    b.add("int32 argmax", xi.argmax(0),
          r_reduce(ri, {0}, false,
                   [](const std::vector<double>& v) {
                     return double(std::max_element(v.begin(), v.end()) - v.begin());
                   }),
          tg::int64);
  });
}

TEST_CASE("empty tensors") {
  for_each_device([](const std::string& dev) {
    Batch b(dev);
    Tensor e = tg::zeros({0, 3}, TensorOptions(tg::float32, dev));
    Tensor x = make(rnd({2, 3}, 960), tg::float32, dev);
    b.add("elementwise on empty", e * 2 + 1, Ref{{0, 3}, {}}, tg::float32);
    b.add("sum over an empty dim", e.sum(0), values({3}, {0, 0, 0}), tg::float32);
    b.add("prod over an empty dim", e.prod(0), values({3}, {1, 1, 1}), tg::float32);
    b.add("sum over a non-empty dim of an empty tensor", e.sum(1), Ref{{0}, {}}, tg::float32);
    b.add("any / all over an empty dim", tg::stack({e.any(0), e.all(0)}),
          values({2, 3}, {0, 0, 0, 1, 1, 1}), tg::bool_);
    b.add("cat with an empty piece", tg::cat({e, x}), r_reshape(rnd({2, 3}, 960), {2, 3}),
          tg::float32);
    b.add("empty slice", x.slice(1, 2, 2), Ref{{2, 0}, {}}, tg::float32);
    b.add("matmul with k = 0", tg::zeros({2, 0}, TensorOptions(tg::float32, dev)).matmul(e),
          values({2, 3}, std::vector<double>(6, 0)), tg::float32);
    CHECK(e.numel() == 0);
    CHECK(vec(e.T()).empty());
    CHECK_THROWS_AS(e.max(), tg::shape_error);
  });
}

TEST_CASE("chains of movement ops (views of views)") {
  for_each_device([](const std::string& dev) {
    Batch b(dev);
    Ref r = rnd({4, 6}, 970, -9, 9, tg::int32);
    Tensor x = make(r, tg::int32, dev);
    auto add = [&](const std::string& name, const Tensor& t, const Ref& want) {
      b.add(name, t, want, tg::int32);
      b.add(name + ", then * 3", t * 3, map1(want, [](double v) { return 3 * v; }), tg::int32);
    };
    Ref col = r_slice(r, 1, 0, 1);
    add("expand then reshape", x.slice(1, 0, 1).expand({4, 3}).reshape({12}),
        r_reshape(r_expand(col, {4, 3}), {12}));
    add("expand then reshape then permute", x.slice(1, 0, 1).expand({4, 6}).reshape({2, 12}).T(),
        r_permute(r_reshape(r_expand(col, {4, 6}), {2, 12}), {1, 0}));
    add("strided slice then reshape", x.slice(1, 1, std::nullopt, 2).reshape({2, 6}),
        r_reshape(r_slice(r, 1, 1, std::nullopt, 2), {2, 6}));
    add("flip then reshape", x.flip({1}).reshape({3, 8}), r_reshape(r_flip(r, {1}), {3, 8}));
    add("flip then reshape to split a dim", x.flip({0}).reshape({2, 2, 6}),
        r_reshape(r_flip(r, {0}), {2, 2, 6}));
    add("pad then reshape", x.pad({1, 1}).reshape({8, 4}), r_reshape(r_pad(r, {1, 1}, 0), {8, 4}));
    add("pad then crop inside the padding", x.pad({2, 2}).slice(1, 1, 9),
        r_slice(r_pad(r, {2, 2}, 0), 1, 1, 9));
    add("pad then flip", x.pad({0, 3, 1, 0}).flip({0, 1}),
        r_flip(r_pad(r, {0, 3, 1, 0}, 0), {0, 1}));
    add("pad then strided slice", x.pad({1, 2}).slice(1, std::nullopt, std::nullopt, 3),
        r_slice(r_pad(r, {1, 2}, 0), 1, std::nullopt, std::nullopt, 3));
    add("pad then permute then pad", x.pad({1, 0}).T().pad({0, 0, 1, 1}),
        r_pad(r_permute(r_pad(r, {1, 0}, 0), {1, 0}), {0, 0, 1, 1}, 0));
    add("permute, reshape, permute, reshape",
        x.T().reshape({2, 3, 4}).permute({2, 0, 1}).reshape({4, 6}),
        r_reshape(r_permute(r_reshape(r_permute(r, {1, 0}), {2, 3, 4}), {2, 0, 1}), {4, 6}));
    add("reshape to merge permuted dims", x.reshape({2, 2, 6}).permute({1, 0, 2}).reshape({4, 6}),
        r_reshape(r_permute(r_reshape(r, {2, 2, 6}), {1, 0, 2}), {4, 6}));
    add("unsqueeze, expand, flatten", x.unsqueeze(1).expand({4, 2, 6}).flatten(0, 1),
        r_reshape(r_expand(r_reshape(r, {4, 1, 6}), {4, 2, 6}), {8, 6}));
    add("slice negative step then expand",
        x.slice(0, std::nullopt, std::nullopt, -2).unsqueeze(0).expand({2, 2, 6}),
        r_expand(r_reshape(r_slice(r, 0, std::nullopt, std::nullopt, -2), {1, 2, 6}), {2, 2, 6}));
    add("repeat of a flipped slice", x.slice(1, 4, 0, -2).repeat({2, 1}), [&] {
      Ref s = r_slice(r, 1, 4, 0, -2);
      return build({8, 2}, [&](const Shape64& i) { return s.at({i[0] % 4, i[1]}); });
    }());
    add("index after pad", x.pad({1, 1, 1, 1}, 5)[0], r_select(r_pad(r, {1, 1, 1, 1}, 5), 0, 0));
    add("cat of views", tg::cat({x.T().slice(0, 0, 2), x.flip({1}).T().slice(0, 4, std::nullopt)}),
        [&] {
          Ref a = r_slice(r_permute(r, {1, 0}), 0, 0, 2),
              c = r_slice(r_permute(r_flip(r, {1}), {1, 0}), 0, 4, std::nullopt);
          Ref o{{4, 4}, a.v};
          o.v.insert(o.v.end(), c.v.begin(), c.v.end());
          return o;
        }());
  });
}

TEST_CASE("wide integers stay exact; bitcast; moving between devices") {
  for_each_device([](const std::string& dev) {
    TensorOptions on = on_dev(dev);
    const std::int64_t big = (std::int64_t(1) << 60) + 3;
    Tensor l = Tensor::from_data(std::vector<std::int64_t>{big, -big, 7}, {3}, on);
    const std::uint64_t ubig = ~std::uint64_t(0) - 5;
    Tensor u = Tensor::from_data(std::vector<std::uint64_t>{ubig, 3}, {2}, on);
    if (tg_test::computes_64bit(dev, [&] { (l + 1).realize(); }) &&
        tg_test::computes_64bit(dev, [&] { (u + std::uint64_t(2)).realize(); })) {
      CHECK((l + 1).to_vector<std::int64_t>() == std::vector<std::int64_t>{big + 1, -big + 1, 8});
      CHECK((l * 2 - l).to_vector<std::int64_t>() == std::vector<std::int64_t>{big, -big, 7});
      CHECK(l.max().item<std::int64_t>() == big);
      CHECK(l.min().item<std::int64_t>() == -big);
      CHECK(l.sum().item<std::int64_t>() == 7);
      CHECK(l.argmin().item<std::int64_t>() == 1);
      CHECK((l == big).to_vector<bool>() == std::vector<bool>{true, false, false});
      CHECK(l.flip({0}).cumsum(0).to_vector<std::int64_t>() ==
            std::vector<std::int64_t>{7, 7 - big, 7});
      CHECK(u.dtype() == tg::uint64);
      CHECK((u + std::uint64_t(2)).to_vector<std::uint64_t>() ==
            std::vector<std::uint64_t>{ubig + 2, 5});
      CHECK(u.max().item<std::uint64_t>() == ubig);
      CHECK(u.min().item<std::uint64_t>() == 3);
      CHECK((u > std::uint64_t(4)).to_vector<bool>() == std::vector<bool>{true, false});
    }
    Tensor u32 = Tensor::from_data(std::vector<std::uint32_t>{4000000000u, 1u}, {2}, on);
    CHECK((u32 + u32.flip({0})).to_vector<std::uint32_t>() ==
          std::vector<std::uint32_t>{4000000001u, 4000000001u});
    if (tg_test::computes_64bit(dev, [&] { u32.sum().realize(); })) // an int64 sum
      CHECK(u32.sum().item<std::int64_t>() == 4000000001);

    Tensor f = Tensor::from_data(std::vector<float>{1.0f, -2.0f}, {2}, on);
    CHECK(f.bitcast(tg::int32).to_vector<std::int32_t>() ==
          std::vector<std::int32_t>{0x3f800000, std::int32_t(0xc0000000u)});
    CHECK(f.bitcast(tg::int32).bitcast(tg::float32).to_vector<float>() ==
          std::vector<float>{1.0f, -2.0f});
    CHECK((f * 2).bitcast(tg::uint32).to_vector<std::uint32_t>() ==
          std::vector<std::uint32_t>{0x40000000u, 0xc0800000u});
    CHECK(f.cast(tg::float16).bitcast(tg::int16).to_vector<std::int16_t>() ==
          std::vector<std::int16_t>{0x3c00, std::int16_t(0xc000)});
    CHECK_THROWS_AS(f.bitcast(tg::int64), tg::dtype_error);

    const std::string other = dev == "CPU" ? "INTERP" : "CPU";
    Tensor p = make(rnd({3, 4}, 980), tg::float32, dev).T() * 2;
    Tensor moved = p.to(other);
    CHECK(moved.device() == other);
    CHECK(moved.shape() == Shape64{4, 3});
    CHECK(vec(moved) == vec(p));
    CHECK(vec(moved.to(dev) + 1) == vec(p + 1));
    CHECK(p.to(tg::detail::canonical_device(dev)).device() == dev);

    // variance of a single element is nan (0 / 0), as PyTorch
    CHECK(std::isnan(make(values({1}, {5}), tg::float32, dev).var().item<float>()));
    CHECK(make(values({1}, {5}), tg::float32, dev).var({}, 0).item<float>() == 0.0f);
  });
}

TEST_CASE("GPU launch shape: every accumulator of an upcast reduction is combined across the "
          "work-group") {
  // Regression: with upcast lanes sharing one reduce loop, only the last lane's accumulator was
  // combined through local memory on VULKAN/CUDA (sum(0) of an expanded [3, 4] gave [1, 1, 1, 7]).
  // Checked on the program itself, so it needs no GPU.
  Tensor x = make(rnd({3, 1}, 990), tg::float32, "CPU");
  tg::ScheduleInfo info = tg::schedule({x.expand({3, 16}).sum(0)});
  REQUIRE(info.lowered.size() == 1);
  tg::GpuOptions o;
  o.grouped = 1;
  // lowered as for a GPU, with upcast lanes whatever TG_OPT says
  tg::LowerOptions upcast = tg::LowerOptions{}.for_gpu();
  upcast.upcast = upcast.wide_upcast = 16;
  tg::Program p = tg::lower(info.graph, info.schedule, 0, upcast);
  tg::Program g = tg::gpu_program(p, o);
  REQUIRE(g.grouped);
  int accs = 0, combined = 0;
  for (const tg::UOp& u : g.ops) {
    accs += u.kind == tg::UKind::DefineAcc;
    combined += u.kind == tg::UKind::GroupReduce;
  }
  CHECK(accs > 1); // upcast: several lanes
  CHECK(combined == accs);
}

TEST_CASE("multinomial: frequencies, without replacement, errors, fresh draws under jit") {
  for (const std::string& dev : kDevices) {
    if (tg_test::lacks_64bit(dev)) continue; // int64 indices
    CAPTURE(dev);
    tg::TensorOptions o(tg::DType::Float32, dev);
    // unnormalized weights, one zero: 20000 draws with replacement from each of two rows
    Tensor w = Tensor::from_data(std::vector<float>{1, 2, 0, 7, 0, 0, 5, 5}, {2, 4}, o);
    Tensor s = tg::multinomial(w, 20000, true);
    CHECK(s.dtype() == tg::DType::Int64);
    CHECK(s.shape() == std::vector<std::int64_t>{2, 20000});
    auto v = s.to_vector<std::int64_t>();
    const double p[2][4] = {{0.1, 0.2, 0, 0.7}, {0, 0, 0.5, 0.5}};
    for (int r = 0; r < 2; ++r) {
      std::vector<double> n(4, 0);
      for (int k = 0; k < 20000; ++k) n[std::size_t(v[std::size_t(r * 20000 + k)])] += 1;
      for (int c = 0; c < 4; ++c) {
        double sd = std::sqrt(20000 * p[r][c] * (1 - p[r][c]));
        CHECK(std::abs(n[std::size_t(c)] - 20000 * p[r][c]) <= 5 * sd); // 0 draws where p is 0
      }
    }
    // without replacement: distinct indices, positive weights first; the first draw follows w
    Tensor w1 = Tensor::from_data(std::vector<float>{1, 0, 3, 4}, {4}, o);
    std::vector<double> first(4, 0);
    Tensor many = tg::multinomial(w1.unsqueeze(0).expand({4000, 4}), 3);
    CHECK(many.shape() == std::vector<std::int64_t>{4000, 3});
    auto m = many.to_vector<std::int64_t>();
    for (int k = 0; k < 4000; ++k) {
      std::int64_t a = m[std::size_t(3 * k)], b = m[std::size_t(3 * k + 1)],
                   c = m[std::size_t(3 * k + 2)];
      CHECK((a != b && b != c && a != c));
      CHECK((a != 1 && b != 1 && c != 1));
      first[std::size_t(a)] += 1;
    }
    for (int c : {0, 2, 3}) {
      double q = c == 0 ? 0.125 : c == 2 ? 0.375 : 0.5;
      CHECK(std::abs(first[std::size_t(c)] - 4000 * q) <= 5 * std::sqrt(4000 * q * (1 - q)));
    }
    CHECK(tg::multinomial(w1, 1).shape() == std::vector<std::int64_t>{1});
    CHECK(tg::multinomial(w1, 4).shape() == std::vector<std::int64_t>{4});
  }
  Tensor w = tg::ones({5});
  CHECK_THROWS_WITH_AS(tg::multinomial(w, 6), doctest::Contains("without replacement from 5"),
                       tg::shape_error);
  CHECK_THROWS_WITH_AS(tg::multinomial(tg::ones({2, 2, 2}), 1), doctest::Contains("1-D or 2-D"),
                       tg::shape_error);
  CHECK_THROWS_WITH_AS(tg::multinomial(w, 0), doctest::Contains("must be positive"),
                       tg::shape_error);
  CHECK_THROWS_WITH_AS(tg::multinomial(tg::ones({3}, tg::DType::Int32), 1),
                       doctest::Contains("floating weights"), tg::dtype_error);
  CHECK_THROWS_AS(tg::multinomial(tg::ones({2, 0}), 1, true), tg::shape_error);
  // a captured function draws anew on each replay
  auto draw = tg::jit([](Tensor x) { return tg::multinomial(x, 16, true); });
  Tensor x = tg::ones({64});
  std::vector<std::vector<std::int64_t>> seen;
  for (int k = 0; k < 4; ++k) seen.push_back(draw(x).to_vector<std::int64_t>());
  CHECK(seen[2] != seen[3]);
  CHECK(seen[1] != seen[2]);
}
