#pragma once
// The WebGPU device: programs shaped by gpu_program, narrowed to 32 bits and rendered as WGSL
// (codegen/render_wgsl.hpp), run through the webgpu.h C API of Dawn, which is opened with dlopen
// on first use: nothing links against it. The library is the one Debian-installable build of
// Dawn, the npm package bun-webgpu-linux-x64 (libwebgpu_wrapper.so, Dawn of May 2025), which
// tools/install-deps.sh puts under /usr/local/lib/tg-npm; TG_LIBWEBGPU names another. tg declares
// the part of the C API it uses itself (tg::webgpu::api below), for that library's ABI.
//
// Adapters: TG_WEBGPU_BACKEND=vulkan|opengles|opengl picks Dawn's backend; by default Vulkan is
// tried first, then OpenGL ES and OpenGL (at WebGPU's compatibility level, with
// EGL_PLATFORM=surfaceless unless set: stock Mesa's GL runs there, its lavapipe is too old for
// Dawn's Vulkan backend). Dawn's Null backend, which validates but never executes, is never used
// to compute.
//
// Memory: one storage buffer per tensor, its size rounded up to 4 bytes (narrow tensors are
// packed into 32-bit words; float16 is array<f16> where the adapter has shader-f16, which the
// device then requests). Launches are recorded into one command encoder and submitted when
// the host needs data (a copy); each launch gets a uniform buffer of its launch values. Limits
// read from the adapter and requested in full: work-groups per dimension (the grid spills into y,
// z and further dispatches), storage buffers per stage (the fuser cuts kernels to fit; one op
// that reads more is refused) and the largest binding (refused with the size), threads per
// work-group (gpu_program's work-group size). Compiled pipelines are kept in memory by source;
// what Dawn compiles from a shader is kept in tg's kernel cache on disk (Dawn's blob cache).
#include <dlfcn.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <thread>

#include "../codegen/render_wgsl.hpp"
#include "../util/rc.hpp"
#include "cache.hpp"
#include "host.hpp"
#include "launch.hpp"

