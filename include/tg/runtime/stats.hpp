#pragma once
// Counters that tests and users read to see what the runtime did.
#include <cstdint>

#include "../config.hpp"

namespace tg {

struct Stats {
  std::int64_t kernels_compiled = 0; // kernels the compiler built (several may share one run)
  std::int64_t kernels_launched = 0; // (those of a graph too)
  std::int64_t graphs_launched = 0;  // tg::jit replays' launch graphs (CUDA graphs)
  std::int64_t cache_hits = 0;       // kernels found compiled, in memory or on disk
  std::int64_t bytes_allocated = 0;  // device memory allocated (cumulative)
  std::int64_t realizes = 0;
  std::int64_t plans_reused = 0;  // realizes that found their kernels planned by an earlier one
  std::int64_t beam_searches = 0; // kernels whose lowering TG_BEAM chose by timing variants
  std::int64_t beam_cached = 0;   // kernels whose TG_BEAM choice was read from the disk cache
};

/// The counters since the start or the last reset_stats() (all threads).
TG_API Stats stats();
TG_API void reset_stats();

} // namespace tg
