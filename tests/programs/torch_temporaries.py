"""A small PyTorch training loop that allocates one large temporary every step:
the memory analysis and the memory_allocation finding are checked against what
this program is known to do.

  --temp-mib N     size of the per-step workspace (float32, zero-filled)
  --reuse          allocate the workspace once and refill it in place each step
                   (the fix the finding suggests)
  --steps, --batch as usual; prints a JSON line with the mean and median step
                   time (ns) of the steps after the first, for speed-up comparisons.

At the peak of each step the scratch buffer (allocated in the forward of the
root module, so inside the step) is live on top of a small MLP, so the
peak is the workspace plus under 1 MiB of model, gradients and activations, and
the op that allocated the largest live block is aten::zeros (or aten::empty
under it).
"""
import argparse
import json
import time

import torch
import torch.nn as nn
import torch.nn.functional as F


class Net(nn.Module):
    """An MLP whose forward stages its input through a large scratch buffer."""

    def __init__(self, n, reuse):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 10))
        self.n = n
        self.workspace = torch.zeros(n) if reuse else None

    def forward(self, x):
        if self.workspace is not None:
            buf = self.workspace
            buf.zero_()
        else:
            buf = torch.zeros(self.n)  # the planted cause: a fresh step-sized buffer
        staged = buf[: x.numel()]
        staged.copy_(x.reshape(-1))
        return self.body(staged.view_as(x))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--temp-mib", type=int, default=64)
    ap.add_argument("--steps", type=int, default=6)
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--reuse", action="store_true")
    args = ap.parse_args()
    torch.manual_seed(0)
    torch.set_num_threads(1)
    model = Net(args.temp_mib * 1024 * 1024 // 4, args.reuse)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    x = torch.randn(args.batch, 64)
    y = torch.randint(0, 10, (args.batch,))
    times = []
    for _ in range(args.steps):
        t0 = time.perf_counter_ns()
        loss = F.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        times.append(time.perf_counter_ns() - t0)
    later = sorted(times[1:] or times)
    print(json.dumps({"mean_step_ns": sum(later) / len(later), "median_step_ns": later[len(later) // 2],
                      "loss": float(loss)}))


if __name__ == "__main__":
    main()
