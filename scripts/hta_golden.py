#!/usr/bin/env python3
"""Produce golden reference figures from HTA (HolisticTraceAnalysis) on real Kineto traces.

For every PyTorch-profiler (Kineto) JSON trace under <data>/{hta,kineto,tracelens}/ this runs
HTA's temporal breakdown, idle-time breakdown, GPU kernel breakdown, queue-length summary and
memory-bandwidth summary, and writes one JSON file per trace to <out>/<short-id>.json.

Run (from the repository root, with HTA installed in a venv outside the repo):

    /work/venvs/hta/bin/python scripts/hta_golden.py --data ../shared/data/external --out tests/golden/hta

The figures are deterministic; only the "timing" block changes between runs.
See tests/golden/hta/README.md for what each figure means and how HTA computes it.
"""

from __future__ import annotations

import argparse
import json
import logging
import math
import os
import platform
import re
import sys
import time
import traceback
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Tuple

import numpy as np
import pandas as pd

try:
    import hta
    from hta.trace_analysis import TraceAnalysis
    from hta.utils.utils import get_kernel_type
except ImportError as exc:  # pragma: no cover
    sys.exit(f"HTA is not importable ({exc}); install it: pip install HolisticTraceAnalysis")

try:
    from importlib.metadata import version as _pkg_version

    HTA_VERSION = _pkg_version("HolisticTraceAnalysis")
except Exception:  # pragma: no cover
    HTA_VERSION = ".".join(str(x) for x in hta.version.__version_tuple__)

SCHEMA_VERSION = 1
TRACE_ROOTS = ("hta", "kineto", "tracelens")
TOP_K = 10
RUNS = 3

# Stable, human-readable ids for the traces we know about; anything else gets a derived id.
KNOWN_IDS = {
    "hta/amd_trace/mi250_minitoy_train_ROCm6_2_kineto.json.gz": "hta-amd-mi250-minitoy",
    "hta/critical_path/alexnet/benchmark_result_2869224_1695835535_trace.json.gz": "hta-alexnet",
    "hta/critical_path/cuda_event_sync_multi_stream/event_sync_trace.json.gz": "hta-cuda-event-sync",
    "hta/nccl_parser_config/nccl_data.json.gz": "hta-nccl-data",
    "hta/ns_resolution_trace/rank-0.Apr_03_18_51_38.1102.pt.trace.json.gz": "hta-ns-resolution",
    "hta/trace_filter/sampled_rank-0.json.gz": "hta-sampled-rank-0",
    "hta/trace_filter/sampled_rank-1.json.gz": "hta-sampled-rank-1",
    "hta/triton_example/triton_example.json.gz": "hta-triton-example",
    "kineto/docs/traces/before_fix_trace.json": "kineto-before-fix",
    "kineto/tb_plugin/samples/resnet50_num_workers_0/worker0.1623143089861.pt.trace.json.gz": "kineto-resnet50-legacy",
    "tracelens/traces/h100/gaunernst_bert-small-uncased__1016001.json.gz": "tracelens-h100-bert",
}


# ----------------------------------------------------------------------------- helpers


def short_id(rel: str) -> str:
    if rel in KNOWN_IDS:
        return KNOWN_IDS[rel]
    stem = re.sub(r"(\.pt)?\.trace", "", rel)
    stem = re.sub(r"\.json(\.gz)?$", "", stem)
    return re.sub(r"[^A-Za-z0-9]+", "-", stem).strip("-").lower()


def find_traces(data: Path) -> List[Path]:
    found: List[Path] = []
    for root in TRACE_ROOTS:
        base = data / root
        if not base.is_dir():
            continue
        for p in base.rglob("*"):
            if p.is_file() and (p.name.endswith(".json") or p.name.endswith(".json.gz")):
                found.append(p)
    return sorted(found, key=lambda p: p.relative_to(data).as_posix())


def jnum(x: Any) -> Any:
    """Convert numpy/pandas scalars to plain JSON values (NaN -> None, integral floats -> int)."""
    if x is None:
        return None
    if isinstance(x, (np.integer,)):
        return int(x)
    if isinstance(x, (np.bool_, bool)):
        return bool(x)
    if isinstance(x, (np.floating, float)):
        f = float(x)
        if math.isnan(f) or math.isinf(f):
            return None
        if f.is_integer() and abs(f) < 2**53:
            return int(f)
        return round(f, 6)
    return x


