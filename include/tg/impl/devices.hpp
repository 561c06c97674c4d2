#pragma once
// The device functions runtime/device.hpp declares, and the devices tg ships, registered on first
// use of the registry (tg::device, tg::devices: here, where every runtime is visible;
// runtime/host.hpp has the registry). CUDA is always registered
// (its runtime needs no header and loads the driver on first use). VULKAN needs Vulkan-Hpp, whose
// header costs seconds per translation unit, so it is opt-in: `#include <tg/vulkan.hpp>` in one
// source file registers it; until then "VULKAN" is listed as unavailable, saying so. WEBGPU is
// opt-in the same way (<tg/webgpu.hpp>), so that programs that do not use it do not parse it.
#include "../runtime/cpu.hpp"
#include "../runtime/cuda.hpp"
#include "../runtime/interp.hpp"
#include "../util/rc.hpp"

namespace tg {

TG_API Buffer::Buffer(Rc<Device> d, DType t, std::int64_t n)
    : device(std::move(d)), dtype(t), numel(n) {
  std::size_t bytes = nbytes();
  ptr = device->alloc(bytes ? bytes : 1);
  detail::stats_storage().bytes_allocated += std::int64_t(bytes);
}
TG_API Buffer::~Buffer() { device->free(ptr); }

TG_API Stats stats() {
  auto& s = detail::stats_storage();
  Stats out;
  out.kernels_compiled = s.kernels_compiled;
  out.kernels_launched = s.kernels_launched;
  out.graphs_launched = s.graphs_launched;
  out.cache_hits = s.cache_hits;
  out.bytes_allocated = s.bytes_allocated;
  out.realizes = s.realizes;
  out.plans_reused = s.plans_reused;
  out.beam_searches = s.beam_searches;
  out.beam_cached = s.beam_cached;
  return out;
}
TG_API void reset_stats() {
  auto& s = detail::stats_storage();
  s.kernels_compiled = 0;
  s.kernels_launched = 0;
  s.graphs_launched = 0;
  s.cache_hits = 0;
  s.bytes_allocated = 0;
  s.realizes = 0;
  s.plans_reused = 0;
  s.beam_searches = 0;
  s.beam_cached = 0;
}

TG_API void register_device(const std::string& name, DeviceFactory f) {
  auto& r = detail::registry();
  std::lock_guard<std::mutex> g(r.m);
  r.factories[name] = std::move(f);
}

TG_API void register_device_family(const std::string& name, DeviceFamilyFactory factory,
                                   std::function<int()> count) {
  auto& r = detail::registry();
  std::lock_guard<std::mutex> g(r.m);
  r.factories[name] = [factory] { return factory(0); };
  r.families[name] = {std::move(factory), std::move(count)};
}

TG_API std::string default_device() {
  static const std::string d = detail::canonical_device(env::get("TG_DEVICE", "CPU"));
  return d;
}

/// Registers the devices tg ships (tg::device does, once, on first use).
inline void register_builtin_devices() {
  register_device("CPU", [] { return make_rc<CpuDevice>(); });
  register_device("INTERP", [] { return make_rc<InterpDevice>(); });
  register_device_family(
      "CUDA", [](int i) { return make_rc<CudaDevice>(i); }, [] { return cuda::device_count(); });
  detail::register_unavailable(
      "VULKAN", "not compiled into this program: #include <tg/vulkan.hpp> in one of its source "
                "files (it needs the Vulkan-Hpp headers, e.g. Debian's libvulkan-dev)");
  detail::register_unavailable(
      "WEBGPU", "not compiled into this program: #include <tg/webgpu.hpp> in one of its source "
                "files");
}

TG_API Rc<Device> device(const std::string& requested) {
  static std::once_flag builtins;
  std::call_once(builtins, [] { register_builtin_devices(); });
  std::string name = detail::canonical_device(requested);
  auto& r = detail::registry();
  std::lock_guard<std::mutex> g(r.m);
  if (auto it = r.open.find(name); it != r.open.end()) return it->second;
  auto f = r.factories.find(name);
  Rc<Device> d;
  if (f != r.factories.end())
    d = f->second();
  else if (auto colon = name.rfind(':');
           colon != std::string::npos && r.families.count(name.substr(0, colon)) &&
           colon + 1 < name.size() &&
           name.find_first_not_of("0123456789", colon + 1) == std::string::npos)
    d = r.families[name.substr(0, colon)].first(std::atoi(name.c_str() + colon + 1));
  else {
    std::string known;
    for (auto& [k, v] : r.factories) known += (known.empty() ? "" : ", ") + k;
    throw device_error("tg: unknown device '" + requested + "' (known: " + known + ")");
  }
  if (std::string why = d->unavailable_reason(); !why.empty())
    throw device_error("tg: device " + name + " is unavailable: " + why);
  r.open[name] = d;
  return d;
}

TG_API std::vector<DeviceInfo> devices() {
  device("INTERP"); // registers the built-in devices
  std::vector<std::string> names;
  std::vector<std::pair<std::string, std::function<int()>>> counts;
  {
    auto& r = detail::registry();
    std::lock_guard<std::mutex> g(r.m);
    for (auto& [k, v] : r.factories) names.push_back(k);
    for (auto& [k, v] : r.families)
      if (v.second) counts.push_back({k, v.second});
  }
  for (auto& [family, count] : counts) { // the other instances of a family, where there are any
    int n = 0;
    try {
      n = count();
    } catch (const std::exception&) {
    }
    for (int i = 1; i < n; ++i) names.push_back(family + ":" + std::to_string(i));
  }
  std::vector<DeviceInfo> out;
  for (auto& n : names) {
    try {
      device(n);
      out.push_back({n, true, ""});
    } catch (const std::exception& e) {
      out.push_back({n, false, e.what()});
    }
  }
  return out;
}

} // namespace tg
