"""What the drill engine asks of an attached job (issue 34, items 2 to 4): is it running, which queries and
checkpoints it has, how far behind it is, and the verdict of a drill from what the job itself recorded.

An attached job has no reference job to compare outputs with, so a drill judges it by (:func:`verify`):

- **survived**: no query ended with an exception after the fault, unless the application started it again;
- **exactly once**: each query's checkpoint, from the last batch committed before the fault on, holds
  every invariant of :func:`spark_jobs.attach.checkpoint_audit.audit_checkpoint` (no gap, no batch committed twice
  or uncommitted but the newest, offsets never going back, nothing skipped);
- **caught up and steady**: its lag back within the steady-state bound.

The *lag* of a query is read from its progress rows in the history store (its driver's listener,
:mod:`spark_jobs.attach.hooks`): at a micro-batch's end, the batch's end less its newest event time; now, between
batches, now less the newest event time processed (a stalled query's lag grows). Figures: time to caught up (the
first batch after capacity returned whose lag is within the band around the steady lag), peak lag, throughput dip
(the lowest rate of rows per 10 s after the fault against the rate before it), records reprocessed (the batches
run again after a restart, from the checkpoint audit).

    # lag = lags(store, dep, now)["ftops-clicks-clicks"]
"""

from __future__ import annotations

import time
from pathlib import Path

from ft_core.errors import ExternalError

WINDOW_S = 10.0  # the throughput's window


def is_attached(dep) -> bool:
    return getattr(dep, "kind", "runnable") == "attached"


def run_record(dep) -> dict:
    """What the driver recorded when it started (``control/_run.json``): app id, UI, pid, master."""
    from ft_core.input.documents import read_document

    path = Path(dep.control) / "_run.json"
    if not path.exists():
        raise ExternalError(f"the job's driver has not started (no {path}): is it submitted? `ftops job submit`")
    return read_document(path, "_run.json")


def require_running(dep, job: str) -> str:
    """The application id of the job's running driver; ExternalError naming what is missing."""
    from spark_jobs.drills.live import master_apps
    from spark_jobs.runtime.launch import driver_running

    if not driver_running(dep.control):
        raise ExternalError(f"job {job!r}: its driver is not running (submitted with `ftops job submit`?)")
    app = run_record(dep)["app_id"]
    if dep.primary_ui and not any(a["id"] == app and a.get("state") == "RUNNING" for a in master_apps(dep.primary_ui)):
        raise ExternalError(f"job {job!r}: application {app} is not running on {dep.primary_ui}")
    return app


def status(dep) -> dict:
    """An attached job's state for ``ftops job status``: its application, whether its driver runs, its queries."""
    from spark_jobs.runtime.launch import driver_running

    running = driver_running(dep.control)
    record = run_record(dep) if (Path(dep.control) / "_run.json").exists() else {}
    return {"kind": "attached", "app": dep.app, "app_args": dep.app_args, "root": dep.root, "primary_master": dep.master,
            "running": running, "app_id": record.get("app_id") if running else None,
            "streams": [{"name": s, "state": "running" if running else "stopped", "app_id": q["id"],
                         "checkpoint": q["checkpoint"]} for s, q in current_queries(dep).items()] if running else []}


def current_queries(dep) -> dict[str, dict]:
    """Stream -> the newest start of each of the job's queries that has not ended since (its checkpoint, name, id)."""
    from spark_jobs.attach.hooks import queries

    latest: dict[str, dict] = {}
    for event in queries(dep.control):
        if event["event"] == "started":
            latest[event["id"]] = event
        elif event["event"] == "terminated" and latest.get(event["id"], {}).get("run_id") == event["run_id"]:
            latest.pop(event["id"])
    return {e["stream"]: e for e in latest.values()}


