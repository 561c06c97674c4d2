#pragma once
// The Vulkan device: programs shaped by gpu_program, rendered as GLSL compute shaders, compiled to
// SPIR-V at run time (glsl_compiler.hpp: the shaderc shared library when one can be loaded, else
// glslc or glslangValidator as a subprocess), cached on disk like every kernel, and dispatched
// through Vulkan-Hpp with the dynamic dispatch loader: nothing links against libvulkan, which is
// opened with dlopen on first use. Devices: "VULKAN" (= "VULKAN:0"), "VULKAN:1", ... in the order
// the loader lists the physical devices.
//
// This header includes <vulkan/vulkan.hpp> (about 2 s of compile time per translation unit), so
// tg.hpp never includes it: `#include <tg/vulkan.hpp>` in one source file registers the device.
//
// Memory: host-visible buffers, mapped once, where the device is a CPU (lavapipe) or integrated;
// device-local buffers with a staging buffer otherwise. Launches are recorded into one command
// buffer and submitted when the host needs the results (a copy, a free) or a batch fills.
// Limits respected: work-groups per dimension (the grid spills into y, z and further
// dispatches), threads per work-group, storage buffers per stage, push-constant size, and the
// largest storage-buffer range (128 MiB on lavapipe): a tensor larger than that is refused with
// a clear error. A dtype the device lacks (float64, 8- or 16-bit storage) is refused before
// compiling, naming the missing feature.
//
// Environment: TG_VULKAN_VALIDATION=1 enables VK_LAYER_KHRONOS_validation and turns every
// warning or error it reports into an exception; TG_GLSL_COMPILER=shaderc|glslc|glslangValidator
// picks the compiler; TG_LIBVULKAN and TG_SHADERC name the libraries; TG_GPU_LOCAL (threads per
// work-group) and TG_GPU_GROUP_REDUCE (0 or 1: never / always share reductions across a
// work-group) override gpu_program's choices.
#include <dlfcn.h>
#include <sys/stat.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <iostream>
#include <map>
#include <mutex>
#include <unordered_map>

#ifndef VK_NO_PROTOTYPES
#define VK_NO_PROTOTYPES
#endif
#ifndef VULKAN_HPP_DISPATCH_LOADER_DYNAMIC
#define VULKAN_HPP_DISPATCH_LOADER_DYNAMIC 1
#endif
#include <vulkan/vulkan.hpp>

#include "../codegen/render_glsl.hpp"
#include "../util/rc.hpp"
#include "alloc_cache.hpp"
#include "cache.hpp"
#include "glsl_compiler.hpp"
#include "host.hpp"
#include "launch.hpp"
#include "thread_pool.hpp"

namespace tg::vulkan {

namespace detail {

using tg::detail::cache_key;
using tg::detail::cache_path;
using tg::detail::read_cached;
using tg::detail::write_cached;

inline std::string hex(std::uint64_t v) { return tg::detail::hex64(v); }

/// Validation messages (warnings and errors) since the start; each device checks for new ones
/// after its Vulkan calls and throws.
struct Messages {
  std::mutex m;
  std::vector<std::string> all;
  std::atomic<std::size_t> count{0};
};
inline Messages& messages() {
  static Messages m;
  return m;
}

inline VKAPI_ATTR VkBool32 VKAPI_CALL on_message(VkDebugUtilsMessageSeverityFlagBitsEXT severity,
                                                 VkDebugUtilsMessageTypeFlagsEXT,
                                                 const VkDebugUtilsMessengerCallbackDataEXT* data,
                                                 void*) {
  std::string text =
      std::string(severity >= VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT ? "error: "
                                                                            : "warning: ") +
      (data && data->pMessage ? data->pMessage : "(no text)");
  std::cerr << "tg: Vulkan validation " << text << "\n";
  auto& m = messages();
  std::lock_guard<std::mutex> g(m.m);
  m.all.push_back(text);
  m.count = m.all.size();
  return VK_FALSE;
}

/// libvulkan and the instance, shared by every Vulkan device (kept alive by them).
struct Instance {
  void* lib = nullptr;
  vk::DispatchLoaderDynamic d;
  vk::Instance instance;
  VkDebugUtilsMessengerEXT messenger = VK_NULL_HANDLE;
  bool validation = false;
  std::vector<vk::PhysicalDevice> physical;
  std::string error;

