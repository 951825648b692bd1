#!/usr/bin/env bash
# Runs every libFuzzer target of a fuzz build (docs/fuzzing.md):
#
#   scripts/run-fuzzers.sh [BUILD_DIR] [SECONDS] [--jobs N] [--only a,b] [--keep DIR] [--merge]
#
# For each target, first the committed corpus fuzz/corpus/<name>/ is replayed
# once, input by input (a regression check), then the target fuzzes for SECONDS
# (default 20) from that corpus, with the dictionary fuzz/dict/<name>.dict when
# there is one. Inputs found along the way go to a scratch
# corpus (kept in DIR/<name>/ with --keep, and merged into fuzz/corpus/<name>/
# with --merge: only those that add coverage). --jobs N runs N targets at once;
# --only runs the targets named (without the fuzz_ prefix or with it).
#
# Any crash, timeout (an input running 25 s), out-of-memory (2 GiB), leak or
# sanitizer report (ASan, UBSan: both halt on the first error) fails the run:
# every target still runs, the reproducers are left in fuzz-crashes/ and the
# script exits 1 after a summary line per target (time, executions, exec/s,
# coverage, corpus).
set -uo pipefail
cd "$(dirname "$0")/.."

BUILD_DIR=build-fuzz
SECONDS_EACH=20
JOBS=1
ONLY=""
KEEP=""
MERGE=0
positional=()
while [ $# -gt 0 ]; do
  case "$1" in
    --jobs) JOBS="$2"; shift 2 ;;
    --only) ONLY="$2"; shift 2 ;;
    --keep) KEEP="$2"; shift 2 ;;
    --merge) MERGE=1; shift ;;
    -h|--help) sed -n '2,20p' "$0"; exit 0 ;;
    -*) echo "run-fuzzers: unknown option $1" >&2; exit 2 ;;
    *) positional+=("$1"); shift ;;
  esac
