#pragma once
// Counters that tests and users read to see what the runtime did.
#include <atomic>
#include <cstdint>

namespace tg {

struct Stats {
  std::int64_t kernels_compiled = 0; // kernels the compiler built (several may share one run)
  std::int64_t kernels_launched = 0;
  std::int64_t cache_hits = 0;      // kernels found compiled, in memory or on disk
  std::int64_t bytes_allocated = 0; // device memory allocated (cumulative)
  std::int64_t realizes = 0;
  std::int64_t plans_reused = 0;  // realizes that found their kernels planned by an earlier one
  std::int64_t beam_searches = 0; // kernels whose lowering TG_BEAM chose by timing variants
  std::int64_t beam_cached = 0;   // kernels whose TG_BEAM choice was read from the disk cache
};

namespace detail {
struct AtomicStats {
  std::atomic<std::int64_t> kernels_compiled{0}, kernels_launched{0}, cache_hits{0},
      bytes_allocated{0}, realizes{0}, plans_reused{0}, beam_searches{0}, beam_cached{0};
};
inline AtomicStats& stats_storage() {
  static AtomicStats s;
  return s;
}
} // namespace detail

/// A snapshot of the counters since the start (or the last reset_stats()).
inline Stats stats() {
  auto& s = detail::stats_storage();
  return Stats{s.kernels_compiled.load(), s.kernels_launched.load(), s.cache_hits.load(),
               s.bytes_allocated.load(),  s.realizes.load(),         s.plans_reused.load(),
               s.beam_searches.load(),    s.beam_cached.load()};
}
inline void reset_stats() {
  auto& s = detail::stats_storage();
  s.kernels_compiled = 0;
  s.kernels_launched = 0;
  s.cache_hits = 0;
  s.bytes_allocated = 0;
  s.realizes = 0;
  s.plans_reused = 0;
  s.beam_searches = 0;
  s.beam_cached = 0;
}

} // namespace tg
