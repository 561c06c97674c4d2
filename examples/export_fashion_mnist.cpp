// Exports the Fashion-MNIST models of examples/fashion_mnist.cpp to every export target, beside
// the web page of examples/web/: a browser classifies test images with them through WebGPU, or
// through WebAssembly where it has no WebGPU.
//
// Usage:
//   example_fashion_mnist                     trains the models:
//   fashion_mnist_{mlp,cnn}.safetensors example_export_fashion_mnist [--weights DIR] [--data DIR]
//   [--out DIR] [--images N] then open OUT/index.html (default OUT: fashion_mnist_web; the page
//   needs nothing else)
//
// Each model is exported with one method, classify(pixels: uint8[batch, 784]) -> probs:
// float32[batch, 10]: the raw pixels in, the normalization inside. (No argmax: its int64 indices
// have no type in WGSL; the page takes the largest probability.) Into OUT:
// c/, wasm/, webgpu/, json/, cuda/ (where NVRTC is installed) and vulkan/ (each <model>.* with its
// weights), the page (index.html, app.js),
// and samples.js: N test images with their labels and the labels tg computes for them, which
// the page shows and tests/web_page.py compares. Exit status: 0, 1 on an error, 77 when the data
// set or the trained weights are missing.
#include <tg/export.hpp>

#include "fashion_mnist_data.hpp"
#include "fashion_mnist_models.hpp"

#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#ifndef TG_EXAMPLES_DIR
#define TG_EXAMPLES_DIR "examples"
#endif

namespace fs = std::filesystem;
using tg::Tensor;

namespace {

/// classify(pixels): the model's probabilities for raw 8-bit pixels.
Tensor classify(tg::nn::Module& model, const Tensor& pixels, bool image) {
  Tensor x =
      (pixels.cast(tg::float32) / 255.0f - fashion_mnist::pixel_mean) / fashion_mnist::pixel_std;
  if (image) x = x.reshape({x.sym_shape()[0], 1, 28, 28});
  return model(x).softmax(1);
}

std::string base64(const unsigned char* p, std::size_t n) {
  static const char* abc = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  for (std::size_t i = 0; i < n; i += 3) {
    const unsigned v = unsigned(p[i]) << 16 | (i + 1 < n ? unsigned(p[i + 1]) << 8 : 0u) |
                       (i + 2 < n ? unsigned(p[i + 2]) : 0u);
    out += abc[v >> 18 & 63];
    out += abc[v >> 12 & 63];
    out += i + 1 < n ? abc[v >> 6 & 63] : '=';
    out += i + 2 < n ? abc[v & 63] : '=';
  }
  return out;
}

} // namespace

int main(int argc, char** argv) {
  std::string data = "/usr/share/datasets/fashion-mnist", weights = ".", out = "fashion_mnist_web";
  std::int64_t count = 16;
  if (const char* d = std::getenv("TG_FASHION_MNIST")) data = d;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string a = argv[i];
    if (a == "--data")
      data = argv[i + 1];
    else if (a == "--weights")
      weights = argv[i + 1];
    else if (a == "--out")
      out = argv[i + 1];
    else if (a == "--images")
      count = std::max(1, std::atoi(argv[i + 1]));
    else {
      std::fprintf(stderr, "unknown option %s\n", a.c_str());
      return 1;
    }
  }
  if (access((data + "/t10k-images-idx3-ubyte.gz").c_str(), R_OK) != 0) {
    std::printf("skipped: no Fashion-MNIST in %s (Debian: dataset-fashion-mnist)\n", data.c_str());
    return 77;
  }
  fashion_mnist::MLP mlp;
  fashion_mnist::CNN cnn;
  struct Model {
    const char* name;
    tg::nn::Module* module;
    bool image;
  };
  const std::vector<Model> models = {{"mlp", &mlp, false}, {"cnn", &cnn, true}};
  for (const Model& m : models) {
    const std::string path = weights + "/fashion_mnist_" + m.name + ".safetensors";
    if (access(path.c_str(), R_OK) != 0) {
      std::printf("skipped: no %s (example_fashion_mnist trains and saves it; --weights DIR)\n",
                  path.c_str());
      return 77;
    }
    tg::safetensors::load_file(*m.module, path);
    m.module->eval();
  }

  try {
    fashion_mnist::Dataset test = fashion_mnist::load_split(data, "t10k", true);
    count = std::min(count, test.n);
    const std::vector<unsigned char> px(test.pixels.begin(),
                                        test.pixels.begin() + std::ptrdiff_t(count * 784));
    const Tensor pixels = Tensor::from_data(px, {count, 784}, tg::uint8);
    fs::create_directories(out);
    std::string samples = "// Written by example_export_fashion_mnist: test images of "
                          "Fashion-MNIST (784 bytes each, base64),\n// their labels, and the "
                          "labels tg computes for them with each model.\nexport const samples = "
                          "{\n  count: " +
                          std::to_string(count) + ",\n  pixels: \"" + base64(px.data(), px.size()) +
                          "\",\n  labels: [";
    for (std::int64_t i = 0; i < count; ++i)
      samples += (i ? ", " : "") + std::to_string(test.labels[std::size_t(i)]);
    samples += "],\n  classes: [";
    for (int k = 0; k < 10; ++k)
      samples += std::string(k ? ", \"" : "\"") + fashion_mnist::class_names[k] + "\"";
    samples += "],\n  tg: {\n";

    for (const Model& m : models) {
      tg::ExportSpec spec;
      spec.dim("batch", 1, 256);
      spec.method(
          "classify", {{"pixels", tg::uint8, {"batch", 784}}},
          [&](const std::vector<Tensor>& in) { return classify(*m.module, in[0], m.image); },
          {"probs"});
      for (const char* target : {"c", "wasm", "webgpu", "json", "cuda", "vulkan"}) {
        if (std::string(target) == "cuda" && !tg::cuda::Nvrtc::get().error.empty()) {
          std::printf("%s -> cuda: skipped (%s)\n", m.name, tg::cuda::Nvrtc::get().error.c_str());
          continue;
        }
        tg::ExportResult r =
            tg::export_model(*m.module, spec, target, out + "/" + target, {.prefix = m.name});
        std::printf("%s -> %s:", m.name, target);
        for (std::size_t i = 0; i < r.files.size() && i < 4; ++i)
          std::printf(" %s", r.files[i].c_str());
        if (r.files.size() > 4) std::printf(" and %zu more", r.files.size() - 4);
        std::printf("\n");
      }
      const std::vector<std::int64_t> labels =
          classify(*m.module, pixels, m.image).argmax(1).to_vector<std::int64_t>();
      samples += std::string("    ") + m.name + ": [";
      int right = 0;
      for (std::int64_t i = 0; i < count; ++i) {
        samples += (i ? ", " : "") + std::to_string(labels[std::size_t(i)]);
        right += labels[std::size_t(i)] == test.labels[std::size_t(i)];
      }
      samples += "],\n";
      std::printf("%s: tg labels %d of %lld test images right\n", m.name, right,
                  static_cast<long long>(count));
    }
    samples += "  },\n};\n";
    std::ofstream(out + "/samples.js") << samples;
    for (const char* f : {"index.html", "app.js"})
      fs::copy_file(fs::path(TG_EXAMPLES_DIR) / "web" / f, fs::path(out) / f,
                    fs::copy_options::overwrite_existing);
    std::printf("open %s/index.html (WebGPU, or WebAssembly where the browser has none)\n",
                out.c_str());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
  return 0;
}
