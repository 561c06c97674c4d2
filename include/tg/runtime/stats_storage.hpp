#pragma once
// The counters behind tg::stats(), which the runtimes and the engine bump (atomics: kernels
// compile on worker threads).
#include <atomic>

#include "stats.hpp"

namespace tg {

namespace detail {
struct AtomicStats {
  std::atomic<std::int64_t> kernels_compiled{0}, kernels_launched{0}, graphs_launched{0},
      cache_hits{0}, bytes_allocated{0}, realizes{0}, plans_reused{0}, beam_searches{0},
      beam_cached{0};
};
inline AtomicStats& stats_storage() {
  static AtomicStats s;
  return s;
}
} // namespace detail

} // namespace tg
