#!/usr/bin/env bash
# tg's CI (.ci/run runs this): every quality gate, as a sequence of timed stages. A failing stage
# stops the run with a non-zero exit; a table of stage times (wall clock and CPU seconds) is
# printed either way.
#
#   tools/run-tests.sh                     every stage, in order
#   tools/run-tests.sh gcc consume         only the named stages (a build stage reuses its build dir)
#   TG_CI_KEEP_GOING=1 tools/run-tests.sh  run every stage even after a failure; still fails at the end
#
# Stages, and which suites each configuration runs (budget: the whole run under 40 minutes
# on 2 cores; compiling the test suite dominates, so only the gcc stage builds all of it):
#
#   deps      tools/install-deps.sh: the Debian packages (compilers, Clang's sanitizer and
#             libFuzzer runtimes, CMake, doctest, formatters, Vulkan and lavapipe, the
#             Fashion-MNIST data, clang and wasi-libc for the wasm export, Open MPI for tg::distributed) and, from npm, Dawn (the WEBGPU device's library and the WGSL
#             validator of test_wgsl)
#   checks    drift gates, no build: tools/check-format.sh (clang-format 19 on every C++ file,
#             cmake-format on every CMake file) and tools/amalgamate.py --check (the committed
#             single_include/tg/ is what the generator makes of include/)
#   gcc       GCC 12, Release (at -O1), against include/. Tests and examples with -Wall -Wextra
#             -Wpedantic -Werror, benchmarks built too. Runs the whole suite on every test device,
#             the fuzz test at 300 graphs (and 150 more with the optimizations off; configure with
#             -DTG_FUZZ_GRAPHS=1000 for the long run), the golden kernels (test_golden), and the
#             header tests: every header under include/tg compiled alone (ctest -L headers).
#   clang     Clang 19 with libstdc++ 12, Release (at -O1), against include/, same warnings as
#             errors. The core suites (errors, runtime, schedule, jit, autograd, optim, safetensors,
#             the demo, the fuzz test at 100 graphs), nn, the constexpr static-shape suite
#             (test_fixed_static: fusion and rendering in constant expressions, where compilers
#             differ most) and the static MLP example, and the must-not-compile cases; on CPU and
#             INTERP. And the libFuzzer harness of the safetensors parser (tests/fuzz/, -fsanitize=fuzzer,address,undefined),
#             fuzzing for 20 seconds from its seed corpus: a crash, sanitizer report, hang, huge
#             allocation or any error but format_error fails it.
#   asan      GCC 12, Debug, AddressSanitizer + UndefinedBehaviorSanitizer; any report fails the
#             test (-fno-sanitize-recover=all, halt_on_error). The suites where host memory is
#             managed (errors, runtime, jit, autograd, safetensors, the fuzz test at 100 graphs),
#             on CPU and INTERP; test_fuzz and test_runtime with TG_KERNEL_SANITIZE=1: the CPU
#             device builds their kernels with ASan and UBSan too, so an out-of-bounds index in a generated kernel is a report
#             (test_runtime shows one). Not the must-not-compile cases: with this stage's compiler
#             and headers, and none of its flags, they would repeat the gcc stage's.
#   tsan      GCC 12, -O1, ThreadSanitizer (halt_on_error; no suppressions): test_runtime, whose
#             cases run the thread pool from two callers, compile a realize's kernels in parallel,
#             and realize from several threads at once in a fresh process (device registry, plan
#             cache, kernel caches and pool all first used concurrently), compiling and then
#             loading from the disk cache.
#   single    GCC 12, Release (at -O1), against the generated single_include/
#             (TG_SINGLE_HEADER=ON) instead of include/. A subset, as each test TU compiles the
#             whole header: test_errors and example_demo (the must-not-compile cases are the gcc
#             stage's: same compiler, same text).
#   consume   the consumption tests (ctest -L consumption, in the gcc build): find_package from an
#             install prefix, add_subdirectory, FetchContent of a local archive, and a plain
#             `g++ -std=c++20 -I single_include` build; each builds and runs a small consumer.
#
# The op suite, the full fuzz test and the GPU backends run in the gcc stage only: what they test
# is the generated C, GLSL, CUDA and WGSL, the same whichever compiler built the tests.
#
# Every build lives under $TG_CI_DIR (default build-ci/). All stages share one kernel cache
# ($TG_CI_DIR/tg-cache, passed as TG_TEST_CACHE_DIR): kernels are C sources compiled by the
# system cc, identical whatever C++ compiler or sanitizer built the tests, so later stages (and
# later runs) find them compiled; the asan stage's sanitized kernels (other flags) have keys of
# their own. The fuzz test draws the same graphs (fixed seed) in every stage.
set -euo pipefail
cd "$(dirname "$0")/.."

