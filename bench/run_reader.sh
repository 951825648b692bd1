#!/usr/bin/env bash
# strata's reader vs babeltrace2 on the same strata trace, one core each.
#   bench/run_reader.sh [BUILD_DIR] [EVENTS_PER_THREAD]
# Records 4 emitter threads (counters inside 1000-event spans), then times
# strata's raw decode (bench/reader_bench, best of 3) and
# `babeltrace2 --output-format=dummy` (which decodes every event and prints nothing).
set -euo pipefail
BUILD_DIR="$(cd "${1:-build}" && pwd)"
N="${2:-5000000}"
WORK=$(mktemp -d /tmp/strata-reader-XXXXXX)
trap 'rm -rf "$WORK"' EXIT
"$BUILD_DIR/bin/strata" record -q --buffer-size 1024 -o "$WORK/trace" -- \
  "$BUILD_DIR/tests/programs/emitter" 4 "$N" --spans
echo "# trace: $(du -sh "$WORK/trace/ctf" | cut -f1)"
taskset -c 0 "$BUILD_DIR/bin/reader_bench" "$WORK/trace" 3
start=$(date +%s.%N)
taskset -c 0 babeltrace2 "$WORK/trace/ctf" --output-format=dummy
end=$(date +%s.%N)
events=$("$BUILD_DIR/bin/strata" report --json "$WORK/trace" | python3 -c 'import json,sys; print(json.load(sys.stdin)["trace"]["events"])')
python3 - "$start" "$end" "$events" <<'PY'
import sys
s, e, n = float(sys.argv[1]), float(sys.argv[2]), int(sys.argv[3])
print(f"babeltrace2 dummy: {e - s:.3f} s  {n / (e - s) / 1e6:.2f} M events/s")
PY
