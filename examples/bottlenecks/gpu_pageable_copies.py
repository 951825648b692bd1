"""Planted bottleneck (GPU): every step copies its batch from pageable host memory.

The training loop keeps its dataset in ordinary (pageable) CPU tensors and moves
each batch with `x.to("cuda")`, as most first versions do. A copy from pageable
memory goes through the driver's staging buffer: it runs at a fraction of the
link's bandwidth and the host waits for it. With a 128 MiB batch and a model of a
few GEMMs, the copy is most of the step.

strata reports it as `memcpy`: copies per step with their bytes, kind, bandwidth
and the pageable flag, and the time they hold the device and the step.

--fixed applies the suggestion: the host batches are pinned once (`pin_memory()`)
and copied with `non_blocking=True`.

  python3 examples/bottlenecks/gpu_pageable_copies.py [--fixed] [--steps N]
Prints iter_ms= per iteration (perf_counter around the whole iteration).
"""
import argparse
import time

import torch
import torch.nn as nn
import torch.nn.functional as F


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--fixed", action="store_true", help="pinned host batches, non-blocking copies")
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--batch", type=int, default=4096)
    ap.add_argument("--features", type=int, default=8192)
    a = ap.parse_args()
    dev = torch.device("cuda")
    torch.manual_seed(0)
    batches = [torch.randn(a.batch, a.features) for _ in range(4)]
    labels = [torch.randint(0, 10, (a.batch,)) for _ in range(4)]
    if a.fixed:
        batches = [b.pin_memory() for b in batches]
        labels = [y.pin_memory() for y in labels]
    model = nn.Sequential(nn.Linear(a.features, 2048), nn.ReLU(), nn.Linear(2048, 2048), nn.ReLU(),
                          nn.Linear(2048, 10)).to(dev)
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    running = 0.0
    t0 = time.perf_counter()
    for i in range(a.steps):
        x = batches[i % 4].to(dev, non_blocking=a.fixed)
        y = labels[i % 4].to(dev, non_blocking=a.fixed)
        loss = F.cross_entropy(model(x), y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        running += loss.item()  # the loop's one logging sync
        t = time.perf_counter()
        print(f"iter_ms={1e3 * (t - t0):.3f}", flush=True)
        t0 = t
    print(f"{'fixed' if a.fixed else 'slow'}: {a.steps} steps, batch {a.batch}x{a.features} fp32 "
          f"({a.batch * a.features * 4 >> 20} MiB), mean loss {running / a.steps:.4f}")


if __name__ == "__main__":
    main()
