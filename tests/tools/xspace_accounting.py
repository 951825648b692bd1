#!/usr/bin/env python3
"""Every plane, line and event of the shared XSpace files accounted for: decodes
each file with Python's protobuf package (an independent parser, from the same
field numbers: protoc compiles src/importers/xplane/xplane.proto) and compares
its counts with what `strata report --json` says it imported:

  - events read = every event of every line of every plane;
  - device activities (kernels, copies, memsets) = the events of "Stream #" lines;
  - allocator events = the host's zero-length MemoryAllocation/Deallocation events;
  - each host line is a thread with all its events;
  - derived device lines (TensorFlow Ops, XLA Ops, name scopes) are counted as not
    imported, the Steps lines' events as steps;
  - slices + instants + allocator events + derived + Steps events = events read.

Usage: xspace_accounting.py --strata build/bin/strata [--data DIR]
Exit 0 when every count matches, 1 otherwise, 77 when the data, protoc or
Python's protobuf is missing."""
import argparse
import json
import os
import re
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE = os.path.normpath(os.path.join(HERE, "..", ".."))
FILES = [
    "tensorflow-profiler/demo/plugins/profile/GPU-multi-worker/34.83.195.179_6003.xplane.pb",
    "tracelens/traces/mi300/jax_conv_minimal_08/tw003.xplane.pb",
]


def decode_counts(pb2, path):
    space = pb2.XSpace()
    with open(path, "rb") as f:
        space.ParseFromString(f.read())
    c = {"events": 0, "device": 0, "memory": 0, "derived": 0, "steps_events": 0, "host_lines": {}}
    for p in space.planes:
        sm = {k: v.name for k, v in p.stat_metadata.items()}
        has_streams = any(l.name.startswith("Stream #") for l in p.lines)
        for l in p.lines:
            c["events"] += len(l.events)
            if p.name.startswith("/device:"):
                if l.name.startswith("Stream #"):
                    c["device"] += len(l.events)
                elif l.name == "Steps":
                    c["steps_events"] += len(l.events)
                elif has_streams:
                    c["derived"] += len(l.events)
            elif p.name.startswith("/host:"):
                name = l.display_name or l.name
                c["host_lines"][(name, l.id)] = len(l.events)
                for e in l.events:
                    md = p.event_metadata.get(e.metadata_id)
                    if md and md.name in ("MemoryAllocation", "MemoryDeallocation") and e.duration_ps == 0:
                        c["memory"] += 1
    return c


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--strata", required=True)
    ap.add_argument("--data", default=os.environ.get("STRATA_EXTERNAL_DATA",
                                                     os.path.join(SOURCE, "..", "shared", "data", "external")))
    a = ap.parse_args()
    if not os.path.isdir(a.data):
        print(f"xspace_accounting: {a.data} is absent: skipped")
        return 77
    tmp = tempfile.mkdtemp()
    proto_dir = os.path.join(SOURCE, "src", "importers", "xplane")
    try:
        subprocess.run(["protoc", "-I", proto_dir, "--python_out", tmp, os.path.join(proto_dir, "xplane.proto")],
                       check=True, capture_output=True)
        sys.path.insert(0, tmp)
        import xplane_pb2 as pb2
    except (OSError, subprocess.CalledProcessError, ImportError) as e:
        print(f"xspace_accounting: protoc or Python's protobuf is missing ({e}): skipped")
        return 77
    failures = []
    for rel in FILES:
        path = os.path.join(a.data, rel)
        if not os.path.exists(path):
            print(f"{rel}: absent, skipped")
            continue
        want = decode_counts(pb2, path)
        r = subprocess.run([a.strata, "report", "--json", "--full", path], capture_output=True, text=True)
        if r.returncode != 0:
            failures.append(f"{rel}: report exited {r.returncode}: {r.stderr.strip()[-200:]}")
            continue
        rep = json.loads(r.stdout)
        counts, trace = rep["counts"], rep["trace"]
        derived = sum(int(m.group(1)) for w in rep.get("warnings", [])
                      for m in [re.match(r"(\d+) events of derived device lines", w)] if m)
        got = {"events": trace["events"], "memory": counts["memory"], "derived": derived}
        bad = [f"{k}: strata {got[k]} vs protobuf {want[k]}" for k in got if got[k] != want[k]]
        # Threads: each host line a stream with all its events.
        streams = {(s["name"], s["tid"]): s["events"] for s in trace["streams"] if s["kind"] == "thread"}
        for key, n in want["host_lines"].items():
            if streams.get(key) != n:
                bad.append(f"host line {key}: strata {streams.get(key)} events vs protobuf {n}")
        # Device activities: the device streams' events.
        dev = sum(s["events"] for s in trace["streams"] if s["kind"] != "thread")
        if dev != want["device"]:
            bad.append(f"device activities: strata {dev} vs protobuf {want['device']}")
        # Everything read is somewhere.
        slices = counts["slices"] - counts["steps"]
        total = slices + counts["instants"] + counts["memory"] + derived + want["steps_events"]
        if total != want["events"]:
            bad.append(f"slices {slices} + instants {counts['instants']} + memory {counts['memory']} + derived "
                       f"{derived} + Steps-line events {want['steps_events']} = {total}, not {want['events']}")
        print(f"{rel}: {want['events']} events, {len(want['host_lines'])} host lines, {want['device']} device "
              f"activities, {want['memory']} allocator events, {want['derived']} derived"
              + ("" if not bad else "  FAIL: " + "; ".join(bad)), flush=True)
        failures += [f"{rel}: {b}" for b in bad]
    for f in failures:
        print("FAIL " + f)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
