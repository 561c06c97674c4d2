// Exported C against tg's own CPU device, both on one thread: the Fashion-MNIST demo's MLP
// (784-256-128-10) at batch 1 and 128, exported by tg::export_model with a symbolic batch, built
// with the system C compiler (-O2 -march=native, as the CPU device builds its kernels; more flags
// from TG_BENCH_CFLAGS) and loaded with dlopen, against tg with the batch symbolic too (the same
// kernels) and with it fixed; the time an export of the demo's CNN takes (its kernels are
// rendered, not compiled); and, timed by node, the MLP's wasm and webgpu ES modules: load time
// and the time of a call at batch 1 and 128 (js_module/*).
// The training step too (issue #27): the MLP's Adam step at batch 64 (uint8 pixels, int32 labels,
// as example_export_fashion_mnist exports it) exported to C against tg's own jitted step on the
// CPU device (both on one thread) and on WEBGPU (Dawn, where it opens), and the step of the wasm
// and webgpu modules timed by node (js_module/*_step).
#include <dlfcn.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <tg/export.hpp>
#include <tg/webgpu.hpp>

#include "../examples/fashion_mnist_models.hpp"
#include "ratios.hpp"

namespace {

namespace fs = std::filesystem;
using tg::Tensor;

struct Mlp {
  fashion_mnist::MLP net;
};
Mlp& mlp() {
  static Mlp m;
  return m;
}

/// The exported MLP, built as a shared object and opened (null with the reason printed if not).
struct Exported {
  void* model = nullptr;
  int (*forward)(void*, long long, const float*, float*) = nullptr;
  std::string error;
  Exported() {
    const fs::path dir = fs::temp_directory_path() / "tg-bench-export";
    fs::remove_all(dir);
    tg::ExportSpec spec;
    spec.dim("batch", 1, 128)
        .method("forward", {{"x", tg::float32, {"batch", 784}}},
                [](const std::vector<Tensor>& in) { return mlp().net(in[0]); });
    tg::export_model(mlp().net, spec, "c", dir.string(), {.prefix = "mlp"});
    const char* cc = std::getenv("TG_CC");
    const char* flags = std::getenv("TG_BENCH_CFLAGS"); // more flags, to compare builds
    const std::string cmd = std::string(cc && *cc ? cc : "cc") + " -O2 -march=native " +
                            (flags ? flags : "") + " -shared -fPIC -o " +
                            (dir / "mlp.so").string() + " " + (dir / "mlp.c").string() + " -lm";
    if (std::system(cmd.c_str()) != 0) {
      error = "could not build the exported C: " + cmd;
      return;
    }
    void* so = dlopen((dir / "mlp.so").c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!so) {
      error = dlerror();
      return;
    }
    auto create =
        reinterpret_cast<void* (*)(const char*, char*, std::size_t)>(dlsym(so, "mlp_create"));
    forward =
        reinterpret_cast<int (*)(void*, long long, const float*, float*)>(dlsym(so, "mlp_forward"));
    char why[256] = "";
    model = create((dir / "mlp.safetensors").c_str(), why, sizeof why);
    if (!model) error = why;
  }
};
Exported& exported() {
  static Exported e;
  return e;
}

void exported_mlp(benchmark::State& st) {
  const std::int64_t batch = st.range(0);
  Exported& e = exported();
  if (!e.model) return st.SkipWithError(e.error.c_str());
  Tensor x = tg::randn({batch, 784});
  std::vector<float> in = x.to_vector<float>(), out(std::size_t(batch * 10));
  e.forward(e.model, batch, in.data(), out.data());
  if (!tg_bench::matches(st, out, mlp().net(x).to_vector<float>(), "exported MLP")) return;
  for (auto _ : st) {
    e.forward(e.model, batch, in.data(), out.data());
    benchmark::DoNotOptimize(out.data());
  }
}
BENCHMARK(exported_mlp)->Arg(1)->Arg(128)->Unit(benchmark::kMicrosecond);

void tg_mlp(benchmark::State& st) {
  const std::int64_t batch = st.range(0);
  Tensor x = tg::randn({batch, 784}).realize();
  mlp().net(x).realize();
  for (auto _ : st) {
    Tensor y = mlp().net(x).realize();
    benchmark::DoNotOptimize(y);
  }
}
BENCHMARK(tg_mlp)->Arg(1)->Arg(128)->Unit(benchmark::kMicrosecond);

/// The same with the batch symbolic, as the export has it: the kernels the export has.
void tg_mlp_symbolic(benchmark::State& st) {
  const std::int64_t batch = st.range(0);
  Tensor x = tg::randn({batch, 784}).realize().reshape({tg::sym("batch", 1, 128, batch), 784});
  mlp().net(x).realize();
  for (auto _ : st) {
    Tensor y = mlp().net(x).realize();
    benchmark::DoNotOptimize(y);
  }
}
BENCHMARK(tg_mlp_symbolic)->Arg(1)->Arg(128)->Unit(benchmark::kMicrosecond);

/// The training step's model and spec: the demo's MLP (784-256-128-10) from a fixed seed on
/// `device`, Adam, batch 64.
struct StepModel {
  static constexpr std::int64_t batch = 64;
  struct Net : tg::nn::Module {
    tg::nn::Linear fc1, fc2, fc3;
    explicit Net(const std::string& device)
        : fc1(784, 256, true, {tg::float32, device}), fc2(256, 128, true, {tg::float32, device}),
          fc3(128, 10, true, {tg::float32, device}) {
      register_module("fc1", fc1);
      register_module("fc2", fc2);
      register_module("fc3", fc3);
    }
    Tensor forward(const Tensor& x) override { return fc3(fc2(fc1(x).relu()).relu()); }
  } net;
  tg::optim::Adam opt;
  explicit StepModel(const std::string& device)
      : net((tg::manual_seed(1), Net(device))), opt(net.parameters(), {.lr = 2e-3}) {}
  Tensor step(const Tensor& pixels, const Tensor& labels) {
    opt.zero_grad();
    Tensor x = (pixels.cast(tg::float32) / 255.0f - 0.2860f) / 0.3530f;
    Tensor loss = tg::nn::F::cross_entropy(net(x), labels);
    loss.realize();
    loss.backward();
    opt.step();
    return loss;
  }
  tg::ExportSpec spec() {
    tg::ExportSpec s;
    s.state(opt.state_dict(), "optim.");
    s.method("step", {{"pixels", tg::uint8, {batch, 784}}, {"labels", tg::int32, {batch}}},
             [this](const std::vector<Tensor>& in) { return step(in[0], in[1]); }, {"loss"});
    return s;
  }
};
/// One batch of inputs (the same in every benchmark).
std::vector<std::uint8_t> step_pixels() {
  std::vector<std::uint8_t> px(StepModel::batch * 784);
  for (std::size_t i = 0; i < px.size(); ++i) px[i] = std::uint8_t(i * 7 % 251);
  return px;
}
std::vector<std::int32_t> step_labels() {
  std::vector<std::int32_t> y(StepModel::batch);
  for (std::size_t i = 0; i < y.size(); ++i) y[i] = std::int32_t(i % 10);
  return y;
}
/// tg's first loss from the fixed seed, on the CPU.
float first_loss() {
  static const float l = [] {
    StepModel m("CPU");
    return m
        .step(Tensor::from_data(step_pixels(), {StepModel::batch, 784}, tg::uint8),
              Tensor::from_data(step_labels(), {StepModel::batch}, tg::int32))
        .item<float>();
  }();
  return l;
}

/// The exported step, built as a shared object and opened.
struct ExportedStep {
  void* model = nullptr;
  int (*step)(void*, const std::uint8_t*, const std::int32_t*, float*) = nullptr;
  std::string error;
  float first = 0; // the loss of its first step
  ExportedStep() {
    const fs::path dir = fs::temp_directory_path() / "tg-bench-export-step";
    fs::remove_all(dir);
    StepModel m("CPU");
    tg::export_model(m.net, m.spec(), "c", dir.string(), {.prefix = "train"});
    const char* cc = std::getenv("TG_CC");
    const char* flags = std::getenv("TG_BENCH_CFLAGS");
    const std::string cmd = std::string(cc && *cc ? cc : "cc") + " -O2 -march=native " +
                            (flags ? flags : "") + " -shared -fPIC -o " +
                            (dir / "train.so").string() + " " + (dir / "train.c").string() + " -lm";
    if (std::system(cmd.c_str()) != 0) {
      error = "could not build the exported C: " + cmd;
      return;
    }
    void* so = dlopen((dir / "train.so").c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!so) {
      error = dlerror();
      return;
    }
    auto create =
        reinterpret_cast<void* (*)(const char*, char*, std::size_t)>(dlsym(so, "train_create"));
    step = reinterpret_cast<decltype(step)>(dlsym(so, "train_step"));
    char why[256] = "";
    model = create((dir / "train.safetensors").c_str(), why, sizeof why);
    if (!model) error = why;
    if (model) step(model, step_pixels().data(), step_labels().data(), &first);
  }
};

void exported_step(benchmark::State& st) {
  static ExportedStep e;
  if (!e.model) return st.SkipWithError(e.error.c_str());
  if (!tg_bench::matches(st, {e.first}, {first_loss()}, "exported step's first loss")) return;
  const std::vector<std::uint8_t> px = step_pixels();
  const std::vector<std::int32_t> y = step_labels();
  float loss = 0;
  for (auto _ : st) {
    e.step(e.model, px.data(), y.data(), &loss);
    benchmark::DoNotOptimize(loss);
  }
}
BENCHMARK(exported_step)->Unit(benchmark::kMicrosecond);

/// tg's own step, compiled with tg::jit, on `device`.
void tg_step(benchmark::State& st, const std::string& device) {
  try {
    StepModel m(device);
    Tensor px = Tensor::from_data(step_pixels(), {StepModel::batch, 784}, tg::uint8).to(device);
    Tensor y = Tensor::from_data(step_labels(), {StepModel::batch}, tg::int32).to(device);
    auto step = tg::jit([&](Tensor a, Tensor b) { return m.step(a, b); });
    if (!tg_bench::matches(st, {step(px, y).item<float>()}, {first_loss()}, "tg step")) return;
    for (int k = 0; k < 2; ++k) step(px, y); // captured, replayed
    for (auto _ : st) {
      float l = step(px, y).item<float>();
      benchmark::DoNotOptimize(l);
    }
  } catch (const tg::error& e) {
    st.SkipWithError((device + ": " + e.what()).c_str());
  }
}
BENCHMARK_CAPTURE(tg_step, cpu, std::string("CPU"))->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(tg_step, webgpu, std::string("WEBGPU"))->Unit(benchmark::kMicrosecond);

void export_cnn(benchmark::State& st) {
  fashion_mnist::CNN cnn;
  cnn.eval();
  tg::ExportSpec spec;
  spec.dim("batch", 1, 256)
      .method("forward", {{"image", tg::float32, {"batch", 1, 28, 28}}},
              [&](const std::vector<Tensor>& in) { return cnn(in[0]).softmax(1); });
  const std::string dir = (fs::temp_directory_path() / "tg-bench-export-cnn").string();
  for (auto _ : st) tg::export_model(cnn, spec, "c", dir, {.prefix = "cnn"});
}
BENCHMARK(export_cnn)->Unit(benchmark::kMillisecond);

/// The MLP exported as the wasm and webgpu ES modules, timed by node (WebGPU on Dawn, npm
/// webgpu from TG_NODE_MODULES; OpenGL ES, or TG_WEBGPU_BACKEND): each module's load time
/// (create) and the time of a call at batch 1 and 128, as JSON, or "" with the reason in `why`.
const char* node_timer = R"JS(
import { createRequire } from "node:module";
const [dir, modules, backend] = process.argv.slice(2);
const { create: dawn, globals } = createRequire(import.meta.url)(modules + "/webgpu");
Object.assign(globalThis, globals);
globalThis.tgGpu = dawn([`backend=${backend}`]);
const adapter = await globalThis.tgGpu.requestAdapter({ featureLevel: "compatibility" });
const names = ["maxStorageBuffersPerShaderStage", "maxComputeInvocationsPerWorkgroup",
               "maxComputeWorkgroupSizeX", "maxStorageBufferBindingSize"];
const device = await adapter.requestDevice({ requiredLimits: Object.fromEntries(names.map((n) => [n, adapter.limits[n]])) });
const out = {};
for (const target of ["wasm", "webgpu"]) {
  const { create } = await import(`${dir}/${target}/mlp.js`);
  let t = performance.now();
  const model = target === "webgpu" ? await create(device) : await create();
  out[`${target}_load`] = performance.now() - t;
  for (const batch of [1, 128]) {
    const x = new Float32Array(batch * 784).map((_, i) => Math.sin(i));
    await model.forward({ x });
    const n = batch === 1 ? 50 : 10;
    t = performance.now();
    for (let k = 0; k < n; ++k) await model.forward({ x });
    out[`${target}_${batch}`] = (performance.now() - t) / n;
  }
  model.destroy();
  const step = await import(`${dir}/${target}/train.js`);
  const trainer = target === "webgpu" ? await step.create(device) : await step.create();
  const pixels = new Uint8Array(64 * 784).map((_, i) => (i * 7) % 251);
  const labels = new Int32Array(64).map((_, i) => i % 10);
  out[`${target}_first_loss`] = (await trainer.step({ pixels, labels })).loss[0];
  t = performance.now();
  for (let k = 0; k < 10; ++k) await trainer.step({ pixels, labels });
  out[`${target}_step`] = (performance.now() - t) / 10;
  trainer.destroy();
}
console.log(JSON.stringify(out));
device.destroy();
delete globalThis.tgGpu;
)JS";

