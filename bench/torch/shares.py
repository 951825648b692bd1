#!/usr/bin/env python3
"""How close is --ops sampled's op profile to --ops all's on the same program?

  bench/torch/shares.py --build build [--runs 4] [--model cnn]

Runs bench/torch/loop.py alternately under `strata record --ops all` and
`--ops sampled` (--runs times each), takes every op's self-time share of all op
self time from `strata report --json`, and prints the largest difference (in
percentage points) between the median shares of the two modes, over ops with at
least 1% in either. As the noise floor: the same figure between the two halves
of the --ops all runs (runs of one mode differ too: other work on the machine
slows some ops more than others).
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))


def shares(strata, trace):
    p = subprocess.run([strata, "report", "--json", trace], capture_output=True, text=True, check=True)
    f = json.loads(p.stdout)["framework"]
    return {o["name"]: o["self_pct"] for o in f["ops"]}, f["ops_coverage"]


def median_shares(runs):
    keys = set().union(*runs)
    return {k: statistics.median(r.get(k, 0.0) for r in runs) for k in keys}


def max_diff(a, b):
    keys = [k for k in set(a) | set(b) if max(a.get(k, 0), b.get(k, 0)) >= 1.0]
    worst = max(keys, key=lambda k: abs(a.get(k, 0) - b.get(k, 0)))
    return abs(a.get(worst, 0) - b.get(worst, 0)), worst


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default="build")
    ap.add_argument("--runs", type=int, default=4)
    ap.add_argument("--model", default="cnn")
    ap.add_argument("--steps", type=int, default=0, help="default: 400 cnn, 1000 tiny")
    args = ap.parse_args()
    strata = os.path.join(args.build, "bin", "strata")
    steps = args.steps or (400 if args.model == "cnn" else 1000)
    cmd = ["/usr/bin/python3", os.path.join(HERE, "loop.py"), "--model", args.model, "--steps", str(steps)]
    tmp = tempfile.mkdtemp(prefix="strata-shares-")
    res = {"all": [], "sampled": []}
    cov = []
    for r in range(args.runs):
        for mode in ("all", "sampled"):
            trace = os.path.join(tmp, mode)
            subprocess.run([strata, "record", "-q", "-f", "-o", trace, "--ops", mode, "--"] + cmd,
                           check=True, capture_output=True)
            s, c = shares(strata, trace)
            res[mode].append(s)
            if mode == "sampled":
                cov.append(c)
    d, op = max_diff(median_shares(res["all"]), median_shares(res["sampled"]))
    half = len(res["all"]) // 2
    n, nop = max_diff(median_shares(res["all"][:half]), median_shares(res["all"][half:]))
    print("%s, %d steps, %d runs per mode: sampled windows covered %.1f%% of the run (median)" %
          (args.model, steps, args.runs, 100 * statistics.median(cov)))
    print("  --ops sampled vs --ops all: largest per-op share difference %.2f pp (%s)" % (d, op))
    print("  --ops all vs --ops all (two halves of the runs): %.2f pp (%s)" % (n, nop))
    subprocess.run(["rm", "-rf", tmp])


if __name__ == "__main__":
    sys.exit(main())
