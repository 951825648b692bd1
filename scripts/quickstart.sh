#!/usr/bin/env bash
# The main job: install, build, record the bundled example workload, print its report.
# The workload is a small PyTorch CNN training run (examples/torch/train_cnn.py, unmodified:
# ops, modules, steps, memory, the OS level); where torch cannot be imported, the C++
# dataflow example (examples/dataflow) instead.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/install-deps.sh
./scripts/build.sh
TRACE="${TRACE:-build/example-trace}"
if /usr/bin/python3 -c "import torch" 2>/dev/null; then
  ./build/bin/strata record --force -o "$TRACE" -- /usr/bin/python3 examples/torch/train_cnn.py --steps 30
else
  echo "quickstart: torch is not importable by /usr/bin/python3: recording the C++ dataflow example" >&2
  ./build/bin/strata record --force -o "$TRACE" -- ./build/bin/dataflow --steps 50 --threads 2
fi
./build/bin/strata report "$TRACE"
./build/bin/strata report "$TRACE" --html "$TRACE/report.html" >/dev/null
echo "quickstart: HTML report with charts in $TRACE/report.html" >&2
