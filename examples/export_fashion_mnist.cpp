// Exports the Fashion-MNIST models of examples/fashion_mnist.cpp to every export target, beside
// the web page of examples/web/: a browser classifies test images with them through WebGPU, or
// through WebAssembly where it has no WebGPU. And exports the MLP's training step, from fresh
// weights, with the page that trains it in the browser (train.html).
//
// Usage:
//   example_fashion_mnist                     trains the models:
//   fashion_mnist_{mlp,cnn}.safetensors example_export_fashion_mnist [--weights DIR] [--data DIR]
//   [--out DIR] [--images N] then open OUT/index.html or OUT/train.html (default OUT:
//   fashion_mnist_web; the pages need nothing else)
//   example_export_fashion_mnist --out DIR --check-trained WEIGHTS LABELS
//     checks that the labels the page trained in the browser gave the test images of
//     DIR/train_data.bin (LABELS: a file of them, comma-separated) are tg's for the weights the
//     page saved (WEIGHTS); tests/web_train.py runs it
//
// Each model is exported with one method, classify(pixels: uint8[batch, 784]) -> probs:
// float32[batch, 10]: the raw pixels in, the normalization inside. (No argmax: its int64 indices
// have no type in WGSL; the page takes the largest probability.) Into OUT:
// c/, wasm/, webgpu/, json/, cuda/ (where NVRTC is installed) and vulkan/ (each <model>.* with its
// weights), the page (index.html, app.js),
// and samples.js: N test images with their labels and the labels tg computes for them, which
// the page shows and tests/web_page.py compares.
//
// The training step: step(pixels: uint8[64, 784], labels: int32[64]) -> loss, Adam's update of the
// MLP's weights and its own state, beside classify(pixels) over the same weights, into
// OUT/train/{webgpu,wasm,c}/mlp_train.*; and OUT/train_data.bin: 4000 training images and 1000
// held-out test images (bytes: "TGFM", the two counts as uint32, then each set's pixels and
// labels). Exit status: 0, 1 on an error, 77 when the data set or the trained weights are
// missing.
#include <tg/export.hpp>

#include "fashion_mnist_data.hpp"
#include "fashion_mnist_models.hpp"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
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

/// The normalized pixels as the models read them.
Tensor normalized(const Tensor& pixels) {
  return (pixels.cast(tg::float32) / 255.0f - fashion_mnist::pixel_mean) / fashion_mnist::pixel_std;
}

/// The images of train_data.bin: the training set (0) or the test set (1).
struct Images {
  std::vector<unsigned char> pixels, labels;
  std::int64_t n = 0;
};
Images read_images(const std::string& path, int which) {
  std::ifstream f(path, std::ios::binary);
  const std::string bytes{std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
  std::uint32_t counts[2] = {0, 0};
  if (bytes.size() < 12 || bytes.compare(0, 4, "TGFM") != 0)
    throw tg::error("cannot read " + path +
                    " (a tg data file: example_export_fashion_mnist writes it)");
  std::memcpy(counts, bytes.data() + 4, 8);
  std::size_t at = 12 + (which ? 785 * std::size_t(counts[0]) : 0);
  Images im;
  im.n = counts[which];
  if (bytes.size() < at + 785 * std::size_t(im.n)) throw tg::error(path + " is truncated");
  im.pixels.assign(bytes.begin() + std::ptrdiff_t(at),
                   bytes.begin() + std::ptrdiff_t(at + 784 * im.n));
  im.labels.assign(bytes.begin() + std::ptrdiff_t(at + 784 * im.n),
                   bytes.begin() + std::ptrdiff_t(at + 785 * im.n));
  return im;
}

/// --check-trained: the labels the page gave the test images against tg's for the page's weights.
/// A label may differ only where tg's two largest probabilities are within 1e-4 (a tie that
/// float rounding decides).
int check_trained(const std::string& out, const std::string& weights, const std::string& labels) {
  const Images test = read_images(out + "/train_data.bin", 1);
  fashion_mnist::MLP mlp;
  tg::StateDict saved = tg::safetensors::load_file(weights), params;
  for (const auto& [k, t] : mlp.state_dict()) params.insert(k, saved.at(k)); // (not optim.*)
  mlp.load_state_dict(params);
  std::ifstream f(labels);
  std::vector<std::int64_t> page;
  for (std::string v; std::getline(f, v, ',');) page.push_back(std::atoll(v.c_str()));
  if (std::int64_t(page.size()) != test.n) {
    std::printf("the page gave %zu labels for %lld test images\n", page.size(), (long long)test.n);
    return 1;
  }
  const Tensor probs =
      mlp(normalized(Tensor::from_data(test.pixels, {test.n, 784}, tg::uint8))).softmax(1);
  const std::vector<float> p = probs.to_vector<float>();
  int same = 0, ties = 0, differ = 0;
  for (std::int64_t i = 0; i < test.n; ++i) {
    const float* row = p.data() + 10 * i;
    const int best = int(std::max_element(row, row + 10) - row);
    float second = -1;
    for (int k = 0; k < 10; ++k)
      if (k != best) second = std::max(second, row[k]);
    if (page[std::size_t(i)] == best)
      ++same;
    else if (row[best] - second < 1e-4f && row[page[std::size_t(i)]] >= second)
      ++ties;
    else if (differ++ < 5)
      std::printf("test image %lld: the page says %lld, tg %d (p = %.4f)\n", (long long)i,
                  (long long)page[std::size_t(i)], best, row[best]);
  }
  std::printf("tg, on the weights the page trained: the page's label on %d of %lld test images "
              "(%d more within float rounding of a tie)\n",
              same, (long long)test.n, ties);
  return differ ? 1 : 0;
}

} // namespace

