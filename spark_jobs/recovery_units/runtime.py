"""Deploy, start, stop, fail and inspect recovery units: the primitives the CLI and Airflow call.

- :func:`deploy`: check the pipeline's shape and derive its tables' layouts (:mod:`.shapes`), write the
  initial input and start the live feed (a pipeline with a sample input), start one application per
  placement entry (a "node"), wait until every unit's query runs.
- :func:`start_units`: restart units from their own checkpoints in a new application, on whatever
  capacity is free (the master gives it a free core; it waits in the master's queue otherwise).
- :func:`stop_apps`: graceful stop (SIGTERM: the drivers stop their queries between micro-batches).
- :func:`kill_domain`: a correlated failure: SIGKILL the failure domain's workers with their executors
  *and* the drivers of the applications whose executors ran there (a node failure takes the whole node);
  recorded with the units it took. :func:`kill_apps` does the same for named applications (local mode).
- :func:`units_status`: which units run where, their progress, lag and measured cost.

Every wait polls real state (status files the drivers write, the Spark master's and workers' JSON) against
a generous deadline; nothing depends on how fast the machine is.
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
import subprocess
import sys
from datetime import datetime
from pathlib import Path

from pydantic import BaseModel

from ft_core.errors import ExternalError, InputError
from ft_core.input.documents import read_document
from spark_jobs.cluster.worker_ui import executors_by_worker
from spark_jobs.recovery_units.deployment import (
    AppRecord,
    Deployment,
    Failure,
    app_dir,
    load,
    locked,
    now,
    read_progress,
    read_status,
)
from spark_jobs.pipeline.definition import Workload
from spark_jobs.pipeline.loading import load_workload
from spark_jobs.pipeline.units import UnitTopology
from spark_jobs.runtime.processes import owns_group, same_process, signal_group, signal_own_group, start_time, stop_group
from spark_jobs.runtime.waiting import wait_for, wait_while

_APP_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")


class UnitsError(ExternalError):
    """A unit application did not reach the expected state (it exited, or a deadline passed)."""


class Placement(BaseModel):
    """``{"apps": {"node-1": ["O1[0]", "O2[0]"], "node-2": ["O3[0]"]}}``: units grouped into applications."""

    apps: dict[str, list[str]]


def load_placement(path: Path, topology: UnitTopology) -> Placement:
    """Read and check a placement file (:func:`check_placement`)."""
    doc = read_document(path, "--placement")
    return check_placement(doc.get("apps") if isinstance(doc, dict) else None, topology)


def check_placement(apps, topology: UnitTopology) -> Placement:
    """Check ``{"<app>": ["<unit>", ...]}``: known units, each in exactly one application, every unit placed."""
    if not isinstance(apps, dict) or not apps:
        raise InputError("--placement: expected {\"apps\": {\"<app>\": [\"<unit>\", ...]}} with at least one application")
    seen: dict[str, str] = {}
    for name, units in apps.items():
        check_app_name(name)
        if not isinstance(units, list) or not units or not all(isinstance(u, str) for u in units):
            raise InputError(f"--placement: apps.{name}: expected a non-empty list of unit ids")
        topology.check(units, f"--placement apps.{name}")
        for u in units:
            if u in seen:
                raise InputError(f"--placement: unit {u!r} is in two applications ({seen[u]} and {name})")
            seen[u] = name
    missing = [u for u in topology.unit_ids() if u not in seen]
    if missing:
        raise InputError(f"--placement: unit {missing[0]!r} is in no application (units: {', '.join(topology.unit_ids())})")
    return Placement(apps={n: topology.check(us, f"apps.{n}") for n, us in apps.items()})


def check_app_name(name: str) -> None:
    if not isinstance(name, str) or not _APP_NAME.match(name):
        raise InputError(f"application name {name!r}: use letters, digits, '-', '_' or '.' (at most 64)")


class DeployConfig(BaseModel):
    """``pipeline``: a ``--pipeline`` reference or a sample's name. ``feed`` and ``backlog_s`` default to the
    seeded live input and 10 s of backlog for a pipeline with a sample input, none otherwise (its producers
    feed ``input``)."""

    root: Path
    pipeline: str = "smartcity"
    params: list[str] = []
    placement: Path
    input: Path | None = None
    master: str | None = None
    master_ui: str | None = None
    cluster_state: Path | None = None
    trigger_s: float = 2.0
    backlog_s: float | None = None
    feed: bool | None = None
    feed_speedup: float = 1.0
    ui_port_base: int = 23400
    timeout_s: float = 300.0


def deploy(config: DeployConfig) -> Deployment:
    """Validate everything, then start the feed and the applications; waits until every unit runs."""
    placement = create_deployment(config)
    root = config.root.resolve()
    try:
        for name, units in placement.apps.items():
            start_app(root, name, units)
        for name in placement.apps:
            wait_app_running(root, name, config.timeout_s)
    except BaseException:
        stop_apps(root, all_apps=True)
        raise
    return load(root)


def create_deployment(config: DeployConfig) -> Placement:
    """Validate the configuration, the placement and the pipeline's shape, write the deployment document and
    the initial input, start the feed; start no application (:func:`deploy` starts them all, a benchmark may
    start them one by one to pin them to failure domains). Returns the validated placement."""
    from spark_jobs.recovery_units.shapes import analyse

    workload = load_workload(config.pipeline, config.params)
    placement = load_placement(config.placement, UnitTopology(workload))
    if config.trigger_s <= 0:
        raise InputError(f"--trigger-s: must be positive, got {config.trigger_s:g}")
    feed = workload.sample is not None if config.feed is None else config.feed
    backlog_s = (10.0 if workload.sample is not None else 0.0) if config.backlog_s is None else config.backlog_s
    if feed or backlog_s > 0:
        workload.require_sample("--backlog-s and the live feed (--no-feed turns it off)")
    root = config.root.resolve()
    if (root / "deployment.json").exists() and load(root).running_apps():
        raise InputError(f"--deployment-dir: {root} has running units; run `ftops units stop --all` first")
    master, master_ui, cluster_state = _master(config)
    root.mkdir(parents=True, exist_ok=True)
    input_dir = (config.input or root / "input").resolve()
    _write_backlog(workload, input_dir, backlog_s)
    layouts = analyse(workload, input_dir, root)
    dep = Deployment(root=str(root), pipeline=workload.ref, params=workload.params_dict(), input=str(input_dir),
                     master=master, master_ui=master_ui, cluster_state=str(cluster_state) if cluster_state else None, layouts=layouts,
                     trigger_s=config.trigger_s, ui_port_base=config.ui_port_base, feed_speedup=config.feed_speedup)
    dep.save()
    if feed:
        start_feed(root)
    return placement


def _master(config: DeployConfig) -> tuple[str, str | None, Path | None]:
    """The master URL, its web UI (None: unknown here, the Airflow connection's) and the cluster state."""
    ui = config.master_ui.rstrip("/") if config.master_ui else None
    if config.cluster_state is not None:
        from spark_jobs.cluster.standalone import require_state

        state = require_state(config.cluster_state)
        return config.master or state.master_url("primary"), ui or state.master_ui("primary"), Path(state.state_dir)
    if not config.master:
        raise InputError("--master or --state-dir: say where the units run (a Spark master URL or a cluster state)")
    return config.master, ui, None


def _write_backlog(workload: Workload, input_dir: Path, seconds: float) -> None:
    from spark_jobs.pipeline.sample_input import existing_files, write_seconds, write_tables

    if workload.sample is None:
        return
    write_tables(workload, input_dir)  # static tables, before anything reads them
    if seconds > 0 and existing_files(workload, input_dir) == 0:
        write_seconds(workload, input_dir, seconds)


def start_feed(root: Path) -> int:
    """Start the live input generator in its own session; recorded in the deployment."""
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    with (Path(root) / "feed.out").open("a") as out:
        proc = subprocess.Popen([sys.executable, "-m", "spark_jobs.recovery_units.feed", "--dir", str(root)],
                                stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=env,
                                start_new_session=True, cwd=root)
    with locked(root) as dep:
        dep.feed_pid, dep.feed_started = proc.pid, start_time(proc.pid)
    return proc.pid


def signal_feed(root: Path, sig: int) -> None:
    """Pause (SIGSTOP), resume (SIGCONT) or stop (SIGTERM) the feed, if it runs."""
    dep = load(root)
    if dep.feed_pid and same_process(dep.feed_pid, dep.feed_started):
        signal_group(dep.feed_pid, sig)


def input_file_counts(root: Path) -> dict[str, int]:
    """How many data files each file source's folder holds (the input's frontier)."""
    from spark_jobs.pipeline.input_files import data_files
    from spark_jobs.pipeline.sources import FileSource

    dep = load(root)
    return {s.name: len(data_files(s.folder(dep.input))) for s in dep.workload.stream_sources() if isinstance(s, FileSource)}


def start_app(root: Path, name: str, units: list[str], stage: int | None = None) -> AppRecord:
    """Start an application running ``units`` from their checkpoints (returns at once)."""
    root = Path(root).resolve()
    check_app_name(name)
    with locked(root) as dep:
        units = dep.units.check(list(units), "--units")
        if not units:
            raise InputError("--units: name at least one unit")
        if name in dep.apps:
            raise InputError(f"--app: application name {name!r} was used before in this deployment; choose a new one")
        running = dep.unit_apps()
        busy = [u for u in units if u in running]
        if busy:
            raise InputError(f"--units: unit {busy[0]!r} already runs in application {running[busy[0]]!r}")
        record = _spawn_app(dep, name, units, stage)
        dep.apps[name] = record
    if dep.cluster_state:
        from spark_jobs.cluster.standalone import register_driver

        register_driver(Path(dep.cluster_state), f"units-{name}", record.pid, "primary", record.log)
    return record


def _spawn_app(dep: Deployment, name: str, units: list[str], stage: int | None) -> AppRecord:
    from spark_jobs.cluster.standalone import spark_env
    from spark_jobs.runtime.driver_address import driver_env

    folder = app_dir(dep.root, name)
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "status.json").unlink(missing_ok=True)
    log = folder / "driver.log"
    ui_port = dep.next_ui_port()
    env = driver_env(spark_env({"PYSPARK_PYTHON": sys.executable, "PYSPARK_DRIVER_PYTHON": sys.executable,
                                "PYTHONUNBUFFERED": "1"}))
    env.pop("SPARK_NO_DAEMONIZE", None)
    gateway = _gateway(dep)
    if gateway:  # on a namespace network the executors call the driver back at this machine's bridge address
        env["SPARK_LOCAL_IP"] = gateway
    cmd = [sys.executable, "-m", "spark_jobs.recovery_units.app", "--dir", dep.root, "--app", name,
           "--units", ",".join(units), "--ui-port", str(ui_port)]
    with log.open("a") as out:
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=env,
                                start_new_session=True, cwd=dep.root)
    return AppRecord(name=name, units=units, pid=proc.pid, log=str(log), started_at=now(), ui_port=ui_port, stage=stage,
                     process_started=start_time(proc.pid))


