#!/bin/bash
# strata merge and report of a large job (issue 21's target: 64 ranks x 1M
# events, <= 2 GB on the client): N copies of a ~1M-event PyTorch-profiler
# trace of an NCCL job (HTA's nccl_data replicated end to end by
# make_big_kineto.py), each with its own rank in distributedInfo; each indexed
# (`strata index`), then merged (`strata merge`) and reported (`strata report`
# of the merged trace), with wall time and peak RSS of each step.
#
#   bench/merge_bench.sh [RANKS=64] [SIZE_MB=200] [DIR=/tmp/strata-merge-bench]
#
# Needs RANKS x SIZE_MB of disk for the traces plus ~60 MB per rank of indexes.
set -eu
RANKS=${1:-64} SIZE=${2:-200} DIR=${3:-/tmp/strata-merge-bench}
HERE=$(cd "$(dirname "$0")" && pwd)
STRATA=${STRATA:-$HERE/../build/bin/strata}
DATA=${STRATA_EXTERNAL_DATA:-$HERE/../../shared/data/external}
mkdir -p "$DIR"
cd "$DIR"
if [ ! -f base.json ]; then
  python3 "$HERE/make_big_kineto.py" --source "$DATA/hta/nccl_parser_config/nccl_data.json.gz" --size-mb "$SIZE" -o base.json
fi
python3 - "$RANKS" <<'PY'
import os, sys
n = int(sys.argv[1])
data = open("base.json", "rb").read()
at = data.index(b'"distributedInfo"')
head, tail = data[:at], data[at:]
for r in range(n):
    p = "rank-%d.json" % r
    if os.path.exists(p):
        continue
    t = tail.replace(b'"rank": 0', b'"rank": %d' % r, 1).replace(b'"world_size": 2', b'"world_size": %d' % n, 1)
    with open(p, "wb") as f:
        f.write(head + t)
PY
ls rank-*.json | sort -V > members.txt
t() { /usr/bin/time -f "  %e s wall, peak RSS %M KB" "$@"; }
echo "index $RANKS traces (one command each, as a job's hosts would):"
start=$(date +%s.%N)
peak=0
for f in $(cat members.txt); do
  out=$( { /usr/bin/time -f "%M" "$STRATA" index --no-report "$f" >/dev/null; } 2>&1 | tail -n 1)
  [ "$out" -gt "$peak" ] && peak=$out
done
echo "  $(echo "$(date +%s.%N) - $start" | bc) s wall, peak RSS $peak KB (the largest)"
echo "merge:"
t "$STRATA" merge -f -o job $(cat members.txt) | tail -n 3
echo "report of the merged trace:"
t "$STRATA" report job > report.txt
grep -E "^Ranks|events " report.txt | head -3
