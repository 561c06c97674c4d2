// WGSL, the dialect WebGPU runs, checked without a WebGPU device:
// - the device "WGSL" below stands in for one: its results come from the reference interpreter
//   running each kernel with WGSL's rewrites (decompose, and narrow32: 32-bit integers only), so
//   those rewrites are checked against INTERP's own semantics, bit for bit; and every kernel it is
//   given is rendered as WGSL in both launch shapes, with float16 packed in words and in
//   array<f16> (shader-f16);
// - the last test case validates every one of those shaders with Dawn (Tint) through node and
//   the npm package `webgpu` (its Null backend validates without executing), which
//   tools/install-deps.sh installs: TG_NODE_MODULES names the node_modules folder that holds it
//   (default /usr/local/lib/tg-npm/node_modules). Without node or the package it says so (and
//   fails under CI=true).
// What the dialect's own text does at run time (packed loads and stores) needs a WebGPU device.
#include <doctest/doctest.h>
#include <tg/runtime/interp.hpp> // white-box: InterpRunner
#include <tg/schedule.hpp>
#include <tg/webgpu.hpp>

#include <bit>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

using tg::Tensor;
using tg::TensorOptions;

namespace {

/// The WGSL sources of every kernel the stand-in was given (both launch shapes), for validation.
struct Shaders {
  std::mutex mutex;
  std::set<std::string> sources;
};
Shaders& shaders() {
  static Shaders s;
  return s;
}

class WgslStandIn : public tg::HostDevice {
public:
  std::string name() const override { return "WGSL"; }
  /// WGSL's schedule and lowering; its device passes run in prepare().
  tg::Target target() const override {
    tg::Target t = tg::with_env(tg::Target::wgsl());
    t.gpu = t.narrow32 = false;
    t.decompose = {};
    t.dialect = tg::Dialect::None;
    return t;
  }
  std::vector<tg::Rc<tg::Runner>>
  prepare(const std::vector<const tg::KernelCode*>& kernels) override {
    std::vector<tg::Rc<tg::Runner>> out;
    for (const tg::KernelCode* c : kernels) {
      tg::Target run = tg::Target::wgsl(); // its rewrites, on the program INTERP runs
      run.gpu = false;
      run.dialect = tg::Dialect::None;
      auto r = std::make_shared<tg::InterpRunner>(tg::device_passes(c->program, run));
      r->name = std::string(c->program.name.view());
      out.push_back(r);
      for (int grouped = 0; grouped < 2; ++grouped)
        for (bool f16 : {false, true}) {
          tg::GpuOptions o;
          o.grouped = grouped;
          tg::KernelCode gpu = tg::finish_kernel(c->program, tg::Target::wgsl(o, f16));
          if (grouped && !gpu.program.grouped) break;
          std::lock_guard<std::mutex> lock(shaders().mutex);
          shaders().sources.insert(std::string(gpu.source.view()));
        }
    }
    return out;
  }
};

void register_stand_in() {
  static const bool once = [] {
    tg::register_device("WGSL", [] { return std::make_shared<WgslStandIn>(); });
    return true;
  }();
  (void)once;
}

/// The devices the cases run on: the stand-in, and WEBGPU where Dawn finds an adapter (its
/// reason printed once where it does not; under CI=true it must be there).
std::vector<std::string> wgsl_devices() {
  register_stand_in();
  static const std::vector<std::string> list = [] {
    std::vector<std::string> l{"WGSL"};
    std::string why = tg::device("WEBGPU")->unavailable_reason();
    if (why.empty()) {
      auto d = tg::dynamic_pointer_cast<tg::webgpu::WebGpuDevice>(tg::device("WEBGPU"));
      std::printf("tg tests: WEBGPU: %s\n", d->description().c_str());
      l.push_back("WEBGPU");
    } else {
      std::printf("tg tests: device WEBGPU skipped: %s\n", why.c_str());
      const char* ci = std::getenv("CI");
      if (ci && std::string(ci) == "true") FAIL_CHECK("WEBGPU unavailable under CI=true: " << why);
    }
    return l;
  }();
  return list;
}

/// Whether two tensors hold the same values bit for bit (NaNs of any payload equal).
void same(const char* what, const Tensor& got, const Tensor& want) {
  const std::string name = what;
  CAPTURE(name);
  REQUIRE(got.dtype() == want.dtype());
  REQUIRE(got.shape() == want.shape());
  Tensor g = got.to("INTERP"), w = want.to("INTERP");
  std::vector<bool> both_nan(std::size_t(g.numel()), false);
  if (tg::is_float(g.dtype())) {
    std::vector<std::uint8_t> gn = g.isnan().cast(tg::uint8).to_vector<std::uint8_t>(),
                              wn = w.isnan().cast(tg::uint8).to_vector<std::uint8_t>();
    for (std::size_t k = 0; k < gn.size(); ++k) both_nan[k] = gn[k] && wn[k];
  }
  const std::size_t size = tg::itemsize(g.dtype());
  const tg::DType bits = size == 1   ? tg::uint8
                         : size == 2 ? tg::uint16
                         : size == 4 ? tg::uint32
                                     : tg::uint64;
  std::vector<std::uint64_t> a = g.bitcast(bits).cast(tg::uint64).to_vector<std::uint64_t>(),
                             b = w.bitcast(bits).cast(tg::uint64).to_vector<std::uint64_t>();
  int differ = 0;
  for (std::size_t k = 0; k < a.size(); ++k)
    if (a[k] != b[k] && !both_nan[k] && differ++ < 4)
      FAIL_CHECK(what << ": [" << k << "] bits " << a[k] << " vs INTERP's " << b[k]);
  CHECK(differ == 0);
}

/// Floats within a relative tolerance (and NaN where INTERP has NaN), for WGSL's own
/// transcendental functions, whose last bits are the driver's.
void close(const char* what, const Tensor& got, const Tensor& want, double rtol,
           double atol = 1e-37) {
  const std::string name = what;
  CAPTURE(name);
  std::vector<double> g = got.to("INTERP").cast(tg::float64).to_vector<double>(),
                      w = want.to("INTERP").cast(tg::float64).to_vector<double>();
  REQUIRE(g.size() == w.size());
  int differ = 0;
  for (std::size_t k = 0; k < g.size(); ++k) {
    const bool ok = (g[k] != g[k] && w[k] != w[k]) || g[k] == w[k] ||
                    std::fabs(g[k] - w[k]) <= rtol * std::fabs(w[k]) + atol;
    if (!ok && differ++ < 4)
      FAIL_CHECK(what << ": [" << k << "] " << g[k] << " vs INTERP's " << w[k]);
  }
  CHECK(differ == 0);
}

/// Values around every boundary the rewrites handle: zeros, infinities, NaN, integer ranges,
/// float16's range and subnormals, 2^31, 2^32, 2^63.
std::vector<float> edge_values() {
  std::vector<float> v = {0.0f,
                          -0.0f,
                          1.0f,
                          -1.0f,
                          0.5f,
                          -0.5f,
                          1.5f,
                          -2.5f,
                          127.0f,
                          128.0f,
                          -128.0f,
                          -129.0f,
                          255.0f,
                          256.0f,
                          32767.0f,
                          32768.0f,
                          -32769.0f,
                          65504.0f,
                          65520.0f,
                          1e-45f,
                          5.96e-8f,
                          3e38f,
                          2147483520.0f,
                          2147483648.0f,
                          -2147483648.0f,
                          -2147483904.0f,
                          4294967040.0f,
                          4294967296.0f,
                          5e9f,
                          -5e9f,
                          9.2e18f,
                          -9.2e18f,
                          9.3e18f,
                          -9.3e18f,
                          1.8e19f,
                          1e30f,
                          std::numeric_limits<float>::infinity(),
                          -std::numeric_limits<float>::infinity(),
                          std::numeric_limits<float>::quiet_NaN()};
  for (int k = -40; k <= 40; ++k) v.push_back(float(k) * 3.7f);
  return v;
}

} // namespace