  static Rc<Instance> get() {
    static std::mutex m;
    static Rc<Instance> inst;
    std::lock_guard<std::mutex> g(m);
    if (!inst) inst = make_rc<Instance>();
    return inst;
  }
  Instance() {
    std::string requested = env::get("TG_LIBVULKAN");
    for (const char* name : {"libvulkan.so.1", "libvulkan.so"}) {
      lib = dlopen(requested.empty() ? name : requested.c_str(), RTLD_NOW | RTLD_LOCAL);
      if (lib || !requested.empty()) break;
    }
    if (!lib) {
      error = "no Vulkan loader: could not open " +
              (requested.empty() ? std::string("libvulkan.so.1") : requested) +
              " (install libvulkan1 and a driver, e.g. mesa-vulkan-drivers for lavapipe)";
      return;
    }
    auto gipa = reinterpret_cast<PFN_vkGetInstanceProcAddr>(dlsym(lib, "vkGetInstanceProcAddr"));
    if (!gipa) {
      error = "the Vulkan loader lacks vkGetInstanceProcAddr";
      return;
    }
    d.init(gipa);
    try {
      std::uint32_t api = VK_API_VERSION_1_0;
      if (d.vkEnumerateInstanceVersion) api = vk::enumerateInstanceVersion(d);
      if (api < VK_API_VERSION_1_2) {
        error = "the Vulkan loader is older than 1.2";
        return;
      }
      std::vector<const char*> layers, exts;
      validation = env::get("TG_VULKAN_VALIDATION", "0") != "0";
      if (validation) {
        bool found = false;
        for (const auto& l : vk::enumerateInstanceLayerProperties(d))
          if (std::string_view(l.layerName.data()) == "VK_LAYER_KHRONOS_validation") found = true;
        if (!found) {
          error = "TG_VULKAN_VALIDATION is set but VK_LAYER_KHRONOS_validation is not installed "
                  "(vulkan-validationlayers)";
          return;
        }
        layers.push_back("VK_LAYER_KHRONOS_validation");
        exts.push_back(VK_EXT_DEBUG_UTILS_EXTENSION_NAME);
      }
      vk::ApplicationInfo app("tg", 1, "tg", 1, VK_API_VERSION_1_2);
      vk::InstanceCreateInfo info({}, &app, layers, exts);
      VkDebugUtilsMessengerCreateInfoEXT mi{};
      mi.sType = VK_STRUCTURE_TYPE_DEBUG_UTILS_MESSENGER_CREATE_INFO_EXT;
      mi.messageSeverity = VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT |
                           VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT;
      mi.messageType = VK_DEBUG_UTILS_MESSAGE_TYPE_GENERAL_BIT_EXT |
                       VK_DEBUG_UTILS_MESSAGE_TYPE_VALIDATION_BIT_EXT |
                       VK_DEBUG_UTILS_MESSAGE_TYPE_PERFORMANCE_BIT_EXT;
      mi.pfnUserCallback = on_message;
      if (validation) info.pNext = &mi; // also covers instance creation and destruction
      instance = vk::createInstance(info, nullptr, d);
      d.init(instance);
      if (validation) d.vkCreateDebugUtilsMessengerEXT(instance, &mi, nullptr, &messenger);
      physical = instance.enumeratePhysicalDevices(d);
    } catch (const std::exception& e) {
      error = std::string("cannot create a Vulkan instance: ") + e.what();
    }
  }
  ~Instance() {
    if (instance) {
      if (messenger) d.vkDestroyDebugUtilsMessengerEXT(instance, messenger, nullptr);
      instance.destroy(nullptr, d);
    }
  }
};

inline int env_int(const char* name, int fallback) { return env::get_int(name, fallback); }

} // namespace detail

/// Every validation message (warning or error) reported so far in this process.
inline std::vector<std::string> validation_messages() {
  auto& m = detail::messages();
  std::lock_guard<std::mutex> g(m.m);
  return m.all;
}

/// How many Vulkan physical devices the loader reports (0 when there is no loader).
inline int device_count() {
  auto inst = detail::Instance::get();
  return inst->error.empty() ? int(inst->physical.size()) : 0;
}

/// What a device offers tg (filled from its features and limits; tests may switch dtypes off).
struct Caps {
  bool int64 = false, float64 = false, int16 = false, int8 = false;
  bool subgroups = false; // subgroup arithmetic in compute shaders (used by work-group reductions)
  bool exact_float = false; // llvmpipe with float64: its fma, exp2 and log2 round differently
                            // from the CPU's (GlslExactFloat)
  std::int64_t max_storage_range = 0, max_buffers = 0, max_push = 0, max_local = 1;
  std::int64_t max_shared = 16384; // a work-group's shared memory (maxComputeSharedMemorySize)
  std::array<std::int64_t, 3> max_groups{65535, 65535, 65535};
};

class VulkanDevice;

/// A device buffer (Buffer::ptr points at one).
struct VkBuf {
  vk::Buffer buffer;
  vk::DeviceMemory memory;
  std::size_t size = 0;
  void* mapped = nullptr;
};

struct Pipeline {
  vk::ShaderModule module;
  vk::DescriptorSetLayout set_layout;
  vk::PipelineLayout layout;
  vk::Pipeline pipeline;
  std::uint32_t bindings = 0, push_bytes = 0;
};

class VulkanRunner : public Runner {
public:
  VulkanRunner(VulkanDevice* dev, Rc<Pipeline> pipe, Program p)
      : dev_(dev), pipe_(std::move(pipe)), p_(std::move(p)) {}
  void run(const std::vector<void*>& buffers, const std::vector<std::int64_t>& vars) override;
  const Program& program() const { return p_; }

private:
  VulkanDevice* dev_;
  Rc<Pipeline> pipe_;
  Program p_;
};

class VulkanDevice : public Device {
public:
  explicit VulkanDevice(int index) : index_(index), inst_(detail::Instance::get()) {
    if (!inst_->error.empty()) {
      reason_ = inst_->error;
      return;
    }
    if (index_ >= int(inst_->physical.size())) {
      reason_ = inst_->physical.empty()
                    ? "no Vulkan device (the loader found no driver; for a CPU device install "
                      "mesa-vulkan-drivers)"
                    : "no Vulkan device " + std::to_string(index_) + " (there are " +
                          std::to_string(inst_->physical.size()) + ")";
      return;
    }
    if (!detail::GlslCompiler::get().error.empty()) {
      reason_ = detail::GlslCompiler::get().error;
      return;
    }
    try {
      open();
    } catch (const std::exception& e) {
      reason_ = std::string("cannot open the Vulkan device: ") + e.what();
    }
  }
  ~VulkanDevice() override {
    if (!device_) return;
    try {
      flush();
    } catch (...) {
    }
    device_.waitIdle(d());
    save_pipeline_cache();
    cache_.trim(); // into pending_free_
    for (VkBuf* b : pending_free_) destroy(b);
    if (staging_) destroy(staging_);
    for (auto& [k, p] : pipelines_) destroy_pipeline(*p);
    device_.destroyPipelineCache(pipeline_cache_, nullptr, d());
    device_.destroyDescriptorPool(descriptor_pool_, nullptr, d());
    device_.destroyFence(fence_, nullptr, d());
    device_.destroyCommandPool(command_pool_, nullptr, d());
    device_.destroy(nullptr, d());
  }

