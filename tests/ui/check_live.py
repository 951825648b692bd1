"""`strata record --serve` in a real browser: Debian's Chromium driven by
Playwright for Python (from PyPI, in a venv the test script makes).

Runs a real PyTorch training loop (two optimizers, tests/workloads) under
`strata record --serve --ops off`, opens the page while it runs, and checks
what a user would see and do:
  - the live panel lists steps as they finish;
  - asking for ops over the next 4 steps (the form) produces detailed steps,
    and only those: in the live step list, and in the trace opened once the
    program ends (every op the trace holds lies inside those 4 steps);
  - the page raises no JavaScript error.
A screenshot is left in --work for a person to look at.

Exit 0 on success, 1 on a failure, 77 (skipped) without Chromium or Playwright.
"""
import argparse
import os
import signal
import subprocess
import sys
import urllib.parse

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from browser import SKIP, chromium_and_playwright, get, launch, reexec_in_ui_venv  # noqa: E402


def main():
    reexec_in_ui_venv()
    ap = argparse.ArgumentParser()
    ap.add_argument("--strata", required=True)
    ap.add_argument("--python", default="/usr/bin/python3", help="the Python that runs the recorded program")
    ap.add_argument("--work", default="/tmp/strata-check-live")
    a = ap.parse_args()
    found = chromium_and_playwright()
    if not found:
        return SKIP
    chromium, sync_playwright = found
    probe = subprocess.run([a.python, "-c", "import torch"], capture_output=True, text=True)
    if probe.returncode != 0:
        print("skipped: " + (probe.stderr.strip().splitlines() or ["torch cannot be imported"])[-1])
        return SKIP
    os.makedirs(a.work, exist_ok=True)
    trace = os.path.join(a.work, "trace")
    program = os.path.join(HERE, "..", "workloads", "gan_two_optimizers.py")
    rec = subprocess.Popen([a.strata, "record", "--serve", "--port", "0", "--ops", "off", "--force", "-o", trace,
                            "--", a.python, program, "--iters", "150", "--batch", "64"],
                           stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    bad = []
    try:
        url = None
        for line in rec.stderr:
            if "serving the live run at " in line:
                url = line.split(" at ", 1)[1].strip()
                break
        if not url:
            print("FAIL: strata record --serve printed no URL")
            return 1
        with sync_playwright() as p:
            browser = launch(p, chromium)
            page = browser.new_page(viewport={"width": 1400, "height": 800})
            errors = []
            page.on("pageerror", lambda e: errors.append(str(e)))
            page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
            page.goto(url)
            page.wait_for_function("() => window.strataState && strataState.live && strataState.live.steps.length >= 5",
                                   timeout=120000)
            if not page.is_visible("#live"):
                bad.append("the live panel is hidden")
            if page.evaluate("() => strataState.live.state") != "running":
                bad.append("the program ended before detail could be asked for (too fast a machine?)")
            page.fill("#live-steps", "4")
            page.click("#live-record")
            page.wait_for_function("() => /steps \\d+/.test(document.getElementById('live-answer').textContent)",
                                   timeout=30000)
            answer = page.inner_text("#live-answer")
            page.wait_for_function("() => strataState.live.window !== undefined && strataState.live.window !== null",
                                   timeout=30000)
            window = page.evaluate("() => strataState.live.window")
            first, last = window["first"], window["last"]
            if last - first != 3 or window["detail"] != ["ops"]:
                bad.append(f"asked for ops over 4 steps, the window is {window} ({answer})")
            page.wait_for_function("() => strataState.live.steps.some(s => s.detail.length)", timeout=60000)
            page.screenshot(path=os.path.join(a.work, "live-running.png"))
            dark = page.evaluate("""() => { const c = document.getElementById('live-chart');
                const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data; let n = 0;
                for (let i = 0; i < d.length; i += 4) if (d[i + 3] > 0 && d[i] < 40 && d[i + 2] > 120) n++; return n; }""")
            if dark < 10:
                bad.append(f"the step chart shows no detailed step ({dark} dark pixels)")
            # The program ends; its trace opens in the views.
            page.wait_for_function("() => strataState.live.state === 'finished' && strataState.summary "
                                   "&& strataState.steps.length > 0", timeout=300000)
            live_steps = page.evaluate("() => strataState.live.steps")
            detailed = sorted(s["step"] for s in live_steps if s["detail"])
            if detailed != list(range(first, last + 1)):
                bad.append(f"steps recorded in detail: {detailed}; asked for {first}-{last}")
            if any(s["detail"] not in ([], ["ops"]) for s in live_steps):
                bad.append("a step lists detail other than ops")
            # Live steps are iterations: the two optimizers' steps of each are one.
            if len(live_steps) != 150:
                bad.append(f"{len(live_steps)} live steps for 150 iterations of two optimizers")
            by_number = {s["step"]: s for s in live_steps}
            base = urllib.parse.urljoin(url, "/api/v1/traces/0")
            if first not in by_number or last not in by_number:
                bad.append(f"the live steps do not include {first}-{last}")
            else:
                # From the end of the step before the window to the end of its last step.
                lo = by_number[first - 1]["begin_ns"] + by_number[first - 1]["dur_ns"]
                hi = by_number[last]["begin_ns"] + by_number[last]["dur_ns"]
                ops = get(base + "/search?q=aten::&limit=20000")
                outside = [s for s in ops["slices"] if not lo <= s["ts"] <= hi]
                if ops["matches"] == 0:
                    bad.append("the trace holds no op")
                if outside:
                    bad.append(f"{len(outside)} of {ops['matches']} ops lie outside steps {first}-{last} "
                               f"({lo}-{hi}), e.g. {outside[0]}")
            page.screenshot(path=os.path.join(a.work, "live-finished.png"))
            if errors:
                bad.append("page errors: " + "; ".join(errors[:3]))
            browser.close()
    finally:
        rec.send_signal(signal.SIGINT)
        try:
            rec.wait(timeout=60)
        except subprocess.TimeoutExpired:
            rec.kill()
            bad.append("strata record --serve did not stop on SIGINT")
    for b in bad:
        print("FAIL: " + b)
    if not bad:
        print(f"ok: steps {first}-{last} recorded in detail on request, and only those")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
