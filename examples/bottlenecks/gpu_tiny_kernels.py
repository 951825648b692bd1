"""Planted bottleneck (GPU): hundreds of tiny kernels per step.

The GPU version of tiny_ops.py: a tabular model standardizes and clips its input
features in a Python loop over the columns, on the device. Each column costs a
few kernels on `batch` elements, each of which runs for a couple of microseconds,
less than the host needs to launch the next: the device idles between kernels
and the step is the host's launch loop.

strata reports it as `dispatch_overhead`: kernels per step shorter than the gap
between their launches, and the ops that launched them.

--fixed applies the suggestion: the same arithmetic on the whole [batch, features]
tensor at once (three kernels). Results are identical.

  python3 examples/bottlenecks/gpu_tiny_kernels.py [--fixed] [--steps N]
Prints iter_ms= per iteration (perf_counter around the whole iteration).
"""
import argparse
import time

import torch
import torch.nn as nn
import torch.nn.functional as F


class Standardize(nn.Module):
    def __init__(self, mean, std, clip, vectorized):
        super().__init__()
        self.register_buffer("mean", mean)
        self.register_buffer("inv_std", 1.0 / std)
        self.clip = clip
        self.vectorized = vectorized

    def forward(self, x):
        if self.vectorized:
            return torch.clamp((x - self.mean) * self.inv_std, -self.clip, self.clip)
        cols = []
        for j in range(x.shape[1]):  # the planted bottleneck: one column at a time
            c = (x[:, j] - self.mean[j]) * self.inv_std[j]
            cols.append(torch.clamp(c, -self.clip, self.clip))
        return torch.stack(cols, dim=1)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--fixed", action="store_true", help="vectorize the preprocessing")
    ap.add_argument("--steps", type=int, default=30)
    ap.add_argument("--batch", type=int, default=1024)
    ap.add_argument("--features", type=int, default=128)
    a = ap.parse_args()
    dev = torch.device("cuda")
    torch.manual_seed(0)
    x_all = (torch.randn(8 * a.batch, a.features) * 3 + 1).to(dev)
    y_all = (x_all[:, 0] > 1).long()
    model = nn.Sequential(Standardize(x_all.mean(0), x_all.std(0), 3.0, a.fixed),
                          nn.Linear(a.features, 256), nn.ReLU(), nn.Linear(256, 2)).to(dev)
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    running = 0.0
    t0 = time.perf_counter()
    for i in range(a.steps):
        k = i % 8
        x = x_all[k * a.batch:(k + 1) * a.batch]
        y = y_all[k * a.batch:(k + 1) * a.batch]
        loss = F.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        running += loss.item()
        t = time.perf_counter()
        print(f"iter_ms={1e3 * (t - t0):.3f}", flush=True)
        t0 = t
    print(f"{'fixed' if a.fixed else 'slow'}: {a.steps} steps, mean loss {running / a.steps:.4f}")


if __name__ == "__main__":
    main()
