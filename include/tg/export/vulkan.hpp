#pragma once
// The `vulkan` export target: the VULKAN device's kernels as GLSL compute shaders
// (<prefix>_k<N>.comp) and their SPIR-V (<prefix>_k<N>.spv, Vulkan 1.2), a manifest
// (<prefix>.json: the json target's document for the glsl dialect, naming each kernel's files),
// and a host in C++ over Vulkan-Hpp with the c target's C API (<prefix>.h, <prefix>.cpp, the
// SPIR-V embedded). The host opens the Vulkan loader (libvulkan.so.1) with dlopen, picks a
// device, checks its features and limits against what the kernels need, uploads the weights, and
// runs each method over buffers allocated once at the dims' upper bounds: inputs and outputs in
// host-visible memory, weights and intermediates in device-local memory.
#include "../runtime/glsl_compiler.hpp"
#include "c.hpp"
#include "json.hpp"

namespace tg {

namespace detail {

/// The part of the Vulkan host that is the same for every model (TG_MODEL: the model's type).
inline const char* vulkan_host = R"CPP(
struct TgBuffer {
  vk::Buffer buffer;
  vk::DeviceMemory memory;
  void* mapped = nullptr;
};
struct TgPipe {
  vk::ShaderModule module;
  vk::DescriptorSetLayout set_layout;
  vk::PipelineLayout layout;
  vk::Pipeline pipeline;
};

struct TG_MODEL {
  void* lib = nullptr;
  vk::DispatchLoaderDynamic d;
  vk::Instance instance;
  vk::PhysicalDevice physical;
  vk::PhysicalDeviceMemoryProperties memory;
  vk::Device device;
  vk::Queue queue;
  vk::CommandPool pool;
  vk::CommandBuffer cmd;
  vk::Fence fence;
  vk::DescriptorPool descriptors;
  std::string name;
  bool llvmpipe = false;
  std::uint32_t groups[3] = {1, 1, 1};
  TgPipe pipes[TG_KERNELS + 1];
  std::vector<TgBuffer> weights;
  std::vector<TgBuffer> buffers[TG_METHODS];       // inputs, outputs, temporaries
  std::vector<vk::DescriptorSet> sets[TG_METHODS]; // one per launch
  char error[256] = {0};
};

namespace {

std::uint32_t tg_memory_type(TG_MODEL* m, std::uint32_t bits, vk::MemoryPropertyFlags need,
                             vk::MemoryPropertyFlags prefer) {
  for (int pass = 0; pass < 2; ++pass)
    for (std::uint32_t i = 0; i < m->memory.memoryTypeCount; ++i) {
      const vk::MemoryPropertyFlags flags = m->memory.memoryTypes[i].propertyFlags;
      if (!(bits & (1u << i)) || (flags & need) != need) continue;
      if (pass == 0 && (flags & prefer) != prefer) continue;
      return i;
    }
  throw std::runtime_error(m->name + " has no suitable memory type");
}

/// A storage buffer of `bytes` (at least 4) appended to `into`: host-visible and mapped, or
/// device-local.
TgBuffer& tg_buffer(TG_MODEL* m, std::vector<TgBuffer>& into, long long bytes, bool host) {
  into.emplace_back();
  TgBuffer& b = into.back();
  b.buffer = m->device.createBuffer(
      {{},
       vk::DeviceSize(bytes < 4 ? 4 : (bytes + 3) / 4 * 4),
       vk::BufferUsageFlagBits::eStorageBuffer | vk::BufferUsageFlagBits::eTransferSrc |
           vk::BufferUsageFlagBits::eTransferDst},
      nullptr, m->d);
  const vk::MemoryRequirements req = m->device.getBufferMemoryRequirements(b.buffer, m->d);
  const std::uint32_t type =
      host ? tg_memory_type(m, req.memoryTypeBits,
                            vk::MemoryPropertyFlagBits::eHostVisible |
                                vk::MemoryPropertyFlagBits::eHostCoherent,
                            vk::MemoryPropertyFlagBits::eDeviceLocal)
           : tg_memory_type(m, req.memoryTypeBits, vk::MemoryPropertyFlagBits::eDeviceLocal, {});
  b.memory = m->device.allocateMemory({req.size, type}, nullptr, m->d);
  m->device.bindBufferMemory(b.buffer, b.memory, 0, m->d);
  if (host) b.mapped = m->device.mapMemory(b.memory, 0, VK_WHOLE_SIZE, {}, m->d);
  return b;
}

void tg_free(TG_MODEL* m, std::vector<TgBuffer>& buffers) {
  for (TgBuffer& b : buffers) {
    if (b.mapped) m->device.unmapMemory(b.memory, m->d);
    if (b.buffer) m->device.destroyBuffer(b.buffer, nullptr, m->d);
    if (b.memory) m->device.freeMemory(b.memory, nullptr, m->d);
  }
  buffers.clear();
}

void tg_submit(TG_MODEL* m) {
  m->cmd.end(m->d);
  m->queue.submit(vk::SubmitInfo({}, {}, m->cmd, {}), m->fence, m->d);
  const vk::Result r = m->device.waitForFences(m->fence, VK_TRUE, ~std::uint64_t(0), m->d);
  m->device.resetFences(m->fence, m->d);
  m->cmd.reset({}, m->d);
  if (r != vk::Result::eSuccess)
    throw std::runtime_error("waiting for the kernels failed: " + vk::to_string(r));
}

/// Opens device `index`: checks that it has what the kernels need, makes the pipelines.
void tg_open(TG_MODEL* m, int index) {
  m->lib = dlopen("libvulkan.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!m->lib)
    throw std::runtime_error("no Vulkan loader: could not open libvulkan.so.1 (install a Vulkan "
                             "driver and its loader)");
  auto get = reinterpret_cast<PFN_vkGetInstanceProcAddr>(dlsym(m->lib, "vkGetInstanceProcAddr"));
  if (!get) throw std::runtime_error("libvulkan.so.1 lacks vkGetInstanceProcAddr");
  m->d.init(get);
  vk::ApplicationInfo app("tg export", 1, "tg", 1, VK_API_VERSION_1_2);
  m->instance = vk::createInstance(vk::InstanceCreateInfo({}, &app), nullptr, m->d);
  m->d.init(m->instance);
  const std::vector<vk::PhysicalDevice> all = m->instance.enumeratePhysicalDevices(m->d);
  if (index < 0 || std::size_t(index) >= all.size())
    throw std::runtime_error("no Vulkan device " + std::to_string(index) + " (the system has " +
                             std::to_string(all.size()) + ")");
  m->physical = all[std::size_t(index)];
  const vk::PhysicalDeviceProperties props = m->physical.getProperties(m->d);
  m->name = props.deviceName.data();
  m->llvmpipe = m->name.find("llvmpipe") != std::string::npos;
  if (props.apiVersion < VK_API_VERSION_1_2)
    throw std::runtime_error(m->name + " has Vulkan " +
                             std::to_string(VK_API_VERSION_MAJOR(props.apiVersion)) + "." +
                             std::to_string(VK_API_VERSION_MINOR(props.apiVersion)) +
                             "; the kernels need 1.2");
  const auto chain =
      m->physical.getFeatures2<vk::PhysicalDeviceFeatures2, vk::PhysicalDeviceVulkan11Features,
                               vk::PhysicalDeviceVulkan12Features>(m->d);
  const vk::PhysicalDeviceFeatures& f = chain.get<vk::PhysicalDeviceFeatures2>().features;
  const auto& f11 = chain.get<vk::PhysicalDeviceVulkan11Features>();
  const auto& f12 = chain.get<vk::PhysicalDeviceVulkan12Features>();
  auto need = [&](bool has, const char* what) {
    if (!has) throw std::runtime_error(m->name + " lacks " + what + ", which the kernels use");
  };
  need(f.shaderInt64, "shaderInt64");
  if (TG_NEEDS_INT8) need(f12.shaderInt8 && f12.storageBuffer8BitAccess, "8-bit storage");
  if (TG_NEEDS_INT16) need(f.shaderInt16 && f11.storageBuffer16BitAccess, "16-bit storage");
  if (TG_NEEDS_FLOAT64) need(f.shaderFloat64, "shaderFloat64");
  const vk::PhysicalDeviceLimits& lim = props.limits;
  auto limit = [&](long long has, long long want, const char* what) {
    if (has < want)
      throw std::runtime_error(m->name + "'s " + what + " is " + std::to_string(has) +
                               "; the model needs " + std::to_string(want));
  };
  limit(lim.maxComputeWorkGroupInvocations, TG_LOCAL, "maxComputeWorkGroupInvocations");
  limit(lim.maxComputeWorkGroupSize[0], TG_LOCAL, "maxComputeWorkGroupSize[0]");
  limit(lim.maxPerStageDescriptorStorageBuffers, TG_MAX_BINDINGS,
        "maxPerStageDescriptorStorageBuffers");
  limit(lim.maxPushConstantsSize, 8 * (3 + TG_MAX_VARS), "maxPushConstantsSize");
  limit(lim.maxStorageBufferRange, TG_LARGEST, "maxStorageBufferRange");
  for (int k = 0; k < 3; ++k) m->groups[k] = lim.maxComputeWorkGroupCount[k];
  const std::vector<vk::QueueFamilyProperties> families = m->physical.getQueueFamilyProperties(m->d);
  std::uint32_t family = ~0u;
  for (std::uint32_t i = 0; i < families.size() && family == ~0u; ++i)
    if (families[i].queueFlags & vk::QueueFlagBits::eCompute) family = i;
  if (family == ~0u) throw std::runtime_error(m->name + " has no compute queue");
  vk::PhysicalDeviceFeatures2 want;
  want.features.shaderInt64 = VK_TRUE;
  want.features.shaderInt16 = TG_NEEDS_INT16;
  want.features.shaderFloat64 = TG_NEEDS_FLOAT64;
  want.features.robustBufferAccess = f.robustBufferAccess; // (a masked load may compute an
                                                           // address past the end)
  vk::PhysicalDeviceVulkan11Features want11;
  want11.storageBuffer16BitAccess = TG_NEEDS_INT16;
  vk::PhysicalDeviceVulkan12Features want12;
  want12.shaderInt8 = want12.storageBuffer8BitAccess = TG_NEEDS_INT8;
  want.pNext = &want11;
  want11.pNext = &want12;
  const float priority = 1.0f;
  vk::DeviceQueueCreateInfo queue({}, family, 1, &priority);
  vk::DeviceCreateInfo info({}, queue, {}, {}, nullptr);
  info.pNext = &want;
  m->device = m->physical.createDevice(info, nullptr, m->d);
  m->d.init(m->device);
  m->queue = m->device.getQueue(family, 0, m->d);
  m->memory = m->physical.getMemoryProperties(m->d);
  m->pool = m->device.createCommandPool(
      {vk::CommandPoolCreateFlagBits::eResetCommandBuffer, family}, nullptr, m->d);
  m->cmd =
      m->device.allocateCommandBuffers({m->pool, vk::CommandBufferLevel::ePrimary, 1}, m->d)[0];
  m->fence = m->device.createFence({}, nullptr, m->d);
  for (int k = 0; k < TG_KERNELS; ++k) {
    const TgKernelInfo& info = tg_kernels[k];
    TgPipe& p = m->pipes[k];
    p.module = m->device.createShaderModule({{}, info.bytes, info.spirv}, nullptr, m->d);
    std::vector<vk::DescriptorSetLayoutBinding> bindings;
    for (std::uint32_t b = 0; b < info.buffers; ++b)
      bindings.emplace_back(b, vk::DescriptorType::eStorageBuffer, 1,
                            vk::ShaderStageFlagBits::eCompute, nullptr);
    p.set_layout = m->device.createDescriptorSetLayout({{}, bindings}, nullptr, m->d);
    vk::PushConstantRange range(vk::ShaderStageFlagBits::eCompute, 0, 8 * (3 + info.vars));
    p.layout = m->device.createPipelineLayout({{}, p.set_layout, range}, nullptr, m->d);
    vk::PipelineShaderStageCreateInfo stage({}, vk::ShaderStageFlagBits::eCompute, p.module,
                                            "main");
    auto made = m->device.createComputePipeline(nullptr, {{}, stage, p.layout}, nullptr, m->d);
    if (made.result != vk::Result::eSuccess)
      throw std::runtime_error("creating the pipeline of kernel " + std::to_string(k) +
                               " failed: " + vk::to_string(made.result));
    p.pipeline = made.value;
  }
}

/// Copies the weights into device-local buffers, through one host-visible staging buffer.
void tg_upload(TG_MODEL* m, void** host) {
  long long total = 0;
  for (int k = 0; k < TG_WEIGHTS; ++k) total += (long long)((tg_weights[k].bytes + 3) / 4 * 4);
  std::vector<TgBuffer> staging;
  try {
    unsigned char* at = (unsigned char*)tg_buffer(m, staging, total, true).mapped;
    m->cmd.begin(vk::CommandBufferBeginInfo(vk::CommandBufferUsageFlagBits::eOneTimeSubmit), m->d);
    vk::DeviceSize offset = 0;
    for (int k = 0; k < TG_WEIGHTS; ++k) {
      const vk::DeviceSize bytes = tg_weights[k].bytes;
      TgBuffer& w = tg_buffer(m, m->weights, (long long)bytes, false);
      if (bytes == 0) continue;
      std::memcpy(at + offset, host[k], bytes);
      m->cmd.copyBuffer(staging[0].buffer, w.buffer, vk::BufferCopy(offset, 0, bytes), m->d);
      offset += (bytes + 3) / 4 * 4;
    }
    tg_submit(m);
  } catch (...) {
    tg_free(m, staging);
    throw;
  }
  tg_free(m, staging);
}

/// Each method's buffers, and the descriptor set of each of its launches.
void tg_bind(TG_MODEL* m) {
  std::uint32_t sets = 0, descriptors = 0;
  for (int mi = 0; mi < TG_METHODS; ++mi)
    for (int l = 0; l < tg_methods[mi].launches; ++l) {
      ++sets;
      descriptors += std::uint32_t(tg_methods[mi].launch[l].count);
    }
  vk::DescriptorPoolSize size(vk::DescriptorType::eStorageBuffer, descriptors ? descriptors : 1);
  m->descriptors = m->device.createDescriptorPool({{}, sets ? sets : 1, size}, nullptr, m->d);
  for (int mi = 0; mi < TG_METHODS; ++mi) {
    const TgMethodInfo& method = tg_methods[mi];
    const int io = method.inputs + method.outputs;
    for (int b = 0; b < io + method.temps; ++b)
      tg_buffer(m, m->buffers[mi], method.bytes[b], b < io);
    for (int l = 0; l < method.launches; ++l) {
      const TgLaunchInfo& launch = method.launch[l];
      const vk::DescriptorSetLayout layout = m->pipes[launch.kernel].set_layout;
      const vk::DescriptorSet set =
          m->device.allocateDescriptorSets({m->descriptors, 1, &layout}, m->d)[0];
      m->sets[mi].push_back(set);
      std::vector<vk::DescriptorBufferInfo> infos;
      for (int b = 0; b < launch.count; ++b) {
        const TgRef r = launch.refs[b];
        const TgBuffer& buffer =
            r.kind == 2 ? m->weights[std::size_t(r.index)]
                        : m->buffers[mi][std::size_t(r.index + (r.kind == 0   ? 0
                                                                 : r.kind == 1 ? method.inputs
                                                                               : io))];
        infos.emplace_back(buffer.buffer, 0, VK_WHOLE_SIZE);
      }
      std::vector<vk::WriteDescriptorSet> writes;
      for (std::uint32_t b = 0; b < infos.size(); ++b)
        writes.emplace_back(set, b, 0, 1, vk::DescriptorType::eStorageBuffer, nullptr, &infos[b],
                            nullptr);
      m->device.updateDescriptorSets(writes, {}, m->d);
    }
  }
}

TG_MODEL* tg_create(int device, const void* bytes, std::size_t size, char* error,
                    std::size_t error_size) {
  char scratch[256];
  if (!error) {
    error = scratch;
    error_size = sizeof scratch;
  }
  TG_MODEL* m = new (std::nothrow) TG_MODEL();
  void* host[TG_WEIGHTS + 1] = {0};
  if (!m) {
    std::snprintf(error, error_size, "out of memory");
    return nullptr;
  }
  try {
    tg_open(m, device);
    if (tg_load_weights((const unsigned char*)bytes, size, tg_weights, TG_WEIGHTS, host, error,
                        error_size) == 0) {
      tg_upload(m, host);
      tg_bind(m);
      for (void* w : host) std::free(w);
      return m;
    }
  } catch (const std::exception& e) {
    std::snprintf(error, error_size, "%s%s%s", m->name.c_str(), m->name.empty() ? "" : ": ",
                  e.what());
  }
  for (void* w : host) std::free(w);
  TG_DESTROY(m);
  return nullptr;
}

/// Records launch `l` of method `mi` (skipped where its output is empty): the work-groups that
/// cover its items, within the device's limits (tg's gpu_dispatches).
void tg_launch(TG_MODEL* m, int mi, int l, long long numel, long long outer, long long work,
               std::initializer_list<long long> vars) {
  if (numel <= 0) return;
  const TgLaunchInfo& launch = tg_methods[mi].launch[l];
  const TgKernelInfo& k = tg_kernels[launch.kernel];
  const long long per_group = k.grouped ? 1 : (long long)k.local * k.per_thread;
  const long long groups = (outer * k.items_per_outer + per_group - 1) / per_group;
  const long long invocations = outer * k.items_per_outer * (k.grouped ? k.local : 1) / k.per_thread;
  if (m->llvmpipe && invocations > 0 && work / invocations >= 65535)
    throw std::runtime_error("llvmpipe stops a shader's loops after 65535 iterations, and kernel " +
                             std::to_string(launch.kernel) + " would loop about " +
                             std::to_string(work / invocations) +
                             " times (its result would be wrong): use another device");
  const TgPipe& p = m->pipes[launch.kernel];
  m->cmd.bindPipeline(vk::PipelineBindPoint::eCompute, p.pipeline, m->d);
  m->cmd.bindDescriptorSets(vk::PipelineBindPoint::eCompute, p.layout, 0, m->sets[mi][std::size_t(l)],
                            {}, m->d);
  long long pc[3 + TG_MAX_VARS] = {0, 0, outer};
  int at = 3;
  for (long long v : vars) pc[at++] = v;
  for (long long first = 0; first < groups;) {
    const long long left = groups - first;
    const long long x = std::min<long long>(left, m->groups[0]);
    const long long y = std::min<long long>((left + x - 1) / x, m->groups[1]);
    const long long z = std::min<long long>((left + x * y - 1) / (x * y), m->groups[2]);
    pc[0] = first * per_group;
    m->cmd.pushConstants(p.layout, vk::ShaderStageFlagBits::eCompute, 0, 8 * (3 + k.vars), pc,
                         m->d);
    m->cmd.dispatch(std::uint32_t(x), std::uint32_t(y), std::uint32_t(z), m->d);
    first += x * y * z;
  }
  const vk::MemoryBarrier after(vk::AccessFlagBits::eShaderWrite,
                                vk::AccessFlagBits::eShaderRead | vk::AccessFlagBits::eShaderWrite |
                                    vk::AccessFlagBits::eHostRead);
  m->cmd.pipelineBarrier(vk::PipelineStageFlagBits::eComputeShader,
                         vk::PipelineStageFlagBits::eComputeShader |
                             vk::PipelineStageFlagBits::eHost,
                         {}, after, {}, {}, m->d);
}

/// Records method mi's state updates: its new values copied into the weights, after every launch
/// has read the old ones.
void tg_update(TG_MODEL* m, int mi) {
  const TgMethodInfo& method = tg_methods[mi];
  if (method.updates == 0) return;
  const vk::MemoryBarrier before(vk::AccessFlagBits::eShaderRead | vk::AccessFlagBits::eShaderWrite,
                                 vk::AccessFlagBits::eTransferRead |
                                     vk::AccessFlagBits::eTransferWrite);
  m->cmd.pipelineBarrier(vk::PipelineStageFlagBits::eComputeShader,
                         vk::PipelineStageFlagBits::eTransfer, {}, before, {}, {}, m->d);
  for (int u = 0; u < method.updates; ++u) {
    const TgUpdateInfo& x = method.update[u];
    const TgBuffer& from = m->buffers[mi][std::size_t(method.inputs + method.outputs + x.temp)];
    m->cmd.copyBuffer(from.buffer, m->weights[std::size_t(x.weight)].buffer,
                      vk::BufferCopy(0, 0, vk::DeviceSize(x.bytes)), m->d);
  }
  const vk::MemoryBarrier after(vk::AccessFlagBits::eTransferWrite,
                                vk::AccessFlagBits::eShaderRead);
  m->cmd.pipelineBarrier(vk::PipelineStageFlagBits::eTransfer,
                         vk::PipelineStageFlagBits::eComputeShader, {}, after, {}, {}, m->d);
}

void tg_begin(TG_MODEL* m) {
  m->cmd.begin(vk::CommandBufferBeginInfo(vk::CommandBufferUsageFlagBits::eOneTimeSubmit), m->d);
}

/// Copies weight k out of its device-local buffer (to) or into it (from), through a staging
/// buffer: 0, or 1 with the reason in m->error.
int tg_weight_copy(TG_MODEL* m, int k, void* to, const void* from) {
  const vk::DeviceSize bytes = tg_weights[k].bytes;
  if (bytes == 0) return 0;
  std::vector<TgBuffer> staging;
  try {
    TgBuffer& s = tg_buffer(m, staging, (long long)bytes, true);
    const vk::Buffer w = m->weights[std::size_t(k)].buffer;
    if (from) std::memcpy(s.mapped, from, std::size_t(bytes));
    tg_begin(m);
    m->cmd.copyBuffer(from ? s.buffer : w, from ? w : s.buffer, vk::BufferCopy(0, 0, bytes), m->d);
    const vk::MemoryBarrier after(vk::AccessFlagBits::eTransferWrite,
                                  from ? vk::AccessFlagBits::eShaderRead
                                       : vk::AccessFlagBits::eHostRead);
    m->cmd.pipelineBarrier(vk::PipelineStageFlagBits::eTransfer,
                           from ? vk::PipelineStageFlagBits::eComputeShader
                                : vk::PipelineStageFlagBits::eHost,
                           {}, after, {}, {}, m->d);
    tg_submit(m);
    if (to) std::memcpy(to, s.mapped, std::size_t(bytes));
  } catch (const std::exception& e) {
    tg_free(m, staging);
    std::snprintf(m->error, sizeof m->error, "%s weight '%s': %s", from ? "writing" : "reading",
                  tg_weights[k].name, e.what());
    try {
      m->cmd.reset({}, m->d);
    } catch (...) {
    }
    return 1;
  }
  tg_free(m, staging);
  return 0;
}
int tg_weight_read(TG_MODEL* m, int k, void* to) { return tg_weight_copy(m, k, to, nullptr); }
int tg_weight_write(TG_MODEL* m, int k, const void* from) {
  return tg_weight_copy(m, k, nullptr, from);
}

/// A method's failure: the reason in m->error, and the command buffer ready for the next call.
int tg_failed(TG_MODEL* m, const char* method, const std::exception& e) {
  std::snprintf(m->error, sizeof m->error, "%s: %s", method, e.what());
  try {
    m->cmd.reset({}, m->d);
  } catch (...) {
  }
  return 1;
}

} // namespace

void TG_DESTROY(TG_MODEL* m) {
  if (!m) return;
  if (m->device) {
    try {
      m->device.waitIdle(m->d);
    } catch (...) {
    }
    for (int mi = 0; mi < TG_METHODS; ++mi) tg_free(m, m->buffers[mi]);
    tg_free(m, m->weights);
    for (TgPipe& p : m->pipes) {
      if (p.pipeline) m->device.destroyPipeline(p.pipeline, nullptr, m->d);
      if (p.layout) m->device.destroyPipelineLayout(p.layout, nullptr, m->d);
      if (p.set_layout) m->device.destroyDescriptorSetLayout(p.set_layout, nullptr, m->d);
      if (p.module) m->device.destroyShaderModule(p.module, nullptr, m->d);
    }
    if (m->descriptors) m->device.destroyDescriptorPool(m->descriptors, nullptr, m->d);
    if (m->fence) m->device.destroyFence(m->fence, nullptr, m->d);
    if (m->pool) m->device.destroyCommandPool(m->pool, nullptr, m->d);
    m->device.destroy(nullptr, m->d);
  }
  if (m->instance) m->instance.destroy(nullptr, m->d);
  if (m->lib) dlclose(m->lib);
  delete m;
}
)CPP";

} // namespace detail

/// The vulkan target's files.
struct ExportedVulkan {
  std::string header, source, manifest;
  std::vector<std::string> glsl, spirv; // per kernel
};

/// The vulkan target: the VULKAN device's kernels (portable GLSL: export_glsl_target), compiled
/// to SPIR-V by the GLSL compiler tg's VULKAN device uses.
inline ExportedVulkan export_vulkan(const ExportedProgram& prog, const ExportCOptions& o) {
  const std::string& P = o.prefix;
  ExportPlan plan;
  try {
    plan = plan_export(prog, export_glsl_target());
  } catch (const export_error&) {
    throw;
  } catch (const error& e) { // a kernel the GLSL target cannot render
    throw export_error(std::string("tg.export: vulkan: ") + e.what());
  }
  ExportedVulkan out;
  std::vector<std::string> names;
  for (std::size_t k = 0; k < plan.kernels.size(); ++k) {
    out.glsl.emplace_back(plan.kernels[k].source.view());
    names.push_back(P + "_k" + std::to_string(k));
  }
  try {
    out.spirv = vulkan::detail::GlslCompiler::get().compile(out.glsl, names);
  } catch (const error& e) {
    throw export_error(std::string("tg.export: vulkan: compiling the GLSL to SPIR-V: ") + e.what());
  }
  out.manifest = detail::json_document(prog, o.weights_file, {{"glsl", plan}}, P);

  // what the kernels need of the device
  GlslNeeds needs;
  std::size_t most_buffers = 1, most_vars = 0;
  const std::int64_t largest = export_largest_buffer(prog, plan);
  std::string src = "#define TG_KERNELS " + std::to_string(plan.kernels.size()) +
                    "\n#define TG_METHODS " + std::to_string(prog.methods.size()) + "\n";
  std::string tables = "static const TgKernelInfo tg_kernels[TG_KERNELS + 1] = {\n";
  std::string spirv;
  for (std::size_t k = 0; k < plan.kernels.size(); ++k) {
    const Program& p = plan.kernels[k].program;
    const GlslNeeds n = glsl_needs(p);
    needs.int8 |= n.int8;
    needs.int16 |= n.int16;
    needs.float64 |= n.float64;
    most_buffers = std::max(most_buffers, p.params.size());
    most_vars = std::max(most_vars, p.vars.size());
    const std::string& words = out.spirv[k];
    spirv += "static const std::uint32_t tg_spirv" + std::to_string(k) + "[] = {";
    char hex[16];
    for (std::size_t i = 0; i + 4 <= words.size(); i += 4) {
      std::uint32_t w = 0;
      std::memcpy(&w, words.data() + i, 4);
      std::snprintf(hex, sizeof hex, "0x%08xu,", w);
      spirv += (i % 32 == 0 ? "\n  " : " ") + std::string(hex);
    }
    spirv += "\n};\n";
    tables += "  {tg_spirv" + std::to_string(k) + ", sizeof tg_spirv" + std::to_string(k) + ", " +
              std::to_string(p.params.size()) + ", " + std::to_string(p.vars.size()) + ", " +
              std::to_string(p.local) + ", " + std::to_string(p.items_per_outer) + ", " +
              (p.grouped ? "1" : "0") + ", " + std::to_string(p.per_thread) + "}, /* " +
              std::string(p.name.view()) + " */\n";
  }
  tables += "  {nullptr, 0, 0, 0, 1, 1, 0, 1}, /* (none: an array has an element) */\n};\n";

  std::string methods, method_table = "static const TgMethodInfo tg_methods[TG_METHODS] = {\n";
  for (std::size_t mi = 0; mi < prog.methods.size(); ++mi) {
    const ExportedMethod& m = prog.methods[mi];
    const ExportMethodPlan& mp = plan.methods[mi];
    const std::string id = std::to_string(mi);
    const std::vector<SInt> in_bytes = export_input_bytes(m), out_bytes = export_output_bytes(m);
    std::string bytes = "static const long long tg_bytes" + id + "[] = {";
    for (const std::vector<SInt>* list : {&in_bytes, &out_bytes, &mp.temp_bytes})
      for (const SInt& b : *list) bytes += std::to_string(b.max_value()) + ", ";
    tables += bytes + "0};\nstatic const TgLaunchInfo tg_launches" + id + "[] = {\n";

    const detail::CMethodApi api = detail::c_method_api(m, P);
    std::string body = api.signature + " {\n" + detail::c_method_checks(prog, m) + "  try {\n";
    for (std::size_t i = 0; i < m.inputs.size(); ++i)
      body += "    std::memcpy(m->buffers[" + id + "][" + std::to_string(i) + "].mapped, " +
              m.inputs[i].name + ", (std::size_t)" + detail::c_size(in_bytes[i]) + ");\n";
    body += "    tg_begin(m);\n";
    for (std::size_t li = 0; li < mp.launches.size(); ++li) {
      const ExportLaunch& l = mp.launches[li];
      const Program& p = plan.kernels[std::size_t(l.kernel)].program;
      tables += "  {" + std::to_string(l.kernel) + ", " + std::to_string(l.buffers.size()) + ", {";
      for (std::size_t b = 0; b < l.buffers.size(); ++b)
        tables += std::string(b ? ", " : "") + "{" + std::to_string(int(l.buffers[b].kind)) + ", " +
                  std::to_string(l.buffers[b].index) + "}";
      tables += "}},\n";
      body += "    tg_launch(m, " + id + ", " + std::to_string(li) + ", " +
              detail::c_size(l.numel) + ", " + detail::c_size(p.outer) + ", " +
              detail::c_size(p.work) + ", {";
      for (std::size_t i = 0; i < p.vars.size(); ++i)
        body += (i ? ", " : "") + std::string(p.vars[i].name.view());
      body += "}); /* " + std::string(p.name.view()) + " */\n";
    }
    if (mp.launches.empty()) tables += "  {0, 0, {}},\n";
    tables += "};\nstatic const TgUpdateInfo tg_updates" + id + "[] = {";
    for (const ExportUpdate& u : mp.updates)
      tables += "{" + std::to_string(u.weight) + ", " + std::to_string(u.temp) + ", " +
                std::to_string(u.bytes) + "}, ";
    tables += "{0, 0, 0}};\n";
    body += "    tg_update(m, " + id + ");\n    tg_submit(m);\n";
    for (std::size_t k = 0; k < m.outputs.size(); ++k)
      body += "    std::memcpy(" + m.output_names[k] + ", m->buffers[" + id + "][" +
              std::to_string(m.inputs.size() + k) + "].mapped, (std::size_t)" +
              detail::c_size(out_bytes[k]) + ");\n";
    body += "    return 0;\n  } catch (const std::exception& e) {\n    return tg_failed(m, \"" +
            m.name + "\", e);\n  }\n}\n\n";
    methods += body;
    method_table += "  {" + std::to_string(m.inputs.size()) + ", " +
                    std::to_string(m.outputs.size()) + ", " + std::to_string(mp.temp_bytes.size()) +
                    ", tg_bytes" + id + ", " + std::to_string(mp.launches.size()) +
                    ", tg_launches" + id + ", " + std::to_string(mp.updates.size()) +
                    ", tg_updates" + id + "},\n";
  }
  method_table += "};\n";

  out.header = detail::c_header(
      prog, P,
      "/* " + P +
          ".h: generated by tg::export_model (target vulkan). The model runs on a Vulkan 1.2 "
          "device\n   (libvulkan.so.1, opened at run time), its weights read from a .safetensors "
          "file" +
          (o.weights_file.empty() ? "" : " (" + o.weights_file + ")") +
          ".\n   Inputs and outputs are host memory. A model object runs one method at a time.\n"
          "   Build: c++ -std=c++17 -O2 -c " +
          P + ".cpp (Vulkan-Hpp headers; link with -ldl where dlopen is not in libc). */\n",
      "/* The same on Vulkan device `device` (an index into vkEnumeratePhysicalDevices). */\n" + P +
          "_model* " + P +
          "_create_on(int device, const char* weights_path, char* error, size_t error_size);\n");

  std::string& c = out.source;
  c += "// " + P + ".cpp: generated by tg::export_model (target vulkan): the SPIR-V of " + P +
       "_k<N>.spv and the host that\n// runs it through Vulkan-Hpp. Build: c++ -std=c++17 -O2 -c " +
       P + ".cpp\n";
  c += "#include \"" + P +
       ".h\"\n\n#include <dlfcn.h>\n\n#include <algorithm>\n#include <cstdint>\n#include "
       "<cstdio>\n#include <cstdlib>\n#include <cstring>\n#include <initializer_list>\n#include "
       "<new>\n#include <stdexcept>\n#include <string>\n#include <vector>\n#include "
       "<vulkan/vulkan.hpp>\n\n";
  c += "#define TG_MODEL " + P + "_model\n#define TG_DESTROY " + P + "_destroy\n";
  c += src;
  c += "#define TG_LOCAL " + std::to_string(export_gpu_launch().local) +
       "\n#define TG_MAX_BINDINGS " + std::to_string(most_buffers) + "\n#define TG_MAX_VARS " +
       std::to_string(most_vars) + "\n#define TG_LARGEST " + std::to_string(largest) +
       "LL\n#define TG_NEEDS_INT8 " + (needs.int8 ? "1" : "0") + "\n#define TG_NEEDS_INT16 " +
       (needs.int16 ? "1" : "0") + "\n#define TG_NEEDS_FLOAT64 " + (needs.float64 ? "1" : "0") +
       "\n";
  c += detail::c_loader;
  c += "\n// ---- the model ----\n";
  c += detail::c_weight_table(prog, plan);
  c += "struct TgKernelInfo {\n  const std::uint32_t* spirv;\n  std::size_t bytes;\n"
       "  std::uint32_t buffers, vars, local;\n  long long items_per_outer;\n  int grouped, "
       "per_thread;\n};\n"
       "struct TgRef {\n  int kind, index; // input, output, weight or temporary, and which\n};\n"
       "struct TgLaunchInfo {\n  int kernel, count;\n  TgRef refs[TG_MAX_BINDINGS];\n};\n"
       "struct TgUpdateInfo {\n  int weight, temp; // the new state in temporary `temp`\n"
       "  long long bytes;\n};\n"
       "struct TgMethodInfo {\n  int inputs, outputs, temps;\n  const long long* bytes; // each "
       "buffer's at the dims' upper bounds\n  int launches;\n  const TgLaunchInfo* launch;\n"
       "  int updates;\n  const TgUpdateInfo* update;\n};\n";
  c += spirv + tables + method_table;
  c += detail::vulkan_host;
  c += detail::c_fail(P);
  c += detail::c_read_file;
  c += P + "_model* " + P +
       "_create_on(int device, const char* weights_path, char* error, size_t error_size) {\n"
       "  char scratch[256];\n  std::size_t size = 0;\n  if (!error) {\n    error = scratch;\n"
       "    error_size = sizeof scratch;\n  }\n"
       "  unsigned char* bytes = tg_read_file(\"weights file\", weights_path, &size, error, "
       "error_size);\n"
       "  " +
       P +
       "_model* m = bytes ? tg_create(device, bytes, size, error, error_size) : nullptr;\n"
       "  std::free(bytes);\n  return m;\n}\n";
  c += P + "_model* " + P +
       "_create_from_memory(const void* bytes, size_t size, char* error, size_t error_size) {\n"
       "  return tg_create(0, bytes, size, error, error_size);\n}\n";
  c += detail::c_create_and_error(P);
  c += detail::c_weights_api(P);
  c += methods;
  return out;
}

} // namespace tg
