#!/usr/bin/env bash
# The OS collector's cost, side by side with `perf trace` and `strace -c` doing
# the same, in the same run; then the event rate the collector sustains on both
# CPUs, and its exact loss count.
#
#   bench/os_overhead.sh [BUILD_DIR] [RUNS]        (as root: syscall tracing needs it)
#
# Two microbenchmarks (bench/syscall_bench.cc), timed inside the program:
#   getppid() in a loop (system-call heavy), and a pipe ping-pong between two
#   threads (context-switch heavy: 4 switches and 4 syscalls per round trip).
# Configurations run interleaved, RUNS rounds, so that load changes on a shared
# machine hit them alike; we print the minimum and the median, and the minimum
# added over the untraced run. perf trace and strace are 20-100x slower, so they
# run a tenth of the iterations (figures are per call / per round trip).
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD="${1:-build}"
RUNS="${2:-5}"
STRATA="$BUILD/bin/strata"
BENCH="$BUILD/bin/syscall_bench"
OUT=$(mktemp -d)
trap 'rm -rf "$OUT"' EXIT
[ -x "$BENCH" ] || { echo "build $BENCH first (cmake --build $BUILD --target syscall_bench strata_cli)"; exit 1; }

table() {  # title unit N ARGS...: one table over the configurations
  local title=$1 unit=$2 n=$3; shift 3
  local args=("$@") small=$((n / 10))
  local -a labels cmds
  labels=("untraced" "strata record --no-os" "strata record (default OS level)" "strata record --sched"
          "strata record --syscalls")
  cmds=("$BENCH ${args[*]} $n"
        "$STRATA record -q -f -o $OUT/a --no-os -- $BENCH ${args[*]} $n"
        "$STRATA record -q -f -o $OUT/b -- $BENCH ${args[*]} $n"
        "$STRATA record -q -f -o $OUT/s --sched -- $BENCH ${args[*]} $n"
        "$STRATA record -q -f -o $OUT/c --syscalls -- $BENCH ${args[*]} $n")
  if command -v perf >/dev/null; then
    labels+=("perf record -e raw_syscalls:*" "perf trace -s")
    cmds+=("perf record -q -o $OUT/perf.data -e 'raw_syscalls:*' -- $BENCH ${args[*]} $n"
           "perf trace -s -o $OUT/trace.txt -- $BENCH ${args[*]} $small")
  fi
  if command -v strace >/dev/null; then
    labels+=("strace -c -f")
    cmds+=("strace -c -f -o $OUT/strace.txt -- $BENCH ${args[*]} $small")
  fi
  local k r
  for k in "${!cmds[@]}"; do : > "$OUT/v$k"; done
  for r in $(seq "$RUNS"); do
    for k in "${!cmds[@]}"; do
      # shellcheck disable=SC2086
      eval ${cmds[$k]} 2>/dev/null | grep -o 'ns_per_call [0-9.]*' | awk '{print $2}' >> "$OUT/v$k"
    done
  done
  echo
  echo "# $title"
  printf '%-34s %8s %10s %10s %12s\n' "configuration" "$unit" "min ns" "median ns" "added (min)"
  local base=""
  for k in "${!cmds[@]}"; do
    local iters=$n
    [[ "${labels[$k]}" == "perf trace -s" || "${labels[$k]}" == "strace -c -f" ]] && iters=$small
    read -r mn md < <(sort -n "$OUT/v$k" | awk '{a[NR]=$1} END {print a[1], a[int((NR+1)/2)]}')
    [ -z "$base" ] && base=$mn
    printf '%-34s %8d %10.0f %10.0f %+12.0f\n' "${labels[$k]}" "$iters" "$mn" "$md" "$(awk -v a="$mn" -v b="$base" 'BEGIN {print a - b}')"
  done
}

echo "# kernel $(uname -r), $(nproc) CPUs, perf_event_paranoid=$(cat /proc/sys/kernel/perf_event_paranoid)," \
     "load average $(cut -d' ' -f1-3 /proc/loadavg), $(date -u +%FT%H:%MZ), $RUNS interleaved rounds"
table "system-call heavy: getppid() loop, ns per call" calls 1000000
table "context-switch heavy: pipe ping-pong, ns per round trip" trips 100000 pingpong

echo
echo "# sustained rate: 2 threads on 2 CPUs calling getppid(), --syscalls (2 records per call)"
for ring in 0 64; do
  "$STRATA" record -q -f -o "$OUT/rate" --syscalls --os-buffer "$ring" -- "$BENCH" 2000000 2 > "$OUT/rate.txt"
  python3 - "$OUT/rate/strata.json" "$OUT/rate.txt" "$ring" <<'PY'
import json, sys, re
m = json.load(open(sys.argv[1]))
ms = float(re.search(r"elapsed_ms ([0-9.]+)", open(sys.argv[2]).read()).group(1))
os = m["os"]
discarded = sum(s["lost_events"] for s in m["streams"] if "/cpu-" in s["file"])
ring = "auto" if sys.argv[3] == "0" else sys.argv[3] + " KiB"
print(f"  ring {ring:>8}/CPU ({os['ring_kb']} KiB): {os['records']} records in {ms:.0f} ms = "
      f"{os['records'] / ms / 1e3:.2f} M records/s; lost {os['lost_records']} "
      f"(sum of the cpu streams' events_discarded: {discarded})")
PY
done
