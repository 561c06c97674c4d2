#pragma once
// PyTorch as a peer measured in the same run: bench/ops_torch.py runs once as a subprocess and
// prints "<workload> <median ms>" per workload; each is reported as a benchmark of its own, so the
// ratio table can pair it with tg's. Used by bench_ops (CPU) and bench_gpu (`--device cuda`).
#include <tg/runtime/cache.hpp> // run_process, temp_path
#include <tg/tg.hpp>

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <map>
#include <sstream>
#include <string>
#include <vector>

namespace tg_bench {

/// PyTorch's times from one run of bench/ops_torch.py; `why` says what went wrong when it could
/// not run.
struct TorchTimes {
  std::map<std::string, double> ms;
  std::string version, why;
};

/// The python3s that may run the script, in order: TG_BENCH_PYTHON alone when set, else every
/// python3 on PATH, then /usr/bin/python3 (Debian's python3-torch). The first whose run prints
/// times is used: here a pyenv shim without torch comes first on PATH; on the GPU machine the
/// python3 with torch is on PATH and /usr/bin's has none.
inline std::vector<std::string> pythons() {
  if (const char* p = std::getenv("TG_BENCH_PYTHON"); p && *p) return {p};
  std::vector<std::string> out;
  std::istringstream path(std::getenv("PATH") ? std::getenv("PATH") : "");
  for (std::string dir; std::getline(path, dir, ':');)
    if (!dir.empty() && access((dir + "/python3").c_str(), X_OK) == 0)
      out.push_back(dir + "/python3");
  out.push_back("/usr/bin/python3");
  return out;
}

/// Runs bench/ops_torch.py with `args` once per distinct `args` (later calls reuse the result).
inline const TorchTimes& torch_times(const std::vector<std::string>& args = {}) {
  static std::map<std::vector<std::string>, TorchTimes> runs;
  auto it = runs.find(args);
  if (it != runs.end()) return it->second;
  TorchTimes r;
  for (const std::string& python : pythons()) {
    r = TorchTimes{};
    std::string log = tg::detail::temp_path("torch-ops");
    std::vector<std::string> argv{python, std::string(TG_BENCH_DIR) + "/ops_torch.py"};
    argv.insert(argv.end(), args.begin(), args.end());
    int rc = tg::detail::run_process(argv, log);
    std::string out = tg::detail::read_file(log);
    std::filesystem::remove(log);
    std::istringstream lines(out);
    for (std::string line; std::getline(lines, line);) {
      std::istringstream fields(line);
      std::string name;
      double ms = 0;
      if (line.rfind("# ", 0) == 0)
        r.version = line.substr(2);
      else if (fields >> name >> ms)
        r.ms[name] = ms;
    }
    if (rc == 0 && !r.ms.empty()) break;
    r.why =
        "PyTorch did not run (" + python + ": " + tg::detail::process_status(rc) +
        "; apt-get install python3-torch): " + out.substr(out.size() > 300 ? out.size() - 300 : 0);
  }
  return runs[args] = r;
}

/// Reports PyTorch's median for `workload` as this benchmark's time (manual time).
inline void torch_bench(benchmark::State& st, const std::string& workload, double flops,
                        const std::vector<std::string>& args = {}) {
  const TorchTimes& t = torch_times(args);
  auto it = t.ms.find(workload);
  if (!t.why.empty() || it == t.ms.end()) {
    st.SkipWithError(
        (t.why.empty() ? "bench/ops_torch.py printed no time for " + workload : t.why).c_str());
    return;
  }
  for (auto _ : st) st.SetIterationTime(it->second / 1e3);
  if (flops > 0)
    st.counters["GFLOP/s"] =
        benchmark::Counter(double(st.iterations()) * flops / 1e9, benchmark::Counter::kIsRate);
  st.SetLabel(t.version);
}

} // namespace tg_bench