def _gateway(dep: Deployment) -> str | None:
    """Where executors call this machine's drivers back (:meth:`ClusterState.driver_host`; None on loopback)."""
    from spark_jobs.cluster.standalone import ClusterState

    state = ClusterState.load(Path(dep.cluster_state)) if dep.cluster_state else None
    return state.driver_host() if state else None


def start_units(root: Path, units: list[str], app: str, wait: bool = True, timeout_s: float = 300.0,
                stage: int | None = None) -> AppRecord:
    """Restart ``units`` from their own checkpoints in a new application ``app``; optionally wait
    until their queries run."""
    record = start_app(root, app, units, stage)
    if wait:
        wait_app_running(root, app, timeout_s)
    return record


def wait_app_running(root: Path, app: str, timeout_s: float) -> dict:
    """Poll the application's status file until every unit's query is active (error if it exits)."""
    def running() -> dict | None:
        record = load(root).apps[app]
        status = read_status(root, app)
        if status and not status.get("stopped") and all(u.get("active") for u in status["units"].values()):
            return status
        if not record.alive():
            raise UnitsError(f"application {app} exited while starting; last lines of {record.log}:\n{_tail(record.log)}")
        return None

    return wait_for(running, timeout_s=timeout_s, error=UnitsError,
                    what=f"application {app}'s units to run; see {load(root).apps[app].log}")


