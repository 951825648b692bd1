#!/usr/bin/env python3
"""A program whose matrix products run in the reference BLAS gets a finding that
names it, and the finding's gain predicts what switching to OpenBLAS does:

  - recorded with the reference BLAS (LD_LIBRARY_PATH to Debian's netlib
    libblas.so.3), the top finding is `unoptimized_library`;
  - the same program run with OpenBLAS (LD_LIBRARY_PATH to its libblas.so.3)
    is faster by a measured share of its iteration time; the finding's
    estimated gain does not promise more than that share (at most 25% above
    it, relative) and finds at least half of it. The what-if shortens the
    BLAS's own time only; what else a shorter step does is not modelled, and
    on this project's VM it is a lot: memory left untouched for 100 ms costs
    3-5x more to touch again than memory touched 5 ms ago
    (bench/cold_memory.py), so the optimizer and the elementwise ops of a
    100 ms reference-BLAS step run 2-3x slower than in the 20 ms OpenBLAS
    step (BENCHMARKS.md, "The reference-BLAS what-if falls short on this VM");
  - recorded with OpenBLAS, no `unoptimized_library` finding.

OpenBLAS comes from Debian's libopenblas0-pthread: the installed one, or the
package downloaded (apt-get download) and unpacked into --work, which leaves the
machine's own BLAS alternative untouched.

Usage: check_blas.py --strata build/bin/strata [--python /usr/bin/python3] [--work DIR]
Exit 0 when every check holds, 1 otherwise, 77 when torch, the reference BLAS or
OpenBLAS is not available.
"""
import argparse
import glob
import json
import os
import re
import statistics
import subprocess
import sys

from checking import SKIP, framework_python

HERE = os.path.dirname(os.path.abspath(__file__))
LIBDIR = "/usr/lib/x86_64-linux-gnu"

PROGRAMS = [
    ("transformer_lm", ["--iters", "8", "--batch", "8", "--seq", "32", "--d-model", "64", "--layers", "2"]),
    ("numpy_loading", ["--iters", "10", "--batch", "128", "--features", "256"]),
]


def openblas_dir(work):
    if os.path.exists(os.path.join(LIBDIR, "openblas-pthread", "libblas.so.3")):
        return os.path.join(LIBDIR, "openblas-pthread")
    unpacked = os.path.join(work, "openblas", "root")
    found = glob.glob(os.path.join(unpacked, "usr/lib/*/openblas-pthread"))
    if found:
        return found[0]
    dl = os.path.join(work, "openblas")
    os.makedirs(dl, exist_ok=True)
    r = subprocess.run(["apt-get", "download", "libopenblas0-pthread"], cwd=dl, capture_output=True, text=True)
    debs = glob.glob(os.path.join(dl, "libopenblas0-pthread_*.deb"))
    if r.returncode != 0 or not debs:
        return None
    if subprocess.run(["dpkg", "-x", debs[0], unpacked], capture_output=True).returncode != 0:
        return None
    found = glob.glob(os.path.join(unpacked, "usr/lib/*/openblas-pthread"))
    return found[0] if found else None


def env_with(libdir):
    e = dict(os.environ)
    e["LD_LIBRARY_PATH"] = libdir
    return e


def iter_median(python, name, args, libdir):
    r = subprocess.run([python, os.path.join(HERE, name + ".py")] + args, env=env_with(libdir),
                       capture_output=True, text=True, timeout=600)
    if r.returncode != 0:
        raise RuntimeError(f"{name} exited {r.returncode}: {r.stderr.strip()[-300:]}")
    iters = [float(x) for x in re.findall(r"^iter_ms=([0-9.]+)(?: samples=\d+)?(?: end_ns=\d+)?$", r.stdout, re.M)]
    return statistics.median(iters[1:])


def findings(strata, python, name, args, libdir, out):
    cmd = [strata, "record", "-q", "--force", "-o", out, "--", python, os.path.join(HERE, name + ".py")] + args
    r = subprocess.run(cmd, env=env_with(libdir), capture_output=True, text=True, timeout=600)
    if r.returncode != 0:
        raise RuntimeError(f"{name}: record exited {r.returncode}: {r.stderr.strip()[-300:]}")
    rep = subprocess.run([strata, "report", "--json", out], capture_output=True, text=True)
    if rep.returncode != 0:
        raise RuntimeError(f"{name}: report exited {rep.returncode}: {rep.stderr.strip()[-300:]}")
    return json.loads(rep.stdout).get("findings", [])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--strata", required=True)
    ap.add_argument("--python", default="/usr/bin/python3")
    ap.add_argument("--work", default="/tmp/strata-check-blas")
    a = ap.parse_args()
    if framework_python("check_blas", "torch", a.python) is None:
        return SKIP
    reference = os.path.join(LIBDIR, "blas")
    if not os.path.exists(os.path.join(reference, "libblas.so.3")):
        print("check_blas: no reference BLAS (Debian libblas3) at " + reference + ": skipped")
        return SKIP
    os.makedirs(a.work, exist_ok=True)
    fast = openblas_dir(a.work)
    if not fast:
        print("check_blas: OpenBLAS neither installed nor downloadable (apt-get download libopenblas0-pthread): skipped")
        return SKIP
    failures = []
    for name, args in PROGRAMS:
        slow_f = findings(a.strata, a.python, name, args, reference, os.path.join(a.work, name + "-ref"))
        fast_f = findings(a.strata, a.python, name, args, fast, os.path.join(a.work, name + "-openblas"))
        t_ref = iter_median(a.python, name, args, reference)
        t_fast = iter_median(a.python, name, args, fast)
        measured = 100.0 * (1 - t_fast / t_ref)
        line = f"{name}: {t_ref:.1f} ms per iteration on the reference BLAS, {t_fast:.1f} ms on OpenBLAS " \
               f"(measured gain {measured:.1f}%)"
        bad = []
        top = slow_f[0] if slow_f else None
        if not top or top["category"] != "unoptimized_library":
            bad.append(f"top finding {top['category'] if top else 'none'}, not unoptimized_library")
        else:
            est = top["estimated_gain_pct"]
            line += f"; estimated {est:.1f}%"
            if est > 1.25 * measured:
                bad.append(f"estimated gain {est:.1f}% vs measured {measured:.1f}% (promises more than 25% above it)")
            elif est < 0.5 * measured:
                bad.append(f"estimated gain {est:.1f}% vs measured {measured:.1f}% (less than half of it)")
        if any(f["category"] == "unoptimized_library" for f in fast_f):
            bad.append("unoptimized_library reported with OpenBLAS")
        print(line + ("" if not bad else "  FAIL: " + "; ".join(bad)), flush=True)
        failures += [f"{name}: {b}" for b in bad]
    for f in failures:
        print("FAIL " + f)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
