#!/usr/bin/env python3
"""What finding the loop's head costs a traced program (python/strata/_loop_head.py):
records tests/workloads/handmade_eval.py (an evaluation and a checkpoint after the
optimizer step every 4th iteration) under `strata record`, with the loop-head
tracing on and off (STRATA_TORCH_LOOP_HEAD=0, set through env(1): `strata record`
passes no STRATA_* variable of its own environment on), in interleaved rounds, and
prints the program's own times: the median plain iteration and the mean
evaluating iteration.

  bench/loop_head_ab.py --strata build/bin/strata --python PY [--rounds 5] [--iters 60]
"""
import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
PROGRAM = os.path.join(HERE, "..", "tests", "workloads", "handmade_eval.py")


def run(strata, python, iters, on, out_dir):
    cmd = [strata, "record", "-q", "-o", out_dir, "--", "env", "STRATA_TORCH_LOOP_HEAD=" + ("1" if on else "0"),
           python, PROGRAM, "--iters", str(iters)]
    r = subprocess.run(cmd, capture_output=True, text=True, check=True)
    times = [float(x) for x in re.findall(r"^iter_ms=([\d.]+)", r.stdout, re.M)]
    evaluated = {int(n) for n in re.findall(r"^iteration (\d+): ", r.stdout, re.M)}
    warm = 4  # the first iterations warm up
    plain = [t for i, t in enumerate(times) if i >= warm and i not in evaluated]
    evals = [t for i, t in enumerate(times) if i >= warm and i in evaluated]
    return statistics.median(plain), statistics.mean(evals)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--strata", required=True)
    ap.add_argument("--python", required=True)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--iters", type=int, default=60)
    a = ap.parse_args()
    res = {True: [], False: []}
    with tempfile.TemporaryDirectory() as tmp:
        for r in range(a.rounds):
            for on in (True, False):
                out = os.path.join(tmp, f"r{r}-{int(on)}")
                res[on].append(run(a.strata, a.python, a.iters, on, out))
                subprocess.run(["rm", "-rf", out], check=False)
    for on in (True, False):
        plain = [p for p, _ in res[on]]
        evals = [e for _, e in res[on]]
        print(f"loop heads {'on ' if on else 'off'}: plain iteration median of rounds {statistics.median(plain):.2f} ms "
              f"({', '.join(f'{p:.2f}' for p in plain)}); evaluating iteration {statistics.median(evals):.2f} ms "
              f"({', '.join(f'{e:.2f}' for e in evals)})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
