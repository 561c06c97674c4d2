#pragma once
// The static front end: tg::fixed<T, dims...> and expression templates whose shapes are known at
// compile time. Expressions evaluate in one loop compiled by the user's compiler (no run-time
// compiler), and lower to the same tg::Graph the run-time front end builds, so kernels can be
// fused, lowered and rendered in a constant expression (graph.hpp).
//
// It includes the graph, schedule and codegen layers, whose constexpr functions fuse and lower
// kernels at compile time: a translation unit that includes it takes seconds longer to compile
// than one that includes only <tg/tg.hpp> (docs/static.md). With it come the bridges to
// tg::Tensor (fixed/bridge.hpp), which need tg's run-time machinery linked only where used.
#include "fixed/bridge.hpp"
#include "fixed/graph.hpp"
#include "fixed/print.hpp"
