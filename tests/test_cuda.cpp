// The CUDA backend's own checks. Without a GPU (CI): a clear reason why CUDA is unavailable (and
// the toolkit's stub libcuda.so recognised as one), and the kernels of a broad list of ops, in
// every dtype and both launch shapes, compiled by NVRTC to PTX and to a CUBIN for sm_90 with the
// PTX checked by ptxas -arch=sm_90. (The whole op suite's kernels go through the same checks on
// the NVRTC stand-in device of tests/devices.hpp.) With a GPU: the same ops run on CUDA and are
// compared with the CPU; the op suite and the fuzz test run on CUDA as well.
#include <doctest/doctest.h>

#include <functional>
#include <string>
#include <vector>

#include "devices.hpp"

namespace {

using tg::Tensor;
using tg::TensorOptions;

bool cuda_available(std::string* why = nullptr) {
  try {
    tg::device("CUDA");
    return true;
  } catch (const std::exception& e) {
    if (why) *why = e.what();
    return false;
  }
}

/// Runs ptxas on PTX; "" when it accepts it, else its log.
std::string ptxas(const std::string& ptx, const std::string& arch, const std::string& name) {
  std::string tool = tg::cuda::find_tool("ptxas");
  if (tool.empty()) return "ptxas not found";
  std::string tmp = tg::detail::temp_path(name);
  {
    std::ofstream f(tmp + ".ptx", std::ios::binary);
    f << ptx;
  }
  int rc = tg::detail::run_process({tool, "-arch=" + arch, "-o", tmp + ".cubin", tmp + ".ptx"},
                                   tmp + ".log");
  std::string log = tg::detail::read_file(tmp + ".log");
  std::error_code ec;
  for (const char* ext : {".ptx", ".cubin", ".log"}) std::filesystem::remove(tmp + ext, ec);
  return rc == 0 ? "" : "exit " + std::to_string(rc) + ": " + log;
}

/// Kernel k of r's schedule for `o`, compiled by NVRTC to PTX for compute_80: its name starts
/// with `prefix`, the PTX has `instruction`, and ptxas (where it is here) accepts it for sm_80 and
/// sm_90. Returns the kernel's source and its PTX.
std::pair<std::string, std::string> check_product(const Tensor& r, const tg::GpuOptions& o,
                                                  std::size_t k, const std::string& prefix,
                                                  const std::string& instruction) {
  tg::ScheduleInfo info = tg::schedule({r}, tg::Target::cuda(o));
  REQUIRE(k < info.programs.size());
  const std::string name(info.programs[k].name.view());
  CHECK(name.rfind(prefix, 0) == 0);
  std::string ptx = tg::cuda::nvrtc_compile(info.sources[k], name, "compute_80").binary;
  CHECK(ptx.find(instruction) != std::string::npos);
  if (!tg::cuda::find_tool("ptxas").empty())
    for (const char* arch : {"sm_80", "sm_90"}) CHECK(ptxas(ptx, arch, name) == "");
  return {std::string(info.sources[k]), ptx};
}

/// A broad set of ops over one input of dtype t (each result is scheduled on its own).
std::vector<std::pair<std::string, Tensor>> op_list(tg::DType t, const std::string& dev = "CPU") {
  TensorOptions o(t, dev);
  Tensor a = tg::ones({6, 40}, o), b = tg::ones({40}, o), c = tg::ones({6, 1}, o);
  std::vector<std::pair<std::string, Tensor>> r;
  auto add = [&](std::string n, const std::function<Tensor()>& f) {
    try {
      r.push_back({std::move(n), f()});
    } catch (const tg::error&) { // an op this dtype does not take
    }
  };
  add("add", [&] { return a + b; });
  add("sub", [&] { return a - c; });
  add("mul", [&] { return a * b * c; });
  add("div", [&] { return a / (b + b); });
  add("neg", [&] { return -a; });
  add("maximum", [&] { return a.maximum(b); });
  add("minimum", [&] { return a.minimum(c); });
  add("where", [&] { return tg::where(a > b, a, c); });
  add("compare", [&] { return (a < b).logical_and(a != c); });
  add("logical", [&] { return (a == b).logical_or((a > c).logical_not()).logical_xor(a >= b); });
  add("abs", [&] { return a.abs(); });
  add("exp", [&] { return a.exp(); });
  add("log", [&] { return a.log(); });
  add("sqrt", [&] { return a.sqrt(); });
  add("sin", [&] { return a.sin(); });
  add("cos", [&] { return a.cos(); });
  add("tanh", [&] { return a.tanh(); });
  add("sigmoid", [&] { return a.sigmoid(); });
  add("relu", [&] { return a.relu(); });
  add("pow", [&] { return a.pow(b); });
  add("reciprocal", [&] { return a.reciprocal(); });
  add("floor", [&] { return a.floor(); });
  add("round", [&] { return a.round(); });
  add("isnan", [&] { return a.isnan(); });
  add("sum(1)", [&] { return a.sum(1); });
  add("sum(0)", [&] { return a.sum(0); });
  add("sum", [&] { return a.sum(); });
  add("max(1)", [&] { return a.max(1); });
  add("max", [&] { return a.max(); });
  add("prod", [&] { return a.prod(1); });
  add("mean", [&] { return a.mean(1); });
  add("var", [&] { return a.var({1}); });
  add("argmax", [&] { return a.argmax(1); });
  add("cumsum", [&] { return a.cumsum(1); });
  add("softmax", [&] { return a.softmax(1); });
  add("log_softmax", [&] { return a.log_softmax(1); });
  add("matmul", [&] { return a.matmul(a.T()); });
  add("transpose", [&] { return a.T().contiguous(); });
  add("pad", [&] { return a.pad({1, 2, 0, 3}); });
  add("slice+flip", [&] { return a.slice(1, 1, 39, 3).flip({0}).contiguous(); });
  add("cat", [&] { return tg::cat({a, a}, 1); });
  add("expand", [&] { return c.expand({6, 40}).contiguous(); });
  add("gather", [&] { return a.gather(1, tg::zeros({6, 3}, TensorOptions(tg::int64, dev))); });
  for (tg::DType to : {tg::bool_, tg::int8, tg::uint8, tg::int16, tg::uint16, tg::int32, tg::uint32,
                       tg::int64, tg::uint64, tg::float16, tg::bfloat16, tg::float32, tg::float64})
    add(std::string("cast to ") + tg::dtype_name(to), [&] { return a.cast(to); });
  for (tg::DType to : {tg::int16, tg::int32, tg::int64, tg::float16, tg::float32, tg::float64})
    add(std::string("bitcast to ") + tg::dtype_name(to), [&] { return a.bitcast(to); });
  return r;
}

const std::vector<tg::DType> kDtypes = {
    tg::bool_, tg::int8,   tg::uint8,   tg::int16,    tg::uint16,  tg::int32,  tg::uint32,
    tg::int64, tg::uint64, tg::float16, tg::bfloat16, tg::float32, tg::float64};

} // namespace

