"""Data-parallel training across hosts, as people write it: DDP over gloo, a
DataLoader over a DistributedSampler, AdamW, and each iteration the loss
averaged over all ranks for logging (an all_reduce of one number, the
"reduce_tensor" of many training scripts). Ranks exchange their label counts
point to point each iteration (rank r < W/2 sends to r + W/2, which sends
back), as pipeline stages or custom sync code do. Each rank prints its median
iteration time and how many messages it sent and received.

    launch_ranks.py --nnodes 2 --node-rank R --master-addr A --master-port P 2 multihost_train.py
"""
import os
import time

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler


def main():
    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(0)
    torch.set_num_threads(1)
    iters = int(os.environ.get("ITERS", "40"))
    batch = 16
    g = torch.Generator().manual_seed(1)
    data = TensorDataset(torch.randn(batch * world * iters, 128, generator=g),
                         torch.randint(0, 10, (batch * world * iters,), generator=g))
    loader = DataLoader(data, batch_size=batch, sampler=DistributedSampler(data, world, rank, shuffle=True))
    model = DDP(nn.Sequential(nn.Linear(128, 256), nn.ReLU(), nn.Linear(256, 10)))
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    peer = rank + world // 2 if rank < world // 2 else rank - world // 2
    sent = received = 0
    times = []
    t0 = time.perf_counter()
    for it, (x, y) in enumerate(loader):
        loss = nn.functional.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        avg = loss.detach().clone()
        dist.all_reduce(avg)
        counts = torch.bincount(y, minlength=10).float()
        if rank < peer:
            dist.send(counts, peer)
            dist.recv(counts, peer)
        else:
            dist.recv(counts, peer)
            dist.send(counts, peer)
        sent += 1
        received += 1
        if it % 10 == 0 and rank == 0:
            print(f"iter {it} mean loss {avg.item() / world:.3f}", flush=True)
        t1 = time.perf_counter()
        times.append(t1 - t0)
        t0 = t1
    times = sorted(times[1:])
    print(f"rank {rank} pid {os.getpid()} peer {peer} sent {sent} received {received} "
          f"median iteration {times[len(times) // 2] * 1e3:.2f} ms", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
