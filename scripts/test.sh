#!/usr/bin/env bash
# Installs, builds and runs every test: the unit, golden and integration tests,
# then the same tests under AddressSanitizer + UndefinedBehaviorSanitizer, then
# each fuzz target briefly.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/install-deps.sh
# Frameworks in venvs of their own, kept outside the checkout and reused across
# runs like pip's cache. venv NAME LABEL IMPORTS PACKAGE...: the venv at
# $STRATA_<NAME>_VENV (default ~/.cache/strata/venv-<name>), made and filled once
# unless its Python can already run IMPORTS, skipped with STRATA_SKIP_<NAME>=1;
# its Python is exported as STRATA_<NAME>_PYTHON (the tests that need it skip
# where that names no Python with them).
venv() {
  local name=$1 label=$2 imports=$3; shift 3
  local dir_var="STRATA_${name}_VENV" skip_var="STRATA_SKIP_${name}"
  local dir="${!dir_var:-$HOME/.cache/strata/venv-${name,,}}"
  if [ "${!skip_var:-0}" != "1" ] && ! "$dir/bin/python" -c "$imports" 2>/dev/null; then
    echo "== $label in $dir (once)"
    { python3 -m venv "$dir" && "$dir/bin/python" -m pip install --quiet --disable-pip-version-check "$@"; } ||
      echo "strata: could not install $label into $dir; its tests will be skipped" >&2
  fi
  export "STRATA_${name}_PYTHON=$dir/bin/python"
}
# torch 2.x from PyPI, as most users have it: the workloads are recorded with it
# too (ctest workload_steps_torch2; the observer is built for it on first use);
# the wheels and their CUDA libraries are about 3 GB.
venv TORCH2 "torch 2.x" "import torch, torchvision, numpy" "torch==2.5.1" "torchvision==0.20.1" numpy
# TensorFlow and Keras 3 (CPU): they need a newer numpy than Debian's torch
# (ctest workload_steps_tensorflow; about 1.6 GB).
venv TF "TensorFlow" "import tensorflow, keras" "tensorflow-cpu==2.21.0" "keras>=3.10"
# JAX (CPU) likewise (ctest workload_steps_jax; about 300 MB).
venv JAX "JAX" "import jax" "jax==0.10.2"
# ONNX Runtime (CPU) and onnx likewise (ctest workload_steps_ort; about 150 MB).
venv ORT "ONNX Runtime" "import onnxruntime, onnx" "onnxruntime==1.32.0" onnx numpy
# Dask's distributed scheduler and workers: `strata report --cluster` is tested
# on a real local cluster started by the test (ctest job_test; about 60 MB).
venv DASK "Dask distributed" "import distributed" "distributed==2026.8.0"
# Playwright for Python: the browser tests of `strata view` (ctest ui_view_browser)
# drive Debian's Chromium with it (about 200 MB).
venv UI "Playwright" "import playwright.sync_api" "playwright==1.65.2"
# Disk: the three builds take about 3.5 GB (RelWithDebInfo, debug sections
# compressed), 16 GB (ASan + UBSan at -O0: each of the ~60 test binaries links the
# instrumented libraries) and 2 GB (fuzz). Where the disk cannot hold all three,
# each build folder is removed once its tests have passed (STRATA_KEEP_BUILDS=1
# keeps them and asks for the whole sum); a disk that cannot hold even the
# largest says so now rather than when a link fails half-way.
stages_gb=(4)
if [ "${STRATA_SKIP_SANITIZERS:-0}" != "1" ]; then stages_gb+=(16); fi
if [ "${STRATA_SKIP_FUZZ:-0}" != "1" ]; then stages_gb+=(2); fi
need_gb=0; largest_gb=0
for g in "${stages_gb[@]}"; do
  need_gb=$(( need_gb + g ))
  if [ "$g" -gt "$largest_gb" ]; then largest_gb=$g; fi
done
have_kb=$(df -Pk . | awk 'NR==2 {print $4}')
used_kb=0
for d in build build-asan build-fuzz; do
  if [ -d "$d" ]; then used_kb=$(( used_kb + $(du -sk "$d" | cut -f1) )); fi
done
avail_gb=$(( (have_kb + used_kb) / 1048576 ))
tight=0
if [ "$avail_gb" -lt "$need_gb" ]; then
  if [ "${STRATA_KEEP_BUILDS:-0}" = "1" ] || [ "$avail_gb" -lt "$largest_gb" ]; then
    echo "strata: the tests' builds need about ${need_gb} GB of disk (${largest_gb} GB if each is removed after its tests);" \
         "$(( have_kb / 1048576 )) GB free beside $PWD (and $(( used_kb / 1048576 )) GB in its build folders):" \
         "free some, or set STRATA_SKIP_SANITIZERS=1 (16 GB less)" >&2
    exit 4
  fi
  tight=1
  echo "== ${avail_gb} GB of disk for builds that take about ${need_gb} GB: each build folder is removed once its tests pass"
  # Their space was counted as free: the later stages' folders go now (they
  # are rebuilt in their turn, from the compiler cache where there is one).
  rm -rf build-asan build-fuzz
fi
# done_with DIR: a stage's build folder is no longer needed (removed on a tight disk).
done_with() { if [ "$tight" = "1" ]; then rm -rf "$1"; echo "== removed $1 (tight disk)"; fi; }
start=$(date +%s)
# Each step's time, so that a slow CI run says which part grew.
step_start=$start
took() { local now; now=$(date +%s); echo "== $1: $(( now - step_start )) s"; step_start=$now; }

echo "== build and test (RelWithDebInfo)"
./scripts/build.sh
took "build"
(cd build && ctest --output-on-failure -j"$(nproc)" --timeout 600)
took "tests"
done_with build

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
  done_with build-asan
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
