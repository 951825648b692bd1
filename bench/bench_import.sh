#!/usr/bin/env bash
# Import throughput and peak memory on a large synthetic-but-realistic Kineto
# trace (bench/make_big_kineto.py replicates a shared real trace; the file goes
# to /tmp, never into the repository).
#   bench/bench_import.sh [SIZE_MB] [BUILD_DIR] [BASELINE_BENCH]
# BASELINE_BENCH: a strata_import_bench built from an older commit, run in the
# same rounds (interleaved, so load changes on a shared machine hit both alike)
# and checked to build the identical model (--digest). Python's json and orjson
# loads of the same file (parse only, no tables) are printed for reference.
set -euo pipefail
cd "$(dirname "$0")/.."
SIZE_MB="${1:-1024}"
BUILD_DIR="${2:-build}"
BASELINE="${3:-}"
ROUNDS="${ROUNDS:-3}"
OUT="/tmp/strata-bench-kineto-${SIZE_MB}mb.json"
if [ ! -f "$OUT" ]; then python3 bench/make_big_kineto.py --size-mb "$SIZE_MB" -o "$OUT"; fi
ls -l "$OUT"
# One core: the import is single-threaded; taskset makes sure nothing else helps.
for r in $(seq "$ROUNDS"); do
  echo "round $r"
  echo -n "  new:      "; taskset -c 0 "$BUILD_DIR/bin/strata_import_bench" "$OUT" --digest
  if [ -n "$BASELINE" ]; then echo -n "  baseline: "; taskset -c 0 "$BASELINE" "$OUT" --digest; fi
done
for mod in json orjson; do
  taskset -c 0 python3 - "$OUT" "$mod" <<'PY' || true
import sys, time, os, importlib
path, mod = sys.argv[1], importlib.import_module(sys.argv[2])
c0 = time.process_time()
with open(path, "rb") as f:
    mod.loads(f.read())
c = time.process_time() - c0
print(f"  python {sys.argv[2]}.loads (parse only, no tables): {c:.2f} s CPU, {os.path.getsize(path) / c / 1e6:.0f} MB/s")
PY
done
