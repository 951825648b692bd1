#!/usr/bin/env python3
"""strata's PyTorch tiers, PyTorch's RecordFunction floor and torch.profiler,
measured in ONE process with the modes interleaved. On a machine shared with
other work this resolves differences that separate processes cannot: the noise
(other processes, frequency, caches) drifts slowly and every mode sees the same
drift. Runs under `strata record` (the observer is attached):

  strata record -q -o /tmp/b -- /usr/bin/python3 bench/torch/inprocess.py --build build --model tiny

Part 1, rounds of one 2-step slice per mode, the modes in a shuffled order
(strata_torch_set_tiers switches at once):
  untraced         strata detached: every callback off, its allocator reporter
                   off the thread, the module scopes taken out (an untraced program)
  idle             strata attached, every tier off (ops off, no memory events)
  cheap            --ops off with allocator events: the tier `strata record --serve
                   --ops off` keeps on in every step (steps, scopes, memory)
  floor            + a do-nothing global RecordFunction callback
  ops              --ops all without memory events
  all              --ops all (the default: + allocator events)
  memory_floor     idle, with a do-nothing allocator reporter in strata's place:
                   c10's own cost of reporting allocations (a mutex and a hash
                   map per allocation, paid by torch.profiler's profile_memory too)
  shapes           --shapes
  profiler         torch.profiler entered and left around the slice (its
  profiler_shapes  post-processing at exit not counted: overhead.py measures it)
With --modules, two more modes compare the two ways of taking nn.Module scopes
(strata detached but for them): modules_call (nn.Module.__call__ in C, what
PyTorch 1.x gets) and modules_hooks (global forward hooks in C, what 2.x gets).
Part 2, blocks of --sampled-block steps: untraced, --ops sampled, --ops all.
--ops sampled records whole steps on its own wall-clock schedule (~5% of the
time), so it is compared by the mean over blocks, not the median of short
slices; the schedule keeps running through the other modes' blocks, so more
than 5% of its steps are sampled here: an upper bound of its overhead.

Values are CPU time per step: of the training thread (its step time on an
otherwise idle machine: strata's flusher runs on another core) and of the whole
process (strata's flusher and the profiler's threads included). Part 1 reports
the median of the per-round differences to untraced (%) and to the floor (ns
per RecordFunction event, with a 95% confidence interval of the median).
"""
import argparse
import ctypes
import math
import os
import random
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
    ap.add_argument("--sampled-block", type=int, default=20, help="part 2: steps per block")
    ap.add_argument("--modules", action="store_true", help="part 1: add modules_call and modules_hooks")
    args = ap.parse_args()
    trace = os.environ.get("STRATA_TRACE_DIR")
    if not trace:
        sys.exit("run me under `strata record` (I switch its tiers through the control block)")
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

    import strata._torch as st

    def attach(on):
        """Detaches strata for 'untraced' (and puts it back)."""
        obs.strata_torch_set_scopes(1 if on else 0)
        st._modules_on(torch, on)
        if on:
            obs.strata_torch_reclaim_profiler_slot()
        else:
            obs.strata_torch_release_profiler_slot()

    # Part 1: rounds of one 2-step slice per mode, in a shuffled order;
    # differences are taken within a round (slices ms apart), so the machine's
    # slow drift cancels out of them.
    part1 = {"untraced": (OFF, 0, 0), "idle": (OFF, 0, 0), "cheap": (OFF, 0, 1), "floor": (OFF, 0, 0), "ops": (ALL, 0, 0),
             "all": (ALL, 0, 1), "memory_floor": (OFF, 0, 0), "shapes": (ALL, 1, 1),
             "profiler": (OFF, 0, 0), "profiler_shapes": (OFF, 0, 0)}
    if args.modules:
        if st._hooks is None:
            sys.exit("--modules: the C module hooks (_strata_torch_hooks) are not built for this Python")
        part1.update({"modules_call": (OFF, 0, 0), "modules_hooks": (OFF, 0, 0)})
    res1 = {m: [] for m in part1}
    rng = random.Random(42)
    deadline = time.monotonic() + args.seconds
    rounds = 0
    while time.monotonic() < deadline:
        # The profiler's exit (untimed) takes longer than a whole round: it
        # joins one round in four.
        names = [m for m in part1 if rounds % 4 == 0 or not m.startswith("profiler")]
        rounds += 1
        rng.shuffle(names)
        for m in names:
            tiers(*part1[m])
            if m == "floor":
                lib.strata_bench_floor_enable(floor, 1)
            if m == "untraced" or m.startswith("modules_"):
                attach(False)
            # strata detached but for its module scopes, taken that way
            modules_off = st._put_module_scopes(torch, m[len("modules_"):]) if m.startswith("modules_") else None
            pushed = m == "memory_floor" and obs.strata_torch_release_profiler_slot() and lib.strata_bench_memory_floor_push()
            prof = None
            if m.startswith("profiler"):
                # Entered and left around the slice; its post-processing at exit is not counted.
                prof = profile(activities=[ProfilerActivity.CPU], record_shapes=m == "profiler_shapes")
                prof.__enter__()
            step()
            res1[m].append((rounds,) + run(2))
            if prof is not None:
                prof.__exit__(None, None, None)
            if pushed:
                lib.strata_bench_memory_floor_pop()
                obs.strata_torch_reclaim_profiler_slot()
            if modules_off is not None:
                modules_off()
            if m == "untraced" or m.startswith("modules_"):
                attach(True)
            if m == "floor":
                lib.strata_bench_floor_enable(floor, 0)
    # Part 2: --ops sampled against untraced and --ops all, blocks of steps.
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

    def paired(mode, ref, k):
        """Median of the per-round differences mode - ref, and its 95% CI (order statistics)."""
        by_round = {r[0]: r for r in res1[ref]}
        d = sorted(a[k + 1] - by_round[a[0]][k + 1] for a in res1[mode] if a[0] in by_round)
        n = len(d)
        h = int(0.98 * math.sqrt(n))
        return d[n // 2], d[max(0, n // 2 - h)], d[min(n - 1, n // 2 + h)]

    print("%s: %d RecordFunction events per step; CPU time per step (thread: the training thread; process: "
          "all threads)" % (args.model, events))
    print("  %-15s %10s %10s %10s   %-30s %s" % ("mode", "thread", "vs untr.", "proc. vs", "ns/event vs floor, thread",
                                                 "process"))
    base_t = statistics.median(r[2] for r in res1["untraced"])
    for m in part1:
        t = statistics.median(r[2] for r in res1[m])
        du = paired(m, "untraced", 1)[0] if m != "untraced" else 0.0
        dp = paired(m, "untraced", 0)[0] if m != "untraced" else 0.0
        extra = ""
        if m not in ("untraced", "idle", "floor", "memory_floor") and not m.startswith("modules_"):
            ft, lo, hi = (v / events for v in paired(m, "floor", 1))
            fp = paired(m, "floor", 0)[0] / events
            extra = "%+8.1f [%+7.1f, %+7.1f]       %+8.1f" % (ft, lo, hi, fp)
        print("  %-15s %7.3f ms %+9.1f%% %+9.1f%%   %s" % (m, t / 1e6, 100 * du / base_t, 100 * dp / base_t, extra))
    mem_floor = paired("memory_floor", "idle", 1)[0] / events
    ops_all = paired("all", "ops", 1)[0] / events
    print("  memory events: +%.1f ns/event over ops, of which c10's own reporting (memory_floor - idle) %+.1f" % (
        ops_all, mem_floor))
    print("  (part 1: %d rounds of one 2-step slice per mode, %d with the profiler's)" % (
        len(res1["idle"]), len(res1["profiler"])))
    u3 = [statistics.mean(r[k] for r in res3["untraced"]) for k in (0, 1)]
    for m in ("sampled", "all"):
        p, t = (statistics.mean(r[k] for r in res3[m]) for k in (0, 1))
        print("  %-15s %7.3f ms %+9.1f%% %+9.1f%%   (means over blocks)" % (
            m, t / 1e6, 100 * (t - u3[1]) / u3[1], 100 * (p - u3[0]) / u3[0]))
    print("  (part 2: %d blocks of %d steps per mode; untraced %.3f ms thread CPU)" % (
        len(res3["untraced"]), args.sampled_block, u3[1] / 1e6))


if __name__ == "__main__":
    main()
