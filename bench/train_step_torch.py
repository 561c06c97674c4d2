#!/usr/bin/env python3
"""PyTorch's side of bench_train: a training step (Adam, cross-entropy) of --model mlp (784-256-
256-10, batch 128) or --model cnn (the Fashion-MNIST demo's CNN: two 3x3 convolutions with batch
norm, relu and 2x2 max pooling, then 1568-128-10, batch 128) on the CPU (or --device cuda), eager
as PyTorch users write it. Prints "ms_per_step <median ms>" (each step ends in loss.item(), which
waits for the GPU)."""
import argparse
import statistics
import time

import torch

parser = argparse.ArgumentParser()
parser.add_argument("--device", default="cpu")
parser.add_argument("--model", default="mlp", choices=["mlp", "cnn"])
args = parser.parse_args()
device = args.device

torch.manual_seed(0)
nn = torch.nn
if args.model == "mlp":
    model = nn.Sequential(
        nn.Linear(784, 256), nn.ReLU(),
        nn.Linear(256, 256), nn.ReLU(),
        nn.Linear(256, 10))
    x = torch.randn(128, 784, device=device)
    steps, rounds, warmup = 50, 7, 20
else:
    model = nn.Sequential(
        nn.Conv2d(1, 16, 3, 1, 1), nn.BatchNorm2d(16), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(16, 32, 3, 1, 1), nn.BatchNorm2d(32), nn.ReLU(), nn.MaxPool2d(2),
        nn.Flatten(), nn.Linear(32 * 7 * 7, 128), nn.ReLU(), nn.Linear(128, 10))
    x = torch.randn(128, 1, 28, 28, device=device)
    steps, rounds, warmup = 10, 5, 5
model = model.to(device)
opt = torch.optim.Adam(model.parameters(), lr=1e-3)
y = torch.randint(0, 10, (128,), device=device)


def step():
    opt.zero_grad()
    loss = torch.nn.functional.cross_entropy(model(x), y)
    loss.backward()
    opt.step()
    return loss.item()


for _ in range(warmup):
    step()
times = []
for _ in range(rounds):
    t0 = time.perf_counter()
    for _ in range(steps):
        step()
    times.append((time.perf_counter() - t0) / steps)
print(f"ms_per_step {statistics.median(times) * 1e3:.4f}")
