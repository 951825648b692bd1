#!/usr/bin/env bash
# `strata report` on a trace imported directly, against the same report from
# the trace index (built by the first command, mapped by the next), in one run:
# wall time and peak RSS (best of ROUNDS each, /usr/bin/time), the index's
# build cost and its size against the trace's.
#   bench/index_bench.sh [TRACE] [BUILD_DIR]
# Without TRACE: a Kineto trace of about 216k events (the size of the issue's
# df_index trace) replicated from the shared V100 trace by make_big_kineto.py
# into /tmp (never into the repository).
set -euo pipefail
cd "$(dirname "$0")/.."
TRACE="${1:-}"
BUILD_DIR="${2:-build}"
ROUNDS="${ROUNDS:-5}"
STRATA="$BUILD_DIR/bin/strata"
if [ -z "$TRACE" ]; then
  TRACE=/tmp/strata-bench-index-216k.json
  [ -f "$TRACE" ] || python3 bench/make_big_kineto.py --size-mb 48 -o "$TRACE" >/dev/null
fi
run() {  # run LABEL ENV... : best wall and its RSS over ROUNDS
  local label="$1"; shift
  local best="" rss=""
  for _ in $(seq "$ROUNDS"); do
    out=$(env "$@" /usr/bin/time -f '%e %M' "$STRATA" report --json "$TRACE" 2>&1 >/dev/null | tail -1)
    read -r wall kb <<<"$out"
    if [ -z "$best" ] || awk "BEGIN{exit !($wall < $best)}"; then best=$wall; rss=$kb; fi
  done
  printf '%-34s %6.3f s  %7.1f MB\n' "$label" "$best" "$(awk "BEGIN{print $rss/1024}")"
}
ix="$TRACE.strata-index"
[ -d "$TRACE" ] && ix="$TRACE/.strata-index"
ls -l "$TRACE"
run "report, imported (STRATA_INDEX=off)" STRATA_INDEX=off
out=$(env STRATA_INDEX=rebuild /usr/bin/time -f '%e %M' "$STRATA" report --json "$TRACE" 2>&1 >/dev/null | tail -1)
read -r wall kb <<<"$out"
printf '%-34s %6.3f s  %7.1f MB\n' "report, importing + writing index" "$wall" "$(awk "BEGIN{print $kb/1024}")"
run "report from the index" STRATA_INDEX=
run "report from the index, 1 thread" STRATA_INDEX= STRATA_THREADS=1
tsize=$(du -sb "$TRACE" | cut -f1)
[ -d "$TRACE" ] && tsize=$(( tsize - $(stat -c %s "$ix") ))
echo "trace $tsize bytes, index $(stat -c %s "$ix") bytes ($(awk "BEGIN{printf \"%.2f\", $(stat -c %s "$ix")/$tsize}")x)"
