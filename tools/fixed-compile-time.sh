#!/usr/bin/env bash
# Compile-time cost of the static front end (docs/static.md): times, with the given compiler
# (default g++-12) at -O2, a translation unit that includes <tg/fixed.hpp> only, one that includes
# <tg/tg.hpp>, one with 50 static expressions (each assigned to a tg::fixed, so its loop is
# instantiated and compiled), with <tg/fixed.hpp>, and ten of them bridged to tg::Tensor (a plan
# fused and lowered at compile time each) or to lazy_tensor (none). Prints user+system seconds.
#
#   tools/fixed-compile-time.sh [compiler]
set -euo pipefail
cd "$(dirname "$0")/.."
cxx=${1:-g++-12}
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT

printf '#include <tg/fixed.hpp>\nint main() {}\n' >"$dir/fixed.cpp"
printf '#include <tg/tg.hpp>\nint main() {}\n' >"$dir/tg.cpp"
# Expression i (0..49) over a [n, m], b [n, m], c [m], w [m, n]: its result type and its text.
expression() {
  local i=$1 n=$(($1 % 7 + 2)) m=$(($1 % 5 + 3))
  case $((i % 10)) in
    0) echo "tg::fixed<float, $n, $m>|(a * b + c).relu()" ;;
    1) echo "tg::fixed<float, $n>|(a - b).exp().sum<1>()" ;;
    2) echo "tg::fixed<float, $n, $m>|a.softmax<1>()" ;;
    3) echo "tg::fixed<float, $n, $n>|a.matmul(w)" ;;
    4) echo "tg::fixed<float, $n, $n>|(a.matmul(w) + 1.0f).sigmoid()" ;;
    5) echo "tg::fixed<float, $m, $n>|a.T() * 2.0f + w" ;;
    6) echo "tg::fixed<float, $n, $m>|tg::where(a > b, a.tanh(), b.gelu())" ;;
    7) echo "tg::fixed<float, $m>|(a * b).mean<0>() + c.sqrt()" ;;
    8) echo "tg::fixed<float, $n, $m>|a.log_softmax<1>() - b.abs().log()" ;;
    9) echo "tg::fixed<float, $n, 1>|a.var<1>(tg::keepdim) + b.max<1>(tg::keepdim)" ;;
  esac
}
# $1 header, $2 count, $3 how a result is used: assign (to a tg::fixed), tensor (tg::Tensor(expr)),
# lazy (tg::lazy_tensor(expr)).
unit() {
  echo "#include <tg/$1>"
  echo 'float sink = 0;'
  for i in $(seq 0 $(($2 - 1))); do
    n=$((i % 7 + 2))
    m=$((i % 5 + 3))
    IFS='|' read -r type text <<<"$(expression "$i")"
    echo "void f$i(const tg::fixed<float, $n, $m>& a, const tg::fixed<float, $n, $m>& b, const tg::fixed<float, $m> & c,"
    echo "        const tg::fixed<float, $m, $n>& w) {"
    case $3 in
      assign) echo "  $type r = $text;" && echo "  sink += r[0];" ;;
      tensor) echo "  sink += tg::Tensor($text).to_vector<float>()[0];" ;;
      lazy) echo "  sink += tg::lazy_tensor($text).to_vector<float>()[0];" ;;
    esac
    echo "}"
  done
  echo 'int main() { return sink > 0; }'
}
unit fixed.hpp 50 assign >"$dir/fifty.cpp"
unit fixed.hpp 10 tensor >"$dir/ten_tensor.cpp"
unit fixed.hpp 10 lazy >"$dir/ten_lazy.cpp"

measure() {
  if ! /usr/bin/time -f "%U %S" -o "$dir/time" "$cxx" -std=c++20 -O2 -Iinclude -c "$1" -o "$dir/out.o" 2>"$dir/log"; then
    printf '%-44s %s\n' "$2" "does not compile:"
    head -5 "$dir/log"
    return
  fi
  awk -v what="$2" '{printf "%-44s %6.2f s\n", what, $1 + $2}' "$dir/time"
}
echo "compiler: $($cxx --version | head -1), -O2, user+system CPU time"
measure "$dir/fixed.cpp" "#include <tg/fixed.hpp>"
measure "$dir/tg.cpp" "#include <tg/tg.hpp>"
measure "$dir/fifty.cpp" "50 static expressions (tg/fixed.hpp)"
measure "$dir/ten_tensor.cpp" "10 of them as tg::Tensor(expr) (tg/fixed.hpp)"
measure "$dir/ten_lazy.cpp" "10 of them as tg::lazy_tensor(expr)"
