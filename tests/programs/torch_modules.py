"""Module scopes (tests/torch_test.cc, TorchRecord.ModuleScopes*): a nested model
run for 3 steps under `strata record`; in the second, a submodule's forward raises
and the model catches it. The program's own global forward hook counts module
calls: strata's scopes must leave it working.

  --via hooks|python   take module scopes with strata's global forward hooks in
                       C, or the ones written in Python (as a Python the C ones
                       were not built for would), instead of the best available
                       (with PyTorch 1.x, the C nn.Module.__call__)
Prints how scopes were taken, the depth of the C module stack after each step
(0: every scope was closed) and the user hook's count.
"""
import os
import sys

if "--via" in sys.argv:
    os.environ["STRATA_TORCH_MODULES_VIA"] = sys.argv[sys.argv.index("--via") + 1]

import torch  # noqa: E402
import torch.nn as nn  # noqa: E402


class Boom(nn.Module):
    def forward(self, x):
        raise ValueError("boom")


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(8, 8)
        self.act = nn.ReLU()

    def forward(self, x):
        return self.act(self.fc(x))


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.blocks = nn.Sequential(Block(), Block())
        self.boom = Boom()
        self.head = nn.Linear(8, 2)

    def forward(self, x, fail=False):
        x = self.blocks(x)
        if fail:
            try:
                self.boom(x)
            except ValueError:
                pass
        return self.head(x)


def main():
    import strata._torch as st
    print("modules:", st._modules if st.attached() else "none")
    calls = []
    handle = nn.modules.module.register_module_forward_hook(lambda m, i, o: calls.append(type(m).__name__))
    net = Net()
    x = torch.randn(4, 8)
    opt = torch.optim.SGD(net.parameters(), lr=0.1)
    for i in range(3):
        loss = net(x, fail=i == 1).sum()
        opt.zero_grad()
        loss.backward()
        opt.step()
        if st._hooks is not None:
            print("depth:", st._hooks.depth())
    handle.remove()
    # 3 steps x 9 modules (Net, Sequential, 2 x (Block, Linear, ReLU), Linear); Boom raised.
    print("user hook calls:", len(calls))


if __name__ == "__main__":
    main()
