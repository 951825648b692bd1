"""A loop over hand-made batches (a list of tensors moved with .to(device)), the
forward, backward and optimizer step in a helper function, and, every 4th
iteration after the step, an evaluation over a held-out list (model.eval(),
torch.no_grad(), .item()) and a checkpoint written with torch.save. No
DataLoader: nothing but the loop itself shows where an iteration begins, and
the evaluation and checkpoint are part of the iteration that ran them."""
import os
import tempfile

import torch
import torch.nn as nn

from common import IterClock, parse_args


def main():
    args = parse_args(__doc__, iters=16, batch=64)
    torch.manual_seed(0)
    device = "cuda" if torch.cuda.is_available() else "cpu"
    batches = [(torch.randn(args.batch, 128), torch.randn(args.batch, 1)) for _ in range(8)]
    held_out = [(torch.randn(256, 128), torch.randn(256, 1)) for _ in range(12)]
    model = nn.Sequential(nn.Linear(128, 256), nn.GELU(), nn.Linear(256, 256), nn.GELU(), nn.Linear(256, 1)).to(device)
    opt = torch.optim.SGD(model.parameters(), lr=1e-3, momentum=0.9)
    checkpoint = os.path.join(tempfile.mkdtemp(), "model.pt")

    def train_step(x, y):
        loss = nn.functional.mse_loss(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        return loss

    clock = IterClock(args)
    it = 0
    while clock.more():
        x, y = batches[it % len(batches)]
        loss = train_step(x.to(device), y.to(device))
        if it % 4 == 3:
            model.eval()
            with torch.no_grad():
                val = sum(nn.functional.mse_loss(model(a.to(device)), b.to(device)).item() for a, b in held_out)
            model.train()
            torch.save({"model": model.state_dict(), "optimizer": opt.state_dict(), "iteration": it}, checkpoint)
            print(f"iteration {it}: loss {loss.item():.4f} validation {val / len(held_out):.4f}", flush=True)
        it += 1
        clock.tick(args.batch)
    os.remove(checkpoint)
    clock.done()


if __name__ == "__main__":
    main()
