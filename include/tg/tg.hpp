#pragma once
// tg: a C++20 tensor DSL. Lazy tensors are captured as a graph, fused into few kernels, rendered
// as C (and other dialects) and run through small device runtimes. This is the header users
// include. It declares the run-time machinery; one source file of the program defines it
// (TG_IMPLEMENTATION), or the program links the CMake target tg::tg, or every file defines it
// inline (TG_HEADER_ONLY): config.hpp.
#include "autograd/grad.hpp"
#include "engine/jit.hpp"
#include "nn/nn.hpp"
#include "optim/optim.hpp"
#include "runtime/precision.hpp"
#include "state/safetensors.hpp"
#include "tensor/tensor.hpp"

namespace tg {
inline constexpr const char* version = "0.1.0";
} // namespace tg

#if TG_DEFINITIONS
#include "impl/impl.hpp"
#endif
