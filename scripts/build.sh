#!/usr/bin/env bash
# Configures and builds strata into ./build (or $BUILD_DIR; only $BUILD_TARGET if set).
# Extra arguments go to cmake.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR="${BUILD_DIR:-build}"
GEN=()
if command -v ninja >/dev/null; then GEN=(-G Ninja); fi
# A compiler cache keyed on paths relative to the checkout: rebuilds of the same
# sources (the three CI builds of a clone, a new clone) reuse objects.
LAUNCH=()
if command -v ccache >/dev/null && [ "${STRATA_NO_CCACHE:-0}" != "1" ]; then
  export CCACHE_BASEDIR="$PWD" CCACHE_NOHASHDIR=1
  LAUNCH=(-DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
fi
if [ ! -f "$BUILD_DIR/CMakeCache.txt" ]; then
  cmake -S . -B "$BUILD_DIR" "${GEN[@]}" -DCMAKE_BUILD_TYPE="${BUILD_TYPE:-RelWithDebInfo}" "${LAUNCH[@]}" "$@"
else
  cmake -S . -B "$BUILD_DIR" "$@" >/dev/null
fi
cmake --build "$BUILD_DIR" -j"$(nproc)" ${BUILD_TARGET:+--target "$BUILD_TARGET"}
