#pragma once
// The static front end's ops, in four parts: shape_plans.hpp (compile-time shape computations),
// builders.hpp (each op composed from primitive nodes as tg::Tensor composes it), matmul.hpp (the
// matmul node and in-place evaluation) and operators.hpp (operators and free functions).
#include "builders.hpp"
#include "composite.hpp"
#include "matmul.hpp"
#include "operators.hpp"
#include "shape_plans.hpp"
