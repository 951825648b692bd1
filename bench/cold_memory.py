#!/usr/bin/env python3
"""How much more it costs to touch memory again the longer it sat untouched.

Touches a 4 MiB array (a += 1), spins in Python (touching almost no memory) for
a gap, then times the same touch again. On a machine whose caches keep the
array, the time does not depend on the gap; on this project's VM it grows 3-5x
from a 5 ms gap to a 200 ms one. This is why a program's non-BLAS work runs
faster once an optimized BLAS makes its steps shorter (BENCHMARKS.md, "The
reference-BLAS what-if falls short on this VM").

Usage: python3 bench/cold_memory.py [--mib 4] [--repeats 15]
"""
import argparse
import time

import numpy as np


def busy(ms):
    end = time.perf_counter() + ms / 1e3
    while time.perf_counter() < end:
        pass


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--mib", type=int, default=4)
    ap.add_argument("--repeats", type=int, default=15)
    a = ap.parse_args()
    arr = np.ones(a.mib << 18, dtype=np.float32)
    for gap in (0, 5, 20, 50, 100, 200):
        ts = []
        for _ in range(a.repeats):
            arr += 1.0
            busy(gap)
            t = time.perf_counter()
            arr += 1.0
            ts.append((time.perf_counter() - t) * 1e6)
        ts.sort()
        print(f"gap {gap:4d} ms: touching {a.mib} MiB again takes median {ts[len(ts) // 2]:7.0f} us "
              f"(min {ts[0]:.0f})")


if __name__ == "__main__":
    main()
