#!/usr/bin/env bash
# Installs, builds and runs every test: the unit, golden and integration tests,
# then the same tests under AddressSanitizer + UndefinedBehaviorSanitizer, then
# each fuzz target briefly.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/install-deps.sh
start=$(date +%s)

echo "== build and test (RelWithDebInfo)"
./scripts/build.sh
(cd build && ctest --output-on-failure -j"$(nproc)" --timeout 600)

if [ "${STRATA_SKIP_SANITIZERS:-0}" != "1" ]; then
  echo "== build and test (ASan + UBSan)"
  # The PyTorch observer only runs preloaded into Python, which ASan cannot do
  # (its tests are labelled no_sanitizer): not built here, to save CI time.
  BUILD_DIR=build-asan BUILD_TYPE=Debug ./scripts/build.sh -DSTRATA_SANITIZE=ON -DSTRATA_BUILD_BENCH=OFF -DSTRATA_WITH_TORCH=OFF
  # Programs traced by the tests load the instrumented libstrata through LD_PRELOAD,
  # which puts it before the ASan runtime in the link order: allowed explicitly.
  (cd build-asan && ASAN_OPTIONS=verify_asan_link_order=0:detect_leaks=0 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
     ctest --output-on-failure -j"$(nproc)" --timeout 900 -LE no_sanitizer)
fi

if [ "${STRATA_SKIP_FUZZ:-0}" != "1" ]; then
  # Every target replays its committed corpus, then fuzzes for STRATA_FUZZ_SECONDS
  # (default 30), one target per core: about 5 minutes on 2 cores for 16 targets.
  # Any crash or sanitizer report fails the run (reproducers in fuzz-crashes/).
  echo "== fuzz targets (libFuzzer + ASan + UBSan, ${STRATA_FUZZ_SECONDS:-30} s each)"
  BUILD_DIR=build-fuzz BUILD_TARGET=fuzzers CC=clang CXX=clang++ ./scripts/build.sh -DSTRATA_FUZZ_ENGINE=libfuzzer \
    -DSTRATA_BUILD_TESTS=OFF -DSTRATA_BUILD_BENCH=OFF -DSTRATA_WITH_TORCH=OFF
  ./scripts/run-fuzzers.sh build-fuzz "${STRATA_FUZZ_SECONDS:-30}" --jobs "$(nproc)"
fi
echo "== all tests passed in $(( $(date +%s) - start )) s"
