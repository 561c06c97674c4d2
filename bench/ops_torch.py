#!/usr/bin/env python3
"""PyTorch's side of bench_ops: the same workloads on the CPU with 2 threads, eager as PyTorch
users write them. Prints "# torch <version>, <n> threads", then "<workload> <median ms>" per
workload, the names bench_ops registers. Names given as arguments run only those.

With --device cuda, bench_gpu's CUDA workloads on the GPU instead: float32 matrix products in
full float32 (TF32 off, as tg computes them), float16 ones through cuBLAS's tensor cores, and a
device-to-device copy (copy_64m) as the bandwidth ceiling. Each call is followed by
torch.cuda.synchronize(), as bench_gpu waits for each of tg's results."""
import statistics
import sys
import time

try:
    import torch
    import torch.nn.functional as F
except ImportError as e:
    print(f"ops_torch.py: {e}")
    sys.exit(1)

args = sys.argv[1:]
device = "cpu"
if args[:1] == ["--device"]:
    device, args = args[1], args[2:]
cuda = device == "cuda"
if cuda and not torch.cuda.is_available():
    print("ops_torch.py: torch.cuda is not available")
    sys.exit(1)
torch.set_num_threads(2)
torch.manual_seed(0)
torch.backends.cuda.matmul.allow_tf32 = False
torch.backends.cudnn.allow_tf32 = False


def randn(*shape, dtype=torch.float32):
    return torch.randn(*shape, device=device, dtype=dtype)


def sync():
    if cuda:
        torch.cuda.synchronize()


def matmul(m, k, n, dtype=torch.float32):
    a, b = randn(m, k, dtype=dtype), randn(k, n, dtype=dtype)
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


def conv2d(n=32, c=16, s=28, out=32):
    x, w = randn(n, c, s, s), randn(out, c, 3, 3)
    return lambda: F.conv2d(x, w, padding=1)


def conv2d_train(n=32, c=16, s=28, out=32):
    """The output and the gradients of x and w for an output gradient g."""
    x = randn(n, c, s, s).requires_grad_()
    w = randn(out, c, 3, 3).requires_grad_()
    g = randn(n, out, s, s)

    def f():
        y = F.conv2d(x, w, padding=1)
        return y, torch.autograd.grad(y, (x, w), g)

    return f


N64M = 1 << 26


def copy():
    x, y = randn(N64M), randn(N64M)
    return lambda: y.copy_(x)


def scale():
    x = randn(N64M)
    return lambda: x * 1.5


def fused():
    a, b, c = randn(N64M), randn(N64M), randn(N64M)
    return lambda: torch.relu(a * b + c)


def full_sum():
    x = randn(N64M)
    return lambda: x.sum()


def small_chain():
    x = randn(64, 64)

    def f():
        y = x
        for i in range(10):
            y = y * 1.5 if i % 2 else y + 0.5
        return y

    return f


# the row and column reductions and the convolution, on either device
common = {
    "softmax_4096x4096": softmax,
    "layer_norm_4096x1024": layer_norm,
    "sum_axis0_4096x4096": lambda: sum_axis(0),
    "sum_axis1_4096x4096": lambda: sum_axis(1),
    "conv2d_3x3_32x16x28x28": conv2d,
}

workloads = {
    "sgemm_255": lambda: matmul(255, 255, 255),
    "sgemm_256": lambda: matmul(256, 256, 256),
    "sgemm_1000": lambda: matmul(1000, 1000, 1000),
    "sgemm_1024": lambda: matmul(1024, 1024, 1024),
    "sgemm_2048": lambda: matmul(2048, 2048, 2048),
    "sgemm_128x784x256": lambda: matmul(128, 784, 256),
    "linear_128x784x256": lambda: linear(128, 784, 256),
    "linear_128x256x256": lambda: linear(128, 256, 256),
    "linear_100x784x1000": lambda: linear(100, 784, 1000),
    "linear_6x784x1000": lambda: linear(6, 784, 1000),
    "bmm_16x256x256x256": lambda: bmm(16, 256, 256, 256),
    "bgemm_1024": lambda: matmul(1024, 1024, 1024, torch.bfloat16),
    "bgemm_2048": lambda: matmul(2048, 2048, 2048, torch.bfloat16),
    **common,
    "conv2d_3x3_64x64x56x56": lambda: conv2d(64, 64, 56, 64),
    "conv2d_train_3x3_32x16x28x28": conv2d_train,
    "conv2d_train_3x3_64x64x56x56": lambda: conv2d_train(64, 64, 56, 64),
}

gpu_workloads = {
    "sgemm_1024": lambda: matmul(1024, 1024, 1024),
    "sgemm_4096": lambda: matmul(4096, 4096, 4096),
    "hgemm_4096": lambda: matmul(4096, 4096, 4096, torch.float16),
    "bgemm_4096": lambda: matmul(4096, 4096, 4096, torch.bfloat16),
    "linear_128x784x256": lambda: linear(128, 784, 256),
    "bmm_16x256x256x256": lambda: bmm(16, 256, 256, 256),
    **common,
    "conv2d_3x3_64x64x56x56": lambda: conv2d(64, 64, 56, 64),
    "copy_64m": copy,
    "scale_64m": scale,
    "fused_relu_mul_add_64m": fused,
    "sum_64m": full_sum,
    "small_chain_64x64": small_chain,
}


def median_ms(f):
    """Median over 7 batches of calls, each batch at least 50 ms, after a warm-up."""

    def fn():
        f()
        sync()

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


if cuda:
    table = gpu_workloads
    print(f"# torch {torch.__version__}, {torch.cuda.get_device_name()}", flush=True)
else:
    table = workloads
    print(f"# torch {torch.__version__}, {torch.get_num_threads()} threads", flush=True)
for name in args or table:
    print(f"{name} {median_ms(table[name]()):.6f}", flush=True)
