"""A multi-task MLP trained with activation checkpointing (torch.utils.checkpoint)
on each trunk block, bfloat16 autocast on the CPU, two heads with two losses summed
into one backward, AdamW with weight decay; the batch is drawn from tensors held in
memory and moved with .to() (a no-op on the CPU, as people still write it)."""
import torch
import torch.nn as nn
from torch.utils.checkpoint import checkpoint
from common import IterClock, parse_args


class Net(nn.Module):
    def __init__(self, d=256):
        super().__init__()
        self.blocks = nn.ModuleList([nn.Sequential(nn.Linear(d, d), nn.ReLU(), nn.Linear(d, d)) for _ in range(4)])
        self.cls = nn.Linear(d, 10)
        self.reg = nn.Linear(d, 1)

    def forward(self, x):
        for b in self.blocks:
            x = x + checkpoint(b, x, use_reentrant=False)
        return self.cls(x), self.reg(x)


def main():
    args = parse_args(__doc__, iters=30, batch=128)
    torch.manual_seed(0)
    data = torch.randn(8192, 256)
    cls_y = torch.randint(0, 10, (8192,))
    reg_y = torch.randn(8192, 1)
    model = Net()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=0.01)
    device = torch.device("cpu")
    clock = IterClock(args)
    while clock.more():
        idx = torch.randint(0, data.shape[0], (args.batch,))
        x, yc, yr = data[idx].to(device), cls_y[idx].to(device), reg_y[idx].to(device)
        with torch.autocast("cpu", dtype=torch.bfloat16):
            logits, value = model(x)
            loss = nn.functional.cross_entropy(logits.float(), yc) + nn.functional.mse_loss(value.float(), yr)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        clock.tick(args.batch)
    clock.done()


if __name__ == "__main__":
    main()
