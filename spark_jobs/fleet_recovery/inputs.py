"""What the fleet recovery planner needs, read from the history store and the master (issue 33, item 3).

Problem: :func:`ft_core.fleet.recovery_order.plan_fleet_recovery` takes each lost job's priority, cores, input
rate, processing rate, restart delay and pending input, and the capacity coming back. Here each is read from
what the jobs and the cluster recorded, and each says where it came from (``sources``), so a plan's miss can be
traced to the input that missed:

- **lost**: a job whose primary runs no executor (the cluster seam's ``executor_domains``; its driver died, or
  its executors went with the domain);
- **priority**: the job's policy (``ftops job set NAME --priority``); **cores**: what its primary asks for
  (``primary_cores``; an attached job: its ``spark.cores.max``, else 1);
- **input rate**: rows per second its streams read in the :data:`LOOK_BACK_S` before the failure (the span from
  the first to the last batch of each stream, summed over streams); **steady lag**: the median event-time lag then;
- **pending**: input not processed at the failure: the seconds since its last batch ended, plus that lag;
- **processing rates** and **restart delays**, per kind of restart (held down: from its checkpoint; kept: its
  executors back): measured in the job's newest fleet recovery of that kind (the catch-up it showed, with the share
  of the CPUs it had beside the others taken out: :mod:`ft_core.fleet.catch_up_rate`); a rate never measured for a
  kind is the other kind's; a restart never measured so is taken from the job's current application
  as the cluster showed it starting (:func:`start_delay`: the master's record of its start to its first micro-batch's
  start); else the run's assumptions (``headroom`` times the input rate; ``restart_s``; :data:`RESUME_S`), said as
  assumed;
- **capacity**: free cores on the master's alive workers now, and the arrivals given (``CORES@SECONDS``), else
  the workers the master lists dead that died with the domain coming back, one every ``replacement_s`` (at most
  :data:`MAX_ARRIVALS` stages: the last brings the rest).

Complexity: per registered job, one store query (its batches in the look-back window) and one read of its master and
workers (are its executors gone?); one more master read for the capacity.

    >>> parse_arrivals("2@30, 2@90")
    [{'at_s': 30.0, 'cores': 2.0}, {'at_s': 90.0, 'cores': 2.0}]
"""

from __future__ import annotations

import statistics
import time
from typing import Any

from ft_core.errors import ExternalError, FtopsError, InputError

LOOK_BACK_S = 300.0  # the steady state before the failure the rates are read from
MAX_ARRIVALS = 5  # the DAG's stages after stage 0 (the survivors' free cores)
MIN_INPUT_RATE = 1e-3  # rows/s: a job with no input still needs a positive processing rate to be planned
RESUME_S = 5.0  # an application kept waiting gets executors this soon after its cores return (assumed until measured)
START_WINDOW_S = 600.0  # an application's first micro-batch is looked for this long after the master registered it
DEAD_AROUND_S = 120.0  # a worker the master lists dead counts as lost with the domain if it died this close to it


def parse_arrivals(text: str) -> list[dict[str, float]]:
    """``CORES@SECONDS`` items, comma-separated (empty: none); InputError naming the bad item."""
    out = []
    for item in (i.strip() for i in text.split(",") if i.strip()):
        cores, sep, at = item.partition("@")
        try:
            parsed = {"at_s": float(at), "cores": float(cores)}
        except ValueError:
            parsed = None
        if not sep or parsed is None or parsed["cores"] <= 0 or parsed["at_s"] < 0:
            raise InputError(f"arrivals: {item!r} is not CORES@SECONDS (cores > 0, seconds >= 0 after the failure)",
                             field="arrivals")
        out.append(parsed)
    if len(out) > MAX_ARRIVALS:
        raise InputError(f"arrivals: {len(out)} given, at most {MAX_ARRIVALS} (a stage each)", field="arrivals")
    return out


