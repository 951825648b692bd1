"""Planted bottleneck (GPU): `.item()` calls inside the step.

A model is trained with per-block activation monitoring written the obvious way:
after each of its 8 blocks the forward logs the block's mean activation with
`.item()`, and the logging code formats it. Each `.item()` copies one number to
the host and waits for the device to finish everything queued before it; the
device then idles while the host wakes up, logs and launches the next block. The
host never runs ahead of the device.

strata reports it as `host_sync`: synchronizations per step (the program's own
8 + the loss's), the Python line of each, and the device idle after them.

--fixed applies the suggestion: the statistics stay on the device (a list of
0-d tensors) and are read once per step with one `torch.stack(...).tolist()`.

  python3 examples/bottlenecks/gpu_item_sync.py [--fixed] [--steps N]
Prints iter_ms= per iteration (perf_counter around the whole iteration).
"""
import argparse
import time

import torch
import torch.nn as nn
import torch.nn.functional as F


class Block(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.fc1 = nn.Linear(d, 2 * d)
        self.fc2 = nn.Linear(2 * d, d)
        self.norm = nn.LayerNorm(d)

    def forward(self, x):
        return x + self.fc2(F.gelu(self.fc1(self.norm(x))))


class Net(nn.Module):
    def __init__(self, d, blocks, classes):
        super().__init__()
        self.blocks = nn.ModuleList(Block(d) for _ in range(blocks))
        self.head = nn.Linear(d, classes)

    def forward(self, x, monitor):
        for k, b in enumerate(self.blocks):
            x = b(x)
            monitor(k, x.detach().abs().mean())
        return self.head(x)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--fixed", action="store_true", help="keep the statistics on the device, read once per step")
    ap.add_argument("--steps", type=int, default=30)
    ap.add_argument("--batch", type=int, default=512)
    ap.add_argument("--dim", type=int, default=1024)
    a = ap.parse_args()
    dev = torch.device("cuda")
    torch.manual_seed(0)
    model = Net(a.dim, 8, 10).to(dev)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    xs = [torch.randn(a.batch, a.dim, device=dev) for _ in range(4)]
    ys = [torch.randint(0, 10, (a.batch,), device=dev) for _ in range(4)]
    history = {k: [] for k in range(8)}
    pending = []

    def monitor_slow(k, v):
        value = v.item()  # the planted sync: one per block
        history[k].append(value)
        if value > 1e3:
            print(f"block {k}: activations blow up ({value:.1f})")

    def monitor_fixed(k, v):
        pending.append(v)

    monitor = monitor_fixed if a.fixed else monitor_slow
    t0 = time.perf_counter()
    running = 0.0
    for i in range(a.steps):
        out = model(xs[i % 4], monitor)
        loss = F.cross_entropy(out, ys[i % 4])
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        if a.fixed:
            for k, value in enumerate(torch.stack(pending).tolist()):
                history[k].append(value)
            pending.clear()
        running += loss.item()
        t = time.perf_counter()
        print(f"iter_ms={1e3 * (t - t0):.3f}", flush=True)
        t0 = t
    print(f"{'fixed' if a.fixed else 'slow'}: {a.steps} steps, mean loss {running / a.steps:.4f}, "
          f"last block-7 activation {history[7][-1]:.4f}")


if __name__ == "__main__":
    main()
