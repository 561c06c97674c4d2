// tg demo: a tour of the pipeline. Tensors are lazy; each section builds expressions, shows how
// many kernels tg launched for them (tg::stats()), prints results like PyTorch and checks them
// against plain C++ loops. Exits non-zero if any check fails.
//
//   bash tools/run-demo.sh                      # build and run
//   TG_DEBUG=2 build/examples/example_demo      # also print every schedule (3: the C source)
#include <tg/tg.hpp>

#include <cmath>
#include <cstdio>
#include <iostream>
#include <string>
#include <vector>

namespace {

int failures = 0;

void check(bool ok, const std::string& what) {
  std::cout << (ok ? "  [ok]   " : "  [FAIL] ") << what << "\n";
  if (!ok) ++failures;
}

void section(const char* title) { std::cout << "\n== " << title << " ==\n"; }

std::int64_t launched() { return tg::stats().kernels_launched; }

bool approx(double a, double b, double tol = 1e-4) {
  return std::fabs(a - b) <= tol * (1 + std::fabs(b));
}

double max_abs_diff(const std::vector<float>& a, const std::vector<float>& b) {
  double m = 0;
  for (std::size_t i = 0; i < a.size() && i < b.size(); ++i)
    m = std::max(m, std::fabs(double(a[i]) - double(b[i])));
  return a.size() == b.size() ? m : INFINITY;
}

} // namespace

