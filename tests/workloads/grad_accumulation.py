"""Gradient accumulation: each iteration (one optimizer update) runs --accum micro-batches
of a small CNN, each built from a hand-made batch and moved with .to(device), scales the
loss, and logs the mean loss with .item() after the update."""
import torch
import torch.nn as nn

from common import IterClock, parse_args


def main():
    args = parse_args(__doc__, iters=15, batch=16,
                      extra=lambda p: p.add_argument("--accum", type=int, default=4))
    torch.manual_seed(0)
    device = torch.device("cpu")
    model = nn.Sequential(nn.Conv2d(3, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                          nn.Conv2d(16, 32, 3, padding=1), nn.ReLU(), nn.AdaptiveAvgPool2d(1),
                          nn.Flatten(), nn.Linear(32, 10)).to(device)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    loss_fn = nn.CrossEntropyLoss()
    clock = IterClock(args)
    while clock.more():
        opt.zero_grad(set_to_none=True)
        total = 0.0
        for _ in range(args.accum):
            x = torch.randn(args.batch, 3, 32, 32).to(device)
            y = torch.randint(0, 10, (args.batch,)).to(device)
            loss = loss_fn(model(x), y) / args.accum
            loss.backward()
            total += loss.detach()
        opt.step()
        if not args.quiet:
            print(f"loss {float(total.item()):.4f}", flush=True)
        else:
            total.item()
        clock.tick(args.batch * args.accum)
    clock.done()


if __name__ == "__main__":
    main()
