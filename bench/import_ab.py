#!/usr/bin/env python3
"""Import throughput of two (or more) strata_import_bench builds on one file,
fresh processes, interleaved: A B, B A, A B, ... on one core. Prints each
build's median MB/s (CPU time) over the rounds and the median of the per-round
ratios to the first build (paired: the machine's drift hits both alike).

  bench/import_ab.py FILE ROUNDS BASELINE_BENCH "build/bin/strata_import_bench [ARGS]" ...

Each run imports the file once in a fresh process (--repeat 1): the figure a
user gets from `strata report FILE`, page faults of the model included (a
--repeat N run reuses the heap of the runs before it).
"""
import json
import statistics
import subprocess
import sys


def main():
    if len(sys.argv) < 4:
        sys.exit(__doc__)
    path, rounds, benches = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
    res = {b: [] for b in benches}
    for r in range(rounds):
        for b in benches if r % 2 == 0 else benches[::-1]:
            cmd = b.split()
            out = subprocess.run(["taskset", "-c", "0", cmd[0], path, "--repeat", "1"] + cmd[1:],
                                 capture_output=True, text=True, check=True).stdout
            res[b].append(json.loads(out.strip().splitlines()[-1])["mb_per_s_cpu"])
    for b in benches:
        v = res[b]
        print(f"{b}: median {statistics.median(v):.0f} MB/s (CPU), range {min(v):.0f}-{max(v):.0f}")
    for b in benches[1:]:
        ratios = [y / x for x, y in zip(res[benches[0]], res[b])]
        print(f"  paired ratio to {benches[0]}: median {statistics.median(ratios):.3f}")


if __name__ == "__main__":
    main()
