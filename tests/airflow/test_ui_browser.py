"""A real browser on the "Fault tolerance" page: Debian's chromium, driven by selenium through the
system chromedriver, against a real Airflow api-server serving the plugin, with the history in the
real PostgreSQL store.

A user's path: open the job's page, be refused (401, no content, a link to Airflow's login), sign in
with Airflow's own login form, land back on the page, and see the charts. The screenshot is decoded
with Pillow and checked: its size is the viewport's and the plan-history chart's region holds the
chart's own blue, where the refused page had none.
"""

from __future__ import annotations

import io
import json
import os
import shutil
import signal
import socket
import sqlite3
import subprocess
import sys
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import quote, unquote

import httpx
import numpy as np
import pytest
from PIL import Image
from selenium import webdriver
from selenium.common.exceptions import TimeoutException
from selenium.webdriver.chrome.service import Service as ChromeService
from selenium.webdriver.common.action_chains import ActionChains
from selenium.webdriver.common.by import By
from selenium.webdriver.support import expected_conditions as EC
from selenium.webdriver.support.ui import WebDriverWait

from ftops_provider.local_airflow import LocalAirflow
from ftops_provider.ui.charts import BLUE, GREEN
from spark_jobs.runtime.waiting import wait_for
from tests.conftest import ROOT
from tests.console_fixtures import airflow_dags, seed_history, set_paused  # noqa: F401 - a fixture
from tests.store_fixtures import pg_conn, pg_server  # noqa: F401 - fixtures

VIEWPORT = (1280, 1000)  # the window; the page's viewport is its width and what the window's frame leaves
# No network here (and none wanted): every background service of chromium that would phone home is off.
CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                  "--disable-background-networking", "--disable-component-update", "--disable-sync",
                  "--disable-dev-shm-usage", "--force-device-scale-factor=1", "--hide-scrollbars"]


# -- processes this test starts (and stops, by their own process group) ---------------------------------

def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextmanager
def _process(args: list[str], log: Path, env: dict[str, str] | None = None):
    """A child in its own session, stopped with its whole group (SIGTERM, then SIGKILL after 20 s)."""
    with open(log, "ab") as out:
        proc = subprocess.Popen(args, env=env, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                start_new_session=True)
    try:
        yield proc
    finally:
        for sig, wait_s in ((signal.SIGTERM, 20), (signal.SIGKILL, 5)):
            try:
                os.killpg(proc.pid, sig)
                proc.wait(timeout=wait_s)
                break
            except ProcessLookupError:
                break
            except subprocess.TimeoutExpired:
                continue


def _wait_http(url: str, proc: subprocess.Popen, log: Path, timeout_s: float) -> None:
    """Until ``url`` answers 200; fails early (with the log's tail) when the process exits."""
    def answers() -> bool:
        if proc.poll() is not None:
            pytest.fail(f"{proc.args[:4]} exited with {proc.returncode}: {log.read_text(errors='replace')[-2000:]}")
        try:
            return httpx.get(url, timeout=5).status_code == 200
        except httpx.HTTPError:
            return False

    wait_for(answers, timeout_s=timeout_s, what=lambda: f"{url} to answer: {log.read_text(errors='replace')[-2000:]}")


