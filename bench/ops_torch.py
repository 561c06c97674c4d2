#!/usr/bin/env python3
"""PyTorch's side of bench_ops: the same workloads on the CPU with 2 threads, eager as PyTorch
users write them. Prints "# torch <version>, <n> threads", then "<workload> <median ms>" per
workload, the names bench_ops registers. Names given as arguments run only those."""
import statistics
import sys
import time

try:
    import torch
    import torch.nn.functional as F
except ImportError as e:
    print(f"ops_torch.py: {e}")
    sys.exit(1)

torch.set_num_threads(2)
torch.manual_seed(0)
randn = torch.randn


def matmul(m, k, n):
    a, b = randn(m, k), randn(k, n)
    return lambda: a @ b


def linear(m, k, n):
    x, w = randn(m, k), randn(n, k)  # w as nn.Linear holds it: [out, in]
    return lambda: F.linear(x, w)


def bmm(batch, m, k, n):
    a, b = randn(batch, m, k), randn(batch, k, n)
    return lambda: torch.bmm(a, b)


def softmax():
    x = randn(4096, 4096)
    return lambda: torch.softmax(x, -1)


def layer_norm():
    x = randn(4096, 1024)
    return lambda: F.layer_norm(x, (1024,))


def sum_axis(axis):
    x = randn(4096, 4096)
    return lambda: x.sum(axis)


def conv2d():
    x, w = randn(32, 16, 28, 28), randn(32, 16, 3, 3)
    return lambda: F.conv2d(x, w, padding=1)


workloads = {
    "sgemm_256": lambda: matmul(256, 256, 256),
    "sgemm_1024": lambda: matmul(1024, 1024, 1024),
    "sgemm_2048": lambda: matmul(2048, 2048, 2048),
    "sgemm_128x784x256": lambda: matmul(128, 784, 256),
    "linear_128x784x256": lambda: linear(128, 784, 256),
    "linear_128x256x256": lambda: linear(128, 256, 256),
    "bmm_16x256x256x256": lambda: bmm(16, 256, 256, 256),
    "softmax_4096x4096": softmax,
    "layer_norm_4096x1024": layer_norm,
    "sum_axis0_4096x4096": lambda: sum_axis(0),
    "sum_axis1_4096x4096": lambda: sum_axis(1),
    "conv2d_3x3_32x16x28x28": conv2d,
}


def median_ms(fn):
    """Median over 7 batches of calls, each batch at least 50 ms, after a warm-up."""
    for _ in range(3):
        fn()
    t0 = time.perf_counter()
    fn()
    calls = max(1, int(0.05 / max(time.perf_counter() - t0, 1e-7)))
    times = []
    for _ in range(7):
        t0 = time.perf_counter()
        for _ in range(calls):
            fn()
        times.append((time.perf_counter() - t0) / calls)
    return statistics.median(times) * 1e3


print(f"# torch {torch.__version__}, {torch.get_num_threads()} threads", flush=True)
for name in sys.argv[1:] or workloads:
    print(f"{name} {median_ms(workloads[name]()):.6f}", flush=True)
