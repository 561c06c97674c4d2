#pragma once
// Runs the registered benchmarks, then prints each "subject vs peer" pair as a ratio of their
// times measured in this same run (a ratio > 1 means the subject is slower).
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

namespace tg_bench {

/// True when `got` matches `want` within `tolerance` (1e-3) of the largest |want|; otherwise
/// fails the benchmark with where and by how much (every benchmark checks its result before
/// timing it).
inline bool matches(benchmark::State& st, const std::vector<float>& got,
                    const std::vector<float>& want, const std::string& what,
                    double tolerance = 1e-3) {
  if (got.size() != want.size()) {
    st.SkipWithError((what + ": " + std::to_string(got.size()) + " values, expected " +
                      std::to_string(want.size()))
                         .c_str());
    return false;
  }
  double scale = 0, diff = 0;
  std::size_t at = 0;
  for (std::size_t i = 0; i < got.size(); ++i) {
    scale = std::max(scale, double(std::abs(want[i])));
    double d = std::abs(double(got[i]) - double(want[i]));
    if (std::isnan(d)) d = INFINITY;
    if (d > diff) diff = d, at = i;
  }
  if (diff <= tolerance * scale) return true;
  char msg[320];
  std::snprintf(msg, sizeof msg,
                "%s: WRONG RESULT, max |diff| %g at index %zu (got %g, want %g) > %g * max "
                "|want| = %g",
                what.c_str(), diff, at, double(got[at]), double(want[at]), tolerance,
                tolerance * scale);
  st.SkipWithError(msg);
  return false;
}

class Collect : public benchmark::ConsoleReporter {
public:
  void ReportRuns(const std::vector<Run>& runs) override {
    for (const Run& r : runs)
      if (r.error_occurred)
        errors.insert(r.benchmark_name());
      else
        times[r.benchmark_name()] = r.GetAdjustedRealTime();
    ConsoleReporter::ReportRuns(runs);
  }
  std::map<std::string, double> times;
  std::set<std::string> errors; // skipped with an error: the table above says why
};

inline int run(int argc, char** argv,
               const std::vector<std::pair<std::string, std::string>>& pairs) {
  benchmark::Initialize(&argc, argv);
  Collect reporter;
  benchmark::RunSpecifiedBenchmarks(&reporter);
  int w = 44; // the columns widen to the longest name
  for (const auto& [subject, peer] : pairs)
    w = std::max({w, int(subject.size()), int(peer.size())});
  std::printf("\n%-*s %-*s %8s\n", w, "subject", w, "peer (same run)", "ratio");
  for (const auto& [subject, peer] : pairs) {
    if (reporter.errors.count(subject) || reporter.errors.count(peer)) {
      std::printf("%-*s %-*s %8s\n", w, subject.c_str(), w, peer.c_str(), "ERROR");
      continue;
    }
    // With --benchmark_repetitions=N, the median of the repetitions.
    auto time = [&](const std::string& name) {
      auto it = reporter.times.find(name + "_median");
      return it != reporter.times.end() ? it : reporter.times.find(name);
    };
    auto s = time(subject), p = time(peer);
    if (s == reporter.times.end() || p == reporter.times.end()) continue;
    std::printf("%-*s %-*s %8.3f\n", w, subject.c_str(), w, peer.c_str(), s->second / p->second);
  }
  benchmark::Shutdown();
  return 0;
}

} // namespace tg_bench
