#pragma once
// Device = Allocator + Compiler + Program launcher. Devices register by name ("CPU", "INTERP");
// `TG_DEVICE` picks the default. A device that cannot work here says why, and only when used.
#include <cctype>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "../codegen/pipeline.hpp"
#include "../errors.hpp"
#include "alloc_cache.hpp"
#include "env.hpp"
#include "stats.hpp"

namespace tg {

/// A compiled kernel, ready to launch over buffers and symbolic-size values.
class Runner {
public:
  virtual ~Runner() = default;
  virtual void run(const std::vector<void*>& buffers, const std::vector<std::int64_t>& vars) = 0;
  std::string name, source;
};

class Device {
public:
  virtual ~Device() = default;
  virtual std::string name() const = 0;
  /// Why the device cannot be used here, or "" when it can.
  virtual std::string unavailable_reason() const { return ""; }
  virtual void* alloc(std::size_t bytes) = 0;
  virtual void free(void* p) = 0;
  virtual void copy_in(void* dst, const void* src, std::size_t bytes) = 0;
  virtual void copy_out(void* dst, const void* src, std::size_t bytes) = 0;
  /// Device-to-device copy; by default through host memory.
  virtual void copy(void* dst, const void* src, std::size_t bytes) {
    std::vector<unsigned char> host(bytes);
    copy_out(host.data(), src, bytes);
    copy_in(dst, host.data(), bytes);
  }
  /// Host-addressable memory (CPU, INTERP): tensors can be read without a copy.
  virtual bool host_memory() const { return false; }
  /// What the pass list makes this device's kernels for (codegen/pipeline.hpp): its fuser and
  /// lowering choices, device passes and dialect, with the environment's overrides.
  virtual Target target() const = 0;
  /// Compiles kernels made by the pass list for target() (independent ones in parallel); one
  /// runner each.
  virtual std::vector<std::shared_ptr<Runner>>
  prepare(const std::vector<const KernelCode*>& kernels) = 0;
};

/// Device memory owned by a tensor.
struct Buffer {
  std::shared_ptr<Device> device;
  DType dtype;
  std::int64_t numel;
  void* ptr = nullptr;
  Buffer(std::shared_ptr<Device> d, DType t, std::int64_t n)
      : device(std::move(d)), dtype(t), numel(n) {
    std::size_t bytes = nbytes();
    ptr = device->alloc(bytes ? bytes : 1);
    detail::stats_storage().bytes_allocated += std::int64_t(bytes);
  }
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
  ~Buffer() { device->free(ptr); }
  std::size_t nbytes() const { return std::size_t(numel) * std::size_t(itemsize(dtype)); }
};

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

using DeviceFactory = std::function<std::shared_ptr<Device>()>;
/// Devices with several instances ("VULKAN", "VULKAN:1", ...): the factory gets the index.
using DeviceFamilyFactory = std::function<std::shared_ptr<Device>(int index)>;

namespace detail {
struct DeviceRegistry {
  std::mutex m;
  std::map<std::string, DeviceFactory> factories;
  std::map<std::string, std::shared_ptr<Device>> open;
  std::map<std::string, std::pair<DeviceFamilyFactory, std::function<int()>>> families;
};
inline DeviceRegistry& registry() {
  static DeviceRegistry r;
  return r;
}
inline std::string canonical_device(std::string name) {
  for (char& c : name) c = char(std::toupper(static_cast<unsigned char>(c)));
  if (name.size() > 2 && name.substr(name.size() - 2) == ":0") name.resize(name.size() - 2);
  return name;
}
} // namespace detail

inline void register_device(const std::string& name, DeviceFactory f) {
  auto& r = detail::registry();
  std::lock_guard<std::mutex> g(r.m);
  r.factories[name] = std::move(f);
}

/// Registers NAME (index 0) and NAME:1, NAME:2, ...; `count` (optional) says how many exist, for
/// devices(). Opening NAME:k calls factory(k).
inline void register_device_family(const std::string& name, DeviceFamilyFactory factory,
                                   std::function<int()> count = {}) {
  auto& r = detail::registry();
  std::lock_guard<std::mutex> g(r.m);
  r.factories[name] = [factory] { return factory(0); };
  r.families[name] = {std::move(factory), std::move(count)};
}

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
  std::vector<std::shared_ptr<Runner>> prepare(const std::vector<const KernelCode*>&) override {
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
    r.factories[name] = [name, reason] {
      return std::make_shared<UnavailableDevice>(name, reason);
    };
}
} // namespace detail

/// The default device: TG_DEVICE, else CPU.
inline std::string default_device() {
  static const std::string d = detail::canonical_device(env::get("TG_DEVICE", "CPU"));
  return d;
}

} // namespace tg