TEST_CASE("CUDA: available, or a clear reason why not (never skipped silently)") {
  std::string why;
  if (cuda_available(&why)) {
    auto dev = tg::dynamic_pointer_cast<tg::CudaDevice>(tg::device("CUDA"));
    REQUIRE(dev);
    MESSAGE("CUDA: " << dev->description());
    return;
  }
  MESSAGE("CUDA is unavailable, so its run on a GPU is skipped: " << why);
  CHECK(why.find("CUDA") != std::string::npos);
  bool clear = why.find("libcuda.so.1") != std::string::npos ||
               why.find("CUDA_ERROR") != std::string::npos ||
               why.find("no CUDA") != std::string::npos || why.find("NVRTC") != std::string::npos;
  CHECK_MESSAGE(clear, why);
  bool listed = false;
  for (const tg::DeviceInfo& d : tg::devices())
    if (d.name == "CUDA") listed = !d.available && !d.reason.empty();
  CHECK(listed);
}

TEST_CASE("CUDA: the toolkit's stub libcuda.so is recognised (cuInit answers 34)") {
  tg::cuda::Driver::get(); // the real search first, so the stub never stands in for it
  std::string stub;
  for (const std::string& root : tg::cuda::detail::toolkit_roots())
    for (const char* sub : {"/lib64/stubs/libcuda.so", "/lib/stubs/libcuda.so",
                            "/targets/x86_64-linux/lib/stubs/libcuda.so"})
      if (stub.empty() && access((root + sub).c_str(), R_OK) == 0) stub = root + sub;
  if (stub.empty()) {
    MESSAGE("no CUDA toolkit stub libcuda.so here; skipping");
    return;
  }
  if (cuda_available()) {
    MESSAGE("a real driver is loaded; not loading the stub " << stub << " next to it");
    return;
  }
  tg::cuda::Driver d(stub);
  MESSAGE(d.error);
  CHECK(d.error.find("CUDA_ERROR_STUB_LIBRARY (34)") != std::string::npos);
  CHECK(d.error.find("stub") != std::string::npos);
}

