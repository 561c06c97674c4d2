// tg on its GPU devices, each against a peer measured in the same run (issue #7):
//   VULKAN  against tg's CPU device on bench_ops's workloads plus a fused elementwise kernel, a
//   full
//           sum, a matmul and a small chain. On lavapipe (Mesa's Vulkan on the CPU) this is a
//           sanity figure, not a GPU number: both sides run on the same cores.
//   CUDA    against PyTorch on the same GPU (bench/ops_torch.py --device cuda): float32 products
//           (TF32 off on both sides), a float16 product (cuBLAS's tensor cores), softmax, layer
//           norm, sums, conv2d, elementwise kernels over 64M floats against a device-to-device
//           copy of the same bytes (PyTorch's copy_, the bandwidth ceiling), and a small chain.
// Every timed call waits for its result (on both sides). Once per workload, outside the timing,
// the device's result is checked against tg's CPU device (within 1e-3 of the largest |value|,
// 1e-2 for float16, as bench_ops checks): a benchmark that times a wrong answer is worthless.
//   WEBGPU  against tg's CPU device on VULKAN's workloads (Dawn on Mesa's llvmpipe here: a sanity
//           figure too).
// TG_BENCH_DEVICES=CUDA (a comma-separated list) picks the devices; by default every one of
// VULKAN, CUDA and WEBGPU that opens. bench_ops's sgemm 2048^2 is left out of VULKAN: one run takes
// about a minute on lavapipe.
#include <tg/runtime/cuda.hpp>
#include <tg/vulkan.hpp>
#include <tg/webgpu.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <map>

#include "ratios.hpp"
#include "torch_peer.hpp"

