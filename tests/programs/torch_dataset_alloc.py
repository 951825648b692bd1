"""A training loop whose Dataset makes each sample as a fresh tensor (as
synthetic or decoded data does: torch.randn, torch.from_numpy, ToTensor) and a
DataLoader without workers: the loop waits for its input, and the tensors the
loading allocates are the input's time, not buffers the step could keep. The
test (tests/memory_torch_test.cc) expects input_pipeline and no
memory_allocation finding."""
import argparse
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, Dataset

p = argparse.ArgumentParser()
p.add_argument("--steps", type=int, default=12)
args = p.parse_args()


class Noise(Dataset):
    def __len__(self):
        return 32 * args.steps

    def __getitem__(self, i):
        g = torch.Generator().manual_seed(i)
        x = torch.randn(64, 1024, generator=g)  # 256 KiB per sample, made fresh
        return x.mean(0), i % 4


torch.manual_seed(0)
model = nn.Linear(1024, 4)
opt = torch.optim.SGD(model.parameters(), lr=0.01)
for x, y in DataLoader(Noise(), batch_size=32):
    loss = nn.functional.cross_entropy(model(x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
print("done")
