#!/usr/bin/env python3
"""Cost of strata's nn.Module scope hooks per module call (pre + post hook), called
directly in a loop on a two-module model. Run under `strata record`:

  strata record -q -o /tmp/h -- /usr/bin/python3 bench/torch/module_hooks.py          # the C hooks
  strata record -q -o /tmp/h -- /usr/bin/python3 bench/torch/module_hooks.py --python # the Python ones
"""
import os
import sys
import time

if "--python" in sys.argv:
    os.environ["STRATA_TORCH_PY_HOOKS"] = "1"
import torch  # noqa: E402
import torch.nn.modules.module as mm  # noqa: E402


def main():
    import strata._torch as st
    if not st.attached():
        sys.exit("run me under `strata record`")
    lin = torch.nn.Linear(4, 4)
    root = torch.nn.Sequential(lin)
    x = torch.randn(2, 4)
    pre = list(mm._global_forward_pre_hooks.values())[0]
    post = list(mm._global_forward_hooks.values())[0]
    n = 20000
    for _ in range(5):
        t = time.thread_time_ns()
        for _ in range(n):
            pre(root, (x,))
            pre(lin, (x,))
            post(lin, (x,), x)
            post(root, (x,), x)
        print("%s hooks: %.2f us per module call (pre + post)" % (
            "C" if st._hooks is not None else "Python", (time.thread_time_ns() - t) / n / 2 / 1e3))


if __name__ == "__main__":
    main()
