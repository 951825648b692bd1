#!/usr/bin/env python3
"""Writes a large XSpace for the XPlane import benchmark (BENCHMARKS.md): the
shared TF multi-worker GPU space with every line's events repeated N times, each
copy shifted past the previous one (so kernels, launches, allocations and ops
keep their mix and their links: correlation ids are offset per copy).

  python3 bench/make_big_xspace.py [N] [OUT]   (default 40 copies, /tmp/strata-bench-big.xplane.pb)
Needs protoc and Python's protobuf."""
import os
import subprocess
import sys
import tempfile

here = os.path.dirname(os.path.abspath(__file__))
src = os.path.join(here, "..", "..", "shared", "data", "external", "tensorflow-profiler", "demo", "plugins",
                   "profile", "GPU-multi-worker", "34.83.195.179_6003.xplane.pb")
n = int(sys.argv[1]) if len(sys.argv) > 1 else 40
out = sys.argv[2] if len(sys.argv) > 2 else "/tmp/strata-bench-big.xplane.pb"
tmp = tempfile.mkdtemp()
proto = os.path.join(here, "..", "src", "importers", "xplane")
subprocess.check_call(["protoc", "-I", proto, "--python_out", tmp, os.path.join(proto, "xplane.proto")])
sys.path.insert(0, tmp)
import xplane_pb2 as x  # noqa: E402

space = x.XSpace()
space.ParseFromString(open(src, "rb").read())
for p in space.planes:
    corr = next((k for k, v in p.stat_metadata.items() if v.name == "correlation_id"), None)
    for line in p.lines:
        events = list(line.events)
        if not events:
            continue
        span = max(e.offset_ps + e.duration_ps for e in events) - min(e.offset_ps for e in events) + 1_000_000
        for k in range(1, n):
            for e in events:
                c = line.events.add()
                c.CopyFrom(e)
                c.offset_ps = e.offset_ps + k * span
                if corr is not None:
                    for st in c.stats:
                        if st.metadata_id == corr:
                            kind = st.WhichOneof("value")
                            if kind in ("uint64_value", "int64_value"):
                                setattr(st, kind, getattr(st, kind) + k * 10_000_000)
with open(out, "wb") as f:
    f.write(space.SerializeToString())
print(out, os.path.getsize(out), "bytes")
