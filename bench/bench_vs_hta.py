#!/usr/bin/env python3
"""End-to-end speed of strata against HTA (HolisticTraceAnalysis) on the same
Kineto traces, in the same run.

HTA: load + temporal breakdown + idle-time breakdown + GPU kernel breakdown
(twice, as scripts/hta_golden.py does) + queue-length summary + memory-bandwidth
summary, timed inside one Python process (interpreter start-up and imports not
counted). strata: `strata report --json --hta-compat FILE` as a new process
(start-up, load, the same analyses and every other report section counted).
Each figure is the minimum of --runs runs, as wall time and as CPU time
(user + system: on a shared machine the wall time mostly measures the queue
for a core). Run it with HTA's Python:

    /work/venvs/hta/bin/python bench/bench_vs_hta.py --strata build/bin/strata [--runs 3] [FILE...]
"""
import argparse
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "scripts"))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--strata", default=str(HERE.parent / "build" / "bin" / "strata"))
    ap.add_argument("--data", default=os.environ.get("STRATA_EXTERNAL_DATA") or str(HERE.parent.parent / "shared" / "data" / "external"))
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("files", nargs="*")
    a = ap.parse_args()

    import hta_golden  # noqa: E402  (needs HTA importable)
    hta_golden.quiet_hta_logging()
    files = [Path(f) for f in a.files] or hta_golden.find_traces(Path(a.data))
    print("| trace | MB (JSON) | HTA wall s | strata wall s | wall speed-up | HTA CPU s | strata CPU s | CPU speed-up "
          "| strata from the index, wall s | speed-up |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    tot_h = tot_s = tot_hc = tot_sc = tot_i = 0.0
    for f in files:
        hw, hc = [], []
        for _ in range(a.runs):
            c0 = time.process_time()
            hw.append(hta_golden.run_once(f)[1])
            hc.append(time.process_time() - c0)
        hta_s, hta_c = min(hw), min(hc)
        def strata(index):
            env = dict(os.environ, STRATA_INDEX="" if index else "off")
            st, sc = [], []
            for _ in range(a.runs + (1 if index else 0)):  # (with the index: its first run builds it)
                ru0 = resource.getrusage(resource.RUSAGE_CHILDREN)
                t0 = time.perf_counter()
                r = subprocess.run([a.strata, "report", "--json", "--hta-compat", str(f)], stdout=subprocess.DEVNULL,
                                   stderr=subprocess.PIPE, env=env)
                st.append(time.perf_counter() - t0)
                ru1 = resource.getrusage(resource.RUSAGE_CHILDREN)
                sc.append((ru1.ru_utime - ru0.ru_utime) + (ru1.ru_stime - ru0.ru_stime))
                if r.returncode != 0:
                    sys.exit(f"strata failed on {f}: {r.stderr.decode()}")
            if index:
                st, sc = st[1:], sc[1:]
            return min(st), max(min(sc), 1e-3)  # rusage ticks are coarse for the smallest files
        s, s_c = strata(False)
        ix, _ = strata(True)
        import gzip
        size = len((gzip.open if str(f).endswith(".gz") else open)(f, "rb").read()) / 1e6
        tot_h += hta_s
        tot_s += s
        tot_hc += hta_c
        tot_sc += s_c
        tot_i += ix
        rel = os.path.relpath(f, a.data) if str(f).startswith(a.data) else str(f)
        print(f"| {rel} | {size:.1f} | {hta_s:.3f} | {s:.3f} | {hta_s / s:.1f}x | {hta_c:.3f} | {s_c:.3f} | {hta_c / s_c:.1f}x "
              f"| {ix:.3f} | {hta_s / ix:.1f}x |", flush=True)
    print(f"| **all** | | {tot_h:.3f} | {tot_s:.3f} | **{tot_h / tot_s:.1f}x** | {tot_hc:.3f} | {tot_sc:.3f} | **{tot_hc / tot_sc:.1f}x** "
          f"| {tot_i:.3f} | **{tot_h / tot_i:.1f}x** |")


if __name__ == "__main__":
    main()
