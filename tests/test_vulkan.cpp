// The Vulkan backend's own checks (the op suite and the fuzz test run on VULKAN too, through
// tests/devices.hpp): the launch shape (grids split past the device's work-groups per dimension),
// dtype rejection before compiling, the storage-buffer range limit, the disk caches, every GLSL
// compiler, transfers between devices, and zero validation messages. Runs on lavapipe in CI;
// without a Vulkan device each case says why and checks only what needs no device.
#include <doctest/doctest.h>

#include <unistd.h>

#include <bit>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include <tg/engine/beam.hpp> // white-box: TG_BEAM's variants
#include <tg/fixed.hpp>

#include "child_process.hpp"
#include "devices.hpp"

namespace {

using tg::Tensor;
using tg::TensorOptions;

/// The VULKAN device, or null (with the reason printed) when there is none here.
tg::Rc<tg::VulkanDevice> vulkan() {
  tg_test::test_devices(); // validation on before the device opens
  try {
    return tg::dynamic_pointer_cast<tg::VulkanDevice>(tg::device("VULKAN"));
  } catch (const std::exception& e) {
    MESSAGE("VULKAN is unavailable, skipping: " << e.what());
    return nullptr;
  }
}

std::vector<float> iota(std::int64_t n, float scale = 1.0f) {
  std::vector<float> v(std::size_t(n), 0.0f);
  for (std::int64_t i = 0; i < n; ++i) v[std::size_t(i)] = float(i % 1000) * scale;
  return v;
}

/// Restores what a test changed on the device.
struct CapsGuard {
  tg::Rc<tg::VulkanDevice> dev;
  tg::vulkan::Caps saved;
  explicit CapsGuard(tg::Rc<tg::VulkanDevice> d) : dev(std::move(d)), saved(dev->caps()) {}
  ~CapsGuard() { dev->caps() = saved; }
};
struct EnvGuard {
  std::string name;
  EnvGuard(const char* n, const char* value) : name(n) { setenv(n, value, 1); }
  ~EnvGuard() { unsetenv(name.c_str()); }
};

} // namespace

TEST_CASE(
    "gpu_dispatches: the grid spills past 65,535 work-groups into y, z and further launches") {
  tg::Program p;
  p.local = 256;
  p.items_per_outer = 1;
  // 65,536 * 256 + 1 items: 65,537 groups, one more than x holds
  auto d = tg::gpu_dispatches(p, 65536 * 256 + 1, {65535, 65535, 65535});
  REQUIRE(d.size() == 1);
  CHECK(d[0].groups[0] == 65535);
  CHECK(d[0].groups[1] == 2);
  CHECK(d[0].groups[2] == 1);
  // a tiny grid limit: 1000 groups in grids of at most 7 x 3 x 2 = 42
  auto small = tg::gpu_dispatches(p, 1000 * 256, {7, 3, 2});
  std::int64_t covered = 0;
  for (const auto& x : small) {
    CHECK(x.base == covered * 256);
    CHECK(x.groups[0] <= 7);
    CHECK(x.groups[1] <= 3);
    CHECK(x.groups[2] <= 2);
    covered += x.groups[0] * x.groups[1] * x.groups[2];
  }
  CHECK(covered >= 1000);
  CHECK(covered - 1000 < 42);
  // grouped: one work-group per item
  p.grouped = true;
  auto g = tg::gpu_dispatches(p, 70000, {65535, 65535, 65535});
  REQUIRE(g.size() == 1);
  CHECK(g[0].groups[0] * g[0].groups[1] >= 70000);
  CHECK(tg::gpu_dispatches(p, 0, {65535, 65535, 65535}).empty());
}

TEST_CASE("gpu_program: the outer loop becomes the work item; small outputs with long reductions "
          "share a work-group") {
  Tensor x = tg::rand({4, 4096}, TensorOptions(tg::float32, "CPU"));
  tg::Program p = tg::schedule({x.sum(1)}).lowered.at(0);
  tg::Program g = tg::gpu_program(p);
  CHECK(g.grouped); // 4 items, reductions of 4096
  int specials = 0, reduces = 0, ifs = 0, ranges = 0;
  for (const tg::UOp& u : g.ops) {
    specials += u.kind == tg::UKind::Special;
    reduces += u.kind == tg::UKind::GroupReduce;
    ifs += u.kind == tg::UKind::If;
    ranges += u.kind == tg::UKind::Range && u.src[2] >= 0; // strided by the work-group size
  }
  CHECK(specials == 2); // item and lane
  CHECK(reduces >= 1);
  CHECK(ifs >= 2); // the bounds check and lane 0's store
  CHECK(ranges >= 1);
  tg::Program e = tg::gpu_program(tg::schedule({(x + 1).exp2()}).lowered.at(0));
  CHECK_FALSE(e.grouped);
  CHECK(e.local == 256);
  CHECK(e.per_thread == 1); // 16,384 items: one a thread
  // 2^20 items and more, without reductions: 4 a thread, each group covering 4 x 256 items
  Tensor big = tg::rand({1 << 20}, TensorOptions(tg::float32, "CPU"));
  tg::Program e4 = tg::gpu_program(tg::schedule({big * 2.0f}).lowered.at(0));
  CHECK(e4.per_thread == 4);
  CHECK(tg::gpu_dispatches(e4, 1 << 20, {65535, 65535, 65535}).at(0).groups[0] == 1024);
  CHECK(std::string(tg::render_cuda(e4).view()).find("tg_group() * 1024ll") != std::string::npos);
  CHECK(std::string(tg::render_glsl(e4).view()).find("tg_group()) * 1024L") != std::string::npos);
  CHECK(
      tg::gpu_program(tg::schedule({big.reshape({1024, 1024}).sum(1)}).lowered.at(0)).per_thread ==
      1); // a reduction: one a thread
  std::string glsl(tg::render_glsl(g).view());
  CHECK(glsl.find("#version 450") == 0);
  CHECK(glsl.find("barrier();") != std::string::npos);
  CHECK(glsl.find("shared float tg_lds") != std::string::npos);
  std::string sub(tg::render_glsl(g, true).view()); // a float sum: within subgroups first
  CHECK(sub.find("GL_KHR_shader_subgroup_arithmetic") != std::string::npos);
  CHECK(sub.find("subgroupAdd(") != std::string::npos);
  std::string mx(
      tg::render_glsl(tg::gpu_program(tg::schedule({x.max(1)}).lowered.at(0)), true).view());
  CHECK(mx.find("subgroupMax") == std::string::npos); // float max propagates NaN: the tree
  // the C dialect never sees these ops: the CPU path is unchanged
  CHECK(std::string(tg::render_c(p).view()).find("barrier") == std::string::npos);
}

