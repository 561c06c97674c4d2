// tg::export_model: the `c` target compiled with the system C compiler alone (cc, or TG_CC) and
// run by a small C driver; its outputs compared with tg's own (the CPU device's kernels, bit for
// bit where the CPU device renders the same kernels); the `json` target run by
// tg::load_exported; determinism; and the errors, at export time and in the exported loaders.
// Without a C compiler the cases say so (and fail under CI=true).
#include <doctest/doctest.h>
#include <tg/export.hpp>
#include <tg/vulkan.hpp>
#include <tg/webgpu.hpp>

#include "../examples/fashion_mnist_models.hpp"

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

namespace fs = std::filesystem;
using tg::Tensor;

namespace {

std::string compiler() {
  const char* cc = std::getenv("TG_CC");
  return cc && *cc ? cc : "cc";
}
/// The C++ compiler of the vulkan target's host (TG_CXX, default c++).
std::string cxx_compiler() {
  const char* cxx = std::getenv("TG_CXX");
  return cxx && *cxx ? cxx : "c++";
}
bool have_compiler() {
  static const bool ok = std::system((compiler() + " --version > /dev/null 2>&1").c_str()) == 0;
  if (!ok) {
    MESSAGE("skipped: no C compiler " << compiler() << " (set TG_CC)");
    const char* ci = std::getenv("CI");
    CHECK_FALSE((ci && std::string(ci) == "true"));
  }
  return ok;
}

fs::path scratch(const std::string& name) {
  const fs::path d = fs::path(TG_BINARY_DIR) / "export-test" / name;
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}
std::string read_text(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
}
void write_bytes(const fs::path& p, const void* data, std::size_t n) {
  std::ofstream(p, std::ios::binary).write(static_cast<const char*>(data), std::streamsize(n));
}
/// Runs a shell command; its exit status, and its output in `out` (printed on a failure unless
/// one is expected).
int run(const std::string& cmd, std::string* out = nullptr, bool may_fail = false) {
  const fs::path log = fs::path(TG_BINARY_DIR) / "export-test" / "last-command.log";
  const int rc = std::system((cmd + " > " + log.string() + " 2>&1").c_str());
  const std::string text = read_text(log);
  if (out) *out = text;
  if (rc != 0 && !may_fail) MESSAGE(cmd << "\n" << text);
  return rc;
}

/// Builds `dir`/drv from the C driver `source` and the vulkan target's host <prefix>.cpp (C++17
/// over Vulkan-Hpp, with warnings); whether it built.
bool build_vulkan_driver(const fs::path& dir, const char* source, const std::string& prefix) {
  write_bytes(dir / "drv.c", source, std::strlen(source));
  return run("cd " + dir.string() + " && " + cxx_compiler() + " -std=c++17 -O1 -Wall -Wextra -c " +
             prefix + ".cpp -o host.o && " + compiler() +
             " -O2 -std=c11 -Wall -c drv.c -o drv.o && " + cxx_compiler() +
             " drv.o host.o -ldl -o drv") == 0;
}

/// A C program over an exported model of prefix `net`: `drv WEIGHTS|embedded METHOD BATCH IN OUT`
/// reads BATCH x NIN floats, calls net_<METHOD> and writes BATCH x NOUT floats; a failure prints
/// the model's message and exits 2.
const char* driver = R"C(
#include "net.h"
#ifndef NIN
#define NIN 32
#define NOUT 10
#endif
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
int main(int argc, char** argv) {
  char err[256];
  long long batch = atoll(argv[3]);
  float* x = (float*)malloc(sizeof(float) * NIN * (batch > 0 ? batch : 1));
  float* y = (float*)malloc(sizeof(float) * NOUT * (batch > 0 ? batch : 1));
  FILE* f;
  int rc;
#ifdef EMBEDDED
  net_model* m = strcmp(argv[1], "embedded") == 0 ? net_create_embedded(err, sizeof err)
                                                    : net_create(argv[1], err, sizeof err);
#else
  net_model* m = net_create(argv[1], err, sizeof err);
#endif
  if (!m) {
    printf("create: %s\n", err);
    return 2;
  }
  f = fopen(argv[4], "rb");
  if (!f || fread(x, sizeof(float), (size_t)(NIN * batch), f) != (size_t)(NIN * batch)) return 3;
  fclose(f);
  rc = strcmp(argv[2], "forward") == 0 ? net_forward(m, batch, x, y) : net_logits(m, batch, x, y);
  if (rc) {
    printf("%s: %s\n", argv[2], net_error(m));
    return 2;
  }
  f = fopen(argv[5], "wb");
  fwrite(y, sizeof(float), (size_t)(NOUT * batch), f);
  fclose(f);
  net_destroy(m);
  free(x);
  free(y);
  return 0;
}
)C";

struct Mlp {
  tg::nn::Sequential net;
  Mlp() : net(make()) {}
  static tg::nn::Sequential make() {
    tg::manual_seed(7);
    return tg::nn::Sequential(tg::nn::Linear(32, 256), tg::nn::ReLU(), tg::nn::Linear(256, 10));
  }
  tg::ExportSpec spec() {
    tg::ExportSpec s;
    s.dim("batch", 1, 128);
    s.method("forward", {{"x", tg::float32, {"batch", 32}}},
             [this](const std::vector<Tensor>& in) { return net(in[0]).softmax(1); }, {"probs"});
    s.method("logits", {{"x", tg::float32, {"batch", 32}}},
             [this](const std::vector<Tensor>& in) { return net(in[0]); });
    return s;
  }
};

/// Builds the driver over the export in `dir` (extra: compiler flags); its path, or "" on failure.
std::string build_driver(const fs::path& dir, const std::string& extra = "") {
  write_bytes(dir / "drv.c", driver, std::strlen(driver));
  const std::string cc = compiler() + " -O2 -std=c11 -Wall " + extra;
  // the exported file alone first: it builds with `cc -O2 -c`
  if (run("cd " + dir.string() + " && " + cc + " -c net.c -o net.o") != 0) return "";
  if (run("cd " + dir.string() + " && " + cc + " drv.c net.o -lm -o drv") != 0) return "";
  return (dir / "drv").string();
}

/// Writes x to dir/x.bin as float32, runs `cmd` in dir (which reads x.bin and writes y.bin);
/// y.bin's floats, or nothing with the command's output in `why` on failure.
std::vector<float> through(const fs::path& dir, const Tensor& x, const std::string& cmd,
                           std::string* why) {
  std::vector<float> in = x.to_vector<float>();
  write_bytes(dir / "x.bin", in.data(), in.size() * sizeof(float));
  std::string out;
  if (run("cd " + dir.string() + " && " + cmd, &out, why != nullptr) != 0) {
    if (why) *why = out;
    return {};
  }
  const std::string bytes = read_text(dir / "y.bin");
  std::vector<float> y(bytes.size() / sizeof(float));
  std::memcpy(y.data(), bytes.data(), y.size() * sizeof(float));
  return y;
}

/// Runs method `method` of the driver on x; the outputs (empty with the message in `why` on
/// failure).
std::vector<float> call(const std::string& drv, const std::string& weights,
                        const std::string& method, const Tensor& x, std::string* why = nullptr) {
  return through(fs::path(drv).parent_path(), x,
                 drv + " " + weights + " " + method + " " + std::to_string(x.shape()[0]) +
                     " x.bin y.bin",
                 why);
}

/// Exported outputs against tg's: bit for bit where the CPU device renders the kernels the export
/// does (its default target), else within float32 rounding.
void same(const std::vector<float>& got, const Tensor& want) {
  std::vector<float> w = want.to_vector<float>();
  REQUIRE(got.size() == w.size());
  const bool exact =
      tg::device("CPU")->target().lower.tile_lanes == tg::Target::cpu().lower.tile_lanes;
  int differ = 0;
  for (std::size_t i = 0; i < w.size(); ++i) {
    const bool ok = exact ? std::memcmp(&got[i], &w[i], sizeof(float)) == 0
                          : std::fabs(got[i] - w[i]) <= 1e-5f * (1 + std::fabs(w[i]));
    if (!ok && differ++ < 4) FAIL_CHECK("[" << i << "] " << got[i] << " vs tg's " << w[i]);
  }
  CHECK(differ == 0);
}

} // namespace

TEST_CASE("export c: an MLP with a symbolic batch, two methods sharing its weights, equals tg") {
  if (!have_compiler()) return;
  Mlp m;
  const fs::path dir = scratch("mlp");
  tg::ExportResult r = tg::export_model(m.net, m.spec(), "c", dir.string(), {.prefix = "net"});
  CHECK(r.files.size() == 3);
  const std::string header = read_text(dir / "net.h");
  CHECK(header.find("int net_forward(net_model* m, long long batch, const float* x, float* "
                    "probs);") != std::string::npos);
  CHECK(header.find("int net_logits(") != std::string::npos);
  // the weights file is the module's state_dict, under its names
  tg::StateDict saved = tg::safetensors::load_file((dir / "net.safetensors").string());
  CHECK(saved.keys() == std::vector<std::string>{"0.bias", "0.weight", "2.bias", "2.weight"});

  const std::string drv = build_driver(dir);
  REQUIRE(!drv.empty());
  const std::string weights = (dir / "net.safetensors").string();
  tg::manual_seed(11);
  for (std::int64_t batch : {1, 7, 128}) {
    CAPTURE(batch);
    Tensor x = tg::randn({batch, 32});
    same(call(drv, weights, "forward", x), m.net(x).softmax(1));
    same(call(drv, weights, "logits", x), m.net(x));
  }
  std::string why;
  CHECK(call(drv, weights, "forward", tg::randn({129, 32}), &why).empty());
  CHECK(why.find("forward: batch = 129 is outside [1, 128]") != std::string::npos);

  // -DNET_THREADS=2: large kernels split over threads, the same results
  const fs::path threaded = scratch("mlp-threads");
  for (const char* f : {"net.h", "net.c", "net.safetensors"}) fs::copy(dir / f, threaded / f);
  const std::string drv2 = build_driver(threaded, "-DNET_THREADS=2 -pthread");
  REQUIRE(!drv2.empty());
  Tensor x = tg::randn({128, 32});
  same(call(drv2, weights, "forward", x), m.net(x).softmax(1));
}

