#!/bin/bash
# What recording costs a data-parallel training job: tests/programs/ddp_train.py
# on 2 ranks (DDP over gloo, Debian's torch 1.13) untraced, under `strata
# record` (every op, the default) and `strata record --ops off` (steps, scopes,
# memory, collectives), ROUNDS rounds interleaved; each rank prints its own
# median iteration. Prints one line per run: mode, round, rank medians (ms).
#
#   bench/ddp_overhead.sh [STRATA] [ROUNDS] [ITERS]
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
strata=${1:-$here/build/bin/strata}
rounds=${2:-3}
iters=${3:-40}
prog=(/usr/bin/python3 "$here/tests/programs/launch_ranks.py" 2 "$here/tests/programs/ddp_train.py")
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
medians() { grep -o 'median iteration [0-9.]*' | awk '{print $3}' | sort -n | paste -sd' '; }
for r in $(seq 1 "$rounds"); do
  echo "untraced $r $(ITERS=$iters "${prog[@]}" 2>&1 | medians)"
  echo "record $r $(ITERS=$iters "$strata" record -q -f -o "$out/t" -- "${prog[@]}" 2>&1 | medians)"
  echo "ops-off $r $(ITERS=$iters "$strata" record -q -f --ops off -o "$out/t" -- "${prog[@]}" 2>&1 | medians)"
done
