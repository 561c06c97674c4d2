#pragma once
// tg::Tensor: lazy, run-time-shaped tensors with PyTorch's names and semantics. Every op builds
// graph nodes; nothing runs until a value is needed (realize(), to_vector(), item(), printing).
// The class is declared in class.hpp; this header also includes every header that defines its
// members, so a program that includes only it links.
#include "class.hpp"
#include "core.hpp"
#include "creation.hpp"
#include "movement.hpp"
#include "ops.hpp"
#include "print.hpp"

#include "../autograd/grad.hpp"
#include "../engine/jit.hpp" // assign
#include "indexing.hpp"      // and math.hpp
