#!/bin/bash
# Runs a command against a real local Dask cluster: a scheduler and two worker
# processes (one thread each) started here, stopped after the command.
#
#   with_dask_cluster.sh PYTHON DIR CMD [ARGS...]
#
# PYTHON has `distributed` (its bin/ holds the `dask` command); DIR gets the
# scheduler file and the logs. The command finds the scheduler's address in
# $DASK_SCHEDULER. Exits with the command's status (77: no cluster could start).
set -u
PY=$1 DIR=$2
shift 2
BIN=$(dirname "$PY")
mkdir -p "$DIR"
rm -f "$DIR/scheduler.json"
pids=()
cleanup() { kill "${pids[@]}" 2>/dev/null; wait 2>/dev/null; }
trap cleanup EXIT
"$BIN/dask" scheduler --host 127.0.0.1 --port 0 --no-dashboard --scheduler-file "$DIR/scheduler.json" \
  > "$DIR/scheduler.log" 2>&1 &
pids+=($!)
for w in 1 2; do
  "$BIN/dask" worker --scheduler-file "$DIR/scheduler.json" --nthreads 1 --no-dashboard --name "worker-$w" \
    > "$DIR/worker-$w.log" 2>&1 &
  pids+=($!)
done
# Both workers connected (or give up after a minute).
if ! "$PY" - "$DIR/scheduler.json" <<'PY'
import json, os, sys, time
from distributed import Client
path = sys.argv[1]
deadline = time.time() + 60
while not os.path.exists(path) and time.time() < deadline:
    time.sleep(0.1)
c = Client(scheduler_file=path, timeout=30)
c.wait_for_workers(2, timeout=max(1, deadline - time.time()))
c.close()
PY
then
  echo "with_dask_cluster: the cluster did not start; see $DIR/*.log"
  exit 77
fi
DASK_SCHEDULER=$("$PY" -c 'import json,sys; print(json.load(open(sys.argv[1]))["address"])' "$DIR/scheduler.json")
export DASK_SCHEDULER
"$@"