def _metadata_copy(home: Path) -> str:
    """A private copy of the session's migrated Airflow metadata database (conftest's ``airflow db migrate``),
    so this api-server starts without migrating (about 20 s on 2 cores) and writes nothing shared."""
    from airflow.configuration import conf

    url = conf.get("database", "sql_alchemy_conn")
    target = home / "airflow.db"
    if url.startswith("sqlite:///"):
        with sqlite3.connect(url.removeprefix("sqlite:///")) as src, sqlite3.connect(target) as dst:
            src.backup(dst)  # a consistent copy even if the session's database is in use
        return f"sqlite:///{target}"
    env = {**os.environ, "AIRFLOW_HOME": str(home), "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN": f"sqlite:///{target}"}
    proc = subprocess.run([sys.executable, "-m", "airflow", "db", "migrate"], env=env, capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return f"sqlite:///{target}"


@pytest.fixture
def api_server(pg_server, pg_conn, tmp_path):
    """Only the api-server of a local Airflow (LocalAirflow's environment: SimpleAuthManager, admin user),
    one worker, core API: a browser needs no scheduler, and the whole test stays well under a minute."""
    seed_history(pg_conn)
    home = tmp_path / "airflow"
    home.mkdir()
    local = LocalAirflow(home=home, port=_free_port())
    env = local.env({"AIRFLOW_CONN_FTOPS_DB": pg_server.url(), "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN": _metadata_copy(home)})
    log = home / "api-server.log"
    args = [sys.executable, "-m", "airflow", "api-server", "--host", "127.0.0.1", "--port", str(local.port),
            "--workers", "1", "--apps", "core"]
    with _process(args, log, env) as proc:
        _wait_http(f"{local.url}/api/v2/monitor/health", proc, log, timeout_s=120)
        yield local
    password = pg_server.url().split(":")[2].split("@")[0]
    assert password not in log.read_text(errors="replace")  # the store's credentials never reach the log


# -- the browser ------------------------------------------------------------------------------------------

@pytest.fixture
def browser(tmp_path):
    """Chromium driven by the system chromedriver (selenium never downloads a driver here)."""
    driver_bin, chromium_bin = shutil.which("chromedriver"), shutil.which("chromium")
    assert driver_bin and chromium_bin, "chromium and chromium-driver are installed by scripts/system-packages.sh"
    options = webdriver.ChromeOptions()
    options.binary_location = chromium_bin
    for flag in CHROMIUM_FLAGS + [f"--user-data-dir={tmp_path / 'chromium-profile'}",
                                  f"--window-size={VIEWPORT[0]},{VIEWPORT[1]}"]:
        options.add_argument(flag)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})  # the page's console, read by the tests
    service = ChromeService(executable_path=driver_bin, log_output=str(tmp_path / "chromedriver.log"))
    driver = webdriver.Chrome(service=service, options=options)
    try:
        yield driver
    finally:
        driver.quit()


def _wait_css(driver, css: str, timeout_s: float = 30):
    try:
        return WebDriverWait(driver, timeout_s).until(EC.presence_of_element_located((By.CSS_SELECTOR, css)))
    except TimeoutException:
        raise AssertionError(f"no {css!r} on {driver.current_url} after {timeout_s:.0f} s: "
                             f"{driver.page_source[:1000]}") from None


def _sign_in(driver, api_server) -> None:
    """From a refused page: follow its link to Airflow's login form, fill it in, submit (it brings the browser back)."""
    _wait_css(driver, "#login").click()
    _wait_css(driver, "input[name=username]").send_keys("admin")
    _wait_css(driver, "input[name=password]").send_keys(api_server.admin_password())
    _wait_css(driver, "button[type=submit]").click()


def _screenshot(driver) -> np.ndarray:
    """The viewport as a (height, width, channels) array, decoded by Pillow from chromium's PNG."""
    return np.asarray(Image.open(io.BytesIO(driver.get_screenshot_as_png())).convert("RGB"))


def _colour_pixels(image: np.ndarray, box: dict[str, float], hex_colour: str, tolerance: int = 24) -> int:
    """Pixels within ``tolerance`` per channel of a colour, inside a CSS-pixel box (device scale 1)."""
    rgb = np.array([int(hex_colour[i:i + 2], 16) for i in (1, 3, 5)], dtype=np.int16)
    x, y = int(box["x"]), int(box["y"])
    region = image[y:y + int(box["height"]), x:x + int(box["width"]), :3].astype(np.int16)
    return int(np.all(np.abs(region - rgb) <= tolerance, axis=2).sum())


def _non_white(image: np.ndarray, box: dict[str, float]) -> int:
    x, y = int(box["x"]), int(box["y"])
    region = image[y:y + int(box["height"]), x:x + int(box["width"]), :3]
    return int((region < 235).any(axis=2).sum())


# -- the test ---------------------------------------------------------------------------------------------

