#!/usr/bin/env bash
# What recording costs a Keras training step (issue 18's target): the median
# iteration of tests/workloads/keras_fit.py (its own iter_ms= lines, the first
# epoch left out) untraced, under strata's cheap tier (no flags), under strata
# with its on-demand tier over a window of steps (--ops-steps: TensorFlow's own
# profiler, whose steps are reported apart), and under TensorFlow's profiler
# alone for the whole fit (the peer). Runs are interleaved: on a shared machine
# the program's own speed drifts. "hooks only" is the cheap tier without the OS
# level (--no-os): what strata's Python hooks cost the step by themselves.
# TensorFlow runs on one inter-op and one intra-op thread (the 2-vCPU VM's
# run-to-run spread with its default pools hides a 1% effect).
#
#   bench/keras_cost.sh [RUNS] [PYTHON] [EPOCHS]   (default: 5 runs, ~/.cache/strata/venv-tf/bin/python, 6)
set -uo pipefail
cd "$(dirname "$0")/.."
RUNS=${1:-5}
PY=${2:-$HOME/.cache/strata/venv-tf/bin/python}
ARGS=(tests/workloads/keras_fit.py --batch 32 --epochs "${3:-6}")
export TF_NUM_INTEROP_THREADS=1 TF_NUM_INTRAOP_THREADS=1
out=$(mktemp -d)
med() {  # median iter_ms after the first epoch (11 iterations), leaving out --ops-steps' window when given
  python3 -c '
import re, statistics as s, sys
skip = set(range(int(sys.argv[1]), int(sys.argv[2]) + 2)) if len(sys.argv) > 2 else set()
x = [float(v) for v in re.findall(r"iter_ms=([0-9.]+)", sys.stdin.read())]
print(f"{s.median([v for i, v in enumerate(x) if i >= 11 and i not in skip]):.2f}")' "$@"
}
cat > "$out/peer.py" <<'PY'
import runpy, sys, tensorflow as tf
tf.profiler.experimental.start(sys.argv[1])
sys.argv = sys.argv[2:]
try:
    runpy.run_path(sys.argv[0], run_name="__main__")
finally:
    tf.profiler.experimental.stop()
PY
for i in $(seq 1 "$RUNS"); do
  plain=$("$PY" "${ARGS[@]}" 2>/dev/null | med)
  cheap=$(build/bin/strata record -q -f -o "$out/t" -- "$PY" "${ARGS[@]}" 2>/dev/null | med)
  hooks=$(build/bin/strata record -q -f --no-os -o "$out/h" -- "$PY" "${ARGS[@]}" 2>/dev/null | med)
  detail=$(build/bin/strata record -q -f --ops-steps 30-34 -o "$out/d" -- "$PY" "${ARGS[@]}" 2>/dev/null | med 30 34)
  peer=$("$PY" "$out/peer.py" "$out/p" "${ARGS[@]}" 2>/dev/null | med)
  echo "run $i: untraced $plain ms, strata $cheap ms, strata hooks only (--no-os) $hooks ms, strata --ops-steps 30-34 $detail ms (outside the window), TF profiler $peer ms"
done
rm -rf "$out"
