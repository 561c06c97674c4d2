#pragma once
// Runs the registered benchmarks, then prints each "subject vs peer" pair as a ratio of their
// times measured in this same run (a ratio > 1 means the subject is slower).
#include <benchmark/benchmark.h>

#include <cstdio>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace tg_bench {

class Collect : public benchmark::ConsoleReporter {
public:
  void ReportRuns(const std::vector<Run>& runs) override {
    for (const Run& r : runs)
      if (!r.error_occurred) times[r.benchmark_name()] = r.GetAdjustedRealTime();
    ConsoleReporter::ReportRuns(runs);
  }
  std::map<std::string, double> times;
};

inline int run(int argc, char** argv,
               const std::vector<std::pair<std::string, std::string>>& pairs) {
  benchmark::Initialize(&argc, argv);
  Collect reporter;
  benchmark::RunSpecifiedBenchmarks(&reporter);
  std::printf("\n%-44s %-44s %8s\n", "subject", "peer (same run)", "ratio");
  for (const auto& [subject, peer] : pairs) {
    auto s = reporter.times.find(subject), p = reporter.times.find(peer);
    if (s == reporter.times.end() || p == reporter.times.end()) continue;
    std::printf("%-44s %-44s %8.3f\n", subject.c_str(), peer.c_str(), s->second / p->second);
  }
  benchmark::Shutdown();
  return 0;
}

} // namespace tg_bench
