#!/usr/bin/env python3
"""strata's PyTorch tiers, PyTorch's RecordFunction floor and torch.profiler,
measured in ONE process with the modes interleaved. On a machine shared with
other work this resolves differences that separate processes cannot: the noise
(other processes, frequency, caches) drifts slowly and every mode sees the same
drift. Runs under `strata record` (the observer is attached):

  strata record -q -o /tmp/b -- /usr/bin/python3 bench/torch/inprocess.py --build build --model tiny

Part 1, modes switched every 2 steps (strata_torch_set_tiers, at once):
  untraced      strata detached: every callback off, its allocator reporter off
                the thread, the module hooks removed (an untraced program)
  idle          strata attached, every tier off (ops off, no memory events)
  floor         + a do-nothing global RecordFunction callback
  ops           --ops all without memory events
  all           --ops all (the default: + allocator events)
  memory_floor  idle, with a do-nothing allocator reporter in strata's place:
                c10's own cost of reporting allocations (a mutex and a hash map
                per allocation, paid by torch.profiler's profile_memory too)
  shapes        --shapes
Part 2, torch.profiler entered and left around every --block steps (its
post-processing at exit is not counted here: overhead.py measures it):
  idle, profiler, profiler_shapes
Part 3, blocks of --sampled-block steps: untraced, --ops sampled, --ops all.
--ops sampled records whole steps on its own wall-clock schedule (~5% of the
time), so it is compared by the mean over blocks, not the median of short
slices; the schedule keeps running through the other modes' blocks, so more
than 5% of its steps are sampled here: an upper bound of its overhead.

Values are CPU time per step: of the training thread (its step time on an
otherwise idle machine: strata's flusher runs on another core) and of the whole
process (strata's flusher and the profiler's threads included); the median over
slices (part 1) or blocks (part 2), the overhead vs untraced, and ns per
RecordFunction event vs the floor. For "all", the last column also takes off
c10's reporting floor (memory_floor - idle): what strata's own memory events cost.
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
    ap.add_argument("--seconds", type=float, default=40, help="length of each part")
    ap.add_argument("--block", type=int, default=4, help="part 2: steps per profiler block")
    ap.add_argument("--sampled-block", type=int, default=20, help="part 3: steps per block")
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
    obs.strata_torch_set_scopes.argtypes = [ctypes.c_int]
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
        c0, t0 = time.process_time_ns(), time.thread_time_ns()
        for _ in range(n):
            step()
        return (time.process_time_ns() - c0) / n, (time.thread_time_ns() - t0) / n

    import torch.nn.modules.module as mm
    hooks = (dict(mm._global_forward_pre_hooks), dict(mm._global_forward_hooks))

    def attach(on):
        """Detaches strata for 'untraced' (and puts it back)."""
        obs.strata_torch_set_scopes(1 if on else 0)
        if on:
            mm._global_forward_pre_hooks.update(hooks[0])
            mm._global_forward_hooks.update(hooks[1])
            obs.strata_torch_reclaim_profiler_slot()
        else:
            mm._global_forward_pre_hooks.clear()
            mm._global_forward_hooks.clear()
            obs.strata_torch_release_profiler_slot()

    # Part 1: fine alternation.
    part1 = {"untraced": (OFF, 0, 0), "idle": (OFF, 0, 0), "floor": (OFF, 0, 0), "ops": (ALL, 0, 0),
             "all": (ALL, 0, 1), "memory_floor": (OFF, 0, 0), "shapes": (ALL, 1, 1)}
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
        if m == "untraced":
            attach(False)
        pushed = m == "memory_floor" and obs.strata_torch_release_profiler_slot() and lib.strata_bench_memory_floor_push()
        step()
        res1[m].append(run(2))
        if pushed:
            lib.strata_bench_memory_floor_pop()
            obs.strata_torch_reclaim_profiler_slot()
        if m == "untraced":
            attach(True)
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
    # Part 3: --ops sampled against untraced and --ops all, blocks of steps.
    part3 = {"untraced": (OFF, 0, 0), "sampled": (1, 0, 1), "all": (ALL, 0, 1)}
    res3 = {m: [] for m in part3}
    deadline = time.monotonic() + args.seconds
    while time.monotonic() < deadline:
        for m in part3:
            tiers(*part3[m])
            if m == "untraced":
                attach(False)
            step()
            res3[m].append(run(args.sampled_block))
            if m == "untraced":
                attach(True)
    tiers(OFF, 0, 0)

    def med(rows, k):
        return statistics.median(r[k] for r in rows)

    print("%s: %d RecordFunction events per step" % (args.model, events))
    print("  %-14s %11s %11s %9s %11s %11s" % ("mode", "thread CPU", "process CPU", "vs untr.",
                                               "ns/ev thread", "ns/ev proc."))
    base = [med(res1["untraced"], k) for k in (0, 1)]
    fl = [med(res1["floor"], k) for k in (0, 1)]
    idle = [med(res1["idle"], k) for k in (0, 1)]
    mfl = [med(res1["memory_floor"], k) for k in (0, 1)]
    for m in part1:
        p, t = med(res1[m], 0), med(res1[m], 1)
        per = ["-", "-"]
        if m in ("ops", "all", "shapes"):
            per = ["%.1f" % ((v - f) / events) for v, f in ((t, fl[1]), (p, fl[0]))]
        print("  %-14s %8.3f ms %8.3f ms %8.1f%% %11s %11s" % (m, t / 1e6, p / 1e6, 100 * (t - base[1]) / base[1],
                                                             per[0], per[1]))
    t_all, p_all = med(res1["all"], 1), med(res1["all"], 0)
    print("  all, above the floor and c10's memory-reporting floor: %.1f ns/event (thread), %.1f (process)" % (
        (t_all - fl[1] - (mfl[1] - idle[1])) / events, (p_all - fl[0] - (mfl[0] - idle[0])) / events))
    print("  (part 1: %d slices of 2 steps per mode)" % len(res1["idle"]))
    idle2 = [med(res2["idle"], k) for k in (0, 1)]
    for m in part2[1:]:
        p, t = med(res2[m], 0), med(res2[m], 1)
        # vs the floor: the profiler's own RecordFunction cost minus part 1's floor cost
        print("  %-14s %8.3f ms %8.3f ms %8.1f%% %11.1f %11.1f" % (
            m, t / 1e6, p / 1e6, 100 * (t - idle2[1]) / idle2[1],
            (t - idle2[1]) / events - (fl[1] - idle[1]) / events, (p - idle2[0]) / events - (fl[0] - idle[0]) / events))
    print("  (part 2: %d blocks of %d steps per mode; idle %.3f ms thread CPU; %% vs that idle)" % (
        len(res2["idle"]), block, idle2[1] / 1e6))
    u3 = [statistics.mean(r[k] for r in res3["untraced"]) for k in (0, 1)]
    for m in ("sampled", "all"):
        p, t = (statistics.mean(r[k] for r in res3[m]) for k in (0, 1))
        print("  %-14s %8.3f ms %8.3f ms %8.1f%%   (thread; process %+.1f%%)" % (
            m, t / 1e6, p / 1e6, 100 * (t - u3[1]) / u3[1], 100 * (p - u3[0]) / u3[0]))
    print("  (part 3: %d blocks of %d steps per mode, means; untraced %.3f ms thread CPU; %% vs that)" % (
        len(res3["untraced"]), args.sampled_block, u3[1] / 1e6))


if __name__ == "__main__":
    main()
