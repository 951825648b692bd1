"""A PyTorch training run for strata's tests: recorded by `strata record` in the
tests, or profiled by torch.profiler in the same configuration so that the two
can be compared.

  --mode plain          train (under `strata record` in the tests)
  --mode profile        train inside torch.profiler; write its figures to --out
  --model mlp|cnn|graph which model (graph: Linear -> ReLU -> Linear, one forward)
  --end exit|segv|raise how the program ends when not normally
The measured steps run inside record_function("measured") in every mode, so a
test compares exactly the same ops.
"""
import argparse
import json
import os
import signal

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, Dataset


class Synthetic(Dataset):
    def __init__(self, n, shape, classes):
        g = torch.Generator().manual_seed(0)
        self.x = torch.randn(n, *shape, generator=g)
        self.y = torch.randint(0, classes, (n,), generator=g)

    def __len__(self):
        return len(self.x)

    def __getitem__(self, i):
        return self.x[i], self.y[i]


class Cnn(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 4, 3, padding=1)
        self.conv2 = nn.Conv2d(4, 8, 3, padding=1)
        self.fc1 = nn.Linear(8 * 4 * 4, 32)
        self.fc2 = nn.Linear(32, 10)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.conv1(x)), 2)
        x = F.max_pool2d(F.relu(self.conv2(x)), 2)
        return self.fc2(F.relu(self.fc1(torch.flatten(x, 1))))


def build(model):
    if model == "cnn":
        return Cnn(), (1, 16, 16)
    if model == "mlp":
        return nn.Sequential(nn.Linear(256, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU(), nn.Linear(512, 10)), (256,)
    return nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 4)), (16,)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--mode", default="plain")
    ap.add_argument("--model", default="cnn")
    ap.add_argument("--steps", type=int, default=4)
    ap.add_argument("--warmup", type=int, default=1)
    ap.add_argument("--batch", type=int, default=16)
    ap.add_argument("--workers", type=int, default=0)
    ap.add_argument("--memory", action="store_true")
    ap.add_argument("--script", action="store_true", help="run a TorchScript version of the model too")
    ap.add_argument("--end", default="normal")
    ap.add_argument("--out", default="")
    args = ap.parse_args()
    torch.manual_seed(0)
    torch.set_num_threads(1)
    model, shape = build(args.model)

    if args.model == "graph":
        x = torch.randn(8, 16)
        if args.script:
            scripted = torch.jit.script(model)
            with torch.no_grad():
                scripted(x)
        with torch.autograd.profiler.record_function("measured"):
            model(x)
        return finish(args, {})

    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    n = (args.warmup + args.steps) * args.batch
    loader = DataLoader(Synthetic(n, shape, 10), batch_size=args.batch, num_workers=args.workers)
    it = iter(loader)

    def step():
        x, y = next(it)
        loss = F.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        return loss

    for _ in range(args.warmup):
        step()
    results = {}
    # Made before the profiler starts: constructing a record_function runs an op.
    measured = torch.autograd.profiler.record_function("measured")
    if args.mode == "profile":
        from torch.profiler import ProfilerActivity, profile
        with profile(activities=[ProfilerActivity.CPU], profile_memory=args.memory) as prof:
            with measured:
                for _ in range(args.steps):
                    step()
        results["counts"] = {e.key: e.count for e in prof.key_averages()}
        if args.memory:
            # The profiler's memory figure: the peak of its running total.
            mem = sorted((e.start_us(), e.nbytes()) for e in prof.profiler.kineto_results.events()
                         if e.name() == "[memory]" and str(e.device_type()).endswith("CPU"))
            level = peak = 0
            for _, b in mem:
                level += b
                peak = max(peak, level)
            results["memory_peak"] = peak
    else:
        with measured:
            for _ in range(args.steps):
                step()
    return finish(args, results)


def finish(args, results):
    if args.out:
        with open(args.out, "w") as f:
            json.dump(results, f)
    if args.end == "exit":
        os._exit(3)
    if args.end == "segv":
        os.kill(os.getpid(), signal.SIGSEGV)
    if args.end == "raise":
        raise RuntimeError("the test program fails on purpose")


if __name__ == "__main__":
    main()
