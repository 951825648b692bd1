#!/usr/bin/env python3
"""Records each planted-bottleneck program of this folder as written and with
--fixed, and checks strata's diagnosis against what the fix really gained:

  - strata's steps = the program's iterations, median step within 5% of the
    program's own perf_counter time per iteration;
  - the top finding is the planted cause (its category), with the evidence the
    program implies (e.g. the number of syncs per step);
  - its estimated gain within 25% (relative) of the measured speed-up:
    1 - median fixed iteration / median slow iteration, the program's own times;
    a program whose gain swings between processes (host and device nearly
    balanced: the .item() one) is recorded as a few interleaved slow/fixed
    pairs, and the medians over the pairs are compared (each pair is printed);
  - a program without a planted cause (compute-bound) gets no dispatch, input or
    allocation finding above 5%.

Usage: check.py --strata build/bin/strata --set gpu|cpu [--python python3]
                [--work DIR] [--only a,b] [--summary FILE.json]
Exit 0 when every program holds, 1 otherwise, 77 when the set cannot run here
(no torch, or no GPU for the gpu set).
"""
import argparse
import json
import os
import re
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
NOT_CAUSES = {"dispatch_overhead", "input_pipeline", "memory_allocation"}

# name, planted category (None: no planted cause), record options, program arguments,
# expected metrics of the top finding {name: (low, high)}, has --fixed[, slow/fixed pairs]
PROGRAMS = {
    "gpu": [
        ("gpu_pageable_copies", "memcpy", [], ["--steps", "20"], {"pageable_copies_per_step": (1, 2)}, True),
        # Host and device nearly balanced: one pair's measured gain ranged from -4% to 25% on an H200
        # (the host's speed differs between processes), so three pairs.
        ("gpu_item_sync", "host_sync", [], ["--steps", "30"], {"syncs_per_step": (8, 9)}, True, 3),
        ("gpu_tiny_kernels", "dispatch_overhead", [], ["--steps", "30"], {}, True),
        ("gpu_compute_bound", None, [], ["--steps", "12"], {}, False),
    ],
    "cpu": [
        ("tiny_reads", "io_syscalls", [], ["--steps", "400"], {}, True),  # without --syscalls: from samples
        ("large_allocs", "memory_allocation", [], [], {}, True),
        ("slow_data_loading", "input_pipeline", [], [], {}, True),
        ("tiny_ops", "dispatch_overhead", [], [], {}, True),
        ("checkpoint_every_step", "checkpoint", [], [], {"saves": (30, 40)}, True),
    ],
}


# The planted cause's line in the program, which must lead the finding's call
# sites ("/path/gpu_item_sync.py:68 (main) (8 per step)").
PLANTED_SITE = {"gpu_pageable_copies": ":46", "gpu_item_sync": ":68"}


def record(a, name, opts, args, fixed):
    out = os.path.join(a.work, name + ("-fixed" if fixed else ""))
    cmd = [a.strata, "record", "-q", "--force", "-o", out] + opts + ["--", a.python, os.path.join(HERE, name + ".py")]
    cmd += args + (["--fixed"] if fixed else [])
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=900)
    if r.returncode != 0:
        raise RuntimeError(f"record exited {r.returncode}: {(r.stderr or r.stdout).strip()[-400:]}")
    iters = [float(x) for x in re.findall(r"^iter_ms=([0-9.]+)$", r.stdout, re.M)]
    rep = subprocess.run([a.strata, "report", "--json", "--full", out], capture_output=True, text=True, timeout=600)
    if rep.returncode != 0:
        raise RuntimeError(f"report exited {rep.returncode}: {rep.stderr.strip()[-400:]}")
    return iters, json.loads(rep.stdout), out


def run_plain(a, name, args, fixed):
    """The program's own per-iteration times without strata."""
    cmd = [a.python, os.path.join(HERE, name + ".py")] + args + (["--fixed"] if fixed else [])
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=900)
    return [float(x) for x in re.findall(r"^iter_ms=([0-9.]+)$", r.stdout, re.M)]


def steady(xs):
    return xs[2:] if len(xs) > 4 else xs  # the first iterations warm up caches and allocators