  std::string name() const override {
    return index_ == 0 ? "VULKAN" : "VULKAN:" + std::to_string(index_);
  }
  std::string unavailable_reason() const override { return reason_; }
  /// "llvmpipe (LLVM 15.0.6, 256 bits), CPU, Vulkan 1.3, SPIR-V by shaderc"
  std::string description() const { return description_; }
  /// The GPU's name ("llvmpipe (LLVM 15.0.6, 256 bits)"): TG_BEAM's choices are cached per GPU.
  std::string model() const override { return "VULKAN " + device_name_; }
  Caps& caps() { return caps_; }
  bool host_visible() const { return host_visible_; }

  void* alloc(std::size_t bytes) override {
    std::lock_guard<std::mutex> g(m_);
    if (std::int64_t(bytes) > caps_.max_storage_range)
      throw device_error("tg: VULKAN (" + device_name_ + ") cannot hold a tensor of " +
                         std::to_string(bytes) +
                         " bytes: a kernel binds each tensor as one storage buffer, and this "
                         "device's maxStorageBufferRange is " +
                         std::to_string(caps_.max_storage_range) + " bytes");
    return cache_.alloc(bytes);
  }
  void free(void* p) override {
    std::lock_guard<std::mutex> g(m_);
    cache_.free(p); // cached: later commands run after earlier readers
  }
  void copy_in(void* dst, const void* src, std::size_t bytes) override {
    std::lock_guard<std::mutex> g(m_);
    flush_locked();
    VkBuf* b = static_cast<VkBuf*>(dst);
    if (b->mapped) {
      std::memcpy(b->mapped, src, bytes);
      return;
    }
    VkBuf* s = staging(bytes);
    std::memcpy(s->mapped, src, bytes);
    one_shot([&](vk::CommandBuffer c) {
      c.copyBuffer(s->buffer, b->buffer, vk::BufferCopy(0, 0, bytes), d());
    });
  }
  void copy_out(void* dst, const void* src, std::size_t bytes) override {
    std::lock_guard<std::mutex> g(m_);
    flush_locked();
    const VkBuf* b = static_cast<const VkBuf*>(src);
    if (b->mapped) {
      std::memcpy(dst, b->mapped, bytes);
      return;
    }
    VkBuf* s = staging(bytes);
    one_shot([&](vk::CommandBuffer c) {
      c.copyBuffer(b->buffer, s->buffer, vk::BufferCopy(0, 0, bytes), d());
    });
    std::memcpy(dst, s->mapped, bytes);
  }
  /// Submits what is recorded and waits for it.
  void flush() {
    std::lock_guard<std::mutex> g(m_);
    flush_locked();
  }

