#!/usr/bin/env python3
"""What a module call costs with strata's nn.Module scopes taken each way, in one
process, the ways alternating: none (strata's scopes taken out), call (the C
nn.Module.__call__, PyTorch 1.x), hooks (global forward hooks in C, 2.x) and
python (the hooks written in Python). A two-module model (Sequential(Identity))
called in a loop; the figure is thread CPU time per module call (the best of 7
repetitions), and above `none`. Run under `strata record`:

  strata record -q -o /tmp/h -- /usr/bin/python3 bench/torch/module_hooks.py

This is the warm-cache cost; inside a training step it is higher (the step's
tensors evict the interpreter's working set): bench/torch/inprocess.py --modules.
"""
import sys
import time

import torch  # noqa: E402
import torch.nn.modules.module as mm  # noqa: E402


def main():
    import strata._torch as st
    if not st.attached():
        sys.exit("run me under `strata record`")
    if st._hooks is None or not hasattr(st._hooks, "wrap_call"):
        sys.exit("the C module hooks (_strata_torch_hooks) are not built for this Python")
    st._modules_on(torch, False)
    plain = torch.nn.Module.__call__
    root = torch.nn.Sequential(torch.nn.Identity())
    x = torch.randn(2, 4)
    n = 20000

    def install(way):
        if way == "call":
            torch.nn.Module.__call__ = st._hooks.wrap_call(plain)
            return []
        if way in ("hooks", "python"):
            pre, post = (st._hooks.pre_hook, st._hooks.post_hook) if way == "hooks" else (st._pre_hook, st._post_hook)
            return [mm.register_module_forward_pre_hook(pre), mm.register_module_forward_hook(post)]
        return []

    best = {}
    for _ in range(7):
        for way in ("none", "call", "hooks", "python"):
            handles = install(way)
            t = time.thread_time_ns()
            for _ in range(n):
                root(x)
            ns = (time.thread_time_ns() - t) / n / 2  # two modules per call
            torch.nn.Module.__call__ = plain
            for h in handles:
                h.remove()
            best[way] = min(best.get(way, ns), ns)
    for way, ns in best.items():
        print("%-7s %7.0f ns per module call, %+6.0f ns above none" % (way, ns, ns - best["none"]))
    st._modules_on(torch, True)


if __name__ == "__main__":
    main()
