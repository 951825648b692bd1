"""No planted bottleneck (GPU): a step bound by its matrix products.

A wide MLP trained in fp32 with large batches: every step is a few dozen large
GEMMs, the host launches far ahead of the device, and the device is busy nearly
all of the step. The right diagnosis says so (compute-bound, the GEMMs, their
FLOP/s against the device's peak) and blames no framework overhead, input or
allocation for more than a few percent. There is no --fixed: a faster step
needs less arithmetic or faster arithmetic (TF32/bf16), not a removed stall.

  python3 examples/bottlenecks/gpu_compute_bound.py [--steps N]
Prints iter_ms= per iteration (perf_counter around the whole iteration).
"""
import argparse
import time

import torch
import torch.nn as nn
import torch.nn.functional as F


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--steps", type=int, default=15)
    ap.add_argument("--batch", type=int, default=4096)
    ap.add_argument("--dim", type=int, default=4096)
    ap.add_argument("--layers", type=int, default=6)
    a = ap.parse_args()
    dev = torch.device("cuda")
    torch.manual_seed(0)
    layers = []
    for _ in range(a.layers):
        layers += [nn.Linear(a.dim, a.dim), nn.ReLU()]
    model = nn.Sequential(*layers, nn.Linear(a.dim, 10)).to(dev)
    opt = torch.optim.SGD(model.parameters(), lr=1e-3, momentum=0.9)
    x = torch.randn(a.batch, a.dim, device=dev)
    y = torch.randint(0, 10, (a.batch,), device=dev)
    running = 0.0
    t0 = time.perf_counter()
    for i in range(a.steps):
        loss = F.cross_entropy(model(x), y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        running += loss.item()
        t = time.perf_counter()
        print(f"iter_ms={1e3 * (t - t0):.3f}", flush=True)
        t0 = t
    print(f"compute-bound: {a.steps} steps, mean loss {running / a.steps:.4f}")


if __name__ == "__main__":
    main()