  Target target() const override {
    GpuOptions o = gpu_options(int(std::min<std::int64_t>(caps_.max_local, 1024)));
    o.shared_bytes = std::max<std::int64_t>(caps_.max_shared, 16384);
    Target t = with_env(Target::glsl(o, caps_.subgroups, caps_.exact_float));
    t.fuse.max_inputs = int(std::min<std::int64_t>(caps_.max_buffers - 1, 1 << 20));
    return t;
  }
  /// Why this device cannot run the program ("" when it can): checked before compiling.
  std::string cannot_run(const Program& gpu) const {
    GlslNeeds n = glsl_needs(gpu);
    std::string what = "tg: VULKAN (" + device_name_ + ") cannot run kernel " +
                       std::string(gpu.name.view()) + ": ";
    auto dtypes = [&](bool eight) {
      std::string s;
      for (const UOp& u : gpu.ops)
        if ((eight ? itemsize(u.dtype) == 1 : itemsize(u.dtype) == 2) &&
            s.find(dtype_name(u.dtype)) == std::string::npos)
          s += (s.empty() ? "" : ", ") + std::string(dtype_name(u.dtype));
      return s;
    };
    if (n.float64 && !caps_.float64)
      return what + "it uses float64 and the device lacks shaderFloat64";
    if (n.int16 && !caps_.int16)
      return what + "it uses 16-bit data (" + dtypes(false) +
             ") and the device lacks shaderInt16 or storageBuffer16BitAccess";
    if (n.int8 && !caps_.int8)
      return what + "it uses 8-bit data (" + dtypes(true) +
             ") and the device lacks shaderInt8 or storageBuffer8BitAccess";
    if (std::int64_t(gpu.params.size()) > caps_.max_buffers)
      return what + "it reads " + std::to_string(gpu.params.size() - std::size_t(gpu.outputs)) +
             " tensors and writes " + std::to_string(gpu.outputs) +
             ", and the device binds at most " + std::to_string(caps_.max_buffers) +
             " storage buffers per shader stage (maxPerStageDescriptorStorageBuffers)";
    if (std::int64_t(8 * (3 + gpu.vars.size())) > caps_.max_push)
      return what + "its " + std::to_string(gpu.vars.size()) + " symbolic sizes need " +
             std::to_string(8 * (3 + gpu.vars.size())) +
             " bytes of push constants and the device has " + std::to_string(caps_.max_push);
    return "";
  }

  std::vector<Rc<Runner>> prepare(const std::vector<const KernelCode*>& kernels) override {
    std::vector<const Program*> gpu; // (the kernels' own)
    std::vector<std::string> sources;
    for (const KernelCode* k : kernels) {
      gpu.push_back(&k->program);
      if (std::string why = cannot_run(*gpu.back()); !why.empty()) throw dtype_error(why);
      sources.push_back(std::string(k->source.view()));
    }
    std::vector<Rc<Pipeline>> pipes(gpu.size());
    std::vector<std::size_t> todo; // one per distinct new source
    {
      std::lock_guard<std::mutex> g(m_);
      for (std::size_t i = 0; i < gpu.size(); ++i) {
        auto it = pipelines_.find(sources[i]);
        bool dup = false;
        for (std::size_t j : todo) dup = dup || sources[j] == sources[i];
        if (it != pipelines_.end() || dup)
          tg::detail::stats_storage().cache_hits++;
        else
          todo.push_back(i);
      }
    }
    std::vector<std::string> glsl, names;
    for (std::size_t i : todo) {
      glsl.push_back(sources[i]);
      names.emplace_back(gpu[i]->name.view());
    }
    std::vector<std::string> spirv = detail::GlslCompiler::get().compile(glsl, names);
    // Pipeline creation (the driver's compile) runs in parallel, outside the lock: vkCreate* calls
    // need no external synchronization, and the pipeline cache is internally synchronized.
    // Pipelines that were created are kept even when another one failed.
    struct Built {
      Rc<Pipeline> pipe;
      std::exception_ptr error;
    };
    std::vector<Built> built = parallel_map(todo.size(), [&](std::size_t j) -> Built {
      try {
        return {make_pipeline(*gpu[todo[j]], spirv[j]), nullptr};
      } catch (...) {
        return {nullptr, std::current_exception()};
      }
    });
    std::lock_guard<std::mutex> g(m_);
    for (std::size_t k = 0; k < todo.size(); ++k)
      if (built[k].pipe) pipelines_[sources[todo[k]]] = built[k].pipe;
    if (!todo.empty()) save_pipeline_cache();
    for (const Built& b : built)
      if (b.error) std::rethrow_exception(b.error);
    for (std::size_t i = 0; i < gpu.size(); ++i) pipes[i] = pipelines_.at(sources[i]);
    check_messages("creating pipelines");
    std::vector<Rc<Runner>> out;
    for (std::size_t i = 0; i < gpu.size(); ++i) {
      auto r = make_rc<VulkanRunner>(this, pipes[i], *gpu[i]);
      r->name = std::string(gpu[i]->name.view());
      r->source = sources[i];
      out.push_back(r);
    }
    return out;
  }

