#!/usr/bin/env bash
# Import throughput and peak memory on a large synthetic-but-realistic Kineto
# trace (bench/make_big_kineto.py replicates a shared real trace; the file goes
# to /tmp, never into the repository).
#   bench/bench_import.sh [SIZE_MB] [BUILD_DIR]
set -euo pipefail
cd "$(dirname "$0")/.."
SIZE_MB="${1:-1024}"
BUILD_DIR="${2:-build}"
OUT="/tmp/strata-bench-kineto-${SIZE_MB}mb.json"
if [ ! -f "$OUT" ]; then python3 bench/make_big_kineto.py --size-mb "$SIZE_MB" -o "$OUT"; fi
ls -l "$OUT"
# One core: the import is single-threaded; taskset makes sure nothing else helps.
taskset -c 0 "$BUILD_DIR/bin/strata_import_bench" "$OUT" --repeat 3