TEST_CASE("WGSL: float ops as INTERP computes them") {
  for (const std::string& dev : wgsl_devices()) {
    CAPTURE(dev);
    std::vector<float> e = edge_values();
    const std::int64_t n = std::int64_t(e.size());
    Tensor xi = Tensor::from_data(e.data(), {n}, TensorOptions(tg::float32, "INTERP"));
    Tensor x = xi.to(dev);
    std::vector<float> rev(e.rbegin(), e.rend());
    Tensor yi = Tensor::from_data(rev.data(), {n}, TensorOptions(tg::float32, "INTERP"));
    Tensor y = yi.to(dev);
    // exp2 and log2: WGSL's own on a device (ulps from glibc's)
    auto transcendental = [&](const char* what, const Tensor& got, const Tensor& want) {
      if (dev == "WGSL") return same(what, got, want);
      close(what, got, want, 4e-6);
    };
    transcendental("exp", x.exp(), xi.exp());
    transcendental("log", x.log(), xi.log());
    // sin: an exact reduction (decompose's sin_reduce), then sin within pi/4: a few ulp of 1
    // from glibc's at every argument (3e38 too)
    close("sin", x.sin(), xi.sin(), 0, dev == "WGSL" ? 4e-7 : 1e-6);
    same("sqrt", x.sqrt(), xi.sqrt());
    same("division, by zero too", x / y, xi / yi);
    same("reciprocal", x.reciprocal(), xi.reciprocal());
    same("maximum with NaN", x.maximum(y), xi.maximum(yi));
    same("where", tg::where(x > y, x, y * 2.0f), tg::where(xi > yi, xi, yi * 2.0f));
    transcendental("softmax", x.reshape({-1, 3}).softmax(1), xi.reshape({-1, 3}).softmax(1));
    same("sum", x.clamp(-100, 100).sum(), xi.clamp(-100, 100).sum());
    Tensor a = tg::randn({24, 40}, TensorOptions(tg::float32, "INTERP")),
           b = tg::randn({40, 16}, TensorOptions(tg::float32, "INTERP"));
    // Products: INTERP accumulates by fused multiply-add (codegen/contract.hpp), WGSL multiplies
    // and adds apart (its fma() may round twice): the same bits as INTERP's sum of the products
    // computed first, and within a few roundings of its own.
    Tensor products = (a.reshape({24, 40, 1}) * b.reshape({1, 40, 16})).realize();
    same("matmul", a.to(dev).matmul(b.to(dev)), products.sum(1));
    Tensor img = tg::randn({2, 3, 9, 9}, TensorOptions(tg::float32, "INTERP")),
           k = tg::randn({4, 3, 3, 3}, TensorOptions(tg::float32, "INTERP"));
    close("conv2d", tg::nn::functional::conv2d(img.to(dev), k.to(dev), Tensor(), 1, 1),
          tg::nn::functional::conv2d(img, k, Tensor(), 1, 1), 1e-5, 1e-5);
    // pow: glibc's, against decompose's squaring and 2^(b log2|a|) in float32 (WGSL has no
    // float64): special cases exact, others close
    Tensor base = x.reshape({-1, 1}),
           ex = Tensor::from_data(std::vector<float>{0, 1, -1, 2, 3, -3, 0.5f, 2.5f, 7}, {1, 9})
                    .to(dev);
    close("pow", base.pow(ex), xi.reshape({-1, 1}).pow(ex.to("INTERP")), 1e-5);
  }
}