def planted_gain(rep, planted):
    for f in rep.get("findings", []):
        if f["category"] == planted:
            return f["estimated_gain_pct"]
    return None


def check(a, name, planted, opts, args, expect, has_fixed, summary, pairs=1):
    bad = []
    iters, rep, _ = record(a, name, opts, args, False)
    # More interleaved pairs: the medians of their estimates and of their programs' times.
    extra = []
    for _ in range(1, pairs if has_fixed else 1):
        fi, frep, _ = record(a, name, opts, args, True)
        si, srep, _ = record(a, name, opts, args, False)
        extra.append((si, srep, fi, frep))
    steps = rep.get("framework", {}).get("steps", {}).get("steps", [])
    findings = rep.get("findings", [])
    top = findings[0] if findings else None
    row = {"program": name, "planted": planted, "iterations": len(iters), "steps": len(steps),
           "findings": [(f["category"], round(f["estimated_gain_pct"], 1)) for f in findings[:3]]}
    line = f"{name}: {len(iters)} iterations, {len(steps)} steps"
    if iters and len(steps) != len(iters):
        bad.append(f"steps {len(steps)} != iterations {len(iters)}")
    durs = [s["duration_ns"] / 1e6 for s in steps if not s.get("skipped")]
    if durs and iters:
        med, own = statistics.median(steady(durs)), statistics.median(steady(iters))
        row.update(median_step_ms=med, median_iter_ms=own)
        line += f"; median step {med:.2f} ms vs the program's {own:.2f} ms"
        if abs(med - own) > 0.05 * own:
            bad.append(f"median step {med:.2f} ms vs the program's {own:.2f} ms (more than 5% apart)")
    bd = rep.get("framework", {}).get("steps", {}).get("breakdown", {})
    if bd.get("host_pct"):
        parts = sorted(bd["host_pct"].items(), key=lambda kv: -kv[1])[:4]
        line += "; host " + ", ".join(f"{k} {v:.0f}%" for k, v in parts)
        row["host_pct"] = bd["host_pct"]
    if bd.get("device_busy_ns") is not None and bd.get("counted_ns"):
        row["device_busy_pct"] = 100.0 * bd["device_busy_ns"] / bd["counted_ns"]
        line += f"; device busy {row['device_busy_pct']:.0f}%"
    line += "; findings " + (", ".join(f"{c} {g}%" for c, g in row["findings"]) or "none")
    if planted is None:
        for f in findings:
            if f["category"] in NOT_CAUSES and f["estimated_gain_pct"] > 5:
                bad.append(f"no planted cause, yet {f['category']} claims {f['estimated_gain_pct']:.1f}%")
    elif not top or top["category"] != planted:
        bad.append(f"top finding {top['category'] if top else 'none'}, planted {planted}")
    if top and planted and top["category"] == planted:
        m = top.get("evidence", {}).get("metrics", {})
        for k, (lo, hi) in expect.items():
            v = m.get(k)
            row[k] = v
            if v is None or not lo <= v <= hi:
                bad.append(f"{k} = {v}, expected {lo}..{hi}")
        # The program's call sites of the planted cause, where the finding names
        # them (copies, syncs): the program's own file comes first.
        site = PLANTED_SITE.get(name)
        where = top.get("evidence", {}).get("where", [])
        if site and not (where and name + ".py" + site in where[0]):
            bad.append(f"the finding's call sites {where[:2]} do not lead with {name}.py {site}")
    if has_fixed:
        fixed_iters, fixed_rep, _ = record(a, name, opts, args, True)
        if iters and fixed_iters:
            slow, fast = statistics.median(steady(iters)), statistics.median(steady(fixed_iters))
            est = top["estimated_gain_pct"] if top and planted and top["category"] == planted else None
            if extra:
                tops = [top["category"] if top else None]
                pair_rows = [(slow, fast, planted_gain(rep, planted))]
                for si, srep, fi, _ in extra:
                    f0 = srep.get("findings", [])
                    tops.append(f0[0]["category"] if f0 else None)
                    if si and fi:
                        pair_rows.append((statistics.median(steady(si)), statistics.median(steady(fi)),
                                          planted_gain(srep, planted)))
                row["pairs"] = [{"slow_ms": p[0], "fixed_ms": p[1], "estimated_gain_pct": p[2]} for p in pair_rows]
                line += "; pairs " + ", ".join(f"{p[0]:.2f}->{p[1]:.2f} ms (est {p[2] if p[2] is None else round(p[2], 1)}%)"
                                                for p in pair_rows)
                slow = statistics.median(p[0] for p in pair_rows)
                fast = statistics.median(p[1] for p in pair_rows)
                ests = [p[2] for p in pair_rows if p[2] is not None]
                majority = sum(c == planted for c in tops) * 2 > len(tops)
                if majority and top and top["category"] != planted:
                    bad = [b for b in bad if not b.startswith("top finding")]  # one pair of several
                est = statistics.median(ests) if majority and ests else None
                if not majority:
                    bad.append(f"top findings over the pairs {tops}, planted {planted}")
            measured = 100.0 * (1 - fast / slow)
            row.update(fixed_median_iter_ms=fast, measured_gain_pct=measured)
            line += f"; fixed {fast:.2f} ms: measured gain {measured:.1f}%"
            if est is not None:
                row["estimated_gain_pct"] = est
                line += f", estimated {est:.1f}%"
                if abs(est - measured) > 0.25 * abs(measured):
                    bad.append(f"estimated gain {est:.1f}% vs measured {measured:.1f}% (more than 25% apart)")
        if a.unrecorded:
            plain = [(run_plain(a, name, args, False), run_plain(a, name, args, True)) for _ in range(pairs)]
            plain = [(statistics.median(steady(x)), statistics.median(steady(y))) for x, y in plain if x and y]
            if plain:
                ps, pf = statistics.median(p[0] for p in plain), statistics.median(p[1] for p in plain)
                if len(plain) > 1:
                    line += "; without strata pairs " + ", ".join(f"{x:.2f}->{y:.2f}" for x, y in plain)
                row.update(unrecorded_slow_ms=ps, unrecorded_fixed_ms=pf, unrecorded_gain_pct=100.0 * (1 - pf / ps))
                line += f"; without strata {ps:.2f} -> {pf:.2f} ms ({row['unrecorded_gain_pct']:.1f}%)"
        row["fixed_findings"] = [(f["category"], round(f["estimated_gain_pct"], 1)) for f in fixed_rep.get("findings", [])[:3]]
    row["failures"] = bad
    summary.append(row)
    print(line + ("" if not bad else "\n  FAIL: " + "; ".join(bad)), flush=True)
    return [f"{name}: {b}" for b in bad]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--strata", required=True)
    ap.add_argument("--set", choices=sorted(PROGRAMS), required=True)
    ap.add_argument("--python", default=sys.executable)
    ap.add_argument("--work", default="/tmp/strata-check-bottlenecks")
    ap.add_argument("--only", default="")
    ap.add_argument("--summary", default="")
    ap.add_argument("--unrecorded", action="store_true", help="also time each pair without strata (the gain a user sees)")
    a = ap.parse_args()
    probe = "import torch" + ("; assert torch.cuda.is_available()" if a.set == "gpu" else "")
    if subprocess.run([a.python, "-c", probe], capture_output=True).returncode != 0:
        print(f"check.py: {a.python} cannot run the {a.set} set (torch{' with a GPU' if a.set == 'gpu' else ''}): skipped")
        return 77
    only = set(x for x in a.only.split(",") if x)
    os.makedirs(a.work, exist_ok=True)
    failures, summary = [], []
    for name, planted, opts, args, expect, has_fixed, *pairs in PROGRAMS[a.set]:
        if only and name not in only:
            continue
        try:
            failures += check(a, name, planted, opts, args, expect, has_fixed, summary, *pairs)
        except (RuntimeError, subprocess.TimeoutExpired, json.JSONDecodeError) as e:
            failures.append(f"{name}: {e}")
            print(f"{name}: FAIL: {e}", flush=True)
    if a.summary:
        with open(a.summary, "w") as f:
            json.dump(summary, f, indent=1)
    for f in failures:
        print("FAIL " + f)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
