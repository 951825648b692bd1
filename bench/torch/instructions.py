#!/usr/bin/env python3
"""Instructions per training step with strata's PyTorch pieces switched on and off
in-process, for callgrind (deterministic, unlike time on a shared VM). Run N steps
after 0 warm-up steps in one configuration; the per-step count is the difference
of two runs with different N:

  for n in 3 13; do valgrind --tool=callgrind --trace-children=yes \\
      --callgrind-out-file=/tmp/cg.$n.%p build/bin/strata record -q --no-os -o /tmp/cg-$n \\
      -- /usr/bin/python3 bench/torch/instructions.py --model cnn --config 1111 --steps $n; done
  (callgrind_annotate each python3's file; (total13 - total3) / 10 per step)

--config HSMO: module hooks, the USER_SCOPE callback, the allocator reporter on
the thread, and the op tier (--ops all with memory events), each 0 or 1; 0000 is
the untraced program.
"""
import argparse
import ctypes
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402
import loop  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", default="cnn")
    ap.add_argument("--config", default="1111")
    ap.add_argument("--steps", type=int, default=3)
    args = ap.parse_args()
    if "STRATA_TORCH_LIB" not in os.environ:
        sys.exit("run me under `strata record`")
    torch.manual_seed(0)
    torch.set_num_threads(1)
    cnn = args.model == "cnn"
    model = loop.Cnn() if cnn else loop.Tiny()
    x, y = ((torch.randn(32, 1, 28, 28), torch.randint(0, 10, (32,))) if cnn else
            (torch.randn(8, 8), torch.randint(0, 8, (8,))))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    hooks, scopes, slot, ops = (c == "1" for c in args.config)
    obs = ctypes.CDLL(os.environ["STRATA_TORCH_LIB"])
    obs.strata_torch_set_tiers.argtypes = [ctypes.c_int] * 3
    obs.strata_torch_set_scopes.argtypes = [ctypes.c_int]
    obs.strata_torch_set_tiers(2 if ops else 0, 0, 1 if ops else 0)
    obs.strata_torch_set_scopes(1 if scopes else 0)
    if not hooks:
        import strata._torch as st
        st._modules_on(torch, False)
    obs.strata_torch_release_profiler_slot()
    if slot:
        obs.strata_torch_reclaim_profiler_slot()
    for _ in range(args.steps):
        loss = F.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()


if __name__ == "__main__":
    main()
