#pragma once
// The CUDA device: programs shaped by gpu_program, rendered by the CUDA dialect, compiled by NVRTC
// to a CUBIN for the device's architecture (PTX for the newest architecture NVRTC knows when it
// does not know the device's, JIT-compiled by the driver), cached on disk, and launched through
// the driver API on one stream per device. Nothing CUDA is needed to build tg: the driver
// (libcuda.so.1) and NVRTC (libnvrtc.so*) are opened with dlopen on first use, and the few driver
// types are declared here. Devices: "CUDA" (= "CUDA:0"), "CUDA:1", ...
//
// Environment: TG_LIBCUDA (path of the driver library), TG_NVRTC (path of libnvrtc),
// CUDA_PATH / CUDA_HOME (toolkit root, searched for NVRTC and ptxas).
#include <dirent.h>
#include <dlfcn.h>

#include <algorithm>
#include <array>
#include <future>
#include <map>
#include <mutex>
#include <unordered_map>

#include "../codegen/render_cuda.hpp"
#include "../util/rc.hpp"
#include "alloc_cache.hpp"
#include "cache.hpp"
#include "host.hpp"
#include "launch.hpp"
#include "precision.hpp"
#include "thread_pool.hpp"

namespace tg::cuda {

// ---- the driver API, declared here (no cuda.h) -------------------------------------------------
using CUresult = int;
using CUdevice = int;
using CUcontext = struct CUctx_st*;
using CUmodule = struct CUmod_st*;
using CUfunction = struct CUfunc_st*;
using CUstream = struct CUstream_st*;
using CUevent = struct CUevent_st*;
using CUdeviceptr = unsigned long long;
using CUgraph = struct CUgraph_st*;
using CUgraphNode = struct CUgraphNode_st*;
using CUgraphExec = struct CUgraphExec_st*;
/// What cuGraphExecUpdate_v2 reports beside its result (the driver's layout).
struct CUgraphExecUpdateResultInfo {
  int result;
  CUgraphNode error_node, error_from_node;
};

constexpr CUresult CUDA_SUCCESS = 0;
constexpr CUresult CUDA_ERROR_NO_DEVICE = 100;
constexpr CUresult CUDA_ERROR_STUB_LIBRARY = 34;
enum : int {
  ATTR_MAX_THREADS_PER_BLOCK = 1,
  ATTR_MAX_GRID_DIM_X = 5,
  ATTR_MAX_GRID_DIM_Y = 6,
  ATTR_MAX_GRID_DIM_Z = 7,
  ATTR_MULTIPROCESSOR_COUNT = 16,
  ATTR_COMPUTE_CAPABILITY_MAJOR = 75,
  ATTR_COMPUTE_CAPABILITY_MINOR = 76,
};

namespace detail {

inline void* sym(void* lib, const char* name) { return lib ? dlsym(lib, name) : nullptr; }

/// The search for a shared library: each candidate name or path in order.
inline void* open_first(const std::vector<std::string>& candidates, std::string& opened,
                        std::string& tried) {
  for (const std::string& c : candidates) {
    if (c.empty()) continue;
    if (void* h = dlopen(c.c_str(), RTLD_NOW | RTLD_LOCAL)) {
      opened = c;
      return h;
    }
    tried += (tried.empty() ? "" : ", ") + c;
  }
  return nullptr;
}

/// Toolkit roots: CUDA_PATH, CUDA_HOME, /usr/local/cuda, then /usr/local/cuda-* (newest first).
inline std::vector<std::string> toolkit_roots() {
  std::vector<std::string> roots;
  for (const char* v : {"CUDA_PATH", "CUDA_HOME"})
    if (std::string r = env::get(v); !r.empty()) roots.push_back(r);
  roots.push_back("/usr/local/cuda");
  std::vector<std::string> versioned;
  if (DIR* d = opendir("/usr/local")) {
    while (dirent* e = readdir(d)) {
      std::string n = e->d_name;
      if (n.rfind("cuda-", 0) == 0) versioned.push_back("/usr/local/" + n);
    }
    closedir(d);
  }
  std::sort(versioned.begin(), versioned.end(), [](const std::string& a, const std::string& b) {
    return std::atof(a.c_str() + 16) > std::atof(b.c_str() + 16); // "/usr/local/cuda-" is 16 chars
  });
  roots.insert(roots.end(), versioned.begin(), versioned.end());
  return roots;
}

} // namespace detail

/// A tool of the CUDA toolkit (e.g. "ptxas"): on PATH or under a toolkit root's bin/; "" if none.
inline std::string find_tool(const std::string& name) {
  for (const std::string& r : detail::toolkit_roots()) {
    std::string p = r + "/bin/" + name;
    if (access(p.c_str(), X_OK) == 0) return p;
  }
  return tg::detail::find_in_path(name);
}

/// libcuda, loaded once. `error` says why it cannot be used ("" when it can).
struct Driver {
  void* lib = nullptr;
  std::string path, error;
  int version = 0;
#define TG_CUDA_FN(name, ...) CUresult (*name)(__VA_ARGS__) = nullptr;
  TG_CUDA_FN(cuInit, unsigned)
  TG_CUDA_FN(cuDriverGetVersion, int*)
  TG_CUDA_FN(cuGetErrorName, CUresult, const char**)
  TG_CUDA_FN(cuGetErrorString, CUresult, const char**)
  TG_CUDA_FN(cuDeviceGetCount, int*)
  TG_CUDA_FN(cuDeviceGet, CUdevice*, int)
  TG_CUDA_FN(cuDeviceGetName, char*, int, CUdevice)
  TG_CUDA_FN(cuDeviceGetAttribute, int*, int, CUdevice)
  TG_CUDA_FN(cuDevicePrimaryCtxRetain, CUcontext*, CUdevice)
  TG_CUDA_FN(cuDevicePrimaryCtxRelease, CUdevice)
  TG_CUDA_FN(cuCtxSetCurrent, CUcontext)
  TG_CUDA_FN(cuMemAlloc, CUdeviceptr*, std::size_t)
  TG_CUDA_FN(cuMemFree, CUdeviceptr)
  TG_CUDA_FN(cuMemcpyHtoDAsync, CUdeviceptr, const void*, std::size_t, CUstream)
  TG_CUDA_FN(cuMemcpyDtoHAsync, void*, CUdeviceptr, std::size_t, CUstream)
  TG_CUDA_FN(cuModuleLoadData, CUmodule*, const void*)
  TG_CUDA_FN(cuModuleUnload, CUmodule)
  TG_CUDA_FN(cuModuleGetFunction, CUfunction*, CUmodule, const char*)
  TG_CUDA_FN(cuLaunchKernel, CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
             unsigned, CUstream, void**, void**)
  TG_CUDA_FN(cuStreamCreate, CUstream*, unsigned)
  TG_CUDA_FN(cuStreamDestroy, CUstream)
  TG_CUDA_FN(cuStreamSynchronize, CUstream)
  TG_CUDA_FN(cuEventCreate, CUevent*, unsigned)
  TG_CUDA_FN(cuEventDestroy, CUevent)
  TG_CUDA_FN(cuEventRecord, CUevent, CUstream)
  TG_CUDA_FN(cuEventSynchronize, CUevent)
  TG_CUDA_FN(cuEventElapsedTime, float*, CUevent, CUevent)
  TG_CUDA_FN(cuMemcpyDtoDAsync, CUdeviceptr, CUdeviceptr, std::size_t, CUstream)
  // CUDA graphs (tg::jit's replays): optional, a driver without them replays launch by launch
  TG_CUDA_FN(cuStreamBeginCapture, CUstream, int)
  TG_CUDA_FN(cuStreamEndCapture, CUstream, CUgraph*)
  TG_CUDA_FN(cuGraphInstantiateWithFlags, CUgraphExec*, CUgraph, unsigned long long)
  TG_CUDA_FN(cuGraphExecUpdate, CUgraphExec, CUgraph, CUgraphExecUpdateResultInfo*)
  TG_CUDA_FN(cuGraphLaunch, CUgraphExec, CUstream)
  TG_CUDA_FN(cuGraphExecDestroy, CUgraphExec)
  TG_CUDA_FN(cuGraphDestroy, CUgraph)
#undef TG_CUDA_FN
  /// Whether the driver records CUDA graphs (CUDA 11.4 and later; updates in place from 12.0).
  bool graphs() const {
    return cuStreamBeginCapture && cuStreamEndCapture && cuGraphInstantiateWithFlags &&
           cuGraphLaunch && cuGraphExecDestroy && cuGraphDestroy;
  }