TEST_CASE("WGSL: integers of every width up to 32 bits and bool as INTERP computes them") {
  for (const std::string& dev : wgsl_devices()) {
    CAPTURE(dev);
    std::vector<float> e = edge_values();
    const std::int64_t n = std::int64_t(e.size());
    Tensor fi = Tensor::from_data(e.data(), {n}, TensorOptions(tg::float32, "INTERP"));
    Tensor f = fi.to(dev);
    for (tg::DType t :
         {tg::int8, tg::int16, tg::int32, tg::uint8, tg::uint16, tg::uint32, tg::bool_}) {
      const std::string dtype = tg::dtype_name(t);
      CAPTURE(dtype);
      same("from float32", f.cast(t), fi.cast(t));
      if (t == tg::bool_) continue;
      Tensor ai = fi.cast(t), bi = fi.flip({0}).cast(t);
      Tensor a = ai.to(dev), b = bi.to(dev);
      same("add", a + b, ai + bi);
      same("mul", a * b, ai * bi);
      same("neg", -a, -ai);
      same("division, by 0 and -1 too", a.floor_divide(b), ai.floor_divide(bi));
      same("remainder", a.remainder(b), ai.remainder(bi));
      same("maximum", a.maximum(b), ai.maximum(bi));
      same("compare", a < b, ai < bi);
      same("bitwise", a.bitwise_and(b).bitwise_or(b).bitwise_xor(a),
           ai.bitwise_and(bi).bitwise_or(bi).bitwise_xor(ai));
      same("to float32", a.cast(tg::float32), ai.cast(tg::float32));
      for (tg::DType u : {tg::int8, tg::int16, tg::int32, tg::uint8, tg::uint16, tg::uint32,
                          tg::bool_, tg::float16, tg::bfloat16})
        same("to another dtype", a.cast(u), ai.cast(u));
      same("max along a dim", a.reshape({-1, 3}).max(1), ai.reshape({-1, 3}).max(1));
    }
    // bitcasts between integers of one width (the wrapping of narrow32)
    Tensor u8 = f.cast(tg::uint8), u8i = fi.cast(tg::uint8);
    same("uint8 as int8", u8.bitcast(tg::int8), u8i.bitcast(tg::int8));
    Tensor i16 = f.cast(tg::int16), i16i = fi.cast(tg::int16);
    same("int16 as uint16", i16.bitcast(tg::uint16), i16i.bitcast(tg::uint16));
    same("int16 as float16", i16.bitcast(tg::float16), i16i.bitcast(tg::float16));
  }
}

