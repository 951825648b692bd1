#!/usr/bin/env python3
"""The cross-output matrix: every command of strata on every kind of trace.

Two tables drive it. TRACES: the kinds of trace (strata's own recordings of a
CPU-only C program, a PyTorch program, an OpenCL program, a multi-process
program; every shared Kineto file). COMMANDS: the outputs (the report as text,
JSON and HTML; the Perfetto, SQLite and Chrome JSON exports; `diff A A`; the
flame graph). Each cell runs the command, requires exit 0, reads the output
back with an independent reader (readers.py) and compares every count the
output can hold with the report's `counts` object, the one reference; strata's
own traces are also counted by babeltrace2 where CTF events map 1:1 to a level.
A new format is one row of COMMANDS; a new kind of trace one row of TRACES (and
its name in tests/CMakeLists.txt); a new level one key of LEVELS.

Usage: matrix.py --strata BIN --programs DIR --source DIR --work DIR KIND...
(--reference-strata BIN takes the reference counts from another strata: how
an older build's outputs are checked against what this one counts.)
Exits 0 when every cell passes (cells whose tool or program is missing are
skipped with a message), 1 otherwise.
"""
import argparse
import glob
import json
import os
import shutil
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import readers  # noqa: E402
from readers import Problem, Skip  # noqa: E402

# The levels every output is checked on: the keys of the report's "counts".
LEVELS = ["slices", "steps", "modules", "flows", "instants", "samples", "thread_states", "context_switches",
          "syscalls", "counters", "counter_series", "memory", "page_faults", "block_io", "stack_frames",
          "not_recorded"]

TORCH_PYTHON = "/usr/bin/python3"  # Debian's, with python3-torch


class Ctx:
    def __init__(self, a):
        self.strata, self.programs, self.source, self.work = a.strata, a.programs, a.source, a.work
        self.reference_strata = a.reference_strata or a.strata
        self.chromium = next((c for c in ("chromium", "chromium-browser", "google-chrome") if shutil.which(c)), None)
        self.root = os.geteuid() == 0

    def program(self, name):
        return os.path.join(self.programs, name)

    def run(self, argv, timeout=300, env=None):
        e = dict(os.environ, **(env or {}))
        return subprocess.run(argv, capture_output=True, text=True, timeout=timeout, env=e)

    def record(self, out, cmd, opts=(), env=None):
        shutil.rmtree(out, ignore_errors=True)
        r = self.run([self.strata, "record", "-o", out, *opts, "--", *cmd], timeout=300, env=env)
        if r.returncode != 0:
            raise Problem(f"record exited {r.returncode}: {r.stderr.strip()[-400:]}")
        return out


def torch_usable(ctx):
    lib = os.path.join(os.path.dirname(os.path.dirname(ctx.strata)), "lib", "libstrata_torch.so")
    if not os.path.exists(lib):
        raise Skip("strata was built without libtorch (no libstrata_torch.so)")
    if not os.path.exists(TORCH_PYTHON) or ctx.run([TORCH_PYTHON, "-c", "import torch"]).returncode != 0:
        raise Skip(f"{TORCH_PYTHON} cannot import torch")


# ---- TRACES: how to get each kind of trace ---------------------------------------------------
# Each returns a list of (name, path); own recordings are short, for CI.

def os_opts(ctx):
    # As root the OS level records everything it can: sleep states, wakeups, system calls.
    return ["--sched", "--syscalls"] if ctx.root else []


def trace_cpu(ctx):
    prog = ctx.program("plain_c")
    if not os.path.exists(prog):
        raise Skip("tests/programs/plain_c is not built")
    return [("plain_c", ctx.record(os.path.join(ctx.work, "plain_c"), [prog, "12", "3"], os_opts(ctx)))]


def trace_pytorch(ctx):
    torch_usable(ctx)
    wl = os.path.join(ctx.source, "tests", "workloads", "transformer_lm.py")
    cmd = [TORCH_PYTHON, wl, "--iters", "3", "--quiet", "--seq", "16", "--d-model", "32", "--layers", "1"]
    return [("transformer_lm", ctx.record(os.path.join(ctx.work, "transformer_lm"), cmd, os_opts(ctx)))]


