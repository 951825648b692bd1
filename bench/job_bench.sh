#!/bin/bash
# A job's report from its members' summaries (issue 21's target: 64 ranks x
# 1M events, <= 2 GB on the client): the traces of bench/merge_bench.sh
# (N copies of a ~1M-event PyTorch-profiler trace of an NCCL job, each its own
# rank), reported as a job on local cores (`strata report -j 2 TRACE...`) and
# on a local Dask cluster of two worker processes (`--cluster`), each from
# cold indexes and again with them built; wall time, the client's peak RSS and
# the bytes of summaries it received, as strata prints them; the two answers
# compared.
#
#   bench/job_bench.sh [RANKS=64] [SIZE_MB=200] [DIR=/tmp/strata-merge-bench]
#
# Needs merge_bench.sh's traces (made here if missing) and STRATA_DASK_PYTHON
# (a Python with `distributed`) for the cluster half.
set -eu
RANKS=${1:-64} SIZE=${2:-200} DIR=${3:-/tmp/strata-merge-bench}
HERE=$(cd "$(dirname "$0")" && pwd)
STRATA=${STRATA:-$HERE/../build/bin/strata}
export STRATA_CACHE_DIR=$DIR/cache
if [ ! -f "$DIR/members.txt" ] || [ "$(wc -l < "$DIR/members.txt")" -lt "$RANKS" ]; then
  # The traces only: merge_bench.sh's indexes land in the cache dropped below.
  "$HERE/merge_bench.sh" "$RANKS" "$SIZE" "$DIR" > /dev/null
fi
cd "$DIR"
members=$(head -n "$RANKS" members.txt | sed "s|^|$DIR/|")
cold() { rm -rf "$STRATA_CACHE_DIR"; find "$DIR" -maxdepth 1 -name 'rank-*.json.strata-index*' -exec rm -rf {} +; }
run() {
  local label=$1; shift
  /usr/bin/time -f "  $label: %e s wall" "$@" 2>&1 >/dev/null | grep -E "summarized|wall" | sed 's/^strata: /  /'
}
echo "job report of $RANKS traces on local cores (-j 2):"
cold
run "cold indexes" "$STRATA" report --json -o local.json --force -j 2 $members
run "indexes built" "$STRATA" report --json -o local.json --force -j 2 $members
if [ -n "${STRATA_DASK_PYTHON:-}" ]; then
  echo "the same on a local Dask cluster (a scheduler, two worker processes of one thread):"
  cold
  STRATA=$STRATA members=$members "$HERE/../tests/programs/with_dask_cluster.sh" "$STRATA_DASK_PYTHON" "$DIR/dask" bash -c '
    run() { local label=$1; shift; /usr/bin/time -f "  $label: %e s wall" "$@" 2>&1 >/dev/null | grep -E "summarized|wall" | sed "s/^strata: /  /"; }
    run "cold indexes" "$STRATA" report --json -o dask.json --force --cluster "$DASK_SCHEDULER" $members
    run "indexes built" "$STRATA" report --json -o dask.json --force --cluster "$DASK_SCHEDULER" $members'
  if cmp -s local.json dask.json; then echo "  the two answers are identical"; else echo "  the answers DIFFER"; fi
fi