def primary_cores(dep) -> int:
    """The cores the job's primary asks for."""
    if getattr(dep, "kind", "") == "attached":
        try:
            return max(1, int(dep.conf.get("spark.cores.max", "1")))
        except ValueError:
            return 1
    return dep.primary_cores


def primary_master_ui(dep, job: str) -> str:
    ui = getattr(dep, "primary_ui", None)
    if not ui:
        raise InputError(f"job {job!r}: its master's web UI is not known (register it with --master-ui): a fleet "
                         "recovery waits on the master for capacity")
    return ui


def primary_app(dep, job: str) -> str | None:
    """How the job's primary application is known on its master: its name (``ftops-<job>-primary``), or an attached
    job's current application id (None: not recorded)."""
    from spark_jobs.attach.drill_support import is_attached, run_record
    from spark_jobs.runtime.job_streams import primary_app_name

    if not is_attached(dep):
        return primary_app_name(job)
    try:
        return run_record(dep).get("app_id")
    except (FtopsError, OSError, ValueError, KeyError):
        return None


def primary_executors(dep, job: str) -> int | None:
    """Executors the job's primary runs now (None: its master or workers did not answer)."""
    from spark_jobs.cluster.seam import cluster_of

    app = primary_app(dep, job)
    try:
        return sum(cluster_of(dep).executor_domains(app).values()) if app else 0
    except (FtopsError, OSError, ValueError, KeyError):
        return None


def lost_jobs(store, named: list[str], failed_at: float) -> list[str]:
    """The jobs to recover: every registered job with a deployment that ran micro-batches in the :data:`LOOK_BACK_S`
    before the failure and whose primary runs no executor now; ``named``: those, each of which must be lost (a job
    running executors is refused, naming it: holding it down would stop a healthy job)."""
    from spark_jobs.cli.job import registered_deployment

    candidates = named or [j["name"] for j in store.jobs()]
    lost = []
    for job in candidates:
        if not store.job(job).get("deployment"):
            if named:
                raise InputError(f"job {job!r} is plan-only (no deployment): there is nothing to restart", field="jobs")
            continue
        try:
            dep = registered_deployment(store, job)
        except (FtopsError, ValueError):
            if named:
                raise
            continue
        executors = primary_executors(dep, job)
        if named and executors != 0:
            raise InputError(f"job {job!r} is not lost: its primary runs {executors} executor(s)" if executors else
                             f"job {job!r}: its master or workers do not answer, so whether it is lost is unknown",
                             field="jobs")
        if executors == 0 and (named or steady_before(store, job, failed_at)["streams"]):
            lost.append(job)
    return lost


def steady_before(store, job: str, failed_at: float) -> dict[str, Any]:
    """The job's streams and their steady state in the :data:`LOOK_BACK_S` before ``failed_at``: input rows/s,
    median lag, when its last batch ended."""
    batches = store.job_batches(job, failed_at - LOOK_BACK_S)
    rate, lags, last = 0.0, [], None
    streams = []
    for stream, rows in batches.items():
        rows = [r for r in rows if r["batch_end"] <= failed_at]
        if not rows:
            continue
        streams.append(stream)
        last = max(last or 0.0, rows[-1]["batch_end"])
        span = rows[-1]["batch_end"] - rows[0]["batch_end"]
        if len(rows) >= 2 and span > 0:
            rate += sum(r["input_rows"] for r in rows[1:]) / span
        lags += [r["lag_s"] for r in rows if r["lag_s"] is not None]
    return {"streams": streams, "input_rate": rate, "lag_s": statistics.median(lags) if lags else None,
            "last_batch_end": last}


