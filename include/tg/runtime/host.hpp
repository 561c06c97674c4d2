#pragma once
// What the device runtimes share: host memory (HostDevice), the registry of device factories
// (tg::device and tg::register_device work on it, tg/impl/devices.hpp), and the placeholder for
// a device this build cannot offer.
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <mutex>

#include "../codegen/pipeline.hpp"
#include "../util/rc.hpp"
#include "alloc_cache.hpp"
#include "device.hpp"
#include "env.hpp"
#include "stats_storage.hpp"

namespace tg {

/// Makes the device on its first use (tg::device, a tensor placed on it).
using DeviceFactory = std::function<Rc<Device>()>;
/// Devices with several instances ("VULKAN", "VULKAN:1", ...): the factory gets the index.
using DeviceFamilyFactory = std::function<Rc<Device>(int index)>;

/// Adds a device under that name (case-insensitive), replacing one registered before.
TG_API void register_device(const std::string& name, DeviceFactory f);
/// Registers NAME (index 0) and NAME:1, NAME:2, ...; `count` (optional) says how many exist, for
/// devices(). Opening NAME:k calls factory(k).
TG_API void register_device_family(const std::string& name, DeviceFamilyFactory factory,
                                   std::function<int()> count = {});

/// Host allocation shared by the CPU and INTERP devices (64-byte aligned for vector loads), through
/// the allocation cache (up to 1 GiB of freed blocks), so repeated realizes of the same shapes
/// touch memory that is already mapped instead of page-faulting fresh allocations.
class HostDevice : public Device {
public:
  void* alloc(std::size_t bytes) override { return cache_.alloc(bytes); }
  void free(void* p) override { cache_.free(p); }
  void copy_in(void* dst, const void* src, std::size_t bytes) override {
    std::memcpy(dst, src, bytes);
  }
  void copy_out(void* dst, const void* src, std::size_t bytes) override {
    std::memcpy(dst, src, bytes);
  }
  void copy(void* dst, const void* src, std::size_t bytes) override {
    std::memcpy(dst, src, bytes);
  }
  bool host_memory() const override { return true; }

private:
  AllocCache cache_{64,
                    [](std::size_t n) {
                      void* p = std::aligned_alloc(64, n);
                      if (!p)
                        throw device_error("tg: out of host memory allocating " +
                                           std::to_string(n) + " bytes");
                      return p;
                    },
                    [](void* p) { std::free(p); }};
};

namespace detail {
struct DeviceRegistry {
  std::mutex m;
  std::map<std::string, DeviceFactory> factories;
  std::map<std::string, Rc<Device>> open;
  std::map<std::string, std::pair<DeviceFamilyFactory, std::function<int()>>> families;
};
inline DeviceRegistry& registry() {
  static DeviceRegistry r;
  return r;
}
} // namespace detail

namespace detail {
/// A registered name that stands in for a device this build cannot offer (it says why).
class UnavailableDevice : public Device {
public:
  UnavailableDevice(std::string name, std::string reason)
      : name_(std::move(name)), reason_(std::move(reason)) {}
  std::string name() const override { return name_; }
  std::string unavailable_reason() const override { return reason_; }
  void* alloc(std::size_t) override {
    throw device_error("tg: device " + name_ + " is unavailable: " + reason_);
  }
  void free(void*) override {}
  void copy_in(void*, const void*, std::size_t) override { alloc(0); }
  void copy_out(void*, const void*, std::size_t) override { alloc(0); }
  Target target() const override { return Target::portable(); }
  std::vector<Rc<Runner>> prepare(const std::vector<const KernelCode*>&) override {
    alloc(0);
    return {};
  }

private:
  std::string name_, reason_;
};
/// Registers a placeholder unless the real device registered itself first.
inline void register_unavailable(const std::string& name, const std::string& reason) {
  auto& r = registry();
  std::lock_guard<std::mutex> g(r.m);
  if (!r.factories.count(name))
    r.factories[name] = [name, reason] { return make_rc<UnavailableDevice>(name, reason); };
}
} // namespace detail

} // namespace tg
