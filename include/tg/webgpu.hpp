#pragma once
// Opt-in: the WEBGPU device (Dawn through its webgpu.h C API, opened with dlopen on first use;
// runtime/webgpu.hpp). Include this header in one source file of a program (in addition to, or
// instead of, <tg/tg.hpp>) to register it; the program links nothing from Dawn.
#include "tg.hpp"
#include "util/rc.hpp"

#include "runtime/webgpu.hpp"

namespace tg::detail {
inline const bool webgpu_registered =
    (register_device("WEBGPU", [] { return make_rc<webgpu::WebGpuDevice>(); }), true);
} // namespace tg::detail
