#pragma once
// The devices tg ships, registered on first use of the registry. CUDA is always registered (its
// runtime needs no header and loads the driver on first use). VULKAN needs Vulkan-Hpp, whose
// header costs seconds per translation unit, so it is opt-in: `#include <tg/vulkan.hpp>` in one
// source file registers it; until then "VULKAN" is listed as unavailable, saying so.
#include "cpu.hpp"
#include "cuda.hpp"
#include "interp.hpp"

namespace tg {

inline void register_builtin_devices() {
  register_device("CPU", [] { return std::make_shared<CpuDevice>(); });
  register_device("INTERP", [] { return std::make_shared<InterpDevice>(); });
  register_device_family(
      "CUDA", [](int i) { return std::make_shared<CudaDevice>(i); },
      [] { return cuda::device_count(); });
  detail::register_unavailable(
      "VULKAN", "not compiled into this program: #include <tg/vulkan.hpp> in one of its source "
                "files (it needs the Vulkan-Hpp headers, e.g. Debian's libvulkan-dev)");
}

} // namespace tg
