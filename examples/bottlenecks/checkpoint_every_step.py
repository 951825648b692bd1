"""A PyTorch fine-tuning loop that writes a checkpoint after every step.

Planted bottleneck (checkpoint): a classifier head is trained on top of a
frozen embedding table (10k x 128, 4.9 MiB), and the loop saves the whole model
and the optimizer's state with torch.save after each optimizer step, so every
step pickles and writes the frozen table again.

  strata record -- python3 examples/bottlenecks/checkpoint_every_step.py
  strata record -- python3 examples/bottlenecks/checkpoint_every_step.py --fixed

--fixed applies strata's suggestion: checkpoint every 50 steps (and at the end).
"""
import argparse
import os
import shutil
import tempfile
import time

import torch
import torch.nn as nn


class Classifier(nn.Module):
    def __init__(self, vocab=10000, dim=128, classes=10):
        super().__init__()
        self.embed = nn.Embedding(vocab, dim)
        self.embed.weight.requires_grad_(False)  # pretrained, frozen
        self.head = nn.Sequential(nn.Linear(dim, 256), nn.ReLU(), nn.Linear(256, 256), nn.ReLU(), nn.Linear(256, classes))

    def forward(self, tokens):
        return self.head(self.embed(tokens).mean(1))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=40)
    ap.add_argument("--fixed", action="store_true", help="checkpoint every 50 steps and at the end")
    a = ap.parse_args()

    torch.manual_seed(0)
    torch.set_num_threads(1)  # one core's worth of work, the same in both variants
    model = Classifier()
    opt = torch.optim.Adam([p for p in model.parameters() if p.requires_grad], lr=1e-3)
    tokens = torch.randint(0, 10000, (512, 32))
    labels = torch.randint(0, 10, (512,))
    # (A RAM disk where there is one: the disk's writeback would make the step times swing.)
    folder = tempfile.mkdtemp(dir="/dev/shm" if os.path.isdir("/dev/shm") else None)
    path = os.path.join(folder, "checkpoint.pt")
    every = 50 if a.fixed else 1
    t0 = time.perf_counter()
    for i in range(a.steps):
        idx = torch.randint(0, 512, (16,))
        loss = nn.functional.cross_entropy(model(tokens[idx]), labels[idx])
        opt.zero_grad()
        loss.backward()
        opt.step()
        if i % every == every - 1 or i == a.steps - 1:
            torch.save({"model": model.state_dict(), "optimizer": opt.state_dict(), "step": i}, path)
        t = time.perf_counter()
        print(f"iter_ms={1e3 * (t - t0):.3f}", flush=True)
        t0 = t
    shutil.rmtree(folder)


if __name__ == "__main__":
    main()