namespace tg::webgpu {

/// The webgpu.h declarations tg uses, for the ABI of Dawn 29b45b55 (May 2025): handles, the
/// structs passed to the calls below (field order and widths as that header lays them out), and
/// the enum values used.
namespace api {
using Bool = std::uint32_t;
using Handle = void*;
struct StringView {
  const char* data = nullptr;
  std::size_t length = SIZE_MAX; // SIZE_MAX: null-terminated (or null)
  std::string str() const {
    if (!data) return {};
    return length == SIZE_MAX ? std::string(data) : std::string(data, length);
  }
};
inline StringView view(const std::string& s) { return {s.data(), s.size()}; }
struct ChainedStruct {
  const ChainedStruct* next = nullptr;
  std::uint32_t stype = 0;
};
struct Future {
  std::uint64_t id = 0;
};
constexpr std::uint32_t kCallbackAllowProcessEvents = 2;
constexpr std::uint32_t kSuccess = 1; // every async status's Success
constexpr std::uint32_t kBackendNull = 1, kBackendVulkan = 6, kBackendOpenGL = 7,
                        kBackendOpenGLES = 8;
constexpr std::uint32_t kFeatureLevelCompatibility = 1, kFeatureLevelCore = 2;
constexpr std::uint32_t kFeatureShaderF16 = 0xA;
constexpr std::uint32_t kSTypeShaderSourceWGSL = 2, kSTypeDawnCacheDeviceDescriptor = 0x00050007;
constexpr std::uint32_t kErrorFilterValidation = 1, kErrorTypeNoError = 1;
constexpr std::uint64_t kUsageMapRead = 1, kUsageCopySrc = 4, kUsageCopyDst = 8, kUsageUniform = 64,
                        kUsageStorage = 128, kMapRead = 1;

struct RequestAdapterOptions {
  const ChainedStruct* next = nullptr;
  std::uint32_t feature_level = 0;
  std::uint32_t power_preference = 0;
  Bool force_fallback_adapter = 0;
  std::uint32_t backend_type = 0;
  Handle compatible_surface = nullptr;
};
/// The callback info of an asynchronous call (a request, a map, a popped error scope).
template <class F> struct CallbackInfo {
  const ChainedStruct* next = nullptr;
  std::uint32_t mode = kCallbackAllowProcessEvents;
  F callback = nullptr;
  void* userdata1 = nullptr;
  void* userdata2 = nullptr;
};
using RequestAdapterCallback = void (*)(std::uint32_t status, Handle adapter, StringView message,
                                        void*, void*);
using RequestDeviceCallback = void (*)(std::uint32_t status, Handle device, StringView message,
                                       void*, void*);
using MapCallback = void (*)(std::uint32_t status, StringView message, void*, void*);
using PopErrorScopeCallback = void (*)(std::uint32_t status, std::uint32_t type, StringView message,
                                       void*, void*);
using DeviceLostCallback = void (*)(const Handle* device, std::uint32_t reason, StringView message,
                                    void*, void*);
using UncapturedErrorCallback = void (*)(const Handle* device, std::uint32_t type,
                                         StringView message, void*, void*);
struct UncapturedErrorCallbackInfo {
  const ChainedStruct* next = nullptr;
  UncapturedErrorCallback callback = nullptr;
  void* userdata1 = nullptr;
  void* userdata2 = nullptr;
};
struct Limits {
  const ChainedStruct* next = nullptr;
  std::uint32_t max_texture_dimension_1d, max_texture_dimension_2d, max_texture_dimension_3d,
      max_texture_array_layers, max_bind_groups, max_bind_groups_plus_vertex_buffers,
      max_bindings_per_bind_group, max_dynamic_uniform_buffers_per_pipeline_layout,
      max_dynamic_storage_buffers_per_pipeline_layout, max_sampled_textures_per_shader_stage,
      max_samplers_per_shader_stage, max_storage_buffers_per_shader_stage,
      max_storage_textures_per_shader_stage, max_uniform_buffers_per_shader_stage;
  std::uint64_t max_uniform_buffer_binding_size, max_storage_buffer_binding_size;
  std::uint32_t min_uniform_buffer_offset_alignment, min_storage_buffer_offset_alignment,
      max_vertex_buffers;
  std::uint64_t max_buffer_size;
  std::uint32_t max_vertex_attributes, max_vertex_buffer_array_stride,
      max_inter_stage_shader_variables, max_color_attachments,
      max_color_attachment_bytes_per_sample, max_compute_workgroup_storage_size,
      max_compute_invocations_per_workgroup, max_compute_workgroup_size_x,
      max_compute_workgroup_size_y, max_compute_workgroup_size_z,
      max_compute_workgroups_per_dimension, max_immediate_size, max_storage_buffers_in_vertex_stage,
      max_storage_textures_in_vertex_stage, max_storage_buffers_in_fragment_stage,
      max_storage_textures_in_fragment_stage;
};
struct AdapterInfo {
  const ChainedStruct* next = nullptr;
  StringView vendor, architecture, device, description;
  std::uint32_t backend_type = 0, adapter_type = 0, vendor_id = 0, device_id = 0,
                subgroup_min_size = 0, subgroup_max_size = 0;
};
struct QueueDescriptor {
  const ChainedStruct* next = nullptr;
  StringView label;
};
struct DeviceDescriptor {
  const ChainedStruct* next = nullptr;
  StringView label;
  std::size_t required_feature_count = 0;
  const std::uint32_t* required_features = nullptr;
  const Limits* required_limits = nullptr;
  QueueDescriptor default_queue;
  CallbackInfo<DeviceLostCallback> device_lost;
  UncapturedErrorCallbackInfo uncaptured_error;
};
/// Dawn's blob cache: it asks for (load) and hands over (store) what it compiled from each
/// shader and pipeline, by a key of its own.
struct DawnCacheDeviceDescriptor {
  ChainedStruct chain{nullptr, kSTypeDawnCacheDeviceDescriptor};
  StringView isolation_key;
  std::size_t (*load)(const void* key, std::size_t key_size, void* value, std::size_t value_size,
                      void* userdata) = nullptr;
  void (*store)(const void* key, std::size_t key_size, const void* value, std::size_t value_size,
                void* userdata) = nullptr;
  void* userdata = nullptr;
};
struct BufferDescriptor {
  const ChainedStruct* next = nullptr;
  StringView label;
  std::uint64_t usage = 0;
  std::uint64_t size = 0;
  Bool mapped_at_creation = 0;
};
struct ShaderSourceWGSL {
  ChainedStruct chain{nullptr, kSTypeShaderSourceWGSL};
  StringView code;
};
struct ShaderModuleDescriptor {
  const ChainedStruct* next = nullptr;
  StringView label;
};
struct ComputeState {
  const ChainedStruct* next = nullptr;
  Handle module = nullptr;
  StringView entry_point;
  std::size_t constant_count = 0;
  const void* constants = nullptr;
};
struct ComputePipelineDescriptor {
  const ChainedStruct* next = nullptr;
  StringView label;
  Handle layout = nullptr; // null: derived from the shader
  ComputeState compute;
};
struct BindGroupEntry {
  const ChainedStruct* next = nullptr;
  std::uint32_t binding = 0;
  Handle buffer = nullptr;
  std::uint64_t offset = 0;
  std::uint64_t size = UINT64_MAX; // the whole buffer
  Handle sampler = nullptr;
  Handle texture_view = nullptr;
};
struct BindGroupDescriptor {
  const ChainedStruct* next = nullptr;
  StringView label;
  Handle layout = nullptr;
  std::size_t entry_count = 0;
  const BindGroupEntry* entries = nullptr;
};
struct LabelDescriptor { // command encoder, command buffer and compute pass descriptors
  const ChainedStruct* next = nullptr;
  StringView label;
  const void* timestamp_writes = nullptr; // (compute pass only; null)
};

/// The functions, looked up by name in the library.
struct Functions {
  Handle (*CreateInstance)(const void*);
  Future (*InstanceRequestAdapter)(Handle, const RequestAdapterOptions*,
                                   CallbackInfo<RequestAdapterCallback>);
  void (*InstanceProcessEvents)(Handle);
  std::uint32_t (*AdapterGetLimits)(Handle, Limits*);
  std::uint32_t (*AdapterGetInfo)(Handle, AdapterInfo*);
  Bool (*AdapterHasFeature)(Handle, std::uint32_t);
  void (*AdapterInfoFreeMembers)(AdapterInfo);
  Future (*AdapterRequestDevice)(Handle, const DeviceDescriptor*,
                                 CallbackInfo<RequestDeviceCallback>);
  Handle (*DeviceGetQueue)(Handle);
  Handle (*DeviceCreateBuffer)(Handle, const BufferDescriptor*);
  Handle (*DeviceCreateShaderModule)(Handle, const ShaderModuleDescriptor*);
  Handle (*DeviceCreateComputePipeline)(Handle, const ComputePipelineDescriptor*);
  Handle (*DeviceCreateBindGroup)(Handle, const BindGroupDescriptor*);
  Handle (*DeviceCreateCommandEncoder)(Handle, const LabelDescriptor*);
  void (*DevicePushErrorScope)(Handle, std::uint32_t);
  Future (*DevicePopErrorScope)(Handle, CallbackInfo<PopErrorScopeCallback>);
  Handle (*ComputePipelineGetBindGroupLayout)(Handle, std::uint32_t);
  Handle (*CommandEncoderBeginComputePass)(Handle, const LabelDescriptor*);
  void (*CommandEncoderCopyBufferToBuffer)(Handle, Handle, std::uint64_t, Handle, std::uint64_t,
                                           std::uint64_t);
  Handle (*CommandEncoderFinish)(Handle, const LabelDescriptor*);
  void (*ComputePassEncoderSetPipeline)(Handle, Handle);
  void (*ComputePassEncoderSetBindGroup)(Handle, std::uint32_t, Handle, std::size_t,
                                         const std::uint32_t*);
  void (*ComputePassEncoderDispatchWorkgroups)(Handle, std::uint32_t, std::uint32_t, std::uint32_t);
  void (*ComputePassEncoderEnd)(Handle);
  void (*QueueSubmit)(Handle, std::size_t, const Handle*);
  void (*QueueWriteBuffer)(Handle, Handle, std::uint64_t, const void*, std::size_t);
  Future (*BufferMapAsync)(Handle, std::uint64_t, std::size_t, std::size_t,
                           CallbackInfo<MapCallback>);
  const void* (*BufferGetConstMappedRange)(Handle, std::size_t, std::size_t);
  void* (*BufferGetMappedRange)(Handle, std::size_t, std::size_t);
  void (*BufferUnmap)(Handle);
  void (*BufferRelease)(Handle);
  void (*BindGroupRelease)(Handle);
  void (*BindGroupLayoutRelease)(Handle);
  void (*CommandBufferRelease)(Handle);
  void (*CommandEncoderRelease)(Handle);
  void (*ComputePassEncoderRelease)(Handle);
  void (*ComputePipelineRelease)(Handle);
  void (*ShaderModuleRelease)(Handle);
};
} // namespace api

namespace detail {

/// The library, its functions and the instance, shared by every WEBGPU device.
struct Library {
  void* lib = nullptr;
  api::Functions f{};
  api::Handle instance = nullptr;
  std::string path, error;