  /// lavapipe (llvmpipe) ends a shader's outermost loop, inner loops included, after 65,535
  /// iterations without an error: a sum of 2^24 floats came out 16 times too small. A launch
  /// whose invocations would each run that many iterations is refused, not run wrong.
  void check_loop_limit(const Program& p, std::int64_t outer,
                        const std::vector<std::int64_t>& vars) const {
    if (device_name_.find("llvmpipe") == std::string::npos) return;
    std::int64_t invocations = outer * p.items_per_outer * (p.grouped ? p.local : 1) / p.per_thread;
    std::int64_t work = eval_sint(p.work, p.vars, vars);
    if (invocations <= 0 || work / invocations < 65535) return;
    throw device_error("tg: VULKAN (" + device_name_ + ") cannot run kernel " +
                       std::string(p.name.view()) + ": each invocation would loop about " +
                       std::to_string(work / invocations) +
                       " times, and llvmpipe stops a shader's loops after 65535 iterations "
                       "(its result would be wrong). Reduce in two steps (for example "
                       "x.reshape({k, -1}).sum(1).sum()), or use another device");
  }

  /// Records one launch (VulkanRunner::run).
  void launch(const Pipeline& pipe, const Program& p, const std::vector<void*>& buffers,
              const std::vector<std::int64_t>& vars) {
    std::int64_t outer = eval_sint(p.outer, p.vars, vars);
    std::vector<GpuDispatch> ds = gpu_dispatches(p, outer, caps_.max_groups);
    if (ds.empty()) return;
    check_loop_limit(p, outer, vars);
    std::lock_guard<std::mutex> g(m_);
    if (sets_used_ + 1 > kMaxSets || descriptors_used_ + pipe.bindings > kMaxDescriptors)
      flush_locked();
    begin();
    vk::DescriptorSetAllocateInfo ai(descriptor_pool_, 1, &pipe.set_layout);
    vk::DescriptorSet set = device_.allocateDescriptorSets(ai, d())[0];
    ++sets_used_;
    descriptors_used_ += pipe.bindings;
    std::vector<vk::DescriptorBufferInfo> infos;
    for (std::uint32_t k = 0; k < pipe.bindings; ++k) {
      const VkBuf* b = static_cast<const VkBuf*>(buffers[k]);
      infos.emplace_back(b->buffer, 0, VK_WHOLE_SIZE);
    }
    std::vector<vk::WriteDescriptorSet> writes;
    for (std::uint32_t k = 0; k < pipe.bindings; ++k)
      writes.emplace_back(set, k, 0, 1, vk::DescriptorType::eStorageBuffer, nullptr, &infos[k],
                          nullptr);
    device_.updateDescriptorSets(writes, {}, d());
    cmd_.bindPipeline(vk::PipelineBindPoint::eCompute, pipe.pipeline, d());
    cmd_.bindDescriptorSets(vk::PipelineBindPoint::eCompute, pipe.layout, 0, set, {}, d());
    std::vector<std::int64_t> pc(3 + vars.size());
    pc[1] = 0;
    pc[2] = outer;
    for (std::size_t k = 0; k < vars.size(); ++k) pc[3 + k] = vars[k];
    for (const GpuDispatch& x : ds) {
      pc[0] = x.base;
      cmd_.pushConstants(pipe.layout, vk::ShaderStageFlagBits::eCompute, 0, pipe.push_bytes,
                         pc.data(), d());
      cmd_.dispatch(std::uint32_t(x.groups[0]), std::uint32_t(x.groups[1]),
                    std::uint32_t(x.groups[2]), d());
    }
    vk::MemoryBarrier mb(vk::AccessFlagBits::eShaderWrite | vk::AccessFlagBits::eTransferWrite,
                         vk::AccessFlagBits::eShaderRead | vk::AccessFlagBits::eShaderWrite |
                             vk::AccessFlagBits::eTransferRead);
    cmd_.pipelineBarrier(
        vk::PipelineStageFlagBits::eComputeShader | vk::PipelineStageFlagBits::eTransfer,
        vk::PipelineStageFlagBits::eComputeShader | vk::PipelineStageFlagBits::eTransfer, {}, mb,
        {}, {}, d());
    if (env::debug() >= 1) flush_locked(); // so TG_DEBUG's launch times are the kernel's
  }

private:
  static constexpr std::uint32_t kMaxSets = 512, kMaxDescriptors = 8192;

  const vk::DispatchLoaderDynamic& d() const {
    return d_;
  } // the instance's, with this device's functions