  static Driver& get() {
    static Driver d(env::get("TG_LIBCUDA"));
    return d;
  }
  std::string describe(CUresult r) const {
    const char* name = nullptr;
    const char* text = nullptr;
    if (cuGetErrorName) cuGetErrorName(r, &name);
    if (cuGetErrorString) cuGetErrorString(r, &text);
    std::string s = name ? name : "CUDA error";
    s += " (" + std::to_string(r) + ")";
    if (text) s += ": " + std::string(text);
    return s;
  }
  void check(CUresult r, const char* what) const {
    if (r != CUDA_SUCCESS)
      throw device_error(std::string("tg: CUDA ") + what + " failed: " + describe(r));
  }

  /// Loads the driver library at `requested` (default: libcuda.so.1 from the library path).
  explicit Driver(const std::string& requested) {
    std::string tried;
    lib = detail::open_first(requested.empty()
                                 ? std::vector<std::string>{"libcuda.so.1", "libcuda.so"}
                                 : std::vector<std::string>{requested},
                             path, tried);
    if (!lib) {
      error = "no CUDA driver: could not open " + tried +
              " (install the NVIDIA driver, or set TG_LIBCUDA)";
      return;
    }
    auto load = [&](auto& fn, const char* name) {
      fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(detail::sym(lib, name));
      if (!fn && error.empty()) error = path + " lacks " + name + " (driver too old?)";
    };
    load(cuInit, "cuInit");
    load(cuDriverGetVersion, "cuDriverGetVersion");
    load(cuGetErrorName, "cuGetErrorName");
    load(cuGetErrorString, "cuGetErrorString");
    load(cuDeviceGetCount, "cuDeviceGetCount");
    load(cuDeviceGet, "cuDeviceGet");
    load(cuDeviceGetName, "cuDeviceGetName");
    load(cuDeviceGetAttribute, "cuDeviceGetAttribute");
    load(cuDevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain");
    load(cuDevicePrimaryCtxRelease, "cuDevicePrimaryCtxRelease_v2");
    load(cuCtxSetCurrent, "cuCtxSetCurrent");
    load(cuMemAlloc, "cuMemAlloc_v2");
    load(cuMemFree, "cuMemFree_v2");
    load(cuMemcpyHtoDAsync, "cuMemcpyHtoDAsync_v2");
    load(cuMemcpyDtoHAsync, "cuMemcpyDtoHAsync_v2");
    load(cuModuleLoadData, "cuModuleLoadData");
    load(cuModuleUnload, "cuModuleUnload");
    load(cuModuleGetFunction, "cuModuleGetFunction");
    load(cuLaunchKernel, "cuLaunchKernel");
    load(cuStreamCreate, "cuStreamCreate");
    load(cuStreamDestroy, "cuStreamDestroy_v2");
    load(cuStreamSynchronize, "cuStreamSynchronize");
    load(cuEventCreate, "cuEventCreate");
    load(cuEventDestroy, "cuEventDestroy_v2");
    load(cuEventRecord, "cuEventRecord");
    load(cuEventSynchronize, "cuEventSynchronize");
    load(cuEventElapsedTime, "cuEventElapsedTime_v2");
    if (!cuEventElapsedTime) {
      error.clear();
      load(cuEventElapsedTime, "cuEventElapsedTime");
    }
    if (!error.empty()) return;
    load(cuMemcpyDtoDAsync, "cuMemcpyDtoDAsync_v2");
    if (!error.empty()) return;
    auto optional = [&](auto& fn, const char* name) {
      fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(detail::sym(lib, name));
    };
    optional(cuStreamBeginCapture, "cuStreamBeginCapture_v2");
    optional(cuStreamEndCapture, "cuStreamEndCapture");
    optional(cuGraphInstantiateWithFlags, "cuGraphInstantiateWithFlags");
    optional(cuGraphExecUpdate, "cuGraphExecUpdate_v2");
    optional(cuGraphLaunch, "cuGraphLaunch");
    optional(cuGraphExecDestroy, "cuGraphExecDestroy");
    optional(cuGraphDestroy, "cuGraphDestroy");
    CUresult r = cuInit(0);
    if (r == CUDA_ERROR_STUB_LIBRARY)
      error = "cuInit returned CUDA_ERROR_STUB_LIBRARY (34): " + path +
              " is the CUDA toolkit's stub library, not a driver (no NVIDIA driver is installed)";
    else if (r == CUDA_ERROR_NO_DEVICE)
      error = "no CUDA-capable device (cuInit: " + describe(r) + ")";
    else if (r != CUDA_SUCCESS)
      error = "cuInit failed: " + describe(r);
    else
      cuDriverGetVersion(&version);
  }
};

/// NVRTC, loaded once. `error` says why it cannot be used ("" when it can).
struct Nvrtc {
  void* lib = nullptr;
  std::string path, error;
  int major = 0, minor = 0;
  std::vector<int> archs; // the architectures it compiles for (e.g. 75, 80, ..., 90, ...)
  using Program = struct _nvrtcProgram*;
  int (*nvrtcVersion)(int*, int*) = nullptr;
  const char* (*nvrtcGetErrorString)(int) = nullptr;
  int (*nvrtcCreateProgram)(Program*, const char*, const char*, int, const char* const*,
                            const char* const*) = nullptr;
  int (*nvrtcDestroyProgram)(Program*) = nullptr;
  int (*nvrtcCompileProgram)(Program, int, const char* const*) = nullptr;
  int (*nvrtcGetProgramLogSize)(Program, std::size_t*) = nullptr;
  int (*nvrtcGetProgramLog)(Program, char*) = nullptr;
  int (*nvrtcGetPTXSize)(Program, std::size_t*) = nullptr;
  int (*nvrtcGetPTX)(Program, char*) = nullptr;
  int (*nvrtcGetCUBINSize)(Program, std::size_t*) = nullptr;
  int (*nvrtcGetCUBIN)(Program, char*) = nullptr;
  int (*nvrtcGetNumSupportedArchs)(int*) = nullptr;
  int (*nvrtcGetSupportedArchs)(int*) = nullptr;

