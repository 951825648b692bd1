"""A PyTorch training loop on the GPU for scripts/gpu-check: an MLP trained for
N steps, each step marked with strata.step() and an NVTX range, timed with CUDA
events. Prints what the check compares with the trace: steps, the steps' CUDA
event time, the median wall time of a step, and the caching allocator's peak.

  python3 torch_train_gpu.py STEPS
"""
import statistics
import sys
import time

import torch

import strata

steps = int(sys.argv[1])
torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(1024, 4096), torch.nn.ReLU(), torch.nn.Linear(4096, 1024)).cuda()
opt = torch.optim.SGD(model.parameters(), lr=0.01)
x = torch.randn(256, 1024, device="cuda")
y = torch.randn(256, 1024, device="cuda")
for _ in range(3):  # warm-up: cuBLAS handles, allocator pools
    opt.zero_grad()
    torch.nn.functional.mse_loss(model(x), y).backward()
    opt.step()
torch.cuda.synchronize()
start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
total = 0.0
walls = []
for i in range(steps):
    t0 = time.perf_counter()
    with strata.step(i, samples=x.shape[0]):
        torch.cuda.nvtx.range_push("train_step")
        start.record()
        opt.zero_grad()
        torch.nn.functional.mse_loss(model(x), y).backward()
        opt.step()
        stop.record()
        stop.synchronize()
        total += start.elapsed_time(stop)
        torch.cuda.nvtx.range_pop()
    walls.append(time.perf_counter() - t0)
print(f"steps={steps} step_ms={total:.6f} wall_ms_median={1e3 * statistics.median(walls):.4f} "
      f"peak_bytes={torch.cuda.max_memory_allocated()} torch={torch.__version__}")
