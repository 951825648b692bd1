"""A PyTorch training loop that allocates a large temporary tensor every step.

Planted bottleneck (memory_allocation): each step builds a fresh 64 MiB
accumulator with torch.zeros (say, per-feature statistics gathered beside the
model's step). A buffer that large is mapped fresh from the OS by the allocator
and unmapped when freed, so every step pays the page faults of its first touch
on top of the zero fill.

  strata record -- python3 examples/bottlenecks/large_allocs.py
  strata record -- python3 examples/bottlenecks/large_allocs.py --fixed

--fixed applies strata's suggestion: allocate the buffer once before the loop
and reuse it in place (zero_() then add_) each step.
"""
import argparse
import time

import torch
import torch.nn as nn

try:
    import strata
except ImportError:  # not under `strata record`: run unrecorded
    strata = None


class _Null:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=12)
    ap.add_argument("--mib", type=int, default=64, help="size of the per-step temporary, MiB")
    ap.add_argument("--fixed", action="store_true", help="reuse one preallocated buffer")
    a = ap.parse_args()

    torch.manual_seed(0)
    torch.set_num_threads(1)  # one core's worth of work, the same in both variants
    n = a.mib * 1024 * 1024 // 4
    features = torch.randn(n)
    model = nn.Sequential(nn.Linear(256, 256), nn.ReLU(), nn.Linear(256, 10))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    x = torch.randn(64, 256)
    y = torch.randint(0, 10, (64,))
    buf = torch.empty(n) if a.fixed else None
    total = 0.0
    t0 = time.perf_counter()
    for i in range(a.steps):
        with strata.step(samples=64) if strata else _Null():
            loss = nn.functional.cross_entropy(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            if a.fixed:
                acc = buf.zero_()
            else:
                acc = torch.zeros(n)  # a fresh 64 MiB tensor every step
            acc.add_(features)
            total += float(acc[:1024].sum())
        t = time.perf_counter()
        print(f"iter_ms={1e3 * (t - t0):.3f}", flush=True)  # the program's own time per iteration
        t0 = t
    print(f"steps={a.steps} fixed={a.fixed} total={total:.3f}")


if __name__ == "__main__":
    main()