TEST_CASE("export c: the demo's CNN (convolutions, batch norm, pooling) equals tg") {
  if (!have_compiler()) return;
  tg::manual_seed(3);
  fashion_mnist::CNN cnn;
  cnn.eval();
  tg::ExportSpec spec;
  spec.dim("batch", 1, 64)
      .method("forward", {{"image", tg::float32, {"batch", 1, 28, 28}}},
              [&](const std::vector<Tensor>& in) { return cnn(in[0]).softmax(1); });
  spec.method("logits", {{"image", tg::float32, {"batch", 1, 28, 28}}},
              [&](const std::vector<Tensor>& in) { return cnn(in[0]); });
  const fs::path dir = scratch("cnn");
  const auto t0 = std::chrono::steady_clock::now();
  tg::export_model(cnn, spec, "c", dir.string(), {.prefix = "net"});
  MESSAGE("CNN exported in "
          << std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() << " s");
  const std::string drv = build_driver(dir, "-DNIN=784 -DNOUT=10");
  REQUIRE(!drv.empty());
  tg::manual_seed(14);
  Tensor x = tg::rand({3, 1, 28, 28});
  same(call(drv, (dir / "net.safetensors").string(), "forward", x), cnn(x).softmax(1));
  same(call(drv, (dir / "net.safetensors").string(), "logits", x), cnn(x));
}

TEST_CASE("export c: weights embedded in the source") {
  if (!have_compiler()) return;
  Mlp m;
  const fs::path dir = scratch("mlp-embedded");
  tg::export_model(m.net, m.spec(), "c", dir.string(), {.prefix = "net", .embed_weights = true});
  CHECK(read_text(dir / "net.h").find("net_create_embedded(char* error") != std::string::npos);
  const std::string drv = build_driver(dir, "-DEMBEDDED");
  REQUIRE(!drv.empty());
  tg::manual_seed(12);
  Tensor x = tg::randn({5, 32});
  same(call(drv, "embedded", "logits", x), m.net(x));
}

TEST_CASE("export c: iso_c, plain loops that any C11 compiler takes") {
  if (!have_compiler()) return;
  Mlp m;
  const fs::path dir = scratch("mlp-iso");
  tg::export_model(m.net, m.spec(), "c", dir.string(), {.prefix = "net", .iso_c = true});
  const std::string source = read_text(dir / "net.c");
  CHECK(source.find("tg_f32x8 v") == std::string::npos); // no vector code
  const std::string drv = build_driver(dir, "-pedantic-errors");
  REQUIRE(!drv.empty());
  tg::manual_seed(13);
  Tensor x = tg::randn({9, 32});
  same(call(drv, (dir / "net.safetensors").string(), "forward", x), m.net(x).softmax(1));
}

/// Outputs of a GPU's kernels against tg's CPU ones: float32 rounding apart.
void near(const std::vector<float>& got, const Tensor& want, float atol) {
  std::vector<float> w = want.to_vector<float>();
  REQUIRE(got.size() == w.size());
  int differ = 0;
  for (std::size_t i = 0; i < w.size(); ++i)
    if (!(std::fabs(got[i] - w[i]) <= atol + 1e-4f * std::fabs(w[i])) && differ++ < 4)
      FAIL_CHECK("[" << i << "] " << got[i] << " vs tg's " << w[i]);
  CHECK(differ == 0);
}

/// Whether device `name` opens here.
bool has_device(const std::string& name) {
  for (const tg::DeviceInfo& d : tg::devices())
    if (d.name == name) return d.available;
  return false;
}

TEST_CASE("export json: the program reloaded by tg::load_exported computes tg's outputs") {
  Mlp m;
  const fs::path dir = scratch("mlp-json");
  tg::ExportOptions o{.prefix = "net"};
  o.json_dialects = {"c", "wgsl", "glsl"};
  tg::ExportResult r = tg::export_model(m.net, m.spec(), "json", dir.string(), o);
  CHECK(r.files.size() == 2);
  const std::string doc = read_text(dir / "net.json");
  CHECK(doc.find("\"format\": \"tg.export.v1\"") != std::string::npos);
  CHECK(doc.find("\"shape\": [\"batch\", 10]") != std::string::npos);
  CHECK(doc.find("\"dialect\": \"wgsl\"") != std::string::npos);
  CHECK(doc.find("@compute") != std::string::npos);
  CHECK(doc.find("#version") != std::string::npos);
  tg::manual_seed(15);
  std::vector<std::string> devices = {"CPU"};
  for (const char* d : {"WEBGPU", "VULKAN"})
    if (has_device(d)) devices.push_back(d);
  for (const std::string& dev : devices) {
    CAPTURE(dev);
    tg::ExportedModel e = tg::load_exported((dir / "net.json").string(), dev);
    CHECK(e.methods() == std::vector<std::string>{"forward", "logits"});
    for (std::int64_t batch : {1, 7}) {
      CAPTURE(batch);
      Tensor x = tg::randn({batch, 32});
      std::vector<Tensor> y = e.run("logits", {x});
      REQUIRE(y.size() == 1);
      CHECK(y[0].device() == dev);
      if (dev == "CPU") {
        same(y[0].to_vector<float>(), m.net(x));
        same(e.run("forward", {x})[0].to_vector<float>(), m.net(x).softmax(1));
      } else { // a GPU's kernels: float32 rounding apart
        near(y[0].to_vector<float>(), m.net(x), 1e-5f);
        near(e.run("forward", {x})[0].to_vector<float>(), m.net(x).softmax(1), 1e-6f);
      }
    }
  }
  // the errors: inputs, dims, devices, weights
  tg::ExportedModel e = tg::load_exported((dir / "net.json").string(), "CPU");
  auto fails = [](auto&& f, const std::string& message) {
    try {
      f();
      FAIL("no error; expected: " << message);
    } catch (const tg::export_error& x) {
      CHECK_MESSAGE(std::string(x.what()).find(message) != std::string::npos, x.what());
    }
  };
  const Tensor x2 = tg::randn({2, 32});
  fails([&] { e.run("predict", {x2}); }, "no method 'predict' (methods: forward, logits)");
  const Tensor x31 = tg::randn({2, 31}), x129 = tg::randn({129, 32}), x64 = x2.cast(tg::float64);
  fails([&] { e.run("logits", {x31}); }, "'x' has size 31 in dimension 1; the method takes 32");
  fails([&] { e.run("logits", {x129}); }, "logits: batch = 129 is outside [1, 128]");
  fails([&] { e.run("logits", {x64}); }, "logits: input 'x' is float64; the method takes float32");
  fails([&] { e.run("logits", {}); }, "logits: takes 1 inputs, got 0");
  fails([&] { tg::load_exported((dir / "net.json").string(), "INTERP"); },
        "device INTERP runs tg's own IR");
  tg::StateDict other = m.net.state_dict();
  other.insert("2.weight", tg::zeros({10, 255}));
  tg::safetensors::save_file(other, (dir / "shape.safetensors").string());
  fails(
      [&] {
        tg::load_exported((dir / "net.json").string(), "CPU", (dir / "shape.safetensors").string());
      },
      "weight '2.weight' is float32[10, 255] in the file; the program reads float32[10, 256]");
  const std::string cut = doc.substr(0, doc.size() / 2);
  write_bytes(dir / "cut.json", cut.data(), cut.size());
  fails([&] { tg::load_exported((dir / "cut.json").string(), "CPU"); }, "cut.json: invalid JSON");
  tg::ExportOptions c_only{.prefix = "net"};
  c_only.json_dialects = {"c"};
  tg::export_model(m.net, m.spec(), "json", (dir / "c-only").string(), c_only);
  if (has_device("WEBGPU"))
    fails([&] { tg::load_exported((dir / "c-only" / "net.json").string(), "WEBGPU"); },
          "device WEBGPU compiles wgsl and the document holds the program in c");
}

/// Whether node runs here (under CI=true it must).
bool have_node() {
  static const bool ok = std::system("node --version > /dev/null 2>&1") == 0;
  if (!ok) {
    MESSAGE("skipped: no node on PATH (tools/install-deps.sh installs Debian's nodejs)");
    const char* ci = std::getenv("CI");
    CHECK_FALSE((ci && std::string(ci) == "true"));
  }
  return ok;
}

