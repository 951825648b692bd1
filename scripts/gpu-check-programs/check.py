"""Compares a GPU program's own figures (its `key=value` output) with what
`strata report --json` found in its trace. Used by scripts/gpu-check.

  check.py vector  PROGRAM_OUTPUT REPORT_JSON        (tests/programs/cuda_vector_add)
  check.py metrics PROGRAM_OUTPUT REPORT_JSON KERNELS  (the vector add with --gpu-metrics kernels=K)
  check.py torch   PROGRAM_OUTPUT REPORT_JSON STEPS  (torch_train_gpu.py)
Prints "ok: ..." or one "FAIL: ..." line per mismatch; exits 1 on any.
"""
import json
import re
import sys


def facts(path):
    return dict(re.findall(r"(\w+)=([0-9.]+)", open(path).read()))


def collector(rep, name):
    """The best state any process reported for a collector ("ok" wins)."""
    states = [c for c in rep.get("collectors", []) if c["collector"] == name]
    for c in states:
        if c["state"] == "ok":
            return c
    return states[-1] if states else {"state": "absent", "detail": ""}


def span_count(rep, name):
    return sum(s["count"] for s in rep.get("spans", []) if s["name"] == name)


def transfer_bytes(rep, direction):
    return sum(b["bytes"] for b in rep.get("transfers", {}).get("by_kind", []) if b.get("direction") == direction)


def finish(bad, ok):
    print("\n".join("FAIL: " + b for b in bad) or "ok: " + ok)
    return 1 if bad else 0


def vector(out, report):
    f, rep = facts(out), json.load(open(report))
    bad = []
    want = int(f["kernels"])
    ks = [k for k in rep.get("kernels", []) if "vector_add" in k["name"]]
    got = sum(k["count"] for k in ks)
    if got != want:
        bad.append(f"vector_add kernels: trace {got}, program {want} ({[k['name'] for k in rep.get('kernels', [])]})")
    total_ms = sum(k["total_ns"] for k in ks) / 1e6
    event_ms = float(f["kernel_ms"])
    # CUDA events bracket each kernel (and its launch): its own time is within them.
    if not 0 < total_ms <= 1.02 * event_ms:
        bad.append(f"kernel time {total_ms:.3f} ms vs the program's CUDA-event time {event_ms:.3f} ms")
    # And not too short to be true: each kernel reads two arrays and writes one,
    # which no GPU today does faster than 10 TB/s.
    moved = 3 * 4 * int(f["n"]) * want
    if total_ms > 0 and moved / (total_ms / 1e3) > 10e12:
        bad.append(f"kernel time {total_ms:.3f} ms implies {moved / (total_ms / 1e3) / 1e12:.1f} TB/s")
    for direction, key in (("HtoD", "bytes_htod"), ("DtoH", "bytes_dtoh")):
        if transfer_bytes(rep, direction) != int(f[key]):
            bad.append(f"{direction} bytes: trace {transfer_bytes(rep, direction)}, program {f[key]}")
    launches = rep.get("launches", {})
    launched = sum(a["launches"] for a in launches.get("by_api", []) if "Launch" in a["name"])
    if launched != want:
        bad.append(f"kernel launches linked to their kernels: {launched} of {want} ({[(a['name'], a['launches']) for a in launches.get('by_api', [])]})")
    if launches.get("unlinked", 0):
        bad.append(f"{launches['unlinked']} device activities not linked to an API call")
    if span_count(rep, "step") != want:
        bad.append(f"NVTX 'step' ranges: {span_count(rep, 'step')} of {want}")
    cuda = collector(rep, "cuda")
    if cuda["state"] != "ok":
        bad.append(f"cuda collector: {cuda}")
    return finish(bad, f"{got} kernels, {total_ms:.3f} ms (CUDA events {event_ms:.3f} ms), "
                       f"{transfer_bytes(rep, 'HtoD')} B HtoD, {moved / (total_ms / 1e3) / 1e12:.2f} TB/s in the kernels; "
                       f"{cuda['detail']}")


