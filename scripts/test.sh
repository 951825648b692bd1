#!/usr/bin/env bash
# Installs, builds and runs every test: the unit, golden and integration tests,
# then the same tests under AddressSanitizer + UndefinedBehaviorSanitizer, then
# each fuzz target briefly.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/install-deps.sh
# torch 2.x from PyPI in a venv, as most users have it: the workloads are
# recorded with it too (ctest workload_steps_torch2; the observer is built for it
# on first use). Kept outside the checkout and reused across runs, like pip's
# cache: the wheels and their CUDA libraries are about 3 GB.
TORCH2_VENV="${STRATA_TORCH2_VENV:-$HOME/.cache/strata/venv-torch2}"
if [ "${STRATA_SKIP_TORCH2:-0}" != "1" ] && ! "$TORCH2_VENV/bin/python" -c "import torch, torchvision, numpy" 2>/dev/null; then
  echo "== torch 2.x in $TORCH2_VENV (once)"
  { python3 -m venv "$TORCH2_VENV" &&
    "$TORCH2_VENV/bin/python" -m pip install --quiet --disable-pip-version-check "torch==2.5.1" "torchvision==0.20.1" numpy; } ||
    echo "strata: could not install torch 2.x into $TORCH2_VENV; its tests will be skipped" >&2
fi
export STRATA_TORCH2_PYTHON="$TORCH2_VENV/bin/python"
# TensorFlow and Keras 3 (CPU) in a venv of their own: they need a newer numpy
# than Debian's torch (ctest workload_steps_tensorflow; about 1.6 GB, reused).
TF_VENV="${STRATA_TF_VENV:-$HOME/.cache/strata/venv-tf}"
if [ "${STRATA_SKIP_TF:-0}" != "1" ] && ! "$TF_VENV/bin/python" -c "import tensorflow, keras" 2>/dev/null; then
  echo "== TensorFlow in $TF_VENV (once)"
  { python3 -m venv "$TF_VENV" &&
    "$TF_VENV/bin/python" -m pip install --quiet --disable-pip-version-check "tensorflow-cpu==2.21.0" "keras>=3.10"; } ||
    echo "strata: could not install TensorFlow into $TF_VENV; its tests will be skipped" >&2
fi
export STRATA_TF_PYTHON="$TF_VENV/bin/python"
# JAX (CPU) likewise (ctest workload_steps_jax; about 300 MB).
JAX_VENV="${STRATA_JAX_VENV:-$HOME/.cache/strata/venv-jax}"
if [ "${STRATA_SKIP_JAX:-0}" != "1" ] && ! "$JAX_VENV/bin/python" -c "import jax" 2>/dev/null; then
  echo "== JAX in $JAX_VENV (once)"
  { python3 -m venv "$JAX_VENV" && "$JAX_VENV/bin/python" -m pip install --quiet --disable-pip-version-check "jax==0.10.2"; } ||
    echo "strata: could not install JAX into $JAX_VENV; its tests will be skipped" >&2
fi
export STRATA_JAX_PYTHON="$JAX_VENV/bin/python"
# ONNX Runtime (CPU) and onnx likewise (ctest workload_steps_ort; about 150 MB).
ORT_VENV="${STRATA_ORT_VENV:-$HOME/.cache/strata/venv-ort}"
if [ "${STRATA_SKIP_ORT:-0}" != "1" ] && ! "$ORT_VENV/bin/python" -c "import onnxruntime, onnx" 2>/dev/null; then
  echo "== ONNX Runtime in $ORT_VENV (once)"
  { python3 -m venv "$ORT_VENV" &&
    "$ORT_VENV/bin/python" -m pip install --quiet --disable-pip-version-check "onnxruntime==1.32.0" onnx numpy; } ||
    echo "strata: could not install ONNX Runtime into $ORT_VENV; its tests will be skipped" >&2
fi
export STRATA_ORT_PYTHON="$ORT_VENV/bin/python"
# Playwright for Python (the browser tests of `strata view`, ctest ui_view_browser,
# drive Debian's Chromium with it; about 200 MB, reused).
UI_VENV="${STRATA_UI_VENV:-$HOME/.cache/strata/venv-ui}"
if [ "${STRATA_SKIP_UI:-0}" != "1" ] && ! "$UI_VENV/bin/python" -c "import playwright.sync_api" 2>/dev/null; then
  echo "== Playwright in $UI_VENV (once)"
  { python3 -m venv "$UI_VENV" && "$UI_VENV/bin/python" -m pip install --quiet --disable-pip-version-check "playwright==1.65.2"; } ||
    echo "strata: could not install Playwright into $UI_VENV; the browser tests will be skipped" >&2
fi
export STRATA_UI_PYTHON="$UI_VENV/bin/python"
start=$(date +%s)
# Each step's time, so that a slow CI run says which part grew.
step_start=$start
took() { local now; now=$(date +%s); echo "== $1: $(( now - step_start )) s"; step_start=$now; }

echo "== build and test (RelWithDebInfo)"
./scripts/build.sh
took "build"
(cd build && ctest --output-on-failure -j"$(nproc)" --timeout 600)
took "tests"

if [ "${STRATA_SKIP_SANITIZERS:-0}" != "1" ]; then
  echo "== build and test (ASan + UBSan)"
  # The PyTorch observer only runs preloaded into Python, which ASan cannot do
  # (its tests are labelled no_sanitizer): not built here, to save CI time.
  BUILD_DIR=build-asan BUILD_TYPE=Debug ./scripts/build.sh -DSTRATA_SANITIZE=ON -DSTRATA_BUILD_BENCH=OFF -DSTRATA_WITH_TORCH=OFF
  took "ASan build"
  # Programs traced by the tests load the instrumented libstrata through LD_PRELOAD,
  # which puts it before the ASan runtime in the link order: allowed explicitly.
  (cd build-asan && ASAN_OPTIONS=verify_asan_link_order=0:detect_leaks=0 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
     ctest --output-on-failure -j"$(nproc)" --timeout 900 -LE no_sanitizer)
  took "ASan tests"
fi

if [ "${STRATA_SKIP_FUZZ:-0}" != "1" ]; then
  # Every target replays its committed corpus, then fuzzes for STRATA_FUZZ_SECONDS
  # (default 30), one target per core: about 5 minutes on 2 cores for 16 targets.
  # Any crash or sanitizer report fails the run (reproducers in fuzz-crashes/).
  echo "== fuzz targets (libFuzzer + ASan + UBSan, ${STRATA_FUZZ_SECONDS:-30} s each)"
  BUILD_DIR=build-fuzz BUILD_TARGET=fuzzers CC=clang CXX=clang++ ./scripts/build.sh -DSTRATA_FUZZ_ENGINE=libfuzzer \
    -DSTRATA_BUILD_TESTS=OFF -DSTRATA_BUILD_BENCH=OFF -DSTRATA_WITH_TORCH=OFF
  took "fuzz build"
  ./scripts/run-fuzzers.sh build-fuzz "${STRATA_FUZZ_SECONDS:-30}" --jobs "$(nproc)"
  took "fuzzing"
fi
echo "== all tests passed in $(( $(date +%s) - start )) s"