/// A node program over the wasm export in its folder: `node drv.mjs METHOD X Y [WEIGHTS] [f64]`
/// reads float32 inputs from X, runs METHOD and writes its first output to Y; a failure prints
/// the message and exits 2.
const char* node_driver = R"JS(
import { create } from "./net.js";
import fs from "node:fs";
const [method, xin, yout, weights, as] = process.argv.slice(2);
try {
  const model = await create(weights && weights !== "-" ? { weights } : {});
  const data = new Float32Array(new Uint8Array(fs.readFileSync(xin)).buffer);
  const out = await model[method]({ x: as === "f64" ? Float64Array.from(data) : data });
  fs.writeFileSync(yout, new Uint8Array(Object.values(out)[0].buffer));
  model.destroy();
} catch (e) {
  console.log(e.message);
  process.exit(2);
}
)JS";

TEST_CASE("export wasm: the C in WebAssembly, run by its ES module in node, equals tg") {
  if (!have_node()) return;
  Mlp m;
  const fs::path dir = scratch("mlp-wasm");
  tg::ExportResult r = tg::export_model(m.net, m.spec(), "wasm", dir.string(), {.prefix = "net"});
  CHECK(r.files.size() == 3);
  const std::string js = read_text(dir / "net.js");
  CHECK(js.find("export async function create(") != std::string::npos);
  CHECK(js.find("//   await model.forward({x: Float32Array}) -> {probs: Float32Array}") !=
        std::string::npos);
  write_bytes(dir / "drv.mjs", node_driver, std::strlen(node_driver));
  auto call_node = [&](const std::string& method, const Tensor& x, std::string* why = nullptr,
                       const std::string& weights = "-", const std::string& as = "") {
    return through(dir, x, "node drv.mjs " + method + " x.bin y.bin " + weights + " " + as, why);
  };
  tg::manual_seed(16);
  for (std::int64_t batch : {1, 7}) {
    CAPTURE(batch);
    Tensor x = tg::randn({batch, 32});
    same(call_node("forward", x), m.net(x).softmax(1));
    same(call_node("logits", x), m.net(x));
  }
  std::string why;
  CHECK(call_node("forward", tg::randn({129, 32}), &why).empty());
  CHECK_MESSAGE(why.find("net.forward: batch = 129 is outside [1, 128]") != std::string::npos, why);
  CHECK(call_node("forward", tg::randn({2, 31}), &why).empty());
  CHECK_MESSAGE(why.find("net.forward: input x has 62 elements, not a multiple of 32 ([batch, "
                         "32])") != std::string::npos,
                why);
  CHECK(call_node("forward", tg::randn({2, 32}), &why, "-", "f64").empty());
  CHECK_MESSAGE(why.find("net.forward: input x must be a Float32Array (float32), got "
                         "Float64Array") != std::string::npos,
                why);
  const std::string good = read_text(dir / "net.safetensors");
  write_bytes(dir / "truncated.safetensors", good.data(), good.size() - 100);
  CHECK(call_node("forward", tg::randn({2, 32}), &why, "truncated.safetensors").empty());
  CHECK_MESSAGE(why.find("net: weight ") != std::string::npos, why);
  CHECK_MESSAGE(why.find("(a truncated or damaged file)") != std::string::npos, why);

  // a product at a fixed batch: the CPU device's kernel packs panels on the stack (more than the
  // 64 KiB wasm-ld gives a module by default)
  tg::nn::Linear big(784, 256);
  tg::ExportSpec fixed;
  fixed.method("forward", {{"x", tg::float32, {64, 784}}},
               [&](const std::vector<Tensor>& in) { return big(in[0]); });
  const fs::path panels = scratch("panels-wasm");
  tg::export_model(big, fixed, "wasm", panels.string(), {.prefix = "net"});
  write_bytes(panels / "drv.mjs", node_driver, std::strlen(node_driver));
  Tensor x = tg::randn({64, 784});
  near(through(panels, x, "node drv.mjs forward x.bin y.bin", nullptr), big(x), 1e-5f);
}

/// A node program over the webgpu export in its folder: `node gpu.mjs MODULES BACKEND METHOD X Y
/// [low]` opens a WebGPU device with Dawn (npm webgpu in MODULES), loads the model, reads float32
/// inputs from X, runs METHOD and writes its first output to Y (METHOD `train`: three steps and a
/// forward of the state test's Trainer); `low`: the device keeps the default limits. A failure
/// prints the message and exits 2.
const char* gpu_driver = R"JS(
import { createRequire } from "node:module";
import fs from "node:fs";
import { create } from "./net.js";
const [modules, backend, method, xin, yout, mode] = process.argv.slice(2);
const { create: dawn, globals } = createRequire(import.meta.url)(modules + "/webgpu");
Object.assign(globalThis, globals);
globalThis.tgGpu = dawn([`backend=${backend}`]); // kept reachable: dawn.node crashes otherwise
let device;
try {
  const adapter = await globalThis.tgGpu.requestAdapter({ featureLevel: "compatibility" });
  if (!adapter) throw new Error(`no WebGPU adapter (backend ${backend})`);
  const names = ["maxStorageBuffersPerShaderStage", "maxComputeInvocationsPerWorkgroup",
                 "maxComputeWorkgroupSizeX", "maxStorageBufferBindingSize"];
  const requiredLimits = mode === "low" ? {} : Object.fromEntries(names.map((n) => [n, adapter.limits[n]]));
  device = await adapter.requestDevice({ requiredLimits });
  const model = await create(device);
  const data = new Float32Array(new Uint8Array(fs.readFileSync(xin)).buffer);
  if (method === "train") { // three steps on x, y (X holds both), then forward(x)
    const x = data.slice(0, 20), y = data.slice(20), out = [];
    for (let k = 0; k < 3; ++k) out.push(...(await model.step({ x, y })).loss);
    out.push(...(await model.forward({ x })).out);
    fs.writeFileSync(yout, new Uint8Array(new Float32Array(out).buffer));
  } else {
    const out = await model[method]({ x: data });
    fs.writeFileSync(yout, new Uint8Array(Object.values(out)[0].buffer));
  }
  model.destroy();
} catch (e) {
  console.log(e.message);
  process.exitCode = 2;
}
device?.destroy();
delete globalThis.tgGpu;
)JS";

TEST_CASE("export webgpu: the WGSL kernels, run by their ES module on Dawn in node, equal tg") {
  if (!have_node()) return;
  const char* env = std::getenv("TG_NODE_MODULES");
  const std::string modules = env && *env ? env : "/usr/local/lib/tg-npm/node_modules";
  if (!fs::exists(modules + "/webgpu")) {
    MESSAGE("skipped: no npm package webgpu in " << modules << " (tools/install-deps.sh)");
    const char* ci = std::getenv("CI");
    CHECK_FALSE((ci && std::string(ci) == "true"));
    return;
  }
  const char* backend_env = std::getenv("TG_WEBGPU_BACKEND");
  const std::string backend = backend_env && *backend_env ? backend_env : "opengles";
  Mlp m;
  const fs::path dir = scratch("mlp-webgpu");
  tg::ExportResult r = tg::export_model(m.net, m.spec(), "webgpu", dir.string(), {.prefix = "net"});
  CHECK(r.files.size() == 2);
  const std::string js = read_text(dir / "net.js");
  CHECK(js.find("export async function create(device, weights)") != std::string::npos);
  CHECK(js.find("@compute @workgroup_size(256)") != std::string::npos);
  write_bytes(dir / "gpu.mjs", gpu_driver, std::strlen(gpu_driver));
  auto call_gpu = [&](const std::string& method, const Tensor& x, std::string* why = nullptr,
                      const std::string& mode = "") {
    return through(dir, x,
                   "EGL_PLATFORM=surfaceless node gpu.mjs " + modules + " " + backend + " " +
                       method + " x.bin y.bin " + mode,
                   why);
  };
  tg::manual_seed(17);
  for (std::int64_t batch : {1, 7}) {
    CAPTURE(batch);
    Tensor x = tg::randn({batch, 32});
    near(call_gpu("forward", x), m.net(x).softmax(1), 1e-6f);
    near(call_gpu("logits", x), m.net(x), 1e-5f);
  }
  std::string why;
  CHECK(call_gpu("forward", tg::randn({129, 32}), &why).empty());
  CHECK_MESSAGE(why.find("net.forward: batch = 129 is outside [1, 128]") != std::string::npos, why);
  // a device with WebGPU's default limits in compatibility mode (128 invocations per work-group)
  CHECK(call_gpu("forward", tg::randn({2, 32}), &why, "low").empty());
  CHECK_MESSAGE(why.find("net: the device's maxComputeInvocationsPerWorkgroup is 128; the model "
                         "needs 256") != std::string::npos,
                why);
  // float16 in array<f16> (webgpu_f16): a device without shader-f16 is refused at load
  tg::ExportSpec half;
  half.method("forward", {{"x", tg::float16, {4}}},
              [](const std::vector<Tensor>& in) { return in[0] * 2; });
  tg::export_model(half, "webgpu", dir.string(), {.prefix = "net", .webgpu_f16 = true});
  CHECK(read_text(dir / "net.js").find("enable f16;") != std::string::npos);
  CHECK(call_gpu("forward", tg::randn({4}), &why).empty());
  CHECK_MESSAGE(why.find("net: the model keeps float16 in array<f16>, which needs the device "
                         "feature shader-f16") != std::string::npos,
                why);
  // 64-bit types have no WGSL type: refused at export, an input or a tensor inside
  tg::ExportSpec f64, inside;
  f64.method("twice", {{"x", tg::float64, {3}}},
             [](const std::vector<Tensor>& in) { return in[0] * 2; });
  inside.method("twice", {{"x", tg::float32, {3}}},
                [](const std::vector<Tensor>& in) { return (in[0].cast(tg::float64) * 2).sum(); });
  for (const auto& [spec, message] :
       {std::pair{&f64, "method 'twice', input 'x' is float64, and WGSL has no 64-bit types"},
        std::pair{&inside, "float64"}}) {
    try {
      tg::export_model(*spec, "webgpu", scratch("f64-webgpu").string());
      FAIL("no error for a float64 tensor on webgpu");
    } catch (const tg::export_error& e) {
      CHECK_MESSAGE(std::string(e.what()).find(message) != std::string::npos, e.what());
    }
  }
}

