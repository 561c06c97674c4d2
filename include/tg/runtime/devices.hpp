#pragma once
// The devices tg ships, registered on first use of the registry.
#include "cpu.hpp"
#include "interp.hpp"

namespace tg {

inline void register_builtin_devices() {
  register_device("CPU", [] { return std::make_shared<CpuDevice>(); });
  register_device("INTERP", [] { return std::make_shared<InterpDevice>(); });
}

} // namespace tg
