#pragma once
// The devices the parametrized tests (test_ops, test_fuzz, ...) run on: CPU and INTERP, then every
// other device tg::devices() reports available (VULKAN on lavapipe and WEBGPU on Dawn in CI, CUDA
// on a machine with an NVIDIA GPU). A device that is not available is never skipped silently: its
// reason is printed once per test program. On a device without 64-bit types (WEBGPU), results
// that need them must be refused: lacks_64bit, refused_64bit, computes_64bit and skips below.
// Vulkan's validation layer is switched on (TG_VULKAN_VALIDATION=1 unless the environment says
// otherwise), and the Vulkan runtime turns any message into a failure.
//
// Without a CUDA GPU, the device "NVRTC" stands in for CUDA: every kernel a test produces is
// rendered as CUDA, compiled by NVRTC to PTX for sm_90 and checked by ptxas (-arch=sm_90); the
// results come from the reference interpreter. It needs NVRTC and ptxas (the CUDA toolkit, e.g.
// /usr/local/cuda*); when they are missing, the reason is printed instead.
// TG_TEST_DEVICES=CPU,INTERP,VULKAN (a comma-separated list) restricts the list (under CI=true a
// device it names must open).
#include <doctest/doctest.h>
#include <tg/runtime/cuda.hpp> // the NVRTC stand-in: white-box
#include <tg/runtime/interp.hpp>
#include <tg/schedule.hpp>
#include <tg/vulkan.hpp>
#include <tg/webgpu.hpp>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

