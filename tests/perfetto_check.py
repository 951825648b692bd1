#!/usr/bin/env python3
"""Reads a strata Perfetto export with Perfetto's own trace schema (the
`perfetto` PyPI package ships perfetto_trace_pb2) and prints what it holds as
JSON: packets by kind, slice begins/ends, flows, tracks, sched_switch events
that put a thread on a CPU, perf samples and whether their callstacks resolve,
trace attributes. Exits 3 when the
package is not installed (the caller skips), 1 when the file does not parse.
"""
import collections
import json
import sys

try:
    from perfetto.protos.perfetto.trace import perfetto_trace_pb2 as pb
except Exception as e:  # not installed, or a protobuf runtime too old for it
    print(f"perfetto package unavailable: {e}", file=sys.stderr)
    sys.exit(3)


def main():
    trace = pb.Trace()
    with open(sys.argv[1], "rb") as f:
        trace.ParseFromString(f.read())
    counts = collections.Counter()
    flows_out = flows_in = 0
    open_slices = collections.defaultdict(int)
    bad_nesting = 0
    last_ts = 0
    out_of_order = 0
    callstacks, unresolved = set(), 0
    attributes = {}
    for p in trace.packet:
        callstacks.update(c.iid for c in p.interned_data.callstacks)
        if p.HasField("track_descriptor"):
            counts["track_descriptor"] += 1
            continue
        if p.HasField("ftrace_events"):
            for ev in p.ftrace_events.event:
                if ev.HasField("sched_switch"):
                    counts["switched_in"] += ev.sched_switch.next_pid != 0
                elif ev.HasField("sched_waking"):
                    counts["sched_waking"] += 1
            continue
        if p.HasField("perf_sample"):
            counts["perf_sample"] += 1
            if p.perf_sample.HasField("callstack_iid"):
                unresolved += p.perf_sample.callstack_iid not in callstacks
            continue
        if p.HasField("trace_attributes"):
            attributes.update((a.key, a.string_value or a.long_value) for a in p.trace_attributes.attribute)
            continue
        if not p.HasField("track_event"):
            counts["other"] += 1
            continue
        e = p.track_event
        counts[pb.TrackEvent.Type.Name(e.type)] += 1
        if p.timestamp < last_ts:
            out_of_order += 1
        last_ts = p.timestamp
        flows_out += len(e.flow_ids)
        flows_in += len(e.terminating_flow_ids)
        if e.type == pb.TrackEvent.TYPE_SLICE_BEGIN:
            open_slices[e.track_uuid] += 1
        elif e.type == pb.TrackEvent.TYPE_SLICE_END:
            open_slices[e.track_uuid] -= 1
            if open_slices[e.track_uuid] < 0:
                bad_nesting += 1
    json.dump({"counts": counts, "flows_out": flows_out, "flows_in": flows_in, "unclosed": sum(open_slices.values()),
               "bad_nesting": bad_nesting, "out_of_order": out_of_order, "unresolved_callstacks": unresolved,
               "attributes": attributes}, sys.stdout)


if __name__ == "__main__":
    main()
