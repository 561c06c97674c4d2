#pragma once
// tg: a header-only C++20 tensor DSL. Lazy tensors are captured as a graph, fused into few
// kernels, rendered as C (and other dialects) and run through small device runtimes.
// This is the only header users include.
#include "autograd/backward.hpp"
#include "engine/jit.hpp"
#include "fixed/bridge.hpp"
#include "nn/nn.hpp"
#include "optim/optim.hpp"
#include "state/safetensors.hpp"
#include "tensor/indexing.hpp"

namespace tg {
inline constexpr const char* version = "0.1.0";
} // namespace tg