def trace_opencl(ctx):
    prog = ctx.program("cl_pipeline")
    if not os.path.exists(prog):
        raise Skip("tests/programs/cl_pipeline is not built (no OpenCL headers or loader)")
    if ctx.run(["sh", "-c", "command -v clinfo >/dev/null && clinfo -l | grep -q Device"]).returncode != 0:
        raise Skip("no OpenCL device (PoCL) found by clinfo")
    cache = os.path.join(os.environ.get("TMPDIR", "/tmp"), "strata-pocl-cache")
    os.makedirs(cache, exist_ok=True)
    return [("cl_pipeline", ctx.record(os.path.join(ctx.work, "cl_pipeline"), [prog, "2", "2048"], os_opts(ctx),
                                       env={"POCL_CACHE_DIR": cache}))]


def trace_multiprocess(ctx):
    torch_usable(ctx)
    wl = os.path.join(ctx.source, "tests", "workloads", "resnet18_train.py")
    cmd = [TORCH_PYTHON, wl, "--iters", "2", "--quiet", "--batch", "4", "--size", "32", "--workers", "2"]
    return [("resnet18_workers", ctx.record(os.path.join(ctx.work, "resnet18_workers"), cmd, os_opts(ctx)))]


def trace_workloads(ctx):
    """The other ordinary programs of tests/workloads: an inference loop, hand-made numpy
    loading from files, a GAN with two optimizers (small sizes, for CI)."""
    torch_usable(ctx)
    wl = os.path.join(ctx.source, "tests", "workloads")
    out = []
    for name, args in [("inference_loop", ["--iters", "4", "--batch", "4"]),
                       ("numpy_loading", ["--iters", "4", "--batch", "16", "--features", "64"]),
                       ("gan_two_optimizers", ["--iters", "3", "--batch", "8"])]:
        cmd = [TORCH_PYTHON, os.path.join(wl, name + ".py"), "--quiet"] + args
        out.append((name, ctx.record(os.path.join(ctx.work, name), cmd, os_opts(ctx))))
    return out


def trace_kineto(ctx):
    data = os.environ.get("STRATA_EXTERNAL_DATA") or os.path.join(ctx.source, "..", "shared", "data", "external")
    if not os.path.isdir(data):
        raise Skip(f"{data} is absent (../shared/data/external next to the checkout, or $STRATA_EXTERNAL_DATA)")
    files = sorted(glob.glob(os.path.join(data, "**", "*.json"), recursive=True) +
                   glob.glob(os.path.join(data, "**", "*.json.gz"), recursive=True))
    return [(os.path.relpath(f, data), f) for f in files]


def trace_given(ctx):
    """Traces made elsewhere (scripts/gpu-check's CUDA recordings, a user's trace): the
    paths in $STRATA_MATRIX_TRACES, separated by ':'."""
    paths = [p for p in os.environ.get("STRATA_MATRIX_TRACES", "").split(":") if p]
    if not paths:
        raise Skip("no paths in $STRATA_MATRIX_TRACES")
    return [(os.path.basename(os.path.normpath(p)), p) for p in paths]


TRACES = {
    "cpu": trace_cpu,                    # own: a plain C program (OS level only)
    "pytorch": trace_pytorch,            # own: a PyTorch training loop
    "opencl": trace_opencl,              # own: OpenCL on PoCL
    "multiprocess": trace_multiprocess,  # own: DataLoader worker processes
    "workloads": trace_workloads,        # own: inference, numpy loading, a GAN
    "kineto": trace_kineto,              # every shared Kineto (PyTorch profiler) file
    "given": trace_given,                # $STRATA_MATRIX_TRACES (not run by ctest)
}


# ---- COMMANDS: each output, and how to read it back ---------------------------------------------

def out_path(cell, ext):
    return os.path.join(cell.dir, cell.command + ext)


def cmd_report_text(ctx, cell):
    path = out_path(cell, ".txt")
    cell.strata(["report", cell.trace], stdout_to=path)
    return readers.read_report_text(path, cell.ref)


