// The VULKAN device against the CPU device on the same workloads, in the same run (issue #7):
// bench_ops's workloads (sgemm, the MLP's linear layers, a batched matmul, softmax, layer norm,
// the sums over each axis, a 3x3 conv2d), then a fused elementwise kernel (bandwidth), a full
// reduction (work-group reductions), a matmul and a small chain (launch overhead). On lavapipe
// (Mesa's Vulkan on the CPU) this is a sanity figure, not a GPU number: both sides run on the
// same cores. Once per workload, outside the timing, VULKAN's result is checked against CPU's
// (within 1e-3 of the largest |value|, as bench_ops checks): a benchmark that times a wrong
// answer is worthless. bench_ops's sgemm 2048^2 is left out: one run takes about a minute on
// lavapipe (sgemm 1024^2 takes 4 s), and the whole run should stay within a few minutes.
#include <tg/vulkan.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <map>

#include "ratios.hpp"

namespace {

namespace F = tg::nn::functional;
using tg::Tensor;
using Vec = std::vector<float>;

// The reason VULKAN did not open (empty when it did).
std::string& vulkan_error() {
  static std::string why;
  return why;
}
std::shared_ptr<tg::VulkanDevice> vulkan() {
  static std::shared_ptr<tg::VulkanDevice> d = [] {
    try {
      return std::dynamic_pointer_cast<tg::VulkanDevice>(tg::device("VULKAN"));
    } catch (const std::exception& e) {
      vulkan_error() = e.what();
      return std::shared_ptr<tg::VulkanDevice>();
    }
  }();
  return d;
}

/// Waits until the device has run what was recorded (VULKAN batches launches).
void sync(const std::string& dev) {
  if (dev == "VULKAN") vulkan()->flush();
}

/// One workload: its inputs (made on CPU), the computation, and what one run moves or computes.
struct Workload {
  std::string name;
  std::function<std::vector<Tensor>()> make_inputs;
  std::function<Tensor(const std::vector<Tensor>&)> compute;
  double flops = 0, bytes = 0; // per run, for the GFLOP/s or bytes/s column (0: none)
  benchmark::TimeUnit unit = benchmark::kMillisecond;
};

std::vector<Workload> workloads() {
  constexpr std::int64_t kN = std::int64_t(1) << 24; // 16M float32 (64 MiB: lavapipe's range)
  auto matmul = [](const char* name, std::int64_t batch, std::int64_t m, std::int64_t k,
                   std::int64_t n, bool linear) {
    Workload w;
    w.name = name;
    w.make_inputs = [=] {
      tg::Shape sa{m, k}, sb{k, n};
      if (linear) sb = {n, k}; // a weight as nn::Linear holds it: y = a b^T
      if (batch) sa = {batch, m, k}, sb = {batch, k, n};
      return std::vector<Tensor>{tg::randn(sa), tg::randn(sb)};
    };
    w.compute = [linear](const std::vector<Tensor>& x) {
      return linear ? F::linear(x[0], x[1]) : x[0].matmul(x[1]);
    };
    w.flops = 2.0 * double(std::max<std::int64_t>(batch, 1) * m * k * n);
    return w;
  };
  std::vector<Workload> all = {
      matmul("sgemm_256", 0, 256, 256, 256, false),
      matmul("sgemm_1024", 0, 1024, 1024, 1024, false),
      matmul("sgemm_128x784x256", 0, 128, 784, 256, false),
      matmul("linear_128x784x256", 0, 128, 784, 256, true),
      matmul("linear_128x256x256", 0, 128, 256, 256, true),
      matmul("bmm_16x256x256x256", 16, 256, 256, 256, false),
  };
  auto rows = [&](const char* name, std::int64_t r, std::int64_t c, double bytes_per_elem,
                  std::function<Tensor(const Tensor&)> f) {
    Workload w;
    w.name = name;
    w.make_inputs = [=] { return std::vector<Tensor>{tg::randn({r, c})}; };
    w.compute = [f](const std::vector<Tensor>& x) { return f(x[0]); };
    w.bytes = bytes_per_elem * double(r * c);
    all.push_back(w);
  };
  rows("softmax_4096x4096", 4096, 4096, 8, [](const Tensor& x) { return x.softmax(1); });
  rows("layer_norm_4096x1024", 4096, 1024, 8,
       [](const Tensor& x) { return F::layer_norm(x, {1024}); });
  rows("sum_axis0_4096x4096", 4096, 4096, 4, [](const Tensor& x) { return x.sum(0); });
  rows("sum_axis1_4096x4096", 4096, 4096, 4, [](const Tensor& x) { return x.sum(1); });
  {
    Workload w;
    w.name = "conv2d_3x3_32x16x28x28";
    w.make_inputs = [] {
      return std::vector<Tensor>{tg::randn({32, 16, 28, 28}), tg::randn({32, 16, 3, 3})};
    };
    w.compute = [](const std::vector<Tensor>& x) { return F::conv2d(x[0], x[1], Tensor(), 1, 1); };
    w.flops = 2.0 * 32 * 32 * 28 * 28 * 16 * 9;
    all.push_back(w);
  }
  {
    Workload w;
    w.name = "fused_relu_mul_add";
    w.make_inputs = [] {
      return std::vector<Tensor>{tg::rand({kN}), tg::rand({kN}), tg::rand({kN})};
    };
    w.compute = [](const std::vector<Tensor>& x) { return (x[0] * x[1] + x[2]).relu(); };
    w.bytes = 16.0 * double(kN);
    all.push_back(w);
  }
  {
    Workload w;
    w.name = "sum_16m";
    w.make_inputs = [] { return std::vector<Tensor>{tg::rand({kN})}; };
    w.compute = [](const std::vector<Tensor>& x) { return x[0].sum(); };
    w.bytes = 4.0 * double(kN);
    all.push_back(w);
  }
  all.push_back(matmul("matmul_256", 0, 256, 256, 256, false));
  {
    Workload w;
    w.name = "small_chain_64x64";
    w.make_inputs = [] { return std::vector<Tensor>{tg::rand({64, 64})}; };
    w.compute = [](const std::vector<Tensor>& x) {
      Tensor y = x[0];
      for (int i = 0; i < 10; ++i) y = (i % 2) ? y * 1.5f : y + 0.5f;
      return y;
    };
    w.unit = benchmark::kMicrosecond;
    all.push_back(w);
  }
  return all;
}

/// A workload's inputs on CPU (realized) and, once asked for, on VULKAN, and CPU's result: the
/// reference VULKAN's is checked against. Kept only while the workload's benchmarks run.
struct Data {
  std::string name;
  std::map<std::string, std::vector<Tensor>> inputs; // by device
  Vec want;
};
Data& data(const Workload& w) {
  static Data d;
  if (d.name != w.name) {
    d = Data{w.name, {}, {}};
    std::vector<Tensor> in = w.make_inputs();
    for (Tensor& t : in) t = t.realize();
    d.inputs["CPU"] = in;
    d.want = w.compute(in).to_vector<float>();
  }
  return d;
}
const std::vector<Tensor>& inputs(Data& d, const std::string& dev) {
  auto it = d.inputs.find(dev);
  if (it != d.inputs.end()) return it->second;
  std::vector<Tensor> in;
  for (const Tensor& t : d.inputs["CPU"]) in.push_back(t.to(dev).realize());
  sync(dev);
  return d.inputs[dev] = in;
}

using tg_bench::matches;

/// Times `compute(inputs).realize()` on `dev`, after one untimed run that compiles the kernels
/// (and, on VULKAN, whose result must match CPU's).
void run(benchmark::State& st, const Workload& w, const std::string& dev) {
  if (!vulkan()) {
    st.SkipWithError(("no VULKAN device: " + vulkan_error()).c_str());
    return;
  }
  Data& d = data(w);
  const std::vector<Tensor>& in = inputs(d, dev);
  Tensor first;
  try {
    first = w.compute(in);
    first.realize();
    sync(dev);
  } catch (const std::exception& e) { // a kernel the device refuses (llvmpipe's loop limit)
    st.SkipWithError((w.name + ": " + dev + ": " + e.what()).c_str());
    return;
  }
  if (dev != "CPU" &&
      !matches(st, first.to_vector<float>(), d.want, w.name + ": " + dev + " against CPU"))
    return;
  for (auto _ : st) {
    Tensor y = w.compute(in);
    y.realize();
    sync(dev);
  }
  if (w.flops > 0)
    st.counters["GFLOP/s"] =
        benchmark::Counter(double(st.iterations()) * w.flops / 1e9, benchmark::Counter::kIsRate);
  if (w.bytes > 0) st.SetBytesProcessed(std::int64_t(double(st.iterations()) * w.bytes));
}

} // namespace

int main(int argc, char** argv) {
  std::string dir = std::filesystem::temp_directory_path().string() + "/tg-bench-cache";
  setenv("TG_CACHE_DIR", dir.c_str(), 0);
  // run-bench.sh looks for the first line to tell whether a device opened, else prints the second.
  if (auto d = vulkan())
    std::printf("VULKAN: %s\n", d->description().c_str());
  else
    std::fprintf(stderr, "bench_vulkan: no VULKAN device, every benchmark is skipped: %s\n",
                 vulkan_error().c_str());
  std::fflush(stdout);

  static const std::vector<Workload> all = workloads();
  std::vector<std::pair<std::string, std::string>> pairs;
  for (const Workload& w : all) {
    for (std::string dev : {"CPU", "VULKAN"}) {
      std::string name = w.name + "/" + dev;
      benchmark::RegisterBenchmark(name.c_str(),
                                   [&w, dev](benchmark::State& st) { run(st, w, dev); })
          ->Unit(w.unit)
          ->UseRealTime();
    }
    pairs.emplace_back(w.name + "/VULKAN/real_time", w.name + "/CPU/real_time");
  }
  return tg_bench::run(argc, argv, pairs);
}
