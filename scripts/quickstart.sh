#!/usr/bin/env bash
# The main job: install, build, record the bundled example workload, print its report.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/install-deps.sh
./scripts/build.sh
TRACE="${TRACE:-build/example-trace}"
./build/bin/strata record --force -o "$TRACE" -- ./build/bin/dataflow --steps 50 --threads 2
./build/bin/strata report "$TRACE"