namespace tg_test {

/// Compiles every kernel with NVRTC (PTX, compute_90) and checks it with ptxas for sm_90, then
/// runs it on the interpreter.
class NvrtcCheckDevice : public tg::HostDevice {
public:
  static constexpr const char* arch = "sm_90";
  NvrtcCheckDevice() : ptxas_(tg::cuda::find_tool("ptxas")) {}
  ~NvrtcCheckDevice() override {
    if (compiled_ > 0)
      std::printf("tg tests: NVRTC: %lld CUDA kernels compiled by NVRTC %d.%d and checked by ptxas "
                  "-arch=%s, %lld of them "
                  "already checked in the disk cache\n",
                  compiled_.load(), tg::cuda::Nvrtc::get().major, tg::cuda::Nvrtc::get().minor,
                  arch, cached_.load());
  }
  std::string name() const override { return "NVRTC"; }
  std::string unavailable_reason() const override {
    if (!tg::cuda::Nvrtc::get().error.empty()) return tg::cuda::Nvrtc::get().error;
    if (ptxas_.empty())
      return "ptxas not found (on PATH or in CUDA_PATH, CUDA_HOME, /usr/local/cuda*/bin)";
    return "";
  }
  /// CUDA's choices, without its device passes: prepare() gets programs the interpreter runs,
  /// and makes the CUDA kernels of both launch shapes itself.
  tg::Target target() const override {
    tg::Target t = tg::with_env(tg::Target::cuda());
    t.gpu = false;
    t.dialect = tg::Dialect::None;
    return t;
  }
  std::vector<tg::Rc<tg::Runner>>
  prepare(const std::vector<const tg::KernelCode*>& kernels) override {
    std::vector<Kernel> todo; // every kernel in both launch shapes of a reduction, not yet checked
    for (const tg::KernelCode* c : kernels)
      for (int grouped = 0; grouped < 2; ++grouped) {
        const tg::Program* p = &c->program;
        tg::GpuOptions o;
        o.grouped = grouped;
        tg::KernelCode gpu = tg::finish_kernel(*p, tg::with_env(tg::Target::cuda(o)));
        if (grouped && !gpu.program.grouped) break;
        Kernel k{std::string(p->name.view()), std::string(gpu.source.view()), ""};
        k.ok = tg::detail::cache_path("cuda-" + tg::detail::cache_key(k.src, meta()) + ".ok");
        std::string seen;
        bool dup = false;
        for (const Kernel& t : todo) dup = dup || t.src == k.src;
        ++compiled_;
        if (dup || tg::detail::read_cached(k.ok, seen))
          ++cached_;
        else
          todo.push_back(std::move(k));
      }
    // One NVRTC program and one ptxas run per core, like the CPU runtime's batches: most of a
    // one-kernel NVRTC or ptxas run is fixed cost.
    std::size_t n =
        std::min<std::size_t>(todo.size(), std::max(1u, std::thread::hardware_concurrency()));
    tg::parallel_map(n, [&](std::size_t b) {
      std::vector<const Kernel*> batch;
      for (std::size_t k = b; k < todo.size(); k += n) batch.push_back(&todo[k]);
      check(batch);
      return 0;
    });
    std::vector<tg::Rc<tg::Runner>> out;
    for (const tg::KernelCode* c : kernels) {
      auto r = std::make_shared<tg::InterpRunner>(c->program);
      r->name = std::string(c->program.name.view());
      out.push_back(r);
    }
    return out;
  }

private:
  struct Kernel {
    std::string name, src, ok; // ok: the cache entry that says it was checked
  };
  std::string meta() const {
    return "nvrtc " + std::to_string(tg::cuda::Nvrtc::get().major) + "." +
           std::to_string(tg::cuda::Nvrtc::get().minor) + " compute_90, " + ptxas_ +
           " -arch=" + arch;
  }
  /// NVRTC and ptxas on the kernels of `batch` as one program (each kernel renamed, its prelude
  /// guarded); when that fails, kernel by kernel, so that the error names the kernel.
  void check(const std::vector<const Kernel*>& batch) {
    std::string src;
    for (std::size_t k = 0; k < batch.size(); ++k)
      src += "#define " + batch[k]->name + " tg_k" + std::to_string(k) + "\n" + batch[k]->src +
             "#undef " + batch[k]->name + "\n";
    if (batch.size() == 1) src = batch[0]->src;
    std::string name = batch[0]->name, log;
    int rc = 0;
    try {
      std::string ptx = tg::cuda::nvrtc_compile(src, name, "compute_90").binary;
      std::string tmp = tg::detail::temp_path(name);
      {
        std::ofstream f(tmp + ".ptx", std::ios::binary);
        f << ptx;
      }
      rc = tg::detail::run_process(
          {ptxas_, std::string("-arch=") + arch, "-o", tmp + ".cubin", tmp + ".ptx"}, tmp + ".log");
      log = tg::detail::read_file(tmp + ".log");
      std::error_code ec;
      for (const char* ext : {".ptx", ".cubin", ".log"}) std::filesystem::remove(tmp + ext, ec);
    } catch (const tg::compile_error&) {
      if (batch.size() == 1) throw;
      rc = -1;
    }
    if (rc != 0 && batch.size() > 1) {
      for (const Kernel* k : batch) check({k});
      return;
    }
    if (rc != 0)
      throw tg::compile_error(
          "tg tests: ptxas -arch=" + std::string(arch) + " rejected the PTX of kernel " + name +
              " (" + tg::detail::process_status(rc) + "):\n" + log + "\nCUDA source:\n" + src,
          src, log);
    for (const Kernel* k : batch) tg::detail::write_cached(k->ok, "ok");
  }
  std::string ptxas_;
  std::atomic<long long> compiled_{0}, cached_{0};
};

/// Vulkan validation on before any device opens (static initialization of every test program).
inline const bool vulkan_validation_on = (setenv("TG_VULKAN_VALIDATION", "1", 0), true);

/// The devices to test on (computed once; prints why the others are skipped).
inline const std::vector<std::string>& test_devices() {
  static const std::vector<std::string> list = [] {
    setenv("TG_VULKAN_VALIDATION", "1", 0);
    // TG_TEST_DEVICES=CPU,VULKAN: only those are opened (a device that is not wanted is not even
    // probed, so its driver is never loaded); TG_TEST_DEVICES=-VULKAN: every device but those
    const char* only = std::getenv("TG_TEST_DEVICES");
    const bool but = only && *only == '-';
    std::string wanted = only && *only ? std::string(",") + only + "," : "";
    if (but)
      for (std::size_t at; (at = wanted.find(",-")) != std::string::npos;) wanted.erase(at + 1, 1);
    auto want = [&](const std::string& d) {
      const bool named = wanted.find("," + d + ",") != std::string::npos;
      if (wanted.empty() || named != but) return true;
      std::printf("tg tests: device %s skipped: %s TG_TEST_DEVICES=%s\n", d.c_str(),
                  but ? "excluded by" : "not in", only);
      return false;
    };
    std::vector<std::string> out;
    for (const char* d : {"CPU", "INTERP"})
      if (want(d)) out.push_back(d);
    bool cuda = false;
    std::vector<std::string> names;
    if (wanted.empty() || but) {
      for (const tg::DeviceInfo& d : tg::devices()) names.push_back(d.name);
    } else {
      for (std::size_t i = 1, j; (j = wanted.find(',', i)) != std::string::npos; i = j + 1)
        names.push_back(wanted.substr(i, j - i));
    }
    for (const std::string& name : names) {
      if (name == "CPU" || name == "INTERP" || name == "NVRTC" || name.empty()) continue;
      if (but && !want(name)) continue;
      try {
        tg::device(name);
        out.push_back(name);
        if (name.rfind("CUDA", 0) == 0) cuda = true;
      } catch (const std::exception& e) {
        std::printf("tg tests: device %s skipped: %s\n", name.c_str(), e.what());
        const char* ci = std::getenv("CI");
        if (!wanted.empty() && !but && ci && std::string(ci) == "true") { // named, in CI
          std::printf("tg tests: TG_TEST_DEVICES names %s, which must open under CI=true\n",
                      name.c_str());
          std::exit(1);
        }
      }
    }
    if (!cuda && want("NVRTC")) {
      tg::register_device("NVRTC", [] { return std::make_shared<NvrtcCheckDevice>(); });
      try {
        tg::device("NVRTC");
        out.push_back("NVRTC");
        std::printf("tg tests: no CUDA GPU, so device NVRTC checks every kernel with NVRTC + ptxas "
                    "-arch=sm_90 (results from INTERP)\n");
      } catch (const std::exception& e) {
        std::printf("tg tests: CUDA compile checks skipped: %s\n", e.what());
      }
    }
    std::fflush(stdout);
    return out;
  }();
  return list;
}

/// Whether `dev` computes without 64-bit types (WEBGPU: WGSL has none), so that a result whose
/// kernels need float64, int64 or uint64 values is refused there (tg::device_error) instead.
inline bool lacks_64bit(const std::string& dev) { return tg::device(dev)->target().narrow32; }

/// Whether `dev` may flush subnormal float results to zero: WGSL lets an implementation do so
/// (Mesa's GL driver, under Dawn's GL ES backend, does), and has no way to ask otherwise.
inline bool may_flush_subnormals(const std::string& dev) {
  return tg::device(dev)->target().dialect == tg::Dialect::Wgsl;
}

/// A count printed when the test program ends ("tg tests: WEBGPU <what>: 12").
struct Tally {
  explicit Tally(const char* w) : what(w) {}
  const char* what;
  std::atomic<long long> n{0};
  std::string dev;
  void add(const std::string& d) {
    if (n++ == 0) dev = d;
  }
  ~Tally() {
    if (n > 0) std::printf("tg tests: %s %s: %lld\n", dev.c_str(), what, n.load());
  }
};

/// Whether `e` is the refusal of a kernel that needs 64-bit types on such a device (counted).
inline bool refused_64bit(const std::string& dev, const std::exception& e) {
  static Tally refused{"results refused as their kernels need 64-bit types"};
  const bool is = lacks_64bit(dev) && dynamic_cast<const tg::device_error*>(&e) &&
                  std::string(e.what()).find("a device without 64-bit types") != std::string::npos;
  if (is) refused.add(dev);
  return is;
}

/// Whether `dev` computes 64-bit types. Where it does not, checks that `f`, which needs them, is
/// refused as needing them (so the caller checks the values only where they are computed).
template <class F> bool computes_64bit(const std::string& dev, F f) {
  if (!lacks_64bit(dev)) return true;
  try {
    f();
    FAIL_CHECK(dev << " computed a result that needs 64-bit types instead of refusing it");
  } catch (const std::exception& e) {
    if (!refused_64bit(dev, e)) FAIL_CHECK(dev << " threw " << std::string(e.what()));
  }
  return false;
}

/// Whether a case in dtype `t` is left out on `dev`, a device without 64-bit types (counted).
inline bool skips(const std::string& dev, tg::DType t) {
  static Tally skipped{"cases left out as their dtype is 64-bit"};
  const bool skip = tg::itemsize(t) == 8 && lacks_64bit(dev);
  if (skip) skipped.add(dev);
  return skip;
}

} // namespace tg_test