  void open() {
    d_ = inst_->d;
    vk::PhysicalDevice pd = inst_->physical[std::size_t(index_)];
    physical_ = pd;
    vk::PhysicalDeviceProperties props = pd.getProperties(d());
    device_name_ = props.deviceName.data();
    if (props.apiVersion < VK_API_VERSION_1_2) {
      reason_ = device_name_ + " supports Vulkan " +
                std::to_string(VK_API_VERSION_MAJOR(props.apiVersion)) + "." +
                std::to_string(VK_API_VERSION_MINOR(props.apiVersion)) + "; tg needs 1.2";
      return;
    }
    auto chain = pd.getFeatures2<vk::PhysicalDeviceFeatures2, vk::PhysicalDeviceVulkan11Features,
                                 vk::PhysicalDeviceVulkan12Features>(d());
    const auto& f = chain.get<vk::PhysicalDeviceFeatures2>().features;
    const auto& f11 = chain.get<vk::PhysicalDeviceVulkan11Features>();
    const auto& f12 = chain.get<vk::PhysicalDeviceVulkan12Features>();
    if (!f.shaderInt64) {
      reason_ = device_name_ + " lacks shaderInt64 (tg's index arithmetic is 64-bit)";
      return;
    }
    caps_.int64 = true;
    caps_.float64 = f.shaderFloat64;
    // llvmpipe (Mesa 22.3) computes GLSL's fma() as a multiply and an add, even under `precise`,
    // and its pow a few ulp from glibc's
    caps_.exact_float = caps_.float64 && device_name_.find("llvmpipe") != std::string::npos;
    caps_.int16 = f.shaderInt16 && f11.storageBuffer16BitAccess;
    caps_.int8 = f12.shaderInt8 && f12.storageBuffer8BitAccess;
    {
      auto pc =
          pd.getProperties2<vk::PhysicalDeviceProperties2, vk::PhysicalDeviceVulkan11Properties>(
              d());
      const auto& p11 = pc.get<vk::PhysicalDeviceVulkan11Properties>();
      caps_.subgroups =
          (p11.subgroupSupportedStages & vk::ShaderStageFlagBits::eCompute) &&
          (p11.subgroupSupportedOperations & vk::SubgroupFeatureFlagBits::eBasic) &&
          (p11.subgroupSupportedOperations & vk::SubgroupFeatureFlagBits::eArithmetic) &&
          detail::env_int("TG_VULKAN_SUBGROUPS", 1) != 0;
    }
    const auto& lim = props.limits;
    caps_.max_storage_range = lim.maxStorageBufferRange;
    caps_.max_buffers = lim.maxPerStageDescriptorStorageBuffers;
    caps_.max_push = lim.maxPushConstantsSize;
    caps_.max_local =
        std::min<std::int64_t>(lim.maxComputeWorkGroupSize[0], lim.maxComputeWorkGroupInvocations);
    caps_.max_shared = lim.maxComputeSharedMemorySize;
    for (int k = 0; k < 3; ++k)
      caps_.max_groups[std::size_t(k)] = lim.maxComputeWorkGroupCount[std::size_t(k)];
    if (auto o = detail::env_int("TG_VULKAN_MAX_GROUPS", 0);
        o > 0) // testing the grid split on any device
      for (auto& m : caps_.max_groups) m = std::min<std::int64_t>(m, o);
    host_visible_ = props.deviceType == vk::PhysicalDeviceType::eCpu ||
                    props.deviceType == vk::PhysicalDeviceType::eIntegratedGpu;

    auto families = pd.getQueueFamilyProperties(d());
    std::uint32_t family = ~0u;
    for (std::uint32_t i = 0; i < families.size(); ++i)
      if (families[i].queueFlags & vk::QueueFlagBits::eCompute) {
        family = i;
        break;
      }
    if (family == ~0u) {
      reason_ = device_name_ + " has no compute queue";
      return;
    }
    vk::PhysicalDeviceFeatures2 want;
    want.features.shaderInt64 = VK_TRUE;
    want.features.shaderFloat64 = f.shaderFloat64;
    want.features.shaderInt16 = f.shaderInt16;
    want.features.robustBufferAccess =
        f.robustBufferAccess; // gated loads may compute an address past the end
    vk::PhysicalDeviceVulkan11Features want11;
    want11.storageBuffer16BitAccess = f11.storageBuffer16BitAccess;
    vk::PhysicalDeviceVulkan12Features want12;
    want12.storageBuffer8BitAccess = f12.storageBuffer8BitAccess;
    want12.shaderInt8 = f12.shaderInt8;
    want.pNext = &want11;
    want11.pNext = &want12;
    float priority = 1.0f;
    vk::DeviceQueueCreateInfo qi({}, family, 1, &priority);
    vk::DeviceCreateInfo di({}, qi, {}, {}, nullptr);
    di.pNext = &want;
    device_ = pd.createDevice(di, nullptr, d());
    d_.init(device_);
    queue_ = device_.getQueue(family, 0, d());
    command_pool_ = device_.createCommandPool(
        {vk::CommandPoolCreateFlagBits::eResetCommandBuffer, family}, nullptr, d());
    cmd_ = device_.allocateCommandBuffers({command_pool_, vk::CommandBufferLevel::ePrimary, 1},
                                          d())[0];
    fence_ = device_.createFence({}, nullptr, d());
    vk::DescriptorPoolSize size(vk::DescriptorType::eStorageBuffer, kMaxDescriptors);
    descriptor_pool_ = device_.createDescriptorPool({{}, kMaxSets, size}, nullptr, d());
    memory_ = pd.getMemoryProperties(d());
    // The pipeline cache, from disk (the driver checks that it belongs to this device and version).
    std::uint64_t uuid = fnv1a(std::string_view(
        reinterpret_cast<const char*>(props.pipelineCacheUUID.data()), VK_UUID_SIZE));
    pipeline_cache_file_ = detail::cache_path(
        "vulkan-" + detail::hex(std::uint64_t(props.vendorID) << 32 | props.deviceID) + "-" +
        detail::hex(uuid) + ".pipelines");
    std::string blob;
    detail::read_cached(pipeline_cache_file_, blob);
    pipeline_cache_ = device_.createPipelineCache({{}, blob.size(), blob.data()}, nullptr, d());
    const char* type = props.deviceType == vk::PhysicalDeviceType::eCpu ? "CPU"
                       : props.deviceType == vk::PhysicalDeviceType::eIntegratedGpu
                           ? "integrated GPU"
                       : props.deviceType == vk::PhysicalDeviceType::eDiscreteGpu ? "discrete GPU"
                                                                                  : "other";
    description_ =
        device_name_ + ", " + type + ", Vulkan " +
        std::to_string(VK_API_VERSION_MAJOR(props.apiVersion)) + "." +
        std::to_string(VK_API_VERSION_MINOR(props.apiVersion)) + ", SPIR-V by " +
        detail::GlslCompiler::get().kind +
        (detail::GlslCompiler::get().shaderc_error.empty()
             ? ""
             : " (shaderc did not load: " + detail::GlslCompiler::get().shaderc_error + ")") +
        (host_visible_ ? ", host-visible buffers" : ", device-local buffers + staging") +
        (caps_.subgroups ? ", subgroup reductions" : "") +
        (inst_->validation ? ", validation on" : "");
    check_messages("opening the device");
  }