@pytest.fixture
def unpaused_drills(airflow_dags):
    """ftops's DAGs in the metadata database the api-server copies, the drill DAG unpaused (as `ftops stack` leaves it)."""
    set_paused("ftops_chaos_drill", False)
    yield
    set_paused("ftops_chaos_drill", True)


def test_a_browser_signs_in_and_sees_the_plan_history_chart(unpaused_drills, api_server, browser, tmp_path, pg_conn):
    page = f"{api_server.url}/ftops/jobs/topk"
    chart_box = {"x": 0, "y": 0, "width": VIEWPORT[0], "height": VIEWPORT[1]}

    # Refused first: Airflow's 401 with no content of the page, only the way to its login.
    browser.get(page)
    refused = browser.page_source
    assert "Sign in required" in refused and "Not authenticated" in refused
    assert not browser.find_elements(By.CSS_SELECTOR, "svg") and "Drills" not in refused
    assert "topk" not in browser.execute_script("return document.body.innerText")
    assert _colour_pixels(_screenshot(browser), chart_box, BLUE, tolerance=8) == 0

    # Signing in as a user does: follow the link to Airflow's login form, fill it, submit; it brings us back.
    _sign_in(browser, api_server)
    chart = _wait_css(browser, "#history svg")
    assert browser.current_url == page
    width, height, scale = browser.execute_script("return [window.innerWidth, window.innerHeight, window.devicePixelRatio]")
    assert width == VIEWPORT[0] and height > 600 and scale == 1

    shot = tmp_path / "plan-history.png"
    assert browser.save_screenshot(str(shot))
    print(f"screenshot of {page}: {shot}")
    image = np.asarray(Image.open(shot).convert("RGB"))
    assert image.shape[:2] == (height, width)  # the viewport, pixel for pixel

    box = chart.rect
    assert box["width"] == 640 and box["height"] == 220 and box["y"] + box["height"] <= height
    # The plan line and its two points are drawn in the chart's blue; the axes and labels are not blank either.
    assert _colour_pixels(image, box, BLUE) > 400
    assert _non_white(image, box) > 2000
    # Outside the chart (the left margin of the page) there is none of that blue: the check sees the chart.
    assert _colour_pixels(image, {"x": 0, "y": box["y"], "width": box["x"], "height": box["height"]}, BLUE) == 0
    # The topology below it, with the current plan's 8 replicated tasks filled green (circles of radius 8).
    topology = browser.execute_script(  # in the viewport's coordinates, once scrolled to
        "const svg = arguments[0]; svg.scrollIntoView({block: 'center'}); const r = svg.getBoundingClientRect();"
        "return {x: r.x, y: r.y, width: r.width, height: r.height};", _wait_css(browser, "#topology svg"))
    assert 0 <= topology["y"] and topology["y"] + topology["height"] <= height
    assert _colour_pixels(_screenshot(browser), topology, GREEN) > 8 * 150

    # The console acts, too (issue 35, item 3): the admin halts every experiment from the jobs page with a reason and
    # resumes them, in the browser (its form post carries Airflow's session cookie and the page's origin).
    from ft_core.store.history import HistoryStore, JobSpec

    store = HistoryStore(pg_conn)
    browser.get(f"{api_server.url}/ftops/")
    _wait_css(browser, "#halt-reason").send_keys("rack-b firmware upgrade")
    _wait_css(browser, "#halt").click()
    banner = _wait_css(browser, "#halted")
    assert "rack-b firmware upgrade" in banner.text and "admin (the Airflow UI)" in banner.text
    assert browser.current_url.rstrip("/") == f"{api_server.url}/ftops"
    assert store.halted()["reason"] == "rack-b firmware upgrade"
    _wait_css(browser, "#resume").click()
    _wait_css(browser, "#halt-form")
    assert not browser.find_elements(By.CSS_SELECTOR, "#halted") and store.halted() is None

    # Drill now (issue 36, item 3), as a user meets it: Browse -> Fault tolerance is Airflow's frame around the ftops
    # pages; on a runnable job's page the button creates the drill DAG's run for the job as the signed-in user, the
    # job page links the run, and the link moves Airflow itself (not the frame) to the run's page.
    store.register_job(JobSpec(name="alerts", workload="topk", deployment={"pipeline": "topk", "root": "/tmp/alerts"}))
    browser.get(f"{api_server.url}/plugin/fault-tolerance")
    browser.switch_to.frame(_wait_css(browser, "iframe"))
    _wait_css(browser, "#fleet-counts")
    browser.execute_script("location.assign('/ftops/jobs/alerts')")  # the frame follows the job's link
    _wait_css(browser, "#action-drill").click()
    _wait_css(browser, "#started #run-link").click()
    browser.switch_to.default_content()
    WebDriverWait(browser, 60).until(lambda b: "/dags/ftops_chaos_drill/runs/" in b.current_url)
    assert not browser.find_elements(By.CSS_SELECTOR, "iframe[src*='/dags/']")  # not Airflow inside its own frame
    run_id = unquote(browser.current_url.rsplit("/runs/", 1)[1])
    with sqlite3.connect(tmp_path / "airflow" / "airflow.db") as db:
        conf, by, user = db.execute("SELECT conf, triggered_by, triggering_user_name FROM dag_run WHERE dag_id = ? "
                                    "AND run_id = ?", ("ftops_chaos_drill", run_id)).fetchone()
    assert json.loads(conf) == {"job": "alerts"} and by == "UI" and user == "admin"
    WebDriverWait(browser, 60).until(lambda b: run_id in b.execute_script("return document.body.innerText"))

    # The run page's "Fault tolerance" tab (item 4: an external view on dag_run): the ftops page of this run, in
    # Airflow's frame; the queued run has recorded nothing yet, and says so.
    tab = WebDriverWait(browser, 60).until(lambda b: next(
        (a for a in b.find_elements(By.CSS_SELECTOR, "a") if a.text.strip() == "Fault tolerance"
         and "/plugin/" in (a.get_attribute("href") or "")), None))
    tab.click()
    frame = _wait_css(browser, "iframe")
    assert frame.get_attribute("src").endswith(f"/ftops/runs/ftops_chaos_drill/{quote(run_id, safe='')}")
    browser.switch_to.frame(frame)
    assert run_id in _wait_css(browser, "#nothing-yet").text
    browser.switch_to.default_content()