int main(int argc, char** argv) {
  std::string data = "/usr/share/datasets/fashion-mnist", weights = ".", out = "fashion_mnist_web";
  std::string check_weights, check_labels;
  std::int64_t count = 16;
  if (const char* d = std::getenv("TG_FASHION_MNIST")) data = d;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string a = argv[i];
    if (a == "--check-trained" && i + 2 < argc) {
      check_weights = argv[i + 1];
      check_labels = argv[i + 2];
      ++i;
    } else if (a == "--data")
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
  if (!check_weights.empty()) try {
      return check_trained(out, check_weights, check_labels);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "error: %s\n", e.what());
      return 1;
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

    // the MLP's training step from fresh weights, and the images train.html trains it on
    tg::manual_seed(1);
    fashion_mnist::MLP fresh;
    tg::optim::Adam opt(fresh.parameters(), {.lr = 2e-3});
    tg::ExportSpec train;
    train.dim("batch", 1, 1000).state(opt.state_dict(), "optim.");
    train.method("step", {{"pixels", tg::uint8, {64, 784}}, {"labels", tg::int32, {64}}},
                 [&](const std::vector<Tensor>& in) {
                   opt.zero_grad();
                   Tensor loss = tg::nn::F::cross_entropy(fresh(normalized(in[0])), in[1]);
                   loss.backward();
                   opt.step();
                   return loss;
                 },
                 {"loss"});
    train.method("classify", {{"pixels", tg::uint8, {"batch", 784}}},
                 [&](const std::vector<Tensor>& in) { return classify(fresh, in[0], false); },
                 {"probs"});
    for (const char* target : {"webgpu", "wasm", "c"}) {
      tg::export_model(fresh, train, target, out + "/train/" + target, {.prefix = "mlp_train"});
      std::printf("mlp training step -> train/%s\n", target);
    }
    const fashion_mnist::Dataset train_set = fashion_mnist::load_split(data, "train", true);
    std::ofstream bin(out + "/train_data.bin", std::ios::binary);
    const std::uint32_t counts[2] = {4000, 1000};
    bin.write("TGFM", 4).write(reinterpret_cast<const char*>(counts), 8);
    for (int which = 0; which < 2; ++which) {
      const fashion_mnist::Dataset& d = which ? test : train_set;
      const std::size_t n = counts[which];
      bin.write(reinterpret_cast<const char*>(d.pixels.data()), std::streamsize(784 * n));
      for (std::size_t i = 0; i < n; ++i) bin.put(char(d.labels[i]));
    }
    if (!bin) throw tg::error("cannot write " + out + "/train_data.bin");

    for (const char* f : {"index.html", "app.js", "train.html", "train.js"})
      fs::copy_file(fs::path(TG_EXAMPLES_DIR) / "web" / f, fs::path(out) / f,
                    fs::copy_options::overwrite_existing);
    std::printf("open %s/index.html (WebGPU, or WebAssembly where the browser has none), and "
                "%s/train.html to train the MLP in the browser\n",
                out.c_str(), out.c_str());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
  return 0;
}