int main() {
  using tg::Slice;
  using tg::Tensor;
  tg::manual_seed(0);

  std::cout << "tg " << tg::version << " demo\n";
  section("devices");
  for (const tg::DeviceInfo& d : tg::devices())
    std::cout << "  " << d.name << ": " << (d.available ? "available" : "unavailable: " + d.reason)
              << "\n";

  // ---------------------------------------------------------------------------------------
  section("tensors and dtypes");
  Tensor a = Tensor({{1.f, 2.f, 3.f}, {4.f, 5.f, 6.f}}); // float32 from float data
  Tensor i = Tensor({1, 2, 3});                          // int32 from int data
  Tensor r = tg::arange(6);                              // integer range: int64
  std::cout << "a = " << a << "\n";
  std::cout << "i = " << i << "\n";
  std::cout << "arange(6) = " << r << "\n";
  std::cout << "eye(3) = " << tg::eye(3) << "\n";
  std::cout << "PyTorch promotion: int32 / int32 -> " << tg::dtype_name((i / i).dtype())
            << ", int32 * 2.5 -> " << tg::dtype_name((i * 2.5).dtype()) << ", uint8 + int8 -> "
            << tg::dtype_name(tg::promote(tg::uint8, tg::int8)) << "\n";
  check((i / i).dtype() == tg::float32 && (i * 2.5).dtype() == tg::float32 &&
            (i + 1).dtype() == tg::int32,
        "int / int is float32, int * 2.5 is float32, int + 1 stays int32");
  check(tg::promote(tg::uint8, tg::int8) == tg::int16 &&
            tg::promote(tg::float16, tg::bfloat16) == tg::float32,
        "uint8 + int8 -> int16, float16 + bfloat16 -> float32");

  // ---------------------------------------------------------------------------------------
  section("an elementwise chain is one kernel");
  Tensor x = tg::randn({4, 5}), y = tg::randn({4, 5}), bias = tg::randn({5});
  std::int64_t before = launched();
  Tensor z = ((x * y + bias).relu() * 2.0 - 1.0).sigmoid(); // nothing runs yet
  std::int64_t built = launched();
  z.realize();
  std::int64_t after = launched();
  std::cout << "  z = sigmoid(relu(x * y + bias) * 2 - 1), x, y: [4, 5], bias: [5] (broadcast)\n";
  std::cout << "  kernels_launched: " << before << " before, " << built << " after building, "
            << after << " after realize()\n";
  std::cout << "z = " << z << "\n";
  check(built == before, "building the expression launched nothing (tensors are lazy)");
  check(after - before == 1, "the whole chain ran as 1 kernel");
  {
    auto xv = x.to_vector<float>(), yv = y.to_vector<float>(), bv = bias.to_vector<float>(),
         zv = z.to_vector<float>();
    std::vector<float> ref(zv.size());
    for (std::size_t k = 0; k < ref.size(); ++k) {
      float t = std::max(xv[k] * yv[k] + bv[k % 5], 0.f) * 2.f - 1.f;
      ref[k] = 1.f / (1.f + std::exp(-t));
    }
    check(max_abs_diff(zv, ref) < 1e-5, "matches a plain C++ loop");
  }

  // ---------------------------------------------------------------------------------------
  section("a reduction with a fused epilogue");
  Tensor d = tg::randn({4});
  before = launched();
  Tensor rowdot = (x * y).sum(1) + d; // the sum and the "+ d" share one kernel
  rowdot.realize();
  std::cout << "  (x * y).sum(1) + d: " << launched() - before << " kernel\n";
  std::cout << "rowdot = " << rowdot << "\n";
  check(launched() - before == 1, "sum(1) + d ran as 1 kernel");
  {
    auto xv = x.to_vector<float>(), yv = y.to_vector<float>(), dv = d.to_vector<float>();
    std::vector<float> ref(4, 0.f);
    for (int row = 0; row < 4; ++row) {
      for (int col = 0; col < 5; ++col)
        ref[std::size_t(row)] += xv[std::size_t(row * 5 + col)] * yv[std::size_t(row * 5 + col)];
      ref[std::size_t(row)] += dv[std::size_t(row)];
    }
    check(max_abs_diff(rowdot.to_vector<float>(), ref) < 1e-5, "matches a plain C++ loop");
  }
  std::cout << "x.mean() = " << x.mean() << ", x.std(1) = " << x.std({1})
            << ", x.argmax(1) = " << x.argmax(1) << "\n";

  // ---------------------------------------------------------------------------------------
  section("matmul and softmax");
  Tensor w = tg::arange(0, 1.2, 0.1).reshape({3, 4}); // float32 (non-integer step)
  before = launched();
  Tensor prod = a.matmul(w); // [2, 3] @ [3, 4]: broadcast multiply + sum, 1 kernel
  prod.realize();
  std::cout << "w = " << w << "\n";
  std::cout << "a @ w = " << prod << "  (" << launched() - before << " kernel)\n";
  {
    auto av = a.to_vector<float>(), wv = w.to_vector<float>();
    std::vector<float> ref(8, 0.f);
    for (int m = 0; m < 2; ++m)
      for (int n = 0; n < 4; ++n)
        for (int k = 0; k < 3; ++k)
          ref[std::size_t(m * 4 + n)] += av[std::size_t(m * 3 + k)] * wv[std::size_t(k * 4 + n)];
    check(max_abs_diff(prod.to_vector<float>(), ref) < 1e-5, "matmul matches a plain C++ loop");
  }
  before = launched();
  Tensor probs = prod.softmax(1); // max, exp-sum, divide: 3 kernels
  probs.realize();
  std::cout << "softmax(a @ w, 1) = " << probs << "  (" << launched() - before << " kernels)\n";
  {
    auto rows = probs.sum(1).to_vector<float>();
    check(approx(rows[0], 1) && approx(rows[1], 1), "softmax rows sum to 1");
    auto pv = prod.to_vector<float>(), sv = probs.to_vector<float>();
    float e0 = std::exp(pv[0] - pv[3]), denom = 0;
    for (int n = 0; n < 4; ++n) denom += std::exp(pv[std::size_t(n)] - pv[3]);
    check(approx(sv[0], e0 / denom, 1e-5), "softmax(..)[0][0] matches exp / sum(exp)");
  }

  // ---------------------------------------------------------------------------------------
  section("views: permute, slice, flip are zero-copy");
  Tensor m = tg::arange(12).reshape({3, 4});
  before = launched();
  Tensor mt = m.permute({1, 0});                                   // [4, 3]
  Tensor odd_cols = m.index({Slice{}, Slice{1, std::nullopt, 2}}); // m[:, 1::2] -> [3, 2]
  Tensor flipped = m.flip({0});                                    // rows reversed
  Tensor row1 = m[1];                                              // [4]
  std::cout << "m = " << m << "\n";
  std::cout << "  building 4 views launched " << launched() - before
            << " kernels; m.permute({1, 0}).is_realized() = " << std::boolalpha << mt.is_realized()
            << "\n";
  check(launched() == before && mt.is_realized() && odd_cols.is_realized(),
        "views are views of m's buffer, no kernel");
  std::cout << "m.permute({1, 0}) = " << mt << "\n";
  std::cout << "m[:, 1::2] = " << odd_cols << "\n";
  std::cout << "m.flip({0}) = " << flipped << "\n";
  std::cout << "m[1] = " << row1 << "\n";
  check(mt.to_vector<std::int64_t>() ==
            std::vector<std::int64_t>{0, 4, 8, 1, 5, 9, 2, 6, 10, 3, 7, 11},
        "permute values");
  check(odd_cols.to_vector<std::int64_t>() == std::vector<std::int64_t>{1, 3, 5, 7, 9, 11},
        "m[:, 1::2] values");
  check(flipped.to_vector<std::int64_t>() ==
            std::vector<std::int64_t>{8, 9, 10, 11, 4, 5, 6, 7, 0, 1, 2, 3},
        "flip values");
  check(row1.to_vector<std::int64_t>() == std::vector<std::int64_t>{4, 5, 6, 7}, "m[1] values");
  before = launched();
  // The kernel reads the permuted view in place: no transposed copy is made first.
  Tensor mixed = (mt.cast(tg::float32) * 0.5).sum(0);
  std::cout << "(m.T * 0.5).sum(0) = " << mixed << "  (" << launched() - before << " kernel)\n";
  check(mixed.to_vector<float>() == std::vector<float>{3, 11, 19}, "(m.T * 0.5).sum(0) values");

  // ---------------------------------------------------------------------------------------
  section("least squares by gradient descent (plain tensor ops, no autograd)");
  // y = X @ w_true + b_true + noise; minimize mean((X @ w + b - y)^2) with hand-written gradients.
  const std::int64_t n = 256;
  Tensor X = tg::randn({n, 3});
  Tensor w_true = Tensor({2.0f, -3.0f, 0.5f});
  const float b_true = 1.0f;
  Tensor Y = (X.matmul(w_true) + b_true + 0.01 * tg::randn({n})).realize();
  Tensor wfit = tg::zeros({3}), bfit = tg::zeros({});
  const double lr = 0.1;
  auto loss_of = [&](const Tensor& wv, const Tensor& bv) {
    return (X.matmul(wv) + bv - Y).square().mean();
  };
  double first_loss = loss_of(wfit, bfit).item<float>();
  before = launched();
  const int steps = 100;
  for (int step = 1; step <= steps; ++step) {
    Tensor resid = X.matmul(wfit) + bfit - Y;                // [n]
    Tensor grad_w = X.T().matmul(resid) * (2.0 / double(n)); // [3]
    Tensor grad_b = resid.mean() * 2.0;                      // []
    wfit = wfit - lr * grad_w;
    bfit = bfit - lr * grad_b;
    tg::realize({wfit, bfit}); // one schedule for both; keeps the lazy graph from growing
    if (step == 1 || step == 10 || step == steps)
      std::printf("  step %3d  loss %.6f\n", step, double(loss_of(wfit, bfit).item<float>()));
  }
  std::int64_t fit_kernels = launched() - before;
  std::cout << "  " << fit_kernels << " kernels for " << steps
            << " steps plus 3 loss evaluations\n";
  std::cout << "w = " << wfit << " (true: " << w_true << "), b = " << bfit << " (true: " << b_true
            << ")\n";
  double final_loss = loss_of(wfit, bfit).item<float>();
  check(final_loss < 1e-3 && final_loss < first_loss / 1000,
        "loss fell from " + std::to_string(first_loss) + " to " + std::to_string(final_loss));
  check((wfit - w_true).abs().max().item<float>() < 0.01 &&
            std::fabs(bfit.item<float>() - b_true) < 0.01,
        "recovered w_true and b_true within 0.01");

  // ---------------------------------------------------------------------------------------
  section("CPU (compiled C) against INTERP (reference interpreter)");
  {
    auto grad = [](const Tensor& Xd, const Tensor& Yd, const Tensor& wd) {
      Tensor resid = Xd.matmul(wd) - Yd;
      return (Xd.T().matmul(resid) * (2.0 / double(Xd.size(0)))).softmax(0).log() +
             resid.square().mean();
    };
    Tensor on_cpu = grad(X, Y, w_true);
    Tensor on_interp = grad(X.to("INTERP"), Y.to("INTERP"), w_true.to("INTERP"));
    std::cout << "on CPU:    " << on_cpu << "\n";
    std::cout << "on INTERP: " << on_interp << "\n";
    double diff = max_abs_diff(on_cpu.to_vector<float>(), on_interp.to_vector<float>());
    std::cout << "  max |CPU - INTERP| = " << diff << "\n";
    check(diff < 1e-5, "CPU and INTERP agree");
  }

  // ---------------------------------------------------------------------------------------
  section("symbolic sizes: one compiled kernel for every batch size");
  for (std::int64_t value : {3, 7}) {
    tg::SInt batch = tg::sym("batch", 1, 1024, value);
    Tensor v = tg::randn({batch, 4});
    std::int64_t compiled = tg::stats().kernels_compiled;
    Tensor norms = (v * v).sum(1).sqrt();
    norms.realize();
    std::int64_t new_compiles = tg::stats().kernels_compiled - compiled;
    std::cout << "  batch = " << value << ": norms has shape [" << norms.size(0) << "], "
              << new_compiles << " new compiler run(s)\n";
    if (value == 7)
      check(new_compiles == 0 && norms.size(0) == 7,
            "batch = 7 reused the kernel compiled for batch = 3");
  }

  // ---------------------------------------------------------------------------------------
  section("errors name the shapes and your line");
  try {
    Tensor bad = x + tg::randn({3, 5});
    check(false, "a shape error was thrown");
  } catch (const tg::shape_error& e) {
    std::cout << "  tg::shape_error: " << e.what() << "\n";
    check(std::string(e.what()).find("[4, 5] and [3, 5]") != std::string::npos,
          "the message names both shapes");
  }

  // ---------------------------------------------------------------------------------------
  tg::Stats s = tg::stats();
  std::cout << "\nstats: " << s.kernels_launched << " kernels launched, " << s.kernels_compiled
            << " compiled, " << s.cache_hits << " cache hits, " << s.realizes << " realizes\n";
  if (failures) {
    std::cout << failures << " check(s) FAILED\n";
    return 1;
  }
  std::cout << "all checks passed\n";
  return 0;
}