  std::uint32_t memory_type(std::uint32_t bits, vk::MemoryPropertyFlags need,
                            vk::MemoryPropertyFlags prefer) const {
    for (int pass = 0; pass < 2; ++pass)
      for (std::uint32_t i = 0; i < memory_.memoryTypeCount; ++i) {
        auto flags = memory_.memoryTypes[i].propertyFlags;
        if (!(bits & (1u << i)) || (flags & need) != need) continue;
        if (pass == 0 && (flags & prefer) != prefer) continue;
        return i;
      }
    throw device_error("tg: VULKAN (" + device_name_ + ") has no suitable memory type");
  }
  VkBuf* create_buffer(std::size_t n, bool host) {
    auto* b = new VkBuf;
    b->size = n;
    try {
      b->buffer = device_.createBuffer({{},
                                        n,
                                        vk::BufferUsageFlagBits::eStorageBuffer |
                                            vk::BufferUsageFlagBits::eTransferSrc |
                                            vk::BufferUsageFlagBits::eTransferDst},
                                       nullptr, d());
      vk::MemoryRequirements req = device_.getBufferMemoryRequirements(b->buffer, d());
      std::uint32_t type =
          host ? memory_type(req.memoryTypeBits,
                             vk::MemoryPropertyFlagBits::eHostVisible |
                                 vk::MemoryPropertyFlagBits::eHostCoherent,
                             vk::MemoryPropertyFlagBits::eDeviceLocal)
               : memory_type(req.memoryTypeBits, vk::MemoryPropertyFlagBits::eDeviceLocal, {});
      b->memory = device_.allocateMemory({req.size, type}, nullptr, d());
      device_.bindBufferMemory(b->buffer, b->memory, 0, d());
      if (host) b->mapped = device_.mapMemory(b->memory, 0, VK_WHOLE_SIZE, {}, d());
    } catch (const std::exception& e) {
      destroy(b);
      throw device_error("tg: VULKAN (" + device_name_ + ") cannot allocate " + std::to_string(n) +
                         " bytes: " + e.what());
    }
    return b;
  }
  void destroy(VkBuf* b) {
    if (b->mapped) device_.unmapMemory(b->memory, d());
    if (b->buffer) device_.destroyBuffer(b->buffer, nullptr, d());
    if (b->memory) device_.freeMemory(b->memory, nullptr, d());
    delete b;
  }
  VkBuf* staging(std::size_t bytes) {
    if (staging_ && staging_->size >= bytes) return staging_;
    if (staging_) destroy(staging_);
    staging_ = nullptr;
    staging_ = create_buffer(std::max<std::size_t>((bytes + 15) / 16 * 16, 1 << 20), true);
    return staging_;
  }
  template <class F> void one_shot(F&& f) {
    begin();
    f(cmd_);
    flush_locked();
  }
  void begin() {
    if (recording_) return;
    cmd_.begin(vk::CommandBufferBeginInfo(vk::CommandBufferUsageFlagBits::eOneTimeSubmit), d());
    recording_ = true;
  }
  void flush_locked() {
    if (recording_) {
      cmd_.end(d());
      vk::SubmitInfo si({}, {}, cmd_, {});
      queue_.submit(si, fence_, d());
      vk::Result r = device_.waitForFences(fence_, VK_TRUE, ~std::uint64_t(0), d());
      if (r != vk::Result::eSuccess)
        throw device_error("tg: VULKAN: waiting for the queue failed: " + vk::to_string(r));
      device_.resetFences(fence_, d());
      cmd_.reset({}, d());
      recording_ = false;
      device_.resetDescriptorPool(descriptor_pool_, {}, d());
      sets_used_ = descriptors_used_ = 0;
    }
    for (VkBuf* b : pending_free_) destroy(b);
    pending_free_.clear();
    check_messages("running kernels");
  }
  void check_messages(const char* during) {
    auto& m = detail::messages();
    std::size_t n = m.count.load();
    if (n == seen_messages_) return;
    std::string text;
    {
      std::lock_guard<std::mutex> g(m.m);
      for (std::size_t i = seen_messages_; i < m.all.size(); ++i) text += "\n  " + m.all[i];
    }
    std::size_t fresh = n - seen_messages_;
    seen_messages_ = n;
    throw device_error("tg: VULKAN validation reported " + std::to_string(fresh) +
                       " message(s) while " + during + ":" + text);
  }
  Rc<Pipeline> make_pipeline(const Program& p, const std::string& spirv) {
    auto pipe = make_rc<Pipeline>();
    pipe->bindings = std::uint32_t(p.params.size());
    pipe->push_bytes = std::uint32_t(8 * (3 + p.vars.size()));
    std::vector<std::uint32_t> words(spirv.size() / 4);
    std::memcpy(words.data(), spirv.data(), words.size() * 4);
    pipe->module = device_.createShaderModule({{}, words.size() * 4, words.data()}, nullptr, d());
    std::vector<vk::DescriptorSetLayoutBinding> bindings;
    for (std::uint32_t k = 0; k < pipe->bindings; ++k)
      bindings.emplace_back(k, vk::DescriptorType::eStorageBuffer, 1,
                            vk::ShaderStageFlagBits::eCompute, nullptr);
    pipe->set_layout = device_.createDescriptorSetLayout({{}, bindings}, nullptr, d());
    vk::PushConstantRange range(vk::ShaderStageFlagBits::eCompute, 0, pipe->push_bytes);
    pipe->layout = device_.createPipelineLayout({{}, pipe->set_layout, range}, nullptr, d());
    vk::PipelineShaderStageCreateInfo stage({}, vk::ShaderStageFlagBits::eCompute, pipe->module,
                                            "main");
    vk::ComputePipelineCreateInfo ci({}, stage, pipe->layout);
    auto [r, pl] = device_.createComputePipeline(pipeline_cache_, ci, nullptr, d());
    if (r != vk::Result::eSuccess)
      throw device_error("tg: VULKAN: creating the pipeline of " + std::string(p.name.view()) +
                         " failed: " + vk::to_string(r));
    pipe->pipeline = pl;
    return pipe;
  }
  void destroy_pipeline(Pipeline& p) {
    device_.destroyPipeline(p.pipeline, nullptr, d());
    device_.destroyPipelineLayout(p.layout, nullptr, d());
    device_.destroyDescriptorSetLayout(p.set_layout, nullptr, d());
    device_.destroyShaderModule(p.module, nullptr, d());
    p = Pipeline{};
  }
  void save_pipeline_cache() {
    if (!pipeline_cache_ || pipeline_cache_file_.empty()) return;
    std::vector<std::uint8_t> data = device_.getPipelineCacheData(pipeline_cache_, d());
    detail::write_cached(pipeline_cache_file_,
                         std::string_view(reinterpret_cast<const char*>(data.data()), data.size()));
  }

