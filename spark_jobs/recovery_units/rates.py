"""Measured catch-up rates of a units deployment: the inputs of :mod:`ft_core.recovery.catch_up` (issue 15).

Problem: to predict when a restarted unit is back to normal, the catch-up model needs per unit the rows per
second that arrive (its backlog grows at that rate while it is down), the rows per second a whole node
processes for it while it has a backlog, and how long its application takes to start processing. Measure
all three from what the deployment already records, before anything restarts.

Method, per unit, from its progress log (``units/<unit>/progress.jsonl``: rows and duration of every
micro-batch, the application that ran it and when it ended) and the applications the deployment started:

- ``input_rate``: over the batches that ended in the ``normal_s`` seconds before the failure (at least the
  last two), the rows of all but the first over the time from the first one's end to the last one's end:
  in steady state a unit processes what arrived since its previous batch;
- ``processing_rate``: its batch with the most rows before the failure (every deployment starts from a
  backlog, so the early batches are catch-up), not counting the first batch of an application (a cold
  JVM: on the test machine it runs at half the speed of the next ones), rows over duration, times the
  number of units of the same application with a batch running at the same time (itself included): they
  shared the application's one core, and the model shares a node among the units catching up on it;
- ``restart_s``: from the start of the newest application that ran it before the failure to the end of its
  first batch there (JVM, executor, state restore, query planning and the cold first batch), the latest over
  the units of that application, since they start together. The newest: when the unit was restarted from
  its checkpoint before (an earlier recovery, or the rehearsal ``ftops bench recovery-runtime`` runs), that
  restart is what a recovery repeats, state restore and the replay of the micro-batch planned but not
  committed included (20-50 s on the test machine), which a first start from an empty checkpoint has not:
  restarts after a failure measured 84-92 s where the deployment's first start took 54 s. It also depends
  on what else ran beside that application (about 40 s for the first application, 130 s for one started
  while the first caught up); on one measured recovery a deployment-wide median predicted worse (errors
  +100 %) than each unit's own application (-24 % to +4 %);
- ``running_s``: from that application's start until its queries started (``queries_started_at`` in its status
  file: JVM, executor and session, not the first batch), what a recovery waits for before its next stage; absent
  for an application that did not record it (the model then uses ``restart_s``).

A unit whose input rate is not below its processing rate is reported at 95 % of it: the measurement says it
barely keeps up, and the model then predicts a slow catch-up rather than refusing. A unit with fewer than two
batches before the failure cannot be measured (InputError naming it). Complexity: linear in the progress
records.

Example (unit ``u``'s application started at 0; its first, cold batch ended at 16 s; it then caught up 300
rows in 3 s while ``v``, in the same application, ran a batch too, and ran batches of 30 rows 3 s apart)::

    >>> batches = {"u": [Batch(10, 16, 600, "A"), Batch(16, 19, 300, "A"), Batch(20, 21, 30, "A"), Batch(23, 24, 30, "A")],
    ...            "v": [Batch(11, 15, 100, "A"), Batch(17, 18, 10, "A")]}
    >>> r = rates_from_batches(batches, {"A": (0.0, ["u", "v"])}, ["u"], failure_time=30, normal_s=10)["u"]
    >>> r.input_rate, r.processing_rate, r.restart_s
    (10.0, 200.0, 16.0)
"""

from __future__ import annotations

from pathlib import Path
from typing import NamedTuple

from ft_core.errors import InputError
from ft_core.recovery.catch_up import CatchUpModel, UnitRates
from spark_jobs.recovery_units.deployment import load, read_progress, read_status

_MAX_UTILISATION = 0.95


class Batch(NamedTuple):
    """One micro-batch of a unit: wall-clock start and end, rows read, the application that ran it."""

    start: float
    end: float
    rows: int
    app: str