def error_record(stage: str, exc: BaseException) -> Dict[str, Any]:
    tb = traceback.extract_tb(exc.__traceback__)
    site = None
    for fr in reversed(tb):
        fn = fr.filename.replace("\\", "/")
        if "site-packages/hta/" in fn:
            site = {
                "file": fn.split("site-packages/", 1)[1],
                "line": fr.lineno,
                "function": fr.name,
                "code": (fr.line or "").strip(),
            }
            break
    return {
        "stage": stage,
        "type": type(exc).__name__,
        "message": str(exc),
        "raised_at": site,
    }


def quiet_hta_logging() -> None:
    for name in ("hta", ""):
        logging.getLogger(name).setLevel(logging.ERROR)


# ----------------------------------------------------------------------------- analyses


def temporal(ta: TraceAnalysis) -> Dict[str, Any]:
    df = ta.get_temporal_breakdown(visualize=False)
    out = {}
    for row in df.to_dict("records"):
        kt = row["kernel_time(us)"]
        out[str(int(row["rank"]))] = {
            "idle_us": jnum(row["idle_time(us)"]),
            "compute_us": jnum(row["compute_time(us)"]),
            "non_compute_us": jnum(row["non_compute_time(us)"]),
            "kernel_time_us": jnum(kt),
            "idle_pct": jnum(row["idle_time_pctg"]),
            "compute_pct": jnum(row["compute_time_pctg"]),
            "non_compute_pct": jnum(row["non_compute_time_pctg"]),
            # unrounded ratios, for tolerance checks finer than HTA's 2-decimal rounding
            "idle_frac": jnum(row["idle_time(us)"] / kt) if kt else None,
            "compute_frac": jnum(row["compute_time(us)"] / kt) if kt else None,
            "non_compute_frac": jnum(row["non_compute_time(us)"] / kt) if kt else None,
        }
    return out


def idle(ta: TraceAnalysis, rank: int) -> Dict[str, Any]:
    df, _ = ta.get_idle_time_breakdown(ranks=[rank], visualize=False, consecutive_kernel_delay=30)
    per_stream = []
    totals = {"host_wait": 0, "kernel_wait": 0, "other": 0}
    stream_tot = df.groupby("stream")["idle_time"].sum()
    for row in df.sort_values(["stream", "idle_category"]).to_dict("records"):
        st = float(stream_tot[row["stream"]])
        per_stream.append(
            {
                "stream": jnum(row["stream"]),
                "category": row["idle_category"],
                "idle_us": jnum(row["idle_time"]),
                "pct_of_stream_idle": jnum(round(100.0 * float(row["idle_time"]) / st, 4)) if st else None,
                "ratio_hta": jnum(row["idle_time_ratio"]),  # HTA's value, rounded to 2 decimals
            }
        )
        totals[row["idle_category"]] += float(row["idle_time"])
    tot = sum(totals.values())
    summed = {
        f"{k}_us": jnum(v) for k, v in totals.items()
    }
    summed["total_us"] = jnum(tot)
    for k, v in totals.items():
        summed[f"{k}_pct_of_idle"] = jnum(round(100.0 * v / tot, 4)) if tot else None
    return {
        "consecutive_kernel_delay_us": 30,
        "note": "per-stream gaps between consecutive kernels; summed over streams (not the temporal-breakdown idle)",
        "sum_over_streams": summed,
        "per_stream": per_stream,
    }


