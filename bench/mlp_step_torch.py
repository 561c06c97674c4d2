#!/usr/bin/env python3
"""PyTorch's side of bench_train: the MLP 784-256-256-10 training step (batch 128, Adam,
cross-entropy) on the CPU (or --device cuda), eager as PyTorch users write it. Prints
"ms_per_step <median ms>" (each step ends in loss.item(), which waits for the GPU)."""
import argparse
import statistics
import time

import torch

parser = argparse.ArgumentParser()
parser.add_argument("--device", default="cpu")
device = parser.parse_args().device

torch.manual_seed(0)
model = torch.nn.Sequential(
    torch.nn.Linear(784, 256), torch.nn.ReLU(),
    torch.nn.Linear(256, 256), torch.nn.ReLU(),
    torch.nn.Linear(256, 10)).to(device)
opt = torch.optim.Adam(model.parameters(), lr=1e-3)
x = torch.randn(128, 784, device=device)
y = torch.randint(0, 10, (128,), device=device)


def step():
    opt.zero_grad()
    loss = torch.nn.functional.cross_entropy(model(x), y)
    loss.backward()
    opt.step()
    return loss.item()


for _ in range(20):
    step()
times = []
for _ in range(7):
    t0 = time.perf_counter()
    for _ in range(50):
        step()
    times.append((time.perf_counter() - t0) / 50)
print(f"ms_per_step {statistics.median(times) * 1e3:.4f}")