# -- looks and behaves like Airflow 3 (issue 36, item 5) ----------------------------------------------------

AXE = ROOT / "tests" / "browser" / "node_modules" / "axe-core" / "axe.min.js"  # scripts/browser-packages.sh
NARROW = 1024  # the console must be usable this wide


def _axe_violations(driver) -> list[dict]:
    """axe-core's violations on the page now (every rule of WCAG 2.x A and AA and best practice)."""
    assert AXE.exists(), f"{AXE} is missing: run scripts/browser-packages.sh (make test does)"
    if not driver.execute_script("return !!window.axe"):
        driver.execute_script(AXE.read_text())
    done = driver.execute_async_script(
        "const finish = arguments[arguments.length - 1];"
        "axe.run(document, {runOnly: {type: 'tag', values: ['wcag2a', 'wcag2aa', 'wcag21aa', 'best-practice']}})"
        ".then(r => finish({violations: r.violations})).catch(e => finish({error: String(e)}));")
    assert "error" not in done, done
    return done["violations"]


def _luminance(driver, what: str) -> float:
    """Relative luminance (0 black to 1 white) of the body's computed ``what`` (``color``, ``backgroundColor``), as
    the browser paints it (drawn on a canvas: computed colours may be oklch)."""
    r, g, b = driver.execute_script(
        "const c = document.createElement('canvas').getContext('2d');"
        "c.fillStyle = getComputedStyle(document.body)[arguments[0]]; c.fillRect(0, 0, 1, 1);"
        "return Array.from(c.getImageData(0, 0, 1, 1).data.slice(0, 3));", what)
    lin = [c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4 for c in (r / 255, g / 255, b / 255)]
    return 0.2126 * lin[0] + 0.7152 * lin[1] + 0.0722 * lin[2]


