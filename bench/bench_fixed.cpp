// The static front end (tg::fixed) against Eigen's fixed-size matrices and against the run-time
// tg::Tensor path, all in the same run: an elementwise expression (a * b + c) and a matmul, at
// 4x4, 16x16 and 64x64 float32. Ratios > 1 mean tg::fixed is slower than the peer.
#include <tg/fixed.hpp>
#include <tg/tg.hpp>

#include <random>

#include "ratios.hpp"

#if TG_HAVE_EIGEN
#include <Eigen/Dense>
#endif

namespace {

template <std::size_t N> struct Fixed {
  tg::fixed<float, N, N> a, b, c, out;
  Fixed() {
    std::mt19937 g(7);
    std::uniform_real_distribution<float> u(-1, 1);
    for (std::size_t i = 0; i < a.size; ++i) {
      a[i] = u(g);
      b[i] = u(g);
      c[i] = u(g);
    }
  }
};
template <std::size_t N> Fixed<N>& fixed_data() {
  static Fixed<N> d;
  return d;
}

template <std::size_t N> void fixed_elementwise(benchmark::State& st) {
  auto& d = fixed_data<N>();
  for (auto _ : st) {
    benchmark::DoNotOptimize(d.a.data());
    d.out = d.a * d.b + d.c;
    benchmark::DoNotOptimize(d.out.data());
    benchmark::ClobberMemory();
  }
}
template <std::size_t N> void fixed_matmul(benchmark::State& st) {
  auto& d = fixed_data<N>();
  for (auto _ : st) {
    benchmark::DoNotOptimize(d.a.data());
    d.out = d.a.matmul(d.b);
    benchmark::DoNotOptimize(d.out.data());
    benchmark::ClobberMemory();
  }
}

#if TG_HAVE_EIGEN
template <std::size_t N> struct EigenData {
  using M = Eigen::Matrix<float, int(N), int(N), Eigen::RowMajor>;
  M a, b, c, out;
  EigenData() {
    auto& f = fixed_data<N>();
    for (std::size_t i = 0; i < f.a.size; ++i) {
      a.data()[i] = f.a[i];
      b.data()[i] = f.b[i];
      c.data()[i] = f.c[i];
    }
  }
};
template <std::size_t N> EigenData<N>& eigen_data() {
  static EigenData<N> d;
  return d;
}
template <std::size_t N> void eigen_elementwise(benchmark::State& st) {
  auto& d = eigen_data<N>();
  for (auto _ : st) {
    benchmark::DoNotOptimize(d.a.data());
    d.out.array() = d.a.array() * d.b.array() + d.c.array();
    benchmark::DoNotOptimize(d.out.data());
    benchmark::ClobberMemory();
  }
}
template <std::size_t N> void eigen_matmul(benchmark::State& st) {
  auto& d = eigen_data<N>();
  for (auto _ : st) {
    benchmark::DoNotOptimize(d.a.data());
    d.out.noalias() = d.a * d.b;
    benchmark::DoNotOptimize(d.out.data());
    benchmark::ClobberMemory();
  }
}
#endif

// The run-time path: the same expression on tg::Tensor (kernels compiled once, then cached).
template <std::size_t N> struct Runtime {
  tg::Tensor a, b, c;
  Runtime() {
    auto& f = fixed_data<N>();
    a = tg::Tensor(f.a);
    b = tg::Tensor(f.b);
    c = tg::Tensor(f.c);
  }
};
template <std::size_t N> Runtime<N>& runtime_data() {
  static Runtime<N> d;
  return d;
}
template <std::size_t N> void tensor_elementwise(benchmark::State& st) {
  auto& d = runtime_data<N>();
  for (auto _ : st) {
    tg::Tensor y = d.a * d.b + d.c;
    y.realize();
    benchmark::DoNotOptimize(y.lazy().get());
  }
}
template <std::size_t N> void tensor_matmul(benchmark::State& st) {
  auto& d = runtime_data<N>();
  for (auto _ : st) {
    tg::Tensor y = d.a.matmul(d.b);
    y.realize();
    benchmark::DoNotOptimize(y.lazy().get());
  }
}

// The bridges, from the fixed tensors each time (uploads included): tg::Tensor(expr) launches the
// kernels planned at compile time; lazy_tensor(expr) builds the run-time graph and realizes it
// (fused and lowered once, then found in the plan cache by the graph's structure).
// Two expressions: a row sum, and a softmax (whose row max and sum the plan's portable schedule
// computes in kernels of their own, and the CPU's run-time path inside the kernel that reads them).
template <std::size_t N> auto reduce_expr(const Fixed<N>& f) {
  return (f.a * f.b + f.c).relu().template sum<1>();
}
template <std::size_t N> auto softmax_expr(const Fixed<N>& f) {
  return (f.a * f.b + f.c).template softmax<1>();
}
template <std::size_t N, bool Softmax> void bridge_planned(benchmark::State& st) {
  auto& f = fixed_data<N>();
  for (auto _ : st) {
    tg::Tensor y = Softmax ? tg::Tensor(softmax_expr(f)) : tg::Tensor(reduce_expr(f));
    benchmark::DoNotOptimize(y.lazy().get());
  }
}
template <std::size_t N, bool Softmax> void bridge_lazy(benchmark::State& st) {
  auto& f = fixed_data<N>();
  for (auto _ : st) {
    tg::Tensor y = Softmax ? tg::lazy_tensor(softmax_expr(f)) : tg::lazy_tensor(reduce_expr(f));
    y.realize();
    benchmark::DoNotOptimize(y.lazy().get());
  }
}
template <std::size_t N> void bridge_planned_sum(benchmark::State& st) {
  bridge_planned<N, false>(st);
}
template <std::size_t N> void bridge_lazy_sum(benchmark::State& st) { bridge_lazy<N, false>(st); }
template <std::size_t N> void bridge_planned_softmax(benchmark::State& st) {
  bridge_planned<N, true>(st);
}
template <std::size_t N> void bridge_lazy_softmax(benchmark::State& st) {
  bridge_lazy<N, true>(st);
}

#define TG_BENCH_SIZES(F)                                                                          \
  BENCHMARK(F<4>)->Name(#F "/4");                                                                  \
  BENCHMARK(F<16>)->Name(#F "/16");                                                                \
  BENCHMARK(F<64>)->Name(#F "/64");
TG_BENCH_SIZES(fixed_elementwise)
TG_BENCH_SIZES(fixed_matmul)
TG_BENCH_SIZES(tensor_elementwise)
TG_BENCH_SIZES(tensor_matmul)
TG_BENCH_SIZES(bridge_planned_sum)
TG_BENCH_SIZES(bridge_lazy_sum)
TG_BENCH_SIZES(bridge_planned_softmax)
TG_BENCH_SIZES(bridge_lazy_softmax)
#if TG_HAVE_EIGEN
TG_BENCH_SIZES(eigen_elementwise)
TG_BENCH_SIZES(eigen_matmul)
#endif

} // namespace

int main(int argc, char** argv) {
  std::vector<std::pair<std::string, std::string>> pairs;
  for (const char* op : {"elementwise", "matmul"})
    for (const char* n : {"4", "16", "64"}) {
      std::string s = std::string("fixed_") + op + "/" + n;
      pairs.push_back({s, std::string("eigen_") + op + "/" + n});
      pairs.push_back({s, std::string("tensor_") + op + "/" + n});
    }
  for (const char* e : {"sum/", "softmax/"})
    for (const char* n : {"4", "16", "64"})
      pairs.push_back(
          {std::string("bridge_planned_") + e + n, std::string("bridge_lazy_") + e + n});
  return tg_bench::run(argc, argv, pairs);
}