TEST_CASE("WGSL: float16 and bfloat16 bit for bit") {
  for (const std::string& dev : wgsl_devices()) {
    CAPTURE(dev);
    std::vector<std::uint16_t> bits(65536);
    for (std::size_t k = 0; k < bits.size(); ++k) bits[k] = std::uint16_t(k);
    Tensor hi = Tensor::from_data(bits.data(), {65536}, TensorOptions(tg::uint16, "INTERP"));
    std::vector<float> fs = edge_values(); // and float16's subnormals, every rounding case
    for (int k = -4096; k <= 4096; ++k) fs.push_back(std::ldexp(float(k), -34));
    for (int k = 0; k < 8192; ++k)
      fs.push_back(std::bit_cast<float>(0x38000000u + 57u * std::uint32_t(k)));
    Tensor fi = Tensor::from_data(fs.data(), {std::int64_t(fs.size())},
                                  TensorOptions(tg::float32, "INTERP"));
    Tensor h = hi.to(dev), f = fi.to(dev);
    for (tg::DType half : {tg::float16, tg::bfloat16}) {
      const std::string dtype = tg::dtype_name(half);
      CAPTURE(dtype);
      same("decode", h.bitcast(half).cast(tg::float32), hi.bitcast(half).cast(tg::float32));
      same("encode", f.cast(half).bitcast(tg::uint16), fi.cast(half).bitcast(tg::uint16));
      same("arithmetic", h.bitcast(half) * 3.0f + 1.0f, hi.bitcast(half) * 3.0f + 1.0f);
      same("sum", h.bitcast(half).reshape({256, 256}).sum(1),
           hi.bitcast(half).reshape({256, 256}).sum(1));
    }
  }
}