TEST_CASE("GLSL asks for the extensions its dtypes need") {
  auto src = [](tg::DType t) {
    Tensor x = tg::ones({8}, TensorOptions(t, "CPU"));
    return std::string(
        tg::finish_kernel(tg::schedule({x + x}).lowered.at(0), tg::Target::glsl()).source.view());
  };
  std::string f32 = src(tg::float32), f64 = src(tg::float64), i8 = src(tg::int8),
              h = src(tg::float16), b = src(tg::bool_);
  CHECK(f32.find("int64 : require") != std::string::npos); // index arithmetic
  CHECK(f32.find("8bit_storage") == std::string::npos);
  CHECK(f32.find("double") == std::string::npos);
  CHECK(f64.find("double") != std::string::npos);
  CHECK(i8.find("GL_EXT_shader_8bit_storage") != std::string::npos);
  CHECK(i8.find("GL_EXT_shader_explicit_arithmetic_types_int8") != std::string::npos);
  CHECK(h.find("GL_EXT_shader_16bit_storage") != std::string::npos);
  // float16 stored as bits, written by decompose's integer ops: no conversion function
  CHECK(h.find("uint16_t d[]") != std::string::npos);
  CHECK(h.find("tg_f2h") == std::string::npos);
  CHECK(b.find("uint8_t d[]") != std::string::npos); // bool is a byte
}

TEST_CASE("VULKAN: the device, its description and the devices() list") {
  bool listed = false;
  for (const tg::DeviceInfo& d : tg::devices())
    if (d.name == "VULKAN") {
      listed = true;
      if (!d.available) CHECK(!d.reason.empty());
    }
  CHECK(listed);
  auto dev = vulkan();
  if (!dev) return;
  MESSAGE("VULKAN: " << dev->description());
  CHECK(dev->name() == "VULKAN");
  CHECK(tg::device("vulkan:0") == tg::device("VULKAN"));
  CHECK_THROWS_AS(tg::device("VULKAN:" + std::to_string(tg::vulkan::device_count())),
                  tg::device_error);
}

TEST_CASE("VULKAN on lavapipe: a launch past llvmpipe's 65,535 loop iterations is refused") {
  auto dev = vulkan();
  if (!dev) return;
  if (dev->description().find("llvmpipe") == std::string::npos) {
    MESSAGE("VULKAN is not lavapipe (" << dev->description() << "), skipping");
    return;
  }
  // one work-group of 256 threads reducing a prime number of elements past 2^24: 65,536
  // iterations each. Reductions are cut in two on GPUs (detail::gpu_reduce_split), but not a max
  // that records its gradient.
  const std::int64_t n = 16777259;
  Tensor ones = tg::ones({n}, TensorOptions(tg::float32, "VULKAN"));
  try {
    float wrong = ones.detach().requires_grad_().max().item<float>();
    FAIL("a max of 16,777,259 ones ran on lavapipe in one work-group and gave " << wrong);
  } catch (const tg::device_error& e) {
    CHECK(std::string(e.what()).find("65535") != std::string::npos);
  }
  // the sum: padded with zeros to 4,096 x 4,097 and cut in two, so it runs
  CHECK(ones.sum().item<float>() == doctest::Approx(double(n)).epsilon(1e-7));
  // 2^24 is cut into two reductions (detail::gpu_reduce_split), so it runs, and is right
  const std::int64_t n24 = std::int64_t(1) << 24;
  CHECK(tg::ones({n24}, TensorOptions(tg::float32, "VULKAN")).sum().item<float>() == float(n24));
  // and by hand, in two steps
  CHECK(ones.slice(0, 0, n24).reshape({256, -1}).sum(1).sum().item<float>() == float(n24));
  // just under the limit: 256 x 65,000 elements
  CHECK(tg::ones({256 * 65000}, TensorOptions(tg::float32, "VULKAN")).sum().item<float>() ==
        256.0f * 65000.0f);
}

