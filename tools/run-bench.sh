#!/usr/bin/env bash
# Builds the benchmarks (bench/bench_*.cpp) in a Release build dir of their own, runs each in turn.
# Each prints Google Benchmark's table, then every subject's time as a ratio to a peer measured in
# the same run (> 1: tg is slower). See docs/performance.md for how to read them.
#
#   tools/run-bench.sh                                 every benchmark
#   tools/run-bench.sh bench_ops bench_core            only those
#   tools/run-bench.sh bench_ops -- --benchmark_min_time=0.2
#                                                      arguments after -- go to each benchmark
#   TG_BENCH_BUILD=dir TG_BENCH_JOBS=1 tools/run-bench.sh
#                                                      build dir (default build-bench), compile jobs
#
# bench_distributed runs under mpirun on 2 ranks (docs/distributed.md); it takes no arguments.
# bench_gpu runs only when a Vulkan (lavapipe counts: it is a CPU driver), CUDA or WebGPU device
# opens. The
# PyTorch peers (bench_train, bench_ops) need python3-torch, which this script does not install;
# without it those rows say why they were skipped.
set -euo pipefail
cd "$(dirname "$0")/.."

names=()
while (($#)) && [[ "$1" != "--" ]]; do
  names+=("$1")
  shift
done
(($#)) && shift
args=("$@")

bash tools/install-deps.sh

build=${TG_BENCH_BUILD:-build-bench}
configure=(cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release -DTG_BUILD_BENCH=ON
  -DTG_BUILD_TESTS=OFF -DTG_BUILD_EXAMPLES=OFF)
# Pick the generator only on the first configure; CMake refuses to switch it afterwards.
if [[ ! -f "$build/CMakeCache.txt" ]] && command -v ninja >/dev/null; then
  configure+=(-G Ninja)
fi
"${configure[@]}"

if ((${#names[@]} == 0)); then
  # Every bench/bench_*.cpp that is a target: CMake leaves out one whose peers are not installed
  # (bench_ops without OpenBLAS or Eigen) and says so above. (Ninja lists "name: phony", Make
  # "... name".)
  targets=$(cmake --build "$build" --target help)
  for source in bench/bench_*.cpp; do
    name=$(basename "$source" .cpp)
    if grep -Eq "^(\.\.\. )?$name(:|$)" <<<"$targets"; then
      names+=("$name")
    else
      echo "run-bench: $name is not built here (see the cmake output above)"
    fi
  done
fi
cmake --build "$build" --target "${names[@]}" -j "${TG_BENCH_JOBS:-$(nproc)}"

for name in "${names[@]}"; do
  printf '\n\033[1m==== %s\033[0m\n' "$name"
  if [[ "$name" == bench_gpu ]]; then
    # It prints "VULKAN: <device>", "CUDA: <device>" or "WEBGPU: <device>" for each device that
    # opens, else why not;
    # the empty filter runs nothing.
    probe=$("$build/bench/bench_gpu" --benchmark_filter='^$' 2>&1 || true)
    if ! grep -Eq '^(VULKAN|CUDA|WEBGPU): ' <<<"$probe"; then
      echo "run-bench: skipping bench_gpu, no GPU device: ${probe%%$'\n'*}"
      continue
    fi
  fi
  if [[ "$name" == bench_distributed ]]; then
    # on 2 ranks (one kernel thread each, as root too), then its baseline: the data-parallel MLP
    # step on one process with both threads
    OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 \
      mpirun --oversubscribe -np 2 -x TG_THREADS=1 "$build/bench/$name"
    TG_THREADS=2 "$build/bench/$name" --step
    continue
  fi
  "$build/bench/$name" "${args[@]}"
done
