#!/usr/bin/env python3
"""What a module call costs with strata's nn.Module scopes taken each way, in one
process, the ways alternating: none (strata's scopes taken out), call (the C
nn.Module.__call__, PyTorch 1.x), hooks (global forward hooks in C, 2.x) and
python hooks (the hooks written in Python). A two-module model (Sequential(Identity))
called in a loop; the figure is thread CPU time per module call (the best of 7
repetitions), and above `none`. Run under `strata record`:

  strata record -q -o /tmp/h -- /usr/bin/python3 bench/torch/module_hooks.py

This is the warm-cache cost; inside a training step it is higher (the step's
tensors evict the interpreter's working set): bench/torch/inprocess.py --modules.
"""
import sys
import time

import torch


def main():
    import strata._torch as st
    if not st.attached():
        sys.exit("run me under `strata record`")
    if st._hooks is None:
        sys.exit("the C module hooks (_strata_torch_hooks) are not built for this Python")
    st._modules_on(torch, False)
    root = torch.nn.Sequential(torch.nn.Identity())
    x = torch.randn(2, 4)
    n = 20000
    best = {}
    for _ in range(7):
        for way in ("none", "call", "hooks", "python hooks"):
            undo = st._put_module_scopes(torch, way) if way != "none" else None
            t = time.thread_time_ns()
            for _ in range(n):
                root(x)
            ns = (time.thread_time_ns() - t) / n / 2  # two modules per call
            if undo is not None:
                undo()
            best[way] = min(best.get(way, ns), ns)
    for way, ns in best.items():
        print("%-12s %7.0f ns per module call, %+6.0f ns above none" % (way, ns, ns - best["none"]))
    st._modules_on(torch, True)


if __name__ == "__main__":
    main()