def metrics(out, report, kernels):
    f, rep = facts(out), json.load(open(report))
    bad = []
    cuda = collector(rep, "cuda")
    if f"{kernels} kernels profiled" not in cuda["detail"]:
        bad.append(f"cuda collector says {cuda}, not '{kernels} kernels profiled'")
    # Every launch is in the trace, the profiled (replayed) ones too.
    got = sum(k["count"] for k in rep.get("kernels", []) if "vector_add" in k["name"])
    if got != int(f["kernels"]):
        bad.append(f"vector_add kernels: trace {got}, program {f['kernels']}")
    # The profiled kernels' hardware counters reach the roofline: each vector_add
    # does one fp32 add per element (n = the first argument).
    points = [p for p in rep.get("roofline", {}).get("points", []) if p.get("measured") and "vector_add" in p["name"]]
    n = int(f["n"])
    if not points or points[0]["count"] != kernels:
        bad.append(f"roofline points measured by hardware counters: {points}")
    elif abs(points[0]["flops"] - kernels * n) > 0.01 * kernels * n:
        bad.append(f"measured FLOPs {points[0]['flops']:.0f}, expected {kernels} kernels x {n} adds")
    summary = cuda["detail"]
    if points:
        summary += f"; roofline: {points[0]['intensity']:.2f} FLOP/byte, {points[0]['pct_of_roof']:.1f}% of the " \
                   f"{points[0]['bound']} roof"
    return finish(bad, summary)


def torch(out, report, steps):
    f, rep = facts(out), json.load(open(report))
    bad = []
    if rep.get("steps", {}).get("count") != steps:
        bad.append(f"steps {rep.get('steps', {}).get('count')} of {steps}")
    if span_count(rep, "train_step") != steps:
        bad.append(f"NVTX train_step ranges: {span_count(rep, 'train_step')} of {steps}")
    kernels = sum(k["count"] for k in rep.get("kernels", []))
    kernel_ms = sum(k["total_ns"] for k in rep.get("kernels", [])) / 1e6
    if kernel_ms <= 0:
        bad.append("no kernel time")
    launches = rep.get("launches", {})
    if launches.get("unlinked", 0) > 0.05 * max(launches.get("count", 0), 1):
        bad.append(f"{launches['unlinked']} of {launches.get('count')} device activities not linked to an API call")
    summary = f"{steps} steps, {kernels} kernels, {kernel_ms:.2f} ms in kernels (steps' CUDA events {f['step_ms']} ms)"
    pt = collector(rep, "pytorch")
    if pt["state"] == "ok":
        fw = rep.get("framework", {})
        ops = {o["name"]: o["count"] for o in fw.get("ops", [])}
        if ops.get("aten::addmm", 0) < 2 * steps:
            bad.append(f"aten::addmm recorded {ops.get('aten::addmm', 0)} times, expected at least {2 * steps}")
        if not fw.get("backward_ops") or fw.get("backward_linked") != fw.get("backward_ops"):
            bad.append(f"backward ops linked to their forward: {fw.get('backward_linked')} of {fw.get('backward_ops')}")
        # Every kernel the steps launch comes from an op: kernels attributed to "(no op)" are a correlation bug.
        by_op = rep.get("kernels_by_op", [])
        total = sum(k["total_ns"] for k in by_op)
        orphan = sum(k["total_ns"] for k in by_op if k["op"] == "(no op)")
        if total and orphan > 0.02 * total:
            bad.append(f"{orphan / total:.1%} of kernel time attributed to no op: "
                       f"{[k for k in by_op if k['op'] == '(no op)'][:5]}")
        gpu = [d for d in fw.get("memory", {}).get("devices", []) if d["device"] != "host"]
        peak = int(f["peak_bytes"])
        if not gpu:
            bad.append("no GPU memory timeline (the CUDA caching allocator's events)")
        elif abs(gpu[0]["peak_bytes"] - peak) > 0.05 * peak:
            bad.append(f"GPU memory peak {gpu[0]['peak_bytes']} B vs torch.cuda.max_memory_allocated() {peak} B")
        else:
            summary += f"; GPU memory peak {gpu[0]['peak_bytes']} B (torch {peak} B)"
        summary += f"; {sum(ops.values())} ops, {total - orphan} of {total} ns of kernel time under an op"
    else:
        summary += f"; PyTorch level not recorded: {pt['detail']}"
    open(report + ".kernels", "w").write(str(kernels))
    return finish(bad, summary + "; " + collector(rep, "cuda")["detail"])


if __name__ == "__main__":
    what = sys.argv[1]
    if what == "vector":
        sys.exit(vector(sys.argv[2], sys.argv[3]))
    if what == "metrics":
        sys.exit(metrics(sys.argv[2], sys.argv[3], int(sys.argv[4])))
    if what == "torch":
        sys.exit(torch(sys.argv[2], sys.argv[3], int(sys.argv[4])))
    sys.exit(f"check.py: unknown check {what}")
