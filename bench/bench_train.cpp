// The training step of issue #5: an MLP 784-256-256-10, batch 128, Adam, cross-entropy, the whole
// step (forward, loss, backward, update) compiled with tg::jit, against the same step in PyTorch
// (bench/mlp_step_torch.py, run as a subprocess in this same run when python3-torch is installed).
// Also the time to the first step with a cold and with a warm kernel cache (CPU only).
// TG_BENCH_DEVICE=CUDA runs both steps on the GPU instead (PyTorch with --device cuda).
#include <tg/runtime/cpu.hpp>
#include <tg/tg.hpp>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>

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

/// A model, its optimizer and its compiled step on `device`, with one fixed batch.
struct Trainer {
  explicit Trainer(const std::string& device)
      : model(device), opt(model.parameters(), {.lr = 1e-3}),
        x(tg::randn({kBatch, 784}, {tg::float32, device}).realize()),
        y(tg::randint(0, 10, {kBatch}, {tg::int64, device}).realize()) {}
  float step() { return jit(x, y).item<float>(); }
  MLP model;
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

void tg_mlp_step(benchmark::State& st) {
  static std::unique_ptr<Trainer> t;
  try {
    if (!t) t = std::make_unique<Trainer>(bench_device());
    for (int i = 0; i < 3; ++i) t->step(); // compile, capture, first replay
  } catch (const std::exception& e) {      // the device is not there
    st.SkipWithError(e.what());
    return;
  }
  for (auto _ : st) benchmark::DoNotOptimize(t->step());
  st.SetLabel(bench_device());
}
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
    Trainer t(name);
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

/// PyTorch's step on the same device (the CPU, or `cuda` for a CUDA device), timed by the script;
/// skipped with the reason when no python3 on PATH (or /usr/bin's) can run it.
void torch_mlp_step(benchmark::State& st) {
  std::string log = tg::detail::temp_path("torch-bench");
  std::string script = std::string(TG_BENCH_DIR) + "/mlp_step_torch.py";
  std::string device = bench_device().rfind("CUDA", 0) == 0 ? "cuda" : "cpu", why;
  double ms = 0;
  for (const std::string& python : tg_bench::pythons()) {
    int rc = tg::detail::run_process({python, script, "--device", device}, log);
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
BENCHMARK(torch_mlp_step)->Unit(benchmark::kMillisecond)->UseManualTime()->Iterations(1);

} // namespace

int main(int argc, char** argv) {
  std::string dir = std::filesystem::temp_directory_path().string() + "/tg-bench-train-cache";
  std::filesystem::remove_all(dir);
  setenv("TG_CACHE_DIR", dir.c_str(), 1);
  return tg_bench::run(argc, argv,
                       {{"tg_mlp_step/real_time", "torch_mlp_step/iterations:1/manual_time"}});
}
