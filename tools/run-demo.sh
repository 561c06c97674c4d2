#!/usr/bin/env bash
# Build and run examples/demo.cpp (target example_demo, build dir ./build). Extra arguments are
# passed to the demo.
set -euo pipefail
cd "$(dirname "$0")/.."

bash tools/install-deps.sh

build=build

configure=(cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release -DTG_BUILD_EXAMPLES=ON)
# Pick the generator only on the first configure; CMake refuses to switch it afterwards.
if [[ ! -f "$build/CMakeCache.txt" ]] && command -v ninja >/dev/null; then
  configure+=(-G Ninja)
fi

"${configure[@]}"
cmake --build "$build" --target example_demo -j "$(nproc)"
exec "$build/examples/example_demo" "$@"
