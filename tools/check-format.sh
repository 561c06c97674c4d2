#!/usr/bin/env bash
# CI's formatting gate: fails when any C++ file differs from clang-format 19 with .clang-format
# (clang-format --dry-run -Werror) or any CMake file from cmake-format with .cmake-format.yaml
# (cmake-format --check). The file lists and tool versions are those of tools/format.sh, which
# applies both.
set -euo pipefail
exec bash "$(dirname "$0")/format.sh" --check