def rates_from_batches(batches: dict[str, list[Batch]], apps: dict[str, tuple[float, list[str]]], units: list[str],
                       failure_time: float, normal_s: float = 30.0, up_at: dict[str, float] | None = None
                       ) -> dict[str, UnitRates]:
    """The rates of ``units`` from every unit's batches before the failure (time order), each application's
    (start time, units) and, where known, when its queries started (``up_at``: ``running_s``)."""
    out: dict[str, UnitRates] = {}
    for unit in units:
        mine = batches.get(unit, [])
        if len(mine) < 2:
            raise InputError(f"unit {unit!r}: {len(mine)} micro-batch(es) before the failure; at least 2 are needed to "
                             "measure its rates (let the deployment run longer before the failure)")
        mu = _processing_rate(unit, mine, batches)
        lam = _input_rate(mine, failure_time, normal_s)
        app = mine[-1].app
        up = (up_at or {}).get(app)
        out[unit] = UnitRates(input_rate=min(lam, _MAX_UTILISATION * mu), processing_rate=mu,
                              restart_s=_restart_s(app, apps, batches) or 0.0,
                              running_s=None if up is None else max(0.0, up - apps[app][0]))
    return out


def catch_up_model(root: Path, failure_time: float, stage_times: list[float], pending_s: float | None = None,
                   units: list[str] | None = None, normal_s: float = 30.0) -> CatchUpModel:
    """The catch-up model of the units in ``units`` (default: all) of the deployment at ``root``: their rates
    measured before ``failure_time`` (see the module docstring), the stages' times, and the input pending at
    the failure (default: half a trigger interval, what a unit had not committed on average)."""
    dep = load(root)
    everyone = dep.units.unit_ids()
    batches = {u: [b for b in _batches(root, u) if b.end <= failure_time] for u in everyone}
    apps = {a.name: (a.started_at, a.units) for a in dep.apps.values()}
    up_at = {a: status["queries_started_at"] for a in apps
             if "queries_started_at" in (status := read_status(root, a) or {})}
    rates = rates_from_batches(batches, apps, units if units is not None else everyone, failure_time, normal_s, up_at)
    return CatchUpModel(rates=rates, stage_times=stage_times, pending_s=dep.trigger_s / 2 if pending_s is None else pending_s)


def _batches(root: Path, unit: str) -> list[Batch]:
    out = []
    for rec in read_progress(root, unit):
        end, duration = float(rec["reported_at"]), float(rec.get("batch_duration_ms") or 0) / 1000
        out.append(Batch(end - duration, end, int(rec.get("num_input_rows") or 0), str(rec.get("app", ""))))
    return sorted(out)


def _input_rate(mine: list[Batch], failure_time: float, normal_s: float) -> float:
    recent = [b for b in mine if b.end >= failure_time - normal_s]
    if len(recent) < 2:
        recent = mine[-2:]
    span = recent[-1].end - recent[0].end
    return sum(b.rows for b in recent[1:]) / span if span > 0 else 0.0


def _processing_rate(unit: str, mine: list[Batch], batches: dict[str, list[Batch]]) -> float:
    warm = [b for i, b in enumerate(mine) if i > 0 and b.app == mine[i - 1].app] or mine  # not a JVM's first batch
    big = max(warm, key=lambda b: (b.rows, b.end - b.start))
    sharing = {u for u, theirs in batches.items()
               if any(b.app == big.app and b.start < big.end and b.end > big.start for b in theirs)} | {unit}
    return max(1e-3, big.rows / max(big.end - big.start, 1e-3) * len(sharing))


def _restart_s(app: str, apps: dict[str, tuple[float, list[str]]], batches: dict[str, list[Batch]]) -> float | None:
    """From ``app``'s start to the end of the latest first batch its units ran in it (None: it ran none)."""
    started, units = apps[app]
    firsts = [next((b.end for b in batches.get(u, []) if b.app == app), None) for u in units]
    firsts = [t for t in firsts if t is not None]
    return max(0.0, max(firsts) - started) if firsts else None