/// Whether the CI machine must have had `what` (a skip there is a failure).
void skipped(const std::string& why) {
  MESSAGE("skipped: " << why);
  const char* ci = std::getenv("CI");
  CHECK_FALSE((ci && std::string(ci) == "true"));
}

TEST_CASE("export vulkan: SPIR-V and a Vulkan-Hpp host with the C API, run on lavapipe, equal tg") {
  if (!have_compiler()) return;
  if (!tg::vulkan::detail::GlslCompiler::get().error.empty())
    return skipped(tg::vulkan::detail::GlslCompiler::get().error);
  Mlp m;
  const fs::path dir = scratch("mlp-vulkan");
  tg::ExportResult r = tg::export_model(m.net, m.spec(), "vulkan", dir.string(), {.prefix = "net"});
  const std::string manifest = read_text(dir / "net.json");
  CHECK(manifest.find("\"dialect\": \"glsl\"") != std::string::npos);
  CHECK(manifest.find("\"spirv_file\": \"net_k0.spv\"") != std::string::npos);
  CHECK(read_text(dir / "net_k0.comp").find("#version 450") != std::string::npos);
  const std::string spv = read_text(dir / "net_k0.spv");
  REQUIRE(spv.size() >= 4);
  CHECK(std::memcmp(spv.data(), "\x03\x02\x23\x07", 4) == 0); // SPIR-V's magic number
  std::size_t kernels = 0; // (safetensors, header, source, manifest, and two files a kernel)
  for (std::size_t at = manifest.find("\"spirv_file\""); at != std::string::npos;
       at = manifest.find("\"spirv_file\"", at + 1))
    ++kernels;
  CHECK(kernels > 0);
  CHECK(r.files.size() == 4 + 2 * kernels);
  // the host: C++17 over Vulkan-Hpp, behind the c target's C API (the same driver runs it)
  REQUIRE(build_vulkan_driver(dir, driver, "net"));
  const std::string drv = (dir / "drv").string();
  if (!has_device("VULKAN")) return skipped("no Vulkan device opens here");
  tg::manual_seed(19);
  for (std::int64_t batch : {1, 7}) {
    CAPTURE(batch);
    Tensor x = tg::randn({batch, 32});
    near(call(drv, "net.safetensors", "forward", x), m.net(x).softmax(1), 1e-6f);
    near(call(drv, "net.safetensors", "logits", x), m.net(x), 1e-5f);
  }
  std::string why;
  CHECK(call(drv, "net.safetensors", "forward", tg::randn({129, 32}), &why).empty());
  CHECK_MESSAGE(why.find("forward: batch = 129 is outside [1, 128]") != std::string::npos, why);
  // a truncated weights file: refused when the model is made, naming the weight
  const std::string weights = read_text(dir / "net.safetensors");
  write_bytes(dir / "cut.safetensors", weights.data(), weights.size() - 100);
  CHECK(call(drv, "cut.safetensors", "forward", tg::randn({1, 32}), &why).empty());
  CHECK_MESSAGE(why.find("create: weight '2.weight' spans bytes") != std::string::npos, why);
  // the manifest is the json target's document: tg runs it too
  tg::ExportedModel e = tg::load_exported((dir / "net.json").string(), "VULKAN");
  Tensor x = tg::randn({3, 32});
  near(e.run("logits", {x})[0].to_vector<float>(), m.net(x), 1e-5f);
}

TEST_CASE("export cuda: the .cu passes NVRTC and ptxas, the C host builds with cc alone") {
  if (!have_compiler()) return;
  const tg::cuda::Nvrtc& nv = tg::cuda::Nvrtc::get();
  if (!nv.error.empty()) { // (the CUDA toolkit is not one of tools/install-deps.sh's packages)
    MESSAGE("skipped: NVRTC is unavailable: " << nv.error);
    return;
  }
  Mlp m;
  const fs::path dir = scratch("mlp-cuda");
  tg::export_model(m.net, m.spec(), "cuda", dir.string(), {.prefix = "net"});
  const std::string cu = read_text(dir / "net.cu");
  CHECK(cu.find("extern \"C\" __global__ void __launch_bounds__(256) net_k0(") !=
        std::string::npos);
  CHECK(read_text(dir / "net.c").find("static const char* const tg_ptx[] = {") !=
        std::string::npos);
  // the .cu as the export compiles it (the PTX embedded in net.c), then ptxas for a real GPU
  const std::string arch = "compute_" + std::to_string(nv.archs.empty() ? 75 : nv.archs.front());
  const tg::cuda::Compiled ptx = tg::cuda::nvrtc_compile(cu, "net", arch);
  CHECK(read_text(dir / "net.c").find("for " + arch + " */") != std::string::npos);
  if (const std::string tool = tg::cuda::find_tool("ptxas"); tool.empty()) {
    MESSAGE("no ptxas (the CUDA toolkit's): the PTX is not checked");
  } else {
    write_bytes(dir / "net.ptx", ptx.binary.data(), ptx.binary.size());
    CHECK(run(tool + " -arch=sm_90 -o " + (dir / "net.cubin").string() + " " +
              (dir / "net.ptx").string()) == 0);
  }
  // the host: C11 with -Wpedantic, the same driver as the c target's
  const std::string drv = build_driver(dir, "-Wextra -Wpedantic");
  REQUIRE(!drv.empty());
  tg::manual_seed(23);
  std::string why;
  if (tg::cuda::device_count() == 0) {
    // no GPU: the host says so when the model is made
    CHECK(call(drv, "net.safetensors", "forward", tg::randn({1, 32}), &why).empty());
    CHECK_MESSAGE(
        (why.find("create: no CUDA driver") != std::string::npos ||
         why.find("create: no CUDA-capable device") != std::string::npos ||
         why.find("create: libcuda.so.1 is the CUDA toolkit's stub") != std::string::npos),
        why);
    MESSAGE("no CUDA device: the exported host was built, not run");
    return;
  }
  for (std::int64_t batch : {1, 7}) {
    CAPTURE(batch);
    Tensor x = tg::randn({batch, 32});
    near(call(drv, "net.safetensors", "forward", x), m.net(x).softmax(1), 1e-6f);
    near(call(drv, "net.safetensors", "logits", x), m.net(x), 1e-5f);
  }
  CHECK(call(drv, "net.safetensors", "forward", tg::randn({129, 32}), &why).empty());
  CHECK_MESSAGE(why.find("forward: batch = 129 is outside [1, 128]") != std::string::npos, why);
}

/// A model that trains where it is exported: step(x, y) -> loss runs one SGD step of a linear
/// layer (its weights are the state step updates), forward(x) -> out reads them.
struct Trainer {
  tg::nn::Linear lin;
  tg::optim::SGD opt;
  Trainer() : lin((tg::manual_seed(3), tg::nn::Linear(4, 3))), opt(lin.parameters(), {.lr = 0.1}) {}
  Tensor step(const Tensor& x, const Tensor& y) {
    opt.zero_grad();
    Tensor loss = tg::nn::functional::mse_loss(lin(x), y);
    loss.backward();
    opt.step(); // one tg::assign of every parameter: recorded by the export as the step's update
    return loss;
  }
  tg::ExportSpec spec() {
    tg::ExportSpec s;
    s.dim("batch", 1, 16);
    s.method("step", {{"x", tg::float32, {5, 4}}, {"y", tg::float32, {5, 3}}},
             [this](const std::vector<Tensor>& in) { return step(in[0], in[1]); }, {"loss"});
    s.method("forward", {{"x", tg::float32, {"batch", 4}}},
             [this](const std::vector<Tensor>& in) { return lin(in[0]); }, {"out"});
    return s;
  }
};

/// Three steps then a forward, by the C API (`drv` reads x.bin: x then y, writes y.bin: the three
/// losses then forward's outputs).
const char* train_driver = R"C(
#include "net.h"
#include <stdio.h>
int main(void) {
  char err[256];
  float xy[35], out[18];
  int k;
  net_model* m = net_create("net.safetensors", err, sizeof err);
  FILE* f = fopen("x.bin", "rb");
  if (!m || !f || fread(xy, sizeof(float), 35, f) != 35) return 3;
  fclose(f);
  for (k = 0; k < 3; ++k)
    if (net_step(m, xy, xy + 20, &out[k])) {
      printf("%s\n", net_error(m));
      return 2;
    }
  if (net_forward(m, 5, xy, out + 3)) return 2;
  f = fopen("y.bin", "wb");
  fwrite(out, sizeof(float), 18, f);
  fclose(f);
  net_destroy(m);
  return 0;
}
)C";

