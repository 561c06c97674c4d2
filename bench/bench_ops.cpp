// CPU kernels against peers, in the same run (issue #6): sgemm and the MLP's linear layers
// against OpenBLAS and Eigen, a batched matmul against OpenBLAS, softmax, layer norm and axis
// sums against hand-written 2-thread loops (the sums against Eigen too), 3x3 conv2d against a
// direct-convolution loop (and its training step's gradients, checked against loops), and every
// workload in PyTorch (bench/ops_torch.py, run as a subprocess when python3-torch is installed).
// Every peer gets the 2 cores tg's thread pool gets. Once per workload, outside the timing, tg's
// result and Eigen's are checked against OpenBLAS's or the loop's, and OpenBLAS's against dot
// products in double: a benchmark that times a wrong answer is worthless. (PyTorch's results stay
// in its process and are not checked.)
#include <tg/runtime/cpu_info.hpp> // (the ISA, for the FMA peak)
#include <tg/tg.hpp>

#include <Eigen/Core>
#include <algorithm>
#include <cblas.h>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <map>
#include <sstream>
#include <thread>

#include "ratios.hpp"
#include "torch_peer.hpp"

namespace {

namespace F = tg::nn::functional;
using tg::Tensor;
using Vec = std::vector<float>;
using RowMat = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

// ------------------------------------------------------------------------------- helpers ----

/// Runs f(lo, hi) on the two halves of [0, n), one on a new thread and one on this one: the
/// hand-written peers use the machine's 2 cores, as tg's thread pool does.
template <class Fn> void two_threads(std::int64_t n, const Fn& f) {
  std::thread t(f, std::int64_t(0), n / 2);
  f(n / 2, n);
  t.join();
}

/// Sum and max of a row with 16 independent accumulators. GCC vectorizes these without
/// -ffast-math; a plain serial reduction it may not (float addition is not associative).
float row_sum(const float* x, std::int64_t n) {
  float acc[16] = {};
  std::int64_t j = 0;
  for (; j + 16 <= n; j += 16)
    for (int k = 0; k < 16; ++k) acc[k] += x[j + k];
  float s = 0;
  for (float a : acc) s += a;
  for (; j < n; ++j) s += x[j];
  return s;
}
float row_max(const float* x, std::int64_t n) {
  float acc[16];
  std::fill(acc, acc + 16, -INFINITY);
  std::int64_t j = 0;
  for (; j + 16 <= n; j += 16)
    for (int k = 0; k < 16; ++k) acc[k] = std::max(acc[k], x[j + k]);
  float m = -INFINITY;
  for (float a : acc) m = std::max(m, a);
  for (; j < n; ++j) m = std::max(m, x[j]);
  return m;
}

/// OpenBLAS's worker threads spin for about 0.1 s after a call before they sleep (libgomp's,
/// under Eigen, about 10 ms): on 2 cores that takes a core from whatever runs next. The
/// benchmarks that call them wait it out, untimed, before they return.
void let_threads_sleep() { std::this_thread::sleep_for(std::chrono::milliseconds(200)); }

Vec to_vec(const Tensor& t) { return t.to_vector<float>(); }

using tg_bench::matches;

/// Times `make().realize()`, after one untimed realize that compiles the kernels and whose
/// result must match `want` (the reference named in `what`) within `tolerance` of its largest
/// element.
template <class Make>
void time_tg(benchmark::State& st, const Make& make, const Vec& want, const std::string& what,
             double tolerance = 1e-3) {
  Tensor first = make();
  first.realize();
  if (!matches(st, to_vec(first), want, what, tolerance)) return;
  for (auto _ : st) {
    Tensor y = make();
    y.realize();
    benchmark::DoNotOptimize(y.lazy().get());
  }
}

void gflops(benchmark::State& st, double flops) {
  st.counters["GFLOP/s"] =
      benchmark::Counter(double(st.iterations()) * flops / 1e9, benchmark::Counter::kIsRate);
}

// ------------------------------------------------------------------------ the core's peak ----

// The roofline for the products: fused multiply-adds into 16 independent vector accumulators
// (more than two FMA units of 4 cycles' latency keep busy), with the widest vectors the CPU
// device's kernels use (runtime/cpu_info.hpp), on the 2 threads tg gets. GFLOP/s counts 2 a lane.
typedef float F32x16 __attribute__((vector_size(64)));
typedef float F32x8 __attribute__((vector_size(32)));
constexpr int kFmaAccs = 16;
constexpr std::int64_t kFmaSteps = 1 << 22;

// (named accumulators: at -O1 an array of them stays in memory)
#define FMA_PEAK_LOOP(V, FMA)                                                                      \
  V x = {}, y = {};                                                                                \
  x += 0.999f;                                                                                     \
  y += 1e-7f;                                                                                      \
  V a0 = y, a1 = y, a2 = y, a3 = y, a4 = y, a5 = y, a6 = y, a7 = y, a8 = y, a9 = y, a10 = y,       \
    a11 = y, a12 = y, a13 = y, a14 = y, a15 = y;                                                   \
  for (std::int64_t s = 0; s < kFmaSteps; ++s) {                                                   \
    a0 = FMA(x, a0, y), a1 = FMA(x, a1, y), a2 = FMA(x, a2, y), a3 = FMA(x, a3, y);                \
    a4 = FMA(x, a4, y), a5 = FMA(x, a5, y), a6 = FMA(x, a6, y), a7 = FMA(x, a7, y);                \
    a8 = FMA(x, a8, y), a9 = FMA(x, a9, y), a10 = FMA(x, a10, y), a11 = FMA(x, a11, y);            \
    a12 = FMA(x, a12, y), a13 = FMA(x, a13, y), a14 = FMA(x, a14, y), a15 = FMA(x, a15, y);        \
  }                                                                                                \
  V sum = a0 + a1 + a2 + a3 + a4 + a5 + a6 + a7 + a8 + a9 + a10 + a11 + a12 + a13 + a14 + a15;     \
  return sum[0];
#define FMA_512(a, b, c) __builtin_ia32_vfmaddps512_mask(a, b, c, -1, 4)
__attribute__((target("avx512f"))) float fma_run_512() { FMA_PEAK_LOOP(F32x16, FMA_512) }
__attribute__((target("avx2,fma"))) float fma_run_256() {
  FMA_PEAK_LOOP(F32x8, __builtin_ia32_vfmaddps256)
}

void fma_peak(benchmark::State& st) {
  const bool wide = tg::host_cpu().isa >= tg::CpuIsa::Avx512;
  for (auto _ : st) {
    float out[2];
    two_threads(
        2, [&](std::int64_t lo, std::int64_t) { out[lo] = wide ? fma_run_512() : fma_run_256(); });
    benchmark::DoNotOptimize(out);
  }
  gflops(st, 2.0 * 2 * (wide ? 16 : 8) * kFmaAccs * double(kFmaSteps));
  st.SetLabel(wide ? "512-bit FMAs, 2 threads" : "256-bit FMAs, 2 threads");
}

// -------------------------------------------------------------------------------- matmul ----

struct Matmul {
  const char* name;
  std::int64_t batch, m, k, n; // a [batch, m, k] (batch 0: a 2-D [m, k])
  bool linear;                 // b is a weight [n, k] as nn::Linear holds it: y = a b^T
  std::int64_t batches() const { return std::max<std::int64_t>(batch, 1); }
  double flops() const { return 2.0 * double(batches() * m * k * n); }
};

// The MLP's layers (bench_train's 784-256-256-10 at batch 128) are the shapes a training step
// runs; the squares show how the kernels scale. sgemm_128x784x256 is the first layer with the
// weight stored [k, n] instead of nn::Linear's [n, k]: the pair shows what that layout costs.
// sgemm_255, sgemm_1000 and linear_100x784x1000 have sizes that no power-of-two tile divides.
const Matmul kMatmuls[] = {
    {"sgemm_255", 0, 255, 255, 255, false},
    {"sgemm_256", 0, 256, 256, 256, false},
    {"sgemm_1000", 0, 1000, 1000, 1000, false},
    {"sgemm_1024", 0, 1024, 1024, 1024, false},
    {"sgemm_2048", 0, 2048, 2048, 2048, false},
    {"sgemm_128x784x256", 0, 128, 784, 256, false},
    {"linear_128x784x256", 0, 128, 784, 256, true},
    {"linear_128x256x256", 0, 128, 256, 256, true},
    {"linear_100x784x1000", 0, 100, 784, 1000, true},
    {"linear_6x784x1000", 0, 6, 784, 1000, true}, // a small batch: fewer rows than a tile
    {"bmm_16x256x256x256", 16, 256, 256, 256, false},
};

void openblas_matmul(const Matmul& c, const float* a, const float* b, float* out) {
  const int m = int(c.m), k = int(c.k), n = int(c.n);
  for (std::int64_t i = 0; i < c.batches(); ++i)
    cblas_sgemm(CblasRowMajor, CblasNoTrans, c.linear ? CblasTrans : CblasNoTrans, m, n, k, 1.0f,
                a + i * c.m * c.k, k, b + i * c.k * c.n, c.linear ? k : n, 0.0f,
                out + i * c.m * c.n, n);
}

/// Empty when OpenBLAS's product `y` matches a·b computed in double on a sample of entries
/// (edges included), else what is wrong: the others are compared with it.
std::string spot_check(const Matmul& c, const Vec& a, const Vec& b, const Vec& y) {
  std::int64_t rows[] = {0, 1, c.m / 3, c.m / 2, c.m - 2, c.m - 1};
  std::int64_t cols[] = {0, 1, c.n / 3, c.n / 2, c.n - 2, c.n - 1};
  double scale = 0, diff = 0;
  for (std::int64_t i : {std::int64_t(0), c.batches() - 1})
    for (std::int64_t r : rows)
      for (std::int64_t j : cols) {
        double s = 0;
        for (std::int64_t q = 0; q < c.k; ++q)
          s += double(a[std::size_t((i * c.m + r) * c.k + q)]) *
               b[std::size_t(c.linear ? j * c.k + q : (i * c.k + q) * c.n + j)];
        scale = std::max(scale, std::abs(s));
        diff = std::max(diff, std::abs(s - y[std::size_t((i * c.m + r) * c.n + j)]));
      }
  if (diff <= 1e-4 * scale) return "";
  return std::string(c.name) + ": WRONG REFERENCE, OpenBLAS differs from a dot product in " +
         "double by " + std::to_string(diff) + " (is cblas_sgemm called right?)";
}

struct MatmulData {
  Tensor a, b;
  Vec va, vb, want;      // want: OpenBLAS's product
  std::string wrong_ref; // why `want` cannot be trusted (empty: it can)
};
MatmulData& matmul_data(const Matmul& c) {
  static std::map<std::string, MatmulData> all;
  auto [it, fresh] = all.try_emplace(c.name);
  MatmulData& d = it->second;
  if (fresh) {
    tg::Shape sa{c.m, c.k}, sb{c.k, c.n};
    if (c.linear) sb = {c.n, c.k};
    if (c.batch) {
      sa = {c.batch, c.m, c.k};
      sb = {c.batch, c.k, c.n};
    }
    d.a = tg::randn(sa).realize();
    d.b = tg::randn(sb).realize();
    d.va = to_vec(d.a);
    d.vb = to_vec(d.b);
    d.want.resize(std::size_t(c.batches() * c.m * c.n));
    openblas_matmul(c, d.va.data(), d.vb.data(), d.want.data());
    d.wrong_ref = spot_check(c, d.va, d.vb, d.want);
    let_threads_sleep();
  }
  return d;
}
/// The workload's data, or nullptr with the benchmark failed when its reference is wrong.
MatmulData* checked_data(benchmark::State& st, const Matmul& c) {
  MatmulData& d = matmul_data(c);
  if (d.wrong_ref.empty()) return &d;
  st.SkipWithError(d.wrong_ref.c_str());
  return nullptr;
}

void tg_matmul(benchmark::State& st, const Matmul& c) {
  MatmulData* d = checked_data(st, c);
  if (!d) return;
  auto product = [&] { return c.linear ? F::linear(d->a, d->b) : d->a.matmul(d->b); };
  time_tg(st, product, d->want, std::string(c.name) + ": tg against OpenBLAS");
  gflops(st, c.flops());
}

void openblas_bench(benchmark::State& st, const Matmul& c) {
  MatmulData* d = checked_data(st, c);
  if (!d) return;
  Vec out(d->want.size());
  for (auto _ : st) {
    openblas_matmul(c, d->va.data(), d->vb.data(), out.data());
    benchmark::DoNotOptimize(out.data());
  }
  gflops(st, c.flops());
  st.SetLabel(std::to_string(openblas_get_num_threads()) + " threads");
  let_threads_sleep();
}

// Eigen runs its products on OpenMP threads when compiled with -fopenmp (bench/CMakeLists.txt
// adds it when CMake finds OpenMP); without it, Eigen is single-threaded and the label says so.
void eigen_matmul(benchmark::State& st, const Matmul& c) {
  MatmulData* d = checked_data(st, c);
  if (!d) return;
  RowMat a = Eigen::Map<const RowMat>(d->va.data(), c.m, c.k), y(c.m, c.n);
  RowMat b = c.linear ? Eigen::Map<const RowMat>(d->vb.data(), c.n, c.k)
                      : Eigen::Map<const RowMat>(d->vb.data(), c.k, c.n);
  auto run = [&] {
    if (c.linear)
      y.noalias() = a * b.transpose();
    else
      y.noalias() = a * b;
  };
  run();
  if (!matches(st, Vec(y.data(), y.data() + y.size()), d->want,
               std::string(c.name) + ": Eigen against OpenBLAS"))
    return;
  for (auto _ : st) {
    run();
    benchmark::DoNotOptimize(y.data());
  }
  gflops(st, c.flops());
#ifdef _OPENMP
  st.SetLabel("OpenMP, up to " + std::to_string(Eigen::nbThreads()) + " threads");
#else
  st.SetLabel("1 thread (Eigen built without OpenMP)");
#endif
  let_threads_sleep();
}

// ------------------------------------------------------ rows: softmax, layer norm, sums ----

constexpr std::int64_t kRows = 4096, kCols = 4096; // softmax and the sums
constexpr std::int64_t kNormRows = 4096, kNormCols = 1024;

/// The peer: a max pass, an exp-and-sum pass and a scale pass over each row.
void loop_softmax(const float* x, float* y, std::int64_t rows, std::int64_t cols) {
  two_threads(rows, [&](std::int64_t lo, std::int64_t hi) {
    for (std::int64_t r = lo; r < hi; ++r) {
      const float* xr = x + r * cols;
      float* yr = y + r * cols;
      float m = row_max(xr, cols);
      for (std::int64_t j = 0; j < cols; ++j) yr[j] = std::exp(xr[j] - m);
      float inv = 1.0f / row_sum(yr, cols);
      for (std::int64_t j = 0; j < cols; ++j) yr[j] *= inv;
    }
  });
}

/// The peer: mean, then the biased variance around it, then the normalized row (no affine).
void loop_layer_norm(const float* x, float* y, std::int64_t rows, std::int64_t cols) {
  two_threads(rows, [&](std::int64_t lo, std::int64_t hi) {
    for (std::int64_t r = lo; r < hi; ++r) {
      const float* xr = x + r * cols;
      float* yr = y + r * cols;
      float mean = row_sum(xr, cols) / float(cols);
      for (std::int64_t j = 0; j < cols; ++j) yr[j] = (xr[j] - mean) * (xr[j] - mean);
      float rstd = 1.0f / std::sqrt(row_sum(yr, cols) / float(cols) + 1e-5f);
      for (std::int64_t j = 0; j < cols; ++j) yr[j] = (xr[j] - mean) * rstd;
    }
  });
}

void loop_sum(const float* x, float* y, std::int64_t rows, std::int64_t cols, int axis) {
  if (axis == 0) // each thread owns half of the columns and walks down every row
    two_threads(cols, [&](std::int64_t lo, std::int64_t hi) {
      std::fill(y + lo, y + hi, 0.0f);
      for (std::int64_t r = 0; r < rows; ++r)
        for (std::int64_t j = lo; j < hi; ++j) y[j] += x[r * cols + j];
    });
  else
    two_threads(rows, [&](std::int64_t lo, std::int64_t hi) {
      for (std::int64_t r = lo; r < hi; ++r) y[r] = row_sum(x + r * cols, cols);
    });
}

/// An input matrix with the peer loop's result on it (the reference for tg and Eigen).
struct RowData {
  Tensor x;
  Vec vx, want;
};
RowData make_rows(std::int64_t rows, std::int64_t cols) {
  RowData d;
  d.x = tg::randn({rows, cols}).realize();
  d.vx = to_vec(d.x);
  return d;
}

RowData& softmax_data() {
  static RowData d = [] {
    RowData r = make_rows(kRows, kCols);
    r.want.resize(r.vx.size());
    loop_softmax(r.vx.data(), r.want.data(), kRows, kCols);
    return r;
  }();
  return d;
}
RowData& layer_norm_data() {
  static RowData d = [] {
    RowData r = make_rows(kNormRows, kNormCols);
    r.want.resize(r.vx.size());
    loop_layer_norm(r.vx.data(), r.want.data(), kNormRows, kNormCols);
    return r;
  }();
  return d;
}
/// One input for both sums; want holds the axis-0 sums, then the axis-1 sums.
RowData& sum_data() {
  static RowData d = [] {
    RowData r = make_rows(kRows, kCols);
    r.want.resize(std::size_t(kCols + kRows));
    loop_sum(r.vx.data(), r.want.data(), kRows, kCols, 0);
    loop_sum(r.vx.data(), r.want.data() + kCols, kRows, kCols, 1);
    return r;
  }();
  return d;
}
Vec sum_want(int axis) {
  const Vec& w = sum_data().want;
  return axis == 0 ? Vec(w.begin(), w.begin() + kCols) : Vec(w.begin() + kCols, w.end());
}

void tg_softmax(benchmark::State& st) {
  auto& d = softmax_data();
  auto softmax = [&] { return d.x.softmax(1); };
  time_tg(st, softmax, d.want, "softmax: tg against the loop");
  st.SetBytesProcessed(st.iterations() * kRows * kCols * 8);
}
void loop_softmax_bench(benchmark::State& st) {
  auto& d = softmax_data();
  Vec y(d.vx.size());
  for (auto _ : st) {
    loop_softmax(d.vx.data(), y.data(), kRows, kCols);
    benchmark::DoNotOptimize(y.data());
  }
  st.SetBytesProcessed(st.iterations() * kRows * kCols * 8);
}

void tg_layer_norm(benchmark::State& st) {
  auto& d = layer_norm_data();
  auto layer_norm = [&] { return F::layer_norm(d.x, {kNormCols}); };
  time_tg(st, layer_norm, d.want, "layer_norm: tg against the loop");
  st.SetBytesProcessed(st.iterations() * kNormRows * kNormCols * 8);
}
void loop_layer_norm_bench(benchmark::State& st) {
  auto& d = layer_norm_data();
  Vec y(d.vx.size());
  for (auto _ : st) {
    loop_layer_norm(d.vx.data(), y.data(), kNormRows, kNormCols);
    benchmark::DoNotOptimize(y.data());
  }
  st.SetBytesProcessed(st.iterations() * kNormRows * kNormCols * 8);
}

void tg_sum(benchmark::State& st, int axis) {
  auto& d = sum_data();
  auto sum = [&] { return d.x.sum(axis); };
  time_tg(st, sum, sum_want(axis), "sum: tg against the loop");
  st.SetBytesProcessed(st.iterations() * kRows * kCols * 4);
}
void loop_sum_bench(benchmark::State& st, int axis) {
  auto& d = sum_data();
  Vec y(std::size_t(axis == 0 ? kCols : kRows));
  for (auto _ : st) {
    loop_sum(d.vx.data(), y.data(), kRows, kCols, axis);
    benchmark::DoNotOptimize(y.data());
  }
  st.SetBytesProcessed(st.iterations() * kRows * kCols * 4);
}
void eigen_sum(benchmark::State& st, int axis) {
  auto& d = sum_data();
  Eigen::Map<const RowMat> x(d.vx.data(), kRows, kCols);
  Eigen::VectorXf y(axis == 0 ? kCols : kRows);
  auto run = [&] {
    if (axis == 0)
      y.noalias() = x.colwise().sum().transpose();
    else
      y.noalias() = x.rowwise().sum();
  };
  run();
  if (!matches(st, Vec(y.data(), y.data() + y.size()), sum_want(axis),
               "sum: Eigen against the loop"))
    return;
  for (auto _ : st) {
    run();
    benchmark::DoNotOptimize(y.data());
  }
  st.SetBytesProcessed(st.iterations() * kRows * kCols * 4);
  st.SetLabel("1 thread (Eigen's reductions are not parallel)");
}

// -------------------------------------------------------------------------------- conv2d ----

// The 16-bit products (hgemm, bgemm: float16, bfloat16 in, float32 accumulation, rounded once):
// against tg's float32 product of the same size and PyTorch's (bfloat16 only: PyTorch 1.13's CPU
// has no float16 product). The reference is tg's float32
// product of the same (exactly widened) inputs, rounded to the 16-bit type.
struct HalfMatmul {
  const char* name;
  tg::DType dtype;
  std::int64_t n; // n x n x n
  double flops() const { return 2.0 * double(n * n * n); }
};
const HalfMatmul kHalfMatmuls[] = {{"bgemm_1024", tg::bfloat16, 1024},
                                   {"bgemm_2048", tg::bfloat16, 2048},
                                   {"hgemm_2048", tg::float16, 2048}};

void tg_half_matmul(benchmark::State& st, const HalfMatmul& c, bool as_float32) {
  static std::map<std::string, std::pair<Tensor, Tensor>> inputs;
  auto [it, fresh] = inputs.try_emplace(c.name);
  if (fresh)
    it->second = {tg::randn({c.n, c.n}).cast(c.dtype).realize(),
                  tg::randn({c.n, c.n}).cast(c.dtype).realize()};
  Tensor a = it->second.first, b = it->second.second;
  Tensor af = a.cast(tg::float32).realize(), bf = b.cast(tg::float32).realize();
  Tensor product = af.matmul(bf).realize();
  auto in_float32 = [&] { return af.matmul(bf); };
  auto in_16_bits = [&] { return a.matmul(b); };
  const std::string name(c.name);
  if (as_float32)
    time_tg(st, in_float32, to_vec(product), name + ": float32");
  else // (within a bfloat16 step: AVX512_BF16 sums each pair of k in its own order)
    time_tg(st, in_16_bits, to_vec(product.cast(c.dtype)), name + ": tg against float32",
            c.dtype == tg::bfloat16 ? 1.0 / 128 : 1e-3);
  gflops(st, c.flops());
}

/// A 3x3 convolution with padding 1 of [n, c, s, s] images into o channels.
struct Conv {
  std::int64_t n, c, s, o;
  std::string shape() const {
    return std::to_string(n) + "x" + std::to_string(c) + "x" + std::to_string(s) + "x" +
           std::to_string(s);
  }
  double flops() const { return 2.0 * double(n * o * s * s * c * 9); }
};
const Conv kConvs[] = {{32, 16, 28, 32}, {64, 64, 56, 64}}; // the CNN's first; a ResNet stage's

/// The peer: a direct convolution, its inner loop along an output row (which vectorizes);
/// the batch is split between the two threads.
void loop_conv2d(const Conv& k, const float* x, const float* w, float* y) {
  const std::int64_t S = k.s;
  two_threads(k.n, [&](std::int64_t lo, std::int64_t hi) {
    for (std::int64_t n = lo; n < hi; ++n)
      for (std::int64_t o = 0; o < k.o; ++o) {
        float* yo = y + (n * k.o + o) * S * S;
        std::fill(yo, yo + S * S, 0.0f);
        for (std::int64_t c = 0; c < k.c; ++c) {
          const float* xc = x + (n * k.c + c) * S * S;
          for (std::int64_t kh = 0; kh < 3; ++kh)
            for (std::int64_t kw = 0; kw < 3; ++kw) {
              const float wv = w[((o * k.c + c) * 3 + kh) * 3 + kw];
              const std::int64_t ow0 = std::max<std::int64_t>(0, 1 - kw),
                                 ow1 = std::min<std::int64_t>(S, S + 1 - kw);
              for (std::int64_t oh = 0; oh < S; ++oh) {
                const std::int64_t ih = oh + kh - 1;
                if (ih < 0 || ih >= S) continue;
                const float* xr = xc + ih * S + kw - 1;
                float* yr = yo + oh * S;
                for (std::int64_t ow = ow0; ow < ow1; ++ow) yr[ow] += wv * xr[ow];
              }
            }
        }
      }
  });
}

/// The reference gradients of sum(conv2d(x, w) * g) by the same loops: dX split by image, dW by
/// output channel.
void loop_conv2d_grads(const Conv& k, const float* x, const float* w, const float* g, float* dx,
                       float* dw) {
  const std::int64_t S = k.s;
  auto taps = [&](auto&& body) { // each tap's valid output rows and columns
    for (std::int64_t kh = 0; kh < 3; ++kh)
      for (std::int64_t kw = 0; kw < 3; ++kw)
        body(kh, kw, std::max<std::int64_t>(0, 1 - kh), std::min<std::int64_t>(S, S + 1 - kh),
             std::max<std::int64_t>(0, 1 - kw), std::min<std::int64_t>(S, S + 1 - kw));
  };
  two_threads(k.n, [&](std::int64_t lo, std::int64_t hi) {
    std::fill(dx + lo * k.c * S * S, dx + hi * k.c * S * S, 0.0f);
    for (std::int64_t n = lo; n < hi; ++n)
      for (std::int64_t o = 0; o < k.o; ++o)
        for (std::int64_t c = 0; c < k.c; ++c)
          taps([&](auto kh, auto kw, auto oh0, auto oh1, auto ow0, auto ow1) {
            const float wv = w[((o * k.c + c) * 3 + kh) * 3 + kw];
            for (std::int64_t oh = oh0; oh < oh1; ++oh) {
              const float* gr = g + ((n * k.o + o) * S + oh) * S;
              float* xr = dx + ((n * k.c + c) * S + oh + kh - 1) * S + kw - 1;
              for (std::int64_t ow = ow0; ow < ow1; ++ow) xr[ow] += wv * gr[ow];
            }
          });
  });
  two_threads(k.o, [&](std::int64_t lo, std::int64_t hi) {
    for (std::int64_t o = lo; o < hi; ++o)
      for (std::int64_t c = 0; c < k.c; ++c)
        taps([&](auto kh, auto kw, auto oh0, auto oh1, auto ow0, auto ow1) {
          float acc = 0;
          for (std::int64_t n = 0; n < k.n; ++n)
            for (std::int64_t oh = oh0; oh < oh1; ++oh) {
              const float* gr = g + ((n * k.o + o) * S + oh) * S;
              const float* xr = x + ((n * k.c + c) * S + oh + kh - 1) * S + kw - 1;
              for (std::int64_t ow = ow0; ow < ow1; ++ow) acc += gr[ow] * xr[ow];
            }
          dw[((o * k.c + c) * 3 + kh) * 3 + kw] = acc;
        });
  });
}

struct ConvData {
  Tensor x, w, g;
  Vec vx, vw, want, want_grads; // (the grads: dX, then dW, flattened)
};
ConvData& conv_data(const Conv& k, bool grads) {
  static std::map<std::string, ConvData> all;
  auto [it, fresh] = all.try_emplace(k.shape());
  ConvData& r = it->second;
  if (fresh) {
    r.x = tg::randn({k.n, k.c, k.s, k.s}).realize();
    r.w = tg::randn({k.o, k.c, 3, 3}).realize();
    r.g = tg::randn({k.n, k.o, k.s, k.s}).realize();
    r.vx = to_vec(r.x);
    r.vw = to_vec(r.w);
    r.want.resize(std::size_t(k.n * k.o * k.s * k.s));
    loop_conv2d(k, r.vx.data(), r.vw.data(), r.want.data());
  }
  if (grads && r.want_grads.empty()) {
    const Vec vg = to_vec(r.g);
    Vec dx(r.vx.size()), dw(r.vw.size());
    loop_conv2d_grads(k, r.vx.data(), r.vw.data(), vg.data(), dx.data(), dw.data());
    r.want_grads = dx;
    r.want_grads.insert(r.want_grads.end(), dw.begin(), dw.end());
  }
  return r;
}

void tg_conv2d(benchmark::State& st, const Conv& k) {
  auto& d = conv_data(k, false);
  auto conv = [&] { return F::conv2d(d.x, d.w, Tensor(), 1, 1); };
  time_tg(st, conv, d.want, "conv2d: tg against the loop");
  gflops(st, k.flops());
}
void loop_conv2d_bench(benchmark::State& st, const Conv& k) {
  auto& d = conv_data(k, false);
  Vec y(d.want.size());
  for (auto _ : st) {
    loop_conv2d(k, d.vx.data(), d.vw.data(), y.data());
    benchmark::DoNotOptimize(y.data());
  }
  gflops(st, k.flops());
}
/// A training step's convolution: the output, and the gradients of x and w for an output
/// gradient g (PyTorch: the forward, then autograd.grad).
void tg_conv2d_train(benchmark::State& st, const Conv& k) {
  auto& d = conv_data(k, true);
  auto step = [&] {
    Tensor x = d.x.detach().requires_grad_(), w = d.w.detach().requires_grad_();
    Tensor y = F::conv2d(x, w, Tensor(), 1, 1);
    std::vector<Tensor> g = tg::grad({y}, {x, w}, {d.g});
    tg::realize({y, g[0], g[1]});
    return g;
  };
  std::vector<Tensor> first = step();
  Vec got = to_vec(first[0]), dw = to_vec(first[1]);
  got.insert(got.end(), dw.begin(), dw.end());
  if (!matches(st, got, d.want_grads, "conv2d's gradients: tg against the loops", 1e-3)) return;
  for (auto _ : st) benchmark::DoNotOptimize(step()[0].lazy().get());
  gflops(st, 3 * k.flops());
}

} // namespace