TEST_CASE("WEBGPU: float16 tensors are array<f16> where the adapter has shader-f16, else packed") {
  if (wgsl_devices().size() < 2) return; // (the reason is printed)
  auto dev = tg::dynamic_pointer_cast<tg::webgpu::WebGpuDevice>(tg::device("WEBGPU"));
  const char* ci = std::getenv("CI");
  if (ci && std::string(ci) == "true" && dev->backend() == "vulkan")
    CHECK_MESSAGE(dev->native_f16(), "lavapipe 25 has shader-f16: " << dev->description());
  std::vector<float> fs = edge_values();
  Tensor fi =
      Tensor::from_data(fs.data(), {std::int64_t(fs.size())}, TensorOptions(tg::float32, "INTERP"));
  Tensor hi = fi.cast(tg::float16).realize(), h = hi.to("WEBGPU"), f = fi.to("WEBGPU");
  const bool native = dev->native_f16();
  struct Restore {
    tg::Rc<tg::webgpu::WebGpuDevice> d;
    bool f16;
    ~Restore() { d->native_f16() = f16; }
  } restore{dev, native};
  for (bool f16 : {native, false}) { // (distinct constants: plans are kept per device and graph)
    CAPTURE(f16);
    dev->native_f16() = f16;
    const float k = f16 ? 2.5f : 3.5f;
    const std::string src(
        tg::finish_kernel(tg::schedule({h * k}).lowered.at(0), dev->target()).source.view());
    CHECK((src.find("array<f16>") != std::string::npos) == f16);
    CHECK((src.find("enable f16;") != std::string::npos) == f16);
    same("load, multiply, store", h * k, hi * k);
    same("rounded from float32", (f * k).cast(tg::float16), (fi * k).cast(tg::float16));
    same("neighbours stored by different threads", h.reshape({-1, 1}).expand({-1, 3}) * k,
         hi.reshape({-1, 1}).expand({-1, 3}) * k);
    if (!native) break;
  }
}

TEST_CASE("WGSL: 64-bit tensors and 64-bit integer arithmetic are refused, naming the kernel") {
  for (const std::string& dev : wgsl_devices()) {
    CAPTURE(dev);
    // (a lazy tensor: the refusal comes when it is realized)
    auto refused = [](const char* what, Tensor lazy, const char* needle) {
      CAPTURE(what);
      try {
        lazy.realize();
        FAIL("not refused");
      } catch (const tg::device_error& e) {
        CHECK_MESSAGE(std::string(e.what()).find(needle) != std::string::npos, e.what());
        CHECK_MESSAGE(std::string(e.what()).find("tg: kernel ") == 0, e.what());
      }
    };
    TensorOptions f32(tg::float32, dev);
    Tensor x = tg::ones({8}, f32);
    refused("a float64 tensor", x.cast(tg::float64) * 2.0, "tensor of dtype float64");
    refused("an int64 tensor", x.cast(tg::int64) + 1, "tensor of dtype int64");
    refused("float64 inside a kernel", (x.cast(tg::float64) * 2.0).cast(tg::float32),
            "computes float64 values");
    refused("a sum of integers (int64, as PyTorch's)", x.cast(tg::int32).sum().cast(tg::float32),
            "accumulates integers in int64");
    // a constant no int32 holds: index arithmetic past 2^31
    tg::Program p;
    p.name << "E_big";
    p.ops.push_back(tg::UOp{tg::UKind::Const,
                            tg::Op::Add,
                            tg::DType::Int64,
                            {-1, -1, -1},
                            tg::Scalar::of_int(tg::DType::Int64, std::int64_t(1) << 31),
                            -1,
                            {}});
    CHECK_THROWS_WITH_AS(tg::narrow32(p), doctest::Contains("indexes past 2^31"), tg::device_error);
  }
}

