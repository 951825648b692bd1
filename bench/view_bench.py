#!/usr/bin/env python3
"""`strata view` under load: viewport-query latency at every zoom level, the
server's memory against its index, and (with --wrk) requests per second of the
viewport endpoint under wrk (Debian `wrk`).

  bench/view_bench.py --strata build/bin/strata TRACE [--queries 200] [--wrk 60] [--paint]

Starts `strata view --port 0 TRACE`, waits until the trace is open (its index
built), then for zoom levels 0..L (the whole trace, then a quarter of it, a
sixteenth, ... down to 10 us) asks for random ranges of that width over every
lane at 1,500 pixels, as the page does, timing each request end to end
(HTTP included). Prints one line per level (p50, p95, max, bytes) and the
server's peak RSS against the index's size.
"""
import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import time
import http.client


def rss_kb(pid, field="VmHWM"):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    return 0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--strata", required=True)
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--pixels", type=int, default=1500)
    ap.add_argument("--wrk", type=int, default=0, help="also run wrk for this many seconds (64 connections)")
    ap.add_argument("--paint", action="store_true",
                    help="also time the page's first paint in Chromium (Playwright: run with the venv's Python)")
    ap.add_argument("trace")
    a = ap.parse_args()
    t0 = time.time()
    srv = subprocess.Popen([a.strata, "view", "--port", "0", a.trace], stdout=subprocess.PIPE, text=True)
    try:
        url = srv.stdout.readline().split(" at ", 1)[1].strip()
        host, port = url[len("http://"):].rstrip("/").split(":")
        conn = http.client.HTTPConnection(host, int(port), timeout=600)

        def get(path):
            conn.request("GET", path)
            r = conn.getresponse()
            body = r.read()
            if r.status != 200:
                raise SystemExit(f"{path}: HTTP {r.status}: {body[:200]}")
            return body

        info = json.loads(get("/api/v1/traces/0"))
        opened = time.time() - t0
        lanes = [t["id"] for t in info["tracks"] if t["slices"] > 0]
        lo, hi = info["start_ns"], info["end_ns"]
        print(f"{a.trace}: {info['slices']} slices, {len(lanes)} lanes; opened in {opened:.2f} s "
              f"(index {'read' if info['indexed'] else 'not used'})")
        tracks = ",".join(map(str, lanes))
        rng = random.Random(1)
        width = hi - lo
        level = 0
        all_lat = []
        while True:
            lat, sizes = [], []
            for _ in range(a.queries):
                s = lo + rng.random() * max(0, (hi - lo) - width)
                q = f"/api/v1/traces/0/viewport?start={int(s)}&end={int(s + width)}&pixels={a.pixels}&tracks={tracks}"
                t = time.perf_counter()
                b = get(q)
                lat.append((time.perf_counter() - t) * 1e3)
                sizes.append(len(b))
            lat.sort()
            all_lat += lat
            p95 = lat[int(0.95 * (len(lat) - 1))]
            print(f"  range {width / 1e6:12.3f} ms: p50 {statistics.median(lat):7.2f} ms  p95 {p95:7.2f} ms  "
                  f"max {lat[-1]:7.2f} ms  {statistics.mean(sizes) / 1e3:8.1f} kB per answer")
            if width <= 10_000:
                break
            width = max(10_000, width // 4)
            level += 1
        all_lat.sort()
        print(f"  all {len(all_lat)} queries: p95 {all_lat[int(0.95 * (len(all_lat) - 1))]:.2f} ms")
        idx = None
        for cand in (os.path.join(a.trace, ".strata-index"), a.trace + ".strata-index"):
            if os.path.exists(cand):
                idx = os.path.getsize(cand)
        hwm = rss_kb(srv.pid) * 1024
        print(f"  server peak RSS {hwm / 1e6:.1f} MB" + (f", index {idx / 1e6:.1f} MB ({hwm / idx:.2f}x)" if idx else ""))
        if a.paint:
            from playwright.sync_api import sync_playwright
            with sync_playwright() as p:
                b = p.chromium.launch(executable_path="/usr/bin/chromium", headless=True,
                                      args=["--no-sandbox", "--disable-gpu"])
                for run in range(3):
                    page = b.new_page(viewport={"width": 1700, "height": 900})
                    t = time.perf_counter()
                    page.goto(url)
                    page.wait_for_function("() => window.strataState && strataState.fetches >= 1 "
                                           "&& strataState.drawnTiles > 0", timeout=120000)
                    paint = time.perf_counter() - t
                    page.wait_for_function("() => strataState.summary && strataState.stepsLoaded", timeout=600000)
                    main_view = time.perf_counter() - t
                    # The page's own clock: from its load event (HTML, script and style in) to the
                    # first frame whose timeline shows the trace.
                    after_load = page.evaluate("() => strataState.firstPaintMs - "
                                               "performance.getEntriesByType('navigation')[0].loadEventEnd")
                    print(f"  page load {run + 1}: timeline drawn {paint * 1e3:.0f} ms after navigation "
                          f"({after_load:.0f} ms after the page loaded), main view (summary, steps) "
                          f"{main_view * 1e3:.0f} ms")
                    page.close()
                b.close()
        if a.wrk:
            q = f"/api/v1/traces/0/viewport?pixels={a.pixels}&tracks={tracks}"
            before = rss_kb(srv.pid, "VmRSS")
            r = subprocess.run(["wrk", "-t2", "-c64", f"-d{a.wrk}s", "--latency", url.rstrip("/") + q],
                               capture_output=True, text=True)
            print("  wrk -t2 -c64 -d%ds (the whole trace, every lane):" % a.wrk)
            for line in r.stdout.splitlines():
                if any(k in line for k in ("Requests/sec", "99%", "50%", "requests in", "Non-2xx", "Socket errors")):
                    print("    " + line.strip())
            print(f"  server RSS before {before / 1e3:.1f} MB, after {rss_kb(srv.pid, 'VmRSS') / 1e3:.1f} MB")
    finally:
        srv.terminate()
        srv.wait(timeout=60)


if __name__ == "__main__":
    sys.exit(main())