TEST_CASE(
    "export: state the methods update (an SGD step's tg::assign) in c, vulkan, webgpu, json") {
  if (!have_compiler()) return;
  tg::manual_seed(29);
  Tensor x = tg::randn({5, 4}), y = tg::randn({5, 3});
  // tg's own three steps (each loss from the weights before its step), then forward
  std::vector<Tensor> want;
  {
    Trainer t;
    for (int k = 0; k < 3; ++k) {
      t.opt.zero_grad();
      Tensor loss = tg::nn::functional::mse_loss(t.lin(x), y).realize();
      loss.backward();
      t.opt.step();
      want.push_back(loss.reshape({1}));
    }
    want.push_back(t.lin(x).reshape({-1}));
  }
  const Tensor expected = tg::cat(want, 0);
  const Tensor xy = tg::cat({x.reshape({-1}), y.reshape({-1})}, 0);
  Trainer t;
  const std::vector<float> before = t.lin.weight.to_vector<float>();

  const fs::path c = scratch("train-c");
  tg::export_model(t.lin, t.spec(), "c", c.string(), {.prefix = "net"});
  CHECK(t.lin.weight.to_vector<float>() == before); // exporting ran nothing
  CHECK_FALSE(t.lin.weight.grad().defined());       // and left no gradient behind
  write_bytes(c / "drv.c", train_driver, std::strlen(train_driver));
  REQUIRE(run("cd " + c.string() + " && " + compiler() +
              " -O2 -std=c11 -Wall drv.c net.c -lm -o drv") == 0);
  near(through(c, xy, "./drv", nullptr), expected, 1e-6f);

  tg::ExportOptions o{.prefix = "net"};
  o.json_dialects = {"c", "glsl"};
  tg::export_model(t.lin, t.spec(), "json", c.string(), o);
  std::vector<std::string> devices = {"CPU"};
  if (has_device("VULKAN")) devices.push_back("VULKAN");
  for (const std::string& dev : devices) {
    CAPTURE(dev);
    tg::ExportedModel e = tg::load_exported((c / "net.json").string(), dev);
    std::vector<Tensor> got;
    for (int k = 0; k < 3; ++k) got.push_back(e.run("step", {x, y})[0].reshape({1}).to("CPU"));
    got.push_back(e.run("forward", {x})[0].reshape({-1}).to("CPU"));
    near(tg::cat(got, 0).to_vector<float>(), expected, 1e-6f);
  }

  if (tg::vulkan::detail::GlslCompiler::get().error.empty() && has_device("VULKAN")) {
    const fs::path vk = scratch("train-vulkan");
    tg::export_model(t.lin, t.spec(), "vulkan", vk.string(), {.prefix = "net"});
    REQUIRE(build_vulkan_driver(vk, train_driver, "net"));
    near(through(vk, xy, "./drv", nullptr), expected, 1e-6f);
  }

  const char* env = std::getenv("TG_NODE_MODULES");
  const std::string modules = env && *env ? env : "/usr/local/lib/tg-npm/node_modules";
  if (have_node() && fs::exists(modules + "/webgpu")) {
    const fs::path gpu = scratch("train-webgpu");
    tg::export_model(t.lin, t.spec(), "webgpu", gpu.string(), {.prefix = "net"});
    write_bytes(gpu / "gpu.mjs", gpu_driver, std::strlen(gpu_driver));
    near(through(gpu, xy,
                 "EGL_PLATFORM=surfaceless node gpu.mjs " + modules + " opengles train x.bin y.bin",
                 nullptr),
         expected, 1e-6f);
  }

  // what an exported method may not do with state
  auto fails = [](auto&& f, const std::string& message) {
    try {
      f();
      FAIL("no error; expected: " << message);
    } catch (const tg::export_error& e) {
      CHECK_MESSAGE(std::string(e.what()).find(message) != std::string::npos, e.what());
    }
  };
  const fs::path dir = scratch("state-errors");
  Tensor loose = tg::zeros({3}).realize();
  tg::ExportSpec stray, twice, after, named, unrealized;
  stray.method("f", {{"x", tg::float32, {3}}}, [&](const std::vector<Tensor>& in) {
    tg::assign({{loose, loose + in[0]}});
    return in[0] * 2;
  });
  fails([&] { tg::export_model(stray, "c", dir.string()); },
        "method 'f' assigns to a tensor that is neither a weight of the module nor state declared "
        "with spec.state(name, tensor)");
  twice.state("total", loose)
      .method("f", {{"x", tg::float32, {3}}}, [&](const std::vector<Tensor>& in) {
        tg::assign({{loose, loose + in[0]}});
        tg::assign({{loose, loose * 2}});
        return in[0] * 2;
      });
  fails([&] { tg::export_model(twice, "c", dir.string()); }, "method 'f' assigns to 'total' twice");
  Tensor other = tg::zeros({3}).realize();
  after.state("a", loose)
      .state("b", other)
      .method("f", {{"x", tg::float32, {3}}}, [&](const std::vector<Tensor>& in) {
        tg::assign({{loose, loose + in[0]}});
        tg::assign({{other, loose * 2}});
        return in[0] * 2;
      });
  fails([&] { tg::export_model(after, "c", dir.string()); },
        "method 'f' reads 'a' after assigning it");
  named.state("weight", loose);
  named.method("f", {{"x", tg::float32, {3}}}, [](const std::vector<Tensor>& in) { return in[0]; });
  tg::nn::Linear lin3(3, 3);
  fails([&] { tg::export_model(lin3, named, "c", dir.string()); },
        "state 'weight' has a weight's name");
  fails([&] { unrealized.state("s", tg::zeros({3})); },
        "'s' must be a realized tensor that owns its buffer");
}

TEST_CASE("export: an Adam step, its moments and step counts declared as state") {
  if (!have_compiler()) return;
  tg::manual_seed(31);
  Tensor x = tg::randn({5, 4}), y = tg::randn({5, 3});
  auto make = [] {
    tg::manual_seed(3);
    return tg::nn::Linear(4, 3);
  };
  auto loss_of = [&](tg::nn::Linear& lin, const Tensor& a, const Tensor& b) {
    return tg::nn::functional::mse_loss(lin(a), b);
  };
  std::vector<Tensor> want;
  {
    tg::nn::Linear lin = make();
    tg::optim::Adam opt(lin.parameters(), {.lr = 0.05});
    for (int k = 0; k < 3; ++k) {
      opt.zero_grad();
      Tensor loss = loss_of(lin, x, y).realize();
      loss.backward();
      opt.step();
      want.push_back(loss.reshape({1}));
    }
    want.push_back(lin(x).reshape({-1}));
  }
  tg::nn::Linear lin = make();
  tg::optim::Adam opt(lin.parameters(), {.lr = 0.05});
  tg::ExportSpec s;
  s.dim("batch", 1, 8);
  s.state(opt.state_dict(), "optim.");
  s.method("step", {{"x", tg::float32, {5, 4}}, {"y", tg::float32, {5, 3}}},
           [&](const std::vector<Tensor>& in) {
             opt.zero_grad();
             Tensor loss = loss_of(lin, in[0], in[1]);
             loss.backward();
             opt.step();
             return loss;
           },
           {"loss"});
  s.method("forward", {{"x", tg::float32, {"batch", 4}}},
           [&](const std::vector<Tensor>& in) { return lin(in[0]); }, {"out"});
  const fs::path dir = scratch("train-adam");
  tg::export_model(lin, s, "c", dir.string(), {.prefix = "net"});
  const std::vector<std::string> keys =
      tg::safetensors::load_file((dir / "net.safetensors").string()).keys();
  for (const char* k : {"optim.state.0.exp_avg", "optim.state.1.exp_avg_sq", "optim.state.0.step",
                        "optim.param_groups.0.lr"}) {
    CAPTURE(k);
    CHECK(std::find(keys.begin(), keys.end(), k) != keys.end());
  }
  write_bytes(dir / "drv.c", train_driver, std::strlen(train_driver));
  REQUIRE(run("cd " + dir.string() + " && " + compiler() +
              " -O2 -std=c11 -Wall drv.c net.c -lm -o drv") == 0);
  const Tensor xy = tg::cat({x.reshape({-1}), y.reshape({-1})}, 0);
  near(through(dir, xy, "./drv", nullptr), tg::cat(want, 0), 1e-6f);
  // the json target in every dialect (Adam's step counts are float32: WGSL holds them)
  tg::export_model(lin, s, "json", dir.string(), {.prefix = "net"});
  tg::ExportedModel e = tg::load_exported((dir / "net.json").string(), "CPU");
  std::vector<Tensor> got;
  for (int k = 0; k < 3; ++k) got.push_back(e.run("step", {x, y})[0].reshape({1}));
  got.push_back(e.run("forward", {x})[0].reshape({-1}));
  near(tg::cat(got, 0).to_vector<float>(), tg::cat(want, 0), 1e-6f);
  // a float64 model's Adam keeps float64 state, which WGSL cannot hold: named as the dialect's
  Tensor w64 = tg::randn({3}).cast(tg::float64).contiguous().realize();
  w64.requires_grad_();
  tg::optim::Adam opt64({w64}, {.lr = 0.05});
  tg::ExportSpec s64;
  s64.state("w", w64).state(opt64.state_dict(), "optim.");
  s64.method("step", {{"x", tg::float64, {3}}}, [&](const std::vector<Tensor>& in) {
    opt64.zero_grad();
    Tensor loss = ((w64 - in[0]) * (w64 - in[0])).sum();
    loss.backward();
    opt64.step();
    return loss;
  });
  try {
    tg::export_model(s64, "json", dir.string(), {.prefix = "wide"});
    FAIL("no error for float64 in the wgsl dialect");
  } catch (const tg::export_error& e) {
    CHECK_MESSAGE(std::string(e.what()).find("json: dialect wgsl: ") != std::string::npos,
                  e.what());
  }
}