TEST_CASE("WEBGPU: the grid spills past the work-groups a dimension holds; limits refuse kernels "
          "and bound the work-group") {
  if (wgsl_devices().size() < 2) return; // (the reason is printed)
  auto dev = tg::dynamic_pointer_cast<tg::webgpu::WebGpuDevice>(tg::device("WEBGPU"));
  const tg::webgpu::api::Limits saved = dev->limits();
  struct Restore {
    tg::Rc<tg::webgpu::WebGpuDevice> d;
    tg::webgpu::api::Limits l;
    ~Restore() { d->limits() = l; }
  } restore{dev, saved};
  dev->limits().max_compute_workgroups_per_dimension = 3; // grids of at most 3 x 3 x 3
  std::vector<float> v(5000);
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = float(i) * 0.01f;
  Tensor ai = Tensor::from_data(v.data(), {50, 100}, TensorOptions(tg::float32, "INTERP"));
  Tensor a = ai.to("WEBGPU");
  same("elementwise over 20 work-groups", a * 2.0f + 1.0f, ai * 2.0f + 1.0f);
  close("row sums", a.sqrt().sum(1), ai.sqrt().sum(1), 1e-6);
  close("a full sum", a.sum(), ai.sum(), 1e-6);
  dev->limits() = saved;
  Tensor b = (a * 3.0f).realize(), c = (a + 1.0f).realize();
  Tensor bi = ai * 3.0f, ci = ai + 1.0f;
  dev->limits().max_storage_buffers_per_shader_stage = 3; // an output and two inputs: cut in two
  CHECK(tg::schedule({a + b * c}).lowered.size() == 2);
  same("a kernel over three tensors, cut in two", a + b * c, ai + bi * ci);
  close("a kernel over five tensors, cut", (a + b) * (c - b.sqrt()) + (a * c).exp2(),
        (ai + bi) * (ci - bi.sqrt()) + (ai * ci).exp2(), 4e-6); // (WGSL's exp2)
  dev->limits().max_storage_buffers_per_shader_stage = 2;       // an output and one input
  try {
    (a + b * c).realize();
    FAIL("a kernel over three tensors was not refused");
  } catch (const tg::device_error& e) {
    CHECK_MESSAGE(std::string(e.what()).find("maxStorageBuffersPerShaderStage") !=
                      std::string::npos,
                  e.what());
  }
  dev->limits() = saved;
  dev->limits().max_storage_buffer_binding_size = 4096; // 1,024 floats
  CHECK_THROWS_WITH_AS(ai.to("WEBGPU"), doctest::Contains("its largest storage binding is 4096"),
                       tg::device_error);
  CHECK(ai.slice(0, 0, 10).to("WEBGPU").sum().item<float>() ==
        doctest::Approx(ai.slice(0, 0, 10).sum().item<float>()));
  dev->limits() = saved;
  dev->limits().max_compute_invocations_per_workgroup = 32; // work-groups of 32 threads at most
  for (const tg::Program& p : tg::schedule({(a * 5.0f).sum(1)}).lowered)
    CHECK(tg::finish_kernel(p, dev->target()).program.local <= 32);
  same("elementwise in work-groups of 32", a * 5.0f - 1.0f, ai * 5.0f - 1.0f);
  close("row sums in work-groups of 32", (a * 5.0f).sum(1), (ai * 5.0f).sum(1), 1e-6);
}

