"""Two models trained on alternating iterations (an actor on even iterations,
a critic on odd ones), each with its own Adam optimizer, batches from one
shared DataLoader; an iteration is one model's update."""
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset
from common import IterClock, parse_args


def main():
    args = parse_args(__doc__, iters=40, batch=64)
    torch.manual_seed(0)
    ds = TensorDataset(torch.randn(8192, 64), torch.randn(8192, 1))
    loader = DataLoader(ds, batch_size=args.batch, shuffle=True)
    actor = nn.Sequential(nn.Linear(64, 256), nn.ReLU(), nn.Linear(256, 8))
    critic = nn.Sequential(nn.Linear(64, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU(), nn.Linear(512, 1))
    opt_a = torch.optim.Adam(actor.parameters(), lr=1e-3)
    opt_c = torch.optim.Adam(critic.parameters(), lr=1e-3)
    clock = IterClock(args)
    it = iter(loader)
    i = 0
    while clock.more():
        try:
            xb, yb = next(it)
        except StopIteration:
            it = iter(loader)
            xb, yb = next(it)
        if i % 2 == 0:
            loss = -actor(xb).logsumexp(1).mean()
            opt_a.zero_grad()
            loss.backward()
            opt_a.step()
        else:
            loss = nn.functional.mse_loss(critic(xb), yb)
            opt_c.zero_grad()
            loss.backward()
            opt_c.step()
        i += 1
        clock.tick(args.batch)
    clock.done()


if __name__ == "__main__":
    main()
