"""A drill's forecast of when the primary is caught up, made before its fault from what the history store holds
(issue 38, item 2; the model: :mod:`ft_core.recovery.drill_catch_up`).

Inputs, each with where it came from (the forecast says so; "assumed" where nothing measured it yet):

- the input rate and the time between batches: the job's batches in the :data:`STEADY_S` before the forecast, after
  the last drill's catch-up (the rows of its backlog arrived before);
- the stall (when the first batch after the fault ends): the median over the job's last :data:`LEARN_FROM` drills
  of the same kind (driver killed or not) of theirs, each moved by the difference in replacement delay when that
  drill's job waited for the capacity (its stalled batch ended after the capacity was back), as measured when it
  went on (its batch ended before: the master relaunched the lost executors on free cores outside the domain, or
  executors there reran the lost tasks; the delay did not matter). Why not the parts apart: in the soak of
  2026-12-01 the job went on in most drills, 21-49 s after the fault with the capacity back at 38-51 s, and stalled
  in a few, the two close under the same load; forecasting by kind flipped with one drill and missed by up to
  +170 %. Before any drill: ``replacement_delay_s + add_worker_s`` (capacity back; ``add_worker_s`` the median over
  the last :data:`LEARN_FROM` drills on the job's cluster, of any job there: a worker's join is the cluster's), plus
  an assumed ``resume_s`` (an executor's start there) unless the job has executors outside the failed domain
  (``survivors``: the latest it then resumes is when the capacity is back). When it has none there but the cluster
  has cores free outside the domain (``free_cores_outside``), the master relaunches its executors there at once and
  that start races the capacity's return; with nothing learnt, the forecast is the later outcome (the job waiting
  for the capacity) and its inputs show the earlier (``caught_up_if_went_on_s``: the stall ``resume_s`` alone). Why
  the later: the first drills of the soaks and demos of 2026-12-03 were caught up at 65.9 s (08:07 UTC, the
  relaunch won: -17 % for the earlier outcome's forecast), then 97.8, 79.1, 97.4 and 102.6 s, which the earlier
  outcome's forecast (56.6-59.2 s) missed by 28-44 %; in the 15:44 soak the relaunch lost every drill (stalls of
  67-75 s, the capacity back at 56-62 s) and the later outcome's forecast of its first drill, 92.5 s, was within
  10 %. Erring late is also what an on-call person is better served by. It errs when the job waits only briefly:
  the demo from a fresh clone at 595f885, its stall ending 2.4 s after the capacity's return (44.7 s), was caught
  up at 66.4 s against 92.0 s forecast (+39 %; the earlier outcome's, 57.3 s: -14 %);
- caught up, learnt: the capacity's return (``replacement_delay_s + add_worker_s``) plus the *offset*, the median
  over those drills of the time from their capacity's return to caught up, as measured (Chiron's restore and
  catch-up, profiled by the drills themselves). Caught up is measured against the input at the capacity's return,
  so it never comes before it, and a longer replacement delay moves it by as much. Why not the stall, then the
  backlog's batches at a fitted cost, scaled by the machine's pace (the model before): in the soak of 2026-12-03
  12:23 UTC that chain multiplied its errors (a pace of 1.7 from a slow stretch that was over by the fault, a cost
  per row fitted on paced batches, an input rate read from the last drill's backlog) and forecast 132-160 s for
  drills caught up at 73-76 s; the offset alone, replayed on the same drills, kept to 4-29 %
  (docs/benchmarks/drill-forecast.md);
- the race: where the drills learnt from went on in some (the lost executor relaunched on free cores outside the
  domain before the capacity was back) and waited for the capacity in others, each outcome's offset is learnt from
  its own drills and the forecast is :func:`~ft_core.recovery.drill_catch_up.hedge` of the two (the value missing
  either by the least; its inputs say both, ``caught_up_if_went_on_s`` and ``caught_up_if_waited_s``). Why: in the
  soak of 2026-12-03 08:07 UTC the relaunch won 5 times of 12 (caught up 4-14 s after the capacity) and lost 7
  (20-40 s after), and a median over both outcomes missed 3 drills by 36-42 %;
- before any drill: Chiron's model (:mod:`ft_core.recovery.drill_catch_up`): the stall above, then the backlog's
  batches at a batch's cost (``1 / I_max`` from the job's checkpoint profile, Chiron's profiling runs, else
  :data:`ASSUMED_HEADROOM` times the input rate), and no earlier than the capacity's return plus two steady batches;
- the stall (recorded beside the forecast, and the first drill's forecast) is scaled by the machine's pace: each
  learnt drill's by the job's batch time now over its batch time before that drill's fault (the median of
  ``batch_end - batch_start`` of its batches in the :data:`PACE_S` before each; 1 where a batch's start is not
  recorded). Why: in the soak of 2026-12-02 the primary's batches took 2.2 s, then 6.3 s in a slow stretch of the
  shared machine, and the stall went from 46 s to 101 s with them. The replacement delay a drill waited for is
  wall-clock and not scaled.

    # forecast = forecast_caught_up(store, "alerts", replacement_delay_s=30, kill_driver=False, now=time.time())
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel

from ft_core.recovery.drill_catch_up import (Bound, BatchCost, CaughtUpInputs, CaughtUpPrediction, hedge,
                                              predict_caught_up)

STEADY_S = 300.0
LEARN_FROM = 5
ASSUMED_ADD_WORKER_S = 30.0
DEFAULT_REPLACEMENT_DELAY_S = 30.0  # a drill's (DrillSettings.replacement_delay_s), when its record lacks one
ASSUMED_RESUME_S = {False: 15.0, True: 30.0}  # executors back; a killed driver restarted from its checkpoint
ASSUMED_HEADROOM = 4.0
PACE_S = 120.0  # the job's batch time before a fault: the batches of the two minutes before it
DRAINED_AFTER_S = 30.0  # a drill's catch-up over: in the soak of 2026-12-03 12:23 UTC the batches read the steady
# rows again 5 s after caught up; before, the steady window of the next drill held the last one's backlog batches
# (7,300 and 2,000 rows against 300-500) and its input rate read 125 rows/s for 100
DONE_BEFORE_S = 1.0  # a batch that ended this soon after the fault had done its work before it (its tasks had
# finished; the driver was committing): not the end of the stall (a drill in CI measured a stall of 0.0 s so)


class CatchUpForecast(BaseModel):
    """The forecast (seconds after the fault), its inputs and where each came from, the drills it learnt from."""

    predicted_caught_up_s: float
    stall_s: float
    bound: Bound = "backlog"  # what it ends with: the backlog's batches, or the capacity's return and the tail
    batches: list[tuple[float, float]]
    inputs: dict[str, float]
    sources: dict[str, str]
    learned_from: list[int]


def forecast_caught_up(store, job: str, *, replacement_delay_s: float, kill_driver: bool, now: float,
                       trigger_s: float = 0.0, survivors: bool = False,
                       free_cores_outside: int | None = None) -> CatchUpForecast | None:
    """The forecast for a drill of ``job`` whose fault comes at ``now`` (module docstring; ``survivors``: the job
    has executors outside the failed domain; ``free_cores_outside``: the cluster's free cores there); None when the
    job recorded fewer than 3 batches in the :data:`STEADY_S` before (nothing to forecast from), or its batch cost
    says it cannot keep up with its input (it would never catch up)."""
    drills = store.drill_timings(job, now, limit=LEARN_FROM * 3)
    stream, steady, cut = _steady_batches(store, job, now, drills[0] if drills else None)
    span = steady[-1]["batch_end"] - steady[0]["batch_end"] if steady else 0.0
    if len(steady) < 3 or span <= 0:
        return None
    rate = sum(b["input_rows"] for b in steady[1:]) / span
    cycles = _points(steady)
    sources = {"input_rate": f"{len(steady)} batches of {stream} in the {STEADY_S:.0f} s before"
                             + (f", after drill #{drills[0]['drill_id']}'s catch-up" if cut else "")}
    past = [m for d in drills
            if bool(d["params"].get("kill_driver")) == kill_driver and (m := measured_drill(store, job, d)) is not None]
    past = _paced(past[:LEARN_FROM], _batch_time([b for b in steady if b["batch_end"] > now - PACE_S]))
    add_worker = _add_worker(store, job, now, sources)
    cost = _cost(store, job, cycles, rate, trigger_s, sources)
    if rate * cost.per_row_s >= 1:  # a batch takes longer than the input it reads: the job never catches up
        return None
    cycle = statistics.fmean(c for _, c in cycles)
    resume = 0.0 if survivors and not kill_driver else ASSUMED_RESUME_S[kill_driver]  # a killed driver stops them all
    relaunch = not kill_driver and not survivors and bool(free_cores_outside)  # (module docstring)
    model = _Model(replacement_delay_s, add_worker, resume, relaunch, rate, cost, pending_s=cycle / 2,
                   two_cycles=2 * cycle)
    went_on, waited = [m for m in past if m["went_on"]], [m for m in past if not m["went_on"]]
    if went_on and waited:  # both outcomes of the race among the drills learnt from (module docstring)
        (early, _, _), (late, inputs, late_sources) = model.predict(went_on, {}), model.predict(waited, sources)
        share = len(went_on) / len(past)
        prediction = late.model_copy(update={"caught_up_s": hedge(early.caught_up_s, late.caught_up_s, share),
                                             "stall_s": hedge(early.stall_s, late.stall_s, share), "bound": "race"})
        inputs |= {"caught_up_if_went_on_s": early.caught_up_s, "caught_up_if_waited_s": late.caught_up_s,
                   "went_on_share": round(share, 2)}
        sources = late_sources | {"caught_up_s": (
            f"went on in {len(went_on)} of the {len(past)} drills learnt from: each outcome forecast from its own "
            "drills (the inputs here: the waiting ones'), then the value missing either by the least")}
    else:
        prediction, inputs, sources = model.predict(past, sources)
    if past:
        inputs["pace_ratio"] = round(statistics.median(m["pace"] for m in past), 2)
        sources["pace_ratio"] = (f"the job's median batch time in the {PACE_S:.0f} s before now over the one before "
                                 "each of those drills' faults (their stalls scaled by it)")
    return CatchUpForecast(predicted_caught_up_s=prediction.caught_up_s, stall_s=prediction.stall_s,
                           bound=prediction.bound, batches=prediction.batches, inputs=inputs, sources=sources,
                           learned_from=[m["drill_id"] for m in past])


@dataclass(frozen=True)
class _Model:
    """What a forecast knows before it picks the drills to learn the stall and the offset from."""

    delay_s: float
    add_worker_s: float
    resume_s: float
    relaunch: bool
    rate: float
    cost: BatchCost
    pending_s: float
    two_cycles: float

    @property
    def capacity_s(self) -> float:
        """When the capacity is back: the drill's delay, then a worker's join."""
        return self.delay_s + self.add_worker_s

    def predict(self, past: list[dict], sources: dict[str, str]) -> tuple[CaughtUpPrediction, dict, dict[str, str]]:
        """The prediction from the drills ``past`` (the capacity's return and their median offset; none: Chiron's
        model), its inputs, and where each came from (``sources`` and more)."""
        sources = dict(sources)
        learned = "median of drills " + ", ".join(f"#{m['drill_id']}" for m in past)
        stall, stall_inputs = _stall(past, self.delay_s, self.add_worker_s, self.resume_s, learned, sources)
        inputs = {"replacement_delay_s": self.delay_s, "add_worker_s": round(self.add_worker_s, 1), **stall_inputs,
                  "input_rate": round(self.rate, 2)}
        if past:
            offset = statistics.median(m["offset_s"] for m in past)
            sources["offset_s"] = learned + " (from the capacity's return to caught up, as measured)"
            return (CaughtUpPrediction(caught_up_s=round(self.capacity_s + offset, 1), stall_s=round(stall, 1),
                                       bound="capacity", batches=[]), inputs | {"offset_s": round(offset, 1)}, sources)
        sources["tail_s"] = "assumed: two batches at the job's steady time between batches"
        sources["pending_s"] = "half the mean time between those batches"
        inputs |= {"pending_s": round(self.pending_s, 1), "overhead_s": self.cost.overhead_s,
                   "per_row_s": self.cost.per_row_s, "tail_s": round(self.two_cycles, 1)}
        if self.relaunch:  # the race, with nothing learnt: the later outcome forecast, the earlier shown (docstring)
            relaunched = self._chiron(max(self.resume_s, 1.0))
            inputs["caught_up_if_went_on_s"] = relaunched.caught_up_s
            sources["caught_up_s"] = (f"the job waiting for the capacity; had the master's relaunch on the cores free "
                                      f"outside the domain won the race, {relaunched.caught_up_s:g} s")
        return self._chiron(stall), inputs, sources

    def _chiron(self, stall_s: float) -> CaughtUpPrediction:
        """Chiron's recurrence (:func:`~ft_core.recovery.drill_catch_up.predict_caught_up`) after ``stall_s``."""
        return predict_caught_up(CaughtUpInputs(stall_s=stall_s, pending_s=self.pending_s, input_rate=self.rate,
                                                cost=self.cost, capacity_back_s=self.capacity_s,
                                                tail_s=self.two_cycles))


def measured_drill(store, job: str, drill: dict[str, Any]) -> dict[str, Any] | None:
    """What one finished drill measured for the next ones' forecasts: its stall (the first batch after its fault),
    whether the job went on (that batch ended before the capacity was back), its replacement delay, its offset (from
    the capacity's return to caught up) and the job's batch time before its fault; None when its batches are not in
    the store (a job whose driver does not write there)."""
    failed, caught = drill["failed_at"], drill["time_to_caught_up_s"]
    _, batches = _main_stream(store.job_batches(job, failed - PACE_S, failed + caught + 60))  # running just before?
    before = [b for b in batches if b["batch_end"] <= failed]
    after = [b for b in batches if b["batch_end"] > failed + DONE_BEFORE_S]
    if not before or not after or drill["capacity_alive_s"] is None:
        return None
    stall = after[0]["batch_end"] - failed
    return {"drill_id": drill["drill_id"], "stall_s": stall, "went_on": stall < drill["capacity_alive_s"],
            "offset_s": max(0.0, caught - drill["capacity_alive_s"]),
            "delay_s": float(drill["params"].get("replacement_delay_s", DEFAULT_REPLACEMENT_DELAY_S)),
            "batch_time_s": _batch_time(before)}


def _batch_time(batches: list[dict]) -> float | None:
    """The median time a batch took (start to end), None when no batch recorded its start (before migration 018)."""
    took = [b["batch_end"] - b["batch_start"] for b in batches if b.get("batch_start") is not None]
    took = [t for t in took if t > 0]
    return statistics.median(took) if took else None


def _paced(past: list[dict], batch_time_now: float | None) -> list[dict]:
    """Each learnt drill with its ``pace`` (the job's batch time now over before its fault; 1 when either is not
    known) and its stall scaled by it (module docstring)."""
    out = []
    for m in past:
        pace = batch_time_now / m["batch_time_s"] if batch_time_now and m.get("batch_time_s") else 1.0
        waited = 0.0 if m["went_on"] else min(m["delay_s"], m["stall_s"])  # wall-clock: not scaled
        out.append({**m, "pace": pace, "stall_s": waited + (m["stall_s"] - waited) * pace})
    return out


def first_batch_after(store, job: str, failed_at: float) -> float | None:
    """Seconds from the fault to the end of the job's first batch after it (the stall), None when none is recorded
    in the ten minutes after. A batch that ended within :data:`DONE_BEFORE_S` of the fault is not it."""
    _, batches = _main_stream(store.job_batches(job, failed_at + DONE_BEFORE_S, failed_at + 600))
    return round(batches[0]["batch_end"] - failed_at, 1) if batches else None


def _steady_batches(store, job: str, now: float, last_drill: dict | None) -> tuple[str | None, list[dict], bool]:
    """The job's batches in the :data:`STEADY_S` before ``now``, but not those of ``last_drill``'s catch-up (up to
    :data:`DRAINED_AFTER_S` after it was caught up) when at least 3 remain: its backlog's rows arrived before; and
    whether any were left out."""
    stream, batches = _main_stream(store.job_batches(job, now - STEADY_S, now))
    if last_drill:
        drained = last_drill["failed_at"] + last_drill["time_to_caught_up_s"] + DRAINED_AFTER_S
        after = [b for b in batches if b["batch_end"] > drained]
        if len(batches) > len(after) >= 3:
            return stream, after, True
    return stream, batches, False


def _main_stream(batches: dict[str, list[dict]]) -> tuple[str | None, list[dict]]:
    """The stream that read the most rows (the primary's; an attached job: its busiest query) and its batches."""
    if not batches:
        return None, []
    stream = max(sorted(batches), key=lambda s: sum(b["input_rows"] for b in batches[s]))
    return stream, batches[stream]


def _points(batches: list[dict]) -> list[tuple[float, float]]:
    """(rows read, seconds since the batch before ended) of each batch but the first."""
    return [(b["input_rows"], b["batch_end"] - a["batch_end"]) for a, b in zip(batches, batches[1:])]


def _add_worker(store, job: str, now: float, sources: dict[str, str]) -> float:
    """Capacity back after the drill's delay: the median over the newest :data:`LEARN_FROM` drills on the job's
    cluster (this job's, stalled or not, and other jobs' on the same primary master: a worker's join is the
    cluster's), else assumed."""
    joins = [(d, d["capacity_alive_s"] - float(d["params"].get("replacement_delay_s", DEFAULT_REPLACEMENT_DELAY_S)))
             for d in store.cluster_capacity_timings(job, now, limit=LEARN_FROM)]
    if not joins:
        sources["add_worker_s"] = f"assumed ({ASSUMED_ADD_WORKER_S:g}: no earlier drill on the job's cluster measured it)"
        return ASSUMED_ADD_WORKER_S
    others = sorted({d["job"] for d, _ in joins} - {job})
    sources["add_worker_s"] = ("median of drills " + ", ".join(f"#{d['drill_id']}" for d, _ in joins) + " on the job's "
                               "cluster" + (f" (of {', '.join(others)} too)" if others else ""))
    return statistics.median(max(0.0, s) for _, s in joins)


def _stall(past: list[dict], delay_s: float, add_worker_s: float, resume_s: float, learned: str,
           sources: dict[str, str]) -> tuple[float, dict[str, float]]:
    """When the first batch after the fault ends (module docstring), and what it was made of."""
    if past:
        moved = [m["stall_s"] if m["went_on"] else m["stall_s"] - m["delay_s"] + delay_s for m in past]
        sources["stall_s"] = learned + (" (each scaled by the job's pace; one that waited for the capacity: moved by "
                                        "the difference in delay)")
        stall = statistics.median(moved)
        return max(stall, 1.0), {"stall_s": round(stall, 1)}
    sources["stall_s"] = ("assumed: the capacity back" + (f", then {resume_s:g} s for an executor to start there"
                                                          if resume_s else " (the job has executors elsewhere)"))
    return max(delay_s + add_worker_s + resume_s, 1.0), {"resume_s": resume_s}


def _cost(store, job: str, steady: list[tuple[float, float]], rate: float, trigger_s: float,
          sources: dict[str, str]) -> BatchCost:
    """A batch's cost: ``1 / I_max`` from the job's checkpoint profile, else :data:`ASSUMED_HEADROOM` times the input
    rate; its fixed cost what remains of the steady batches' time."""
    rows = statistics.fmean(r for r, _ in steady)
    cycle = statistics.fmean(c for _, c in steady)
    i_max = _profiled_i_max(store, job)
    if i_max:
        sources["batch_cost"] = f"1 / I_max of the job's checkpoint profile ({i_max:.0f} rows/s)"
        per_row = 1 / i_max
    else:
        sources["batch_cost"] = (f"assumed: processing {ASSUMED_HEADROOM:g} x the input rate (no checkpoint profile "
                                 "measured it)")
        per_row = 1 / (ASSUMED_HEADROOM * max(rate, 1e-6))
    return BatchCost(overhead_s=round(max(0.0, cycle - per_row * rows), 3), per_row_s=per_row, trigger_s=trigger_s)


def _profiled_i_max(store, job: str) -> float | None:
    profile = store.latest_profile(job, "checkpoint")
    rates = [rep.get("max_ingress_rate") or 0.0 for p in (profile or {}).get("doc", {}).get("profiles", [])
             for rep in p.get("repetitions", [])]
    return max(rates, default=0.0) or None
