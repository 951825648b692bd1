#!/usr/bin/env bash
# What `strata record` costs a program and what the recorder process itself
# uses: for each run, the program's median iteration (its own iter_ms= lines,
# first two left out) and the CPU ticks (1/100 s) the strata process used in
# one second while the program ran. Untraced runs are interleaved with traced
# ones: on a shared machine the program's own speed drifts (BENCHMARKS.md).
#
#   bench/record_cost.sh [RUNS] [-- extra strata record options]
#   (default: 6 runs of examples/bottlenecks/tiny_ops.py --steps 150)
set -uo pipefail
cd "$(dirname "$0")/.."
RUNS=${1:-6}
shift || true
[ "${1:-}" = "--" ] && shift
PROG=(/usr/bin/python3 examples/bottlenecks/tiny_ops.py --steps 150)
med() { python3 -c 'import re,statistics as s,sys; x=[float(v) for v in re.findall(r"iter_ms=([0-9.]+)", sys.stdin.read())][2:]; print(f"{s.median(x):.2f}")'; }
out=$(mktemp -d)
for i in $(seq 1 "$RUNS"); do
  plain=$("${PROG[@]}" | med)
  build/bin/strata record -q -f -o "$out/t" "$@" -- "${PROG[@]}" > "$out/rec.out" &
  sp=$!
  sleep 0.5
  c0=$(awk '{print $14+$15}' /proc/$sp/stat 2>/dev/null || echo 0)
  sleep 1.0
  c1=$(awk '{print $14+$15}' /proc/$sp/stat 2>/dev/null || echo 0)
  wait $sp
  echo "run $i: untraced $plain ms, strata $(med < "$out/rec.out") ms; strata process: $((c1 - c0)) ticks in 1 s"
done
rm -rf "$out"