TEST_CASE("CUDA: every kernel of a broad op list compiles with NVRTC, and its PTX passes ptxas for "
          "sm_90") {
  auto& nv = tg::cuda::Nvrtc::get();
  if (!nv.error.empty()) {
    MESSAGE("NVRTC is unavailable, skipping: " << nv.error);
    return;
  }
  bool have_ptxas = !tg::cuda::find_tool("ptxas").empty();
  if (!have_ptxas) MESSAGE("ptxas not found: NVRTC's own CUBIN for sm_90 is the only check");
  struct Job {
    std::string label, name, src;
  };
  std::vector<Job> jobs;
  int grouped = 0;
  for (tg::DType t : kDtypes) {
    for (auto& [name, result] : op_list(t)) {
      tg::ScheduleInfo info = tg::schedule({result});
      for (const tg::Program& p : info.lowered) {
        for (int g = 0; g < 2; ++g) {
          tg::GpuOptions o;
          o.grouped = g;
          tg::KernelCode gpu = tg::finish_kernel(p, tg::Target::cuda(o)); // as the device would
          if (g && !gpu.program.grouped) break;
          grouped += gpu.program.grouped;
          jobs.push_back({name + " (" + tg::dtype_name(t) + ", " + std::string(p.name.view()) +
                              (gpu.program.grouped ? ", grouped)" : ")"),
                          std::string(p.name.view()), std::string(gpu.source.view())});
        }
      }
    }
  }
  // compiled in parallel; what went wrong with each kernel ("" when nothing did)
  std::vector<std::string> errors = tg::parallel_map(jobs.size(), [&](std::size_t i) {
    const Job& j = jobs[i];
    try {
      tg::cuda::Compiled ptx = tg::cuda::nvrtc_compile(j.src, j.name, "compute_90");
      tg::cuda::Compiled cubin = tg::cuda::nvrtc_compile(j.src, j.name, "sm_90");
      if (ptx.binary.find(".target sm_90") == std::string::npos)
        return std::string("the PTX does not target sm_90");
      if (cubin.binary.size() <= 4 || cubin.binary.compare(0, 4,
                                                           "\x7f"
                                                           "ELF") != 0)
        return std::string("the CUBIN is not an ELF file");
      return have_ptxas ? ptxas(ptx.binary, "sm_90", j.name) : std::string();
    } catch (const std::exception& e) {
      return std::string(e.what());
    }
  });
  int kernels = 0, ptx_checked = have_ptxas ? int(jobs.size()) : 0;
  for (std::size_t i = 0; i < jobs.size(); ++i) {
    CHECK_MESSAGE(errors[i].empty(), jobs[i].label << ": " << errors[i] << "\n" << jobs[i].src);
    kernels += errors[i].empty();
  }
  MESSAGE(kernels << " CUDA kernels compiled by NVRTC " << nv.major << "." << nv.minor
                  << " (PTX and sm_90 CUBIN), " << ptx_checked << " checked by ptxas -arch=sm_90, "
                  << grouped << " of them with work-group reductions");
  CHECK(kernels > 500);
}