  static Library& get() {
    static Library l;
    return l;
  }
  Library() {
    path = env::get("TG_LIBWEBGPU");
    if (path.empty())
      path = "/usr/local/lib/tg-npm/node_modules/bun-webgpu-linux-x64/libwebgpu_wrapper.so";
    lib = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
      error = "could not open Dawn's webgpu library " + path + " (" + dlerror() +
              "; tools/install-deps.sh installs it from npm, TG_LIBWEBGPU names another)";
      return;
    }
    auto load = [&](auto& fn, const char* name) {
      fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(
          dlsym(lib, (std::string("wgpu") + name).c_str()));
      if (!fn && error.empty()) error = path + " lacks wgpu" + name;
    };
#define TG_WGPU(name) load(f.name, #name)
    TG_WGPU(CreateInstance);
    TG_WGPU(InstanceRequestAdapter);
    TG_WGPU(InstanceProcessEvents);
    TG_WGPU(AdapterGetLimits);
    TG_WGPU(AdapterGetInfo);
    TG_WGPU(AdapterHasFeature);
    TG_WGPU(AdapterInfoFreeMembers);
    TG_WGPU(AdapterRequestDevice);
    TG_WGPU(DeviceGetQueue);
    TG_WGPU(DeviceCreateBuffer);
    TG_WGPU(DeviceCreateShaderModule);
    TG_WGPU(DeviceCreateComputePipeline);
    TG_WGPU(DeviceCreateBindGroup);
    TG_WGPU(DeviceCreateCommandEncoder);
    TG_WGPU(DevicePushErrorScope);
    TG_WGPU(DevicePopErrorScope);
    TG_WGPU(ComputePipelineGetBindGroupLayout);
    TG_WGPU(CommandEncoderBeginComputePass);
    TG_WGPU(CommandEncoderCopyBufferToBuffer);
    TG_WGPU(CommandEncoderFinish);
    TG_WGPU(ComputePassEncoderSetPipeline);
    TG_WGPU(ComputePassEncoderSetBindGroup);
    TG_WGPU(ComputePassEncoderDispatchWorkgroups);
    TG_WGPU(ComputePassEncoderEnd);
    TG_WGPU(QueueSubmit);
    TG_WGPU(QueueWriteBuffer);
    TG_WGPU(BufferMapAsync);
    TG_WGPU(BufferGetConstMappedRange);
    TG_WGPU(BufferGetMappedRange);
    TG_WGPU(BufferUnmap);
    TG_WGPU(BufferRelease);
    TG_WGPU(BindGroupRelease);
    TG_WGPU(BindGroupLayoutRelease);
    TG_WGPU(CommandBufferRelease);
    TG_WGPU(CommandEncoderRelease);
    TG_WGPU(ComputePassEncoderRelease);
    TG_WGPU(ComputePipelineRelease);
    TG_WGPU(ShaderModuleRelease);
#undef TG_WGPU
    if (!error.empty()) return;
    instance = f.CreateInstance(nullptr);
    if (!instance) error = "wgpuCreateInstance failed";
  }
  /// Runs the instance's events until `done` (an asynchronous call's callback has run).
  /// (Sleeping briefly between polls: on a CPU adapter a spinning host takes a core from it.)
  template <class Done> void wait(Done done) {
    for (f.InstanceProcessEvents(instance); !done(); f.InstanceProcessEvents(instance))
      std::this_thread::sleep_for(std::chrono::microseconds(20));
  }
};

/// What an asynchronous call's callback reports.
struct Reply {
  bool done = false;
  std::uint32_t status = 0, type = 0;
  api::Handle handle = nullptr;
  std::string message;
  /// The callbacks, by what they report (userdata1: the Reply).
  static void with_handle(std::uint32_t status, api::Handle h, api::StringView m, void* u, void*) {
    static_cast<Reply*>(u)->set(status, 0, h, m);
  }
  static void with_status(std::uint32_t status, api::StringView m, void* u, void*) {
    static_cast<Reply*>(u)->set(status, 0, nullptr, m);
  }
  static void with_type(std::uint32_t status, std::uint32_t type, api::StringView m, void* u,
                        void*) {
    static_cast<Reply*>(u)->set(status, type, nullptr, m);
  }
  void set(std::uint32_t s, std::uint32_t t, api::Handle h, api::StringView m) {
    status = s;
    type = t;
    handle = h;
    message = m.str();
    done = true;
  }
};

} // namespace detail