def measured_catch_up(store, job: str) -> dict[str, Any]:
    """What the job's newest fleet recoveries measured, per kind of restart (held down: its driver restarted from its
    checkpoint; kept: its waiting application given executors again): ``restart_s`` and ``rate_held`` (the newest in
    which it was held down), ``resume_s`` and ``rate_kept`` (the newest in which it kept its driver), each with the run
    it came from; a value never measured is missing. A rate is the job's processing rate with its whole CPUs, the share
    of the CPUs it had beside the run's other jobs taken out (:mod:`ft_core.fleet.catch_up_rate`). The two kinds
    differ: a held job's first batch reads the whole backlog on a cold JVM (the fleet-recovery benchmark of
    2026-11-30 21:29: held jobs planned from kept ones' rates missed by +27 % to +64 %, kept from held by -43 %)."""
    out: dict[str, Any] = {}
    for row in store.job_fleet_recoveries(job, limit=10):
        if row["measured_back_s"] is None or row["restarted_at"] is None or row["restart_delay_s"] is None \
                or row["restart_delay_s"] < 0:  # negative: measured before back_since ended it at the restart
            continue
        held = row["inputs"].get("held", True)
        out.setdefault("restart_s" if held else "resume_s", (row["restart_delay_s"], row["run_id"]))
        rate = "rate_held" if held else "rate_kept"
        if rate not in out and (alone := rate_alone(store, row["run_id"], job)) is not None:
            out[rate] = (alone, row["run_id"])
    return out


def rate_alone(store, run_id: int, job: str) -> float | None:
    """``job``'s processing rate with its whole CPUs as fleet recovery ``run_id`` measured it (None: it did not)."""
    from ft_core.fleet.catch_up_rate import processing_rate_alone

    run = store.fleet_recovery(run_id)
    failed = run["failed_at"].timestamp()
    jobs = [recovered(r, failed) for r in run["jobs"] if r["inputs"].get("cores")]
    mine = next((j for j in jobs if j.job == job), None)
    return None if mine is None else processing_rate_alone(mine, jobs, planned_cpus(run["plan"]))


def recovered(row: dict[str, Any], failed_at: float):
    """A fleet recovery's job row as :class:`~ft_core.fleet.catch_up_rate.RecoveredJob`: the job as planned for its
    kind of restart (:func:`as_fleet_job`), with when it ran again and was back (seconds after the failure)."""
    from ft_core.fleet.catch_up_rate import RecoveredJob

    delay = row["restart_delay_s"]
    running = None if row["restarted_at"] is None or delay is None or delay < 0 else \
        row["restarted_at"].timestamp() - failed_at + delay
    planned = as_fleet_job(row["inputs"], kept=not row["inputs"].get("held", True))
    return RecoveredJob(**planned.model_dump(), running_s=running, back_s=row["measured_back_s"])


def planned_cpus(plan: dict[str, Any]) -> float | None:
    """The CPUs a recorded fleet recovery's jobs shared, as measured when it was planned (None: a CPU per core)."""
    return plan.get("capacity", {}).get("cpus")


def start_delay(store, job: str, started_ms: float | None, now: float | None = None) -> float | None:
    """Seconds from the master registering the job's application (``started_ms``, its ``starttime``) to the start of
    that application's first micro-batch: the restart delay the cluster showed when the job last started (a few
    seconds short of a restart's, which also starts the driver's JVM). None when unknown: no application, no batch
    within :data:`START_WINDOW_S`, or a start so old that its first batches may have been pruned (retention).

    >>> start_delay(None, "clicks", None) is None
    True
    """
    from ft_core.store.retention import Retention

    if started_ms is None:
        return None
    start, now = started_ms / 1000, time.time() if now is None else now
    try:
        kept_s = Retention.from_env().progress_days * 86400
    except InputError:  # the safety net's prune names a bad setting; here the default keeps the answer safe
        kept_s = Retention().progress_days * 86400
    if start < now - kept_s + START_WINDOW_S:
        return None
    batches = store.job_batches(job, start, start + START_WINDOW_S)
    firsts = [rows[0]["batch_start"] or rows[0]["batch_end"] for rows in batches.values() if rows]
    return round(min(firsts) - start, 2) if firsts and min(firsts) >= start else None


