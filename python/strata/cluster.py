"""Runs the per-trace half of `strata report --cluster` on a Dask distributed cluster.

`strata report --cluster tcp://SCHEDULER:8786 TRACE...` starts this module with the
Python that has `distributed` (STRATA_DASK_PYTHON, else python3). Each trace becomes
one task: a worker runs `strata summarize` on it, where the trace is (shared storage,
or a worker on the host that wrote it), and sends back its summary: a few kilobytes
per thousand collectives. The client (strata) combines the summaries for the
analyses across ranks, exactly as it does when the same tasks run on local cores.

The task function is pickled by value (this file runs as __main__), so workers need
no strata Python package: only the `strata` binary at the path given (--strata;
the same install path on every host, or --worker-strata in strata report).

    python -m strata.cluster --scheduler tcp://host:8786 --strata /usr/bin/strata \
        --out DIR [--summarize-arg=--top --summarize-arg=20] TRACE...

writes DIR/member-<i>.json per trace and DIR/run.json ({"workers", "bytes",
"seconds", "hosts"}); exits 1 with one line on stderr when a task fails.
"""
import argparse
import json
import os
import sys
import time


def summarize(strata, extra, path):
    """One task: the summary of one trace, as bytes (runs on a worker)."""
    import socket
    import subprocess

    p = subprocess.run([strata, "summarize", *extra, "-o", "-", path], stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE)
    if p.returncode != 0:
        lines = p.stderr.decode(errors="replace").strip().splitlines()
        raise RuntimeError("%s: %s" % (socket.gethostname(), lines[-1] if lines else
                                       "strata summarize exited with %d" % p.returncode))
    return socket.gethostname(), p.stdout


def main(argv=None):
    ap = argparse.ArgumentParser(prog="python -m strata.cluster")
    ap.add_argument("--scheduler", required=True, help="the Dask scheduler's address (tcp://host:8786)")
    ap.add_argument("--strata", required=True, help="the strata binary on the workers")
    ap.add_argument("--out", required=True, help="where the summaries are written")
    ap.add_argument("--summarize-arg", action="append", default=[], help="an argument for strata summarize")
    ap.add_argument("--timeout", type=float, default=float(os.environ.get("STRATA_DASK_TIMEOUT", "30")),
                    help="seconds to wait for the scheduler (default: STRATA_DASK_TIMEOUT, else 30)")
    ap.add_argument("traces", nargs="+")
    a = ap.parse_args(argv)
    try:
        from distributed import Client
    except ImportError:
        print("strata: the Dask path needs Python with the `distributed` package (pip install distributed); "
              "set STRATA_DASK_PYTHON to that Python", file=sys.stderr)
        return 1
    start = time.monotonic()
    try:
        client = Client(a.scheduler, timeout=a.timeout)
    except Exception as e:  # OSError, TimeoutError: one line, not a traceback
        print("strata: no Dask scheduler at %s: %s" % (a.scheduler, e), file=sys.stderr)
        return 1
    try:
        workers = len(client.scheduler_info().get("workers", {}))
        if workers == 0:
            print("strata: the Dask scheduler at %s has no workers" % a.scheduler, file=sys.stderr)
            return 1
        n = len(a.traces)
        futures = client.map(summarize, [a.strata] * n, [a.summarize_arg] * n, a.traces, pure=False)
        total = 0
        hosts = set()
        for i, f in enumerate(futures):
            try:
                host, data = f.result()
            except Exception as e:
                print("strata: %s: %s" % (a.traces[i], e), file=sys.stderr)
                return 1
            hosts.add(host)
            total += len(data)
            with open(os.path.join(a.out, "member-%d.json" % i), "wb") as out:
                out.write(data)
        with open(os.path.join(a.out, "run.json"), "w") as out:
            json.dump({"workers": workers, "bytes": total, "seconds": time.monotonic() - start,
                       "hosts": sorted(hosts)}, out)
    finally:
        client.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
