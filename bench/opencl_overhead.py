#!/usr/bin/env python3
"""Added time per enqueued OpenCL command under `strata record` (target: <= 2 us).

Runs tests/programs/cl_pipeline --loop K (K tiny kernels enqueued with no event,
then one clFinish; the program prints its own time per kernel) alternately
without and with strata, ROUNDS times, and reports the medians and their
difference. Interleaving keeps slow drifts of a shared VM out of the delta.

  bench/opencl_overhead.py [--build build] [--kernels 10000] [--rounds 11]

--windows: device activity in windows of steps (issue 20): the kernels in 50
steps, run untraced, with every step's device activity (the default), with
--cuda-activity sampled (one step in 50: the live run's default) and with
--cuda-activity off (API calls only); the same interleaving, per-command medians.
"""
import argparse
import os
import re
import resource
import statistics
import subprocess
import sys
import tempfile


def run(cmd, env):
    """(wall us per command as the program measured it, CPU seconds of the whole run)."""
    p = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    out, err = p.communicate(timeout=300)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    # communicate() reaped it; RUSAGE_CHILDREN now includes it (and its children).
    cpu = before.ru_utime + before.ru_stime
    if p.returncode != 0:
        sys.exit(f"{' '.join(cmd)} failed ({p.returncode}):\n{err}")
    m = re.search(r"per_enqueue_us=([0-9.]+)", out)
    if not m:
        sys.exit(f"no per_enqueue_us in output of {' '.join(cmd)}:\n{out}")
    return float(m.group(1)), cpu


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default="build")
    ap.add_argument("--kernels", type=int, default=10000)
    ap.add_argument("--rounds", type=int, default=11)
    ap.add_argument("--windows", action="store_true", help="compare device-activity windows (50 steps)")
    a = ap.parse_args()
    if a.windows:
        return windows(a)
    prog = os.path.join(a.build, "tests/programs/cl_pipeline")
    strata = os.path.join(a.build, "bin/strata")
    env = dict(os.environ)
    env.setdefault("POCL_CACHE_DIR", os.path.join(os.environ.get("TMPDIR", "/tmp"), "strata-pocl-cache"))
    base, traced, base_cpu, traced_cpu, fixed = [], [], [], [], []
    with tempfile.TemporaryDirectory() as tmp:
        run([prog, "--loop", "1000"], env)  # warm PoCL's kernel cache
        for i in range(a.rounds):
            before = resource.getrusage(resource.RUSAGE_CHILDREN)
            w, cpu = run([prog, "--loop", str(a.kernels)], env)
            base.append(w)
            base_cpu.append(cpu - (before.ru_utime + before.ru_stime))
            before = resource.getrusage(resource.RUSAGE_CHILDREN)
            out = os.path.join(tmp, f"t{i}")
            w, cpu = run([strata, "record", "-q", "-f", "-o", out, "--", prog, "--loop", str(a.kernels)], env)
            traced.append(w)
            traced_cpu.append(cpu - (before.ru_utime + before.ru_stime))
            # The same with one kernel: start-up, compilation cache, exit (fixed costs).
            before = resource.getrusage(resource.RUSAGE_CHILDREN)
            c1 = run([prog, "--loop", "1"], env)[1] - (before.ru_utime + before.ru_stime)
            before = resource.getrusage(resource.RUSAGE_CHILDREN)
            c2 = run([strata, "record", "-q", "-f", "-o", out, "--", prog, "--loop", "1"], env)[1] - (
                before.ru_utime + before.ru_stime)
            fixed.append(c2 - c1)
    b, t = statistics.median(base), statistics.median(traced)
    bc, tc = statistics.median(base_cpu), statistics.median(traced_cpu)
    print(f"kernels per run      {a.kernels}, rounds {a.rounds}")
    print(f"without strata       median {b:.3f} us/command  (min {min(base):.3f}, max {max(base):.3f})")
    print(f"with strata record   median {t:.3f} us/command  (min {min(traced):.3f}, max {max(traced):.3f})")
    # On a shared machine interference only adds time: the minima are the
    # least disturbed runs of each; the medians are reported too.
    print(f"added per command    {t - b:+.3f} us wall (medians), {min(traced) - min(base):+.3f} us (minima); "
          f"target <= 2 us")
    # Whole-process CPU (all threads, start-up and the final flush included):
    # an upper bound of the CPU strata adds per command.
    fx = statistics.median(fixed)
    print(f"CPU per run          median {bc * 1e3:.1f} ms without, {tc * 1e3:.1f} ms with strata "
          f"(fixed start-up/exit cost {fx * 1e3:.1f} ms): {(tc - bc - fx) * 1e6 / a.kernels:+.3f} us/command")
    return 0 if min(traced) - min(base) <= 2.0 else 1


def windows(a):
    prog = os.path.join(a.build, "tests/programs/cl_pipeline")
    strata = os.path.join(a.build, "bin/strata")
    env = dict(os.environ)
    env.setdefault("POCL_CACHE_DIR", os.path.join(os.environ.get("TMPDIR", "/tmp"), "strata-pocl-cache"))
    work = [prog, "--loop", str(a.kernels), "50"]
    modes = {"untraced": [], "all": ["--cuda-activity", "all"], "sampled": ["--cuda-activity", "sampled"],
             "off": ["--cuda-activity", "off"]}
    res = {m: [] for m in modes}
    with tempfile.TemporaryDirectory() as tmp:
        run([prog, "--loop", "1000"], env)  # warm PoCL's kernel cache
        for i in range(a.rounds):
            order = list(modes) if i % 2 == 0 else list(modes)[::-1]
            for m in order:
                cmd = work if m == "untraced" else [strata, "record", "-q", "-f", "-o", os.path.join(tmp, m),
                                                    "--no-os"] + modes[m] + ["--"] + work
                res[m].append(run(cmd, env)[0])
    base = statistics.median(res["untraced"])
    print(f"kernels per run {a.kernels} in 50 steps, rounds {a.rounds} (us per enqueued command, medians)")
    for m in modes:
        med = statistics.median(res[m])
        print(f"  {m:9s} {med:8.3f} us  {med - base:+.3f} us vs untraced  (min {min(res[m]):.3f})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