  static Nvrtc& get() {
    static Nvrtc n;
    return n;
  }

private:
  Nvrtc() {
    std::vector<std::string> candidates;
    if (std::string r = env::get("TG_NVRTC"); !r.empty())
      candidates.push_back(r);
    else {
      candidates = {"libnvrtc.so", "libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so.11.2"};
      for (const std::string& root : detail::toolkit_roots())
        for (const char* lib_dir : {"/lib64/", "/lib/", "/targets/x86_64-linux/lib/"})
          for (const char* n :
               {"libnvrtc.so", "libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so.11.2"})
            if (access((root + lib_dir + n).c_str(), R_OK) == 0)
              candidates.push_back(root + lib_dir + n);
    }
    std::string tried;
    lib = detail::open_first(candidates, path, tried);
    if (!lib) {
      error = "NVRTC not found (tried libnvrtc.so, .so.13, .so.12 on the library path and in " +
              std::string("CUDA_PATH, CUDA_HOME, /usr/local/cuda*; install the CUDA toolkit's "
                          "NVRTC or set TG_NVRTC)");
      return;
    }
    auto load = [&](auto& fn, const char* name) {
      fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(detail::sym(lib, name));
      if (!fn && error.empty()) error = path + " lacks " + name;
    };
    load(nvrtcVersion, "nvrtcVersion");
    load(nvrtcGetErrorString, "nvrtcGetErrorString");
    load(nvrtcCreateProgram, "nvrtcCreateProgram");
    load(nvrtcDestroyProgram, "nvrtcDestroyProgram");
    load(nvrtcCompileProgram, "nvrtcCompileProgram");
    load(nvrtcGetProgramLogSize, "nvrtcGetProgramLogSize");
    load(nvrtcGetProgramLog, "nvrtcGetProgramLog");
    load(nvrtcGetPTXSize, "nvrtcGetPTXSize");
    load(nvrtcGetPTX, "nvrtcGetPTX");
    load(nvrtcGetCUBINSize, "nvrtcGetCUBINSize");
    load(nvrtcGetCUBIN, "nvrtcGetCUBIN");
    load(nvrtcGetNumSupportedArchs, "nvrtcGetNumSupportedArchs");
    load(nvrtcGetSupportedArchs, "nvrtcGetSupportedArchs");
    if (!error.empty()) return;
    nvrtcVersion(&major, &minor);
    int n = 0;
    nvrtcGetNumSupportedArchs(&n);
    archs.resize(std::size_t(n));
    if (n) nvrtcGetSupportedArchs(archs.data());
  }
};

/// What NVRTC makes: a CUBIN for one architecture ("sm_90") or PTX ("compute_90").
struct Compiled {
  std::string binary, log;
  bool cubin = false;
};

/// The NVRTC options tg compiles with (no FMA contraction: results match the reference).
inline std::vector<std::string> nvrtc_options(const std::string& arch) {
  return {"--gpu-architecture=" + arch, "--std=c++17", "--fmad=false", "-default-device"};
}

/// Compiles CUDA source with NVRTC for `arch` ("sm_90": CUBIN, "compute_90": PTX), through the
/// disk cache. Throws compile_error with NVRTC's log when the source does not compile.
inline Compiled nvrtc_compile(const std::string& source, const std::string& name,
                              const std::string& arch) {
  Nvrtc& nv = Nvrtc::get();
  if (!nv.error.empty()) throw device_error("tg: CUDA: " + nv.error);
  Compiled out;
  out.cubin = arch.rfind("sm_", 0) == 0;
  std::vector<std::string> opts = nvrtc_options(arch);
  std::string meta = "nvrtc " + std::to_string(nv.major) + "." + std::to_string(nv.minor);
  for (const std::string& o : opts) meta += " " + o;
  std::string path = tg::detail::cache_path("cuda-" + tg::detail::cache_key(source, meta) +
                                            (out.cubin ? ".cubin" : ".ptx"));
  if (tg::detail::read_cached(path, out.binary)) {
    tg::detail::stats_storage().cache_hits++;
    return out;
  }
  Nvrtc::Program prog = nullptr;
  int r = nv.nvrtcCreateProgram(&prog, source.c_str(), (name + ".cu").c_str(), 0, nullptr, nullptr);
  if (r != 0)
    throw device_error(std::string("tg: nvrtcCreateProgram failed: ") + nv.nvrtcGetErrorString(r));
  std::vector<const char*> argv;
  for (const std::string& o : opts) argv.push_back(o.c_str());
  r = nv.nvrtcCompileProgram(prog, int(argv.size()), argv.data());
  tg::detail::stats_storage().kernels_compiled++;
  std::size_t n = 0;
  nv.nvrtcGetProgramLogSize(prog, &n);
  out.log.assign(n, '\0');
  if (n) nv.nvrtcGetProgramLog(prog, out.log.data());
  while (!out.log.empty() && (out.log.back() == '\0' || out.log.back() == '\n')) out.log.pop_back();
  if (r != 0) {
    nv.nvrtcDestroyProgram(&prog);
    throw compile_error("tg: kernel " + name + " failed to compile with NVRTC " +
                            std::to_string(nv.major) + "." + std::to_string(nv.minor) + " for " +
                            arch + " (" + nv.nvrtcGetErrorString(r) + "):\n" + out.log,
                        source, out.log);
  }
  n = 0;
  if (out.cubin)
    nv.nvrtcGetCUBINSize(prog, &n);
  else
    nv.nvrtcGetPTXSize(prog, &n);
  out.binary.assign(n, '\0');
  if (out.cubin)
    nv.nvrtcGetCUBIN(prog, out.binary.data());
  else
    nv.nvrtcGetPTX(prog, out.binary.data());
  nv.nvrtcDestroyProgram(&prog);
  if (!out.cubin)
    while (!out.binary.empty() && out.binary.back() == '\0') out.binary.pop_back();
  tg::detail::write_cached(path, out.binary);
  return out;
}

/// The CUDA source tg launches for a program lowered for Target::cuda(o).
inline std::string render(const Program& lowered, GpuOptions o = {}) {
  return std::string(finish_kernel(lowered, Target::cuda(o)).source.view());
}

class CudaDevice;

class CudaRunner : public Runner {
public:
  CudaRunner(CudaDevice* dev, CUmodule module, CUfunction fn, Program p)
      : dev_(dev), module_(module), fn_(fn), p_(std::move(p)) {}
  ~CudaRunner() override;
  void run(const std::vector<void*>& buffers, const std::vector<std::int64_t>& vars) override;

private:
  CudaDevice* dev_;
  CUmodule module_;
  CUfunction fn_;
  Program p_;
};

class CudaDevice : public Device {
public:
  explicit CudaDevice(int index) : index_(index) {
    Driver& d = Driver::get();
    if (!d.error.empty()) {
      reason_ = d.error;
      return;
    }
    int count = 0;
    d.cuDeviceGetCount(&count);
    if (index_ >= count) {
      reason_ = count == 0 ? "no CUDA-capable device"
                           : "no CUDA device " + std::to_string(index_) + " (there are " +
                                 std::to_string(count) + ")";
      return;
    }
    if (!Nvrtc::get().error.empty()) {
      reason_ = Nvrtc::get().error;
      return;
    }
    d.check(d.cuDeviceGet(&dev_, index_), "cuDeviceGet");
    char name[256] = {};
    d.cuDeviceGetName(name, sizeof name, dev_);
    gpu_name_ = name;
    auto attr = [&](int a) {
      int v = 0;
      d.cuDeviceGetAttribute(&v, a, dev_);
      return v;
    };
    cc_ = attr(ATTR_COMPUTE_CAPABILITY_MAJOR) * 10 + attr(ATTR_COMPUTE_CAPABILITY_MINOR);
    max_threads_ = attr(ATTR_MAX_THREADS_PER_BLOCK);
    max_grid_ = {attr(ATTR_MAX_GRID_DIM_X), attr(ATTR_MAX_GRID_DIM_Y), attr(ATTR_MAX_GRID_DIM_Z)};
    const auto& archs = Nvrtc::get().archs;
    if (std::find(archs.begin(), archs.end(), cc_) != archs.end())
      arch_ = "sm_" + std::to_string(cc_);
    else {
      int best = 0;
      for (int a : archs)
        if (a <= cc_ && a > best) best = a;
      if (!best) {
        reason_ = "NVRTC " + std::to_string(Nvrtc::get().major) + "." +
                  std::to_string(Nvrtc::get().minor) +
                  " cannot compile for this device's architecture sm_" + std::to_string(cc_);
        return;
      }
      arch_ = "compute_" + std::to_string(best); // PTX, JIT-compiled by the driver
    }
    d.check(d.cuDevicePrimaryCtxRetain(&ctx_, dev_), "cuDevicePrimaryCtxRetain");
    current();
    d.check(d.cuStreamCreate(&stream_, 0x1 /* non-blocking */), "cuStreamCreate");
    d.check(d.cuEventCreate(&done_, 0x2 /* no timing */), "cuEventCreate");
  }
  ~CudaDevice() override {
    if (!ctx_) return;
    Driver& d = Driver::get();
    current();
    if (stream_) d.cuStreamSynchronize(stream_);
    cache_.trim();
    if (done_) d.cuEventDestroy(done_);
    if (stream_) d.cuStreamDestroy(stream_);
    d.cuDevicePrimaryCtxRelease(dev_);
  }
  std::string name() const override {
    return index_ == 0 ? "CUDA" : "CUDA:" + std::to_string(index_);
  }
  std::string unavailable_reason() const override { return reason_; }
  /// The device ("NVIDIA H100 80GB HBM3, sm_90") and what NVRTC compiles for it.
  std::string description() const {
    return gpu_name_ + ", sm_" + std::to_string(cc_) + ", kernels as " + arch_;
  }
  const std::string& arch() const { return arch_; }
  /// The GPU's name and architecture: TG_BEAM's choices are cached per GPU.
  std::string model() const override { return "CUDA " + gpu_name_ + ", sm_" + std::to_string(cc_); }

