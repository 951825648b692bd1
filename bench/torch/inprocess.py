#!/usr/bin/env python3
"""strata's PyTorch tiers, PyTorch's RecordFunction floor and torch.profiler,
measured in ONE process with the modes interleaved. On a machine shared with
other work this resolves differences that separate processes cannot: the noise
(other processes, frequency, caches) drifts slowly and every mode sees the same
drift. Runs under `strata record` (the observer is attached):

  strata record -q -o /tmp/b -- /usr/bin/python3 bench/torch/inprocess.py --build build --model tiny

Part 1, modes switched every 2 steps (strata_torch_set_tiers, at once):
  idle     strata attached, every tier off (ops off, no memory events)
  floor    + a do-nothing global RecordFunction callback
  ops      --ops all without memory events
  all      --ops all (the default: + allocator events)
  shapes   --shapes
Part 2, torch.profiler entered and left around every --block steps (its
post-processing at exit is not counted here: overhead.py measures it):
  idle, profiler, profiler_shapes
--ops sampled cannot be interleaved this way (it samples whole steps on its own
schedule, in wall-clock time): overhead.py measures it across processes.

Values are process CPU time per step (strata's and the profiler's threads
included): the median over slices (part 1) or blocks (part 2), the overhead vs
idle, and ns per RecordFunction event vs the floor.
"""
import argparse
import ctypes
import os
import statistics
import sys
import time

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import loop  # noqa: E402  (the models of the cross-process harness)

OFF, ALL = 0, 2


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default="build")
    ap.add_argument("--model", default="tiny")
    ap.add_argument("--seconds", type=float, default=40, help="length of part 1")
    ap.add_argument("--block", type=int, default=4, help="part 2: steps per profiler block")
    args = ap.parse_args()
    trace = os.environ.get("STRATA_TRACE_DIR")
    if not trace:
        sys.exit("run me under `strata record` (I switch its tiers through the control block)")
    block = args.block
    lib = ctypes.CDLL(os.path.join(args.build, "lib", "libstrata_bench_floor.so"))
    lib.strata_bench_floor_register.restype = ctypes.c_uint64
    lib.strata_bench_floor_enable.argtypes = [ctypes.c_uint64, ctypes.c_int]
    torch.manual_seed(0)
    torch.set_num_threads(1)
    model = loop.Cnn() if args.model == "cnn" else loop.Tiny()
    batch, shape, classes = (32, (1, 28, 28), 10) if args.model == "cnn" else (8, (8,), 8)
    x = torch.randn(batch, *shape)
    y = torch.randint(0, classes, (batch,))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)

    def step():
        loss = F.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()

    obs = ctypes.CDLL(os.environ["STRATA_TORCH_LIB"])
    obs.strata_torch_set_tiers.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_int]
    floor = lib.strata_bench_floor_register()
    lib.strata_bench_floor_enable(floor, 0)
    from torch.profiler import ProfilerActivity, profile

    def tiers(ops, detail, memory):
        obs.strata_torch_set_tiers(ops, detail, memory)

    tiers(OFF, 0, 0)
    with profile(activities=[ProfilerActivity.CPU]) as p:
        step()
    events = sum(e.count for e in p.key_averages())
    for _ in range(10):
        step()

    def run(n):
        c0 = time.process_time_ns()
        for _ in range(n):
            step()
        return (time.process_time_ns() - c0) / n

    # Part 1: fine alternation.
    part1 = {"idle": (OFF, 0, 0), "floor": (OFF, 0, 0), "ops": (ALL, 0, 0), "all": (ALL, 0, 1), "shapes": (ALL, 1, 1)}
    res1 = {m: [] for m in part1}
    deadline = time.monotonic() + args.seconds
    names = list(part1)
    i = 0
    while time.monotonic() < deadline:
        m = names[i % len(names)]
        i += 1
        tiers(*part1[m])
        if m == "floor":
            lib.strata_bench_floor_enable(floor, 1)
        step()
        res1[m].append(run(2))
        if m == "floor":
            lib.strata_bench_floor_enable(floor, 0)
    # Part 2: the profiler around short blocks.
    part2 = ["idle", "profiler", "profiler_shapes"]
    res2 = {m: [] for m in part2}
    tiers(OFF, 0, 0)
    deadline = time.monotonic() + args.seconds
    b = 0
    while time.monotonic() < deadline:
        b += 1
        for m in part2:
            prof = None
            if m.startswith("profiler"):
                prof = profile(activities=[ProfilerActivity.CPU], record_shapes=m == "profiler_shapes")
                prof.__enter__()
            step()
            res2[m].append(run(block))
            if prof is not None:
                prof.__exit__(None, None, None)
    tiers(OFF, 0, 0)
    print("%s: %d RecordFunction events per step" % (args.model, events))
    print("  %-16s %12s %9s %18s" % ("mode", "step (CPU)", "vs idle", "ns/event vs floor"))
    idle, fl = statistics.median(res1["idle"]), statistics.median(res1["floor"])
    for m in part1:
        v = statistics.median(res1[m])
        print("  %-16s %9.3f ms %8.1f%% %18s" % (m, v / 1e6, 100 * (v - idle) / idle,
                                              "-" if m in ("idle", "floor") else "%.1f" % ((v - fl) / events)))
    print("  (part 1: %d slices of 2 steps per mode)" % len(res1["idle"]))
    idle2 = statistics.median(res2["idle"])
    for m in part2[1:]:
        v = statistics.median(res2[m])
        print("  %-16s %9.3f ms %8.1f%% %18s" % (m, v / 1e6, 100 * (v - idle2) / idle2,
                                              "%.1f" % ((v - idle2) / events - (fl - idle) / events)))
    print("  (part 2: %d blocks of %d steps per mode; idle %.3f ms)" % (len(res2["idle"]), block, idle2 / 1e6))


if __name__ == "__main__":
    main()
