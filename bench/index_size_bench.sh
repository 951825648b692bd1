#!/usr/bin/env bash
# The trace index's size and its cost, two strata builds side by side in one
# run: for each trace, `strata index` (wall, peak RSS, the index's size against
# the trace's) and then `strata report --json` from that index with no stored
# answer (best of ROUNDS: wall, peak RSS). Each build indexes its own copy of
# each trace (a hard link for a file, a copy for a directory) under WORK.
#   bench/index_size_bench.sh OLD_BUILD_DIR NEW_BUILD_DIR TRACE...
# WORK (default /tmp/strata-index-size) is removed at the end unless KEEP=1.
set -euo pipefail
OLD="$1"; NEW="$2"; shift 2
ROUNDS="${ROUNDS:-5}"
WORK="${WORK:-/tmp/strata-index-size}"
rm -rf "$WORK"; mkdir -p "$WORK"
printf '%-22s %-5s %9s %8s %9s %11s %7s %9s %8s\n' trace build trace_MB index_s index_RSS index_MB ratio report_s rep_RSS
for trace in "$@"; do
  name=$(basename "$trace")
  for which in old new; do
    dir=$([ "$which" = old ] && echo "$OLD" || echo "$NEW")
    strata="$dir/bin/strata"
    copy="$WORK/$which-$name"
    if [ -d "$trace" ]; then cp -r "$trace" "$copy"; rm -f "$copy"/.strata-index*; ix="$copy/.strata-index"
    else ln "$trace" "$copy" 2>/dev/null || cp "$trace" "$copy"; ix="$copy.strata-index"; fi
    tsize=$(du -sb "$copy" | cut -f1)
    read -r iw ik < <(/usr/bin/time -f '%e %M' "$strata" index --no-report "$copy" 2>&1 >/dev/null | tail -1)
    isize=$(stat -c %s "$ix")
    best=""; rss=""
    for _ in $(seq "$ROUNDS"); do
      rm -f "$ix".result-*
      read -r w k < <(/usr/bin/time -f '%e %M' "$strata" report --json "$copy" 2>&1 >/dev/null | tail -1)
      if [ -z "$best" ] || awk "BEGIN{exit !($w < $best)}"; then best=$w; rss=$k; fi
    done
    printf '%-22s %-5s %9.1f %8.2f %8.0fM %11.2f %7.3f %9.3f %7.0fM\n' "$name" "$which" \
      "$(awk "BEGIN{print $tsize/1048576}")" "$iw" "$(awk "BEGIN{print $ik/1024}")" \
      "$(awk "BEGIN{print $isize/1048576}")" "$(awk "BEGIN{print $isize/$tsize}")" "$best" "$(awk "BEGIN{print $rss/1024}")"
    rm -rf "$copy" "$ix" "$ix".result-*
  done
done
[ "${KEEP:-0}" = 1 ] || rm -rf "$WORK"
