// The VULKAN device against the CPU device on the same workloads, in the same run: a fused
// elementwise kernel (bandwidth), a full reduction (work-group reductions), a matmul (compute),
// and a small chain (launch overhead). On lavapipe (Mesa's Vulkan on the CPU) this is a sanity
// figure, not a GPU number: both sides run on the same cores.
#include <tg/vulkan.hpp>

#include <filesystem>

#include "ratios.hpp"

namespace {

constexpr std::int64_t kN = std::int64_t(1)
                            << 24; // 16M float32 (64 MiB: under lavapipe's buffer range)

std::shared_ptr<tg::VulkanDevice> vulkan() {
  static std::shared_ptr<tg::VulkanDevice> d = [] {
    try {
      return std::dynamic_pointer_cast<tg::VulkanDevice>(tg::device("VULKAN"));
    } catch (const std::exception& e) {
      std::fprintf(stderr, "bench_vulkan: %s\n", e.what());
      return std::shared_ptr<tg::VulkanDevice>();
    }
  }();
  return d;
}

/// Waits until the device has run what was recorded (VULKAN batches launches).
void sync(const std::string& dev) {
  if (dev == "VULKAN") vulkan()->flush();
}

struct Inputs {
  tg::Tensor a, b, c, m1, m2, small;
};
Inputs& inputs(const std::string& dev) {
  static std::map<std::string, Inputs> in;
  auto it = in.find(dev);
  if (it != in.end()) return it->second;
  tg::TensorOptions o(tg::float32, "CPU");
  Inputs x{tg::rand({kN}, o),       tg::rand({kN}, o),       tg::rand({kN}, o),
           tg::rand({256, 256}, o), tg::rand({256, 256}, o), tg::rand({64, 64}, o)};
  for (tg::Tensor* t : {&x.a, &x.b, &x.c, &x.m1, &x.m2, &x.small}) *t = t->realize().to(dev);
  return in[dev] = x;
}

bool skip(benchmark::State& st, const std::string& dev) {
  if (dev == "VULKAN" && !vulkan()) {
    st.SkipWithError("no VULKAN device");
    return true;
  }
  return false;
}

void fused_relu_mul_add(benchmark::State& st, std::string dev) {
  if (skip(st, dev)) return;
  auto& in = inputs(dev);
  for (auto _ : st) {
    auto y = (in.a * in.b + in.c).relu();
    y.realize();
    sync(dev);
  }
  st.SetBytesProcessed(st.iterations() * kN * 16);
}
void sum_16m(benchmark::State& st, std::string dev) {
  if (skip(st, dev)) return;
  auto& in = inputs(dev);
  for (auto _ : st) {
    auto y = in.a.sum();
    y.realize();
    sync(dev);
  }
  st.SetBytesProcessed(st.iterations() * kN * 4);
}
void matmul_256(benchmark::State& st, std::string dev) {
  if (skip(st, dev)) return;
  auto& in = inputs(dev);
  for (auto _ : st) {
    auto y = in.m1.matmul(in.m2);
    y.realize();
    sync(dev);
  }
  st.counters["GFLOP/s"] = benchmark::Counter(double(st.iterations()) * 2.0 * 256 * 256 * 256 / 1e9,
                                              benchmark::Counter::kIsRate);
}
void small_chain_64x64(benchmark::State& st, std::string dev) {
  if (skip(st, dev)) return;
  auto& in = inputs(dev);
  for (auto _ : st) {
    auto y = in.small;
    for (int i = 0; i < 10; ++i) y = (i % 2) ? y * 1.5f : y + 0.5f;
    y.realize();
    sync(dev);
  }
}

BENCHMARK_CAPTURE(fused_relu_mul_add, CPU, "CPU")->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK_CAPTURE(fused_relu_mul_add, VULKAN, "VULKAN")
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK_CAPTURE(sum_16m, CPU, "CPU")->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK_CAPTURE(sum_16m, VULKAN, "VULKAN")->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK_CAPTURE(matmul_256, CPU, "CPU")->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK_CAPTURE(matmul_256, VULKAN, "VULKAN")->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK_CAPTURE(small_chain_64x64, CPU, "CPU")->Unit(benchmark::kMicrosecond)->UseRealTime();
BENCHMARK_CAPTURE(small_chain_64x64, VULKAN, "VULKAN")
    ->Unit(benchmark::kMicrosecond)
    ->UseRealTime();

} // namespace

int main(int argc, char** argv) {
  std::string dir = std::filesystem::temp_directory_path().string() + "/tg-bench-cache";
  setenv("TG_CACHE_DIR", dir.c_str(), 0);
  if (auto d = vulkan()) std::printf("VULKAN: %s\n", d->description().c_str());
  return tg_bench::run(argc, argv,
                       {{"fused_relu_mul_add/VULKAN/real_time", "fused_relu_mul_add/CPU/real_time"},
                        {"sum_16m/VULKAN/real_time", "sum_16m/CPU/real_time"},
                        {"matmul_256/VULKAN/real_time", "matmul_256/CPU/real_time"},
                        {"small_chain_64x64/VULKAN/real_time", "small_chain_64x64/CPU/real_time"}});
}