def _save_whole_page(driver, path: Path) -> None:
    """A PNG of the whole page, below the fold too (Chrome DevTools' captureBeyondViewport)."""
    import base64

    path.parent.mkdir(parents=True, exist_ok=True)
    height = driver.execute_script("return document.documentElement.scrollHeight")
    shot = driver.execute_cdp_cmd("Page.captureScreenshot", {"captureBeyondViewport": True, "clip": {
        "x": 0, "y": 0, "width": NARROW, "height": height, "scale": 1}})
    path.write_bytes(base64.b64decode(shot["data"]))


def test_the_console_follows_airflows_theme_fits_1024_px_and_has_no_serious_accessibility_violation(api_server,
                                                                                                    browser, pg_conn):
    """Every kind of console page (the jobs overview, a job, a drill report, a recovery run, a plan diff), light and
    dark as Airflow's theme says (its ``theme`` key in the origin's localStorage, changed live from another tab as
    Airflow's toggle does), 1024 px wide: nothing wider than the window (tables scroll inside themselves), axe-core
    finds no serious or critical violation, and the browser's console shows no error. ``FTOPS_SCREENSHOTS=DIR``
    keeps a screenshot of each (docs/images/ holds the committed ones)."""
    from ft_core.store.history import HistoryStore

    store = HistoryStore(pg_conn)
    drill = next(d["drill_id"] for d in store.drills("topk") if d["status"] == "passed")
    run = next(r["run_id"] for r in store.recovery_runs("topk") if r["status"] == "succeeded")
    pages = {"overview": "/ftops/", "job": "/ftops/jobs/topk", "drill": f"/ftops/jobs/topk/drills/{drill}",
             "recovery": f"/ftops/jobs/topk/recovery-runs/{run}", "diff": "/ftops/jobs/topk/diff?a=1&b=2"}
    keep = os.environ.get("FTOPS_SCREENSHOTS")
    browser.get(f"{api_server.url}/ftops/")
    _sign_in(browser, api_server)
    _wait_css(browser, "#fleet-counts")
    # the overview shows each job's state and its newest drill (issue 36's "Done when")
    from ft_core.fleet.job_state import STATES

    row = browser.find_element(By.XPATH, "//table[@id='fleet']//tr[td/a[text()='topk']]")
    cells = [td.text for td in row.find_elements(By.TAG_NAME, "td")]
    newest = store.drills("topk")[-1]
    assert cells[1] in STATES and cells[8].startswith(f"{newest['status']}, "), cells
    browser.set_window_size(NARROW, VIEWPORT[1])
    assert browser.execute_script("return window.innerWidth") == NARROW
    browser.get_log("browser")  # what the login pages logged is Airflow's, not the console's
    for theme in ("light", "dark"):
        browser.execute_script("localStorage.setItem('theme', arguments[0])", theme)
        for name, path in pages.items():
            browser.get(f"{api_server.url}{path}")
            _wait_css(browser, "main h1")
            assert browser.execute_script("return document.documentElement.classList.contains('dark')") == (theme == "dark")
            background, text = _luminance(browser, "backgroundColor"), _luminance(browser, "color")
            assert (background > 0.9 and text < 0.05) if theme == "light" else (background < 0.02 and text > 0.8), \
                (name, theme, background, text)
            clipped = browser.execute_script(  # a chart's text beyond its own box is cut off by it
                "return [...document.querySelectorAll('svg')].flatMap(svg => { const box = svg.getBoundingClientRect();"
                "  return [...svg.querySelectorAll('text')].filter(t => { const r = t.getBoundingClientRect();"
                "    return r.left < box.left - 0.5 || r.right > box.right + 0.5 || r.top < box.top - 0.5"
                "      || r.bottom > box.bottom + 0.5; }).map(t => t.textContent); })")
            assert not clipped, f"{name} ({theme}): chart text cut off: {clipped}"
            wide = browser.execute_script("return document.documentElement.scrollWidth")
            assert wide <= NARROW, f"{name} ({theme}) is {wide} px wide at {NARROW} px: cut off or scrolling sideways"
            serious = [f"{v['id']} ({v['impact']}): {v['help']}: {[n['target'] for n in v['nodes'][:3]]}"
                       for v in _axe_violations(browser) if v["impact"] in ("serious", "critical")]
            assert not serious, f"{name} ({theme}): {serious}"
            errors = [e["message"] for e in browser.get_log("browser") if e["level"] == "SEVERE"]
            assert not errors, f"{name} ({theme}): {errors}"
            if keep:
                _save_whole_page(browser, Path(keep) / f"console-{name}-{theme}.png")

    # Airflow's toggle in another tab of the same origin: the open page follows it at once, without a reload.
    console = browser.current_window_handle
    browser.switch_to.new_window("tab")
    browser.get(f"{api_server.url}/ftops/")
    browser.execute_script("localStorage.setItem('theme', 'light')")
    browser.switch_to.window(console)
    WebDriverWait(browser, 10).until(
        lambda b: not b.execute_script("return document.documentElement.classList.contains('dark')"))
    assert _luminance(browser, "backgroundColor") > 0.9