TEST_CASE("VULKAN: launches past 65,535 work-groups per dimension") {
  auto dev = vulkan();
  if (!dev) return;
  // 16.8M floats (64 MiB: under lavapipe's 128 MiB buffer range), 8 a thread (Program::per_thread):
  // 8,193 groups of 256 threads
  const std::int64_t n = 65536 * 256 + 1;
  std::vector<float> host = iota(n);
  Tensor x = Tensor::from_data(host, {n}, TensorOptions(tg::float32, "VULKAN"));
  std::vector<float> y = (x * 2.0f + 1.0f).to_vector<float>();
  REQUIRE(y.size() == host.size());
  int bad = 0;
  for (std::size_t i = 0; i < y.size(); ++i) bad += y[i] != host[i] * 2.0f + 1.0f;
  CHECK(bad == 0);
  CHECK(y.back() == host.back() * 2.0f + 1.0f);
  // a tiny grid limit: elementwise and grouped reductions spill into y, z and several launches
  CapsGuard guard(dev);
  dev->caps().max_groups = {5, 3, 2};
  Tensor a = Tensor::from_data(iota(5000, 0.01f), {50, 100}, TensorOptions(tg::float32, "VULKAN"));
  std::vector<float> cpu = a.to("CPU").exp2().sum(1).to_vector<float>();
  std::vector<float> e = (a.exp2() * 1.0f).to_vector<float>(),
                     ecpu = a.to("CPU").exp2().to_vector<float>();
  REQUIRE(e.size() == ecpu.size());
  for (std::size_t i = 0; i < e.size(); ++i)
    CHECK(e[i] == ecpu[i]); // exp2: the same polynomial, fma exact on lavapipe too
  {
    EnvGuard grouped("TG_GPU_GROUP_REDUCE", "1");
    std::vector<float> s = a.exp2().sum(1).to_vector<float>();
    REQUIRE(s.size() == cpu.size());
    for (std::size_t i = 0; i < s.size(); ++i) CHECK(s[i] == doctest::Approx(cpu[i]).epsilon(1e-5));
  }
  {
    EnvGuard one("TG_GPU_LOCAL", "1"); // one thread per work-group: 5000 groups
    CHECK(a.neg().to_vector<float>() == a.to("CPU").neg().to_vector<float>());
  }
  // 8 items a thread (2^20 and more), over 18 launches: every item once, the last ones too
  const std::int64_t m = (1 << 20) + 3;
  std::vector<float> big = iota(m);
  Tensor b = Tensor::from_data(big, {m}, TensorOptions(tg::float32, "VULKAN"));
  std::vector<float> bv = (b * 2.0f + 1.0f).to_vector<float>();
  REQUIRE(bv.size() == big.size());
  int wrong = 0;
  for (std::size_t i = 0; i < bv.size(); ++i) wrong += bv[i] != big[i] * 2.0f + 1.0f;
  CHECK(wrong == 0);
}