/// 20 steps over batches.bin (each batch: x, 4 x 6 float32, then y, 4 int32): the losses to
/// losses.bin, the weights to trained.safetensors; wrong.safetensors and a 2-byte learning rate
/// refused (printed "refused: ..."), the weights then to kept.safetensors; the initial weights
/// reloaded, the learning rate set to 0 and read back, one step, the weights to
/// frozen.safetensors. A failure prints the message and exits 2.
const char* steps_driver = R"C(
#include "net.h"
#include <stdio.h>
int main(void) {
  char err[256];
  float x[20][24], losses[20], lr = 0, back = 1;
  int y[20][4], k;
  net_model* m = net_create("net.safetensors", err, sizeof err);
  FILE* f = fopen("batches.bin", "rb");
  if (!m || !f) {
    printf("create: %s\n", m ? "no batches.bin" : err);
    return 2;
  }
  for (k = 0; k < 20; ++k)
    if (fread(x[k], sizeof(float), 24, f) != 24 || fread(y[k], sizeof(int), 4, f) != 4) return 3;
  fclose(f);
  for (k = 0; k < 20; ++k)
    if (net_step(m, x[k], y[k], &losses[k])) break;
  if (k < 20 || net_save_weights(m, "trained.safetensors")) {
    printf("%s\n", net_error(m));
    return 2;
  }
  f = fopen("losses.bin", "wb");
  fwrite(losses, sizeof(float), 20, f);
  fclose(f);
  if (net_load_weights(m, "wrong.safetensors") == 0) printf("wrong.safetensors loaded\n");
  else printf("refused: %s\n", net_error(m));
  if (net_set_weight(m, "optim.param_groups.0.lr", &lr, 2) == 0) printf("2 bytes set\n");
  else printf("refused: %s\n", net_error(m));
  if (net_save_weights(m, "kept.safetensors") || net_load_weights(m, "net.safetensors") ||
      net_set_weight(m, "optim.param_groups.0.lr", &lr, sizeof lr) ||
      net_get_weight(m, "optim.param_groups.0.lr", &back, sizeof back) ||
      net_step(m, x[0], y[0], losses) || net_save_weights(m, "frozen.safetensors")) {
    printf("%s\n", net_error(m));
    return 2;
  }
  if (back != 0) printf("the learning rate reads back %g\n", back);
  net_destroy(m);
  return 0;
}
)C";

/// The same in JavaScript: `node steps.mjs wasm`, or `node steps.mjs webgpu MODULES` (Dawn's GL
/// backend from the npm package webgpu in MODULES).
const char* steps_js = R"JS(
import fs from "node:fs";
import { createRequire } from "node:module";
import { create } from "./net.js";
const [kind, modules] = process.argv.slice(2);
let device;
try {
  let model;
  if (kind === "webgpu") {
    const { create: dawn, globals } = createRequire(import.meta.url)(modules + "/webgpu");
    Object.assign(globalThis, globals);
    globalThis.tgGpu = dawn(["backend=opengles"]); // kept reachable: dawn.node crashes otherwise
    const adapter = await globalThis.tgGpu.requestAdapter({ featureLevel: "compatibility" });
    const names = ["maxStorageBuffersPerShaderStage", "maxComputeInvocationsPerWorkgroup",
                   "maxComputeWorkgroupSizeX", "maxStorageBufferBindingSize"];
    device = await adapter.requestDevice({ requiredLimits: Object.fromEntries(names.map((n) => [n, adapter.limits[n]])) });
    model = await create(device);
  } else {
    model = await create();
  }
  const all = new Uint8Array(fs.readFileSync("batches.bin")).buffer;
  const batch = (k) => ({ x: new Float32Array(all, k * 112, 24), y: new Int32Array(all, k * 112 + 96, 4) });
  const losses = [];
  for (let k = 0; k < 20; ++k) losses.push(...(await model.step(batch(k))).loss);
  fs.writeFileSync("losses.bin", new Uint8Array(new Float32Array(losses).buffer));
  fs.writeFileSync("trained.safetensors", await model.saveWeights());
  for (const wrong of [() => model.loadWeights("./wrong.safetensors"),
                       () => model.setWeight("optim.param_groups.0.lr", new Float64Array(1))]) {
    try {
      await wrong();
      console.log("a wrong call succeeded");
    } catch (e) {
      console.log(`refused: ${e.message}`);
    }
  }
  fs.writeFileSync("kept.safetensors", await model.saveWeights());
  await model.loadWeights("./net.safetensors");
  await model.setWeight("optim.param_groups.0.lr", new Float32Array([0]));
  const back = await model.getWeight("optim.param_groups.0.lr");
  if (back[0] !== 0) console.log(`the learning rate reads back ${back[0]}`);
  await model.step(batch(0));
  fs.writeFileSync("frozen.safetensors", await model.saveWeights());
  model.destroy();
} catch (e) {
  console.log(e.message);
  process.exitCode = 2;
}
device?.destroy();
delete globalThis.tgGpu;
)JS";