def cmd_report_json(ctx, cell):
    return cell.report_json_counts  # read once, when the reference was taken


def cmd_report_html(ctx, cell):
    path = out_path(cell, ".html")
    cell.strata(["report", cell.trace, "--html", path, "--force"])
    if ctx.chromium and cell.own:
        dom = readers.render_html(ctx.chromium, path, path + ".profile")
        want = {"os-samples": cell.ref["samples"] > 0, "os-threads": cell.ref["thread_states"] > 0,
                "os-syscalls": cell.ref["syscalls"] > 0, "modules": cell.ref["modules"] > 0,
                "throughput": cell.ref["steps"] > 0, "not-recorded": cell.ref["not_recorded"] > 0}
        wrong = [k + (" missing" if v else " shown with nothing in it") for k, v in want.items()
                 if (f'<section id="{k}"' in dom) != v]
        # No empty breakdown or top-spans chart (a plain program has neither spans nor ops).
        for sid, chart in (("breakdown", "chart-breakdown"), ("top-ops", "chart-top-ops")):
            if f'<section id="{sid}"' in dom:
                at = dom.find(f'id="{chart}"')
                if at < 0 or "<rect" not in dom[at:dom.find("</svg>", at)]:
                    wrong.append(sid + " empty")
        if "<tbody></tbody>" in dom:
            wrong.append("a table with no rows")
        readers.check(not wrong, "HTML sections: " + ", ".join(wrong))
    counts, r = readers.read_report_html(path)
    return counts


def cmd_export(fmt, ext, reader):
    def run(ctx, cell):
        path = out_path(cell, ext)
        for old in (path, path + ".tmp"):
            if os.path.exists(old):
                os.remove(old)
        left = f"it left {os.path.basename(path)}.tmp"
        try:
            cell.strata(["export", cell.trace, "-f", fmt, "-o", path, "-q"])
        except Problem as e:
            raise Problem(f"{e}" + (f"; {left}" if os.path.exists(path + ".tmp") else ""))
        readers.check(not os.path.exists(path + ".tmp"), left)
        got = reader(path)
        compare(cell.ref, got)
        if fmt == "sqlite" and cell.own and cell.kind == "cpu":
            # The documentation's examples return rows on a CPU-only trace.
            for sql in readers.sql_examples(os.path.join(ctx.source, "docs", "sqlite-schema.md")):
                if "FROM syscalls" in sql and cell.ref["syscalls"] == 0:
                    continue
                if "FROM not_recorded" in sql and cell.ref["not_recorded"] == 0:
                    continue
                readers.check(readers.run_sql(path, sql), "docs/sqlite-schema.md example returns nothing: " + sql[:90])
        return got
    return run


def cmd_diff(ctx, cell):
    out = cell.strata(["diff", cell.trace, cell.trace, "--json"])
    return readers.read_diff_json(out)


def cmd_flamegraph(ctx, cell):
    path = out_path(cell, ".folded")
    cell.strata(["flamegraph", cell.trace, "-o", path, "--force"])
    return readers.read_folded(path)


COMMANDS = {
    "report": cmd_report_text,
    "report-json": cmd_report_json,
    "report-html": cmd_report_html,
    "export-perfetto": cmd_export("perfetto", ".perfetto-trace", readers.read_perfetto),
    "export-sqlite": cmd_export("sqlite", ".sqlite", readers.read_sqlite),
    "export-chrome-json": cmd_export("chrome-json", ".chrome.json", readers.read_chrome_json),
    "diff": cmd_diff,
    "flamegraph": cmd_flamegraph,
}


# ---- the runner ------------------------------------------------------------------------------------

class Cell:
    def __init__(self, ctx, kind, name, trace, command):
        self.ctx, self.kind, self.name, self.trace, self.command = ctx, kind, name, trace, command
        self.own = os.path.isdir(trace)
        self.dir = os.path.join(ctx.work, "out", kind, name.replace("/", "_"))
        os.makedirs(self.dir, exist_ok=True)
        self.ref, self.report_json_counts = None, None

    def strata(self, args, stdout_to=None, binary=None):
        r = self.ctx.run([binary or self.ctx.strata, *args])
        if r.returncode != 0:
            raise Problem(f"strata {args[0]} exited {r.returncode}: {r.stderr.strip()[-400:]}")
        if stdout_to:
            with open(stdout_to, "w", encoding="utf-8") as f:
                f.write(r.stdout)
        return r.stdout


