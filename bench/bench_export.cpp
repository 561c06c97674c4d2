// Exported C against tg's own CPU device, both on one thread: the Fashion-MNIST demo's MLP
// (784-256-128-10) at batch 1 and 128, exported by tg::export_model with a symbolic batch, built
// with the system C compiler (-O2 -march=native, as the CPU device builds its kernels; more flags
// from TG_BENCH_CFLAGS) and loaded with dlopen, against tg with the batch symbolic too (the same
// kernels) and with it fixed; and the time an export of the demo's CNN takes (its kernels are
// rendered, not compiled).
#include <dlfcn.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <tg/export.hpp>

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

} // namespace

int main(int argc, char** argv) {
  setenv("TG_THREADS", "1", 1); // the exported C runs on one thread: so does tg's CPU device
  return tg_bench::run(argc, argv,
                       {{"exported_mlp/1", "tg_mlp_symbolic/1"},
                        {"exported_mlp/128", "tg_mlp_symbolic/128"},
                        {"exported_mlp/1", "tg_mlp/1"},
                        {"exported_mlp/128", "tg_mlp/128"}});
}
