#pragma once
// The static front end: tg::fixed<T, dims...> and expression templates whose shapes are known at
// compile time. Expressions evaluate in one loop compiled by the user's compiler (no run-time
// compiler), and lower to the same tg::Graph the run-time front end builds, so kernels can be
// fused, lowered and rendered in a constant expression (graph.hpp).
//
// This header includes only the graph, schedule and codegen layers: no device runtime. For the
// bridges to tg::Tensor include <tg/tg.hpp> (or <tg/fixed/bridge.hpp>).
#include "fixed/graph.hpp"
#include "fixed/print.hpp"
