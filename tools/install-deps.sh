#!/usr/bin/env bash
# Install the build and test dependencies of tg from Debian apt (Debian 12). Idempotent: does
# nothing when every package is already installed.
set -euo pipefail

# gcc-12/g++-12 and clang-19 are CI's two compilers (tools/run-tests.sh); clang-format-19 is the one
# clang-format version tools/format.sh accepts, so formatting is the same everywhere.
packages=(
  build-essential cmake ninja-build python3
  doctest-dev libbenchmark-dev libeigen3-dev libopenblas-dev
  gcc-12 g++-12 clang-19 clang-format-19 cmake-format
  libclang-rt-19-dev # Clang's sanitizer and libFuzzer runtimes (tests/fuzz/, the clang stage)
  dataset-fashion-mnist # the data of examples/fashion_mnist.cpp
  python3-torch         # test_torch's reference: PyTorch's results for tg's ops (tests/torch/)
  # The VULKAN device and its tests: Vulkan-Hpp headers and the loader, Mesa's lavapipe (a Vulkan
  # 1.3 driver on the CPU), GLSL -> SPIR-V compilers (glslc brings libshaderc1), SPIR-V tools, and
  # the validation layers the tests run with. None of this is needed for the CPU path. (CUDA needs
  # no package: its runtime loads the driver and NVRTC with dlopen; the tests use the CUDA toolkit
  # under /usr/local/cuda* when the machine has one.)
  libvulkan-dev mesa-vulkan-drivers glslang-tools glslc spirv-tools vulkan-validationlayers
)

missing=()
for pkg in "${packages[@]}"; do
  status=$(dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null || true)
  [[ "$status" == "install ok installed" ]] || missing+=("$pkg")
done

if ((${#missing[@]} == 0)); then
  echo "install-deps: all ${#packages[@]} packages already installed"
  exit 0
fi

sudo=()
if ((EUID != 0)); then
  sudo=(sudo)
fi

echo "install-deps: installing ${missing[*]}"
"${sudo[@]}" apt-get update
"${sudo[@]}" env DEBIAN_FRONTEND=noninteractive \
  apt-get install -y --no-install-recommends "${missing[@]}"