TEST_CASE("export: 20 steps of SGD and of Adam in c, wasm, webgpu and vulkan equal tg's; weights "
          "saved, loaded and set by name") {
  if (!have_compiler()) return;
  tg::manual_seed(41);
  std::vector<Tensor> xs, ys;
  std::string batches;
  for (int k = 0; k < 20; ++k) {
    xs.push_back(tg::randn({4, 6}));
    ys.push_back(tg::randint(0, 3, {4}, tg::int32));
    const std::vector<float> x = xs.back().to_vector<float>();
    const std::vector<std::int32_t> y = ys.back().to_vector<std::int32_t>();
    batches.append(reinterpret_cast<const char*>(x.data()), x.size() * sizeof(float));
    batches.append(reinterpret_cast<const char*>(y.data()), y.size() * sizeof(std::int32_t));
  }
  const char* env = std::getenv("TG_NODE_MODULES");
  const std::string modules = env && *env ? env : "/usr/local/lib/tg-npm/node_modules";
  // SGD with momentum, Adam, and SGD under a warm-up then cosine schedule that the step advances
  for (const std::string optimizer : {"sgd", "adam", "scheduled"}) {
    CAPTURE(optimizer);
    struct Net {
      tg::nn::Sequential net;
      std::unique_ptr<tg::optim::Optimizer> opt;
      std::shared_ptr<tg::optim::LRScheduler> schedule;
      explicit Net(const std::string& o)
          : net((tg::manual_seed(5),
                 tg::nn::Sequential(tg::nn::Linear(6, 8), tg::nn::ReLU(), tg::nn::Linear(8, 3)))) {
        if (o == "adam")
          opt = std::make_unique<tg::optim::Adam>(net.parameters(),
                                                  tg::optim::AdamOptions{.lr = 0.02});
        else
          opt = std::make_unique<tg::optim::SGD>(net.parameters(),
                                                 tg::optim::SGDOptions{.lr = 0.2, .momentum = 0.9});
        if (o == "scheduled")
          schedule = std::make_shared<tg::optim::SequentialLR>(
              *opt,
              std::vector<std::shared_ptr<tg::optim::LRScheduler>>{
                  std::make_shared<tg::optim::LinearLR>(*opt, 0.25, 1.0, 5),
                  std::make_shared<tg::optim::CosineAnnealingLR>(*opt, 15, 0.01)},
              std::vector<std::int64_t>{5});
      }
      Tensor step(const Tensor& x, const Tensor& y) {
        opt->zero_grad();
        Tensor loss = tg::nn::functional::cross_entropy(net(x), y);
        loss.realize(); // (its value before the update, as the exported step's)
        loss.backward();
        opt->step();
        if (schedule) schedule->step();
        return loss;
      }
      tg::StateDict state() const {
        tg::StateDict sd = net.state_dict();
        for (const auto& [k, t] : opt->state_dict()) sd.insert("optim." + k, t);
        if (schedule) sd.insert("sched.last_epoch", schedule->state_dict().at("last_epoch"));
        return sd;
      }
    };
    Net ref(optimizer);
    std::vector<Tensor> losses;
    for (int k = 0; k < 20; ++k)
      losses.push_back(ref.step(xs[std::size_t(k)], ys[std::size_t(k)]).reshape({1}));
    const Tensor want_losses = tg::cat(losses, 0);
    const tg::StateDict want = ref.state();

    Net t(optimizer);
    tg::ExportSpec spec;
    spec.dim("batch", 1, 16);
    spec.state(t.opt->state_dict(), "optim.");
    if (t.schedule) spec.state(t.schedule->state_dict(), "sched.");
    spec.method("step", {{"x", tg::float32, {4, 6}}, {"y", tg::int32, {4}}},
                [&](const std::vector<Tensor>& in) { return t.step(in[0], in[1]); }, {"loss"});
    spec.method("forward", {{"x", tg::float32, {"batch", 6}}},
                [&](const std::vector<Tensor>& in) { return t.net(in[0]); }, {"logits"});

    const fs::path c = scratch("steps-c-" + optimizer);
    tg::export_model(t.net, spec, "c", c.string(), {.prefix = "net"});
    const tg::StateDict initial = tg::safetensors::load_file((c / "net.safetensors").string());

    // what each artifact left in its folder, against tg's
    auto check = [&](const fs::path& dir, const std::string& printed) {
      CHECK_MESSAGE(printed.find("refused: ") != std::string::npos, printed);
      CHECK_MESSAGE(printed.find("weight '0.weight' has size 5 in dimension 1 in the file; the "
                                 "model reads 6") != std::string::npos,
                    printed);
      CHECK_MESSAGE(printed.find("weight 'optim.param_groups.0.lr' is ") != std::string::npos,
                    printed);
      CHECK_MESSAGE(printed.find("succeeded") == std::string::npos, printed);
      CHECK_MESSAGE(printed.find("reads back") == std::string::npos, printed);
      const std::string bytes = read_text(dir / "losses.bin");
      std::vector<float> got(bytes.size() / sizeof(float));
      std::memcpy(got.data(), bytes.data(), got.size() * sizeof(float));
      near(got, want_losses, 1e-5f);
      const tg::StateDict trained =
          tg::safetensors::load_file((dir / "trained.safetensors").string());
      CHECK(trained.size() >= want.size()); // (and constants the kernels read: tg.constant.N)
      for (const auto& [k, w] : want) {
        CAPTURE(k);
        const Tensor* g = trained.find(k);
        REQUIRE(g);
        CHECK(g->dtype() == w.dtype());
        near(g->to_vector<float>(), w.reshape({-1}), 1e-5f);
      }
      CHECK(read_text(dir / "kept.safetensors") == read_text(dir / "trained.safetensors"));
      const tg::StateDict frozen =
          tg::safetensors::load_file((dir / "frozen.safetensors").string());
      for (const auto& [k, w] : t.net.state_dict()) { // learning rate 0: the parameters stay
        CAPTURE(k);
        CHECK(frozen.at(k).to_vector<float>() == initial.at(k).to_vector<float>());
      }
    };
    auto prepare = [&](const fs::path& dir) {
      write_bytes(dir / "batches.bin", batches.data(), batches.size());
      tg::StateDict wrong = initial;
      wrong.insert("0.weight", tg::zeros({8, 5}));
      tg::safetensors::save_file(wrong, (dir / "wrong.safetensors").string());
    };

    prepare(c);
    write_bytes(c / "drv.c", steps_driver, std::strlen(steps_driver));
    std::string printed;
    REQUIRE(run("cd " + c.string() + " && " + compiler() + " -O2 -std=c11 -Wall -c net.c && " +
                    compiler() + " -O2 -std=c11 -Wall drv.c net.o -lm -o drv && ./drv",
                &printed) == 0);
    check(c, printed);

    if (have_node()) {
      const fs::path w = scratch("steps-wasm-" + optimizer);
      tg::export_model(t.net, spec, "wasm", w.string(), {.prefix = "net"});
      prepare(w);
      write_bytes(w / "steps.mjs", steps_js, std::strlen(steps_js));
      REQUIRE(run("cd " + w.string() + " && node steps.mjs wasm", &printed) == 0);
      check(w, printed);
      if (fs::exists(modules + "/webgpu")) {
        const fs::path g = scratch("steps-webgpu-" + optimizer);
        tg::export_model(t.net, spec, "webgpu", g.string(), {.prefix = "net"});
        prepare(g);
        write_bytes(g / "steps.mjs", steps_js, std::strlen(steps_js));
        REQUIRE(run("cd " + g.string() + " && EGL_PLATFORM=surfaceless node steps.mjs webgpu " +
                        modules,
                    &printed) == 0);
        check(g, printed);
      } else {
        skipped("no npm package webgpu in " + modules + " (tools/install-deps.sh)");
      }
    }
    if (optimizer == "adam" && tg::vulkan::detail::GlslCompiler::get().error.empty() &&
        has_device("VULKAN")) {
      const fs::path v = scratch("steps-vulkan");
      tg::export_model(t.net, spec, "vulkan", v.string(), {.prefix = "net"});
      prepare(v);
      REQUIRE(build_vulkan_driver(v, steps_driver, "net"));
      REQUIRE(run("cd " + v.string() + " && ./drv", &printed) == 0);
      check(v, printed);
    }
  }
}

TEST_CASE("export: two exports of one model are byte-identical") {
  Mlp m;
  const fs::path a = scratch("same-a"), b = scratch("same-b");
  tg::export_model(m.net, m.spec(), "c", a.string(), {.prefix = "net"});
  Mlp again; // the same weights in new tensors
  tg::export_model(again.net, again.spec(), "c", b.string(), {.prefix = "net"});
  tg::export_model(m.net, m.spec(), "json", a.string(), {.prefix = "net"});
  tg::export_model(again.net, again.spec(), "json", b.string(), {.prefix = "net"});
  tg::export_model(m.net, m.spec(), "wasm", a.string(), {.prefix = "net"});
  tg::export_model(again.net, again.spec(), "wasm", b.string(), {.prefix = "net"});
  tg::export_model(m.net, m.spec(), "webgpu", a.string(), {.prefix = "gpu"});
  tg::export_model(again.net, again.spec(), "webgpu", b.string(), {.prefix = "gpu"});
  std::vector<std::string> files = {"net.h",    "net.c",  "net.safetensors", "net.json",
                                    "net.wasm", "net.js", "gpu.js"};
  if (tg::vulkan::detail::GlslCompiler::get().error.empty()) {
    tg::export_model(m.net, m.spec(), "vulkan", a.string(), {.prefix = "vk"});
    tg::export_model(again.net, again.spec(), "vulkan", b.string(), {.prefix = "vk"});
    files.insert(files.end(), {"vk.h", "vk.cpp", "vk.json", "vk_k0.comp", "vk_k0.spv"});
  }
  if (tg::cuda::Nvrtc::get().error.empty()) {
    tg::export_model(m.net, m.spec(), "cuda", a.string(), {.prefix = "cu"});
    tg::export_model(again.net, again.spec(), "cuda", b.string(), {.prefix = "cu"});
    files.insert(files.end(), {"cu.h", "cu.c", "cu.cu"});
  }
  for (const std::string& f : files) {
    CAPTURE(f);
    CHECK(read_text(a / f) == read_text(b / f));
  }
}

TEST_CASE("export c: the loader refuses weights that do not match, naming the weight") {
  if (!have_compiler()) return;
  Mlp m;
  const fs::path dir = scratch("mlp-bad-weights");
  tg::export_model(m.net, m.spec(), "c", dir.string(), {.prefix = "net"});
  const std::string drv = build_driver(dir);
  REQUIRE(!drv.empty());
  Tensor x = tg::randn({2, 32});
  auto refused = [&](const fs::path& weights, const std::string& message) {
    std::string why;
    CHECK(call(drv, weights.string(), "logits", x, &why).empty());
    CHECK_MESSAGE(why.find(message) != std::string::npos, why);
  };
  const std::string good = read_text(dir / "net.safetensors");
  write_bytes(dir / "truncated.safetensors", good.data(), good.size() - 100);
  refused(dir / "truncated.safetensors", "(a truncated or damaged file)");
  write_bytes(dir / "short.safetensors", good.data(), 5);
  refused(dir / "short.safetensors", "too short for a safetensors file");
  refused(dir / "missing.safetensors", "cannot open the weights file");
  std::string bad_header = good;
  bad_header[8] = '[';
  write_bytes(dir / "malformed.safetensors", bad_header.data(), bad_header.size());
  refused(dir / "malformed.safetensors", "the safetensors header is malformed");

  tg::StateDict sd = m.net.state_dict();
  tg::StateDict other = sd;
  other.insert("2.weight", tg::zeros({10, 255}));
  tg::safetensors::save_file(other, (dir / "shape.safetensors").string());
  refused(dir / "shape.safetensors", "weight '2.weight' has size 255 in dimension 1 in the file; "
                                     "the model reads 256");
  other = sd;
  other.insert("0.bias", sd.at("0.bias").cast(tg::float64));
  tg::safetensors::save_file(other, (dir / "dtype.safetensors").string());
  refused(dir / "dtype.safetensors", "weight '0.bias' is F64 in the file; the model reads F32");
  other = sd;
  other.erase("2.bias");
  tg::safetensors::save_file(other, (dir / "absent.safetensors").string());
  refused(dir / "absent.safetensors", "weight '2.bias' is not in the file");
}

