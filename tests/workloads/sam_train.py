"""Sharpness-aware minimization as its popular implementation writes it: a SAM
optimizer wrapping SGD, with first_step() (climb to the worst nearby weights) and
second_step() (the base optimizer's step from there); each iteration runs the
forward and backward twice on the same batch. A small CNN on batches from a
DataLoader."""
import torch
import torch.nn as nn

from common import IterClock, parse_args


class SAM(torch.optim.Optimizer):
    def __init__(self, params, base_optimizer, rho=0.05, **kwargs):
        defaults = dict(rho=rho, **kwargs)
        super().__init__(params, defaults)
        self.base_optimizer = base_optimizer(self.param_groups, **kwargs)
        self.param_groups = self.base_optimizer.param_groups

    @torch.no_grad()
    def first_step(self, zero_grad=False):
        norm = torch.norm(torch.stack([p.grad.norm(2) for g in self.param_groups for p in g["params"]
                                       if p.grad is not None]), 2)
        for group in self.param_groups:
            scale = group["rho"] / (norm + 1e-12)
            for p in group["params"]:
                if p.grad is None:
                    continue
                e_w = p.grad * scale
                p.add_(e_w)
                self.state[p]["e_w"] = e_w
        if zero_grad:
            self.zero_grad()

    @torch.no_grad()
    def second_step(self, zero_grad=False):
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is None:
                    continue
                p.sub_(self.state[p]["e_w"])
        self.base_optimizer.step()
        if zero_grad:
            self.zero_grad()


def main():
    args = parse_args(__doc__, iters=30, batch=64)
    torch.manual_seed(0)
    model = nn.Sequential(nn.Conv2d(3, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                          nn.Conv2d(16, 32, 3, padding=1), nn.ReLU(), nn.AdaptiveAvgPool2d(1), nn.Flatten(),
                          nn.Linear(32, 10))
    opt = SAM(model.parameters(), torch.optim.SGD, lr=0.05, momentum=0.9)
    loss_fn = nn.CrossEntropyLoss()
    data = torch.utils.data.TensorDataset(torch.randn(2048, 3, 32, 32), torch.randint(0, 10, (2048,)))
    loader = torch.utils.data.DataLoader(data, batch_size=args.batch, shuffle=True, drop_last=True)
    clock = IterClock(args)
    while clock.more():
        for x, y in loader:
            loss_fn(model(x), y).backward()
            opt.first_step(zero_grad=True)
            loss_fn(model(x), y).backward()
            opt.second_step(zero_grad=True)
            clock.tick(x.shape[0])
            if not clock.more():
                break
    clock.done()


if __name__ == "__main__":
    main()