def fleet_job(store, job: str, dep, failed_at: float, *, restart_s: float, headroom: float,
              started_ms: float | None = None) -> dict[str, Any]:
    """The planner's job (``FleetJob`` fields; ``restart_s`` and ``processing_rate`` held down: restarted from its
    checkpoint), ``resume_s`` and ``resume_processing_rate`` (kept waiting: only its executors start) and
    ``sources``: where each input came from.
    ``started_ms``: when the master registered the job's current application (:func:`submitted_at`)."""
    steady = steady_before(store, job, failed_at)
    if not steady["streams"]:
        raise InputError(f"job {job!r}: no micro-batch in the {LOOK_BACK_S:.0f} s before the failure: its rates cannot "
                         "be read (was it running? does its driver write to the history store?)", field="jobs")
    input_rate = max(steady["input_rate"], MIN_INPUT_RATE)
    lag = steady["lag_s"] or 0.0
    measured = measured_catch_up(store, job)
    assumed = "assumed (no fleet recovery of the job measured it)"
    held_rate, kept_rate = _rate(measured, "rate_held"), _rate(measured, "rate_kept")
    assumed_rate = f"{assumed}: {headroom:g} x the input rate"
    restart, restart_from = _restart(store, job, measured, started_ms, restart_s, assumed)
    resume = measured.get("resume_s", (RESUME_S, None))
    return {"job": job, "priority": float(store.policy(job)["priority"] or 1.0), "cores": primary_cores(dep),
            "input_rate": round(input_rate, 3),
            "processing_rate": round(held_rate[0] if held_rate else input_rate * headroom, 3),
            "resume_processing_rate": round(kept_rate[0] if kept_rate else input_rate * headroom, 3),
            "restart_s": round(restart, 2), "resume_s": round(resume[0], 2),
            "pending_s": round(max(0.0, failed_at - steady["last_batch_end"]) + lag, 2),
            "sources": {"input_rate": f"{len(steady['streams'])} stream(s), {LOOK_BACK_S:.0f} s before the failure",
                        "processing_rate": _rate_source(held_rate, assumed_rate),
                        "resume_processing_rate": _rate_source(kept_rate, assumed_rate),
                        "restart_s": restart_from,
                        "resume_s": _source(resume[1], f"{assumed}: {RESUME_S:g} s"),
                        "steady_lag_s": steady["lag_s"], "streams": steady["streams"]}}


def _restart(store, job: str, measured: dict[str, Any], started_ms: float | None, restart_s: float,
             assumed: str) -> tuple[float, str]:
    """The restart delay and where it came from: a fleet recovery's measurement, else the job's own start, else
    ``restart_s`` (assumed)."""
    if "restart_s" in measured:
        return measured["restart_s"][0], _source(measured["restart_s"], assumed)
    started = start_delay(store, job, started_ms)
    if started is not None:
        return started, "measured at its application's start (the master's record to its first micro-batch)"
    return restart_s, f"{assumed}: {restart_s:g} s"


def _rate(measured: dict[str, Any], kind: str) -> tuple[float, int, str] | None:
    """A kind's measured rate (:func:`measured_catch_up`), else the other kind's: (rate, run, what was borrowed)."""
    other = "rate_kept" if kind == "rate_held" else "rate_held"
    if kind in measured:
        return (*measured[kind], "")
    if other in measured:
        return (*measured[other], f", {'kept waiting' if other == 'rate_kept' else 'held down'} (never measured otherwise)")
    return None


def _rate_source(rate: tuple[float, int, str] | None, assumed: str) -> str:
    """Where a rate of :func:`_rate` came from.

    >>> _rate_source(_rate({"rate_held": (70.6, 9)}, "rate_kept"), "assumed")
    'measured in fleet recovery #9, held down (never measured otherwise)'
    """
    return assumed if rate is None else f"{_source(rate[:2], assumed)}{rate[2]}"


def _source(measured, assumed: str) -> str:
    run = measured[1] if isinstance(measured, tuple) else measured
    return f"measured in fleet recovery #{run}" if run is not None else assumed


