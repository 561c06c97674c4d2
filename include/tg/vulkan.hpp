#pragma once
// Opt-in: the VULKAN device ("VULKAN", "VULKAN:1", ...). Include this header in one source file
// of a program (in addition to, or instead of, <tg/tg.hpp>) to register it. It is separate from
// tg.hpp because <vulkan/vulkan.hpp> costs about 2 s of compile time per translation unit; the
// program still links nothing from Vulkan (libvulkan.so.1 is opened on first use). Without the
// Vulkan-Hpp headers (Debian: libvulkan-dev) it compiles anyway, and VULKAN reports why it is
// unavailable.
#include "tg.hpp"
#include "util/rc.hpp"

#if __has_include(<vulkan/vulkan.hpp>)
#include "runtime/vulkan.hpp"

namespace tg::detail {
inline const bool vulkan_registered = (register_device_family(
                                           "VULKAN", [](int i) { return make_rc<VulkanDevice>(i); },
                                           [] { return vulkan::device_count(); }),
                                       true);
} // namespace tg::detail
#else
namespace tg::detail {
inline const bool vulkan_registered =
    (register_device("VULKAN",
                     [] {
                       return make_rc<UnavailableDevice>(
                           "VULKAN", "this program was compiled without the Vulkan-Hpp headers "
                                     "(<vulkan/vulkan.hpp>; Debian: "
                                     "libvulkan-dev)");
                     }),
     true);
} // namespace tg::detail
#endif
