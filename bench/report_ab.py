#!/usr/bin/env python3
"""Two strata builds side by side on one trace: `strata report --json` from the
index with no stored answer, the same report again (the stored answer), and
`strata --version` (the process's start), interleaved round by round.

  bench/report_ab.py OLD_STRATA NEW_STRATA TRACE [--rounds N]

Each build reads its own hard link (or copy) of TRACE under --work, with its
own index (built first, `strata index --no-report`)."""
import argparse
import os
import shutil
import statistics
import subprocess
import time
from glob import glob


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("old")
    ap.add_argument("new")
    ap.add_argument("trace")
    ap.add_argument("--rounds", type=int, default=31)
    ap.add_argument("--work", default="/tmp/strata-report-ab")
    a = ap.parse_args()
    shutil.rmtree(a.work, ignore_errors=True)
    os.makedirs(a.work)
    builds = {"old": a.old, "new": a.new}
    traces = {}
    for k, exe in builds.items():
        dst = os.path.join(a.work, k + "-" + os.path.basename(a.trace))
        if os.path.isdir(a.trace):
            shutil.copytree(a.trace, dst)
            for f in glob(os.path.join(dst, ".strata-index*")):
                os.unlink(f)
        else:
            try:
                os.link(a.trace, dst)
            except OSError:
                shutil.copy(a.trace, dst)
        traces[k] = dst
    # Files a few seconds old by the time their index is built: its signature is
    # settled, and a stored answer is found without hashing the trace again.
    time.sleep(3)
    for k, exe in builds.items():
        dst = traces[k]
        subprocess.run([exe, "index", "--no-report", dst], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    fresh = {k: [] for k in builds}
    stored = {k: [] for k in builds}
    start = {k: [] for k in builds}

    def timed(argv):
        t0 = time.perf_counter()
        subprocess.run(argv, stdout=subprocess.DEVNULL, check=True)
        return time.perf_counter() - t0

    for _ in range(a.rounds):
        for k, exe in builds.items():
            tr = traces[k]
            index = os.path.join(tr, ".strata-index") if os.path.isdir(tr) else tr + ".strata-index"
            for f in glob(index + ".result-*"):
                os.unlink(f)
            fresh[k].append(timed([exe, "report", "--json", tr]))
            stored[k].append(timed([exe, "report", "--json", tr]))
            start[k].append(timed([exe, "--version"]))
    for k in builds:
        f = sorted(fresh[k])
        print(f"{k}: report from the index min {f[0]*1e3:.1f} median {statistics.median(f)*1e3:.1f} "
              f"p90 {f[int(0.9 * (len(f) - 1))]*1e3:.1f} ms | stored answer median {statistics.median(stored[k])*1e3:.1f} ms"
              f" | --version median {statistics.median(start[k])*1e3:.1f} ms")
    shutil.rmtree(a.work, ignore_errors=True)


if __name__ == "__main__":
    main()
