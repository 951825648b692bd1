#!/usr/bin/env bash
# Events recorded per second under overload, drop policy against block policy:
# 16 threads of tests/programs/emitter writing counters flat out (more threads
# than cores), recorded by `strata record` with the default 64 MiB buffer.
# Prints, per run: wall time of the recording, events the program emitted and
# events recorded per second of it, and the share of events lost (strata.json).
#   bench/run_policy.sh [BUILD_DIR] [EVENTS_PER_THREAD] [RUNS]
set -euo pipefail
BUILD_DIR="$(cd "${1:-build}" && pwd)"
EVENTS="${2:-2000000}"
RUNS="${3:-3}"
THREADS=16
WORK=$(mktemp -d /tmp/strata-policy-XXXXXX)
trap 'rm -rf "$WORK"' EXIT
echo "# $THREADS threads x $EVENTS counter events, $(nproc) CPUs; build $BUILD_DIR"
printf '%-6s %4s %9s %14s %14s %8s\n' policy run wall_s emitted/s recorded/s lost
for run in $(seq "$RUNS"); do
  for policy in drop block; do
    out="$WORK/$policy-$run"
    start=$(date +%s.%N)
    "$BUILD_DIR/bin/strata" record -q --buffer-policy "$policy" -o "$out" -- \
      "$BUILD_DIR/tests/programs/emitter" "$THREADS" "$EVENTS" >/dev/null
    end=$(date +%s.%N)
    python3 - "$out/strata.json" "$start" "$end" "$policy" "$run" "$((THREADS * EVENTS))" <<'PY'
import json, sys
m = json.load(open(sys.argv[1]))
start, end, policy, run, emitted = float(sys.argv[2]), float(sys.argv[3]), sys.argv[4], sys.argv[5], int(sys.argv[6])
lost = m.get("lost_events", 0)
wall = end - start
recorded = emitted - lost
print(f"{policy:<6} {run:>4} {wall:9.2f} {emitted / wall / 1e6:12.1f} M {recorded / wall / 1e6:12.1f} M {100.0 * lost / emitted:7.1f}%")
PY
    rm -rf "$out"
  done
done
