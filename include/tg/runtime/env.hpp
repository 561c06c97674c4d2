#pragma once
// Environment settings, read once: TG_DEBUG, TG_DEVICE, TG_THREADS, TG_CACHE, TG_CACHE_DIR, TG_CC.
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>

namespace tg::env {

inline std::string get(const char* name, const std::string& fallback = "") {
  const char* v = std::getenv(name);
  return v && *v ? std::string(v) : fallback;
}
inline int get_int(const char* name, int fallback) {
  const char* v = std::getenv(name);
  if (!v || !*v) return fallback;
  char* end = nullptr;
  long r = std::strtol(v, &end, 10);
  return end && *end == 0 ? int(r) : fallback;
}
/// TG_DEBUG: 1 launches with times, 2 the schedule, 3 kernel sources, 4 the IR after each pass.
inline int debug() {
  static const int level = get_int("TG_DEBUG", 0);
  return level;
}
inline int threads() {
  static const int n = [] {
    int hw = int(std::thread::hardware_concurrency());
    int t = get_int("TG_THREADS", hw > 0 ? hw : 1);
    return t < 1 ? 1 : t;
  }();
  return n;
}

} // namespace tg::env
