#!/usr/bin/env python3
"""Writes a large, realistic PyTorch-profiler (Kineto) trace for import benchmarks.

It replicates the events of a real trace (by default the shared ns-resolution
V100 trace: CPU ops, runtime calls, kernels, copies, flows, steps) end to end
in time: every copy is shifted by the source's span plus a gap, and its ids
(correlation, External id, flow ids, step numbers) by a stride, so the result
reads like one long profiling session rather than one window repeated.

    bench/make_big_kineto.py --size-mb 1024 -o /tmp/strata-big.json [--source FILE] [--gzip]

The output goes wherever -o says (keep it out of the repository).
"""
import argparse
from decimal import Decimal
import gzip
import json
import os
import sys

DEFAULT_SOURCE = "hta/ns_resolution_trace/rank-0.Apr_03_18_51_38.1102.pt.trace.json.gz"


def ns(v):
    # Exact: the decimal text as written, not float(v) * 1000 (which loses ns at 1e15 us).
    return int((Decimal(repr(v)) * 1000).to_integral_value())


def fmt_us(n):
    sign = "-" if n < 0 else ""
    n = abs(n)
    return f"{sign}{n // 1000}.{n % 1000:03d}"


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    data = os.environ.get("STRATA_EXTERNAL_DATA") or os.path.join(here, "..", "..", "shared", "data", "external")
    ap.add_argument("--source", default=os.path.join(data, DEFAULT_SOURCE))
    ap.add_argument("--size-mb", type=float, default=1024)
    ap.add_argument("-o", "--output", required=True)
    ap.add_argument("--gzip", action="store_true", help="write .json.gz (level 1)")
    a = ap.parse_args()

    opener = gzip.open if a.source.endswith(".gz") else open
    with opener(a.source, "rb") as f:
        doc = json.load(f)
    events = doc["traceEvents"]
    meta = [e for e in events if e.get("ph") == "M"]
    body = [e for e in events if e.get("ph") != "M"]
    ts_all = [ns(e["ts"]) for e in body if "ts" in e and isinstance(e.get("pid"), int)]
    t0, t1 = min(ts_all), max(ns(e["ts"]) + ns(e.get("dur", 0)) for e in body if "ts" in e and isinstance(e.get("pid"), int))
    period = (t1 - t0) + 1_000_000  # 1 ms between copies

    # Pre-render each event as a template with holes for what changes per copy.
    id_keys = ("correlation", "External id", "external id")
    templates = []
    for e in body:
        if not isinstance(e.get("pid"), int):
            continue  # the profiler's own session spans ("Spans", "Traces") once only
        e = dict(e)
        args = dict(e.get("args", {}))
        holes = {}
        if "ts" in e:
            holes["ts"] = ns(e["ts"])
            e["ts"] = "@TS@"
        if "dur" in e:
            e["dur"] = "@DUR@"
            holes["dur"] = ns(e["dur"]) if not isinstance(e["dur"], str) else 0
        for k in id_keys:
            if isinstance(args.get(k), int):
                holes.setdefault("ids", []).append(k)
        if "id" in e and isinstance(e["id"], int):
            holes["flow"] = e["id"]
            e["id"] = "@FLOW@"
        name = e.get("name", "")
        if isinstance(name, str) and name.startswith("ProfilerStep#"):
            holes["step"] = int(name.split("#")[1])
            e["name"] = "@STEP@"
        e["args"] = args if args else e.get("args")
        if e["args"] is None:
            del e["args"]
        templates.append((e, holes))
    # dur needs its original value: take it before the hole replaced it
    for (e, holes), src in zip(templates, [x for x in body if isinstance(x.get("pid"), int)]):
        if "dur" in holes:
            holes["dur"] = ns(src["dur"])

    header = {k: v for k, v in doc.items() if k != "traceEvents"}
    target = int(a.size_mb * (1 << 20))
    out = gzip.open(a.output, "wt", compresslevel=1) if a.gzip else open(a.output, "w")
    written = 0
    with out:
        head = json.dumps(header)[:-1] + ', "traceEvents": [\n'
        out.write(head)
        written += len(head)
        first = True
        for m in meta:
            s = ("" if first else ",\n") + json.dumps(m)
            first = False
            out.write(s)
            written += len(s)
        rep = 0
        id_stride = 10_000_000
        while written < target:
            shift = rep * period
            chunk = []
            for e, holes in templates:
                args = e.get("args")
                if "ids" in holes:
                    args = dict(args)
                    for k in holes["ids"]:
                        args[k] = args[k] + rep * id_stride
                ev = dict(e)
                if args is not None:
                    ev["args"] = args
                s = json.dumps(ev)
                if "ts" in holes:
                    s = s.replace('"@TS@"', fmt_us(holes["ts"] + shift))
                if "dur" in holes:
                    s = s.replace('"@DUR@"', fmt_us(holes["dur"]))
                if "flow" in holes:
                    s = s.replace('"@FLOW@"', str(holes["flow"] + rep * id_stride))
                if "step" in holes:
                    s = s.replace('"@STEP@"', json.dumps(f"ProfilerStep#{holes['step'] + rep * 1000}"))
                chunk.append(s)
            s = ",\n" + ",\n".join(chunk)
            out.write(s)
            written += len(s)
            rep += 1
        out.write("\n]}\n")
    print(f"{a.output}: {rep} copies of {len(templates)} events, {written / (1 << 20):.0f} MiB uncompressed", file=sys.stderr)


if __name__ == "__main__":
    main()