def kernels(ta: TraceAnalysis, rank: int) -> Dict[str, Any]:
    # HTA's default call (num_kernels=10, duration_ratio=0.8) -> shows its "others" folding.
    kt_df, default_df = ta.get_gpu_kernel_breakdown(
        visualize=False, num_kernels=TOP_K, duration_ratio=0.8, include_memory_kernels=True
    )
    # Full table (no folding into "others").
    _, full_df = ta.get_gpu_kernel_breakdown(
        visualize=False, num_kernels=10**9, duration_ratio=1.0, include_memory_kernels=True
    )

    type_rows = [
        {"kernel_type": r["kernel_type"], "sum_us": jnum(r["sum"]), "pct": jnum(r["percentage"])}
        for r in kt_df.sort_values(["sum", "kernel_type"], ascending=[False, True]).to_dict("records")
    ]
    # Union time of each pure type = sum of every overlap state that mentions it.
    union = {}
    for t in ("COMPUTATION", "COMMUNICATION", "MEMORY"):
        union[t] = jnum(
            sum(float(r["sum"]) for r in kt_df.to_dict("records") if t in r["kernel_type"].split(" overlapping "))
        )

    # Counts per kernel name from HTA's own loaded dataframe (same event set the breakdown uses).
    sym = ta.t.symbol_table.get_sym_table()
    df = ta.t.get_trace(rank)
    gk = df[df["stream"].ne(-1)]
    names = gk["name"].map(lambda i: sym[i])
    counts = names.value_counts()

    fr = full_df[full_df["rank"] == rank]
    plain_sum = {
        t: jnum(fr[fr["kernel_type"] == t]["sum (us)"].sum()) for t in ("COMPUTATION", "COMMUNICATION", "MEMORY")
    }
    fr = fr.sort_values(["sum (us)", "name"], ascending=[False, True])
    top = []
    for r in fr.head(TOP_K).to_dict("records"):
        top.append(
            {
                "name": r["name"],
                "kernel_type": r["kernel_type"],
                "count": int(counts.get(r["name"], 0)),
                "sum_us": jnum(r["sum (us)"]),
                "mean_us": jnum(r["mean (us)"]),
                "min_us": jnum(r["min (us)"]),
                "max_us": jnum(r["max (us)"]),
            }
        )
    dr = default_df[default_df["rank"] == rank].sort_values(["kernel_type", "sum (us)", "name"], ascending=[True, False, True])
    default_rows = [
        {"kernel_type": r["kernel_type"], "name": r["name"], "sum_us": jnum(r["sum (us)"])}
        for r in dr.to_dict("records")
    ]
    return {
        "kernel_type_breakdown": type_rows,
        "kernel_type_union_us": union,
        "kernel_type_plain_sum_us": plain_sum,
        "distinct_names": int(len(fr)),
        "top_kernels": top,
        "hta_default_table": default_rows,
    }


def describe_rows(df: Optional[pd.DataFrame], key: str, value_col: str) -> Optional[List[Dict[str, Any]]]:
    if df is None:
        return None
    rows = []
    flat = df.copy()
    flat.columns = [c[1] if isinstance(c, tuple) else c for c in flat.columns]
    flat = flat.reset_index()
    for r in flat.to_dict("records"):
        rows.append(
            {
                key: jnum(r[key]),
                "count": jnum(r["count"]),
                "mean": jnum(r["mean"]),
                "min": jnum(r["min"]),
                "p50": jnum(r["50%"]),
                "max": jnum(r["max"]),
            }
        )
    return sorted(rows, key=lambda x: str(x[key]))


def queue_length(ta: TraceAnalysis, rank: int) -> Any:
    return describe_rows(ta.get_queue_length_summary(ranks=[rank]), "stream", "queue_length")


def memory_bw(ta: TraceAnalysis, rank: int) -> Any:
    return describe_rows(ta.get_memory_bw_summary(ranks=[rank]), "name", "memory_bw_gbps")


def diagnostics(ta: TraceAnalysis, rank: int) -> Dict[str, Any]:
    df = ta.t.get_trace(rank)
    sym = ta.t.symbol_table.get_sym_table()
    gk = df[df["stream"].ne(-1)]
    step_syms = [s for s in sym if "ProfilerStep" in s]
    types = gk["name"].map(lambda i: get_kernel_type(sym[i])).value_counts()
    cats = gk["cat"].map(lambda i: sym[i]).value_counts()
    return {
        "steps_kept": [int(x) for x in ta.t.get_iterations(rank)],
        "profiler_step_symbols": len(step_syms),
        "last_step_dropped": len(step_syms) >= 2,
        "events_after_filter": int(len(df)),
        "stream_events": int(len(gk)),
        "stream_events_by_cat": {str(k): int(v) for k, v in sorted(cats.items())},
        "stream_events_by_kernel_type": {str(k): int(v) for k, v in sorted(types.items())},
        "stream_events_negative_dur": int((gk["dur"] < 0).sum()),
        "stream_events_zero_dur": int((gk["dur"] == 0).sum()),
        "duplicate_event_rows": int(df.index.duplicated().sum()),
        "streams": sorted(int(s) for s in gk["stream"].unique()),
        "gpu_pids": sorted(str(p) for p in gk["pid"].unique()),
    }


# ----------------------------------------------------------------------------- driver


