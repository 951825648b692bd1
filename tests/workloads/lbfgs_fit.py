"""Curve fitting with L-BFGS: each iteration calls optimizer.step(closure), and
the closure runs the forward and backward (up to max_iter=4 evaluations per
step), as torch.optim.LBFGS is used; the loss is printed every 5 iterations."""
import torch
import torch.nn as nn
from common import IterClock, parse_args


def main():
    args = parse_args(__doc__, iters=25, batch=2048)
    torch.manual_seed(0)
    x = torch.linspace(-3, 3, args.batch).unsqueeze(1)
    y = torch.sin(2 * x) + 0.1 * torch.randn_like(x)
    model = nn.Sequential(nn.Linear(1, 64), nn.Tanh(), nn.Linear(64, 64), nn.Tanh(), nn.Linear(64, 1))
    opt = torch.optim.LBFGS(model.parameters(), lr=0.5, max_iter=4, history_size=10)

    def closure():
        opt.zero_grad()
        loss = nn.functional.mse_loss(model(x), y)
        loss.backward()
        return loss

    clock = IterClock(args)
    i = 0
    while clock.more():
        loss = opt.step(closure)
        if i % 5 == 0:
            print(f"iter {i} loss {loss.item():.5f}", flush=True)
        i += 1
        clock.tick(args.batch)
    clock.done()


if __name__ == "__main__":
    main()
