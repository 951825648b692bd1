#!/usr/bin/env bash
# Runs every libFuzzer target in BUILD_DIR for SECONDS each, starting from the
# committed seed corpus. Fails on the first crash (the reproducer is left in ./fuzz-crashes).
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR="${1:-build-fuzz}"
SECONDS_EACH="${2:-20}"
mkdir -p fuzz-crashes
for bin in "$BUILD_DIR"/bin/fuzz_*; do
  name=$(basename "$bin")
  corpus_name=${name#fuzz_}
  work=$(mktemp -d)
  if [ -d "fuzz/corpus/$corpus_name" ]; then cp -r "fuzz/corpus/$corpus_name/." "$work/"; fi
  echo "fuzz: $name for ${SECONDS_EACH}s"
  "$bin" -max_total_time="$SECONDS_EACH" -rss_limit_mb=2048 -artifact_prefix=fuzz-crashes/"$name"- "$work" \
    2>&1 | tail -n 3
  rm -rf "$work"
done