  friend class VulkanRunner;
  int index_;
  Rc<detail::Instance> inst_;
  vk::DispatchLoaderDynamic d_;
  std::string reason_, device_name_, description_, pipeline_cache_file_;
  Caps caps_;
  bool host_visible_ = false, recording_ = false;
  vk::PhysicalDevice physical_;
  vk::PhysicalDeviceMemoryProperties memory_;
  vk::Device device_;
  vk::Queue queue_;
  vk::CommandPool command_pool_;
  vk::CommandBuffer cmd_;
  vk::Fence fence_;
  vk::DescriptorPool descriptor_pool_;
  vk::PipelineCache pipeline_cache_;
  std::uint32_t sets_used_ = 0, descriptors_used_ = 0;
  std::size_t seen_messages_ = 0;
  std::mutex m_;
  std::vector<VkBuf*> pending_free_; // destroyed after the commands that may use them
  AllocCache cache_{16, [this](std::size_t n) { return create_buffer(n, host_visible_); },
                    [this](void* b) { pending_free_.push_back(static_cast<VkBuf*>(b)); }};
  VkBuf* staging_ = nullptr;
  std::unordered_map<std::string, Rc<Pipeline>> pipelines_; // by GLSL source, for the device's life
};

inline void VulkanRunner::run(const std::vector<void*>& buffers,
                              const std::vector<std::int64_t>& vars) {
  dev_->launch(*pipe_, p_, buffers, vars);
}

} // namespace tg::vulkan

namespace tg {
using vulkan::VulkanDevice;
} // namespace tg
