#!/usr/bin/env bash
# Formats every C++ file (clang-format 19, .clang-format) and every CMake file (cmake-format,
# .cmake-format.yaml) in place. With --check, changes nothing and fails when any file would
# change (tools/check-format.sh, run by CI).
#
#   C++:   *.hpp, *.cpp under include/ src/ tests/ bench/ examples/ tools/ (not single_include/, which is
#          generated, nor test data such as golden kernel sources)
#   CMake: every CMakeLists.txt and *.cmake in the repository
#
# Files are those git knows about or would add (tracked, or untracked and not ignored), so build
# directories never count. One clang-format version (19, Debian's clang-format-19) makes the
# result deterministic; override the binary with CLANG_FORMAT=..., at your own risk.
set -euo pipefail
cd "$(dirname "$0")/.."

check=0
case "${1:-}" in
  --check) check=1 ;;
  "") ;;
  *)
    echo "usage: tools/format.sh [--check]" >&2
    exit 2
    ;;
esac

clang_format=${CLANG_FORMAT:-clang-format-19}
cmake_format=${CMAKE_FORMAT:-cmake-format}
for tool in "$clang_format" "$cmake_format"; do
  if ! command -v "$tool" >/dev/null; then
    echo "format: $tool not found (bash tools/install-deps.sh installs it)" >&2
    exit 2
  fi
done
if [[ -z "${CLANG_FORMAT:-}" ]] && ! "$clang_format" --version | grep -q "version 19\."; then
  echo "format: $clang_format is not clang-format 19: $("$clang_format" --version)" >&2
  exit 2
fi

# Files under the given git pathspecs, tracked or untracked-but-not-ignored, that exist.
list_files() {
  if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
    git ls-files -z --cached --others --exclude-standard -- "$@" |
      while IFS= read -r -d '' f; do [[ -f "$f" ]] && printf '%s\0' "$f"; done
  else
    echo "format: not a git checkout" >&2
    exit 2
  fi
}

mapfile -d '' cxx_files < <(list_files \
  ':(glob)include/**/*.hpp' ':(glob)include/**/*.cpp' ':(glob)src/**/*.cpp' \
  ':(glob)tests/**/*.hpp' ':(glob)tests/**/*.cpp' \
  ':(glob)bench/**/*.hpp' ':(glob)bench/**/*.cpp' \
  ':(glob)examples/**/*.hpp' ':(glob)examples/**/*.cpp' \
  ':(glob)tools/**/*.hpp' ':(glob)tools/**/*.cpp')
mapfile -d '' cmake_files < <(list_files ':(glob)**/CMakeLists.txt' ':(glob)**/*.cmake')

status=0
if ((check)); then
  echo "format: checking ${#cxx_files[@]} C++ files with $("$clang_format" --version | head -1)"
  if ((${#cxx_files[@]})) && ! "$clang_format" --dry-run -Werror --ferror-limit=3 "${cxx_files[@]}"; then
    echo "format: C++ files differ from .clang-format: run tools/format.sh" >&2
    status=1
  fi
  echo "format: checking ${#cmake_files[@]} CMake files with cmake-format $("$cmake_format" --version)"
  for f in "${cmake_files[@]}"; do
    if ! "$cmake_format" --check "$f" >/dev/null 2>&1; then
      echo "format: $f differs from .cmake-format.yaml (diff: cmake-format $f | diff -u $f -)" >&2
      status=1
    fi
  done
  if ((status)); then
    echo "format: FAILED; tools/format.sh fixes it" >&2
  else
    echo "format: ok"
  fi
else
  ((${#cxx_files[@]})) && "$clang_format" -i "${cxx_files[@]}"
  ((${#cmake_files[@]})) && "$cmake_format" -i "${cmake_files[@]}"
  echo "format: formatted ${#cxx_files[@]} C++ and ${#cmake_files[@]} CMake files"
  # clang-format must reach a fixed point, or the check fails right after formatting. The usual
  # cause is a macro invoked without a semicolon: list it under StatementMacros in .clang-format.
  if ((${#cxx_files[@]})) && ! "$clang_format" --dry-run -Werror --ferror-limit=1 "${cxx_files[@]}"; then
    echo "format: a second clang-format pass would change the files above;" \
      "add the macros they invoke to StatementMacros in .clang-format" >&2
    status=1
  fi
fi
exit $status
