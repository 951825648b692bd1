"""Data-parallel training as people write it: DDP over gloo (CPU), a Dataset
read through a DistributedSampler and a DataLoader, SGD with momentum, the loss
read with .item() every 10 iterations. One rank can be made slower in one
phase: SLOW_RANK=R with SLOW_KIND=input (its samples take longer to produce,
as from a slower disk) or SLOW_KIND=compute (its batches are larger). Each rank
prints its own median iteration time.

    torchrun --nproc_per_node 4 ddp_train.py        (or launch_ranks.py 4 ddp_train.py)
"""
import os
import time

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, Dataset
from torch.utils.data.distributed import DistributedSampler


class Samples(Dataset):
    def __init__(self, n, delay_s):
        self.n = n
        self.delay_s = delay_s

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        g = torch.Generator().manual_seed(i)
        x = torch.randn(256, generator=g)
        if self.delay_s:
            time.sleep(self.delay_s)  # this rank's shard is slower to read
        return x, i % 10


def main():
    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(0)
    torch.set_num_threads(1)
    slow = rank == int(os.environ.get("SLOW_RANK", "-1"))
    kind = os.environ.get("SLOW_KIND", "input")
    iters = int(os.environ.get("ITERS", "30"))
    batch = 32 * (4 if slow and kind == "compute" else 1)
    data = Samples(batch * world * (iters + 1), 0.0008 if slow and kind == "input" else 0)
    loader = DataLoader(data, batch_size=batch, sampler=DistributedSampler(data, world, rank, shuffle=True))
    model = nn.Sequential(nn.Linear(256, 1024), nn.ReLU(), nn.Linear(1024, 1024), nn.ReLU(), nn.Linear(1024, 10))
    ddp = DDP(model)
    opt = torch.optim.SGD(ddp.parameters(), lr=0.01, momentum=0.9)
    times = []
    t0 = time.perf_counter()
    for it, (x, y) in enumerate(loader):
        loss = nn.functional.cross_entropy(ddp(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if it % 10 == 0:
            print(f"rank {rank} iter {it} loss {loss.item():.3f}", flush=True)
        t1 = time.perf_counter()
        times.append(t1 - t0)
        t0 = t1
        if it + 1 == iters:
            break
    times = sorted(times[1:])
    print(f"rank {rank} pid {os.getpid()} median iteration {times[len(times) // 2] * 1e3:.2f} ms", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