/// A tensor's storage: a storage buffer and its size in bytes (rounded up to 4).
struct Buf {
  api::Handle buffer = nullptr;
  std::uint64_t bytes = 0;
};

class WebGpuDevice;

class WebGpuRunner : public Runner {
public:
  WebGpuRunner(WebGpuDevice* dev, api::Handle pipeline, Program p)
      : dev_(dev), pipeline_(pipeline), p_(std::move(p)) {}
  void run(const std::vector<void*>& buffers, const std::vector<std::int64_t>& vars) override;

private:
  WebGpuDevice* dev_;
  api::Handle pipeline_;
  Program p_;
};

class WebGpuDevice : public Device {
public:
  WebGpuDevice() : lib_(detail::Library::get()) {
    if (!lib_.error.empty()) {
      error_ = lib_.error;
      return;
    }
    std::string want = env::get("TG_WEBGPU_BACKEND");
    std::vector<std::pair<std::string, std::uint32_t>> order = {{"vulkan", api::kBackendVulkan},
                                                                {"opengles", api::kBackendOpenGLES},
                                                                {"opengl", api::kBackendOpenGL}};
    if (!want.empty()) {
      auto it = std::find_if(order.begin(), order.end(), [&](auto& o) { return o.first == want; });
      if (it == order.end()) {
        error_ = "TG_WEBGPU_BACKEND=" + want + " is not one of vulkan, opengles, opengl";
        return;
      }
      order = {*it};
    }
    std::string tried;
    for (auto& [name, backend] : order) {
      const bool gl = backend != api::kBackendVulkan;
      if (gl) setenv("EGL_PLATFORM", "surfaceless", 0); // no display here
      api::RequestAdapterOptions o;
      o.backend_type = backend;
      o.feature_level = gl ? api::kFeatureLevelCompatibility : api::kFeatureLevelCore;
      detail::Reply r;
      api::CallbackInfo<api::RequestAdapterCallback> cb;
      cb.userdata1 = &r;
      cb.callback = detail::Reply::with_handle;
      lib_.f.InstanceRequestAdapter(lib_.instance, &o, cb);
      lib_.wait([&] { return r.done; });
      if (r.status == api::kSuccess && r.handle) {
        api::AdapterInfo info;
        if (lib_.f.AdapterGetInfo(r.handle, &info) == api::kSuccess) {
          if (info.backend_type == api::kBackendNull) { // validates, computes nothing
            lib_.f.AdapterInfoFreeMembers(info);
            tried += (tried.empty() ? "" : "; ") + name + ": only the Null adapter";
            continue;
          }
          description_ = info.device.str() + " (" + info.description.str() + "), Dawn " + name;
          lib_.f.AdapterInfoFreeMembers(info);
        }
        adapter_ = r.handle;
        backend_ = name;
        break;
      }
      tried += (tried.empty() ? "" : "; ") + name + ": " +
               (r.message.empty() ? "no adapter" : r.message);
    }
    if (!adapter_) {
      error_ = "Dawn found no adapter (" + tried + ")";
      return;
    }
    limits_.next = nullptr;
    if (lib_.f.AdapterGetLimits(adapter_, &limits_) != api::kSuccess) {
      error_ = "wgpuAdapterGetLimits failed";
      return;
    }
    // What Dawn compiles (translated shaders, pipelines) goes to tg's kernel cache, keyed by
    // Dawn's key and the adapter: a later process skips the translation.
    cache_meta_ = "dawn " + lib_.path + " " + description_;
    api::DawnCacheDeviceDescriptor cache;
    cache.isolation_key = {cache_meta_.data(), cache_meta_.size()};
    cache.userdata = &cache_meta_;
    cache.load = [](const void* key, std::size_t key_size, void* value, std::size_t value_size,
                    void* meta) -> std::size_t {
      std::string blob;
      if (!tg::detail::read_cached(cache_entry(key, key_size, meta), blob)) return 0;
      if (value && value_size >= blob.size()) std::memcpy(value, blob.data(), blob.size());
      return blob.size(); // (asked with no room first: the size)
    };
    cache.store = [](const void* key, std::size_t key_size, const void* value,
                     std::size_t value_size, void* meta) {
      tg::detail::write_cached(cache_entry(key, key_size, meta),
                               {static_cast<const char*>(value), value_size});
    };
    api::DeviceDescriptor dd;
    dd.next = &cache.chain;
    dd.required_limits = &limits_; // everything the adapter has (compatibility defaults are low)
    const std::uint32_t f16 = api::kFeatureShaderF16;
    f16_ = lib_.f.AdapterHasFeature(adapter_, f16) != 0;
    dd.required_feature_count = f16_ ? 1 : 0;
    dd.required_features = &f16;
    if (f16_) description_ += ", shader-f16";
    dd.uncaptured_error.userdata1 = this;
    dd.uncaptured_error.callback = [](const api::Handle*, std::uint32_t, api::StringView message,
                                      void* u, void*) {
      auto* self = static_cast<WebGpuDevice*>(u);
      std::lock_guard<std::mutex> g(self->errors_m_);
      self->errors_.push_back(message.str());
    };
    detail::Reply r;
    api::CallbackInfo<api::RequestDeviceCallback> cb;
    cb.userdata1 = &r;
    cb.callback = detail::Reply::with_handle;
    lib_.f.AdapterRequestDevice(adapter_, &dd, cb);
    lib_.wait([&] { return r.done; });
    if (r.status != api::kSuccess || !r.handle) {
      error_ = "Dawn could not create a device on " + description_ + ": " + r.message;
      return;
    }
    device_ = r.handle;
    queue_ = lib_.f.DeviceGetQueue(device_);
  }

