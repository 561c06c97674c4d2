#pragma once
// The Fashion-MNIST data (Debian's dataset-fashion-mnist, IDX files compressed with gzip), read by
// the demo (examples/fashion_mnist.cpp) and the export example.
//
// The files are gzip-compressed. tg links nothing but libc, -ldl and -pthread, so zlib is loaded
// at run time: dlopen("libz.so.1") (zlib1g is Priority: required on Debian, so it is always
// there) and its gzopen/gzread; if that fails, `gzip -dc` is run as a subprocess. dlopen keeps the
// reading in-process (no shell, no quoting of the path); the subprocess is the fallback for a
// system without a loadable zlib.
#include <dlfcn.h>

#include <cstdint>
#include <cstdio>
#include <stdexcept>
#include <string>
#include <vector>

namespace fashion_mnist {

/// Fashion-MNIST's pixel statistics: the models take (pixel / 255 - mean) / std.
inline constexpr float pixel_mean = 0.2860f, pixel_std = 0.3530f;
/// The classes, by label.
inline constexpr const char* class_names[10] = {"T-shirt/top", "Trouser",   "Pullover", "Dress",
                                                "Coat",        "Sandal",    "Shirt",    "Sneaker",
                                                "Bag",         "Ankle boot"};

inline std::vector<unsigned char> gunzip_zlib(const std::string& path, bool& available) {
  available = false;
  void* z = dlopen("libz.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!z) z = dlopen("libz.so", RTLD_NOW | RTLD_LOCAL);
  if (!z) return {};
  using gzopen_t = void* (*)(const char*, const char*);
  using gzread_t = int (*)(void*, void*, unsigned);
  using gzclose_t = int (*)(void*);
  auto gzopen = reinterpret_cast<gzopen_t>(dlsym(z, "gzopen"));
  auto gzread = reinterpret_cast<gzread_t>(dlsym(z, "gzread"));
  auto gzclose = reinterpret_cast<gzclose_t>(dlsym(z, "gzclose"));
  if (!gzopen || !gzread || !gzclose) return {};
  available = true;
  void* f = gzopen(path.c_str(), "rb");
  if (!f) throw std::runtime_error("cannot open " + path);
  std::vector<unsigned char> out;
  std::vector<unsigned char> chunk(1 << 20);
  while (true) {
    int n = gzread(f, chunk.data(), unsigned(chunk.size()));
    if (n < 0) {
      gzclose(f);
      throw std::runtime_error("corrupt gzip data in " + path);
    }
    if (n == 0) break;
    out.insert(out.end(), chunk.begin(), chunk.begin() + n);
  }
  gzclose(f);
  return out;
}

inline std::vector<unsigned char> gunzip_subprocess(const std::string& path) {
  std::string quoted = "'";
  for (char c : path) quoted += c == '\'' ? std::string("'\\''") : std::string(1, c);
  quoted += "'";
  std::FILE* p = popen(("gzip -dc " + quoted).c_str(), "r");
  if (!p) throw std::runtime_error("cannot run gzip -dc " + path);
  std::vector<unsigned char> out;
  unsigned char buf[65536];
  std::size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, p)) > 0) out.insert(out.end(), buf, buf + n);
  if (pclose(p) != 0) throw std::runtime_error("gzip -dc " + path + " failed");
  return out;
}

inline std::vector<unsigned char> gunzip(const std::string& path) {
  bool zlib = false;
  std::vector<unsigned char> out = gunzip_zlib(path, zlib);
  return zlib ? out : gunzip_subprocess(path);
}

inline std::uint32_t be32(const std::vector<unsigned char>& b, std::size_t at) {
  return std::uint32_t(b[at]) << 24 | std::uint32_t(b[at + 1]) << 16 |
         std::uint32_t(b[at + 2]) << 8 | b[at + 3];
}

struct Dataset {
  std::vector<float> images; // n x 784, normalized
  std::vector<std::int64_t> labels;
  std::int64_t n = 0;
  std::vector<unsigned char> pixels; // n x 784, as in the file (load_split's keep_pixels)
};

/// The split `prefix` ("train", "t10k") of the data in `dir`.
inline Dataset load_split(const std::string& dir, const std::string& prefix,
                          bool keep_pixels = false) {
  auto img = gunzip(dir + "/" + prefix + "-images-idx3-ubyte.gz");
  auto lab = gunzip(dir + "/" + prefix + "-labels-idx1-ubyte.gz");
  if (img.size() < 16 || be32(img, 0) != 2051)
    throw std::runtime_error(prefix + " images: not an IDX3 file");
  if (lab.size() < 8 || be32(lab, 0) != 2049)
    throw std::runtime_error(prefix + " labels: not an IDX1 file");
  std::size_t n = be32(img, 4), rows = be32(img, 8), cols = be32(img, 12);
  if (rows != 28 || cols != 28 || img.size() != 16 + n * 784 || be32(lab, 4) != n ||
      lab.size() != 8 + n)
    throw std::runtime_error(prefix + ": unexpected sizes");
  Dataset d;
  d.n = std::int64_t(n);
  d.images.resize(n * 784);
  const float mean = pixel_mean, std = pixel_std;
  for (std::size_t i = 0; i < n * 784; ++i) d.images[i] = (float(img[16 + i]) / 255.f - mean) / std;
  d.labels.assign(lab.begin() + 8, lab.end());
  if (keep_pixels) d.pixels.assign(img.begin() + 16, img.end());
  return d;
}

} // namespace fashion_mnist
