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

#include "../codegen/ir.hpp"
#include "../errors.hpp"
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
  /// Whether reductions are lowered with register tiles, split accumulators and wide lanes
  /// (LowerOptions::upcast_rows, split_reduce, wide_upcast): a CPU's vector registers gain from
  /// them; a GPU's one output per thread would lose parallelism.
  virtual bool register_tiles() const { return false; }
  /// Columns of a float32 register tile (LowerOptions::tile_lanes) on a device with tiles; 0:
  /// the default.
  virtual int tile_lanes() const { return 0; }
  /// Compiles the programs (independent ones in parallel); one runner each.
  virtual std::vector<std::shared_ptr<Runner>>
  prepare(const std::vector<const Program*>& programs) = 0;
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

/// Host allocation shared by the CPU and INTERP devices (64-byte aligned for vector loads).
/// Freed blocks are kept by size and reused (up to 1 GiB), so repeated realizes of the same
/// shapes touch memory that is already mapped instead of page-faulting fresh allocations.
class HostDevice : public Device {
public:
  ~HostDevice() override {
    for (auto& [n, blocks] : cache_)
      for (void* p : blocks) std::free(p);
  }
  void* alloc(std::size_t bytes) override {
    std::size_t n = (bytes + 63) / 64 * 64;
    {
      std::lock_guard<std::mutex> g(m_);
      if (auto it = cache_.find(n); it != cache_.end() && !it->second.empty()) {
        void* p = it->second.back();
        it->second.pop_back();
        cached_bytes_ -= n;
        sizes_[p] = n;
        return p;
      }
    }
    void* p = std::aligned_alloc(64, n);
    if (!p)
      throw device_error("tg: out of host memory allocating " + std::to_string(bytes) + " bytes");
    std::lock_guard<std::mutex> g(m_);
    sizes_[p] = n;
    return p;
  }
  void free(void* p) override {
    std::lock_guard<std::mutex> g(m_);
    auto it = sizes_.find(p);
    std::size_t n = it->second;
    sizes_.erase(it);
    if (cached_bytes_ + n > max_cached_) {
      std::free(p);
      return;
    }
    cache_[n].push_back(p);
    cached_bytes_ += n;
  }
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
  std::mutex m_;
  std::map<std::size_t, std::vector<void*>> cache_;
  std::map<void*, std::size_t> sizes_;
  std::size_t cached_bytes_ = 0, max_cached_ = std::size_t(1) << 30;
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

/// Registers the devices tg ships (defined in runtime/devices.hpp, after every runtime).
inline void register_builtin_devices();

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
  std::vector<std::shared_ptr<Runner>> prepare(const std::vector<const Program*>&) override {
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

/// The device of that name ("CPU", "INTERP", "cpu"), opened on first use.
inline std::shared_ptr<Device> device(const std::string& requested) {
  static std::once_flag builtins;
  std::call_once(builtins, [] { register_builtin_devices(); });
  std::string name = detail::canonical_device(requested);
  auto& r = detail::registry();
  std::lock_guard<std::mutex> g(r.m);
  if (auto it = r.open.find(name); it != r.open.end()) return it->second;
  auto f = r.factories.find(name);
  std::shared_ptr<Device> d;
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

/// The default device: TG_DEVICE, else CPU.
inline std::string default_device() {
  static const std::string d = detail::canonical_device(env::get("TG_DEVICE", "CPU"));
  return d;
}

struct DeviceInfo {
  std::string name;
  bool available;
  std::string reason; // why not, when unavailable
};

/// Every registered device and whether it works here.
inline std::vector<DeviceInfo> devices() {
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