def reference(ctx, kind, name, trace):
    """The report's counts: the reference every output is compared with."""
    probe = Cell(ctx, kind, name, trace, "report-json")
    path = out_path(probe, ".json")
    probe.strata(["report", trace, "--json"], stdout_to=path, binary=ctx.reference_strata)
    got, r = readers.read_report_json(path)
    ref = r["counts"]
    missing = [k for k in LEVELS if k not in ref]
    readers.check(not missing, f"the report's counts lack {missing}")
    return ref, got


def compare(ref, got):
    wrong = [f"{k}: {got[k]} (report: {ref[k]})" for k in LEVELS if k in got and got[k] != ref[k]]
    readers.check(not wrong, "counts differ: " + "; ".join(wrong))


def check_babeltrace(ctx, trace, ref):
    names = readers.babeltrace_counts(os.path.join(trace, "ctf"))
    wrong = [f"{level}: babeltrace2 {names.get(ev, 0)} {ev} events, report {ref[level]}"
             for ev, level in readers.BABELTRACE_LEVELS.items() if names.get(ev, 0) != ref[level]]
    # Each switch_out record ends one running interval; a thread on a CPU when
    # the trace ended (or exited) has one more, so switch_out is a lower bound.
    outs = names.get("switch_out", 0)
    if outs > ref["context_switches"]:
        wrong.append(f"context_switches: {ref['context_switches']} < {outs} switch_out events")
    readers.check(not wrong, "; ".join(wrong))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--strata", required=True)
    ap.add_argument("--programs", required=True)
    ap.add_argument("--source", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--reference-strata")
    ap.add_argument("kinds", nargs="*", default=[k for k in TRACES if k != "given"])
    a = ap.parse_args()
    ctx = Ctx(a)
    os.makedirs(ctx.work, exist_ok=True)
    failed, passed, skipped = [], 0, 0
    for kind in a.kinds:
        t0 = time.time()
        try:
            traces = TRACES[kind](ctx)
        except Skip as e:
            print(f"SKIP {kind}: {e}")
            skipped += 1
            continue
        except (Problem, subprocess.TimeoutExpired) as e:
            print(f"FAIL {kind}: could not get the trace: {e}")
            failed.append(kind)
            continue
        print(f"{kind}: {len(traces)} trace(s) in {time.time() - t0:.1f} s")
        for name, trace in traces:
            try:
                ref, json_counts = reference(ctx, kind, name, trace)
            except (Problem, subprocess.TimeoutExpired, ValueError) as e:
                print(f"FAIL {kind}/{name} report-json: {e}")
                failed.append(f"{kind}/{name}")
                continue
            print(f"  {name}: " + ", ".join(f"{k} {ref[k]}" for k in LEVELS if ref[k]))
            cells = [(c, COMMANDS[c]) for c in COMMANDS]
            if os.path.isdir(trace):
                cells.append(("babeltrace2", lambda ctx, cell: check_babeltrace(ctx, trace, ref) or {}))
            for command, run in cells:
                cell = Cell(ctx, kind, name, trace, command)
                cell.ref, cell.report_json_counts = ref, json_counts
                t1 = time.time()
                try:
                    compare(ref, run(ctx, cell))
                    passed += 1
                    print(f"    ok   {command:<20} {time.time() - t1:5.1f} s")
                except Skip as e:
                    skipped += 1
                    print(f"    skip {command:<20} {e}")
                except Exception as e:  # a reader's error is the output's fault: sqlite3.Error, json errors
                    failed.append(f"{kind}/{name} {command}")
                    print(f"    FAIL {command:<20} {type(e).__name__}: {e}")
    print(f"matrix: {passed} passed, {len(failed)} failed, {skipped} skipped")
    for f in failed:
        print("  failed: " + f)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
