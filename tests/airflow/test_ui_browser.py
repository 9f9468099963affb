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
from selenium.webdriver.common.by import By
from selenium.webdriver.support import expected_conditions as EC
from selenium.webdriver.support.ui import WebDriverWait

from ftops_provider.local_airflow import LocalAirflow
from ftops_provider.ui.svg import BLUE, GREEN
from spark_jobs.runtime.waiting import wait_for
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
    _wait_css(browser, "#login").click()
    _wait_css(browser, "input[name=username]").send_keys("admin")
    _wait_css(browser, "input[name=password]").send_keys(api_server.admin_password())
    _wait_css(browser, "button[type=submit]").click()
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
    topology = _wait_css(browser, "#topology svg").rect
    assert topology["y"] + topology["height"] <= height
    assert _colour_pixels(image, topology, GREEN) > 8 * 150

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
