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
  # The WEBGPU device's Dawn (from npm, below) opens Mesa's GL through the unversioned libEGL.so
  # and runs on llvmpipe's GL ES driver (named here, as apt may skip them as recommendations).
  libegl-dev libegl-mesa0 libgl1-mesa-dri libgles2
)
# WebGPU's Dawn comes from npm (below), so node and npm from Debian where the machine has none.
if ! command -v npm > /dev/null; then
  packages+=(nodejs npm)
fi

missing=()
for pkg in "${packages[@]}"; do
  status=$(dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null || true)
  [[ "$status" == "install ok installed" ]] || missing+=("$pkg")
done

sudo=()
if ((EUID != 0)); then
  sudo=(sudo)
fi

if ((${#missing[@]} == 0)); then
  echo "install-deps: all ${#packages[@]} Debian packages already installed"
else
  echo "install-deps: installing ${missing[*]}"
  "${sudo[@]}" apt-get update
  "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive \
    apt-get install -y --no-install-recommends "${missing[@]}"
fi

# Dawn, WebGPU's implementation, as npm packages (the one build of it these machines can install)
# in $TG_NPM_DIR (default /usr/local/lib/tg-npm, where tg looks): bun-webgpu-linux-x64, whose
# libwebgpu_wrapper.so (Dawn's webgpu.h C API) the WEBGPU device opens (TG_LIBWEBGPU names
# another), and webgpu (dawn.node), whose Null backend validates every WGSL kernel of
# tests/test_wgsl.cpp (TG_NODE_MODULES names another node_modules). Install scripts are not run
# (the packages need none on Linux).
npm_dir=${TG_NPM_DIR:-/usr/local/lib/tg-npm}
npm_packages=(bun-webgpu-linux-x64@0.1.7 webgpu@0.6.2)
npm_missing=()
for spec in "${npm_packages[@]}"; do
  name=${spec%@*} version=${spec##*@}
  manifest=$npm_dir/node_modules/$name/package.json
  if [[ ! -f $manifest ]] || ! grep -q "\"version\": *\"$version\"" "$manifest"; then
    npm_missing+=("$spec")
  fi
done
if ((${#npm_missing[@]} == 0)); then
  echo "install-deps: npm packages already in $npm_dir"
else
  echo "install-deps: installing ${npm_missing[*]} from npm into $npm_dir"
  "${sudo[@]}" mkdir -p "$npm_dir"
  "${sudo[@]}" npm install --prefix "$npm_dir" --no-audit --no-fund --ignore-scripts \
    "${npm_missing[@]}"
fi
