#!/usr/bin/env bash
# Install the build and test dependencies of tg from Debian apt (Debian 12). Idempotent: does
# nothing when every package is already installed.
set -euo pipefail

packages=(
  build-essential cmake ninja-build python3
  doctest-dev libbenchmark-dev libeigen3-dev libopenblas-dev
  clang-19 clang-format cmake-format
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