namespace {
/// The PTX NVRTC makes of the one kernel that computes r (for compute_90).
std::string kernel_ptx(const Tensor& r) {
  tg::ScheduleInfo info = tg::schedule({r});
  REQUIRE(info.lowered.size() == 1);
  return tg::cuda::nvrtc_compile(tg::cuda::render(info.lowered[0]),
                                 std::string(info.lowered[0].name.view()), "compute_90")
      .binary;
}
} // namespace

TEST_CASE("CUDA: 0 / 0 stays NaN through NVRTC's constant folding") {
  // On an H200, isnan(z / z) of a zeros tensor was false: NVRTC 13 folds `d != d` to false for
  // `d = a / a` with a constant a. Float division is rendered through __fdiv_rn / __ddiv_rn (what
  // `/` compiles to anyway), which it folds correctly. Checked on the PTX, so it needs no GPU.
  auto& nv = tg::cuda::Nvrtc::get();
  if (!nv.error.empty()) {
    MESSAGE("NVRTC is unavailable, skipping: " << nv.error);
    return;
  }
  for (tg::DType t : {tg::float32, tg::float64}) {
    CAPTURE(tg::dtype_name(t));
    const std::string f = t == tg::float32 ? ".f32" : ".f64";
    Tensor z = tg::zeros({2}, TensorOptions(t, "CPU"));
    std::string nan = kernel_ptx((z / z).isnan()), inf = kernel_ptx(z.reciprocal().isinf());
    CHECK(nan.find("div.rn" + f) != std::string::npos); // computed, not folded
    CHECK(nan.find("setp.nan" + f) != std::string::npos);
    CHECK(inf.find("rcp.rn" + f) != std::string::npos);
    CHECK(inf.find("setp.eq" + f) != std::string::npos);
  }
}

TEST_CASE("CUDA: sums of products accumulate by fused multiply-add, and nothing else does") {
  auto& nv = tg::cuda::Nvrtc::get();
  if (!nv.error.empty()) {
    MESSAGE("NVRTC is unavailable, skipping: " << nv.error);
    return;
  }
  for (tg::DType t : {tg::float32, tg::float64, tg::float16}) {
    CAPTURE(tg::dtype_name(t));
    const std::string f = t == tg::float64 ? ".f64" : ".f32"; // float16 computes in float32
    Tensor a = tg::rand({8, 16}, TensorOptions(tg::float32, "CPU")).cast(t),
           b = tg::rand({16, 4}, TensorOptions(tg::float32, "CPU")).cast(t);
    a.realize();
    b.realize();
    std::string mm = kernel_ptx(a.matmul(b)), dot = kernel_ptx((a * a).sum(1));
    CHECK(mm.find("fma.rn" + f) != std::string::npos);
    CHECK(dot.find("fma.rn" + f) != std::string::npos);
    // a product and a sum outside a reduction stay two roundings, as INTERP computes them
    std::string ew = kernel_ptx(a * a + a);
    CHECK(ew.find("fma") == std::string::npos);
    CHECK(ew.find("mul.rn" + f) != std::string::npos);
  }
}