/// The node timings (milliseconds by name), measured once.
const std::map<std::string, double>& node_timings(std::string& why) {
  static std::string reason;
  static const std::map<std::string, double> t = [] {
    std::map<std::string, double> out;
    const fs::path dir = fs::temp_directory_path() / "tg-bench-export-js";
    fs::remove_all(dir);
    tg::ExportSpec spec;
    spec.dim("batch", 1, 128)
        .method("forward", {{"x", tg::float32, {"batch", 784}}},
                [](const std::vector<Tensor>& in) { return mlp().net(in[0]); });
    try {
      StepModel m("CPU");
      for (const char* target : {"wasm", "webgpu"}) {
        tg::export_model(mlp().net, spec, target, (dir / target).string(), {.prefix = "mlp"});
        tg::export_model(m.net, m.spec(), target, (dir / target).string(), {.prefix = "train"});
      }
    } catch (const tg::error& e) {
      reason = e.what();
      return out;
    }
    std::ofstream(dir / "time.mjs") << node_timer;
    const char* m = std::getenv("TG_NODE_MODULES");
    const char* b = std::getenv("TG_WEBGPU_BACKEND");
    const std::string cmd = "EGL_PLATFORM=surfaceless node " + (dir / "time.mjs").string() + " " +
                            dir.string() + " " +
                            (m && *m ? m : "/usr/local/lib/tg-npm/node_modules") + " " +
                            (b && *b ? b : "opengles") + " 2>/dev/null";
    std::FILE* p = popen(cmd.c_str(), "r");
    std::string text;
    char buf[4096];
    while (p && std::fgets(buf, sizeof buf, p)) text += buf;
    if (!p || pclose(p) != 0 || text.find('{') == std::string::npos) {
      reason = "node could not time the modules: " + cmd;
      return out;
    }
    text = text.substr(text.find('{'));
    for (std::size_t at = 0; (at = text.find('"', at)) != std::string::npos;) {
      const std::size_t end = text.find('"', at + 1);
      out[text.substr(at + 1, end - at - 1)] = std::atof(text.c_str() + end + 2);
      at = end + 1;
    }
    return out;
  }();
  why = reason;
  return t;
}