  void* alloc(std::size_t bytes) override {
    std::lock_guard<std::mutex> g(m_);
    return cache_.alloc(bytes);
  }
  void free(void* ptr) override {
    std::lock_guard<std::mutex> g(m_);
    cache_.free(ptr); // cached: later work on the one stream runs after earlier readers
  }
  void copy_in(void* dst, const void* src, std::size_t bytes) override {
    Driver& d = Driver::get();
    current();
    d.check(d.cuMemcpyHtoDAsync(reinterpret_cast<CUdeviceptr>(dst), src, bytes, stream_),
            "cuMemcpyHtoDAsync");
    synchronize();
  }
  void copy_out(void* dst, const void* src, std::size_t bytes) override {
    Driver& d = Driver::get();
    current();
    d.check(d.cuMemcpyDtoHAsync(dst, reinterpret_cast<CUdeviceptr>(src), bytes, stream_),
            "cuMemcpyDtoHAsync");
    synchronize();
  }
  /// In the stream's order: no wait, and recorded into a graph like a kernel.
  void copy(void* dst, const void* src, std::size_t bytes) override {
    Driver& d = Driver::get();
    current();
    d.check(d.cuMemcpyDtoDAsync(reinterpret_cast<CUdeviceptr>(dst),
                                reinterpret_cast<CUdeviceptr>(src), bytes, stream_),
            "cuMemcpyDtoDAsync");
  }
  /// Waits for everything queued on the device's stream (an event recorded after it).
  void synchronize() {
    Driver& d = Driver::get();
    d.check(d.cuEventRecord(done_, stream_), "cuEventRecord");
    d.check(d.cuEventSynchronize(done_), "cuEventSynchronize");
  }

