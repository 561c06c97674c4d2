// The training step of issue #5: an MLP 784-256-256-10, batch 128, Adam, cross-entropy, the whole
// step (forward, loss, backward, update) compiled with tg::jit, against the same step in PyTorch
// (bench/train_step_torch.py, run as a subprocess in this same run when python3-torch is
// installed); and the same for the Fashion-MNIST demo's CNN (examples/fashion_mnist_models.hpp),
// batch 128. Also the time to the MLP's first step with a cold and with a warm kernel cache (CPU
// only). TG_BENCH_DEVICE=CUDA runs the steps on the GPU instead (PyTorch with --device cuda).
#include <tg/runtime/cpu.hpp>
#include <tg/tg.hpp>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>

#include "../examples/fashion_mnist_models.hpp"
#include "ratios.hpp"
#include "torch_peer.hpp"

namespace {

namespace nn = tg::nn;
namespace F = tg::nn::functional;
using tg::Tensor;

constexpr std::int64_t kBatch = 128;

struct MLP : nn::Module {
  nn::Linear fc1, fc2, fc3;
  explicit MLP(const std::string& device)
      : fc1(784, 256, true, {tg::float32, device}), fc2(256, 256, true, {tg::float32, device}),
        fc3(256, 10, true, {tg::float32, device}) {
    register_module("fc1", fc1);
    register_module("fc2", fc2);
    register_module("fc3", fc3);
  }
  Tensor forward(const Tensor& x) override { return fc3(fc2(fc1(x).relu()).relu()); }
};

/// The demo's CNN (made on the default device), its parameters and buffers moved to `device`.
struct CNN : fashion_mnist::CNN {
  explicit CNN(const std::string& device) {
    for (const auto& [name, p] : named_parameters()) {
      Tensor moved = p.to(device).detach().realize();
      get_parameter(name) = moved.requires_grad_();
    }
    for (const auto& [name, b] : named_buffers()) get_buffer(name) = b.to(device).realize();
  }
};

/// A model, its optimizer and its compiled step on `device`, with one fixed batch of inputs of
/// `shape` ([batch, ...]).
template <class Model> struct Trainer {
  Trainer(const std::string& device, const tg::Shape& shape)
      : model(device), opt(model.parameters(), {.lr = 1e-3}),
        x(tg::randn(shape, {tg::float32, device}).realize()),
        y(tg::randint(0, 10, {kBatch}, {tg::int64, device}).realize()) {}
  float step() { return jit(x, y).item<float>(); }
  Model model;
  tg::optim::Adam opt;
  Tensor x, y;
  std::function<Tensor(Tensor, Tensor)> jit = tg::jit([this](Tensor xb, Tensor yb) {
    opt.zero_grad();
    Tensor loss = F::cross_entropy(model(xb), yb);
    loss.realize();
    loss.backward();
    opt.step();
    return loss;
  });
};

/// The device both steps run on (TG_BENCH_DEVICE, default CPU).
const std::string& bench_device() {
  static const std::string d = [] {
    const char* e = std::getenv("TG_BENCH_DEVICE");
    return std::string(e && *e ? e : "CPU");
  }();
  return d;
}

template <class Model> void tg_step(benchmark::State& st, const tg::Shape& shape) {
  static std::unique_ptr<Trainer<Model>> t;
  try {
    if (!t) t = std::make_unique<Trainer<Model>>(bench_device(), shape);
    for (int i = 0; i < 3; ++i) t->step(); // compile, capture, first replay
  } catch (const std::exception& e) {      // the device is not there
    st.SkipWithError(e.what());
    return;
  }
  for (auto _ : st) benchmark::DoNotOptimize(t->step());
  tg::reset_stats();
  t->step();
  st.counters["kernels"] = double(tg::stats().kernels_launched); // launches of one step
  st.SetLabel(bench_device());
}
void tg_mlp_step(benchmark::State& st) { tg_step<MLP>(st, {kBatch, 784}); }
void tg_cnn_step(benchmark::State& st) { tg_step<CNN>(st, {kBatch, 1, 28, 28}); }
BENCHMARK(tg_mlp_step)->Unit(benchmark::kMillisecond)->UseRealTime();

/// The first step on a device of its own (so no kernel is in memory): cold, then warm disk cache.
void first_step(benchmark::State& st, bool cold) {
  static int devices = 0;
  if (bench_device() != "CPU") {
    st.SkipWithError("first-step times are measured on the CPU device only");
    return;
  }
  for (auto _ : st) {
    std::string name = "BENCH_CPU" + std::to_string(devices++);
    tg::register_device(name, [] { return std::make_shared<tg::CpuDevice>(); });
    if (cold) std::filesystem::remove_all(std::getenv("TG_CACHE_DIR"));
    auto t0 = std::chrono::steady_clock::now();
    Trainer<MLP> t(name, {kBatch, 784});
    t.step();
    st.SetIterationTime(
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
}
void tg_mlp_first_step_cold_cache(benchmark::State& st) { first_step(st, true); }
void tg_mlp_first_step_warm_cache(benchmark::State& st) { first_step(st, false); }
BENCHMARK(tg_mlp_first_step_cold_cache)
    ->Unit(benchmark::kMillisecond)
    ->UseManualTime()
    ->Iterations(1);
BENCHMARK(tg_mlp_first_step_warm_cache)
    ->Unit(benchmark::kMillisecond)
    ->UseManualTime()
    ->Iterations(3);

/// PyTorch's step of `model` (mlp, cnn) on the same device (the CPU, or `cuda` for a CUDA device),
/// timed by the script; skipped with the reason when no python3 on PATH (or /usr/bin's) can run it.
void torch_step(benchmark::State& st, const std::string& model) {
  std::string log = tg::detail::temp_path("torch-bench");
  std::string script = std::string(TG_BENCH_DIR) + "/train_step_torch.py";
  std::string device = bench_device().rfind("CUDA", 0) == 0 ? "cuda" : "cpu", why;
  double ms = 0;
  for (const std::string& python : tg_bench::pythons()) {
    int rc = tg::detail::run_process({python, script, "--device", device, "--model", model}, log);
    std::string out = tg::detail::read_file(log);
    if (rc == 0 && std::sscanf(out.c_str(), "ms_per_step %lf", &ms) == 1) break;
    ms = 0;
    why = "PyTorch step did not run (" + python + "; apt-get install python3-torch): " +
          out.substr(out.size() > 300 ? out.size() - 300 : 0);
  }
  std::filesystem::remove(log);
  if (ms == 0) {
    st.SkipWithError(why.c_str());
    return;
  }
  for (auto _ : st) st.SetIterationTime(ms / 1e3);
  st.SetLabel(device);
}
void torch_mlp_step(benchmark::State& st) { torch_step(st, "mlp"); }
void torch_cnn_step(benchmark::State& st) { torch_step(st, "cnn"); }
BENCHMARK(torch_mlp_step)->Unit(benchmark::kMillisecond)->UseManualTime()->Iterations(1);
BENCHMARK(tg_cnn_step)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(torch_cnn_step)->Unit(benchmark::kMillisecond)->UseManualTime()->Iterations(1);

} // namespace

int main(int argc, char** argv) {
  std::string dir = std::filesystem::temp_directory_path().string() + "/tg-bench-train-cache";
  std::filesystem::remove_all(dir);
  setenv("TG_CACHE_DIR", dir.c_str(), 1);
  return tg_bench::run(argc, argv,
                       {{"tg_mlp_step/real_time", "torch_mlp_step/iterations:1/manual_time"},
                        {"tg_cnn_step/real_time", "torch_cnn_step/iterations:1/manual_time"}});
}