TEST_CASE("export: mistakes are export errors naming the method, the input and the call site") {
  Mlp m;
  auto fails = [](auto&& f, const std::string& message) {
    try {
      f();
      FAIL("no error; expected: " << message);
    } catch (const tg::export_error& e) {
      CHECK_MESSAGE(std::string(e.what()).find(message) != std::string::npos, e.what());
      CHECK_MESSAGE(std::string(e.what()).find("test_export.cpp") != std::string::npos, e.what());
    }
  };
  auto id = [](const std::vector<Tensor>& in) { return in[0] * 2.0f; };
  fails([] { tg::ExportSpec().dim("2x", 1, 4); }, "'2x' is not an identifier");
  fails([] { tg::ExportSpec().dim("n", 5, 4); }, "bounds [5, 4]");
  const std::vector<tg::ExportInput> by_name = {{"x", tg::float32, {"batch"}}},
                                     twice = {{"x", tg::float32, {2}}, {"x", tg::int32, {2}}};
  fails([&] { tg::ExportSpec().method("f", by_name, id); },
        "method 'f', input 'x': size 'batch' is not a dim of the spec");
  fails([&] { tg::ExportSpec().method("f", {{"x", tg::float32, {-1}}}, id); }, "size -1");
  fails([&] { tg::ExportSpec().method("f", {}, id).method("f", {}, id); }, "'f' is declared twice");
  fails([&] { tg::ExportSpec().method("f", twice, id); }, "input 'x': the name is used twice");
  const std::vector<tg::ExportInput> dim_named = {{"x", tg::float32, {"x"}}};
  fails([&] { tg::ExportSpec().dim("x", 1, 4).method("f", dim_named, id); }, "the name is a dim's");
  fails([] { tg::ExportSpec().dim("a_very_long_name_of_a_dim", 1, 4); }, "at most 23 characters");
  fails(
      [&] {
        tg::export_model(tg::ExportSpec().method("f", {{"x", tg::float32, {2}}}, id), "json", "x",
                         {.embed_weights = true});
      },
      "embed_weights is an option of the c target");

  const fs::path dir = scratch("errors");
  // the model refuses what the spec gives it: its own error, with the method and its inputs
  tg::ExportSpec rank;
  rank.dim("batch", 1, 8)
      .method("forward", {{"x", tg::float32, {"batch", 31}}},
              [&](const std::vector<Tensor>& in) { return m.net(in[0]); });
  fails([&] { tg::export_model(m.net, rank, "c", dir.string()); },
        "method 'forward' (x: float32[batch, 31])");
  // a value read on the host inside a method
  tg::ExportSpec host;
  host.method("f", {{"x", tg::float32, {4}}},
              [](const std::vector<Tensor>& in) { return in[0] * in[0].sum().item<float>(); });
  fails([&] { tg::export_model(host, "c", dir.string()); },
        "method 'f' computes a value from its inputs before it returns");
  fails([&] { tg::export_model(host, "c", dir.string()); }, "The read: (at "); // item()'s line
  fails([&] { tg::export_model(host, "c", dir.string()); }, "test_export.cpp:");
  tg::ExportSpec read_input;
  read_input.method("f", {{"x", tg::float32, {4}}}, [](const std::vector<Tensor>& in) {
    return in[0] * in[0].to_vector<float>()[0];
  });
  fails([&] { tg::export_model(read_input, "c", dir.string()); },
        "reads an input's value on the host");
  // a method that uses the batch's value: one export would serve that batch alone
  tg::ExportSpec baked;
  baked.dim("batch", 1, 8)
      .method("f", {{"x", tg::float32, {"batch", 4}}},
              [](const std::vector<Tensor>& in) { return in[0] / float(in[0].size(0)); });
  fails([&] { tg::export_model(baked, "c", dir.string()); },
        "method 'f' builds a different graph for batch = 8 and 7");
  tg::ExportSpec ok;
  ok.method("f", {{"x", tg::float32, {4}}}, id);
  fails([&] { tg::export_model(ok, "metal", dir.string()); }, "no export target 'metal'");
  fails([&] { tg::export_model(ok, "c", dir.string(), {.cuda_arch = "compute_90"}); },
        "cuda_arch is an option of the cuda target");
  fails([&] { tg::export_model(ok, "cuda", dir.string(), {.cuda_arch = "sm_90"}); },
        "cuda_arch 'sm_90' is not a virtual architecture");
  fails([&] { tg::export_model(ok, "c", dir.string(), {.prefix = "my-model"}); },
        "prefix 'my-model' is not an identifier");
  fails([&] { tg::export_model(tg::ExportSpec(), "c", dir.string()); }, "the spec has no method");
}

TEST_CASE("export c: bit for bit as the reference interpreter computes the same graph") {
  if (!have_compiler()) return;
  // an MLP over explicit tensors, so that the same function runs on INTERP too
  tg::manual_seed(21);
  const Tensor w1 = tg::randn({32, 64}), b1 = tg::randn({64}), w2 = tg::randn({64, 10});
  auto mlp = [](const Tensor& x, const Tensor& a, const Tensor& b, const Tensor& c) {
    return (x.matmul(a) + b).relu().matmul(c).softmax(1);
  };
  tg::ExportSpec spec;
  spec.dim("batch", 1, 16)
      .method("forward", {{"x", tg::float32, {"batch", 32}}},
              [&](const std::vector<Tensor>& in) { return mlp(in[0], w1, b1, w2); });
  for (bool iso : {false, true}) {
    CAPTURE(iso);
    const fs::path dir = scratch(iso ? "exact-iso" : "exact");
    tg::export_model(spec, "c", dir.string(), {.prefix = "net", .iso_c = iso});
    const char* fwd = "#define net_logits net_forward\n";
    write_bytes(dir / "alias.h", fwd, std::strlen(fwd));
    const std::string drv = build_driver(dir, "-include alias.h");
    REQUIRE(!drv.empty());
    Tensor x = tg::randn({5, 32});
    std::vector<float> got = call(drv, (dir / "net.safetensors").string(), "forward", x);
    std::vector<float> want =
        mlp(x.to("INTERP"), w1.to("INTERP"), b1.to("INTERP"), w2.to("INTERP")).to_vector<float>();
    REQUIRE(got.size() == want.size());
    CHECK(std::memcmp(got.data(), want.data(), got.size() * sizeof(float)) == 0);
  }
}

TEST_CASE("export c and vulkan: free functions, constants, an output that is an input, several "
          "outputs") {
  if (!have_compiler()) return;
  const std::vector<float> table = {0.5f, -1.0f, 2.0f, 4.0f};
  auto f = [&](const std::vector<Tensor>& in) {
    Tensor c = Tensor::from_data(table, {4}); // a constant: tg.constant.0
    return std::vector<Tensor>{in[0] * c + in[1].cast(tg::float32), in[1], in[0].sum(0)};
  };
  tg::ExportSpec spec;
  spec.dim("n", 0, 16);
  spec.method("f", {{"x", tg::float32, {"n", 4}}, {"k", tg::int32, {4}}}, f,
              {"y", "k_out", "colsum"});
  const fs::path dir = scratch("free");
  tg::export_model(spec, "c", dir.string(), {.prefix = "fn"});
  CHECK(tg::safetensors::load_file((dir / "fn.safetensors").string()).keys() ==
        std::vector<std::string>{"tg.constant.0"});
  const fs::path vk = scratch("free-vulkan"); // the same C API over Vulkan, where it runs
  const bool vulkan = tg::vulkan::detail::GlslCompiler::get().error.empty() && has_device("VULKAN");
  if (vulkan) tg::export_model(spec, "vulkan", vk.string(), {.prefix = "fn"});
  const char* drv = R"C(
#include "fn.h"
#include <stdio.h>
int main(void) {
  float x[12], y[12], colsum[4];
  int32_t k[4] = {1, 2, 3, -4}, k_out[4];
  int i;
  fn_model* m = fn_create("fn.safetensors", 0, 0);
  for (i = 0; i < 12; ++i) x[i] = (float)i * 0.25f;
  if (!m || fn_f(m, 3, x, k, y, k_out, colsum)) return 2;
  for (i = 0; i < 12; ++i) printf("%a ", y[i]);
  for (i = 0; i < 4; ++i) printf("%d %a ", k_out[i], colsum[i]);
  if (fn_f(m, 0, x, k, y, k_out, colsum)) return 3; /* an empty batch */
  fn_destroy(m);
  return 0;
}
)C";
  write_bytes(dir / "drv.c", drv, std::strlen(drv));
  std::string out, out_vk;
  REQUIRE(run("cd " + dir.string() + " && " + compiler() +
                  " -O2 -std=c11 -Wall drv.c fn.c -lm -o drv && ./drv",
              &out) == 0);
  if (vulkan) {
    REQUIRE(build_vulkan_driver(vk, drv, "fn"));
    REQUIRE(run("cd " + vk.string() + " && ./drv", &out_vk) == 0);
  }
  std::vector<float> xs(12);
  for (int i = 0; i < 12; ++i) xs[std::size_t(i)] = float(i) * 0.25f;
  Tensor x = Tensor::from_data(xs, {3, 4}),
         k = Tensor::from_data(std::vector<int>{1, 2, 3, -4}, {4});
  std::vector<float> y =
      (x * Tensor::from_data(table, {4}) + k.cast(tg::float32)).to_vector<float>();
  std::vector<float> colsum = x.sum(0).to_vector<float>();
  std::string want;
  char buf[64];
  for (float v : y) want += (std::snprintf(buf, sizeof buf, "%a ", double(v)), buf);
  const int ks[4] = {1, 2, 3, -4};
  for (int i = 0; i < 4; ++i)
    want += (std::snprintf(buf, sizeof buf, "%d %a ", ks[i], double(colsum[std::size_t(i)])), buf);
  CHECK(out == want);
  if (vulkan) CHECK(out_vk == want); // (sums of quarters: exact in float32 on any device)
}
