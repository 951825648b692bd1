"""ResNet-18 (torchvision) trained on synthetic images through a multi-worker DataLoader."""
import torch
import torch.nn as nn
import torchvision
from torch.utils.data import DataLoader, Dataset

from common import IterClock, parse_args


class RandomImages(Dataset):
    def __init__(self, n, size):
        self.n, self.size = n, size

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        g = torch.Generator().manual_seed(i)
        img = torch.rand(3, self.size, self.size, generator=g)
        img = (img - 0.5) / 0.25  # normalize, as a transform would
        return img, i % 10


def main():
    args = parse_args(__doc__, iters=12, batch=16,
                      extra=lambda p: (p.add_argument("--workers", type=int, default=2),
                                       p.add_argument("--size", type=int, default=64)))
    torch.manual_seed(0)
    model = torchvision.models.resnet18(num_classes=10)
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    loss_fn = nn.CrossEntropyLoss()
    n = args.batch * (args.iters + 2) if args.seconds <= 0 else args.batch * 100000
    loader = DataLoader(RandomImages(n, args.size), batch_size=args.batch, shuffle=True,
                        num_workers=args.workers, persistent_workers=args.workers > 0)
    model.train()
    clock = IterClock(args)
    it = iter(loader)
    while clock.more():
        x, y = next(it)
        opt.zero_grad()
        loss = loss_fn(model(x), y)
        loss.backward()
        opt.step()
        if len(clock.times) % 5 == 0:
            print(f"loss={loss.item():.4f}", flush=True)
        clock.tick(x.shape[0])
    clock.done()


if __name__ == "__main__":
    main()
