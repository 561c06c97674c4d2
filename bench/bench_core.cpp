// Core pipeline figures: a fused elementwise kernel against a hand-written 2-thread loop (the
// memory-bandwidth floor), the host overhead of a small realize, and kernel compile times.
#include <tg/runtime/cpu.hpp>
#include <tg/schedule.hpp>
#include <tg/tg.hpp>

#include <algorithm>
#include <filesystem>
#include <thread>

#include "ratios.hpp"

namespace {

constexpr std::int64_t kN = std::int64_t(1) << 24; // 16M float32

struct Inputs {
  tg::Tensor a = tg::rand({kN}).realize(), b = tg::rand({kN}).realize(),
             c = tg::rand({kN}).realize();
  std::vector<float> va = a.to_vector<float>(), vb = b.to_vector<float>(),
                     vc = c.to_vector<float>(), out = std::vector<float>(kN);
};
Inputs& inputs() {
  static Inputs in;
  return in;
}

void tg_fused_relu_mul_add(benchmark::State& st) {
  auto& in = inputs();
  for (auto _ : st) {
    auto y = (in.a * in.b + in.c).relu();
    y.realize();
    benchmark::DoNotOptimize(y.lazy().get());
  }
  st.SetBytesProcessed(st.iterations() * kN * 16);
}
BENCHMARK(tg_fused_relu_mul_add)->Unit(benchmark::kMillisecond)->UseRealTime();

void loop_relu_mul_add_2threads(benchmark::State& st) {
  auto& in = inputs();
  const float *a = in.va.data(), *b = in.vb.data(), *c = in.vc.data();
  float* o = in.out.data();
  auto work = [&](std::int64_t lo, std::int64_t hi) {
    for (std::int64_t i = lo; i < hi; ++i) o[i] = std::max(a[i] * b[i] + c[i], 0.0f);
  };
  for (auto _ : st) {
    std::thread t(work, 0, kN / 2);
    work(kN / 2, kN);
    t.join();
    benchmark::ClobberMemory();
  }
  st.SetBytesProcessed(st.iterations() * kN * 16);
}
BENCHMARK(loop_relu_mul_add_2threads)->Unit(benchmark::kMillisecond)->UseRealTime();

// Host overhead: a 10-op chain on 64x64 with its kernel already compiled.
void tg_small_chain_64x64(benchmark::State& st) {
  auto x = tg::rand({64, 64}).realize();
  for (auto _ : st) {
    auto y = x;
    for (int i = 0; i < 10; ++i) y = (i % 2) ? y * 1.5f : y + 0.5f;
    y.realize();
  }
}
BENCHMARK(tg_small_chain_64x64)->Unit(benchmark::kMicrosecond);

void loop_small_chain_64x64(benchmark::State& st) {
  std::vector<float> x(64 * 64, 1.0f), y(64 * 64);
  for (auto _ : st) {
    for (std::size_t j = 0; j < x.size(); ++j) {
      float v = x[j];
      for (int i = 0; i < 10; ++i) v = (i % 2) ? v * 1.5f : v + 0.5f;
      y[j] = v;
    }
    benchmark::DoNotOptimize(y.data());
  }
}
BENCHMARK(loop_small_chain_64x64)->Unit(benchmark::kMicrosecond);

// Compile times: a fresh device (empty in-memory cache) each time; cold = a new source (the
// system compiler runs), warm = the same source already in the disk cache (dlopen only).
tg::KernelCode small_program(float k) {
  auto x = tg::zeros({256}) + k;
  const tg::Target t = tg::CpuDevice().target();
  return tg::finish_kernel(tg::schedule({x * 2.0f}, t).lowered[0], t);
}
void compile_cold(benchmark::State& st) {
  static float k = 0.123f;
  for (auto _ : st) {
    tg::KernelCode p = small_program(k += 1.0f);
    tg::CpuDevice dev;
    dev.prepare({&p});
  }
}
BENCHMARK(compile_cold)
    ->Unit(benchmark::kMillisecond)
    ->Iterations(1)
    ->Repetitions(25)
    ->ReportAggregatesOnly(true)
    ->UseRealTime();
void compile_warm(benchmark::State& st) {
  tg::KernelCode p = small_program(0.5f);
  {
    tg::CpuDevice dev;
    dev.prepare({&p});
  }
  for (auto _ : st) {
    tg::CpuDevice dev;
    dev.prepare({&p});
  }
}
BENCHMARK(compile_warm)->Unit(benchmark::kMillisecond)->UseRealTime();

} // namespace

int main(int argc, char** argv) {
  std::string dir = std::filesystem::temp_directory_path().string() + "/tg-bench-cache";
  std::filesystem::remove_all(dir);
  setenv("TG_CACHE_DIR", dir.c_str(), 1);
  return tg_bench::run(
      argc, argv,
      {{"tg_fused_relu_mul_add/real_time", "loop_relu_mul_add_2threads/real_time"},
       {"tg_small_chain_64x64", "loop_small_chain_64x64"},
       {"compile_warm/real_time", "compile_cold/iterations:1/repeats:25/real_time_median"}});
}