namespace {

namespace F = tg::nn::functional;
using tg::Tensor;
using Vec = std::vector<float>;

/// Waits until the device has run what was queued (VULKAN batches launches, CUDA runs them on
/// a stream).
void sync(const std::string& dev) {
  tg::Rc<tg::Device> d = tg::device(dev);
  if (auto* v = dynamic_cast<tg::VulkanDevice*>(d.get())) v->flush();
  if (auto* c = dynamic_cast<tg::CudaDevice*>(d.get())) c->synchronize();
  if (auto* w = dynamic_cast<tg::webgpu::WebGpuDevice*>(d.get())) w->synchronize();
}

/// One workload: its inputs (made on CPU), the computation, and what one run moves or computes.
struct Workload {
  std::string name;
  std::function<std::vector<Tensor>()> make_inputs;
  std::function<Tensor(const std::vector<Tensor>&)> compute;
  double flops = 0, bytes = 0; // per run, for the GFLOP/s or bytes/s column (0: none)
  benchmark::TimeUnit unit = benchmark::kMillisecond;
  double tolerance = 1e-3;
};

Workload matmul(const std::string& name, std::int64_t batch, std::int64_t m, std::int64_t k,
                std::int64_t n, bool linear, tg::DType t = tg::float32) {
  Workload w;
  w.name = name;
  w.make_inputs = [=] {
    tg::Shape sa{m, k}, sb{k, n};
    if (linear) sb = {n, k}; // a weight as nn::Linear holds it: y = a b^T
    if (batch) sa = {batch, m, k}, sb = {batch, k, n};
    return std::vector<Tensor>{tg::randn(sa).cast(t), tg::randn(sb).cast(t)};
  };
  w.compute = [linear](const std::vector<Tensor>& x) {
    return linear ? F::linear(x[0], x[1]) : x[0].matmul(x[1]);
  };
  w.flops = 2.0 * double(std::max<std::int64_t>(batch, 1) * m * k * n);
  if (t != tg::float32) w.tolerance = 1e-2;
  return w;
}

Workload rows(const char* name, std::int64_t r, std::int64_t c, double bytes_per_elem,
              std::function<Tensor(const Tensor&)> f) {
  Workload w;
  w.name = name;
  w.make_inputs = [=] { return std::vector<Tensor>{tg::randn({r, c})}; };
  w.compute = [f](const std::vector<Tensor>& x) { return f(x[0]); };
  w.bytes = bytes_per_elem * double(r * c);
  return w;
}

/// Elementwise kernels and a full sum over n floats (`suffix` names the size).
std::vector<Workload> streams(std::int64_t n, const std::string& suffix) {
  Workload fused;
  fused.name = "fused_relu_mul_add" + suffix;
  fused.make_inputs = [n] {
    return std::vector<Tensor>{tg::rand({n}), tg::rand({n}), tg::rand({n})};
  };
  fused.compute = [](const std::vector<Tensor>& x) { return (x[0] * x[1] + x[2]).relu(); };
  fused.bytes = 16.0 * double(n);
  Workload sum;
  sum.name = "sum" + suffix;
  sum.make_inputs = [n] { return std::vector<Tensor>{tg::rand({n})}; };
  sum.compute = [](const std::vector<Tensor>& x) { return x[0].sum(); };
  sum.bytes = 4.0 * double(n);
  return {fused, sum};
}

Workload small_chain() {
  Workload w;
  w.name = "small_chain_64x64";
  w.make_inputs = [] { return std::vector<Tensor>{tg::rand({64, 64})}; };
  w.compute = [](const std::vector<Tensor>& x) {
    Tensor y = x[0];
    for (int i = 0; i < 10; ++i) y = (i % 2) ? y * 1.5f : y + 0.5f;
    return y;
  };
  w.unit = benchmark::kMicrosecond;
  return w;
}

/// A 3 x 3 convolution of [n, c, s, s] images into c output channels, padding 1.
Workload conv2d(std::int64_t n = 32, std::int64_t c = 16, std::int64_t s = 28,
                std::int64_t out = 32) {
  Workload w;
  w.name = "conv2d_3x3_" + std::to_string(n) + "x" + std::to_string(c) + "x" + std::to_string(s) +
           "x" + std::to_string(s);
  w.make_inputs = [=] {
    return std::vector<Tensor>{tg::randn({n, c, s, s}), tg::randn({out, c, 3, 3})};
  };
  w.compute = [](const std::vector<Tensor>& x) { return F::conv2d(x[0], x[1], Tensor(), 1, 1); };
  w.flops = 2.0 * double(n * out * s * s * c * 9);
  return w;
}

std::vector<Workload> common() {
  return {
      rows("softmax_4096x4096", 4096, 4096, 8, [](const Tensor& x) { return x.softmax(1); }),
      rows("layer_norm_4096x1024", 4096, 1024, 8,
           [](const Tensor& x) { return F::layer_norm(x, {1024}); }),
      rows("sum_axis0_4096x4096", 4096, 4096, 4, [](const Tensor& x) { return x.sum(0); }),
      rows("sum_axis1_4096x4096", 4096, 4096, 4, [](const Tensor& x) { return x.sum(1); }),
      conv2d(),
  };
}

/// lavapipe: bench_ops's workloads at sizes its 128 MiB buffer range and its speed allow.
std::vector<Workload> vulkan_workloads() {
  std::vector<Workload> all = {
      matmul("sgemm_256", 0, 256, 256, 256, false),
      matmul("sgemm_1024", 0, 1024, 1024, 1024, false),
      matmul("sgemm_128x784x256", 0, 128, 784, 256, false),
      matmul("linear_128x784x256", 0, 128, 784, 256, true),
      matmul("linear_128x256x256", 0, 128, 256, 256, true),
      matmul("bmm_16x256x256x256", 16, 256, 256, 256, false),
  };
  for (Workload& w : common()) all.push_back(w);
  for (Workload& w : streams(std::int64_t(1) << 24, "_16m")) all.push_back(w);
  all.push_back(small_chain());
  return all;
}

/// A GPU: sizes that fill it (64M floats stream 256 MiB per operand).
std::vector<Workload> cuda_workloads() {
  std::vector<Workload> all = {
      matmul("sgemm_1024", 0, 1024, 1024, 1024, false),
      matmul("sgemm_4096", 0, 4096, 4096, 4096, false),
      matmul("hgemm_4096", 0, 4096, 4096, 4096, false, tg::float16),
      matmul("bgemm_4096", 0, 4096, 4096, 4096, false, tg::bfloat16),
      matmul("linear_128x784x256", 0, 128, 784, 256, true),
      matmul("bmm_16x256x256x256", 16, 256, 256, 256, false),
  };
  for (Workload& w : common()) all.push_back(w);
  all.push_back(conv2d(64, 64, 56, 64)); // a ResNet stage's
  constexpr std::int64_t n = std::int64_t(1) << 26;
  Workload scale;
  scale.name = "scale_64m";
  scale.make_inputs = [] { return std::vector<Tensor>{tg::rand({n})}; };
  scale.compute = [](const std::vector<Tensor>& x) { return x[0] * 1.5f; };
  scale.bytes = 8.0 * double(n);
  all.push_back(scale);
  for (Workload& w : streams(n, "_64m")) all.push_back(w);
  all.push_back(small_chain());
  return all;
}

/// A workload's inputs on CPU (realized) and, once asked for, on the device, and CPU's result:
/// the reference the device's is checked against. Kept only while the workload's benchmarks run.
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
    d.want = w.compute(in).cast(tg::float32).to_vector<float>();
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

/// Times `compute(inputs).realize()` on `dev`, each call waiting for its result, after one
/// untimed run that compiles the kernels and whose result must match CPU's.
void run(benchmark::State& st, const Workload& w, const std::string& dev) {
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
  if (dev != "CPU" && !tg_bench::matches(st, first.cast(tg::float32).to_vector<float>(), d.want,
                                         w.name + ": " + dev + " against CPU", w.tolerance))
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

/// The devices to measure, and what each is: "VULKAN: llvmpipe ..." (or why it did not open).
std::vector<std::string> gpu_devices() {
  std::vector<std::string> wanted = {"VULKAN", "CUDA", "WEBGPU"}, out;
  if (const char* e = std::getenv("TG_BENCH_DEVICES"); e && *e) {
    wanted.clear();
    std::string s = e;
    for (std::size_t i = 0, j; i <= s.size(); i = j + 1) {
      j = std::min(s.find(',', i), s.size());
      if (j > i) wanted.push_back(s.substr(i, j - i));
    }
  }
  for (const std::string& name : wanted) {
    try {
      tg::Rc<tg::Device> d = tg::device(name);
      std::string what = name;
      if (auto* v = dynamic_cast<tg::VulkanDevice*>(d.get())) what = v->description();
      if (auto* c = dynamic_cast<tg::CudaDevice*>(d.get())) what = c->description();
      if (auto* w = dynamic_cast<tg::webgpu::WebGpuDevice*>(d.get())) what = w->description();
      std::printf("%s: %s\n", name.c_str(), what.c_str());
      out.push_back(name);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "bench_gpu: no %s device, its benchmarks are skipped: %s\n",
                   name.c_str(), e.what());
    }
  }
  std::fflush(stdout);
  return out;
}

} // namespace

