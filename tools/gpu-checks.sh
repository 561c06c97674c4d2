#!/usr/bin/env bash
# The checks that need an NVIDIA GPU, in one short run (a lent GPU machine has no package registry
# and little time, so the programs are built here and carried there):
#
#   tools/gpu-checks.sh --build DIR   here: builds the CUDA-relevant tests, the character
#                                     transformer, bench_gpu and bench_train (Release, libstdc++
#                                     linked in) into DIR, with the shared libraries they need
#   tools/gpu-checks.sh DIR [STEPS]   there: runs them on CUDA, each with its own time limit; logs
#                                     go to $OUT (default /tmp/tg-gpu-out). STEPS (default all):
#                                     probe bench variants cuda ops train jit items beam
#                                     example fuzz
#
# Nothing here needs CUDA headers: the driver and NVRTC are opened at run time (TG_NVRTC is set to
# the first libnvrtc found when none is on the library path).
set -uo pipefail
cd "$(dirname "$0")/.."

if [[ "${1:-}" == --build ]]; then
  set -e
  dir=${2:?usage: tools/gpu-checks.sh --build DIR}
  build=build-gpu
  # (no -Werror: GCC 12 at -O3 warns of null arguments inside std::vector<char>::insert, falsely)
  cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DTG_BUILD_TESTS=ON \
    -DTG_BUILD_BENCH=ON -DTG_BUILD_EXAMPLES=ON -DTG_WERROR=OFF \
    -DCMAKE_EXE_LINKER_FLAGS="-static-libstdc++ -static-libgcc"
  cmake --build "$build" -j "$(nproc)" --target test_cuda test_ops test_fuzz test_jit \
    example_char_transformer bench_gpu bench_train
  mkdir -p "$dir"
  for f in tests/test_cuda tests/test_ops tests/test_fuzz tests/test_jit \
    examples/example_char_transformer \
    bench/bench_gpu bench/bench_train; do
    strip -o "$dir/$(basename $f)" "$build/$f"
  done
  # bench_gpu links Google Benchmark's shared library
  cp -L "$(ldd "$build/bench/bench_gpu" | awk '/libbenchmark/ {print $3}')" "$dir/"
  cp /usr/share/common-licenses/GPL-3 "$dir/"
  # NVRTC's output for test_cuda's kernels, compiled here: where the GPU machine's NVRTC is the
  # same version, its runs read them from this cache instead of compiling them again
  rm -rf "$dir/cache"
  TG_CACHE_DIR="$PWD/$dir/cache" "$dir/test_cuda" -tc='*broad op list*' >/dev/null
  du -sh "$dir"
  exit 0
fi