TEST_CASE("CUDA: products run as shared-memory tiles; their PTX passes ptxas for sm_80 and "
          "sm_90") {
  auto& nv = tg::cuda::Nvrtc::get();
  if (!nv.error.empty()) {
    MESSAGE("NVRTC is unavailable, skipping: " << nv.error);
    return;
  }
  const bool have_ptxas = !tg::cuda::find_tool("ptxas").empty();
  if (!have_ptxas) MESSAGE("ptxas not found: NVRTC's PTX is the only check");
  TensorOptions cpu(tg::float32, "CPU");
  Tensor a = tg::rand({1000, 300}, cpu), b = tg::rand({300, 1000}, cpu),
         bias = tg::rand({1000}, cpu);
  Tensor img = tg::rand({4, 8, 30, 30}, cpu), k = tg::rand({16, 8, 3, 3}, cpu);
  for (Tensor t : {a, b, bias, img, k}) t.realize();
  struct Case {
    std::string what;
    Tensor r;
  };
  std::vector<Case> cases;
  for (tg::DType t : {tg::float32, tg::float16, tg::bfloat16, tg::float64}) {
    const std::string d = tg::dtype_name(t);
    cases.push_back({"matmul " + d, a.cast(t).matmul(b.cast(t))});
    cases.push_back({"relu(x @ w.T + b) " + d,
                     (a.cast(t).matmul(a.cast(t).T()) + bias.cast(t)).relu().cast(tg::float32)});
  }
  cases.push_back({"x.T @ y", b.T().matmul(a.T())});
  cases.push_back({"bmm", a.reshape({10, 100, 300}).matmul(b.reshape({10, 300, 100}))});
  cases.push_back({"conv2d", tg::nn::F::conv2d(img, k, Tensor(), 1, 1)});
  tg::GpuOptions strided, staged;
  strided.tile_layout = 0;
  staged.stages = 2; // as a CUDA device's 48 KiB allow them
  staged.shared_bytes = 48 * 1024;
  for (tg::GpuOptions o : {tg::GpuOptions{}, strided, staged}) {
    for (const Case& c : cases) {
      CAPTURE(c.what);
      CAPTURE(o.tile_layout);
      CAPTURE(o.stages);
      tg::ScheduleInfo info = tg::schedule({c.r}, tg::Target::cuda(o));
      int tiled = 0;
      for (std::size_t i = 0; i < info.programs.size(); ++i) {
        const std::string name(info.programs[i].name.view());
        if (name.rfind("rt", 0) != 0) continue;
        ++tiled;
        // two stages wherever the reduction takes more than one step (all of these)
        CHECK((name.find("s2_") != std::string::npos) == (o.stages == 2));
        const std::string ptx = tg::cuda::nvrtc_compile(info.sources[i], name, "compute_80").binary;
        CHECK(ptx.find("ld.shared") != std::string::npos);
        CHECK(ptx.find("st.shared") != std::string::npos);
        CHECK(ptx.find("bar.sync") != std::string::npos);
        if (o.tile_layout == 1 && name.rfind("rt16x", 0) != 0) // a thread's consecutive outputs
          CHECK(ptx.find("ld.shared.v") != std::string::npos); // (v4 of floats, v2 of doubles)
        if (c.what.find("float64") == std::string::npos)
          CHECK(ptx.find("fma.rn.f32") != std::string::npos);
        if (have_ptxas)
          for (const char* arch : {"sm_80", "sm_90"}) CHECK(ptxas(ptx, arch, name) == "");
      }
      CHECK(tiled == 1);
    }
  }
}

