"""`strata view` in a real browser: Debian's Chromium driven by Playwright for
Python (from PyPI, in a venv the test script makes).

Records a real PyTorch training loop, serves it with `strata view --port 0`,
opens the page, and checks what a user would see and do:
  - the timeline draws one lane per track that has slices (page state and
    the canvas's own pixels: not blank);
  - the main view lists every step the API lists, with the summary's findings;
  - clicking a step zooms the timeline to it; the mouse wheel zooms in (a
    narrower range, fetched again), dragging pans;
  - zoomed in far enough, slices are drawn and clicking one shows its
    details (its name, from the API) and its place on its step's critical
    path (the path drawn on the lanes);
  - a thread's system calls are drawn (recorded with --syscalls, where the
    machine allows it);
  - the roofline tab plots every op the summary's roofline has (recorded with
    --shapes), and the diff tab compares the trace with a second one served;
  - the page raises no JavaScript error.
A screenshot is left in --work for a person to look at.

Exit 0 on success, 1 on a failure, 77 (skipped) without Chromium or Playwright.
"""
import argparse
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from browser import SKIP, chromium_and_playwright, get, launch, reexec_in_ui_venv  # noqa: E402


def main():
    # The Python with Playwright: the venv scripts/test.sh makes, named by
    # STRATA_UI_PYTHON (this script is started by ctest's python3).
    reexec_in_ui_venv()
    ap = argparse.ArgumentParser()
    ap.add_argument("--strata", required=True)
    ap.add_argument("--python", default="/usr/bin/python3", help="the Python that runs the recorded program")
    ap.add_argument("--work", default="/tmp/strata-check-view")
    a = ap.parse_args()
    found = chromium_and_playwright()
    if not found:
        return SKIP
    chromium, sync_playwright = found
    os.makedirs(a.work, exist_ok=True)
    trace = os.path.join(a.work, "trace")
    program = os.path.join(HERE, "..", "workloads", "gan_two_optimizers.py")
    r = subprocess.run([a.strata, "record", "-q", "--force", "--shapes", "--syscalls", "-o", trace, "--", a.python,
                        program, "--iters", "12", "--batch", "64"], capture_output=True, text=True, timeout=600)
    # A second run with a smaller batch, for the diff tab.
    trace2 = os.path.join(a.work, "trace-small")
    if r.returncode == 0:
        r = subprocess.run([a.strata, "record", "-q", "--force", "-o", trace2, "--", a.python, program,
                            "--iters", "12", "--batch", "16"], capture_output=True, text=True, timeout=600)
    if r.returncode != 0:
        if "No module named" in r.stdout + r.stderr:
            print("skipped: " + (r.stdout + r.stderr).strip().splitlines()[-1])
            return SKIP
        print(f"FAIL: record exited {r.returncode}: {r.stderr[-500:]}")
        return 1
    server = subprocess.Popen([a.strata, "view", "--port", "0", trace, trace2], stdout=subprocess.PIPE, text=True)
    bad = []
    try:
        line = server.stdout.readline()
        url = line.split(" at ", 1)[1].strip()
        api = url.rstrip("/") + "/api/v1/traces/0"
        info = get(api)
        steps = get(api + "/steps")["steps"]
        want_lanes = sorted(t["id"] for t in info["tracks"] if t["slices"] > 0 or t["states"] > 0 or t["syscalls"] > 0)
        with_states = sum(1 for t in info["tracks"] if t["states"] > 0)
        with sync_playwright() as p:
            browser = launch(p, chromium)
            page = browser.new_page(viewport={"width": 1400, "height": 800})
            errors = []
            page.on("pageerror", lambda e: errors.append(str(e)))
            page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
            page.goto(url)
            page.wait_for_function("() => window.strataState && strataState.fetches >= 1 && strataState.summary "
                                   "&& strataState.steps.length > 0", timeout=120000)
            st = page.evaluate("() => ({lanes: strataState.lanes.filter(l => l.counter === undefined).map(l => l.track), "
                               "counters: strataState.lanes.filter(l => l.counter !== undefined).length, "
                               "points: strataState.drawnCounterPoints, tiles: strataState.drawnTiles})")
            want_counters = len(get(api + "/counters")["counters"])
            if st["counters"] != want_counters:
                bad.append(f"{st['counters']} counter lanes, the API lists {want_counters} series")
            if want_counters and not st["points"]:
                bad.append("counter lanes drew nothing")
            drawn_states = page.evaluate("() => strataState.drawnStates")
            if with_states and not drawn_states:
                bad.append(f"{with_states} threads have scheduling states; none drawn")
            if sorted(st["lanes"]) != want_lanes:
                bad.append(f"lanes {sorted(st['lanes'])} != tracks with slices {want_lanes}")
            if st["tiles"] <= 0:
                bad.append("no tiles drawn")
            # The canvas's own pixels: tiles are drawn in blue over grey lanes.
            blue = page.evaluate("""() => { const c = document.getElementById('canvas');
                const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data; let n = 0;
                for (let i = 0; i < d.length; i += 4) if (d[i + 2] > 200 && d[i] < 120) n++; return n; }""")
            if blue < 500:
                bad.append(f"the timeline looks blank ({blue} tile pixels)")
            page.screenshot(path=os.path.join(a.work, "view.png"))
            rows = page.locator("#steps tbody tr").count()
            if rows != len(steps):
                bad.append(f"main view lists {rows} steps, the API {len(steps)}")
            if page.locator("#findings li").count() < 1:
                bad.append("no findings list")
            # Clicking a step zooms to it.
            target = steps[len(steps) // 2]
            page.locator(f"#steps tbody tr[data-step='{target['number']}']").click()
            page.wait_for_function("n => strataState.fetches >= n", arg=2, timeout=30000)
            v = page.evaluate("() => strataState.view")
            if not (v["start"] <= target["ts"] and v["end"] >= target["ts"] + target["dur"]
                    and v["end"] - v["start"] < 1.2 * target["dur"]):
                bad.append(f"clicking step {target['number']} showed {v}, not the step")
            # Wheel: zoom in around the middle until slices are drawn.
            box = page.locator("#canvas").bounding_box()
            page.mouse.move(box["x"] + 200 + (box["width"] - 200) / 2, box["y"] + 8)
            before = v["end"] - v["start"]
            ticks = 0
            for _ in range(30):
                n = page.evaluate("() => strataState.fetches")
                page.mouse.wheel(0, -120)
                ticks += 1
                page.wait_for_function("n => strataState.fetches > n", arg=n, timeout=30000)
                if page.evaluate("() => strataState.detail && strataState.drawnSlices > 0"):
                    break
            v2 = page.evaluate("() => strataState.view")
            # Each notch narrows the range to 0.8 of itself (app.js); how many
            # notches it takes to reach drawn slices depends on the step's length.
            want = before * 0.8 ** ticks
            if not abs((v2["end"] - v2["start"]) - want) <= 0.02 * want:
                bad.append(f"the wheel did not zoom in: {before} -> {v2['end'] - v2['start']} ns after {ticks} "
                           f"notches (expected {want:.0f})")
            if not page.evaluate("() => strataState.detail && strataState.drawnSlices > 0"):
                bad.append("zoomed in, no slices drawn")
            arrows = page.evaluate("() => strataState.drawnArrows")
            # Drag: pan to later times.
            n = page.evaluate("() => strataState.fetches")
            y = box["y"] + 8
            page.mouse.move(box["x"] + 900, y)
            page.mouse.down()
            page.mouse.move(box["x"] + 700, y, steps=5)
            page.mouse.up()
            page.wait_for_function("n => strataState.fetches > n", arg=n, timeout=30000)
            v3 = page.evaluate("() => strataState.view")
            if not v3["start"] > v2["start"]:
                bad.append(f"dragging left did not pan to later times: {v2['start']} -> {v3['start']}")
            # Click the widest top-level slice drawn: its details appear.
            hit = page.evaluate("""() => { let best = null;
                for (const l of strataState.lanes) { const sl = strataState.slices[l.track]; if (!sl) continue;
                  for (const s of sl.slices) { if (s.depth) continue;
                    const x0 = Math.max(LABEL_W, xOf(s.ts)), x1 = Math.min(plotWidth() + LABEL_W, xOf(s.ts + s.dur));
                    if (x1 - x0 > 3 && (!best || x1 - x0 > best.w)) best = {x: (x0 + x1) / 2, y: l.y + ROW_H / 2,
                      w: x1 - x0, name: s.name, id: s.id}; } }
                return best; }""")
            if not hit:
                bad.append("no slice wide enough to click")
            else:
                scroll = page.evaluate("() => document.getElementById('lanes').scrollTop")
                page.mouse.click(box["x"] + hit["x"], box["y"] + hit["y"] - scroll)
                page.wait_for_function("id => strataState.selected && strataState.selected.name !== undefined "
                                       "&& strataState.selected.id === id", arg=hit["id"], timeout=30000)
                details = page.locator("#details").inner_text()
                if hit["name"] not in details:
                    bad.append(f"clicked {hit['name']!r}; the details say {details[:200]!r}")
                # Its place on the critical path of its step, from the API, and the path drawn.
                page.wait_for_function("() => /critical path/.test(document.getElementById('details').textContent)",
                                       timeout=60000)
                place = get(api + f"/slices/{hit['id']}/path")
                if place["step"] is not None:
                    shown = page.locator("#details").inner_text()
                    if f"step {place['step']['number']}" not in shown:
                        bad.append(f"the details do not place the slice on step {place['step']['number']}'s path: "
                                   f"{shown[-200:]!r}")
                    if not page.evaluate("() => strataState.drawnPath > 0"):
                        bad.append("the critical path of the selected slice's step is not drawn")
            page.screenshot(path=os.path.join(a.work, "view-zoomed.png"))
            # Search the whole trace by name (Enter): the server's matches are
            # listed, and a click on one opens it.
            page.fill("#search", "addmm")
            page.press("#search", "Enter")
            page.wait_for_function("() => strataState.searchResults", timeout=30000)
            found = get(api + "/search?q=addmm&limit=200")
            listed = page.locator("#details .result").count()
            if found["matches"] == 0 or listed != len(found["slices"]):
                bad.append(f"search lists {listed} results, the API {len(found['slices'])} of {found['matches']}")
            else:
                page.locator("#details .result").nth(1).click()
                want = found["slices"][1]
                page.wait_for_function("id => strataState.selected && strataState.selected.id === id "
                                       "&& strataState.selected.name !== undefined", arg=want["id"], timeout=30000)
                v4 = page.evaluate("() => strataState.view")
                if not (v4["start"] <= want["ts"] <= v4["end"]):
                    bad.append(f"the search result at {want['ts']} is not in view {v4}")
            page.fill("#search", "")
            # The analysis views: each tab shows what the summary holds.
            summary = get(api + "/summary")
            page.click("#tabs button[data-tab='findings-tab']")
            shown = page.locator("#findings-tab .finding").count()
            if shown != len(summary.get("findings", [])):
                bad.append(f"findings tab shows {shown} findings, the summary has {len(summary.get('findings', []))}")
            page.click("#tabs button[data-tab='ops-tab']")
            op_rows = page.locator("#ops-tab table.rows").first.locator("tr").count() - 1
            want_ops = min(200, len(summary.get("framework", {}).get("ops", [])))
            if op_rows != want_ops:
                bad.append(f"ops tab lists {op_rows} ops, the summary {want_ops}")
            page.click("#tabs button[data-tab='memory-tab']")
            ink = page.evaluate("""() => { const c = document.getElementById('memory-chart');
                const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data; let n = 0;
                for (let i = 3; i < d.length; i += 4) if (d[i] > 0) n++; return n; }""")
            if ink < 50:
                bad.append(f"the memory chart is blank ({ink} pixels drawn)")
            page.click("#tabs button[data-tab='path-tab']")
            if page.locator("#path-tab table.rows tr").count() < 2:
                bad.append("the critical-path tab has no rows")
            # Roofline: every point of the summary's roofline is plotted.
            page.click("#tabs button[data-tab='roofline-tab']")
            want_points = len([p for p in summary.get("roofline", {}).get("points", [])
                               if p.get("intensity", 0) > 0 and p.get("flops_per_s", 0) > 0])
            plotted = page.evaluate("() => strataState.drawnRoofline || 0")
            if want_points == 0:
                bad.append("the summary has no roofline points (recorded with --shapes)")
            elif plotted != want_points:
                bad.append(f"the roofline plots {plotted} points, the summary has {want_points}")
            # Diff: this trace against the second one.
            page.click("#tabs button[data-tab='diff-tab']")
            page.select_option("#diff-before", "1")
            page.wait_for_function("() => strataState.diff !== undefined", timeout=120000)
            diff = get(url.rstrip("/") + "/api/v1/diff?before=1&after=0")
            diff_rows = page.locator("#diff-tab table.rows tr").count()
            if diff_rows < 2 or abs(page.evaluate("() => strataState.diff.step_delta_pct") - diff["step_delta_pct"]) > 1e-6:
                bad.append(f"the diff tab shows {diff_rows} rows; API step change {diff['step_delta_pct']:.1f}%")
            # System calls: drawn on the threads that have them (when they could be recorded).
            with_syscalls = sum(1 for t in info["tracks"] if t.get("syscalls", 0) > 0)
            if with_syscalls:
                page.click("#zoom-all")
                page.wait_for_timeout(1500)
                if not page.evaluate("() => strataState.drawnSyscalls > 0"):
                    bad.append(f"{with_syscalls} threads have system calls; none drawn")
            page.screenshot(path=os.path.join(a.work, "view-tabs.png"))
            if errors:
                bad.append(f"JavaScript errors: {errors[:3]}")
            browser.close()
        print(f"view: roofline {want_points} points, diff {diff['step_delta_pct']:+.1f}%, "
              f"{with_syscalls} threads with system calls; {len(want_lanes)} lanes and {st['counters']} counter lanes ({st['points']} points), {drawn_states} state spans, {st['tiles']} tiles, {blue} tile pixels, {rows} steps listed, "
              f"{arrows} flow arrows zoomed in; "
              f"zoomed to {(v2['end'] - v2['start']) / 1e6:.3f} ms; screenshots in {a.work}")
    finally:
        server.terminate()
        server.wait(timeout=30)
    for b in bad:
        print("FAIL: " + b)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
