"""Module scopes (tests/torch_test.cc, TorchRecord.ModuleScopes*): a nested model
run for 3 steps under `strata record`; in the second, a submodule's forward raises
and the model catches it.

  --python-hooks   use strata's nn.Module hooks written in Python instead of the
                   C ones (_strata_torch_hooks), as a Python they were not built for would
Prints which hooks ran, and the depth of the C hooks' module stack after each
step (0: every scope was closed).
"""
import os
import sys

if "--python-hooks" in sys.argv:
    os.environ["STRATA_TORCH_PY_HOOKS"] = "1"

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
    print("hooks:", "c" if st._hooks is not None else "python" if st.attached() else "none")
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


if __name__ == "__main__":
    main()
