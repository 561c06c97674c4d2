#pragma once
// Device = Allocator + Compiler + Program launcher. Devices register by name ("CPU", "INTERP");
// `TG_DEVICE` picks the default. A device that cannot work here says why, and only when used.
// This header declares them; runtime/host.hpp has the registry and tg/impl/devices.hpp the
// functions.
#include <cctype>
#include <cstdint>
#include <string>
#include <vector>

#include "../errors.hpp"
#include "../graph/dtype.hpp"
#include "../util/function.hpp"
#include "../util/rc.hpp"
#include "stats.hpp"

namespace tg {

struct Target;     // codegen/pipeline.hpp
struct KernelCode; // codegen/pipeline.hpp

/// A compiled kernel, ready to launch over buffers and symbolic-size values.
class Runner {
public:
  virtual ~Runner() = default;
  virtual void run(const std::vector<void*>& buffers, const std::vector<std::int64_t>& vars) = 0;
  std::string name, source;
  /// Whether its launches can be recorded into its device's LaunchGraph (a kernel of the device's
  /// own; not a collective that waits on the host).
  bool recordable = false;
};

/// Device work recorded once and launched as one unit (a CUDA graph): how tg::jit replays a
/// captured step on a device that has them.
class LaunchGraph {
public:
  virtual ~LaunchGraph() = default;
  virtual void launch() = 0;
  /// Records `steps` again in place of what this graph holds (the same kernels over other buffers
  /// or sizes); false when the device cannot update it, and a new graph must be recorded.
  virtual bool update(detail::FunctionRef<void()> steps) = 0;
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
  /// The hardware its kernels run on, as far as their speed goes (TG_BEAM's choices are cached
  /// per model); by default its name.
  virtual std::string model() const { return name(); }
  /// Host-addressable memory (CPU, INTERP): tensors can be read without a copy.
  virtual bool host_memory() const { return false; }
  /// What the pass list makes this device's kernels for (codegen/pipeline.hpp): its fuser and
  /// lowering choices, device passes and dialect, with the environment's overrides.
  virtual Target target() const = 0;
  /// Compiles kernels made by the pass list for target() (independent ones in parallel); one
  /// runner each.
  virtual std::vector<Rc<Runner>> prepare(const std::vector<const KernelCode*>& kernels) = 0;
  /// Records the launches and copies that `steps` makes on this device, without running them, as
  /// a graph to launch later as one unit; nullptr where the device has no such graphs (the
  /// steps are then run one by one).
  virtual Rc<LaunchGraph> record(detail::FunctionRef<void()> steps) {
    (void)steps;
    return nullptr;
  }
};

/// Device memory owned by a tensor.
struct Buffer {
  Rc<Device> device;
  DType dtype;
  std::int64_t numel;
  void* ptr = nullptr;
  /// Allocates numel elements of dtype t on d.
  TG_API Buffer(Rc<Device> d, DType t, std::int64_t n);
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
  TG_API ~Buffer();
  std::size_t nbytes() const { return std::size_t(numel) * std::size_t(itemsize(dtype)); }
};

/// The device of that name ("CPU", "INTERP", "cpu"), opened on first use.
TG_API Rc<Device> device(const std::string& requested);

struct DeviceInfo {
  std::string name;
  bool available;
  std::string reason; // why not, when unavailable
};
/// Every registered device and whether it works here.
TG_API std::vector<DeviceInfo> devices();
/// The default device: TG_DEVICE, else CPU.
TG_API std::string default_device();

namespace detail {
inline std::string canonical_device(std::string name) {
  for (char& c : name) c = char(std::toupper(static_cast<unsigned char>(c)));
  if (name.size() > 2 && name.substr(name.size() - 2) == ":0") name.resize(name.size() - 2);
  return name;
}
} // namespace detail

} // namespace tg
