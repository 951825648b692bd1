#!/usr/bin/env python3
"""The PyTorch overhead benchmark: strata's framework level side by side with
torch.profiler and PyTorch's own RecordFunction floor, modes interleaved.

  bench/torch/overhead.py --build build [--rounds 5] [--models cnn,tiny]

Each mode runs bench/torch/loop.py as its own process (the median step time of
its timed steps); rounds repeat every mode in a fresh order so that machine
noise spreads over all of them. Step time is the process's CPU time per step
(strata's and the profiler's own threads included): on a machine shared with
other work, wall time measures the neighbours; wall-clock medians are reported
too. Reported per model:
  - median step time and overhead vs untraced (median over rounds of the
    per-round ratio);
  - ns per RecordFunction event above the floor (a do-nothing global callback);
  - strata's work after the program ended, per event (the trace is already on
    disk: the final flush of the last buffers), and torch.profiler's
    post-processing per event when its context exits;
  - for --ops sampled: the largest difference of per-op self-time shares to
    --ops all on the same program, in percentage points.
Needs /usr/bin/python3 with torch and a strata build with libstrata_torch.
"""
import argparse
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
PY = "/usr/bin/python3"


def run(cmd, env=None):
    t0 = time.monotonic_ns()
    p = subprocess.run(cmd, capture_output=True, text=True, env=env)
    t1 = time.monotonic_ns()
    if p.returncode != 0:
        sys.exit("benchmark run failed: %s\n%s" % (" ".join(cmd), p.stderr[-2000:]))
    line = [l for l in p.stdout.splitlines() if l.startswith("{")][-1]
    out = json.loads(line)
    out["exit_ns"] = t1 - out["end_monotonic_ns"]  # from the program's last step to its exit as seen here
    return out


def report_json(strata, trace):
    p = subprocess.run([strata, "report", "--json", trace], capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit("strata report failed: " + p.stderr)
    return json.loads(p.stdout)


def shares(rep):
    return {o["name"]: o["self_pct"] for o in rep["framework"]["ops"]}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default="build")
    ap.add_argument("--rounds", type=int, default=11)
    ap.add_argument("--models", default="cnn,tiny")
    ap.add_argument("--steps", type=int, default=0, help="timed steps per run (default: 100 cnn, 250 tiny)")
    ap.add_argument("--json", default="", help="also write the results here")
    args = ap.parse_args()
    strata = os.path.join(args.build, "bin", "strata")
    floor = os.path.join(args.build, "lib", "libstrata_bench_floor.so")
    for f in (strata, floor, os.path.join(args.build, "lib", "libstrata_torch.so")):
        if not os.path.exists(f):
            sys.exit("missing %s: build strata with libtorch first" % f)
    loop = os.path.join(HERE, "loop.py")
    tmp = tempfile.mkdtemp(prefix="strata-bench-torch-")
    results = {}
    try:
        for model in args.models.split(","):
            steps = args.steps or (100 if model == "cnn" else 250)
            base = [PY, loop, "--model", model, "--steps", str(steps)]
            trace = os.path.join(tmp, model)

            def rec(*opts):
                return [strata, "record", "-q", "-f", "-o", trace] + list(opts) + ["--"] + base

            modes = {
                "untraced": base,
                "rf_floor": base + ["--floor", floor],
                "strata_all": rec("--ops", "all"),
                "strata_sampled": rec("--ops", "sampled"),
                "strata_shapes": rec("--shapes"),
                "profiler": base + ["--profiler", "off"],
                "profiler_shapes": base + ["--profiler", "shapes"],
            }
            med = {m: [] for m in modes}
            wall = {m: [] for m in modes}
            ratio = {m: [] for m in modes}
            exit_ns = {m: [] for m in modes}
            prof_exit = []
            sampled_diff = []
            events = ops_per_step = 0
            names = list(modes)
            for r in range(args.rounds):
                random.Random(r).shuffle(names)
                this = {}
                all_rep = sampled_rep = None
                for m in names:
                    out = run(modes[m])
                    this[m] = out["median_cpu_ns"]
                    med[m].append(out["median_cpu_ns"])
                    wall[m].append(out["median_ns"])
                    exit_ns[m].append(out["exit_ns"])
                    if m == "profiler":
                        prof_exit.append(out["profiler_exit_ns"] / max(1, out["profiler_events"]))
                    if m in ("strata_all", "strata_sampled"):
                        rep = report_json(strata, trace)
                        if m == "strata_all":
                            all_rep = rep
                            events = rep["trace"]["events"]
                            nsteps = rep["framework"]["steps"]["count"] + rep["framework"]["steps"]["skipped"]
                            rf = sum(s["count"] for s in rep["spans"] if s["kind"] in ("op", "span"))
                            ops_per_step = rf / max(1, nsteps)
                        else:
                            sampled_rep = rep
                for m in names:
                    ratio[m].append(this[m] / this["untraced"])
                # Shares of this round's sampled run vs this round's all run.
                a, s = shares(all_rep), shares(sampled_rep)
                keys = [k for k in set(a) | set(s) if max(a.get(k, 0), s.get(k, 0)) >= 1.0]
                sampled_diff.append(max(abs(a.get(k, 0) - s.get(k, 0)) for k in keys))
            floor_ns = statistics.median(med["rf_floor"])
            row = {}
            for m in modes:
                mm = statistics.median(med[m])
                row[m] = {
                    "median_step_ns": mm,
                    "median_step_wall_ns": statistics.median(wall[m]),
                    "overhead_pct": 100 * (statistics.median(ratio[m]) - 1),
                    "ns_per_op_above_floor": (mm - floor_ns) / ops_per_step if ops_per_step else None,
                    "exit_ns": statistics.median(exit_ns[m]),
                }
            after = statistics.median(exit_ns["strata_all"]) - statistics.median(exit_ns["untraced"])
            results[model] = {
                "ops_per_step": ops_per_step,
                "events_per_run": events,
                "modes": row,
                "strata_post_run_ns_per_event": after / max(1, events),
                "profiler_exit_ns_per_event": statistics.median(prof_exit),
                "sampled_share_max_diff_pp": statistics.median(sampled_diff),
                "sampled_share_diff_per_round": sampled_diff,
            }
            print_model(model, results[model])
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1)


def print_model(model, r):
    print("\n%s: %.0f RecordFunction events per step, %d events per strata run" % (model, r["ops_per_step"], r["events_per_run"]))
    print("  %-16s %14s %10s %16s %14s" % ("mode", "step (CPU)", "overhead", "ns/op vs floor", "step (wall)"))
    for m, v in r["modes"].items():
        per_op = v["ns_per_op_above_floor"]
        print("  %-16s %11.3f ms %9.1f%% %16s %11.3f ms" % (m, v["median_step_ns"] / 1e6, v["overhead_pct"],
                                               "%.0f" % per_op if per_op is not None and m != "untraced" else "-",
                                               v["median_step_wall_ns"] / 1e6))
    print("  strata work after the program ended: %.2f us/event; torch.profiler at context exit: %.2f us/event" %
          (r["strata_post_run_ns_per_event"] / 1e3, r["profiler_exit_ns_per_event"] / 1e3))
    print("  --ops sampled vs --ops all: per-op self-time shares differ by at most %.1f pp (median over rounds)" %
          r["sampled_share_max_diff_pp"])


if __name__ == "__main__":
    main()
