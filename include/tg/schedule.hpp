#pragma once
// Opt-in: tg::schedule, what realizing tensors would do (the graph, kernels, memory plan, each
// kernel's IR and source) without running it. It needs the codegen layer's types, which the
// headers of tg.hpp leave out, so it is a header of its own.
#include "tg.hpp"

#include "engine/schedule_info.hpp"