def _tail(path: str, lines: int = 8) -> str:
    try:
        return "\n".join(Path(path).read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return "(no log)"


def stop_apps(root: Path, apps: list[str] | None = None, all_apps: bool = False, timeout_s: float = 60.0) -> list[str]:
    """Stop applications gracefully (SIGTERM to the driver, then its process group); with ``all_apps``
    also the feed. Returns the names stopped."""
    dep = load(root)
    if apps:
        unknown = [a for a in apps if a not in dep.apps]
        if unknown:
            raise InputError(f"--app: unknown application {unknown[0]!r} (known: {', '.join(dep.apps) or 'none'})")
    targets = [a for a in dep.running_apps() if all_apps or (apps and a.name in apps)]
    for a in targets:
        with contextlib.suppress(ProcessLookupError, PermissionError):  # the driver alone: it stops its queries
            os.kill(a.pid, signal.SIGTERM)
    wait_while(lambda: any(a.alive() for a in targets), timeout_s=timeout_s, interval_s=0.3)
    for a in targets:
        if owns_group(a.pid, a.process_started):  # what is left of its group, never another's
            stop_group(a.pid)
    if all_apps:
        signal_feed(root, signal.SIGCONT)
        signal_feed(root, signal.SIGTERM)
    with locked(root) as dep:
        for a in targets:
            dep.apps[a.name].stopped_at = dep.apps[a.name].stopped_at or now()
        if all_apps:
            for a in dep.apps.values():  # applications that had died on their own are stopped too
                a.stopped_at = a.stopped_at or now()
    return [a.name for a in targets]


def kill_apps(root: Path, apps: list[str], domain: str | None = None, workers: list[str] | None = None,
              survivors: list[str] | None = None, failed: list[str] | None = None) -> Failure:
    """A node failure of ``apps``: SIGKILL each driver's process group; recorded as a failure."""
    dep = load(root)
    unknown = [a for a in apps if a not in dep.apps]
    if unknown:
        raise InputError(f"--app: unknown application {unknown[0]!r} (known: {', '.join(dep.apps) or 'none'})")
    t = now()
    for a in apps:
        signal_own_group(dep.apps[a].pid, dep.apps[a].process_started, signal.SIGKILL)
        dep.apps[a].alive()  # reaps it
    units = [u for a in apps for u in dep.apps[a].units if dep.apps[a].stopped_at is None]
    failure = Failure(time=t, domain=domain, apps=list(apps), units=dep.units.check(units, "failed units"),
                      workers=workers or [], survivor_workers=survivors if survivors is not None else _alive_worker_ids(dep),
                      failed_workers=failed or [])
    with locked(root) as dep:
        for a in apps:
            dep.apps[a].killed = True
            dep.apps[a].stopped_at = dep.apps[a].stopped_at or t
        dep.failures.append(failure)
    return failure


def current_failure(root: Path) -> Failure | None:
    """The failure a recovery should handle now: the last recorded one while some of its units are still
    down; otherwise applications whose drivers died on their own, recorded now as a new failure (None when
    every placed unit runs)."""
    dep = load(root)
    running = dep.unit_apps()
    if dep.failures and any(u not in running for u in dep.failures[-1].units):
        return dep.failures[-1]
    dead = [a.name for a in dep.apps.values() if a.stopped_at is None and not a.alive()]
    if not dead:
        return None
    return kill_apps(root, dead)


def kill_domain(root: Path, domain: str, fault: str = "host-down") -> Failure:
    """A correlated failure of a failure domain: its workers (with their executors) and the drivers of the
    applications whose executors ran there. ``fault="partition"`` (a namespace network) cuts the domain's
    hosts off instead, and stops those applications' drivers: the drivers run on this machine and would
    survive the cut, but their units restart elsewhere, so the cut-off applications are fenced (stopped)
    to keep every unit running exactly once, as a cluster manager fences a node it lost."""
    from spark_jobs.cluster.standalone import kill_domain as kill_workers
    from spark_jobs.cluster.standalone import partition_domain

    dep = load(root)
    if not dep.cluster_state:
        raise InputError("kill --domain: this deployment runs without a cluster state (use --app)")
    if fault not in ("host-down", "partition"):
        raise InputError(f"--fault: host-down or partition, got {fault!r}")
    on_domain = [a for a, d in app_domains(root).items() if d == domain]
    victims = (partition_domain if fault == "partition" else kill_workers)(Path(dep.cluster_state), domain)
    killed = {(v.host, v.port) for v in victims}
    listed = _alive_worker_ids(dep, with_ports=True)  # the failed ones too, until the master's worker timeout
    return kill_apps(root, on_domain, domain=domain, workers=[v.name for v in victims],
                     survivors=[w for w, at in listed if at not in killed], failed=[w for w, at in listed if at in killed])


def _alive_worker_ids(dep: Deployment, with_ports: bool = False) -> list:
    """Ids (and addresses) of the workers the primary master lists ALIVE (empty without a cluster state).
    Killed workers stay ALIVE until the master's worker timeout, so callers filter them by (host, port)."""
    from spark_jobs.cluster.master_room import alive_workers
    from spark_jobs.cluster.standalone import ClusterError, master_json, require_state

    if not dep.cluster_state:
        return []
    try:
        alive = alive_workers(master_json(require_state(Path(dep.cluster_state)).master_ui("primary")))
    except ClusterError:
        return []
    return [(w["id"], (w["host"], w["port"])) for w in alive] if with_ports else [w["id"] for w in alive]


def app_domains(root: Path) -> dict[str, str | None]:
    """The failure domain of each running application: that of the worker hosting its executor."""
    from spark_jobs.cluster.standalone import require_state

    dep = load(root)
    apps = {a.name: (read_status(root, a.name) or {}).get("app_id") for a in dep.running_apps()}
    out: dict[str, str | None] = dict.fromkeys(apps)
    if not dep.cluster_state:
        return out
    state = require_state(Path(dep.cluster_state))
    for worker, executors in executors_by_worker(state.master_ui("primary"), state.workers("primary")):
        hosted = {e.get("appid") for e in executors}
        for name, app_id in apps.items():
            if app_id in hosted:
                out[name] = worker.domain
    return out


def wait_app_placed(root: Path, app: str, timeout_s: float) -> str:
    """Poll the workers until ``app`` has an executor on one; returns that worker's domain."""
    return wait_for(lambda: app_domains(root).get(app), timeout_s=timeout_s, error=UnitsError,
                    what=f"an executor of application {app} (no free core?)")


def epoch_ms(iso: str | None) -> int | None:
    if not iso:
        return None
    return int(datetime.fromisoformat(iso.replace("Z", "+00:00")).timestamp() * 1000)


def epoch_s(iso: str | None) -> float | None:
    ms = epoch_ms(iso)
    return None if ms is None else ms / 1000


def measured_cost(root: Path, floor: float = 0.01) -> dict[str, float]:
    """Per unit, CPU seconds of its tasks over its application's uptime (a fraction of a one-core node),
    from the latest status of the application that ran it; units never measured are left out."""
    dep = load(root)
    out: dict[str, float] = {}
    for a in sorted(dep.apps.values(), key=lambda r: r.started_at):
        status = read_status(root, a.name)
        if not status:
            continue
        uptime = max(1e-9, status["updated_at"] - status["started_at"])
        for unit, s in status["units"].items():
            if s.get("cpu_s") is not None:
                out[unit] = round(min(1.0, max(floor, s["cpu_s"] / uptime)), 4)
    return out


def units_status(root: Path) -> dict:
    """Per unit: the application holding it (if any), whether it runs, its last batch, watermark, input
    lag (input files not yet covered, for source units) and measured cost."""
    dep = load(root)
    running = dep.unit_apps()
    domains = app_domains(root) if dep.cluster_state else {}
    cost = measured_cost(root)
    rows = []
    for unit in dep.units.unit_ids():
        app = running.get(unit)
        status = (read_status(root, app) or {}).get("units", {}).get(unit, {}) if app else {}
        progress = read_progress(root, unit)
        last = progress[-1] if progress else {}
        rows.append({
            "unit": unit, "app": app, "domain": domains.get(app) if app else None,
            "running": bool(status.get("active")), "batch_id": last.get("batch_id"),
            "watermark_ms": epoch_ms(last.get("watermark")), "last_progress_age_s":
                round(now() - last["reported_at"], 1) if last else None,
            "last_input_rows": last.get("num_input_rows"), "data_available": status.get("data_available"),
            "cost": cost.get(unit),
        })
    return {"root": dep.root, "pipeline": dep.pipeline, "master": dep.master, "feed_running": bool(dep.feed_pid) and same_process(dep.feed_pid, dep.feed_started),
            "input_files": input_file_counts(root), "units": rows,
            "apps": [{"name": a.name, "units": a.units, "running": a.stopped_at is None and a.alive(),
                      "killed": a.killed, "stage": a.stage} for a in dep.apps.values()],
            "failures": [f.model_dump() for f in dep.failures]}