def as_fleet_job(planned: dict[str, Any], *, kept: bool = False):
    """The planner's ``FleetJob`` of :func:`fleet_job`'s answer; ``kept``: restarting costs its ``resume_s`` and it
    catches up at its ``resume_processing_rate`` (runs recorded without one: its ``processing_rate``)."""
    from ft_core.fleet.recovery_order import FleetJob

    fields = {k: v for k, v in planned.items() if k not in ("sources", "resume_s", "resume_processing_rate", "held")}
    if kept:
        fields["restart_s"] = planned["resume_s"]
        fields["processing_rate"] = planned.get("resume_processing_rate", planned["processing_rate"])
    return FleetJob(**fields)


def capacity(master_ui: str, arrivals: list[dict[str, float]], replacement_s: float, failed_at: float) -> dict[str, Any]:
    """Free cores on the master's alive workers now, and the arrivals (given; else :func:`dead_workers_back`)."""
    from spark_jobs.cluster.master_room import alive_workers, free_cores
    from spark_jobs.cluster.web_ui import master_state

    try:
        state = master_state(master_ui)
    except (FtopsError, OSError) as exc:
        raise ExternalError(f"master {master_ui} does not answer: {exc}") from exc
    free = free_cores(alive_workers(state))
    if not arrivals:
        arrivals = dead_workers_back(state.get("workers", []), failed_at, replacement_s)
    return {"free_cores": float(free), "arrivals": arrivals}


def gone_workers(workers: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The workers a master lists not alive whose address no live worker holds again (a worker restarted on its
    host and port is back, not gone)."""
    live = {(w.get("host"), w.get("port")) for w in workers if w.get("state") == "ALIVE"}
    return [w for w in workers if w.get("state") != "ALIVE" and (w.get("host"), w.get("port")) not in live]


def dead_workers_back(workers: list[dict[str, Any]], failed_at: float, replacement_s: float) -> list[dict[str, float]]:
    """The workers the master lists dead that died with the domain (their last heartbeat within
    :data:`DEAD_AROUND_S` of the failure) and whose address no live worker holds again, back one every
    ``replacement_s``; at most :data:`MAX_ARRIVALS` stages (the last brings the rest).

    >>> w = [{"state": "DEAD", "cores": 2, "host": "a", "port": 1, "lastheartbeat": 1_000_000},
    ...      {"state": "DEAD", "cores": 2, "host": "b", "port": 1, "lastheartbeat": 1_000_000},
    ...      {"state": "ALIVE", "cores": 2, "host": "b", "port": 1, "lastheartbeat": 1_050_000},
    ...      {"state": "DEAD", "cores": 4, "host": "c", "port": 1, "lastheartbeat": 1}]  # an earlier incident's
    >>> dead_workers_back(w, failed_at=1_000.0, replacement_s=60)
    [{'at_s': 60.0, 'cores': 2.0}]
    """
    dead = [w for w in gone_workers(workers) if abs(w.get("lastheartbeat", 0) / 1000 - failed_at) <= DEAD_AROUND_S]
    arrivals = [{"at_s": float(replacement_s * (i + 1)), "cores": float(w["cores"])} for i, w in enumerate(dead)]
    if len(arrivals) > MAX_ARRIVALS:
        rest = sum(a["cores"] for a in arrivals[MAX_ARRIVALS - 1:])
        arrivals = arrivals[:MAX_ARRIVALS - 1] + [{"at_s": arrivals[MAX_ARRIVALS - 1]["at_s"], "cores": rest}]
    return arrivals


def submitted_at(master_ui: str, jobs: list[str], deps: dict) -> dict[str, float | None]:
    """When each job's waiting application was submitted (the master's ``starttime``, ms: only compared with each
    other); None: it has none (its driver died)."""
    from spark_jobs.drills.live import master_apps

    apps = master_apps(master_ui)
    out: dict[str, float | None] = {}
    for job in jobs:
        key = primary_app(deps[job], job)
        found = [a.get("starttime") for a in apps if key in (a.get("id"), a.get("name"))] if key else []
        out[job] = float(found[0]) if found and found[0] is not None else None
    return out
