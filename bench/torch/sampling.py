#!/usr/bin/env python3
"""How much does a RecordFunction callback cost when it does not record? The
measurement behind strata's --ops sampled design, in one process on the
tiny-ops loop (hundreds of small ops per step), modes interleaved per block:

  none          no callback
  floor         a do-nothing global callback on every op
  sampled_1pct  the same callback, RecordFunction-sampled with p = 0.01
  sampled_01pct ... p = 0.001
  disabled      registered, then disabled (what strata's sampled tier does
                between its windows)

  bench/torch/sampling.py --build build [--blocks 40]
Times are the process CPU time per step (median over blocks of the per-block
median), and the cost per RecordFunction event relative to `none`.
"""
import argparse
import ctypes
import os
import statistics
import sys
import time

import torch

HERE = os.path.dirname(os.path.abspath(__file__))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default="build")
    ap.add_argument("--blocks", type=int, default=40)
    ap.add_argument("--steps", type=int, default=10, help="steps per block")
    args = ap.parse_args()
    lib = ctypes.CDLL(os.path.join(args.build, "lib", "libstrata_bench_floor.so"))
    lib.strata_bench_floor_register.restype = ctypes.c_uint64
    lib.strata_bench_floor_register_sampled.restype = ctypes.c_uint64
    lib.strata_bench_floor_register_sampled.argtypes = [ctypes.c_double]
    lib.strata_bench_floor_enable.argtypes = [ctypes.c_uint64, ctypes.c_int]
    torch.manual_seed(0)
    torch.set_num_threads(1)
    x = torch.randn(8, 8)
    w = torch.randn(8, 8, requires_grad=True)

    def step():
        h = x
        for _ in range(100):
            h = torch.tanh(h * 0.5) * w
        h.sum().backward()
        w.grad = None

    handles = {
        "floor": lib.strata_bench_floor_register(),
        "sampled_1pct": lib.strata_bench_floor_register_sampled(0.01),
        "sampled_01pct": lib.strata_bench_floor_register_sampled(0.001),
        "disabled": lib.strata_bench_floor_register(),
    }
    for h in handles.values():
        lib.strata_bench_floor_enable(h, 0)
    modes = ["none"] + list(handles)
    # RecordFunction events per step, counted with torch.profiler.
    from torch.profiler import profile
    with profile() as p:
        step()
    events = sum(e.count for e in p.key_averages())
    for _ in range(20):
        step()
    res = {m: [] for m in modes}
    for b in range(args.blocks):
        for m in modes[b % len(modes):] + modes[:b % len(modes)]:
            if m in handles and m != "disabled":
                lib.strata_bench_floor_enable(handles[m], 1)
            ts = []
            for _ in range(args.steps):
                c0 = time.process_time_ns()
                step()
                ts.append(time.process_time_ns() - c0)
            res[m].append(statistics.median(ts))
            if m in handles and m != "disabled":
                lib.strata_bench_floor_enable(handles[m], 0)
    base = statistics.median(res["none"])
    print("tiny-ops loop: %d RecordFunction events per step" % events)
    print("  %-14s %12s %9s %12s" % ("mode", "step (CPU)", "overhead", "ns/event"))
    for m in modes:
        v = statistics.median(res[m])
        print("  %-14s %9.3f ms %8.1f%% %12.0f" % (m, v / 1e6, 100 * (v - base) / base, (v - base) / events))


if __name__ == "__main__":
    sys.exit(main())