  std::string name() const override { return "WEBGPU"; }
  std::string unavailable_reason() const override { return error_; }
  const std::string& description() const { return description_; }
  const std::string& backend() const { return backend_; }
  /// The adapter's limits, which the device requested in full (tests lower them to exercise
  /// the grid's spill and the refusals).
  api::Limits& limits() { return limits_; }
  /// Whether float16 tensors are array<f16> in kernels (the adapter has shader-f16; tests turn it
  /// off to run the packed words on the same adapter).
  bool& native_f16() { return f16_; }

  /// Kernels read at most maxStorageBuffersPerShaderStage - 1 tensors (the fuser cuts them).
  Target target() const override {
    Target t = with_env(
        Target::wgsl(gpu_options(int(limits_.max_compute_invocations_per_workgroup)), f16_));
    t.fuse.max_inputs =
        int(std::min<std::uint32_t>(limits_.max_storage_buffers_per_shader_stage - 1, 1u << 20));
    return t;
  }

  void* alloc(std::size_t bytes) override {
    require();
    const std::uint64_t size = (std::uint64_t(bytes) + 3) / 4 * 4;
    if (size > limits_.max_storage_buffer_binding_size || size > limits_.max_buffer_size)
      throw device_error("tg: WEBGPU (" + description_ + ") cannot hold a tensor of " +
                         std::to_string(bytes) + " bytes: its largest storage binding is " +
                         std::to_string(limits_.max_storage_buffer_binding_size) + " bytes");
    api::BufferDescriptor d;
    d.usage = api::kUsageStorage | api::kUsageCopySrc | api::kUsageCopyDst;
    d.size = size;
    auto* b = new Buf{lib_.f.DeviceCreateBuffer(device_, &d), size};
    if (!b->buffer) {
      delete b;
      throw device_error("tg: WEBGPU could not allocate " + std::to_string(size) + " bytes");
    }
    return b;
  }
  void free(void* p) override {
    auto* b = static_cast<Buf*>(p);
    lib_.f.BufferRelease(b->buffer); // (Dawn keeps it while recorded work uses it)
    delete b;
  }
  void copy_in(void* dst, const void* src, std::size_t bytes) override {
    std::lock_guard<std::mutex> g(m_);
    flush_locked(); // recorded launches read the buffer's old contents first
    const std::size_t rounded = (bytes + 3) / 4 * 4;
    if (rounded == bytes) {
      lib_.f.QueueWriteBuffer(queue_, static_cast<Buf*>(dst)->buffer, 0, src, bytes);
    } else {
      std::vector<unsigned char> padded(rounded, 0);
      std::memcpy(padded.data(), src, bytes);
      lib_.f.QueueWriteBuffer(queue_, static_cast<Buf*>(dst)->buffer, 0, padded.data(), rounded);
    }
    check_errors("writing a buffer");
  }
  void copy_out(void* dst, const void* src, std::size_t bytes) override {
    if (bytes == 0) return;
    std::lock_guard<std::mutex> g(m_);
    const std::uint64_t rounded = (std::uint64_t(bytes) + 3) / 4 * 4;
    api::BufferDescriptor d;
    d.usage = api::kUsageMapRead | api::kUsageCopyDst;
    d.size = rounded;
    api::Handle staging = lib_.f.DeviceCreateBuffer(device_, &d);
    encoder_locked();
    lib_.f.CommandEncoderCopyBufferToBuffer(encoder_, static_cast<const Buf*>(src)->buffer, 0,
                                            staging, 0, rounded);
    read_back_locked(staging, rounded, dst, bytes);
    lib_.f.BufferRelease(staging);
  }
  /// Submits what was recorded and waits until the device has run it (benchmarks time this): a
  /// word copied after it and read back.
  void synchronize() {
    std::lock_guard<std::mutex> g(m_);
    if (!sync_src_) {
      api::BufferDescriptor d;
      d.size = 4;
      d.usage = api::kUsageStorage | api::kUsageCopySrc;
      sync_src_ = lib_.f.DeviceCreateBuffer(device_, &d);
      d.usage = api::kUsageMapRead | api::kUsageCopyDst;
      sync_dst_ = lib_.f.DeviceCreateBuffer(device_, &d);
    }
    encoder_locked();
    lib_.f.CommandEncoderCopyBufferToBuffer(encoder_, sync_src_, 0, sync_dst_, 0, 4);
    std::uint32_t word = 0;
    read_back_locked(sync_dst_, 4, &word, 4);
  }
  void copy(void* dst, const void* src, std::size_t bytes) override {
    if (bytes == 0) return;
    std::lock_guard<std::mutex> g(m_);
    encoder_locked();
    lib_.f.CommandEncoderCopyBufferToBuffer(encoder_, static_cast<const Buf*>(src)->buffer, 0,
                                            static_cast<Buf*>(dst)->buffer, 0,
                                            (std::uint64_t(bytes) + 3) / 4 * 4);
  }

