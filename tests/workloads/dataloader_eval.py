"""A DataLoader training loop that evaluates on a validation DataLoader every 4th
iteration, after its optimizer step (model.eval(), torch.no_grad(), accuracy with
.item()), then goes back to training: those iterations take several times the
others, and the evaluation is part of the iteration that ran it."""
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset

from common import IterClock, parse_args


def main():
    args = parse_args(__doc__, iters=16, batch=32)
    torch.manual_seed(0)
    x = torch.randn(4096, 256)
    y = torch.randint(0, 10, (4096,))
    train = DataLoader(TensorDataset(x, y), batch_size=args.batch, shuffle=True, drop_last=True)
    val = DataLoader(TensorDataset(x[:3072], y[:3072]), batch_size=256)
    model = nn.Sequential(nn.Linear(256, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU(), nn.Linear(512, 10))
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    clock = IterClock(args)
    it = 0
    while clock.more():
        for xb, yb in train:
            loss = nn.functional.cross_entropy(model(xb), yb)
            opt.zero_grad()
            loss.backward()
            opt.step()
            if it % 4 == 3:
                model.eval()
                correct = 0
                with torch.no_grad():
                    for vx, vy in val:
                        correct += (model(vx).argmax(1) == vy).sum().item()
                model.train()
                print(f"iteration {it}: loss {loss.item():.4f} accuracy {correct / 3072:.3f}", flush=True)
            it += 1
            clock.tick(args.batch)
            if not clock.more():
                break
    clock.done()


if __name__ == "__main__":
    main()