def committed_before(dep) -> dict[str, dict]:
    """Per running query: its checkpoint and the last batch committed now (None: none yet), taken before a fault."""
    out = {}
    for stream, q in current_queries(dep).items():
        commits = Path(q["checkpoint"] or "") / "commits"
        ids = [int(f.name) for f in commits.iterdir() if f.name.isdigit()] if q["checkpoint"] and commits.is_dir() else []
        out[stream] = {"checkpoint": q["checkpoint"], "last_committed": max(ids) if ids else None, "query_id": q["id"]}
    return out


def lags(store, dep, now: float | None = None, look_back_s: float = 600.0) -> dict[str, float | None]:
    """Stream -> its lag now (s): now less the newest event time it processed (None: no row with one yet)."""
    now = time.time() if now is None else now
    streams = list(current_queries(dep))
    batches = store.batches_since(streams, now - look_back_s)
    out = {}
    for stream in streams:
        arrived = [b["arrived"] for b in batches.get(stream, []) if b["arrived"] is not None]
        out[stream] = None if not arrived else max(0.0, now - max(arrived))
    return out


def steady(store, dep, bound_s: float) -> tuple[bool, object]:
    """The steady-state hypothesis of an attached job: every query's lag within ``bound_s``."""
    now_lags = lags(store, dep)
    if not now_lags:
        return False, "no streaming query of the job has started (its driver records none)"
    behind = {s: lag for s, lag in now_lags.items() if lag is None or lag > bound_s}
    if behind:
        return False, "; ".join(f"{s}: {'no progress in the history store yet' if lag is None else f'{lag:.0f} s behind'}"
                                f" (bound {bound_s:.0f} s)" for s, lag in behind.items())
    worst = max(now_lags.values())
    return True, {"lag_s": round(worst, 1), "bound_s": bound_s, "lag_files": 0, "checked_at": time.time(),
                  "streams": {s: round(v, 1) for s, v in now_lags.items()}}


def caught_up(store, dep, since: float, band_s: float) -> tuple[bool, str | None]:
    """Every query has run two micro-batches since ``since`` whose lag at their end is within ``band_s``."""
    streams = list(current_queries(dep))
    batches = store.batches_since(streams, since)
    missing = []
    for stream in streams:
        good = [b for b in batches.get(stream, []) if b["arrived"] is not None and b["batch_end"] - b["arrived"] <= band_s]
        if len(good) < 2:
            missing.append(f"{stream}: {len(good)} of 2 micro-batches within {band_s:.0f} s of their input")
    return (not missing and bool(streams)), "; ".join(missing) or None


def verify(store, dep, ctx, bound_s: float, max_recovery_s: float | None) -> tuple[dict, list[str]]:
    """The drill's report and its problems (empty: passed), from what the job recorded (see the module docstring)."""
    from spark_jobs.attach.checkpoint_audit import audit_checkpoint
    from spark_jobs.attach.hooks import queries

    events = queries(dep.control)
    restarts = [e["at"] for e in events if e["event"] == "started" and e["at"] > ctx.t_fail]
    audits = {s: audit_checkpoint(Path(q["checkpoint"]), since_batch=q["last_committed"], restarted_at=restarts)
              for s, q in ctx.queries_before.items() if q["checkpoint"]}
    batches = store.batches_since(list(ctx.queries_before), ctx.t_fail - 120)
    band = caught_up_band(ctx.steady_lag_s or 0.0, bound_s)
    caught = _caught_up_at(batches, ctx.t_capacity or ctx.t_fail, band)
    now_lags = lags(store, dep)
    report = {"kind": "attached", "streams": sorted(ctx.queries_before),
              "exactly_once_held": bool(audits) and all(a.held for a in audits.values()),
              "exactly_once": {s: {"held": a.held, "batches_audited": a.batches_audited, "first_batch": a.first_batch,
                                   "last_batch": a.last_batch, "failed": [c.name for c in a.failed()],
                                   "rerun_batches": a.rerun_batches} for s, a in audits.items()},
              "records_reprocessed": sum(a.records_reprocessed or 0 for a in audits.values()),
              "time_to_caught_up_s": None if caught is None else caught - ctx.t_fail,
              "steady_lag_before_s": ctx.steady_lag_s, "peak_lag_s": _peak_lag(batches, ctx.t_fail), "throughput_dip": _dip(batches, ctx.t_fail),
              "queries_failed": [e for e in events if e["event"] == "terminated" and e.get("exception")
                                 and e["at"] > ctx.t_fail],
              "steady_after": {"lag_s": round(max(v for v in now_lags.values() if v is not None), 1), "bound_s": bound_s}
              if any(v is not None for v in now_lags.values()) else None,
              "capacity_alive_s": None if ctx.t_capacity is None else ctx.t_capacity - ctx.t_fail,
              "fail_domain": ctx.domain, "killed": ctx.killed, "kill_driver": ctx.kill_driver}
    return report, problems(report, events, audits, max_recovery_s, bound_s)


