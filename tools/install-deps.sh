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
  nlohmann-json3-dev    # tools/compile-time.sh's peer: a TU that parses and dumps JSON
  openmpi-bin libopenmpi3 # tg::distributed's mpi backend (libmpi.so.40, opened with dlopen) and mpirun
  # The VULKAN device and its tests: Vulkan-Hpp headers and the loader, Mesa's lavapipe (a Vulkan
  # 1.3 driver on the CPU), GLSL -> SPIR-V compilers (glslc brings libshaderc1), SPIR-V tools, and
  # the validation layers the tests run with. None of this is needed for the CPU path. (CUDA needs
  # no package: its runtime loads the driver and NVRTC with dlopen; the tests use the CUDA toolkit
  # under /usr/local/cuda* when the machine has one.)
  libvulkan-dev mesa-vulkan-drivers glslang-tools glslc spirv-tools vulkan-validationlayers
  # The WEBGPU device's Dawn (from npm, below) opens Mesa's GL through the unversioned libEGL.so
  # and runs on llvmpipe's GL ES driver (named here, as apt may skip them as recommendations).
  libegl-dev libegl-mesa0 libgl1-mesa-dri libgles2
  # tg::export_model's wasm target: Debian's clang (14) and wasm-ld build the exported C for
  # wasm32-wasi against wasi-libc, with the compiler-rt builtins of that target.
  clang lld wasi-libc libclang-rt-14-dev-wasm32
  # The exported web page of examples/web/, opened headless through WebGPU (SwiftShader) and
  # WebAssembly by tests/web_page.py.
  chromium
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

# Lavapipe from Mesa >= 25 for Dawn's Vulkan backend: bookworm's Mesa 22.3 lavapipe lacks the
# shader*ArrayDynamicIndexing features Dawn requires, so Dawn finds no Vulkan adapter with it. The
# package comes from bookworm-backports through a private apt state (nothing in /etc/apt or the
# system's package lists changes) and is only unpacked into $TG_MESA_DIR (default
# /usr/local/lib/tg-mesa), never installed: VK_ICD_FILENAMES=$TG_MESA_DIR/lvp_icd.json selects it.
mesa_dir=${TG_MESA_DIR:-/usr/local/lib/tg-mesa}
mesa_lib=$mesa_dir/libvulkan_lvp.so
mesa_icd=$mesa_dir/lvp_icd.json
if [[ -f $mesa_icd && -f $mesa_lib ]] && grep -qF "\"$mesa_lib\"" "$mesa_icd"; then
  echo "install-deps: Mesa lavapipe $(cat "$mesa_dir/version" 2>/dev/null) already in $mesa_dir"
else
  # The Debian mirror apt already uses (the one serving bookworm), for bookworm-backports.
  # shellcheck disable=SC2016 # $(REPO_URI) is apt's field, not the shell's
  mirror=$(apt-get indextargets --format '$(REPO_URI)' 'Release: bookworm' 'Target-Of: deb' \
    'Identifier: Packages' | head -n 1)
  mirror=${mirror:-http://deb.debian.org/debian/}
  echo "install-deps: unpacking Mesa lavapipe from ${mirror%/} bookworm-backports into $mesa_dir"
  mesa_tmp=$("${sudo[@]}" mktemp -d)
  trap '"${sudo[@]}" rm -rf "$mesa_tmp"' EXIT
  # apt downloads as the user _apt, which must reach the directories it writes to.
  "${sudo[@]}" chmod 755 "$mesa_tmp"
  "${sudo[@]}" mkdir -p "$mesa_tmp/lists/partial" "$mesa_tmp/cache/archives/partial" \
    "$mesa_tmp/deb" "$mesa_tmp/root"
  if id _apt > /dev/null 2>&1; then
    "${sudo[@]}" chown _apt "$mesa_tmp/deb"
  fi
  echo "deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] $mirror bookworm-backports main" |
    "${sudo[@]}" tee "$mesa_tmp/sources.list" > /dev/null
  apt_private=(-o "Dir::Etc::SourceList=$mesa_tmp/sources.list" -o Dir::Etc::SourceParts=/dev/null
    -o "Dir::State::Lists=$mesa_tmp/lists" -o "Dir::Cache=$mesa_tmp/cache" -o Acquire::Languages=none)
  "${sudo[@]}" apt-get "${apt_private[@]}" update
  (cd "$mesa_tmp/deb" &&
    "${sudo[@]}" apt-get "${apt_private[@]}" download mesa-vulkan-drivers/bookworm-backports)
  mesa_deb=$(echo "$mesa_tmp"/deb/mesa-vulkan-drivers_*.deb)
  "${sudo[@]}" dpkg-deb -x "$mesa_deb" "$mesa_tmp/root"
  mesa_so=$(echo "$mesa_tmp"/root/usr/lib/*/libvulkan_lvp.so)
  # It links against bookworm's own libraries (LLVM 15, libdrm, ...); stop here if one is missing.
  mesa_missing=$(ldd -r "$mesa_so" 2>&1 | grep -E 'not found|undefined symbol' || true)
  if [[ -n $mesa_missing ]]; then
    echo "$mesa_missing" >&2
    echo "install-deps: the lavapipe of $(basename "$mesa_deb") needs the libraries above" >&2
    exit 1
  fi
  # Only lavapipe (the package also holds the GPU drivers); the ICD file is written last, so an
  # interrupted run is redone.
  "${sudo[@]}" mkdir -p "$mesa_dir"
  "${sudo[@]}" rm -f "$mesa_icd"
  "${sudo[@]}" install -m 644 "$mesa_so" "$mesa_lib"
  "${sudo[@]}" install -m 644 "$mesa_tmp/root/usr/share/doc/mesa-vulkan-drivers/copyright" \
    "$mesa_dir/copyright"
  dpkg-deb -f "$mesa_deb" Version | "${sudo[@]}" tee "$mesa_dir/version" > /dev/null
  sed "s|\"library_path\": *\"[^\"]*\"|\"library_path\": \"$mesa_lib\"|" \
    "$mesa_tmp"/root/usr/share/vulkan/icd.d/lvp_icd*.json | "${sudo[@]}" tee "$mesa_icd" > /dev/null
  grep -qF "\"$mesa_lib\"" "$mesa_icd"
  echo "install-deps: Mesa lavapipe $(cat "$mesa_dir/version") in $mesa_dir"
fi
