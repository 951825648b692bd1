"""What the browser tests (check_view.py, check_live.py) share: running in the
venv with Playwright that scripts/test.sh makes, finding Debian's Chromium,
starting it headless, and reading the REST API."""
import json
import os
import shutil
import sys
import urllib.request

SKIP = 77


def reexec_in_ui_venv():
    """Runs this script again with the Python that has Playwright (STRATA_UI_PYTHON;
    the tests are started by ctest's python3)."""
    ui = os.environ.get("STRATA_UI_PYTHON", "")
    if ui and os.path.exists(ui) and os.path.abspath(ui) != os.path.abspath(sys.executable) \
            and not os.environ.get("STRATA_UI_REEXEC"):
        os.environ["STRATA_UI_REEXEC"] = "1"
        os.execv(ui, [ui] + sys.argv)


def chromium_and_playwright():
    """(Chromium's path, playwright.sync_api.sync_playwright), or None after
    saying why the test is skipped."""
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if not chromium:
        print("skipped: chromium is not installed")
        return None
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        print("skipped: playwright is not installed in this Python (scripts/test.sh makes a venv with it)")
        return None
    return chromium, sync_playwright


def launch(p, chromium):
    return p.chromium.launch(executable_path=chromium, headless=True,
                             args=["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"])


def get(url):
    with urllib.request.urlopen(url, timeout=60) as r:
        return json.loads(r.read())
