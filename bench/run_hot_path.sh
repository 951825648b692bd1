#!/usr/bin/env bash
# Hot-path cost per event: strata vs the clock reads vs an enabled LTTng-UST
# tracepoint, in one benchmark run.
#
# LTTng needs a session daemon with a session that enables the tracepoint. As
# root, lttng-sessiond uses /var/run/lttng whatever LTTNG_HOME says, so a
# private daemon runs as an unprivileged user (created if needed) with its own
# LTTNG_HOME, and the benchmark runs as that user too.
#   bench/run_hot_path.sh [BUILD_DIR]
set -euo pipefail
BUILD_DIR="$(cd "${1:-build}" && pwd)"
BIN="$BUILD_DIR/bin/hot_path_bench"
USER_NAME=strata-bench
ARGS=(--benchmark_min_time=0.3 --benchmark_repetitions=5 --benchmark_report_aggregates_only=true)

if [ "$(id -u)" -eq 0 ]; then
  id "$USER_NAME" >/dev/null 2>&1 || useradd --system --create-home --home-dir /tmp/strata-bench-home "$USER_NAME"
  AS=(runuser -u "$USER_NAME" --)
else
  AS=()
fi
WORK=$(mktemp -d /tmp/strata-hotpath-XXXXXX)
chmod 777 "$WORK"
HOME_DIR="$WORK/lttng-home"
"${AS[@]}" mkdir -p "$HOME_DIR"
run() { "${AS[@]}" env LTTNG_HOME="$HOME_DIR" "$@"; }

run lttng-sessiond --daemonize --quiet
cleanup() {
  run lttng destroy -a >/dev/null 2>&1 || true
  pkill -u "$USER_NAME" lttng-sessiond 2>/dev/null || pkill -f "lttng-sessiond.*" -U "$(id -u)" 2>/dev/null || true
}
trap cleanup EXIT
run lttng create hotpath --output="$WORK/lttng-trace" >/dev/null
# Large sub-buffers in discard mode, as a production session would use.
run lttng enable-channel -u ch --subbuf-size=4M --num-subbuf=8 >/dev/null
run lttng enable-event -u -c ch 'strata_bench:event' >/dev/null
run lttng start >/dev/null
echo "# LTTng-UST session active (channel ch, 8 x 4 MiB, discard mode)"
run env TMPDIR="$WORK" "$BIN" "${ARGS[@]}" 2>&1 | grep -E "^(BM_|Run on|-)" | grep -v "_stddev\|_cv\|_mean"
run lttng stop >/dev/null
run lttng view hotpath 2>/dev/null | head -0 || true
echo "# LTTng discarded events, if any, are reported by: babeltrace2 $WORK/lttng-trace"
