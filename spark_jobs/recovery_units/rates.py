"""Measured catch-up rates of a units deployment: the inputs of :mod:`ft_core.recovery.catch_up` (issue 15).

Problem: to predict when a restarted unit is back to normal, the catch-up model needs per unit the rows per
second that arrive (its backlog grows at that rate while it is down), the rows per second a whole node
processes for it while it has a backlog, and how long its application takes to start processing. Measure
all three from what the deployment already records, before anything restarts.

Method, per unit, from its progress log (``units/<unit>/progress.jsonl``: rows and duration of every
micro-batch, and when it ended) and the applications the deployment started:

- ``input_rate``: the rows of the batches that ended in the ``normal_s`` seconds before the failure over the
  seconds those batches span (steady state: a unit processes what arrives);
- ``processing_rate``: its batch with the most rows before the failure (every deployment starts from a
  backlog, so the first batches are catch-up), rows over duration, times the number of units of its
  application busy at the same time: they shared the application's one core, and the model shares a node
  among the units catching up on it explicitly;
- ``restart_s``: from the start of the first application that ran it to the start of its first batch (JVM,
  executor, state restore and query planning), the latest over the units of that application, since they
  start together. It depends on what else ran beside that application (on the 2-core test machine 25 s for
  the first application, 68-80 s for the ones started while it caught up); a deployment-wide median was
  tried and predicted one measured recovery worse (errors +26 % to +61 % against -15 % to -34 %).

A unit whose input rate is not below its processing rate is reported at 95 % of it: the measurement says it
barely keeps up, and the model then predicts a slow catch-up rather than refusing. Complexity: linear in the
progress records.
"""

from __future__ import annotations

from pathlib import Path

from ft_core.errors import InputError
from ft_core.recovery.catch_up import CatchUpModel, UnitRates
from spark_jobs.recovery_units.deployment import load, read_progress

_MAX_UTILISATION = 0.95


def measured_rates(root: Path, failure_time: float, normal_s: float = 30.0) -> dict[str, UnitRates]:
    """Per unit of the deployment at ``root``, its rates measured before ``failure_time`` (see the module
    docstring); InputError naming the unit when it has no batches to measure."""
    dep = load(root)
    batches = {u: [b for b in _batches(root, u) if b[1] <= failure_time] for u in dep.units.unit_ids()}
    first_app = _first_apps(dep)
    out: dict[str, UnitRates] = {}
    for unit, mine in batches.items():
        if not mine:
            raise InputError(f"unit {unit!r}: no micro-batch before the failure to measure its rates from")
        app = first_app.get(unit)
        peers = [b for u in (app.units if app else [unit]) for b in batches.get(u, [])]
        lam = _input_rate(mine, failure_time, normal_s)
        mu = _processing_rate(mine, peers)
        out[unit] = UnitRates(input_rate=min(lam, _MAX_UTILISATION * mu), processing_rate=mu,
                              restart_s=_restart_s(app, batches) if app else 0.0)
    return out


def catch_up_model(root: Path, failure_time: float, stage_times: list[float], pending_s: float | None = None,
                   units: list[str] | None = None) -> CatchUpModel:
    """The catch-up model of the units in ``units`` (default: all): measured rates, the stages' times, and the
    input pending at the failure (default: half a trigger interval, what a unit had not committed on average)."""
    dep = load(root)
    rates = measured_rates(root, failure_time)
    keep = units if units is not None else list(rates)
    return CatchUpModel(rates={u: rates[u] for u in keep}, stage_times=stage_times,
                        pending_s=dep.trigger_s / 2 if pending_s is None else pending_s)


def _batches(root: Path, unit: str) -> list[tuple[float, float, int]]:
    """(start, end, rows) of every batch, wall time, in order."""
    out = []
    for rec in read_progress(root, unit):
        end, duration = float(rec["reported_at"]), float(rec.get("batch_duration_ms") or 0) / 1000
        out.append((end - duration, end, int(rec.get("num_input_rows") or 0)))
    return sorted(out)


def _input_rate(mine: list[tuple[float, float, int]], failure_time: float, normal_s: float) -> float:
    recent = [b for b in mine if b[1] >= failure_time - normal_s] or mine[-3:]
    span = recent[-1][1] - recent[0][0]
    return sum(rows for _, _, rows in recent) / span if span > 0 else 0.0


def _processing_rate(mine: list[tuple[float, float, int]], peers: list[tuple[float, float, int]]) -> float:
    start, end, rows = max(mine, key=lambda b: (b[2], b[1] - b[0]))
    busy = sum(1 for s, e, _ in peers if s < end and e > start)  # itself included
    return max(1e-3, rows / max(end - start, 1e-3) * max(busy, 1))


def _first_apps(dep) -> dict:
    """Per unit, the first application that ran it."""
    first: dict = {}
    for app in sorted(dep.apps.values(), key=lambda a: a.started_at):
        for unit in app.units:
            first.setdefault(unit, app)
    return first


def _restart_s(app, batches: dict[str, list[tuple[float, float, int]]]) -> float:
    """From ``app``'s start to the latest first batch of its units."""
    firsts = [batches[u][0][0] for u in app.units if batches.get(u)]
    return max(0.0, max(firsts) - app.started_at) if firsts else 0.0