def test_an_open_job_page_redraws_its_last_hour_without_a_reload(api_server, browser, pg_conn):
    """Issue 36, item 2 ("live lag"): a job page left open shows the micro-batches recorded after it was loaded, within
    a refresh period (ui/templates REFRESH_S), without reloading the page (a mark set on the window survives); so does
    a drill that started after it was loaded (its experiments and faults redraw too)."""
    import time

    from ft_core.store.history import HistoryStore, JobSpec
    from ft_core.store.stream_progress import BatchProgress
    from ftops_provider.ui.templates import REFRESH_S

    store = HistoryStore(pg_conn)
    store.register_job(JobSpec(name="alerts", workload="topk", deployment={"pipeline": "topk", "root": "/tmp/alerts"}))

    def batch(i: int, end: float, lag_s: int) -> None:
        store.record_batch(BatchProgress(stream="ftops-alerts-primary", app_id="a", batch_id=i, batch_end=end,
                                         input_rows=500, watermark_ms=1_000_000, input_watermark_ms=1_000_000 + lag_s * 1000))

    now = time.time()
    for i in range(12):
        batch(i, now - 120 + 5 * i, 8)
    browser.get(f"{api_server.url}/ftops/jobs/alerts")
    _sign_in(browser, api_server)
    assert "primary: 8 s behind" in _wait_css(browser, "#live-now").text
    browser.execute_script("window.ftopsMark = 'loaded once'")
    browser.get_log("browser")  # the refusal before signing in is Airflow's 401, not the page's
    assert "No drill recorded for this job yet" in _wait_css(browser, "#activity").text
    batch(12, time.time(), 47)  # the job falls behind after the page was drawn, and a drill starts
    drill = store.start_drill("alerts", None, {"failure_domain": "rack-b"}, "manual__late")
    WebDriverWait(browser, 3 * REFRESH_S).until(  # read by script: the redraw replaces the element
        lambda b: "primary: 47 s behind" in b.execute_script("return document.getElementById('live-now').textContent"))
    assert browser.execute_script("return window.ftopsMark") == "loaded once"  # redrawn in place, not reloaded
    WebDriverWait(browser, 3 * REFRESH_S).until(
        lambda b: f"#{drill}" in b.execute_script("return document.getElementById('activity').textContent"))
    assert "rack-b" in _wait_css(browser, "#drill-rows").text
    # Its lag chart was drawn again by the charting library, and answers a hover near its right end (the newest
    # minute) with that minute's value: the tooltip names the stream and its 47 s.
    lag = _wait_css(browser, "#chart-lag .chart-canvas")
    WebDriverWait(browser, 10).until(lambda b: b.find_elements(By.CSS_SELECTOR, "#chart-lag .chart-canvas svg"))
    ActionChains(browser).move_to_element_with_offset(lag, lag.size["width"] // 2 - 30, 0).perform()
    WebDriverWait(browser, 10).until(lambda b: "primary" in lag.text and "47" in lag.text)
    assert not [e["message"] for e in browser.get_log("browser") if e["level"] == "SEVERE" and "/ftops/" in e["message"]]
