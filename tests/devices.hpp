#pragma once
// The devices the parametrized tests (test_ops, test_fuzz, ...) run on: CPU and INTERP, then every
// other device tg::devices() reports available (VULKAN on lavapipe in CI, CUDA on a machine with
// an NVIDIA GPU). A device that is not available is never skipped silently: its reason is
// printed once per test program. Vulkan's validation layer is switched on (TG_VULKAN_VALIDATION=1
// unless the environment says otherwise), and the Vulkan runtime turns any message into a failure.
//
// Without a CUDA GPU, the device "NVRTC" stands in for CUDA: every kernel a test produces is
// rendered as CUDA, compiled by NVRTC to PTX for sm_90 and checked by ptxas (-arch=sm_90); the
// results come from the reference interpreter. It needs NVRTC and ptxas (the CUDA toolkit, e.g.
// /usr/local/cuda*); when they are missing, the reason is printed instead.
// TG_TEST_DEVICES=CPU,INTERP,VULKAN (a comma-separated list) restricts the list, for local runs.
#include <tg/vulkan.hpp>

#include <cstdio>
#include <cstdlib>
#include <string>
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
                  compiled_, tg::cuda::Nvrtc::get().major, tg::cuda::Nvrtc::get().minor, arch,
                  cached_);
  }
  std::string name() const override { return "NVRTC"; }
  std::string unavailable_reason() const override {
    if (!tg::cuda::Nvrtc::get().error.empty()) return tg::cuda::Nvrtc::get().error;
    if (ptxas_.empty())
      return "ptxas not found (on PATH or in CUDA_PATH, CUDA_HOME, /usr/local/cuda*/bin)";
    return "";
  }
  std::vector<std::shared_ptr<tg::Runner>>
  prepare(const std::vector<const tg::Program*>& programs) override {
    std::vector<std::shared_ptr<tg::Runner>> out;
    for (const tg::Program* p : programs) {
      std::string name(p->name.view());
      for (int grouped = 0; grouped < 2; ++grouped) { // both launch shapes of a reduction
        tg::GpuOptions o;
        o.grouped = grouped;
        tg::Program gpu = tg::gpu_program(*p, o);
        if (grouped && !gpu.grouped) break;
        std::string src(tg::render_cuda(gpu).view());
        tg::cuda::Compiled ptx = tg::cuda::nvrtc_compile(src, name, "compute_90");
        check_ptx(ptx.binary, name, src);
      }
      auto r = std::make_shared<tg::InterpRunner>(*p);
      r->name = name;
      out.push_back(r);
    }
    return out;
  }

private:
  void check_ptx(const std::string& ptx, const std::string& name, const std::string& src) {
    ++compiled_;
    std::string ok = tg::detail::cache_path("cuda-" + tg::detail::cache_key(ptx, ptxas_) +
                                            ".ptxas-" + arch + ".ok");
    std::string seen;
    if (tg::detail::read_cached(ok, seen)) {
      ++cached_;
      return;
    }
    std::string tmp = tg::detail::temp_path(name);
    {
      std::ofstream f(tmp + ".ptx", std::ios::binary);
      f << ptx;
    }
    int rc = tg::detail::run_process(
        {ptxas_, std::string("-arch=") + arch, "-o", tmp + ".cubin", tmp + ".ptx"}, tmp + ".log");
    std::string log = tg::detail::read_file(tmp + ".log");
    std::error_code ec;
    for (const char* ext : {".ptx", ".cubin", ".log"}) std::filesystem::remove(tmp + ext, ec);
    if (rc != 0)
      throw tg::compile_error("tg tests: ptxas -arch=" + std::string(arch) +
                                  " rejected the PTX of kernel " + name + " (exit " +
                                  std::to_string(rc) + "):\n" + log + "\nCUDA source:\n" + src,
                              src, log);
    tg::detail::write_cached(ok, "ok");
  }
  std::string ptxas_;
  long long compiled_ = 0, cached_ = 0;
};

/// Vulkan validation on before any device opens (static initialization of every test program).
inline const bool vulkan_validation_on = (setenv("TG_VULKAN_VALIDATION", "1", 0), true);

/// The devices to test on (computed once; prints why the others are skipped).
inline const std::vector<std::string>& test_devices() {
  static const std::vector<std::string> list = [] {
    setenv("TG_VULKAN_VALIDATION", "1", 0);
    std::vector<std::string> out = {"CPU", "INTERP"};
    bool cuda = false;
    for (const tg::DeviceInfo& d : tg::devices()) {
      if (d.name == "CPU" || d.name == "INTERP" || d.name == "NVRTC") continue;
      if (d.available) {
        out.push_back(d.name);
        if (d.name.rfind("CUDA", 0) == 0) cuda = true;
      } else {
        std::printf("tg tests: device %s skipped: %s\n", d.name.c_str(), d.reason.c_str());
      }
    }
    if (!cuda) {
      tg::register_device("NVRTC", [] { return std::make_shared<NvrtcCheckDevice>(); });
      try {
        tg::device("NVRTC");
        out.push_back("NVRTC");
        std::printf("tg tests: no CUDA GPU, so device NVRTC checks every kernel with NVRTC + ptxas "
                    "-arch=sm_90 "
                    "(results from INTERP)\n");
      } catch (const std::exception& e) {
        std::printf("tg tests: CUDA compile checks skipped: %s\n", e.what());
      }
    }
    if (const char* only = std::getenv("TG_TEST_DEVICES");
        only && *only) { // e.g. TG_TEST_DEVICES=CPU,VULKAN
      std::string list = std::string(",") + only + ",";
      std::vector<std::string> kept;
      for (const std::string& d : out)
        if (list.find("," + d + ",") != std::string::npos)
          kept.push_back(d);
        else
          std::printf("tg tests: device %s skipped: not in TG_TEST_DEVICES=%s\n", d.c_str(), only);
      out = kept;
    }
    std::fflush(stdout);
    return out;
  }();
  return list;
}

} // namespace tg_test
