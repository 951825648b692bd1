"""One measured training loop of the PyTorch overhead benchmark (run by
bench/torch/overhead.py, once per mode, as its own process).

  --model cnn    2 conv + 2 linear, batch 32, 28x28 inputs from a DataLoader, SGD
  --model tiny   hundreds of small tanh/mul ops per step (the dispatch-bound case)
  --floor LIB    register a do-nothing global RecordFunction callback first
  --profiler off|shapes   run the timed steps inside torch.profiler

Prints one JSON line: median step time (wall clock, and the process's CPU time,
which other processes competing for the CPUs do not inflate: it includes
strata's and the profiler's own threads), and for --profiler the time its
context took to exit (its post-processing) and its event count.
"""
import argparse
import ctypes
import json
import statistics
import time

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset


class Cnn(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 8, 3, padding=1)
        self.conv2 = nn.Conv2d(8, 16, 3, padding=1)
        self.fc1 = nn.Linear(16 * 7 * 7, 64)
        self.fc2 = nn.Linear(64, 10)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.conv1(x)), 2)
        x = F.max_pool2d(F.relu(self.conv2(x)), 2)
        return self.fc2(F.relu(self.fc1(torch.flatten(x, 1))))


class Tiny(nn.Module):
    """100 x (mul, tanh, mul) on an 8x8 tensor: ~300 forward ops, ~2000 per step."""

    def __init__(self):
        super().__init__()
        self.w = nn.Parameter(torch.randn(8, 8) * 0.1)

    def forward(self, x):
        h = x
        for _ in range(100):
            h = torch.tanh(h * 0.5) * self.w
        return h


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", default="cnn")
    ap.add_argument("--steps", type=int, default=200)
    ap.add_argument("--warmup", type=int, default=20)
    ap.add_argument("--floor", default="")
    ap.add_argument("--profiler", default="")
    args = ap.parse_args()
    torch.manual_seed(0)
    torch.set_num_threads(1)
    if args.floor:
        ctypes.CDLL(args.floor).strata_bench_floor_register()
    total = args.warmup + args.steps
    if args.model == "cnn":
        model, batch, shape = Cnn(), 32, (1, 28, 28)
    else:
        model, batch, shape = Tiny(), 8, (8,)
    data = TensorDataset(torch.randn(total * batch, *shape), torch.randint(0, 8 if args.model == "tiny" else 10, (total * batch,)))
    loader = DataLoader(data, batch_size=batch)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    times = []
    it = iter(loader)

    cpu = []

    def step():
        c0 = time.process_time_ns()
        t0 = time.perf_counter_ns()
        x, y = next(it)
        loss = F.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        t1 = time.perf_counter_ns()
        cpu.append(time.process_time_ns() - c0)
        return t1 - t0

    for _ in range(args.warmup):
        step()
    cpu.clear()
    out = {}
    if args.profiler:
        from torch.profiler import ProfilerActivity, profile
        prof = profile(activities=[ProfilerActivity.CPU], record_shapes=args.profiler == "shapes")
        prof.__enter__()
        for _ in range(args.steps):
            times.append(step())
        t0 = time.process_time_ns()
        prof.__exit__(None, None, None)
        out["profiler_exit_ns"] = time.process_time_ns() - t0
        out["profiler_events"] = len(prof.events())
    else:
        for _ in range(args.steps):
            times.append(step())
    out["median_ns"] = statistics.median(times)
    out["median_cpu_ns"] = statistics.median(cpu)
    out["times_ns"] = times
    out["end_monotonic_ns"] = time.monotonic_ns()
    print(json.dumps(out), flush=True)


if __name__ == "__main__":
    main()
