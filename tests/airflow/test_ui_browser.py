"""A real browser on the "Fault tolerance" page: Debian's chromium, driven by chromedriver through the
W3C WebDriver HTTP protocol (plain urllib: no selenium in the lock), against a real Airflow api-server
serving the plugin, with the history in the real PostgreSQL store.

A user's path: open the job's page, be refused (401, no content, a link to Airflow's login), sign in
with Airflow's own login form, land back on the page, and see the charts. The screenshot is decoded
here (PNG, stdlib zlib and numpy) and checked: its size is the viewport's and the plan-history chart's
region holds the chart's own blue, where the refused page had none.
"""

from __future__ import annotations

import base64
import json
import os
import shutil
import signal
import socket
import sqlite3
import struct
import subprocess
import sys
import time
import urllib.error
import urllib.request
import zlib
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from ftops_provider.local_airflow import LocalAirflow
from ftops_provider.ui.svg import BLUE, GREEN
from tests.airflow.test_plugin_ui import seed_history
from tests.store_fixtures import pg_conn, pg_server  # noqa: F401 - fixtures

VIEWPORT = (1280, 1000)  # the window; the page's viewport is its width and what the window's frame leaves
# No network here (and none wanted): every background service of chromium that would phone home is off.
CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                  "--disable-background-networking", "--disable-component-update", "--disable-sync",
                  "--disable-dev-shm-usage", "--force-device-scale-factor=1", "--hide-scrollbars"]
W3C_ELEMENT = "element-6066-11e4-a52e-4f735466cecf"


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
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            pytest.fail(f"{proc.args[:4]} exited with {proc.returncode}: {log.read_text(errors='replace')[-2000:]}")
        try:
            with urllib.request.urlopen(url, timeout=5) as resp:
                if resp.status == 200:
                    return
        except (urllib.error.URLError, OSError):
            pass
        time.sleep(0.5)
    pytest.fail(f"{url} did not answer within {timeout_s:.0f} s: {log.read_text(errors='replace')[-2000:]}")


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


# -- a W3C WebDriver client (chromedriver's HTTP API) ---------------------------------------------------