/// One node timing as the iteration time: js/<wasm|webgpu>/<load|1|128>.
void js_module(benchmark::State& st, const std::string& key) {
  std::string why;
  const auto& t = node_timings(why);
  auto it = t.find(key);
  if (it == t.end()) return st.SkipWithError((why.empty() ? "no timing " + key : why).c_str());
  if (key.ends_with("_step")) { // the module's first step: tg's first loss
    auto first = t.find(key.substr(0, key.size() - 4) + "first_loss");
    if (first == t.end() ||
        !tg_bench::matches(st, {float(first->second)}, {first_loss()}, key + " first loss"))
      return;
  }
  for (auto _ : st) st.SetIterationTime(it->second / 1e3);
}
BENCHMARK_CAPTURE(js_module, wasm_load, std::string("wasm_load"))
    ->UseManualTime()
    ->Iterations(1)
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(js_module, wasm_call_1, std::string("wasm_1"))
    ->UseManualTime()
    ->Iterations(1)
    ->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(js_module, wasm_call_128, std::string("wasm_128"))
    ->UseManualTime()
    ->Iterations(1)
    ->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(js_module, wasm_step, std::string("wasm_step"))
    ->UseManualTime()
    ->Iterations(1)
    ->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(js_module, webgpu_load, std::string("webgpu_load"))
    ->UseManualTime()
    ->Iterations(1)
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(js_module, webgpu_call_1, std::string("webgpu_1"))
    ->UseManualTime()
    ->Iterations(1)
    ->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(js_module, webgpu_call_128, std::string("webgpu_128"))
    ->UseManualTime()
    ->Iterations(1)
    ->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(js_module, webgpu_step, std::string("webgpu_step"))
    ->UseManualTime()
    ->Iterations(1)
    ->Unit(benchmark::kMicrosecond);

} // namespace

int main(int argc, char** argv) {
  setenv("TG_THREADS", "1", 1); // the exported C runs on one thread: so does tg's CPU device
  return tg_bench::run(argc, argv,
                       {{"exported_mlp/1", "tg_mlp_symbolic/1"},
                        {"exported_mlp/128", "tg_mlp_symbolic/128"},
                        {"exported_mlp/1", "tg_mlp/1"},
                        {"exported_mlp/128", "tg_mlp/128"},
                        {"js_module/wasm_call_1/iterations:1/manual_time", "exported_mlp/1"},
                        {"js_module/wasm_call_128/iterations:1/manual_time", "exported_mlp/128"},
                        {"exported_step", "tg_step/cpu"},
                        {"js_module/wasm_step/iterations:1/manual_time", "exported_step"},
                        {"js_module/webgpu_step/iterations:1/manual_time", "tg_step/webgpu"},
                        {"js_module/webgpu_step/iterations:1/manual_time", "tg_step/cpu"}});
}