int main(int argc, char** argv) {
  std::string dir = std::filesystem::temp_directory_path().string() + "/tg-bench-cache";
  setenv("TG_CACHE_DIR", dir.c_str(), 0);
  // run-bench.sh looks for a line "VULKAN: ", "CUDA: " or "WEBGPU: " to tell whether a device
  // opened.
  static const std::vector<std::string> devices = gpu_devices();
  static std::vector<Workload> all;
  std::vector<std::pair<std::string, std::string>> pairs;
  for (const std::string& dev : devices) {
    bool cuda = dev.rfind("CUDA", 0) == 0;
    auto torch = [&](const std::string& workload, double flops, benchmark::TimeUnit unit) {
      auto fn = [workload, flops](benchmark::State& st) {
        tg_bench::torch_bench(st, workload, flops, {"--device", "cuda"});
      };
      benchmark::RegisterBenchmark((workload + "/torch_cuda").c_str(), fn)
          ->Unit(unit)
          ->UseManualTime()
          ->Iterations(1);
      return workload + "/torch_cuda/iterations:1/manual_time";
    };
    for (Workload& w : cuda ? cuda_workloads() : vulkan_workloads()) {
      all.push_back(w);
      std::size_t k = all.size() - 1;
      for (const std::string& d :
           cuda ? std::vector<std::string>{dev} : std::vector<std::string>{"CPU", dev})
        benchmark::RegisterBenchmark((w.name + "/" + d).c_str(),
                                     [k, d](benchmark::State& st) { run(st, all[k], d); })
            ->Unit(w.unit)
            ->UseRealTime();
      std::string subject = w.name + "/" + dev + "/real_time";
      pairs.emplace_back(subject,
                         cuda ? torch(w.name, w.flops, w.unit) : w.name + "/CPU/real_time");
      // x * 1.5 moves the bytes of a device-to-device copy: the ratio is the bandwidth's
      if (cuda && w.name == "scale_64m") pairs.emplace_back(subject, torch("copy_64m", 0, w.unit));
    }
  }
  if (devices.empty()) std::fprintf(stderr, "bench_gpu: no GPU device, nothing to measure\n");
  return tg_bench::run(argc, argv, pairs);
}