def run_once(path: Path) -> Tuple[Dict[str, Any], float]:
    """Load the trace and run every analysis once; returns (results, seconds)."""
    res: Dict[str, Any] = {"errors": [], "ranks": {}}
    t0 = time.perf_counter()
    try:
        ta = TraceAnalysis(trace_files=[str(path)], trace_dir=str(path.parent))
    except BaseException as exc:  # noqa: BLE001 - the error text is itself a golden fact
        res["errors"].append(error_record("load", exc))
        return res, time.perf_counter() - t0

    ranks = sorted(ta.t.traces.keys())

    def attempt(stage: str, fn: Callable[[], Any]) -> Any:
        try:
            return fn()
        except BaseException as exc:  # noqa: BLE001
            res["errors"].append(error_record(stage, exc))
            return None

    tb = attempt("temporal_breakdown", lambda: temporal(ta))
    per_rank = {}
    for r in ranks:
        per_rank[r] = {
            "idle_breakdown": attempt(f"idle_time_breakdown[rank {r}]", lambda r=r: idle(ta, r)),
            "kernel_breakdown": attempt(f"gpu_kernel_breakdown[rank {r}]", lambda r=r: kernels(ta, r)),
            "queue_length_summary": attempt(f"queue_length_summary[rank {r}]", lambda r=r: queue_length(ta, r)),
            "memory_bw_summary": attempt(f"memory_bw_summary[rank {r}]", lambda r=r: memory_bw(ta, r)),
        }
    elapsed = time.perf_counter() - t0

    for r in ranks:
        entry: Dict[str, Any] = {}
        entry.update(attempt(f"diagnostics[rank {r}]", lambda r=r: diagnostics(ta, r)) or {})
        entry["temporal_breakdown"] = (tb or {}).get(str(r))
        entry.update(per_rank[r])
        res["ranks"][str(r)] = entry
    return res, elapsed


def golden_for(path: Path, data: Path) -> Dict[str, Any]:
    rel = path.relative_to(data).as_posix()
    times: List[float] = []
    first: Optional[Dict[str, Any]] = None
    stable = True
    for _ in range(RUNS):
        res, secs = run_once(path)
        times.append(secs)
        if first is None:
            first = res
        elif json.dumps(res, sort_keys=True) != json.dumps(first, sort_keys=True):
            stable = False
    assert first is not None
    return {
        "schema": SCHEMA_VERSION,
        "id": short_id(rel),
        "source": rel,
        "hta_version": HTA_VERSION,
        "env": {
            "python": platform.python_version(),
            "pandas": pd.__version__,
            "numpy": np.__version__,
        },
        "how": "TraceAnalysis(trace_files=[<abs path>], trace_dir=<its dir>), defaults "
        "(include_last_profiler_step=False, JSON parser backend, ns rounding on); visualize=False",
        "status": "ok" if not first["errors"] else ("failed" if not first["ranks"] else "partial"),
        "errors": first["errors"],
        "identical_across_runs": stable,
        "timing": {
            "what": "load + temporal + idle + 2x kernel breakdown + queue length + memory bw, time.perf_counter",
            "runs": RUNS,
            "min_s": round(min(times), 4),
            "all_s": [round(t, 4) for t in times],
            "machine": f"{platform.machine()}, {os.cpu_count()} cpus",
        },
        "ranks": first["ranks"],
    }


def main(argv: Optional[List[str]] = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", default="../shared/data/external", help="shared/data/external folder")
    ap.add_argument("--out", default="tests/golden/hta", help="output folder for <short-id>.json")
    ap.add_argument("--only", default=None, help="regex on the relative path: process matching traces only")
    args = ap.parse_args(argv)

    quiet_hta_logging()
    data = Path(args.data).resolve()
    out = Path(args.out)
    if not data.is_dir():
        print(f"data folder {data} not found; nothing to do", file=sys.stderr)
        return 2
    out.mkdir(parents=True, exist_ok=True)

    traces = find_traces(data)
    if args.only:
        traces = [p for p in traces if re.search(args.only, p.relative_to(data).as_posix())]
    for p in traces:
        g = golden_for(p, data)
        quiet_hta_logging()
        dest = out / f"{g['id']}.json"
        dest.write_text(json.dumps(g, indent=1, sort_keys=False, ensure_ascii=False) + "\n")
        tb = next(iter(g["ranks"].values()), {}).get("temporal_breakdown") if g["ranks"] else None
        summary = (
            f"idle {tb['idle_pct']}% compute {tb['compute_pct']}% non-compute {tb['non_compute_pct']}%"
            if tb
            else "; ".join(f"{e['stage']}: {e['type']}" for e in g["errors"])
        )
        print(f"{g['id']:28s} {g['timing']['min_s']:7.3f}s  {g['status']:7s} {summary}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