int main(int argc, char** argv) {
  // Kernels are compiled once, outside the timings; a cache of this benchmark's own keeps them
  // between runs without touching the user's.
  std::string dir = std::filesystem::temp_directory_path().string() + "/tg-bench-ops-cache";
  setenv("TG_CACHE_DIR", dir.c_str(), 0);
  openblas_set_num_threads(2);
  Eigen::setNbThreads(2);

  // Each workload: tg first, then its peers; the ratio table pairs tg with each peer.
  std::vector<std::pair<std::string, std::string>> pairs;
  std::string subject;
  auto add = [&](const std::string& workload, const std::string& who, auto fn) {
    std::string name = workload + "/" + who;
    benchmark::RegisterBenchmark(name.c_str(), fn)->Unit(benchmark::kMillisecond)->UseRealTime();
    if (who == "tg")
      subject = name + "/real_time";
    else
      pairs.emplace_back(subject, name + "/real_time");
  };
  auto add_torch = [&](const std::string& workload, double flops) {
    std::string name = workload + "/torch";
    auto fn = [=](benchmark::State& st) { tg_bench::torch_bench(st, workload, flops); };
    benchmark::RegisterBenchmark(name.c_str(), fn)
        ->Unit(benchmark::kMillisecond)
        ->UseManualTime()
        ->Iterations(1);
    pairs.emplace_back(subject, name + "/iterations:1/manual_time");
  };

  if (tg::host_cpu().isa >= tg::CpuIsa::Avx2)
    benchmark::RegisterBenchmark("fma_peak/loop_2threads", fma_peak)
        ->Unit(benchmark::kMillisecond)
        ->UseRealTime();
  for (const Matmul& c : kMatmuls) {
    add(c.name, "tg", [&c](benchmark::State& st) { tg_matmul(st, c); });
    add(c.name, "openblas", [&c](benchmark::State& st) { openblas_bench(st, c); });
    if (!c.batch) add(c.name, "eigen", [&c](benchmark::State& st) { eigen_matmul(st, c); });
    add_torch(c.name, c.flops());
  }
  for (const HalfMatmul& c : kHalfMatmuls) {
    add(c.name, "tg", [&c](benchmark::State& st) { tg_half_matmul(st, c, false); });
    add(c.name, "tg_float32", [&c](benchmark::State& st) { tg_half_matmul(st, c, true); });
    if (c.dtype == tg::bfloat16) add_torch(c.name, c.flops()); // (1.13 has no float16 addmm)
  }
  add("softmax_4096x4096", "tg", tg_softmax);
  add("softmax_4096x4096", "loop_2threads", loop_softmax_bench);
  add_torch("softmax_4096x4096", 0);
  add("layer_norm_4096x1024", "tg", tg_layer_norm);
  add("layer_norm_4096x1024", "loop_2threads", loop_layer_norm_bench);
  add_torch("layer_norm_4096x1024", 0);
  for (int axis : {0, 1}) {
    std::string w = "sum_axis" + std::to_string(axis) + "_4096x4096";
    add(w, "tg", [axis](benchmark::State& st) { tg_sum(st, axis); });
    add(w, "loop_2threads", [axis](benchmark::State& st) { loop_sum_bench(st, axis); });
    add(w, "eigen", [axis](benchmark::State& st) { eigen_sum(st, axis); });
    add_torch(w, 0);
  }
  for (const Conv& k : kConvs) {
    const std::string w = "conv2d_3x3_" + k.shape();
    add(w, "tg", [&k](benchmark::State& st) { tg_conv2d(st, k); });
    add(w, "loop_2threads", [&k](benchmark::State& st) { loop_conv2d_bench(st, k); });
    add_torch(w, k.flops());
  }
  for (const Conv& k : kConvs) {
    const std::string w = "conv2d_train_3x3_" + k.shape();
    add(w, "tg", [&k](benchmark::State& st) { tg_conv2d_train(st, k); });
    add_torch(w, 3 * k.flops());
  }

  return tg_bench::run(argc, argv, pairs);
}