ci_dir=${TG_CI_DIR:-build-ci}
[[ "$ci_dir" == /* ]] || ci_dir="$PWD/$ci_dir"
cache_dir="$ci_dir/tg-cache"
jobs=$(nproc)
all_stages=(deps checks gcc clang asan tsan single consume)
default_stages=("${all_stages[@]}")
stages=("$@")
((${#stages[@]})) || stages=("${default_stages[@]}")
for s in "${stages[@]}"; do
  [[ " ${all_stages[*]} " == *" $s "* ]] || {
    echo "run-tests: unknown stage '$s' (stages: ${all_stages[*]})" >&2
    exit 2
  }
done

# ---------------------------------------------------------------- helpers ----
# configure_and_build <dir> <cmake -D args...> [-- <targets...>]: configure (Ninja on first
# configure) and build the targets (default: all), going on past a target that fails to compile so
# that one run reports every error (and CTest still runs what did build). Fails if anything failed.
configure_and_build() {
  local dir=$1
  shift
  local args=(-S . -B "$dir" -DTG_TEST_CACHE_DIR="$cache_dir") targets=()
  while (($#)) && [[ "$1" != "--" ]]; do
    args+=("$1")
    shift
  done
  (($#)) && shift && targets=(--target "$@")
  if [[ ! -f "$dir/CMakeCache.txt" ]] && command -v ninja >/dev/null; then
    args+=(-G Ninja)
  fi
  cmake "${args[@]}" || return 1 # (errexit is off here: callers write `configure_and_build || rc=1`)
  local keep_going=(-k)
  grep -q "^CMAKE_GENERATOR:INTERNAL=Ninja" "$dir/CMakeCache.txt" && keep_going=(-k 0)
  cmake --build "$dir" -j "$jobs" "${targets[@]}" -- "${keep_going[@]}"
}

# run_ctest <dir> <ctest args...>
run_ctest() {
  local dir=$1
  shift
  ctest --test-dir "$dir" -j2 --output-on-failure --no-tests=error "$@"
}

gcc_flags=(-DCMAKE_CXX_COMPILER=g++-12)
clang_flags=(-DCMAKE_CXX_COMPILER=clang++-19)
# Release builds of the tests at -O1, not -O3: what the tests time and check is the kernels, which
# the CPU device compiles with its own flags; -O1 compiles a test TU a third faster.
release=(-DCMAKE_BUILD_TYPE=Release "-DCMAKE_CXX_FLAGS_RELEASE=-O1 -DNDEBUG")

# ----------------------------------------------------------------- stages ----
# One function per stage; each runs in a subshell with `set -e`, so any failing command fails it.
stage_deps() {
  bash tools/install-deps.sh
}

stage_checks() {
  local rc=0
  bash tools/check-format.sh || rc=1
  if python3 tools/amalgamate.py --check; then
    echo "single_include/tg/tg.hpp is up to date"
  else
    rc=1
  fi
  return $rc
}

stage_gcc() {
  local rc=0
  configure_and_build "$ci_dir/gcc" "${gcc_flags[@]}" "${release[@]}" -DTG_BUILD_BENCH=ON ||
    rc=1
  run_ctest "$ci_dir/gcc" -LE consumption || rc=1
  return $rc
}

# A subset of the suite in a build of its own: builds only `targets` and runs those tests and the
# must-not-compile cases (which compile at test time with this build's C++ compiler and include
# directory, but none of its flags: a stage that has the gcc stage's compiler and headers sets
# TG_CI_NO_FAIL_CASES=1, as they would only repeat it).
# subset_stage <dir> <ctest env (VAR=value ...) or -> <cmake -D args...> -- <targets...>
subset_stage() {
  local dir=$1 envs=$2 fail_cases="|fail_.*"
  [[ "${TG_CI_NO_FAIL_CASES:-0}" == 1 ]] && fail_cases=""
  shift 2
  local args=()
  while [[ "$1" != "--" ]]; do
    args+=("$1")
    shift
  done
  shift
  local targets=("$@") rc=0
  configure_and_build "$dir" "${args[@]}" -- "${targets[@]}" || rc=1
  local regex
  regex="^($(
    IFS='|'
    echo "${targets[*]}"
  )${fail_cases})$"
  [[ "$envs" == "-" ]] && envs=""
  # shellcheck disable=SC2086 # envs is a list of VAR=value words
  env $envs ctest --test-dir "$dir" -j2 --output-on-failure --no-tests=error -R "$regex" || rc=1
  return $rc
}

# The suites the clang and asan stages both run, on CPU and INTERP: where the host code manages
# memory and threads (errors, runtime, jit, autograd, safetensors) and the fuzz test at 100 graphs;
# not the long op suite, the full fuzz test and the GPU backends (the gcc stage runs those; what
# they test is generated C/GLSL/CUDA, the same whatever compiled the tests). The schedule, optim, nn
# and demo suites run in clang only (test_nn's training loops take 2 minutes under ASan).
core_suites=(test_errors test_runtime test_jit test_autograd test_safetensors test_fuzz)

stage_clang() {
  clang++-19 -v -E -x c++ /dev/null -o /dev/null 2>&1 | grep "Selected GCC installation" || true
  # and the static-shape suites: constexpr fusion and rendering is where compilers differ most;
  # and the safetensors fuzzer (libFuzzer is Clang's), fuzzing for TG_FUZZ_SECONDS (20)
  subset_stage "$ci_dir/clang" "TG_TEST_DEVICES=CPU,INTERP" "${clang_flags[@]}" "${release[@]}" \
    -DTG_FUZZ_GRAPHS=100 -DTG_BUILD_BENCH=OFF -DTG_BUILD_FUZZ=ON -- \
    "${core_suites[@]}" test_schedule test_optim example_demo test_nn test_fixed_static \
    example_static_mlp fuzz_safetensors
}

stage_asan() {
  # The first report ends the process with a failure (-fno-sanitize-recover=all makes UBSan's
  # reports fatal too); LeakSanitizer runs at exit. The must-not-compile cases are the gcc stage's
  # (same compiler and headers; sanitizers are no part of them). The random graphs and the runtime
  # suite run with sanitized kernels too (TG_KERNEL_SANITIZE=1: the system cc is GCC 12, whose
  # libasan the tests load): they reach every kind of index a kernel computes, while the other
  # suites reuse the kernels the gcc stage compiled (sanitized kernels miss that cache).
  local dir="$ci_dir/asan" rc=0
  export ASAN_OPTIONS=halt_on_error=1:detect_leaks=1:strict_init_order=1:detect_stack_use_after_return=1
  export UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1
  configure_and_build "$dir" "${gcc_flags[@]}" -DCMAKE_BUILD_TYPE=Debug \
    -DTG_SANITIZE=address,undefined -DTG_FUZZ_GRAPHS=100 -DTG_BUILD_BENCH=OFF -- \
    "${core_suites[@]}" || rc=1
  local sanitized="test_fuzz|test_runtime" all
  all="^($(
    IFS='|'
    echo "${core_suites[*]}"
  ))$"
  TG_TEST_DEVICES=CPU,INTERP run_ctest "$dir" -R "$all" -E "^($sanitized)$" || rc=1
  TG_TEST_DEVICES=CPU,INTERP TG_KERNEL_SANITIZE=1 run_ctest "$dir" -R "^($sanitized)$" || rc=1
  return $rc
}

stage_tsan() {
  # ThreadSanitizer at -O1, as its documentation advises: test_runtime, where the
  # thread pool, parallel compiles and concurrent realizes are; the first report fails the test.
  # No suppressions. The kernels (built by cc, not instrumented) write disjoint slices.
  TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1 TG_CI_NO_FAIL_CASES=1 \
    subset_stage "$ci_dir/tsan" "TG_TEST_DEVICES=CPU,INTERP" "${gcc_flags[@]}" \
    -DCMAKE_BUILD_TYPE=RelWithDebInfo "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O1 -g1" \
    -DTG_SANITIZE=thread -DTG_BUILD_BENCH=OFF -- test_runtime
}

stage_single() {
  # Tests the committed single header (the checks stage fails when it is out of date).
  python3 tools/amalgamate.py --check ||
    echo "run-tests: warning: testing an out-of-date single_include/ (python3 tools/amalgamate.py)"
  # A subset: every test TU compiles the whole header, so a quick suite, the demo and the
  # must-not-compile cases show that the amalgamation is complete and ordered right (the gcc
  # stage's header tests show that each header is complete on its own).
  TG_CI_NO_FAIL_CASES=1 subset_stage "$ci_dir/single" - "${gcc_flags[@]}" "${release[@]}" \
    -DTG_SINGLE_HEADER=ON -DTG_BUILD_BENCH=OFF -- test_errors example_demo
}

stage_consume() {
  # The consumption tests live in the gcc build (configured here if the gcc stage did not run).
  if [[ ! -f "$ci_dir/gcc/CMakeCache.txt" ]]; then
    local generator=()
    command -v ninja >/dev/null && generator=(-G Ninja)
    cmake -S . -B "$ci_dir/gcc" -DTG_TEST_CACHE_DIR="$cache_dir" "${gcc_flags[@]}" \
      "${release[@]}" "${generator[@]}"
  fi
  run_ctest "$ci_dir/gcc" -L consumption
}

declare -A titles=(
  [deps]="install dependencies"
  [checks]="formatting and single-header drift"
  [gcc]="GCC 12 Release build + full ctest"
  [clang]="Clang 19 (libstdc++ 12) Release build + ctest"
  [asan]="AddressSanitizer + UBSan (GCC 12, Debug; kernels too) build + ctest"
  [tsan]="ThreadSanitizer (GCC 12, -O1) build + ctest of test_runtime"
  [single]="single-header build + ctest"
  [consume]="consumption tests: find_package, add_subdirectory, FetchContent, plain g++"
)

# ------------------------------------------------------------------- main ----
# TG_CI_KEEP_GOING=1 runs the remaining stages after a failure (the run still fails at the end).
keep_going=${TG_CI_KEEP_GOING:-0}
timings=()
failed=()
run_start=$SECONDS
cpu_file=$(mktemp)

# Sets cpu_now: CPU seconds (user + sys) used so far by this script's finished child processes.
# With the wall time it shows what a stage costs on a busy machine: cpu / cores is about its wall
# time on an idle one. (Not called as $(...): `times` in a subshell sees none of our children.)
children_cpu() {
  times >"$cpu_file"
  read -r cpu_now < <(awk 'NR == 2 {
    n = 0
    for (i = 1; i <= 2; i++) { split($i, p, "m"); sub("s", "", p[2]); n += p[1] * 60 + p[2] }
    printf "%.0f\n", n }' "$cpu_file")
}
summary() {
  printf '\n==== stage times: wall clock, and CPU (user + sys, all processes)\n'
  printf '%s\n' "${timings[@]}"
  children_cpu
  printf '%-8s %5ds %6ds cpu  %s\n' total $((SECONDS - run_start)) "$cpu_now" \
    "$( ((${#failed[@]})) && echo "FAILED: ${failed[*]}" || echo ok)"
  rm -f "$cpu_file"
}
trap summary EXIT

for stage in "${stages[@]}"; do
  printf '\n\033[1m==== %s: %s\033[0m\n' "$stage" "${titles[$stage]}"
  start=$SECONDS
  children_cpu
  cpu_start=$cpu_now
  set +e
  (
    set -e
    "stage_$stage"
  )
  rc=$?
  set -e
  children_cpu
  cpu=$((cpu_now - cpu_start))
  if ((rc == 0)); then
    timings+=("$(printf '%-8s %5ds %6ds cpu  ok' "$stage" $((SECONDS - start)) "$cpu")")
  else
    timings+=("$(printf '%-8s %5ds %6ds cpu  FAILED (exit %d)' "$stage" $((SECONDS - start)) "$cpu" "$rc")")
    failed+=("$stage")
    ((keep_going)) || exit 1
  fi
done
((${#failed[@]} == 0))
