#!/usr/bin/env bash
# Compile-time figures (docs/static.md, README): CPU seconds (user + system; median of RUNS runs)
# and peak memory of one translation unit that uses tg, with each compiler at -O0 and -O2:
#   include     #include <tg/tg.hpp> and an empty main
#   ops         the README's kind of program: a few tensor ops, printing, item()
#   train       a small training program: an nn::Sequential MLP, cross_entropy, backward, Adam
#   json        the peer: a like-sized TU that parses and dumps JSON with nlohmann/json
#               (Debian nlohmann-json3-dev)
# each in the split mode (the default: tg's machinery is linked, from tg::tg or TG_IMPLEMENTATION)
# and, for ops, header-only (TG_HEADER_ONLY: the TU defines the machinery inline). Then the
# one-time build of the machinery itself: the files of src/ compiled in parallel (what CMake builds
# for tg::tg; wall clock on this machine's cores) and src/implementation.cpp, the single-TU way.
#
#   tools/compile-time.sh                       against include/
#   RUNS=1 CXXS="g++-12" OPTS="-O2" tools/compile-time.sh
#   ROWS="include ops" MACHINERY=0 tools/compile-time.sh   some TUs, without the one-time build
set -euo pipefail
cd "$(dirname "$0")/.."

runs=${RUNS:-3}
read -r -a compilers <<<"${CXXS:-g++-12 clang++-19}"
read -r -a opts <<<"${OPTS:--O0 -O2}"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

cat >"$work/include.cpp" <<'CPP'
#include <tg/tg.hpp>

int main() {}
CPP
cat >"$work/ops.cpp" <<'CPP'
#include <tg/tg.hpp>

#include <iostream>

int main() {
  tg::manual_seed(0);
  tg::Tensor x = tg::randn({4, 3});
  tg::Tensor w = tg::Tensor({{1.f, 0.f}, {0.f, 1.f}, {1.f, 1.f}});
  tg::Tensor b = tg::Tensor({0.5f, -0.5f});
  tg::Tensor probs = (x.matmul(w) + b).softmax(1);
  std::cout << probs << "\n";
  tg::Tensor h = (x * 2.0 - 1.0).relu().sum(1);
  std::cout << "h = " << h << ", argmax = " << probs.argmax(1) << "\n";
  return probs.sum().item<float>() > 0 ? 0 : 1;
}
CPP
cat >"$work/train.cpp" <<'CPP'
#include <tg/tg.hpp>

#include <cstdio>

int main() {
  tg::manual_seed(0);
  tg::nn::Sequential model(tg::nn::Linear(8, 16), tg::nn::ReLU(), tg::nn::Linear(16, 3));
  tg::optim::Adam opt(model.parameters(), {.lr = 1e-2});
  tg::Tensor x = tg::randn({32, 8});
  tg::Tensor y = tg::randint(0, 3, {32}, tg::int64);
  for (int step = 0; step < 10; ++step) {
    opt.zero_grad();
    tg::Tensor loss = tg::nn::F::cross_entropy(model(x), y);
    loss.backward();
    opt.step();
    std::printf("%d %g\n", step, loss.item<float>());
  }
}
CPP
cat >"$work/json.cpp" <<'CPP'
#include <nlohmann/json.hpp>

#include <iostream>

int main() {
  nlohmann::json j = nlohmann::json::parse(R"({"shape": [4, 3], "dtype": "float32",
                                               "values": [1.5, 2.5], "name": "x"})");
  j["values"].push_back(3.5);
  j["meta"] = {{"ok", true}, {"count", j["shape"].size()}};
  std::cout << j.dump(2) << "\n" << j["shape"][0].get<int>() << "\n";
}
CPP

# measure <command...>: runs it $runs times; prints "median-cpu-seconds peak-MiB".
measure() {
  local cpus=() mem=0 u s m
  for ((i = 0; i < runs; i++)); do
    /usr/bin/time -f "%U %S %M" -o "$work/time.txt" "$@" >/dev/null 2>&1 ||
      echo "compile-time: failed: $*" >&2
    read -r u s m <"$work/time.txt"
    cpus+=("$(awk -v u="$u" -v s="$s" 'BEGIN { printf "%.2f", u + s }')")
    ((m > mem)) && mem=$m
  done
  printf '%s\n' "${cpus[@]}" | sort -g | awk -v mem="$mem" '{ v[NR] = $1 } END {
    m = (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
    printf "%.2f %.0f\n", m, mem / 1024 }'
}

echo "compile time of one TU: CPU seconds (user + system, median of $runs) and peak memory;" \
  "$(nproc) cores, $(date +%F)"
printf '%-11s %-4s %-30s %8s %8s\n' compiler opt "translation unit" "CPU s" "MiB"
for cxx in "${compilers[@]}"; do
  if ! command -v "$cxx" >/dev/null; then
    echo "compile-time: $cxx not found, skipped" >&2
    continue
  fi
  for opt in "${opts[@]}"; do
    for row in "include:" "ops:" "train:" "ops:-DTG_HEADER_ONLY" "json:"; do
      tu=${row%%:*} define=${row#*:}
      [[ " ${ROWS:-$tu} " == *" $tu "* ]] || continue
      [[ $tu == json && ! -f /usr/include/nlohmann/json.hpp ]] && continue
      label="$tu"
      [[ $tu == json ]] && label="nlohmann/json parse + dump"
      [[ -n $define ]] && label="$tu, header-only"
      read -r cpu mem < <(measure "$cxx" -std=c++20 "$opt" ${define:+"$define"} -I include \
        -c "$work/$tu.cpp" -o "$work/$tu.o")
      printf '%-11s %-4s %-30s %8s %8s\n' "$cxx" "$opt" "$label" "$cpu" "$mem"
    done
  done
  [[ ${MACHINERY:-1} == 0 ]] && continue
  # the machinery, once per program: src/*.cpp in parallel (wall), and in one TU (CPU)
  t0=$EPOCHREALTIME
  printf '%s\n' src/*.cpp | grep -v implementation.cpp |
    xargs -P "$(nproc)" -I{} "$cxx" -std=c++20 -O2 -I include -c {} -o /dev/null
  t1=$EPOCHREALTIME
  printf '%-11s %-4s %-30s %7.1fs wall\n' "$cxx" -O2 "tg::tg's src/ ($(nproc) jobs)" \
    "$(awk -v a="$t0" -v b="$t1" 'BEGIN { print b - a }')"
  read -r cpu mem < <(runs=1 measure "$cxx" -std=c++20 -O2 -I include -c src/implementation.cpp \
    -o "$work/impl.o")
  printf '%-11s %-4s %-30s %8s %8s\n' "$cxx" -O2 "TG_IMPLEMENTATION (one TU)" "$cpu" "$mem"
done