def caught_up_band(steady_lag_s: float, bound_s: float) -> float:
    """How close to its input a query must be again to count as caught up: twice its steady lag plus 5 s, within
    the steady-state bound (as the runnable jobs' band around their steady lag).

    >>> caught_up_band(2.0, 60.0), caught_up_band(40.0, 60.0)
    (9.0, 60.0)
    """
    return min(2 * steady_lag_s + 5.0, bound_s)


def problems(report: dict, events: list[dict], audits: dict, max_recovery_s: float | None, bound_s: float) -> list[str]:
    out = []
    ended = [e for e in report["queries_failed"]
             if not any(s["event"] == "started" and s["id"] == e["id"] and s["at"] > e["at"] for s in events)]
    if ended:
        out.append(f"query {ended[0]['id']} ended with an exception and was not started again: {ended[0]['exception'][:200]}")
    for stream, audit in audits.items():
        if not audit.held:
            out.append(f"{stream}: not exactly once: {', '.join(c.name for c in audit.failed())} did not hold")
    if not audits:
        out.append("no checkpoint of the job's queries was recorded: exactly-once could not be checked")
    caught = report["time_to_caught_up_s"]
    if caught is None:
        out.append("the job did not catch up")
    elif max_recovery_s is not None and caught > max_recovery_s:
        out.append(f"recovery took {caught:.1f} s, over the job's bound of {max_recovery_s:.0f} s")
    after = report["steady_after"]
    if after is None or after["lag_s"] > bound_s:
        out.append(f"not back to steady state: {after and after['lag_s']} s behind its input (bound {bound_s:.0f} s)")
    return out


def _caught_up_at(batches: dict[str, list[dict]], since: float, band_s: float) -> float | None:
    """When the last of the streams ran its first batch since ``since`` within ``band_s`` of its input."""
    firsts = []
    for rows in batches.values():
        good = [b["batch_end"] for b in rows if b["batch_end"] > since and b["arrived"] is not None
                and b["batch_end"] - b["arrived"] <= band_s]
        if not good:
            return None
        firsts.append(min(good))
    return max(firsts) if firsts else None


def _peak_lag(batches: dict[str, list[dict]], t_fail: float) -> float | None:
    lags_ = [b["batch_end"] - b["arrived"] for rows in batches.values() for b in rows
             if b["batch_end"] > t_fail and b["arrived"] is not None]
    return round(max(lags_), 1) if lags_ else None


def _dip(batches: dict[str, list[dict]], t_fail: float) -> float | None:
    """1 - (the lowest rows per window after the fault / the mean rows per window before it), over all streams."""
    def per_window(rows: list[dict], start: float, end: float) -> list[float]:
        out = []
        t = start
        while t + WINDOW_S <= end:
            out.append(sum(b["input_rows"] for b in rows if t < b["batch_end"] <= t + WINDOW_S))
            t += WINDOW_S
        return out

    rows = [b for rs in batches.values() for b in rs]
    if not rows:
        return None
    start, end = min(b["batch_end"] for b in rows), max(b["batch_end"] for b in rows)
    before, after = per_window(rows, start, t_fail), per_window(rows, t_fail, end)
    if not before or not after or not sum(before):
        return None
    return round(max(0.0, 1 - min(after) / (sum(before) / len(before))), 3)
