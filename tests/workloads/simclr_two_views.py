"""Contrastive learning (SimCLR style): each batch of images is augmented twice in
the loop (random crops and flips on tensors), the same encoder runs on both views,
an NT-Xent loss over the 2N embeddings, SGD with momentum. A step processes N images
(in two views), as such programs count it."""
import torch
import torch.nn as nn
import torch.nn.functional as F

from common import IterClock, parse_args


def augment(x):
    n = x.shape[0]
    i, j = torch.randint(0, 9, (2,)).tolist()
    x = x[:, :, i:i + 24, j:j + 24]
    flip = torch.rand(n) < 0.5
    x = torch.where(flip[:, None, None, None], x.flip(3), x)
    return x + 0.05 * torch.randn_like(x)


def nt_xent(z1, z2, t=0.5):
    z = F.normalize(torch.cat([z1, z2]), dim=1)
    sim = z @ z.t() / t
    n = z1.shape[0]
    sim.fill_diagonal_(-1e9)
    target = torch.cat([torch.arange(n, 2 * n), torch.arange(0, n)])
    return F.cross_entropy(sim, target)


def main():
    args = parse_args(__doc__, iters=40, batch=64)
    torch.manual_seed(0)
    enc = nn.Sequential(nn.Conv2d(3, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                        nn.Conv2d(32, 64, 3, padding=1), nn.ReLU(), nn.AdaptiveAvgPool2d(1), nn.Flatten(),
                        nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 64))
    opt = torch.optim.SGD(enc.parameters(), lr=0.05, momentum=0.9)
    images = torch.randn(1024, 3, 32, 32)
    clock = IterClock(args)
    k = 0
    while clock.more():
        idx = torch.randint(0, images.shape[0], (args.batch,))
        x = images[idx]
        v1, v2 = augment(x), augment(x)
        loss = nt_xent(enc(v1), enc(v2))
        opt.zero_grad()
        loss.backward()
        opt.step()
        k += 1
        if k % 10 == 0 and not args.quiet:
            print(f"loss {loss.item():.3f}", flush=True)
        clock.tick(args.batch)
    clock.done()


if __name__ == "__main__":
    main()
