"""What every workload in this folder prints, so tests can compare strata's figures
with the program's own: one `iter_ms=X samples=N` line per iteration
(time.perf_counter around the whole iteration, loading included; the samples it
processed), then a summary line with the counts.

Workloads are written the way people write training and inference loops; they import
nothing from strata.
"""
import argparse
import sys
import time


def parse_args(description, iters=20, batch=32, extra=None):
    p = argparse.ArgumentParser(description=description)
    p.add_argument("--iters", type=int, default=iters, help="iterations (ignored with --seconds)")
    p.add_argument("--seconds", type=float, default=0.0, help="run for this long instead of --iters")
    p.add_argument("--batch", type=int, default=batch)
    p.add_argument("--quiet", action="store_true", help="no per-iteration lines")
    if extra:
        extra(p)
    return p.parse_args()


class IterClock:
    """Times each iteration of the program's loop with perf_counter, as users do."""

    def __init__(self, args):
        self.args = args
        self.times = []
        self.samples = 0
        self.t0 = time.perf_counter()
        self.start = self.t0

    def more(self):
        if self.args.seconds > 0:
            return time.perf_counter() - self.start < self.args.seconds
        return len(self.times) < self.args.iters

    def tick(self, samples):
        t = time.perf_counter()
        # When the iteration ended on CLOCK_MONOTONIC, the clock of strata's
        # traces, so a checker can line the program's iterations up with steps.
        end_ns = time.monotonic_ns()
        self.times.append(t - self.t0)
        self.samples += samples
        if not self.args.quiet:
            print(f"iter_ms={1e3 * (t - self.t0):.3f} samples={samples} end_ns={end_ns}", flush=True)
        self.t0 = t

    def done(self):
        ts = sorted(self.times)
        med = ts[len(ts) // 2] if ts else 0.0
        total = sum(self.times)
        sps = self.samples / total if total > 0 else 0.0
        print(f"iterations={len(self.times)} median_iter_ms={1e3 * med:.3f} "
              f"samples={self.samples} samples_per_s={sps:.2f}", flush=True)
        sys.stdout.flush()