  /// Why a program cannot run here ("" if it can).
  std::string cannot_run(const Program& p) const {
    if (p.params.size() > limits_.max_storage_buffers_per_shader_stage)
      return "tg: WEBGPU (" + description_ + ") cannot run kernel " + std::string(p.name.view()) +
             ": it reads " + std::to_string(p.params.size() - std::size_t(p.outputs)) +
             " tensors and writes " + std::to_string(p.outputs) +
             ", and the device binds at most " +
             std::to_string(limits_.max_storage_buffers_per_shader_stage) +
             " storage buffers per shader stage (maxStorageBuffersPerShaderStage)";
    return "";
  }

  std::vector<Rc<Runner>> prepare(const std::vector<const KernelCode*>& kernels) override {
    require();
    std::vector<Rc<Runner>> out;
    for (const KernelCode* k : kernels) {
      if (std::string why = cannot_run(k->program); !why.empty()) throw device_error(why);
      std::string src(k->source.view());
      api::Handle pipe = pipeline(src, k->program);
      auto r = make_rc<WebGpuRunner>(this, pipe, k->program);
      r->name = std::string(k->program.name.view());
      r->source = src;
      out.push_back(r);
    }
    return out;
  }

  /// Records one launch (WebGpuRunner::run).
  void launch(api::Handle pipe, const Program& p, const std::vector<void*>& buffers,
              const std::vector<std::int64_t>& vars) {
    const std::int64_t outer = eval_sint(p.outer, p.vars, vars);
    const std::int64_t limit = limits_.max_compute_workgroups_per_dimension;
    std::vector<GpuDispatch> ds = gpu_dispatches(p, outer, {limit, limit, limit});
    if (ds.empty()) return;
    // narrow32's 32-bit index arithmetic: every size the kernel sees stays below 2^31
    std::int64_t largest = outer * p.items_per_outer + std::int64_t(p.local) * p.per_thread;
    for (std::int64_t v : vars) largest = std::max(largest, v);
    for (void* b : buffers) largest = std::max(largest, std::int64_t(static_cast<Buf*>(b)->bytes));
    if (largest >= (std::int64_t(1) << 31))
      throw device_error("tg: WEBGPU cannot run kernel " + std::string(p.name.view()) +
                         ": its sizes pass 2^31 and WGSL indexes with 32-bit integers");
    std::lock_guard<std::mutex> g(m_);
    encoder_locked();
    // A buffer bound twice (an update in place: a tg::assign whose value reads its target) is
    // an error in WebGPU when one binding is writable: the kernel reads a copy instead.
    std::vector<api::Handle> bound(buffers.size()), copies;
    for (std::size_t k = 0; k < buffers.size(); ++k) {
      const Buf* b = static_cast<Buf*>(buffers[k]);
      bound[k] = b->buffer;
      for (std::size_t j = 0; j < k; ++j)
        if (buffers[j] == buffers[k]) {
          api::BufferDescriptor d;
          d.usage = api::kUsageStorage | api::kUsageCopyDst;
          d.size = b->bytes;
          bound[k] = lib_.f.DeviceCreateBuffer(device_, &d);
          copies.push_back(bound[k]);
          lib_.f.CommandEncoderCopyBufferToBuffer(encoder_, b->buffer, 0, bound[k], 0, b->bytes);
          break;
        }
    }
    api::Handle layout = lib_.f.ComputePipelineGetBindGroupLayout(pipe, 0);
    const std::size_t words = (3 + vars.size() + 3) / 4 * 4;
    for (const GpuDispatch& x : ds) {
      // the launch values, in a uniform buffer of this dispatch's own
      api::BufferDescriptor ud;
      ud.usage = api::kUsageUniform;
      ud.size = 4 * words;
      ud.mapped_at_creation = 1;
      api::Handle uniform = lib_.f.DeviceCreateBuffer(device_, &ud);
      auto* pc = static_cast<std::int32_t*>(lib_.f.BufferGetMappedRange(uniform, 0, 4 * words));
      std::memset(pc, 0, 4 * words);
      pc[0] = std::int32_t(x.base);
      pc[1] = 0;
      pc[2] = std::int32_t(outer);
      for (std::size_t k = 0; k < vars.size(); ++k) pc[3 + k] = std::int32_t(vars[k]);
      lib_.f.BufferUnmap(uniform);
      std::vector<api::BindGroupEntry> entries(buffers.size() + 1);
      for (std::size_t k = 0; k < buffers.size(); ++k) {
        entries[k].binding = std::uint32_t(k);
        entries[k].buffer = bound[k];
      }
      entries.back().binding = std::uint32_t(buffers.size());
      entries.back().buffer = uniform;
      api::BindGroupDescriptor bd;
      bd.layout = layout;
      bd.entry_count = entries.size();
      bd.entries = entries.data();
      api::Handle group = lib_.f.DeviceCreateBindGroup(device_, &bd);
      api::LabelDescriptor none;
      api::Handle pass = lib_.f.CommandEncoderBeginComputePass(encoder_, &none);
      lib_.f.ComputePassEncoderSetPipeline(pass, pipe);
      lib_.f.ComputePassEncoderSetBindGroup(pass, 0, group, 0, nullptr);
      lib_.f.ComputePassEncoderDispatchWorkgroups(
          pass, std::uint32_t(x.groups[0]), std::uint32_t(x.groups[1]), std::uint32_t(x.groups[2]));
      lib_.f.ComputePassEncoderEnd(pass);
      lib_.f.ComputePassEncoderRelease(pass);
      lib_.f.BindGroupRelease(group);
      lib_.f.BufferRelease(uniform);
    }
    lib_.f.BindGroupLayoutRelease(layout);
    for (api::Handle c : copies) lib_.f.BufferRelease(c); // (Dawn keeps it while work uses it)
    if (++recorded_ >= 256 || env::debug() >= 1) flush_locked();
    check_errors(("launching " + std::string(p.name.view())).c_str());
  }

private:
  void require() const {
    if (!error_.empty()) throw device_error("tg: device WEBGPU is unavailable: " + error_);
  }
  void encoder_locked() {
    if (encoder_) return;
    api::LabelDescriptor none;
    encoder_ = lib_.f.DeviceCreateCommandEncoder(device_, &none);
  }
  void flush_locked() {
    if (!encoder_) return;
    api::LabelDescriptor none;
    api::Handle commands = lib_.f.CommandEncoderFinish(encoder_, &none);
    lib_.f.QueueSubmit(queue_, 1, &commands);
    lib_.f.CommandBufferRelease(commands);
    lib_.f.CommandEncoderRelease(encoder_);
    encoder_ = nullptr;
    recorded_ = 0;
  }
  /// Submits what was recorded, whose last command copies into `staging` (a MAP_READ buffer of
  /// `size` bytes), and copies its first `bytes` to dst once the device has run it.
  void read_back_locked(api::Handle staging, std::uint64_t size, void* dst, std::size_t bytes) {
    flush_locked();
    detail::Reply r;
    api::CallbackInfo<api::MapCallback> cb;
    cb.userdata1 = &r;
    cb.callback = detail::Reply::with_status;
    lib_.f.BufferMapAsync(staging, api::kMapRead, 0, std::size_t(size), cb);
    lib_.wait([&] { return r.done; });
    if (r.status == api::kSuccess) {
      std::memcpy(dst, lib_.f.BufferGetConstMappedRange(staging, 0, std::size_t(size)), bytes);
      lib_.f.BufferUnmap(staging);
    }
    check_errors("reading a buffer");
    if (r.status != api::kSuccess)
      throw device_error("tg: WEBGPU could not read a buffer back: " + r.message);
  }
  /// Throws Dawn's uncaptured errors since the last check.
  void check_errors(const char* what) {
    std::lock_guard<std::mutex> g(errors_m_);
    if (errors_.empty()) return;
    std::string all;
    for (const std::string& e : errors_) all += "\n" + e;
    errors_.clear();
    throw device_error(std::string("tg: WEBGPU error while ") + what + ":" + all);
  }
  /// The compute pipeline of a WGSL source, compiled once (Dawn's errors, with the line, thrown).
  api::Handle pipeline(const std::string& src, const Program& p) {
    std::lock_guard<std::mutex> g(m_);
    if (auto it = pipelines_.find(src); it != pipelines_.end()) {
      tg::detail::stats_storage().cache_hits++;
      return it->second;
    }
    lib_.f.DevicePushErrorScope(device_, api::kErrorFilterValidation);
    api::ShaderSourceWGSL wgsl;
    wgsl.code = api::view(src);
    api::ShaderModuleDescriptor md;
    md.next = &wgsl.chain;
    api::Handle module = lib_.f.DeviceCreateShaderModule(device_, &md);
    const std::string entry(p.name.view());
    api::ComputePipelineDescriptor cd;
    cd.compute.module = module;
    cd.compute.entry_point = api::view(entry);
    api::Handle pipe = lib_.f.DeviceCreateComputePipeline(device_, &cd);
    lib_.f.ShaderModuleRelease(module);
    detail::Reply r;
    api::CallbackInfo<api::PopErrorScopeCallback> cb;
    cb.userdata1 = &r;
    cb.callback = detail::Reply::with_type;
    lib_.f.DevicePopErrorScope(device_, cb);
    lib_.wait([&] { return r.done; });
    if (r.status != api::kSuccess || r.type != api::kErrorTypeNoError || !pipe) {
      if (pipe) lib_.f.ComputePipelineRelease(pipe);
      throw device_error("tg: WEBGPU: kernel " + entry + " failed to compile:\n" + r.message +
                         "\n--- WGSL ---\n" + src);
    }
    pipelines_[src] = pipe;
    return pipe;
  }

  detail::Library& lib_;
  std::string error_, description_, backend_, cache_meta_;
  /// The kernel-cache file of one of Dawn's blobs ("" when the disk cache is off).
  static std::string cache_entry(const void* key, std::size_t size, void* meta) {
    return tg::detail::cache_path("webgpu-" +
                                  tg::detail::cache_key({static_cast<const char*>(key), size},
                                                        *static_cast<std::string*>(meta)) +
                                  ".bin");
  }
  api::Handle adapter_ = nullptr, device_ = nullptr, queue_ = nullptr, encoder_ = nullptr;
  api::Handle sync_src_ = nullptr, sync_dst_ = nullptr; // (synchronize)
  api::Limits limits_{};
  int recorded_ = 0;
  bool f16_ = false;
  std::mutex m_, errors_m_;
  std::vector<std::string> errors_;
  std::map<std::string, api::Handle> pipelines_;
};

inline void WebGpuRunner::run(const std::vector<void*>& buffers,
                              const std::vector<std::int64_t>& vars) {
  dev_->launch(pipeline_, p_, buffers, vars);
}

} // namespace tg::webgpu
