"""Hand-written loading: each iteration reads a shard from disk with numpy, augments it
in numpy, builds tensors and trains an MLP; the loss is logged with .item()."""
import os
import tempfile

import numpy as np
import torch
import torch.nn as nn

from common import IterClock, parse_args


def write_shards(folder, count, batch, features):
    rng = np.random.default_rng(0)
    paths = []
    for k in range(count):
        path = os.path.join(folder, f"shard{k:03d}.npy")
        np.save(path, rng.standard_normal((batch, features), dtype=np.float32))
        paths.append(path)
    return paths


def main():
    args = parse_args(__doc__, iters=25, batch=256,
                      extra=lambda p: p.add_argument("--features", type=int, default=512))
    torch.manual_seed(0)
    folder = tempfile.mkdtemp(prefix="strata-shards-")
    paths = write_shards(folder, 16, args.batch, args.features)
    model = nn.Sequential(nn.Linear(args.features, 512), nn.ReLU(), nn.Linear(512, 256), nn.ReLU(),
                          nn.Linear(256, 10))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    loss_fn = nn.CrossEntropyLoss()
    clock = IterClock(args)
    i = 0
    while clock.more():
        raw = np.load(paths[i % len(paths)])
        raw = raw * np.float32(1.1) + np.float32(0.01) * np.sin(raw)  # augmentation in numpy
        raw = np.clip(raw, -3, 3)
        labels = (np.abs(raw[:, 0]) * 10).astype(np.int64) % 10
        x = torch.from_numpy(raw)
        y = torch.from_numpy(labels)
        opt.zero_grad()
        loss = loss_fn(model(x), y)
        loss.backward()
        opt.step()
        print(f"step {i} loss {loss.item():.4f}", flush=True)
        i += 1
        clock.tick(args.batch)
    for p in paths:
        os.remove(p)
    os.rmdir(folder)
    clock.done()


if __name__ == "__main__":
    main()
