#pragma once
// Opt-in: what writing a device takes. tg::register_device and tg::register_device_family,
// HostDevice (host memory with a free-block cache), and the codegen types a Device's target() and
// prepare() name (Target, KernelCode), which the headers of tg.hpp leave out.
#include "tg.hpp"

#include "runtime/host.hpp"
