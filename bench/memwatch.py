#!/usr/bin/env python3
"""Runs a command and reports its wall time and its peak memory, split into
anonymous memory (what the issue's "peak anonymous memory" bounds: the heap,
what a process cannot give back without swap) and file-backed pages (a mapped
index, spilled columns: the kernel writes those back and drops them under
pressure).

  bench/memwatch.py [--interval-ms 20] -- CMD ARGS...

The peak of RSS is the kernel's (VmHWM); the peaks of RssAnon and RssFile +
RssShmem are sampled every interval, so a spike shorter than it can be missed.
Prints one line: wall_s=... peak_rss_mb=... peak_anon_mb=... peak_file_mb=...
and exits with the command's status.
"""
import argparse
import subprocess
import sys
import time


def status_kb(pid):
    out = {}
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                k, _, v = line.partition(":")
                if k in ("VmHWM", "RssAnon", "RssFile", "RssShmem"):
                    out[k] = int(v.split()[0])
    except (FileNotFoundError, ProcessLookupError, ValueError):
        pass
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--interval-ms", type=float, default=20)
    ap.add_argument("cmd", nargs=argparse.REMAINDER)
    a = ap.parse_args()
    cmd = a.cmd[1:] if a.cmd and a.cmd[0] == "--" else a.cmd
    if not cmd:
        ap.error("no command")
    t0 = time.monotonic()
    p = subprocess.Popen(cmd)
    hwm = anon = filed = 0
    while p.poll() is None:
        s = status_kb(p.pid)
        hwm = max(hwm, s.get("VmHWM", 0))
        anon = max(anon, s.get("RssAnon", 0))
        filed = max(filed, s.get("RssFile", 0) + s.get("RssShmem", 0))
        time.sleep(a.interval_ms / 1000)
    wall = time.monotonic() - t0
    print(f"wall_s={wall:.2f} peak_rss_mb={hwm / 1024:.0f} peak_anon_mb={anon / 1024:.0f} "
          f"peak_file_mb={filed / 1024:.0f}", file=sys.stderr)
    sys.exit(p.returncode)


if __name__ == "__main__":
    main()
