"""Planted bottleneck: slow data loading in the training process.

A small MLP trains on "records" that a Dataset fetches and decodes one sample at
a time, as a dataset read from network storage or object store does: each
sample waits for its bytes (a fixed latency per record) and then decodes them
(parsing, normalization). With the DataLoader's defaults (num_workers=0) all of
that runs in the training loop, between one optimizer step and the next, so the
step takes load + compute.

strata reports it as `input_pipeline`: the step's thread spends a large share
of each step inside DataLoader.__next__, and loading in background workers
would hide up to min(load, compute) of it.

--fixed applies the suggestion: DataLoader(num_workers=2, prefetch_factor=4,
persistent_workers=True). The workers fetch and decode the next batches while
the model computes; the step then costs about max(load, compute) plus the
batch's transfer from the worker.

  python3 examples/bottlenecks/slow_data_loading.py [--fixed] [--steps N]
"""
import argparse
import time

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, Dataset

from peer_profiler import torch_profiler

FEATURES = 256
CLASSES = 10


class RemoteRecords(Dataset):
    """Records fetched one at a time from slow storage and decoded.

    The fetch latency is a wait (no CPU), like a read from network storage; the
    decode is a small amount of real work. Loading a batch therefore costs about
    batch * latency whatever else runs on the machine, which keeps the example's
    numbers predictable on a shared, small machine.
    """

    def __init__(self, n, latency_s):
        self.n = n
        self.latency_s = latency_s
        g = torch.Generator().manual_seed(0)
        self.proto = torch.randn(CLASSES, FEATURES, generator=g)

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        time.sleep(self.latency_s)  # the record's bytes arrive
        label = i % CLASSES
        raw = self.proto[label] + 0.5 * torch.sin(torch.arange(FEATURES, dtype=torch.float32) * (i % 97 + 1))
        x = (raw - raw.mean()) / (raw.std() + 1e-6)  # decode: normalize
        return x, label


class Net(nn.Module):
    def __init__(self, width):
        super().__init__()
        self.fc1 = nn.Linear(FEATURES, width)
        self.fc2 = nn.Linear(width, width)
        self.fc3 = nn.Linear(width, CLASSES)

    def forward(self, x):
        return self.fc3(F.relu(self.fc2(F.relu(self.fc1(x)))))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--fixed", action="store_true", help="load in background worker processes")
    ap.add_argument("--steps", type=int, default=30)
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--latency-ms", type=float, default=0.4, help="fetch latency per record")
    ap.add_argument("--width", type=int, default=384, help="hidden width (sets the compute per step)")
    ap.add_argument("--torch-profiler", metavar="OUT.json", default="",
                    help="profile the loop with torch.profiler instead (the peer recording), into OUT.json")
    args = ap.parse_args()
    torch.manual_seed(0)
    # One compute thread: the example's compute time then does not depend on
    # how many cores the workers leave free.
    torch.set_num_threads(1)
    data = RemoteRecords(args.steps * args.batch, args.latency_ms / 1e3)
    if args.fixed:
        loader = DataLoader(data, batch_size=args.batch, num_workers=2, prefetch_factor=4, persistent_workers=True)
    else:
        loader = DataLoader(data, batch_size=args.batch)
    model = Net(args.width)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    t0 = t_iter = time.perf_counter()
    with torch_profiler(args.torch_profiler) as step_done:
        for step, (x, y) in enumerate(loader):
            loss = F.cross_entropy(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            step_done()
            t = time.perf_counter()
            print(f"iter_ms={1e3 * (t - t_iter):.3f}", flush=True)  # the program's own time per iteration
            t_iter = t
    dt = time.perf_counter() - t0
    print("%s: %d steps, %.1f ms/step, final loss %.4f" %
          ("fixed" if args.fixed else "slow", step + 1, 1e3 * dt / (step + 1), loss.item()))


if __name__ == "__main__":
    main()
