#!/usr/bin/env bash
# The OS collector's cost on a system-call-heavy program, side by side with
# `perf trace` and `strace -c` doing the same, in the same run; then the event
# rate the collector sustains on both cores, and its exact loss count.
#
#   bench/os_overhead.sh [BUILD_DIR] [RUNS]        (root: syscall tracing needs it)
#
# Each configuration runs RUNS times; we print the minimum and the median of
# the ns per getppid() call measured inside the program, and the cost added
# over the untraced run. perf trace and strace are ~20x slower, so they run
# N/10 calls (the figure is per call).
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD="${1:-build}"
RUNS="${2:-5}"
N=1000000
STRATA="$BUILD/bin/strata"
BENCH="$BUILD/bin/syscall_bench"
OUT=$(mktemp -d)
trap 'rm -rf "$OUT"' EXIT
[ -x "$BENCH" ] || { echo "build $BENCH first (cmake --build $BUILD --target syscall_bench strata_cli)"; exit 1; }

run() {  # label n cmd... -> prints "label min median"
  local label=$1 n=$2; shift 2
  local vals=()
  for _ in $(seq "$RUNS"); do
    local line
    line=$("$@" 2>/dev/null | grep -o 'ns_per_call [0-9.]*' | awk '{print $2}')
    vals+=("$line")
  done
  printf '%s\n' "${vals[@]}" | sort -n | awk -v l="$label" -v n="$n" '{a[NR]=$1} END {printf "%-34s %9d %10.0f %10.0f\n", l, n, a[1], a[int((NR+1)/2)]}'
}

echo "# kernel $(uname -r), $(nproc) CPUs, perf_event_paranoid=$(cat /proc/sys/kernel/perf_event_paranoid), $(date -u +%F)"
printf '%-34s %9s %10s %10s\n' "configuration" "calls" "min ns" "median ns"
{
  run "untraced" $N "$BENCH" $N
  run "strata record --no-os" $N "$STRATA" record -q -f -o "$OUT/a" --no-os -- "$BENCH" $N
  run "strata record (default OS level)" $N "$STRATA" record -q -f -o "$OUT/b" -- "$BENCH" $N
  run "strata record --syscalls" $N "$STRATA" record -q -f -o "$OUT/c" --syscalls -- "$BENCH" $N
  if command -v perf >/dev/null; then
    run "perf record -e raw_syscalls:*" $N perf record -q -o "$OUT/perf.data" -e 'raw_syscalls:*' -- "$BENCH" $N
    run "perf trace -s" $((N / 10)) perf trace -s -o "$OUT/trace.txt" -- "$BENCH" $((N / 10))
  fi
  if command -v strace >/dev/null; then
    run "strace -c -f" $((N / 10)) strace -c -f -o "$OUT/strace.txt" -- "$BENCH" $((N / 10))
  fi
} | tee "$OUT/table"
awk 'NR==1 {base=$(NF-1)} {printf "  added per call (min) %-34s %+8.0f ns\n", $0 ~ /untraced/ ? "untraced" : substr($0,1,34), $(NF-1)-base}' "$OUT/table"

echo
echo "# sustained rate, 2 threads on 2 CPUs, --syscalls (2 events per call)"
for ring in 0 64; do
  "$STRATA" record -q -f -o "$OUT/rate" --syscalls --os-buffer "$ring" -- "$BENCH" 2000000 2 > "$OUT/rate.txt"
  python3 - "$OUT/rate/strata.json" "$OUT/rate.txt" "$ring" <<'PY'
import json, sys, re
m = json.load(open(sys.argv[1]))
txt = open(sys.argv[2]).read()
ms = float(re.search(r"elapsed_ms ([0-9.]+)", txt).group(1))
os = m["os"]
streams = sum(s["lost_events"] for s in m["streams"] if "/cpu-" in s["file"])
ring = "auto" if sys.argv[3] == "0" else sys.argv[3] + " KiB"
print(f"  ring {ring:>8}/CPU: {os['records']} records in {ms:.0f} ms = {os['records'] / ms * 1e3 / 1e6:.2f} M records/s; "
      f"lost {os['lost_records']} (cpu streams' events_discarded: {streams})")
PY
done
