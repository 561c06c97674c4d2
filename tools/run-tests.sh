#!/usr/bin/env bash
# Build tg and run the whole CTest suite (tests + examples) in ./build (Release).
set -euo pipefail
cd "$(dirname "$0")/.."

bash tools/install-deps.sh

build=build
jobs=$(nproc)

configure=(cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release)
# Pick the generator only on the first configure; CMake refuses to switch it afterwards.
if [[ ! -f "$build/CMakeCache.txt" ]] && command -v ninja >/dev/null; then
  configure+=(-G Ninja)
fi

"${configure[@]}"
cmake --build "$build" -j "$jobs"
ctest --test-dir "$build" --output-on-failure --no-tests=error -j "$jobs"