TEST_CASE("WEBGPU: a jitted training step updates its parameters in place, as on the CPU") {
  // (an update in place binds its target twice, which WebGPU refuses when one binding is
  // writable: the kernel reads a copy)
  if (wgsl_devices().size() < 2) return; // (the reason is printed)
  tg::manual_seed(2);
  Tensor x = tg::randn({16, 12}), y = tg::randint(0, 4, {16}, tg::int32);
  for (const std::string optimizer : {"sgd", "adam"}) {
    CAPTURE(optimizer);
    std::vector<std::vector<float>> after;
    for (const std::string dev : {"CPU", "WEBGPU"}) {
      tg::manual_seed(3);
      tg::nn::Linear lin(12, 4, true, {tg::float32, dev});
      std::unique_ptr<tg::optim::Optimizer> opt;
      if (optimizer == "sgd")
        opt = std::make_unique<tg::optim::SGD>(lin.parameters(),
                                               tg::optim::SGDOptions{.lr = 0.1, .momentum = 0.9});
      else
        opt =
            std::make_unique<tg::optim::Adam>(lin.parameters(), tg::optim::AdamOptions{.lr = 0.05});
      Tensor xd = x.to(dev), yd = y.to(dev);
      auto step = tg::jit([&](Tensor a, Tensor b) {
        opt->zero_grad();
        Tensor loss = tg::nn::functional::cross_entropy(lin(a), b);
        loss.backward();
        opt->step();
        return loss;
      });
      for (int k = 0; k < 4; ++k) step(xd, yd); // captured, then replayed
      after.push_back(lin.weight.to("CPU").to_vector<float>());
    }
    REQUIRE(after[0].size() == after[1].size());
    for (std::size_t i = 0; i < after[0].size(); ++i)
      CHECK(after[1][i] == doctest::Approx(after[0][i]).epsilon(1e-4));
  }
}

TEST_CASE("WEBGPU: what Dawn compiles from a shader is kept in the kernel cache on disk") {
  if (wgsl_devices().size() < 2) return; // (the reason is printed)
  if (!tg::detail::disk_cache_enabled()) {
    MESSAGE("skipped: the disk cache is off (TG_CACHE=0)");
    return;
  }
  auto entries = [] {
    int n = 0;
    std::error_code ec;
    for (const auto& f : std::filesystem::directory_iterator(tg::detail::cache_dir(), ec))
      n += f.path().filename().string().rfind("webgpu-", 0) == 0;
    return n;
  };
  Tensor x =
      Tensor::from_data(std::vector<float>{1, 2, 3}, {3}, TensorOptions(tg::float32, "WEBGPU"));
  same("a kernel no other case runs", x * 7.25f - 3.5f, x.to("INTERP") * 7.25f - 3.5f);
  CHECK(entries() > 0);
}

// Last in this file (doctest runs the cases in order): every shader the cases above rendered.
TEST_CASE("WGSL: every kernel the stand-in rendered validates in Dawn") {
  std::vector<std::string> sources;
  {
    std::lock_guard<std::mutex> lock(shaders().mutex);
    sources.assign(shaders().sources.begin(), shaders().sources.end());
  }
  if (sources.empty()) {
    MESSAGE("no shaders rendered (the cases above were not run)");
    return;
  }
  const char* env = std::getenv("TG_NODE_MODULES");
  const std::string modules = env && *env ? env : "/usr/local/lib/tg-npm/node_modules";
  const char* ci = std::getenv("CI");
  const bool in_ci = ci && std::string(ci) == "true"; // where install-deps.sh put them: required
  if (!std::filesystem::exists(modules + "/webgpu")) {
    MESSAGE("skipped: no npm package webgpu in " << modules
                                                 << " (tools/install-deps.sh installs it; "
                                                    "TG_NODE_MODULES names another folder)");
    CHECK_FALSE(in_ci);
    return;
  }
  if (std::system("node --version > /dev/null 2>&1") != 0) {
    MESSAGE("skipped: no node on PATH");
    CHECK_FALSE(in_ci);
    return;
  }
  const std::filesystem::path dir = std::filesystem::path(TG_BINARY_DIR) / "wgsl-shaders";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  std::string files;
  for (std::size_t k = 0; k < sources.size(); ++k) {
    const std::filesystem::path f = dir / ("k" + std::to_string(k) + ".wgsl");
    std::ofstream(f) << sources[k];
    files += " " + f.string();
  }
  const std::filesystem::path log = dir / "validate.log";
  const std::string cmd = "NODE_PATH=" + modules + " node " + TG_TESTS_DIR + "/wgsl/validate.cjs" +
                          files + " > " + log.string() + " 2>&1";
  const int rc = std::system(cmd.c_str());
  std::ifstream in(log);
  const std::string out((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  MESSAGE(sources.size() << " WGSL kernels given to Dawn's validator:\n" << out);
  CHECK(rc == 0);
}
