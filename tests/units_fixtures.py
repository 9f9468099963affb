"""A small recovery-units deployment on a real local cluster, shared by the units and recovery-DAG tests:
application A pinned to failure domain rack-a, B to rack-b, a steady baseline; and a wait until units stop
making progress (drained). The smart-city pipeline (A: O1[0], O2[0]; B: the join O3[0]) by default, or the
example pipeline a user would bring (``EXAMPLE``: A: enrich[0], peaks[0]; B: the two alerts queries)."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from pathlib import Path

from spark_jobs.cluster.standalone import ClusterConfig, add_worker, cluster_down, cluster_up
from spark_jobs.recovery_units.deployment import load
from spark_jobs.recovery_units.runtime import (
    DeployConfig,
    create_deployment,
    start_app,
    stop_apps,
    wait_app_placed,
    wait_app_running,
)
from spark_jobs.runtime.waiting import wait_for

PARAMS = ["p1=1", "p2=1", "rate=30", "window_s=4", "slide_s=2", "watermark_s=1", "n_users=60", "n_segments=8",
          "incident_interval_s=0.5", "report_spread_s=1", "jam_duration_s=6"]
PLACEMENT = {"A": ["O1[0]", "O2[0]"], "B": ["O3[0]"]}
QUERIES = ("O1[0]", "O2[0]", "O3[0]")


class Example:
    """examples/sensor_alerts.py as units: a stream-static join and a windowed aggregation in rack-a, the
    two output tasks (one query per site group, each fed by every ``peaks`` task) in rack-b."""

    pipeline = str(Path(__file__).resolve().parent.parent / "examples" / "sensor_alerts.py")
    params = ["sensors_p=1", "sites_p=2", "rate=40", "window_s=4", "watermark_s=1", "spike_prob=0.05"]
    placement = {"A": ["enrich[0]", "peaks[0]"], "B": ["alerts[0]", "alerts[1]"]}
    queries = ("alerts[0]", "alerts[1]")


def wait(cond, what: str | Callable[[], str], timeout_s: float = 300.0) -> None:
    wait_for(cond, timeout_s=timeout_s, interval_s=1.0, what=what)


def cluster_config(state: Path, base: int, network: str = "loopback") -> ClusterConfig:
    return ClusterConfig(state_dir=state, primary_domains=(("rack-a", 1),), standby_workers=0, worker_timeout_s=5,
                         primary_port=base + 77, primary_ui=base + 90, standby_port=base + 78, standby_ui=base + 91,
                         worker_port_base=base + 100, worker_ui_base=base + 200, network=network)


def start_cluster(state: Path, base: int, network: str = "loopback") -> None:
    cluster_up(cluster_config(state, base, network))


def stop_everything(root: Path, state: Path) -> None:
    if (root / "deployment.json").exists():
        stop_apps(root, all_apps=True, timeout_s=20)
    cluster_down(state)


def deploy_pinned(tmp: Path, state: Path, base: int, pipeline: str = "smartcity", params: list[str] = PARAMS,
                  placement: dict[str, list[str]] = PLACEMENT) -> Path:
    """A pinned to rack-a (the only worker when it starts), then a rack-b worker and B."""
    root = tmp / "units"
    placement_file = tmp / "placement.json"
    placement_file.write_text(json.dumps({"apps": placement}))
    create_deployment(DeployConfig(root=root, pipeline=pipeline, params=params, placement=placement_file,
                                   cluster_state=state, trigger_s=2.0, backlog_s=6, ui_port_base=base + 300))
    start_app(root, "A", placement["A"])
    assert wait_app_placed(root, "A", 300) == "rack-a"
    add_worker(state, "rack-b", port_base=base + 110, ui_base=base + 210)
    start_app(root, "B", placement["B"])
    assert wait_app_placed(root, "B", 300) == "rack-b"
    for app in placement:
        wait_app_running(root, app, 300)
    return root


def recent_lag_samples(root: Path, query: str, seconds: float = 30.0) -> int:
    from spark_jobs.recovery_units.latency import InputArrivals, unit_marks

    dep = load(root)
    marks = unit_marks(root, query, InputArrivals(dep.workload, Path(dep.input)))
    return sum(1 for t, _ in marks if t >= time.time() - seconds)


def wait_steady(root: Path, queries: tuple[str, ...] = QUERIES, seconds: float = 60.0) -> None:
    """Every query has a normal-latency baseline: five micro-batches with a watermark in the last ``seconds``.
    A minute, not less: with the other test worker's Spark jobs on the same two cores a 2-s trigger's batches
    come 6-10 s apart (CI once timed out at five in 30 s)."""
    def seen() -> str:
        return "a steady baseline (micro-batches with a watermark in the last %.0f s: %s)" % (
            seconds, ", ".join(f"{q} {recent_lag_samples(root, q, seconds)}" for q in queries))

    wait(lambda: all(recent_lag_samples(root, q, seconds) >= 5 for q in queries), seen, timeout_s=480.0)


def arrivals(state: Path, failure_time: float, delays: tuple[float, ...], base: int) -> threading.Thread:
    """Replacement nodes (one-core rack-c workers) ``delays`` seconds after the failure, in a thread."""
    def run() -> None:
        for i, delay in enumerate(delays):
            time.sleep(max(0.0, failure_time + delay - time.time()))
            add_worker(state, "rack-c", port_base=base + 120 + i, ui_base=base + 220 + i)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread


def wait_drained(root: Path, units: list[str], quiet_s: float = 12.0, timeout_s: float = 300.0) -> None:
    """Until no unit's watermark has moved for ``quiet_s`` (several triggers) after the input stopped."""
    from spark_jobs.recovery_units.verification import closed_until

    last, since = None, time.monotonic()
    deadline = since + timeout_s
    while time.monotonic() - since < quiet_s:
        assert time.monotonic() < deadline, "the units did not drain"
        marks = {u: closed_until(root, u) for u in units}
        if marks != last:
            last, since = marks, time.monotonic()
        time.sleep(1.0)