done
[ ${#positional[@]} -ge 1 ] && BUILD_DIR="${positional[0]}"
[ ${#positional[@]} -ge 2 ] && SECONDS_EACH="${positional[1]}"

targets=()
for bin in "$BUILD_DIR"/bin/fuzz_*; do
  [ -x "$bin" ] || continue
  name=$(basename "$bin")
  if [ -n "$ONLY" ] && [[ ",$ONLY," != *",${name#fuzz_},"* ]] && [[ ",$ONLY," != *",$name,"* ]]; then continue; fi
  targets+=("$name")
done
if [ ${#targets[@]} -eq 0 ]; then
  echo "run-fuzzers: no fuzz targets in $BUILD_DIR/bin (build them: see docs/fuzzing.md)" >&2
  exit 2
fi
# A binary that does not link libFuzzer (a replay build) cannot fuzz.
help=$("$BUILD_DIR/bin/${targets[0]}" -help=1 2>&1 || true)
if [[ "$help" != *max_total_time* ]]; then
  echo "run-fuzzers: $BUILD_DIR was not built with -DSTRATA_FUZZ_ENGINE=libfuzzer" >&2
  exit 2
fi

mkdir -p fuzz-crashes
scratch=$(mktemp -d /tmp/strata-fuzz-run.XXXXXX)
trap 'rm -rf "$scratch"' EXIT
# Seeds for the targets that parse Kineto files, cut from the shared traces
# ($STRATA_EXTERNAL_DATA, else ../shared/data/external beside the checkout) at
# each run: those files are not ours to copy into the repository (see their
# MANIFEST.md), so the committed corpora hold only our own inputs.
EXTERNAL="${STRATA_EXTERNAL_DATA:-../shared/data/external}"
KINETO_SEEDS="$scratch/kineto-seeds"
if [ -d "$EXTERNAL" ] && command -v python3 >/dev/null; then
  mkdir -p "$KINETO_SEEDS"
  while IFS= read -r -d '' f; do
    out="$KINETO_SEEDS/$(basename "$f")"
    gz=(); [[ "$f" == *.gz ]] && gz=(--gzip)
    python3 fuzz/cut_kineto.py "$f" "$out" 20 "${gz[@]}" >/dev/null 2>&1 || rm -f "$out"
  done < <(find "$EXTERNAL" \( -name '*.json' -o -name '*.json.gz' \) -print0)
fi

# Sanitizers: stop at the first report (UBSan is also built non-recoverable),
# with a stack trace; libFuzzer then saves the input as fuzz-crashes/<target>-crash-*.
export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}halt_on_error=1:detect_leaks=1"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:+$UBSAN_OPTIONS:}halt_on_error=1:print_stacktrace=1:report_error_type=1"
FLAGS=(-timeout=25 -rss_limit_mb=2048 -print_final_stats=1)

# One target: replay, fuzz, summarize. Writes $scratch/<name>.summary (one
# line) and .failed on failure; the full log is $scratch/<name>.log.
run_target() {
  local name=$1 corpus_name=${1#fuzz_}
  local bin="$BUILD_DIR/bin/$name" log="$scratch/$name.log"
  local committed="fuzz/corpus/$corpus_name" work
  mkdir -p "$committed"
  if [ -n "$KEEP" ]; then work="$KEEP/$corpus_name"; else work="$scratch/$corpus_name"; fi
  mkdir -p "$work"
  local result=ok dict=() seeds=()
  [ -f "fuzz/dict/$corpus_name.dict" ] && dict=(-dict="fuzz/dict/$corpus_name.dict")
  case "$corpus_name" in
    kineto_json|roofline) [ -n "$(ls -A "$KINETO_SEEDS" 2>/dev/null)" ] && seeds=("$KINETO_SEEDS") ;;
  esac
  # 1. The committed corpus, each input once (-runs=0: no mutation).
  if ! "$bin" "${FLAGS[@]}" -runs=0 -artifact_prefix="fuzz-crashes/$name-" "$committed" "${seeds[@]}" >"$log.replay" 2>&1; then
    result="FAILED on the committed corpus"
  fi
  # 2. Fuzzing: new inputs go to $work, the first corpus directory.
  if [ "$result" = ok ]; then
    if ! "$bin" "${FLAGS[@]}" "${dict[@]}" -max_total_time="$SECONDS_EACH" -artifact_prefix="fuzz-crashes/$name-" \
        "$work" "$committed" "${seeds[@]}" >"$log" 2>&1; then
      result=FAILED
    fi
  else
    cp "$log.replay" "$log"
  fi
  local execs rate cov ft corp
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -1)
  cov=$(grep -o 'cov: [0-9]*' "$log" | tail -1 | cut -d' ' -f2)
  ft=$(grep -o 'ft: [0-9]*' "$log" | tail -1 | cut -d' ' -f2)
  corp=$(grep -o 'corp: [0-9]*/[0-9]*[a-zA-Z]*' "$log" | tail -1 | cut -d' ' -f2)
  printf '%-22s %5ss %10s execs %7s/s  cov %5s  ft %6s  corpus %-10s %s\n' "$name" "$SECONDS_EACH" "${execs:-?}" \
    "${rate:-?}" "${cov:-?}" "${ft:-?}" "${corp:-?}" "$result" >"$scratch/$name.summary"
  if [ "$result" != ok ]; then
    touch "$scratch/$name.failed"
    return 1
  fi
  if [ "$MERGE" = 1 ]; then
    "$bin" -merge=1 -timeout=25 -rss_limit_mb=2048 "$committed" "$work" >"$log.merge" 2>&1 ||
      echo "run-fuzzers: $name: merge failed (see $log.merge)" >&2
  fi
  return 0
}

echo "fuzz: ${#targets[@]} targets, ${SECONDS_EACH} s each, $JOBS at a time (corpora: fuzz/corpus/)"
running=0
for name in "${targets[@]}"; do
  run_target "$name" &
  running=$((running + 1))
  if [ "$running" -ge "$JOBS" ]; then
    wait -n
    running=$((running - 1))
  fi
done
wait

failed=0
for name in "${targets[@]}"; do
  cat "$scratch/$name.summary"
  if [ -e "$scratch/$name.failed" ]; then
    failed=$((failed + 1))
    echo "---- $name: last lines of its log:"
    grep -v '^#[0-9]' "$scratch/$name.log" | tail -n 40
    ls -1 fuzz-crashes/"$name"-* 2>/dev/null | sed 's/^/reproducer: /'
    echo "----"
  fi
done
if [ "$failed" -gt 0 ]; then
  echo "fuzz: $failed of ${#targets[@]} targets FAILED; reproducers in fuzz-crashes/ (replay one: $BUILD_DIR/bin/TARGET FILE)"
  exit 1
fi
echo "fuzz: all ${#targets[@]} targets ran clean"
