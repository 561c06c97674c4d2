#!/usr/bin/env bash
# Compile-time budget: times compiling one translation unit that includes <tg/tg.hpp> and does a
# few tensor ops, with g++-12 -O2 and clang++-19 -O2 (median of 3 runs, wall clock), and prints the
# figures. Also times an empty TU that includes only <iostream> and <vector>, to show what part
# of the cost is the standard library.
#
#   tools/compile-time.sh                  against include/
#   tools/compile-time.sh single_include   against the generated single header
#   RUNS=5 CXXS="g++-12" tools/compile-time.sh
set -euo pipefail
cd "$(dirname "$0")/.."

include_dir=${1:-include}
runs=${RUNS:-3}
read -r -a compilers <<<"${CXXS:-g++-12 clang++-19}"
flags=(-std=c++20 -O2 -I "$include_dir")

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

cat >"$work/tg_ops.cpp" <<'CPP'
#include <tg/tg.hpp>

int main() {
  tg::Tensor a = tg::ones({4, 4}) * 3.0f;
  tg::Tensor b = tg::arange(0, 16).reshape({4, 4}).cast(tg::float32);
  tg::Tensor c = (a.matmul(b.T()) + 1.0f).relu().sum(1);
  tg::Tensor d = c.softmax(0).max();
  return d.item<float>() > 0 && c.to_vector<float>().size() == 4 ? 0 : 1;
}
CPP
cat >"$work/baseline.cpp" <<'CPP'
#include <iostream>
#include <vector>

int main() {
  std::vector<float> v(16, 3.0f);
  std::cout << v.size() << "\n";
}
CPP

# median_time <command...>: runs it $runs times, prints "median min max" in seconds.
median_time() {
  local times=() t0 t1
  for ((i = 0; i < runs; i++)); do
    t0=$EPOCHREALTIME
    "$@" >/dev/null
    t1=$EPOCHREALTIME
    times+=("$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.3f", b - a }')")
  done
  printf '%s\n' "${times[@]}" | sort -g | awk '{ v[NR] = $1 } END {
    m = (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
    printf "%.2f %.2f %.2f\n", m, v[1], v[NR] }'
}

echo "compile time of one TU, ${flags[*]}, median of $runs (min, max), $(nproc) cores"
printf '%-12s %-28s %8s %8s %8s\n' compiler "translation unit" median min max
for cxx in "${compilers[@]}"; do
  if ! command -v "$cxx" >/dev/null; then
    echo "compile-time: $cxx not found, skipped" >&2
    continue
  fi
  for tu in tg_ops baseline; do
    read -r med lo hi < <(median_time "$cxx" "${flags[@]}" -c "$work/$tu.cpp" -o "$work/$tu.o")
    label=$([[ $tu == tg_ops ]] && echo "<tg/tg.hpp> + a few ops" || echo "<iostream>+<vector> only")
    printf '%-12s %-28s %7.2fs %7.2fs %7.2fs\n' "$cxx" "$label" "$med" "$lo" "$hi"
  done
done
