"""A loop that allocates scratch tensors every iteration outside the model: a fresh
input buffer filled in place, a large temporary for feature normalisation, a mask, then a
two-layer MLP update with SGD (momentum) and an .item() every iteration."""
import torch
import torch.nn as nn

from common import IterClock, parse_args


def main():
    args = parse_args(__doc__, iters=20, batch=128,
                      extra=lambda p: p.add_argument("--features", type=int, default=1024))
    torch.manual_seed(0)
    f = args.features
    model = nn.Sequential(nn.Linear(f, 512), nn.GELU(), nn.Linear(512, 10))
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    loss_fn = nn.CrossEntropyLoss()
    clock = IterClock(args)
    while clock.more():
        buf = torch.empty(args.batch, f)              # scratch input, allocated every time
        buf.normal_()
        big = torch.empty(args.batch * 8, f)          # a large temporary
        big.uniform_()
        stats = big.mean(0, keepdim=True)
        x = (buf - stats) / (big.std(0, keepdim=True) + 1e-5)
        mask = torch.rand(args.batch, f) > 0.1
        x = x * mask
        y = torch.randint(0, 10, (args.batch,))
        opt.zero_grad()
        loss = loss_fn(model(x), y)
        loss.backward()
        opt.step()
        loss.item()
        del buf, big, mask
        clock.tick(args.batch)
    clock.done()


if __name__ == "__main__":
    main()
