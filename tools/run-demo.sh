#!/usr/bin/env bash
# Build and run the main demo, examples/fashion_mnist.cpp (target example_fashion_mnist, build dir
# ./build): an MLP and a CNN trained on Fashion-MNIST on the CPU, with test accuracy per epoch.
# Extra arguments are passed to it (--model mlp|cnn|both, --epochs N, ...). The pipeline tour,
# examples/demo.cpp, is built by the same build as build/examples/example_demo.
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
cmake --build "$build" --target example_fashion_mnist example_demo -j "$(nproc)"
exec "$build/examples/example_fashion_mnist" "$@"
