"""Planted bottleneck: hundreds of tiny framework ops per step.

A tabular model standardizes and clips its input features before an MLP. The
preprocessing layer is written the way one writes it first: a Python loop over
the feature columns, each column scaled, shifted and clipped on its own. Every
column costs a handful of PyTorch ops on a tensor of `batch` elements, so each
op does almost no arithmetic and the step is dominated by per-op dispatch cost
(argument parsing, dispatcher, allocation) — several hundred ops per step.

strata reports it as `dispatch_overhead`: hundreds of ops per step shorter than
20 us each, most of the step, and suggests vectorizing.

--fixed applies the suggestion: the same standardization and clipping on the
whole [batch, features] tensor at once (three ops). Results are identical.

  python3 examples/bottlenecks/tiny_ops.py [--fixed] [--steps N]
"""
import argparse
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

from peer_profiler import torch_profiler


class Standardize(nn.Module):
    """(x - mean) / std per feature, clipped to [-clip, clip]."""

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
    ap.add_argument("--steps", type=int, default=50)
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--features", type=int, default=160)
    ap.add_argument("--torch-profiler", metavar="OUT.json", default="",
                    help="profile the loop with torch.profiler instead (the peer recording), into OUT.json")
    args = ap.parse_args()
    torch.manual_seed(0)
    torch.set_num_threads(1)
    g = torch.Generator().manual_seed(0)
    x_all = torch.randn(args.steps * args.batch, args.features, generator=g) * 3 + 1
    y_all = (x_all[:, 0] > 1).long()
    model = nn.Sequential(
        Standardize(x_all.mean(0), x_all.std(0), 3.0, args.fixed),
        nn.Linear(args.features, 64), nn.ReLU(), nn.Linear(64, 2))
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    t0 = t_iter = time.perf_counter()
    with torch_profiler(args.torch_profiler) as step_done:
        for step in range(args.steps):
            x = x_all[step * args.batch:(step + 1) * args.batch]
            y = y_all[step * args.batch:(step + 1) * args.batch]
            loss = F.cross_entropy(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            step_done()
            t = time.perf_counter()
            print(f"iter_ms={1e3 * (t - t_iter):.3f}", flush=True)  # the program's own time per iteration
            t_iter = t
    dt = time.perf_counter() - t0
    print("%s: %d steps, %.2f ms/step, final loss %.4f" %
          ("fixed" if args.fixed else "slow", args.steps, 1e3 * dt / args.steps, loss.item()))


if __name__ == "__main__":
    main()
