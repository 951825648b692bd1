"""A CNN classifier serving batches under torch.no_grad(), with per-batch post-processing."""
import torch
import torch.nn as nn

from common import IterClock, parse_args


def make_model():
    return nn.Sequential(
        nn.Conv2d(3, 32, 3, padding=1), nn.BatchNorm2d(32), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(32, 64, 3, padding=1), nn.BatchNorm2d(64), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(64, 128, 3, padding=1), nn.ReLU(), nn.AdaptiveAvgPool2d(1),
        nn.Flatten(), nn.Linear(128, 10))


def main():
    args = parse_args(__doc__, iters=30, batch=32)
    torch.manual_seed(0)
    model = make_model().eval()
    requests = [torch.randn(args.batch, 3, 48, 48) for _ in range(8)]
    clock = IterClock(args)
    counts = torch.zeros(10, dtype=torch.long)
    i = 0
    with torch.no_grad():
        while clock.more():
            x = requests[i % len(requests)].clone()
            x = (x - x.mean()) / (x.std() + 1e-5)
            probs = torch.softmax(model(x), dim=1)
            top = probs.argmax(dim=1)
            counts += torch.bincount(top, minlength=10)
            i += 1
            clock.tick(args.batch)
    print("predicted:", counts.tolist())
    clock.done()


if __name__ == "__main__":
    main()