@dataclass
class Browser:
    base: str  # http://127.0.0.1:<chromedriver port>/session/<id>

    def call(self, method: str, path: str, body: dict[str, Any] | None = None) -> Any:
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(self.base + path, data=data, method=method,
                                     headers={"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(req, timeout=60) as resp:
                return json.load(resp)["value"]
        except urllib.error.HTTPError as exc:
            raise AssertionError(f"WebDriver {method} {path}: {exc.code} {exc.read()[:500]!r}") from None

    def open(self, url: str) -> None:
        self.call("POST", "/url", {"url": url})

    def url(self) -> str:
        return self.call("GET", "/url")

    def source(self) -> str:
        return self.call("GET", "/source")

    def find(self, css: str) -> list[str]:
        return [e[W3C_ELEMENT] for e in self.call("POST", "/elements", {"using": "css selector", "value": css})]

    def wait_for(self, css: str, timeout_s: float = 30) -> str:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            found = self.find(css)
            if found:
                return found[0]
            time.sleep(0.25)
        raise AssertionError(f"no {css!r} on {self.url()} after {timeout_s:.0f} s: {self.source()[:1000]}")

    def click(self, element: str) -> None:
        self.call("POST", f"/element/{element}/click", {})

    def type(self, element: str, text: str) -> None:
        self.call("POST", f"/element/{element}/value", {"text": text})

    def rect(self, element: str) -> dict[str, float]:
        return self.call("GET", f"/element/{element}/rect")

    def run(self, script: str) -> Any:
        return self.call("POST", "/execute/sync", {"script": script, "args": []})

    def screenshot(self) -> bytes:
        return base64.b64decode(self.call("GET", "/screenshot"))


@pytest.fixture
def browser(tmp_path):
    driver_bin, chromium_bin = shutil.which("chromedriver"), shutil.which("chromium")
    assert driver_bin and chromium_bin, "chromium and chromium-driver are installed by scripts/system-packages.sh"
    port = _free_port()
    log = tmp_path / "chromedriver.log"
    with _process([driver_bin, f"--port={port}"], log) as proc:
        root = f"http://127.0.0.1:{port}"
        _wait_http(f"{root}/status", proc, log, timeout_s=30)
        args = CHROMIUM_FLAGS + [f"--user-data-dir={tmp_path / 'chromium-profile'}", f"--window-size={VIEWPORT[0]},{VIEWPORT[1]}"]
        caps = {"capabilities": {"alwaysMatch": {"browserName": "chrome", "goog:chromeOptions": {"binary": chromium_bin,
                                                                                                 "args": args}}}}
        session = Browser(root).call("POST", "/session", caps)["sessionId"]
        browser = Browser(f"{root}/session/{session}")
        try:
            yield browser
        finally:
            browser.call("DELETE", "")


# -- PNG, decoded for real --------------------------------------------------------------------------------

def decode_png(data: bytes) -> np.ndarray:
    """An 8-bit RGB or RGBA, non-interlaced PNG (what chromium writes) as a (height, width, channels) array."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    pos, idat, header = 8, [], None
    while pos < len(data):
        (length,), kind = struct.unpack(">I", data[pos:pos + 4]), data[pos + 4:pos + 8]
        body = data[pos + 8:pos + 8 + length]
        assert zlib.crc32(kind + body) == struct.unpack(">I", data[pos + 8 + length:pos + 12 + length])[0], kind
        pos += 12 + length
        if kind == b"IHDR":
            header = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            idat.append(body)
        elif kind == b"IEND":
            break
    width, height, depth, color_type, _, _, interlace = header
    assert depth == 8 and color_type in (2, 6) and interlace == 0, header
    channels = 3 if color_type == 2 else 4
    raw = np.frombuffer(zlib.decompress(b"".join(idat)), dtype=np.uint8).reshape(height, 1 + width * channels)
    rows = np.zeros((height, width * channels), dtype=np.uint8)
    previous = np.zeros(width * channels, dtype=np.uint8)
    for y in range(height):
        rows[y] = previous = _unfilter(int(raw[y, 0]), raw[y, 1:], previous, channels)
    return rows.reshape(height, width, channels)


def _unfilter(kind: int, line: np.ndarray, up: np.ndarray, bpp: int) -> np.ndarray:
    """Undo one scanline's filter (PNG spec 9.2); uint8 arithmetic wraps modulo 256 as the spec asks."""
    if kind == 0:
        return line
    if kind == 1:
        return np.cumsum(line.reshape(-1, bpp), axis=0, dtype=np.uint8).reshape(-1)
    if kind == 2:
        return line + up
    out, filt, above = bytearray(line.tobytes()), line.tobytes(), up.tobytes()
    for i in range(len(out)):
        a = out[i - bpp] if i >= bpp else 0
        b, c = above[i], above[i - bpp] if i >= bpp else 0
        if kind == 3:
            pred = (a + b) >> 1
        else:  # 4: Paeth
            p = a + b - c
            pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
            pred = a if pa <= pb and pa <= pc else b if pb <= pc else c
        out[i] = (filt[i] + pred) & 0xFF
    return np.frombuffer(bytes(out), dtype=np.uint8)


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

def test_a_browser_signs_in_and_sees_the_plan_history_chart(api_server, browser, tmp_path):
    page = f"{api_server.url}/ftops/jobs/topk"
    chart_box = {"x": 0, "y": 0, "width": VIEWPORT[0], "height": VIEWPORT[1]}

    # Refused first: Airflow's 401 with no content of the page, only the way to its login.
    browser.open(page)
    refused = browser.source()
    assert "Sign in required" in refused and "Not authenticated" in refused
    assert not browser.find("svg") and "Drills" not in refused and "topk" not in browser.run("return document.body.innerText")
    assert _colour_pixels(decode_png(browser.screenshot()), chart_box, BLUE, tolerance=8) == 0

    # Signing in as a user does: follow the link to Airflow's login form, fill it, submit; it brings us back.
    browser.click(browser.wait_for("#login"))
    browser.type(browser.wait_for("input[name=username]"), "admin")
    browser.type(browser.wait_for("input[name=password]"), api_server.admin_password())
    browser.click(browser.wait_for("button[type=submit]"))
    chart = browser.wait_for("#history svg")
    assert browser.url() == page
    width, height, scale = browser.run("return [window.innerWidth, window.innerHeight, window.devicePixelRatio]")
    assert width == VIEWPORT[0] and height > 600 and scale == 1

    png = browser.screenshot()
    shot = tmp_path / "plan-history.png"
    shot.write_bytes(png)
    print(f"screenshot of {page}: {shot}")
    image = decode_png(png)
    assert image.shape[:2] == (height, width)  # the viewport, pixel for pixel

    box = browser.rect(chart)
    assert box["width"] == 640 and box["height"] == 220 and box["y"] + box["height"] <= height
    # The plan line and its two points are drawn in the chart's blue; the axes and labels are not blank either.
    assert _colour_pixels(image, box, BLUE) > 400
    assert _non_white(image, box) > 2000
    # Outside the chart (the left margin of the page) there is none of that blue: the check sees the chart.
    assert _colour_pixels(image, {"x": 0, "y": box["y"], "width": box["x"], "height": box["height"]}, BLUE) == 0
    # The topology below it, with the current plan's 8 replicated tasks filled green (circles of radius 8).
    topology = browser.rect(browser.wait_for("#topology svg"))
    assert topology["y"] + topology["height"] <= height
    assert _colour_pixels(image, topology, GREEN) > 8 * 150