  Target target() const override {
    GpuOptions o = gpu_options(max_threads_);
    o.tensor_cores = o.tensor_cores && cc_ >= 80; // mma.sync m16n8k16 (sm_80)
    o.tf32 = o.tensor_cores && tg::detail::matmul_precision() > 0;
    o.shared_bytes = 48 * 1024;
    return with_env(Target::cuda(o));
  }

  std::vector<Rc<Runner>> prepare(const std::vector<const KernelCode*>& kernels) override {
    std::vector<const Program*> gpu; // (the kernels' own)
    std::vector<std::string> sources;
    for (const KernelCode* k : kernels) {
      gpu.push_back(&k->program);
      sources.push_back(std::string(k->source.view()));
    }
    std::vector<Compiled> bins = parallel_map(gpu.size(), [&](std::size_t i) {
      return nvrtc_compile(sources[i], std::string(gpu[i]->name.view()), arch_);
    });
    std::vector<Rc<Runner>> out;
    std::lock_guard<std::mutex> g(m_);
    current();
    Driver& d = Driver::get();
    for (std::size_t i = 0; i < gpu.size(); ++i) {
      CUmodule mod = nullptr;
      CUresult r = d.cuModuleLoadData(&mod, bins[i].binary.c_str());
      if (r != CUDA_SUCCESS)
        throw compile_error("tg: CUDA cannot load kernel " + std::string(gpu[i]->name.view()) +
                                ": " + d.describe(r),
                            sources[i], bins[i].log);
      CUfunction fn = nullptr;
      d.check(d.cuModuleGetFunction(&fn, mod, std::string(gpu[i]->name.view()).c_str()),
              "cuModuleGetFunction");
      auto runner = make_rc<CudaRunner>(this, mod, fn, *gpu[i]);
      runner->name = std::string(gpu[i]->name.view());
      runner->source = sources[i];
      runner->recordable = true;
      out.push_back(runner);
    }
    return out;
  }