TEST_CASE("VULKAN: a dtype the device lacks is refused before compiling, naming the feature") {
  auto dev = vulkan();
  if (!dev) return;
  CapsGuard guard(dev);
  Tensor d =
      Tensor::from_data(std::vector<double>{1, 2, 3}, {3}, TensorOptions(tg::float64, "VULKAN"));
  Tensor b =
      Tensor::from_data(std::vector<std::int8_t>{1, 2, 3}, {3}, TensorOptions(tg::int8, "VULKAN"));
  Tensor h =
      Tensor::from_data(std::vector<float>{1, 2, 3}, {3}, TensorOptions(tg::float16, "VULKAN"));
  dev->caps().float64 = false;
  dev->caps().int8 = false;
  dev->caps().int16 = false;
  std::int64_t compiled = tg::stats().kernels_compiled;
  auto message = [](Tensor t) {
    try {
      t.realize();
    } catch (const tg::dtype_error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  std::string m64 = message(d * 3.0), m8 = message(b * std::int8_t(3)), m16 = message(h * 3.0f);
  CHECK(m64.find("float64") != std::string::npos);
  CHECK(m64.find("shaderFloat64") != std::string::npos);
  CHECK(m8.find("int8") != std::string::npos);
  CHECK(m8.find("storageBuffer8BitAccess") != std::string::npos);
  CHECK(m16.find("float16") != std::string::npos);
  CHECK(m16.find("storageBuffer16BitAccess") != std::string::npos);
  CHECK(tg::stats().kernels_compiled == compiled); // refused before any compiler ran
  MESSAGE(m64);
  dev->caps() = guard.saved;
  CHECK((d * 3.0).to_vector<double>() == std::vector<double>{3, 6, 9});
}

TEST_CASE("VULKAN: a tensor larger than the device's storage-buffer range is refused clearly") {
  auto dev = vulkan();
  if (!dev) return;
  std::int64_t range = dev->caps().max_storage_range;
  if (range >= (std::int64_t(1) << 31)) {
    MESSAGE("maxStorageBufferRange is " << range << " bytes; not allocating more than that here");
    return;
  }
  Tensor big = tg::zeros({range / 4 + 1}, TensorOptions(tg::float32, "VULKAN"));
  try {
    big.realize();
    FAIL("a tensor past maxStorageBufferRange was accepted");
  } catch (const tg::device_error& e) {
    std::string m = e.what();
    CHECK(m.find("maxStorageBufferRange") != std::string::npos);
    CHECK(m.find(std::to_string(range)) != std::string::npos);
  }
}

/// The name of kernel k of `t`'s schedule lowered as for a GPU (LowerOptions::for_gpu).
std::string gpu_kernel_name(const Tensor& t, std::size_t k = 0) {
  tg::ScheduleInfo info = tg::schedule({t});
  return std::string(
      tg::lower(info.graph, info.schedule, k, tg::LowerOptions{}.for_gpu()).name.view());
}

TEST_CASE("GPU register tiles: products compute strided tiles a thread, with the CPU's values") {
  TensorOptions cpu(tg::float32, "CPU");
  // which kernels tile (names: u<rows>x<columns>g), whatever the device
  Tensor a = tg::randn({1024, 8}, cpu), b = tg::randn({8, 1024}, cpu);
  CHECK(gpu_kernel_name(a.matmul(b)) == "ru2x2g_512_512"); // 2^18 threads
  CHECK(gpu_kernel_name(tg::randn({4, 512, 8}, cpu).matmul(tg::randn({4, 8, 512}, cpu))) ==
        "ru2x2g_4_256_256");
  // sizes that 8 does not divide: 2 does (1026 x 1022), or nothing does (rows of 1023)
  CHECK(gpu_kernel_name(tg::randn({1026, 5}, cpu).matmul(tg::randn({5, 1022}, cpu))) ==
        "ru2x1g_513_1022");
  CHECK(gpu_kernel_name(tg::randn({1023, 5}, cpu).matmul(tg::randn({5, 1024}, cpu))) ==
        "ru1x2g_1023_512");
  // 8 x 8 where 2^18 threads are left (4096 x 4096), or where fewer may be
  Tensor big = tg::randn({2048, 4}, cpu).matmul(tg::randn({4, 2048}, cpu));
  CHECK(gpu_kernel_name(big) == "ru4x4g_512_512");
  tg::ScheduleInfo info = tg::schedule({big});
  tg::LowerOptions fewer = tg::LowerOptions{}.for_gpu();
  fewer.gpu_tile_threads = 1 << 16;
  CHECK(std::string(tg::lower(info.graph, info.schedule, 0, fewer).name.view()) ==
        "ru8x8g_256_256");
  // no tile: a small product, a sum, every choice off
  CHECK(gpu_kernel_name(tg::randn({64, 64}, cpu).matmul(tg::randn({64, 64}, cpu))) == "r_64_64");
  CHECK(gpu_kernel_name(tg::randn({1024, 1024}, cpu).sum(0)) == "r_1024");
  CHECK(std::string(tg::lower(info.graph, info.schedule, 0, tg::LowerOptions::off().for_gpu())
                        .name.view()) == "r_2048_2048");

  auto v = vulkan();
  if (!v) return;
  // each product on VULKAN against the CPU device
  auto same = [](const char* what, const Tensor& on_vulkan, const Tensor& on_cpu, double tol) {
    INFO(what);
    REQUIRE(on_vulkan.device() == "VULKAN");
    std::vector<float> x = on_vulkan.cast(tg::float32).to_vector<float>(),
                       y = on_cpu.cast(tg::float32).to_vector<float>();
    REQUIRE(x.size() == y.size());
    double worst = 0;
    for (std::size_t i = 0; i < x.size(); ++i)
      worst = std::max(worst, double(std::abs(x[i] - y[i])) / (1 + std::abs(y[i])));
    CHECK(worst <= tol);
  };
  auto V = [](const Tensor& t) { return t.to("VULKAN"); };
  same("matmul", V(a).matmul(V(b)), a.matmul(b), 1e-5);
  Tensor w = tg::randn({1024, 8}, cpu), bias = tg::randn({1024}, cpu);
  same("relu(x @ w.T + b)", (V(a).matmul(V(w).T()) + V(bias)).relu(),
       (a.matmul(w.T()) + bias).relu(), 1e-5);
  Tensor p = tg::randn({1026, 5}, cpu), q = tg::randn({5, 1022}, cpu);
  same("1026 x 1022", V(p).matmul(V(q)), p.matmul(q), 1e-5);
  Tensor x3 = tg::randn({4, 512, 8}, cpu), y3 = tg::randn({4, 8, 512}, cpu);
  same("bmm", V(x3).matmul(V(y3)), x3.matmul(y3), 1e-5);
  same("float16", V(a).cast(tg::float16).matmul(V(b).cast(tg::float16)),
       a.cast(tg::float16).matmul(b.cast(tg::float16)), 2e-3);
  Tensor img = tg::randn({4, 8, 64, 64}, cpu), k = tg::randn({16, 8, 3, 3}, cpu);
  same("conv2d", tg::nn::F::conv2d(V(img), V(k), Tensor(), 1, 1),
       tg::nn::F::conv2d(img, k, Tensor(), 1, 1), 1e-4);
}

TEST_CASE("GPU shared-memory tiles: which products take them, and their values on VULKAN") {
  TensorOptions cpu(tg::float32, "CPU");
  auto names = [](const Tensor& t, tg::GpuOptions o = {}) {
    std::string r;
    for (const tg::Program& p : tg::schedule({t}, tg::Target::glsl(o)).programs)
      r += std::string(r.empty() ? "" : " ") + std::string(p.name.view());
    return r;
  };
  // block tiles of 16 x 16 threads: 8 x 8 outputs a thread while 256 work-groups are left
  Tensor a = tg::randn({1000, 300}, cpu), b = tg::randn({300, 1000}, cpu);
  CHECK(names(a.matmul(b)) == "rt64x64k16_1000_1000");
  CHECK(names(tg::randn({4096, 8}, cpu).matmul(tg::randn({8, 4096}, cpu))) ==
        "rt128x128k8_4096_4096");
  CHECK(names(tg::randn({64, 784}, cpu).matmul(tg::randn({784, 256}, cpu))) == "rt16x16k32_64_256");
  // float64: blocks within 16 KiB of shared memory (half the step)
  CHECK(names(a.cast(tg::float64).matmul(b.cast(tg::float64))) == "rt64x64k8_1000_1000");
  // not a product with both sides, too small, or off: as before
  CHECK(names(tg::randn({1000, 300}, cpu).matmul(tg::randn({300, 1}, cpu))) == "r_1000");
  CHECK(names(tg::randn({50, 30}, cpu).matmul(tg::randn({30, 50}, cpu))) == "r_50_50");
  CHECK(names(tg::randn({1000, 1000}, cpu).sum(0)).find("rt") == std::string::npos);
  tg::GpuOptions off;
  off.shared_tiles = false;
  CHECK(names(a.matmul(b), off) == "ru2x1g_500_1000"); // the register tiles of LowerOptions
  tg::GpuOptions every;
  every.tile_min_outputs = every.tile_blocks = 1;
  CHECK(names(tg::randn({50, 30}, cpu).matmul(tg::randn({30, 50}, cpu)), every) ==
        "rt128x128k8_50_50");

  auto v = vulkan();
  if (!v) return;
  auto same = [](const std::string& what, const Tensor& on_vulkan, const Tensor& on_cpu,
                 double tol) {
    INFO(what);
    REQUIRE(on_vulkan.device() == "VULKAN");
    std::vector<double> x = on_vulkan.to_vector<double>(), y = on_cpu.to_vector<double>();
    REQUIRE(x.size() == y.size());
    double worst = 0;
    for (std::size_t i = 0; i < x.size(); ++i)
      worst = std::max(worst, std::abs(x[i] - y[i]) / (1 + std::abs(y[i])));
    CHECK(worst <= tol);
  };
  auto V = [](const Tensor& t) { return t.to("VULKAN"); };
  auto tiled = [](const Tensor& t) {
    for (const tg::Program& p : tg::schedule({t}).programs)
      if (p.name.view().substr(0, 2) == "rt") return true;
    return false;
  };
  // sizes the tiles do not divide: primes, 17, 1000 (and 1, where no tile applies)
  for (std::int64_t m : {1, 17, 67, 1000})
    for (auto [k, n] : {std::pair<std::int64_t, std::int64_t>{59, 71}, {300, 1000}, {9, 263}}) {
      Tensor x = tg::randn({m, k}, cpu), y = tg::randn({k, n}, cpu);
      const std::string what =
          std::to_string(m) + "x" + std::to_string(k) + "x" + std::to_string(n);
      Tensor r = V(x).matmul(V(y));
      CHECK(tiled(r) == (m * n >= 4096));
      same(what, r, x.matmul(y), std::max(1e-5, 1e-7 * double(k))); // (k roundings, any order)
    }
  Tensor x = tg::randn({67, 59}, cpu), w = tg::randn({71, 59}, cpu), bias = tg::randn({71}, cpu);
  Tensor wt = tg::randn({59, 71}, cpu);             // (a small transposed operand is copied first)
  Tensor r = (V(x).matmul(V(wt)) + V(bias)).relu(); // the epilogue in the product's kernel
  CHECK(tiled(r));
  CHECK(tg::schedule({r}).kernels() == 1);
  same("relu(x @ w + b)", r, (x.matmul(wt) + bias).relu(), 1e-5);
  same("gelu(x @ w.T + b)", (V(x).matmul(V(w).T()) + V(bias)).gelu(),
       (x.matmul(w.T()) + bias).gelu(), 1e-5);
  Tensor p = tg::randn({67, 80}, cpu);
  same("x.T @ y", V(x).T().matmul(V(p)), x.T().matmul(p), 1e-5);
  Tensor x3 = tg::randn({3, 67, 20}, cpu), y3 = tg::randn({3, 20, 45}, cpu);
  same("bmm", V(x3).matmul(V(y3)), x3.matmul(y3), 1e-5);
  same("bmm, y shared by the batch", V(x3).matmul(V(y3[0])), x3.matmul(y3[0]), 1e-5);
  for (tg::DType t : {tg::float16, tg::bfloat16, tg::float64}) {
    Tensor c = V(x).cast(t).matmul(V(w).cast(t).T());
    CHECK(tiled(c));
    same(std::string("x @ w.T in ") + tg::dtype_name(t), c, x.cast(t).matmul(w.cast(t).T()),
         t == tg::float64 ? 1e-12 : 2e-2);
  }
  Tensor img = tg::randn({4, 8, 33, 31}, cpu), k = tg::randn({16, 8, 3, 3}, cpu),
         kb = tg::randn({16}, cpu);
  Tensor conv = tg::nn::F::conv2d(V(img), V(k), V(kb), 2, 1);
  CHECK(tiled(conv));
  same("conv2d", conv, tg::nn::F::conv2d(img, k, kb, 2, 1), 1e-4);
}

TEST_CASE("VULKAN: float exp and pow as INTERP's where fma, exp2 and log2 round differently "
          "(lavapipe)") {
  // lavapipe computes GLSL's fma() as a multiply and an add: the exp2 polynomial was 1 ulp from
  // INTERP's on 11,846 of the 200,006 inputs below; its exp2 and log2 made pow differ on 78,758 of
  // the 90,000 below. Such a device gets an exact fma and pow's general case in float64.
  TensorOptions cpu(tg::float32, "CPU");
  tg::Program p =
      tg::schedule({tg::rand({8}, cpu).exp() + tg::rand({8}, cpu).pow(tg::rand({8}, cpu))})
          .lowered.at(0);
  auto glsl = [&](bool subgroups, bool exact) { // through the pass list (decompose: the polynomial)
    return std::string(tg::finish_kernel(p, tg::Target::glsl({}, subgroups, exact)).source.view());
  };
  std::string exact = glsl(false, true), plain = glsl(false, false);
  CHECK(exact.find("float tg_fma(") < exact.find("= tg_fma(v"));
  CHECK(exact.find(" fma(") == std::string::npos);
  CHECK(exact.find("double tg_log2d(") < exact.find("= tg_log2d(v")); // pow's general case
  CHECK(plain.find("tg_fma") == std::string::npos);
  CHECK(plain.find("tg_log2d") == std::string::npos);
  CHECK(plain.find("= fma(v") != std::string::npos);
  CHECK(glsl(true, true).find("= tg_fma(v") != std::string::npos);

  auto v = vulkan();
  if (!v) return;
  MESSAGE("VULKAN: " << v->description() << "; exact float: " << v->caps().exact_float);
  auto bits = [](float f) { return std::bit_cast<std::int32_t>(f); };
  std::vector<float> x;
  for (int i = 0; i <= 200005; ++i) x.push_back(-160.0f + float(i) * (290.0f / 200005.0f));
  Tensor t = Tensor::from_data(x, {std::int64_t(x.size())});
  std::vector<float> got = t.to("VULKAN").exp().to_vector<float>(),
                     want = t.to("INTERP").exp().to_vector<float>();
  REQUIRE(got.size() == want.size());
  int differ = 0;
  for (std::size_t i = 0; i < got.size(); ++i) differ += bits(got[i]) != bits(want[i]);
  CHECK(differ == 0);
  // pow over a grid: where it differs from INTERP's (glibc's powf), by 1 ulp, VULKAN's is the
  // one closer to the exact power (62 of 90,000 on lavapipe)
  std::vector<float> a, b;
  for (int i = 0; i < 300; ++i) a.push_back(0.013f + float(i) * 0.0731f);
  for (int j = 0; j < 300; ++j) b.push_back(-9.93f + float(j) * 0.0667f);
  Tensor A = Tensor::from_data(a, {300, 1}), B = Tensor::from_data(b, {1, 300});
  std::vector<float> pv = A.to("VULKAN").pow(B.to("VULKAN")).to_vector<float>(),
                     pi = A.to("INTERP").pow(B.to("INTERP")).to_vector<float>();
  REQUIRE(pv.size() == pi.size());
  int pdiffer = 0, worse = 0;
  for (std::size_t i = 0; i < pv.size(); ++i) {
    const int d = std::abs(bits(pv[i]) - bits(pi[i]));
    if (d == 0) continue;
    ++pdiffer;
    const long double e = std::pow((long double)a[i / 300], (long double)b[i % 300]);
    worse += d > 1 || std::fabs((long double)pv[i] - e) > std::fabs((long double)pi[i] - e);
  }
  MESSAGE("pow: " << pdiffer << " of " << pv.size() << " differ from INTERP's");
  CHECK(pdiffer < 200);
  CHECK(worse == 0);
}

TEST_CASE("VULKAN: transfers between devices, all dtypes") {
  auto dev = vulkan();
  if (!dev) return;
  for (tg::DType t : {tg::bool_, tg::int8, tg::uint8, tg::int16, tg::uint16, tg::int32, tg::uint32,
                      tg::int64, tg::uint64, tg::float16, tg::bfloat16, tg::float32, tg::float64}) {
    INFO(std::string(tg::dtype_name(t)));
    std::vector<double> v{0, 1, 2, 3, 1, 0, 5, 7};
    Tensor c = Tensor::from_data(v, {2, 4}, TensorOptions(t, "CPU"));
    Tensor g = c.to("VULKAN");
    CHECK(g.device() == "VULKAN");
    CHECK(g.to_vector<double>() == c.to_vector<double>());
    CHECK(g.T().to("INTERP").to_vector<double>() == c.T().to_vector<double>());
    CHECK((g + g).to("CPU").to_vector<double>() == (c + c).to_vector<double>());
  }
}

TEST_CASE("VULKAN: tg::to_tensor(expr) runs the static expression's compile-time plan") {
  auto dev = vulkan();
  if (!dev) return;
  tg::fixed<float, 8, 16> x;
  tg::fixed<float, 16, 4> w;
  tg::fixed<float, 4> b{0.5f, -0.25f, 0.0f, 1.0f};
  for (std::size_t i = 0; i < x.size; ++i) x[i] = float(int(i * 7 % 13) - 6) * 0.125f;
  for (std::size_t i = 0; i < w.size; ++i) w[i] = float(int(i * 5 % 11) - 5) * 0.0625f;
  auto e = (x.matmul(w) + b).relu().softmax<1>();
  static_assert(tg::fx::plannable<decltype(e)>);
  tg::reset_stats();
  Tensor y = tg::to_tensor(e, "VULKAN");
  CHECK(tg::stats().realizes == 0); // the CPU-portable programs of the plan, run as GLSL
  CHECK(tg::stats().kernels_launched == std::int64_t(tg::kernel_count(e)));
  CHECK(y.device() == "VULKAN");
  auto got = y.to_vector<float>();
  auto want = e.eval();
  for (std::size_t i = 0; i < want.size; ++i)
    CHECK(got[i] == doctest::Approx(want[i]).epsilon(1e-6));
}

TEST_CASE("child: TG_DEVICE=VULKAN") {
  if (!std::getenv("TG_TEST_CHILD")) return;
  Tensor x = Tensor::from_data(std::vector<float>{1, 2, 3}, {3});
  std::printf("device=%s sum=%.1f\n", x.device().c_str(), (x * 2.0f).sum().item<float>());
}

TEST_CASE("VULKAN: TG_DEVICE=VULKAN makes it the default device") {
  if (!vulkan()) return;
  std::string cmd = "env TG_TEST_CHILD=1 TG_DEVICE=VULKAN /proc/" + std::to_string(getpid()) +
                    "/exe --no-version -tc=\"child: TG_DEVICE=VULKAN\" 2>&1";
  std::string out;
  FILE* p = popen(cmd.c_str(), "r");
  REQUIRE(p != nullptr);
  char buf[4096];
  while (std::size_t k = std::fread(buf, 1, sizeof buf, p)) out.append(buf, k);
  CHECK(pclose(p) == 0);
  INFO(out);
  CHECK(out.find("device=VULKAN sum=12.0") != std::string::npos);
}

TEST_CASE("VULKAN: the SPIR-V disk cache and every GLSL compiler") {
  auto dev = vulkan();
  if (!dev) return;
  Tensor x = tg::rand({37}, TensorOptions(tg::float32, "CPU"));
  tg::KernelCode p = tg::finish_kernel(
      tg::schedule({(x * 3.25f).sqrt()}, dev->target()).lowered.at(0), dev->target());
  // a second device object on the same GPU: empty pipeline map, so the SPIR-V comes from disk
  dev->prepare({&p});
  tg::VulkanDevice fresh(0);
  REQUIRE(fresh.unavailable_reason().empty());
  tg::Stats s0 = tg::stats();
  fresh.prepare({&p});
  tg::Stats s1 = tg::stats();
  if (tg::detail::disk_cache_enabled()) {
    CHECK(s1.kernels_compiled == s0.kernels_compiled);
    CHECK(s1.cache_hits > s0.cache_hits);
  }
  // each compiler that is installed turns the same shader into SPIR-V
  std::string glsl(p.source.view());
  int compilers = 0;
  for (const char* which : {"shaderc", "glslc", "glslangValidator"}) {
    EnvGuard pick("TG_GLSL_COMPILER", which);
    tg::vulkan::detail::GlslCompiler c;
    if (!c.error.empty() || c.kind != which) {
      MESSAGE("GLSL compiler " << std::string(which) << " not usable here: "
                               << (c.shaderc_error.empty()
                                       ? (c.error.empty() ? "fell back to " + c.kind : c.error)
                                       : c.shaderc_error));
      continue;
    }
    EnvGuard nocache("TG_CACHE", "0");
    // two shaders (glslc compiles them in one run), then a batch with a broken one: the error
    // names the shader at fault
    std::vector<std::string> spvs =
        c.compile({glsl, glsl + "// a second shader\n"}, {"cache_check", "cache_check2"});
    REQUIRE(spvs.size() == 2);
    for (const std::string& spv : spvs) {
      REQUIRE(spv.size() >= 20);
      CHECK(spv.size() % 4 == 0);
      std::uint32_t magic = 0;
      std::memcpy(&magic, spv.data(), 4);
      CHECK(magic == 0x07230203u);
    }
    std::string bad = "#version 450\nlayout(local_size_x = 1) in;\nvoid main() { nope(); }\n";
    try {
      c.compile({glsl, bad}, {"good_shader", "broken_shader"});
      FAIL("a broken shader compiled with " << which);
    } catch (const tg::compile_error& e) {
      CHECK(std::string(e.what()).find("broken_shader") != std::string::npos);
      CHECK(std::string(e.what()).find("good_shader") == std::string::npos);
      CHECK(e.source == bad);
    }
    ++compilers;
  }
  CHECK(compilers >= 1);
}

TEST_CASE("GPU shared-memory tiles in two stages where both buffers fit the device's shared "
          "memory") {
  TensorOptions cpu(tg::float32, "CPU");
  Tensor a = tg::rand({300, 200}, cpu), b = tg::rand({200, 500}, cpu);
  a.realize();
  b.realize();
  auto name = [&](const Tensor& r, std::int64_t block, std::int64_t shared) {
    tg::GpuOptions o;
    o.stages = 2;
    o.tile_block = block;
    o.shared_bytes = shared;
    return std::string(tg::schedule({r}, tg::Target::glsl(o)).programs.back().name.view());
  };
  // two buffers of a 16 x 16 block's slices (10 KiB) fit Vulkan's guaranteed 16 KiB, a 128 x 128
  // block's (17 KiB) only a larger memory
  CHECK(name(a.matmul(b), 16, 16384) == "rt16x16k32s2_300_500");
  CHECK(name(a.matmul(b), 128, 16384) == "rt128x128k8_300_500");
  CHECK(name(a.matmul(b), 128, 49152) == "rt128x128k8s2_300_500");
  // a reduction of one step has nothing to overlap
  Tensor short_a = tg::rand({300, 16}, cpu), short_b = tg::rand({16, 500}, cpu);
  CHECK(name(short_a.matmul(short_b), 16, 16384) == "rt16x16k32_300_500");
}

TEST_CASE("TG_BEAM's variants on a GPU: each block size, tensor cores off, the other layout, "
          "register tiles") {
  TensorOptions cpu(tg::float32, "CPU");
  Tensor a = tg::rand({300, 200}, cpu), b = tg::rand({200, 500}, cpu);
  a.realize();
  b.realize();
  auto kernels = [&](const tg::Target& base, const Tensor& r) {
    std::vector<std::string> names;
    for (const tg::Target& t : tg::detail::beam_targets(base)) {
      tg::ScheduleInfo info = tg::schedule({r}, t);
      names.push_back(std::string(info.programs.back().name.view()));
      names.back() +=
          std::string(info.sources.back()).find("tg_mma_tile") != std::string::npos ? " mma" : "";
    }
    return names;
  };
  auto has = [](const std::vector<std::string>& names, const std::string& prefix) {
    for (const std::string& n : names)
      if (n.rfind(prefix, 0) == 0) return true;
    return false;
  };
  // 300 x 500 outputs: 16 x 16 blocks by default (256 work-groups or more), the rest as variants
  const std::vector<std::string> glsl = kernels(tg::Target::glsl(), a.matmul(b));
  CHECK(glsl.front().rfind("rt16x16k32_", 0) == 0);
  for (const char* block : {"rt128x128k8_", "rt64x64k16_", "rt32x32k32_"}) CHECK(has(glsl, block));
  CHECK(has(glsl, "ru")); // register tiles without shared memory
  // float16 on tensor cores: the variants without them
  tg::GpuOptions tc;
  tc.tensor_cores = true;
  const std::vector<std::string> cuda =
      kernels(tg::Target::cuda(tc), a.cast(tg::float16).matmul(b.cast(tg::float16)));
  CHECK(cuda.front().find(" mma") != std::string::npos);
  bool plain = false;
  for (const std::string& n : cuda)
    plain = plain || (n.rfind("rt", 0) == 0 && n.find(" mma") == n.npos);
  CHECK(plain);
}

TEST_CASE("child: beam on VULKAN") {
  if (!tg_test::child()) return;
  tg::manual_seed(5);
  TensorOptions cpu(tg::float32, "CPU");
  Tensor a = tg::rand({300, 200}, cpu), b = tg::rand({200, 500}, cpu), bias = tg::rand({500}, cpu);
  // a plain loop (the CPU device would run a search of its own)
  const std::vector<float> x = a.to_vector<float>(), y = b.to_vector<float>(),
                           c = bias.to_vector<float>();
  std::vector<float> want(300 * 500);
  for (std::size_t i = 0; i < 300; ++i)
    for (std::size_t j = 0; j < 500; ++j) {
      float s = 0;
      for (std::size_t k = 0; k < 200; ++k) s += x[i * 200 + k] * y[k * 500 + j];
      want[i * 500 + j] = std::max(s + c[j], 0.0f);
    }
  std::vector<float> got =
      (a.to("VULKAN").matmul(b.to("VULKAN")) + bias.to("VULKAN")).relu().to_vector<float>();
  double worst = 0;
  for (std::size_t i = 0; i < want.size(); ++i)
    worst = std::max(worst, double(std::abs(got[i] - want[i])));
  std::printf("worst=%g searched=%lld cached=%lld\n", worst,
              static_cast<long long>(tg::stats().beam_searches),
              static_cast<long long>(tg::stats().beam_cached));
}

TEST_CASE("TG_BEAM on VULKAN times the GPU variants of a product and caches the choice") {
  if (!vulkan()) return;
  const std::string dir = tg_test::fresh_dir();
  for (const char* run : {"first", "second"}) {
    CAPTURE(run);
    std::string out = tg_test::run_child("child: beam on VULKAN", "TG_BEAM=8 TG_CACHE_DIR=" + dir);
    REQUIRE(tg_test::contains(out, "worst="));
    double worst = 1;
    long long searched = -1, cached = -1;
    std::sscanf(out.c_str() + out.find("worst="), "worst=%lf searched=%lld cached=%lld", &worst,
                &searched, &cached);
    CHECK(worst < 1e-3); // whichever variant won computes the same product
    CHECK(searched == (std::string(run) == "first" ? 1 : 0));
    CHECK(cached == (std::string(run) == "first" ? 0 : 1));
  }
  std::filesystem::remove_all(dir);
}

TEST_CASE("VULKAN: validation layer reported nothing") {
  auto dev = vulkan();
  if (!dev) return;
  dev->flush();
  std::vector<std::string> m = tg::vulkan::validation_messages();
  CHECK_MESSAGE(m.empty(), m.size()
                               << " validation message(s), the first: " << (m.empty() ? "" : m[0]));
  if (std::getenv("TG_VULKAN_VALIDATION") &&
      std::string(std::getenv("TG_VULKAN_VALIDATION")) != "0")
    CHECK(dev->description().find("validation on") != std::string::npos);
}
