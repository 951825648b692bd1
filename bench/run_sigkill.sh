#!/usr/bin/env bash
# What SIGKILL of a saturated program costs: 16 threads of tests/programs/emitter
# write counters flat out and the program kills itself after 1.5 s. Per thread:
# how far its last recorded event is from the kill (the last event recorded by
# any thread), and its events emitted (emitter --progress), recorded (in its
# stream file) and counted lost (strata.json); "unaccounted" is what is in
# neither. Needs babeltrace2 (to read the streams independently of strata).
#   bench/run_sigkill.sh [BUILD_DIR] [EMITTER]
# EMITTER defaults to BUILD_DIR's; pass this checkout's to measure an older
# strata (its libstrata is preloaded in place of the one the emitter links).
set -euo pipefail
BUILD_DIR="$(cd "${1:-build}" && pwd)"
EMITTER="${2:-$BUILD_DIR/tests/programs/emitter}"
WORK=$(mktemp -d /tmp/strata-sigkill-XXXXXX)
trap 'rm -rf "$WORK"' EXIT
"$BUILD_DIR/bin/strata" record -q -o "$WORK/trace" -- "$EMITTER" 16 4000000000 --kill-self-after-ms 1500 \
  --progress "$WORK/progress" >/dev/null 2>&1 || true
babeltrace2 --clock-cycles "$WORK/trace/ctf" 2>/dev/null | grep -E ' counter(8|16)?: ' |
  sed -E 's/^\[([0-9]+)\].* tid = ([0-9]+),.*/\1 \2/' >"$WORK/events" || true
python3 - "$WORK/progress" "$WORK/events" "$WORK/trace/strata.json" <<'PY'
import json, struct, sys, collections
prog = open(sys.argv[1], "rb").read()
emitted = {}
for i in range(len(prog) // 16):
    tid, n = struct.unpack_from("<QQ", prog, 16 * i)
    emitted[tid] = n
count, last = collections.Counter(), {}
for line in open(sys.argv[2]):
    ts, tid = map(int, line.split())
    count[tid] += 1
    last[tid] = max(last.get(tid, 0), ts)
m = json.load(open(sys.argv[3]))
lost = {}
for s in m.get("streams", []):
    f = s.get("file", "")
    tid = s.get("tid") if not f else (int(f.split("-")[3].split(".")[0]) if f.startswith("ctf/thread-") else None)
    if tid is not None:
        lost[tid] = lost.get(tid, 0) + s.get("lost_events", 0)
kill = max(last.values()) if last else 0
lags = sorted((kill - last[t]) / 1e6 for t in emitted if t in last) or [float("nan")]
none = sum(1 for t in emitted if t not in last)
e, r, l = sum(emitted.values()), sum(count[t] for t in emitted), sum(lost.get(t, 0) for t in emitted)
print(f"threads {len(emitted)} ({none} with no event in the trace); lag of a thread's last recorded event "
      f"behind the kill: median {lags[len(lags) // 2]:.0f} ms, max {lags[-1]:.0f} ms")
print(f"emitted {e:,}  recorded {r:,}  counted lost {l:,}  unaccounted {e - r - l:,} ({100.0 * (e - r - l) / e:.1f}%)")
print(f"manifest: lost_events {m.get('lost_events')}, loss {json.dumps(m.get('loss', 'n/a'))}")
PY
