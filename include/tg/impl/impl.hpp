#pragma once
// The definitions of what tg's headers declare with TG_API (config.hpp): included by tg.hpp where
// TG_IMPLEMENTATION or TG_HEADER_ONLY is defined, and compiled into the CMake target tg::tg (one
// source file per header here, src/).
#include "autograd.hpp"
#include "devices.hpp"
#include "jit.hpp"
#include "nn/functional.hpp"
#include "nn/init.hpp"
#include "nn/loss.hpp"
#include "optim/clip.hpp"
#include "optim/optimizer.hpp"
#include "realize.hpp"
#include "safetensors.hpp"
#include "tensor/class.hpp"
#include "tensor/core.hpp"
#include "tensor/creation.hpp"
#include "tensor/indexing.hpp"
#include "tensor/math.hpp"
#include "tensor/movement.hpp"
#include "tensor/ops.hpp"
#include "tensor/print.hpp"
