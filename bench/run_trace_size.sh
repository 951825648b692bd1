#!/usr/bin/env bash
# Bytes per event on disk for the example workload (stream files; the fixed
# ~6 KB metadata file excluded), beside LTTng-UST's size for its smallest event.
#   bench/run_trace_size.sh [BUILD_DIR] [STEPS]
set -euo pipefail
BUILD_DIR="$(cd "${1:-build}" && pwd)"
STEPS="${2:-50}"
WORK=$(mktemp -d /tmp/strata-size-XXXXXX)
trap 'rm -rf "$WORK"' EXIT
"$BUILD_DIR/bin/strata" record -q -o "$WORK/trace" -- "$BUILD_DIR/bin/dataflow" --steps "$STEPS" >/dev/null
bytes=$(find "$WORK/trace/ctf" -type f ! -name metadata -printf '%s\n' | awk '{s+=$1} END {print s}')
"$BUILD_DIR/bin/strata" report --json "$WORK/trace" | python3 -c "
import json, sys
j = json.load(sys.stdin)
events = j['trace']['events']
bytes_ = int(sys.argv[1])
print(f'dataflow, {sys.argv[2]} steps: {events} events, {bytes_} bytes of streams, {bytes_ / events:.2f} bytes/event')
" "$bytes" "$STEPS"