TEST_CASE("CUDA: float16 and bfloat16 products on tensor cores (mma.sync), for sm_80 and sm_90") {
  auto& nv = tg::cuda::Nvrtc::get();
  if (!nv.error.empty()) {
    MESSAGE("NVRTC is unavailable, skipping: " << nv.error);
    return;
  }
  TensorOptions cpu(tg::float32, "CPU");
  tg::GpuOptions tc;
  tc.tensor_cores = true; // as a device of compute capability 8.0 or later sets it
  for (tg::DType t : {tg::float16, tg::bfloat16}) {
    // sizes the blocks do not divide, a reduction the step does not, an epilogue
    Tensor a = tg::rand({1000, 300}, cpu).cast(t), b = tg::rand({300, 70}, cpu).cast(t),
           bias = tg::rand({70}, cpu).cast(t);
    for (Tensor x : {a, b, bias}) x.realize();
    for (const Tensor& r : {a.matmul(b), (a.matmul(b) + bias).relu(), b.T().matmul(a.T())}) {
      CAPTURE(tg::dtype_name(t));
      tg::ScheduleInfo info = tg::schedule({r}, tg::Target::cuda(tc));
      std::size_t k = 0; // the product's kernel (a float16 epilogue may take one of its own)
      while (k + 1 < info.programs.size() && info.programs[k].name.view().substr(0, 2) != "rt") ++k;
      const std::string mma = std::string("mma.sync.aligned.m16n8k16.row.col.f32") +
                              (t == tg::float16 ? ".f16.f16" : ".bf16.bf16") + ".f32";
      check_product(r, tc, k, "rt64x64k32_", mma);
      // in two stages (48 KiB hold two of a 128 x 128 block's 16-bit slices)
      tg::GpuOptions staged = tc;
      staged.stages = 2;
      staged.shared_bytes = 48 * 1024;
      check_product(r, staged, k, "rt64x64k32s2_", mma);
      // without tensor cores (an older GPU): the float32 shared-memory tiles
      const std::string plain(tg::schedule({r}, tg::Target::cuda()).sources.at(k));
      CHECK(plain.find("tg_mma_tile") == std::string::npos);
    }
  }
  // float32 products and small blocks do not use them
  Tensor x = tg::rand({1000, 300}, cpu), y = tg::rand({300, 1000}, cpu);
  CHECK(std::string(tg::schedule({x.matmul(y)}, tg::Target::cuda(tc)).sources.at(0))
            .find("tg_mma_tile") == std::string::npos);
  Tensor h = tg::rand({40, 300}, cpu).cast(tg::float16),
         w = tg::rand({300, 1000}, cpu).cast(tg::float16);
  CHECK(std::string(tg::schedule({h.matmul(w)}, tg::Target::cuda(tc)).sources.at(0))
            .find("tg_mma_tile") == std::string::npos);
}

TEST_CASE("CUDA: float32 products on tensor cores with TF32 where the precision allows it") {
  auto& nv = tg::cuda::Nvrtc::get();
  if (!nv.error.empty()) {
    MESSAGE("NVRTC is unavailable, skipping: " << nv.error);
    return;
  }
  TensorOptions cpu(tg::float32, "CPU");
  tg::GpuOptions tf32;
  tf32.tensor_cores = tf32.tf32 = true; // as a device of compute capability 8.0 sets them at "high"
  Tensor a = tg::rand({1000, 300}, cpu), b = tg::rand({300, 70}, cpu), bias = tg::rand({70}, cpu);
  for (Tensor x : {a, b, bias}) x.realize();
  for (const Tensor& r : {a.matmul(b), (a.matmul(b) + bias).relu(), b.T().matmul(a.T())}) {
    REQUIRE(tg::schedule({r}, tg::Target::cuda(tf32)).programs.size() == 1);
    const std::string mma = "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32";
    auto [source, ptx] = check_product(r, tf32, 0, "rt64x64k32_", mma);
    CHECK(source.find("tg_mma_tile_tf32<36, 2, 2>") != std::string::npos);
    CHECK(ptx.find("cvt.rna.tf32.f32") != std::string::npos);
    // two stages of a 64 x 64 block's float32 slices fit 48 KiB (a 128 x 128 block's do not)
    tg::GpuOptions staged = tf32;
    staged.stages = 2;
    staged.shared_bytes = 48 * 1024;
    check_product(r, staged, 0, "rt64x64k32s2_", mma);
  }
  // float64 products never; float32 ones without TF32 keep float32 tiles
  CHECK(std::string(
            tg::schedule({a.cast(tg::float64).matmul(b.cast(tg::float64))}, tg::Target::cuda(tf32))
                .sources.back())
            .find("tg_mma_tile") == std::string::npos);
  tg::GpuOptions tc;
  tc.tensor_cores = true;
  CHECK(std::string(tg::schedule({a.matmul(b)}, tg::Target::cuda(tc)).sources.at(0))
            .find("tg_mma_tile") == std::string::npos);
  // on a GPU: TF32's rounding shows, within its precision (2^-11 relative a term)
  if (!cuda_available()) return;
  auto dev = tg::dynamic_pointer_cast<tg::CudaDevice>(tg::device("CUDA"));
  tg::set_float32_matmul_precision("high");
  Tensor x = tg::randn({512, 512}, cpu).realize(), y = tg::randn({512, 512}, cpu).realize();
  std::vector<float> got = x.to("CUDA").matmul(y.to("CUDA")).to_vector<float>();
  tg::set_float32_matmul_precision("highest");
  std::vector<float> exact = x.matmul(y).to_vector<float>();
  std::vector<float> fp32 = x.to("CUDA").matmul(y.to("CUDA")).to_vector<float>();
  double worst = 0, worst_fp32 = 0;
  for (std::size_t i = 0; i < exact.size(); ++i) {
    worst = std::max(worst, double(std::abs(got[i] - exact[i])));
    worst_fp32 = std::max(worst_fp32, double(std::abs(fp32[i] - exact[i])));
  }
  MESSAGE("512² on " << dev->description() << ": largest difference from the CPU " << worst
                     << " with TF32, " << worst_fp32 << " without");
  CHECK(worst < 0.2);        // sqrt(512) terms of |2^-11 * x * y|: about 0.05
  CHECK(worst > worst_fp32); // the rounding took place
}