  /// A CUDA graph of what `steps` queues on the device's stream (stream capture); nullptr where
  /// the driver has no graphs.
  Rc<LaunchGraph> record(tg::detail::FunctionRef<void()> steps) override;
  /// The graph of what `steps` queues on the stream, captured without running it.
  CUgraph capture(tg::detail::FunctionRef<void()> steps) {
    Driver& d = Driver::get();
    current();
    // THREAD_LOCAL: other threads' calls are not captured (nor refused while this one captures)
    d.check(d.cuStreamBeginCapture(stream_, 1), "cuStreamBeginCapture");
    CUgraph graph = nullptr;
    try {
      steps();
    } catch (...) {
      d.cuStreamEndCapture(stream_, &graph); // the stream leaves capture mode either way
      if (graph) d.cuGraphDestroy(graph);
      throw;
    }
    d.check(d.cuStreamEndCapture(stream_, &graph), "cuStreamEndCapture");
    return graph;
  }

  // for CudaRunner
  void current() const {
    if (ctx_) Driver::get().cuCtxSetCurrent(ctx_);
  }
  CUstream stream() const { return stream_; }
  std::array<std::int64_t, 3> max_grid() const { return max_grid_; }

private:
  int index_;
  std::string reason_, gpu_name_, arch_;
  CUdevice dev_ = 0;
  CUcontext ctx_ = nullptr;
  CUstream stream_ = nullptr;
  CUevent done_ = nullptr;
  int cc_ = 0, max_threads_ = 1024;
  std::array<std::int64_t, 3> max_grid_{2147483647, 65535, 65535};
  std::mutex m_;
  // Stream-ordered reuse: a freed block is handed out again without waiting, as later work on
  // the one stream runs after earlier readers; one that is really freed waits for them.
  AllocCache cache_{256,
                    [this](std::size_t n) {
                      current();
                      CUdeviceptr p = 0;
                      Driver::get().check(
                          Driver::get().cuMemAlloc(&p, n),
                          ("cuMemAlloc of " + std::to_string(n) + " bytes").c_str());
                      return reinterpret_cast<void*>(p);
                    },
                    [this](void* p) {
                      current();
                      synchronize();
                      Driver::get().cuMemFree(reinterpret_cast<CUdeviceptr>(p));
                    }};
};

/// A captured replay: one cuGraphLaunch runs every kernel and copy of it.
class CudaGraph : public LaunchGraph {
public:
  CudaGraph(CudaDevice* dev, CUgraphExec exec) : dev_(dev), exec_(exec) {}
  ~CudaGraph() override {
    dev_->current();
    Driver::get().cuGraphExecDestroy(exec_);
  }
  void launch() override {
    Driver& d = Driver::get();
    dev_->current();
    d.check(d.cuGraphLaunch(exec_, dev_->stream()), "cuGraphLaunch");
  }
  bool update(tg::detail::FunctionRef<void()> steps) override {
    Driver& d = Driver::get();
    if (!d.cuGraphExecUpdate) return false;
    CUgraph graph = dev_->capture(steps);
    CUgraphExecUpdateResultInfo info{};
    CUresult r = d.cuGraphExecUpdate(exec_, graph, &info);
    d.cuGraphDestroy(graph);
    return r == CUDA_SUCCESS;
  }

private:
  CudaDevice* dev_;
  CUgraphExec exec_;
};

inline Rc<LaunchGraph> CudaDevice::record(tg::detail::FunctionRef<void()> steps) {
  Driver& d = Driver::get();
  if (!d.graphs()) return nullptr;
  CUgraph graph = capture(steps);
  CUgraphExec exec = nullptr;
  CUresult r = d.cuGraphInstantiateWithFlags(&exec, graph, 0);
  d.cuGraphDestroy(graph);
  d.check(r, "cuGraphInstantiateWithFlags");
  return make_rc<CudaGraph>(this, exec);
}

inline CudaRunner::~CudaRunner() {
  if (module_) {
    dev_->current();
    Driver::get().cuModuleUnload(module_);
  }
}

inline void CudaRunner::run(const std::vector<void*>& buffers,
                            const std::vector<std::int64_t>& vars) {
  Driver& d = Driver::get();
  dev_->current();
  std::int64_t outer = eval_sint(p_.outer, p_.vars, vars);
  std::vector<CUdeviceptr> ptrs(p_.params.size(), 0);
  for (std::size_t i = 0; i < ptrs.size() && i < buffers.size(); ++i)
    ptrs[i] = reinterpret_cast<CUdeviceptr>(buffers[i]);
  long long base = 0, start = 0, end = outer;
  std::vector<long long> vs(vars.begin(), vars.end());
  std::vector<void*> args;
  for (CUdeviceptr& p : ptrs) args.push_back(&p);
  args.push_back(&base);
  args.push_back(&start);
  args.push_back(&end);
  for (long long& v : vs) args.push_back(&v);
  for (const GpuDispatch& g : gpu_dispatches(p_, outer, dev_->max_grid())) {
    base = g.base;
    d.check(d.cuLaunchKernel(fn_, unsigned(g.groups[0]), unsigned(g.groups[1]),
                             unsigned(g.groups[2]), unsigned(p_.local), 1, 1, 0, dev_->stream(),
                             args.data(), nullptr),
            ("cuLaunchKernel " + name).c_str());
  }
  if (env::debug() >= 1) dev_->synchronize(); // so TG_DEBUG's launch times are the kernel's
}

/// How many CUDA devices the driver reports (0 when there is no driver).
inline int device_count() {
  Driver& d = Driver::get();
  if (!d.error.empty()) return 0;
  int n = 0;
  d.cuDeviceGetCount(&n);
  return n;
}

} // namespace tg::cuda

namespace tg {
using cuda::CudaDevice;
} // namespace tg