dir=$(cd "${1:?usage: tools/gpu-checks.sh DIR [STEPS]}" && pwd)
shift
steps=" ${*:-probe bench variants cuda ops train jit items beam example fuzz} "
out=${OUT:-/tmp/tg-gpu-out}
mkdir -p "$out"
export LD_LIBRARY_PATH="$dir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export TG_CACHE_DIR=${TG_CACHE_DIR:-/tmp/tg-gpu-cache}
[[ -d "$dir/cache" ]] && mkdir -p "$TG_CACHE_DIR" && cp -r "$dir/cache/." "$TG_CACHE_DIR/"
# NVRTC: the library path first, else a toolkit's or a pip wheel's
if ! ldconfig -p | grep -q 'libnvrtc\.so'; then
  for f in /usr/local/cuda*/lib64/libnvrtc.so* /usr/local/cuda*/targets/x86_64-linux/lib/libnvrtc.so* \
    $(python3 -c 'import nvidia, os; print(os.path.dirname(nvidia.__path__[0]))' 2>/dev/null)/nvidia/*/lib/libnvrtc.so*; do
    [[ -f "$f" && "$f" != *alt* && "$f" != *builtins* ]] && export TG_NVRTC=$f && break
  done
fi

status=0
# step NAME LIMIT CMD...: runs CMD under a time limit, its output in $out/NAME.log (last lines here)
step() {
  local name=$1 limit=$2
  shift 2
  [[ "$steps" == *" $name "* ]] || return 0
  printf '\n==== %s (limit %ss)\n' "$name" "$limit"
  local t0=$SECONDS rc
  timeout "$limit" "$@" >"$out/$name.log" 2>&1
  rc=$?
  tail -n 25 "$out/$name.log"
  printf '==== %s: exit %s after %ss\n' "$name" "$rc" "$((SECONDS - t0))"
  ((rc == 0)) || status=1
}

probe() {
  nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm --format=csv
  echo "cc: $(command -v cc || echo none) ($(cc --version 2>/dev/null | head -1))"
  echo "TG_NVRTC=${TG_NVRTC:-}"
  ldconfig -p | grep -E 'libcuda\.so|libnvrtc\.so' | head -4
  python3 -c 'import torch; print("torch", torch.__version__, torch.cuda.get_device_name())' || true
}
# The most telling first: a lent machine's time may run out before the end.
step probe 30 bash -c "$(declare -f probe); probe"
step bench 150 env TG_BENCH_DEVICES=CUDA "$dir/bench_gpu" --benchmark_min_time=0.1
# The products without tensor cores, with a thread's outputs 16 apart (TG_GPU_TILE_LAYOUT=0), as
# register tiles without shared memory (TG_GPU_SHARED_TILES=0), and in two stages
# (TG_GPU_STAGES=2); then the machine code of
# sgemm 4096²'s kernel: how many instructions of each kind.
variants() {
  for v in TG_GPU_TENSOR_CORES=0 TG_GPU_TILE_LAYOUT=0 TG_GPU_SHARED_TILES=0 TG_GPU_STAGES=2; do
    echo "$v"
    env "$v" TG_BENCH_DEVICES=CUDA "$1/bench_gpu" \
      --benchmark_filter='^(sgemm|hgemm|bgemm|linear|bmm|conv2d)[^/]*/CUDA' \
      --benchmark_min_time=0.05 2>&1 | grep -E 'real_time|ERROR|error'
  done
  for f in $(grep -l rt128x128k8_4096_4096 "$TG_CACHE_DIR"/cuda-*.cubin | head -1); do
    cuobjdump -sass "$f" | grep -oE '^ +/\*[0-9a-f]+\*/ +[A-Z0-9.]+' | awk '{print $2}' |
      sort | uniq -c | sort -rn | head -25
  done
}
step variants 150 bash -c "$(declare -f variants); variants $dir"
step cuda 90 "$dir/test_cuda"
# (every product as a shared-memory tile, small ones too)
step ops 120 env TG_TEST_DEVICES=INTERP,CUDA TG_GPU_SHARED_TILES=2 "$dir/test_ops"
# The elementwise kernels again with 1 and 4 items a thread (the default, 8, is in the bench
# above), and the machine code of x * 1.5 over 2^26 floats (scale_64m): its loads and stores.
items() {
  for n in 1 4; do
    echo "TG_GPU_PER_THREAD=$n"
    TG_BENCH_DEVICES=CUDA TG_GPU_PER_THREAD=$n "$1/bench_gpu" \
      --benchmark_filter='^(scale|fused)[^/]*/CUDA' --benchmark_min_time=0.1 2>&1 | grep real_time
  done
  for f in $(grep -l E_67108864 "$TG_CACHE_DIR"/cuda-*.cubin); do
    cuobjdump -sass "$f" | grep -E 'Function|LDG|STG|BRA|ISETP' | head -40
  done
}
step items 60 bash -c "$(declare -f items); items $dir"
# The MLP training step of bench_train (784-256-256-10, batch 128, Adam) on CUDA against PyTorch's
# on the same GPU: replayed as a CUDA graph, then launch by launch (TG_JIT_GRAPH=0).
train() {
  TG_BENCH_DEVICE=CUDA "$1/bench_train" --benchmark_filter='(tg|torch)_mlp_step'
  echo "TG_JIT_GRAPH=0"
  TG_JIT_GRAPH=0 TG_BENCH_DEVICE=CUDA "$1/bench_train" --benchmark_filter='tg_mlp_step' 2>&1 |
    grep real_time
}
step train 120 bash -c "$(declare -f train); train $dir"
# tg::jit's tests with CUDA the default device: replays as CUDA graphs equal the eager steps
step jit 60 env TG_DEVICE=CUDA "$dir/test_jit"
# TG_BEAM=8 on the products: the fastest of up to 8 lowerings of each kernel, timed on the GPU,
# and which one won (its index in engine/beam.hpp's candidates; 0: the default's).
beam() {
  export TG_CACHE_DIR=/tmp/tg-gpu-beam TG_BENCH_DEVICES=CUDA TG_BEAM=8
  for w in sgemm_1024 linear_128x784x256 conv2d_3x3_32x16x28x28; do
    rm -rf "$TG_CACHE_DIR"
    "$1/bench_gpu" --benchmark_filter="^$w/CUDA" --benchmark_min_time=0.1 2>&1 | grep real_time
    echo "$w: beam chose $(cat "$TG_CACHE_DIR"/beam-*.txt | tr '\n' ' ')"
  done
}
step beam 100 bash -c "$(declare -f beam); beam $dir"
step example 60 env TG_DEVICE=CUDA TG_QUICK=1 "$dir/example_char_transformer" --text "$dir/GPL-3"
step fuzz 80 env TG_TEST_DEVICES=INTERP,CUDA TG_FUZZ_GRAPHS=${TG_FUZZ_GRAPHS:-400} "$dir/test_fuzz"
exit $status