TEST_CASE("float32 matmul precision: PyTorch's names, and a clear error") {
  CHECK(tg::get_float32_matmul_precision() == "highest");
  CHECK_FALSE(tg::backends::cuda::matmul::allow_tf32());
  tg::backends::cuda::matmul::allow_tf32(true);
  CHECK(tg::get_float32_matmul_precision() == "high");
  tg::set_float32_matmul_precision("medium");
  CHECK(tg::backends::cuda::matmul::allow_tf32());
  CHECK_THROWS_WITH_AS(tg::set_float32_matmul_precision("low"),
                       doctest::Contains("\"highest\", \"high\" or \"medium\", got \"low\""),
                       tg::error);
  tg::set_float32_matmul_precision("highest");
  CHECK_FALSE(tg::backends::cuda::matmul::allow_tf32());
}

TEST_CASE("CUDA: a kernel that does not compile reports NVRTC's log and the source") {
  if (!tg::cuda::Nvrtc::get().error.empty()) return;
  try {
    tg::cuda::nvrtc_compile("extern \"C\" __global__ void broken() { undeclared_thing = 1; }",
                            "broken", "compute_90");
    FAIL("compiled");
  } catch (const tg::compile_error& e) {
    CHECK(std::string(e.what()).find("undeclared_thing") != std::string::npos);
    CHECK(e.source.find("broken") != std::string::npos);
  }
}

TEST_CASE("CUDA on a GPU: ops in every dtype against the CPU") {
  std::string why;
  if (!cuda_available(&why)) {
    MESSAGE("skipped (no CUDA device): " << why);
    return;
  }
  for (tg::DType t : kDtypes) {
    auto cpu = op_list(t, "CPU"), gpu = op_list(t, "CUDA");
    REQUIRE(cpu.size() == gpu.size());
    for (std::size_t k = 0; k < cpu.size(); ++k) {
      INFO(cpu[k].first << " " << tg::dtype_name(t));
      std::vector<double> want = cpu[k].second.to_vector<double>(),
                          got = gpu[k].second.to_vector<double>();
      REQUIRE(got.size() == want.size());
      for (std::size_t i = 0; i < got.size(); ++i)
        if (want[i] == want[i]) CHECK(got[i] == doctest::Approx(want[i]).epsilon(1e-5));
    }
    Tensor a = tg::rand({64, 300}, TensorOptions(tg::float32, "CPU")).cast(t);
    Tensor g = a.to("CUDA");
    std::vector<double> s = g.sum(1).to_vector<double>(), sc = a.sum(1).to_vector<double>();
    REQUIRE(s.size() == sc.size());
    for (std::size_t i = 0; i < s.size(); ++i) CHECK(s[i] == doctest::Approx(sc[i]).epsilon(1e-2));
  }
}
