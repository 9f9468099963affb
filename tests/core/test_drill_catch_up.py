"""A drill's catch-up forecast (issue 38, item 2) on the real PostgreSQL history store: the job's batches are written
as its driver writes them, by a generator that follows the model (a micro-batch of n rows takes a + b n seconds;
after a fault nothing ends until the stall is over), with two earlier drills recorded as the engine records them.
The forecast must learn from the store what those drills measured (capacity back, the stalled batch's end, the
batches until caught up, a batch's cost) and predict the next drill from it; without earlier drills it says what it
assumed, or uses the checkpoint profile's I_max."""

from __future__ import annotations

import json
import statistics
import time

import pytest

from ft_core.recovery.drill_catch_up import BatchCost, CaughtUpInputs, hedge, predict_caught_up
from ft_core.store.history import HistoryStore, JobSpec
from ft_core.store.migrations import upgrade
from ft_core.store.stream_progress import BatchProgress
from spark_jobs.drills.catch_up import first_batch_after, forecast_caught_up
from tests.store_fixtures import pg_conn, pg_server  # noqa: F401 - fixtures

JOB = "alerts"
STREAM = f"ftops-{JOB}-primary"
RATE, A, B = 100.0, 3.0, 0.0025  # rows/s in, a batch's fixed cost (s), its cost per row (s)


class Feed:
    """The job's driver: batches back to back at RATE rows/s, each taking A + B rows seconds."""

    def __init__(self, store: HistoryStore, start: float):
        self.store, self.t, self.batch = store, start, 0
        self.pace = 1.0  # the machine's slowdown: every batch takes pace times as long
        self._write(round(RATE * 4))

    def _write(self, rows: int) -> float:
        took = (A + B * rows) * self.pace
        self.t += took
        self.store.record_batch(BatchProgress(stream=STREAM, app_id="app-1", batch_id=self.batch, role="primary",
                                              batch_start=self.t - took, batch_end=self.t, input_rows=rows))
        self.batch += 1
        return took

    def steady_until(self, until: float) -> None:
        took = 4.0
        while self.t + (A + B * RATE * took) * self.pace < until:
            took = self._write(round(RATE * took))

    def outage(self, failed_at: float, stall_s: float) -> float:
        """The fault at ``failed_at``: the batch in flight ends ``stall_s`` after it; the two after it catch up.
        Returns when the second ended (caught up), seconds after the fault."""
        since = self.t
        self.t = failed_at + stall_s - (A + B * RATE * 4) * self.pace  # the stalled batch ends at failed_at + stall_s
        self._write(round(RATE * 4))
        took = self._write(round(RATE * (self.t - since)))
        self._write(round(RATE * took))
        return self.t - failed_at


def _drill(store: HistoryStore, failed_at: float, capacity_alive_s: float, caught_s: float, *, delay_s: float = 20.0,
           kill_driver: bool = False, in_timeline: bool = False) -> int:
    drill_id = store.start_drill(JOB, None, {"replacement_delay_s": delay_s, "kill_driver": kill_driver})
    report = {"time_to_caught_up_s": caught_s, "capacity_alive_s": capacity_alive_s}
    if not in_timeline:
        report["failed_at"] = failed_at
    store.finish_drill(drill_id, report, "passed")
    if in_timeline:  # a drill recorded before the report kept its fault's time: its experiment's timeline has it
        with store.conn, store.conn.cursor() as cur:
            cur.execute("UPDATE ftops_drill SET experiment = jsonb_build_object('timeline', jsonb_build_array("
                        "jsonb_build_object('at', %s::float8, 'event', 'failure injected'))) WHERE drill_id = %s",
                        (failed_at, drill_id))
    return drill_id


@pytest.fixture
def store(pg_conn) -> HistoryStore:  # noqa: F811
    upgrade(pg_conn)
    store = HistoryStore(pg_conn)
    store.register_job(JobSpec(name=JOB, workload="w"))
    return store


def test_the_forecast_learns_the_stall_and_the_time_from_the_capacity_to_caught_up_from_earlier_drills(store):
    now = time.time()
    feed = Feed(store, now - 2000)
    measured, caught_s = {}, []
    for failed_at, capacity_alive, stall in ((now - 1500, 50.0, 60.0), (now - 900, 56.0, 72.0)):
        feed.steady_until(failed_at)
        caught_s.append(feed.outage(failed_at, stall))
        measured[_drill(store, failed_at, capacity_alive, caught_s[-1], in_timeline=failed_at < now - 1000)] = stall
    feed.steady_until(now)

    forecast = forecast_caught_up(store, JOB, replacement_delay_s=20.0, kill_driver=False, now=now)
    assert sorted(forecast.learned_from) == sorted(measured)
    # capacity back 30 and 36 s after the delay (median 33); the stalled batches ended at 60 and 72 s (median 66)
    assert forecast.inputs["add_worker_s"] == pytest.approx(33.0, abs=0.05)
    assert forecast.inputs["stall_s"] == pytest.approx(66.0, abs=0.05)
    assert forecast.stall_s == pytest.approx(66.0, abs=0.1)
    assert "median of drills" in forecast.sources["stall_s"] and "median of drills" in forecast.sources["offset_s"]
    # caught up: the capacity's return (20 s delay, a 33 s join) and the median time from it to caught up
    offsets = [caught - capacity for caught, capacity in zip(caught_s, (50.0, 56.0))]
    assert forecast.inputs["offset_s"] == pytest.approx(statistics.median(offsets), abs=0.05)
    assert forecast.predicted_caught_up_s == pytest.approx(20.0 + 33.0 + statistics.median(offsets), abs=0.1)
    assert forecast.bound == "capacity"
    # the stall as the report measures it: the first batch after the fault
    assert first_batch_after(store, JOB, now - 900) == pytest.approx(72.0, abs=0.1)


def test_a_batch_that_ends_just_after_the_fault_had_done_its_work_and_is_not_the_end_of_the_stall(store):
    """In CI a drill's report said the primary stalled 0.0 s: its batch in flight ended 0.04 s after the fault (the
    driver was committing); the stall is the next batch's, which waited for the replacement worker."""
    now = time.time()
    feed = Feed(store, now - 1200)
    feed.steady_until(now - 900)
    for batch_id, end in ((900, now - 900 + 0.04), (901, now - 900 + 41.0)):
        store.record_batch(BatchProgress(stream=STREAM, app_id="app-1", batch_id=batch_id, role="primary",
                                         batch_end=end, input_rows=400))
    assert first_batch_after(store, JOB, now - 900) == pytest.approx(41.0, abs=0.1)


def test_a_drill_that_kills_the_driver_learns_only_from_drills_that_did(store):
    now = time.time()
    feed = Feed(store, now - 1200)
    feed.steady_until(now - 900)
    feed.outage(now - 900, 60.0)
    _drill(store, now - 900, 50.0, 80.0)
    feed.steady_until(now)
    killing = forecast_caught_up(store, JOB, replacement_delay_s=20.0, kill_driver=True, now=now)
    assert killing.learned_from == [] and killing.sources["stall_s"] == ("assumed: the capacity back, then 30 s for an "
                                                                         "executor to start there")
    # a worker joins as fast whoever's driver died: capacity back 50 s after the fault, 20 s of them the delay
    assert killing.inputs["add_worker_s"] == 30.0 and killing.sources["add_worker_s"].startswith("median of drills #")
    assert killing.stall_s == pytest.approx(80.0)
    assert forecast_caught_up(store, JOB, replacement_delay_s=20.0, kill_driver=False, now=now).learned_from != []
    # a drill whose fault came after the forecast's time is not learnt from (the forecast is made before the fault)
    assert forecast_caught_up(store, JOB, replacement_delay_s=20.0, kill_driver=False, now=now - 950).learned_from == []


def test_without_earlier_drills_the_cost_comes_from_the_checkpoint_profile_or_is_assumed(store):
    now = time.time()
    feed = Feed(store, now - 400)
    feed.steady_until(now)
    assumed = forecast_caught_up(store, JOB, replacement_delay_s=30.0, kill_driver=False, now=now)
    assert assumed.sources["batch_cost"].startswith("assumed: processing 4 x the input rate")
    assert assumed.inputs["per_row_s"] == pytest.approx(1 / (4 * RATE), rel=0.05)
    store.save_profile(JOB, "checkpoint", {"profiles": [{"checkpoint_interval_ms": 1000, "repetitions": [
        {"max_ingress_rate": 250.0}, {"max_ingress_rate": 800.0}]}]})
    profiled = forecast_caught_up(store, JOB, replacement_delay_s=30.0, kill_driver=False, now=now)
    assert profiled.sources["batch_cost"] == "1 / I_max of the job's checkpoint profile (800 rows/s)"
    assert profiled.inputs["per_row_s"] == pytest.approx(1 / 800)
    assert profiled.predicted_caught_up_s < assumed.predicted_caught_up_s  # a faster job catches up sooner
    # no batch in the five minutes before: nothing to forecast from
    assert forecast_caught_up(store, JOB, replacement_delay_s=30.0, kill_driver=False, now=now + 3600) is None


def test_the_forecast_bench_replays_each_drill_from_the_store_as_it_was_before_its_fault(store, pg_server, cli):  # noqa: F811
    now = time.time()
    feed = Feed(store, now - 2000)
    ids = []
    for failed_at, capacity_alive, stall in ((now - 1500, 50.0, 60.0), (now - 1000, 56.0, 72.0), (now - 500, 52.0, 64.0)):
        feed.steady_until(failed_at)
        ids.append(_drill(store, failed_at, capacity_alive, feed.outage(failed_at, stall)))
    feed.steady_until(now)
    res = cli("bench", "drill-forecast", "--job", JOB, env={"FTOPS_DATABASE_URL": pg_server.url()})
    assert res.code == 0, res.err
    rows = {int(line.split()[0]): line for line in res.out.splitlines() if line.split()[:1] in ([str(i)] for i in ids)}
    assert list(rows) == ids
    cells = {i: line.split("  ") for i, line in rows.items()}
    learnt = {i: [c.strip() for c in cells[i] if c.strip()][3] for i in ids}
    assert learnt == {ids[0]: "none (assumed)", ids[1]: f"#{ids[0]}", ids[2]: f"#{ids[1]}, #{ids[0]}"}
    # stalls forecast: assumed 20 + 30 + 15; then the first drill's 60; then the median of 60 and 72; measured 60, 72, 64
    # pace: none before the first drill; 1.00 after (the generated job's batches take as long throughout)
    stalls = {i: [c.strip() for c in cells[i] if c.strip()][4:7] for i in ids}
    assert stalls == {ids[0]: ["-", "65.0", "60.0"], ids[1]: ["1.00", "60.0", "72.0"], ids[2]: ["1.00", "66.0", "64.0"]}
    assert "**3 of 3 forecasts within 25%**" in res.out and "of those learnt from earlier drills: 2 of 2" in res.out
    assert "One number chosen after seeing every measured time would be within 25% of 3 of 3" in res.out
    assert all(line.rstrip().endswith(("capacity", "backlog")) for line in rows.values())  # each forecast's bound
    missing = cli("bench", "drill-forecast", "--job", "nobody", env={"FTOPS_DATABASE_URL": pg_server.url()})
    assert missing.code == 2 and "job 'nobody' is not registered" in missing.err


def test_where_the_job_went_on_in_some_drills_and_waited_in_others_the_forecast_hedges_the_race(store):
    """The soaks of 2026-12-01 and 2026-12-03: the primary's one executor was lost with its domain; the master
    relaunched it on the other domain's free core, and that start raced the capacity's return: the first batch after
    the fault ended before the capacity was back in some drills (the job went on) and after it in others. A median
    over both outcomes missed whichever came next (+36 to +42 %, and +170 % when forecast by the last outcome). Each
    outcome is forecast from its own drills; the forecast is the value missing either by the least, or, where no
    value is within 25 % of both, the outcome seen more often. A killed driver's drills are another kind."""
    now = time.time()
    feed = Feed(store, now - 2400)
    ids, offsets = [], []
    for k, (stall, capacity, delay) in enumerate(((25.0, 45.0, 20.0), (28.0, 44.0, 20.0), (90.0, 60.0, 40.0))):
        failed_at = now - 2000 + 500 * k  # went on, went on, waited (its delay 40 s: moved to 70 s at a delay of 20)
        feed.steady_until(failed_at)
        caught = feed.outage(failed_at, stall)
        ids.append(_drill(store, failed_at, capacity, caught, delay_s=delay))
        offsets.append(max(0.0, caught - capacity))
    feed.steady_until(now)
    forecast = forecast_caught_up(store, JOB, replacement_delay_s=20.0, kill_driver=False, now=now)
    assert sorted(forecast.learned_from) == sorted(ids) and forecast.bound == "race"
    early, late = forecast.inputs["caught_up_if_went_on_s"], forecast.inputs["caught_up_if_waited_s"]
    assert forecast.inputs["went_on_share"] == pytest.approx(2 / 3, abs=0.01)
    # each outcome: the capacity back 44 s after the fault (20 s delay and a 24 s join, the median of 25, 24 and 20 s)
    # and the median time from it to caught up of its own drills (the two that went on: about 0)
    assert max(offsets[:2]) < 1 and early == pytest.approx(44.0 + statistics.median(offsets[:2]), abs=0.1)
    assert late == pytest.approx(44.0 + offsets[2], abs=0.1)
    assert forecast.inputs["stall_s"] == pytest.approx(70.0, abs=0.1)
    assert forecast.predicted_caught_up_s == hedge(early, late, 2 / 3)
    assert late / early > 5 / 3 and forecast.predicted_caught_up_s == early  # too far apart: the more frequent one
    longer = forecast_caught_up(store, JOB, replacement_delay_s=80.0, kill_driver=False, now=now)
    assert longer.inputs["caught_up_if_went_on_s"] == pytest.approx(early + 60.0, abs=0.1)  # the capacity comes later
    assert longer.inputs["caught_up_if_waited_s"] == pytest.approx(late + 60.0, abs=0.1)
    assert longer.inputs["stall_s"] == pytest.approx(130.0, abs=0.1)  # the waiting drill waits 60 s longer
    # both outcomes within 25 % of one value: the value missing either by the same fraction
    assert hedge(57.0, 85.0, 0.6) == pytest.approx(2 * 57 * 85 / (57 + 85), abs=0.05)
    killing = forecast_caught_up(store, JOB, replacement_delay_s=20.0, kill_driver=True, now=now, survivors=True)
    assert killing.learned_from == [] and killing.stall_s == pytest.approx(20.0 + 24.0 + 30.0)  # joins of 25, 24, 20 s


def test_the_learnt_stalls_are_scaled_by_the_jobs_batch_time_now_over_before_each_drill_and_the_offsets_are_not(store):
    """The soak of 2026-12-02: in a slow stretch of the shared machine the primary's batches took about three times as
    long and so did the stall (46 s, then 77-101 s); the median of the newest drills forecast the slow stretch's
    first drills too early and, after it, the drills that followed too late. Each learnt stall is scaled by the
    job's batch time now over its batch time before that drill's fault."""
    now = time.time()
    feed = Feed(store, now - 2400)
    ids, offsets = [], []
    for k, (pace, stall) in enumerate(((1.0, 40.0), (1.5, 60.0), (1.5, 60.0))):
        failed_at = now - 2000 + 500 * k  # one drill at the usual pace, two in a slow stretch half as slow again
        feed.pace = pace
        feed.steady_until(failed_at)
        caught = feed.outage(failed_at, stall)
        ids.append(_drill(store, failed_at, stall + 1, caught))  # it went on, then the capacity came back
        offsets.append(caught - (stall + 1))
    feed.pace = 1.0  # the stretch is over
    feed.steady_until(now)
    after = forecast_caught_up(store, JOB, replacement_delay_s=20.0, kill_driver=False, now=now)
    # the steady batch takes 3 s / (1 - 0.25) = 4 s at pace 1 and 4.5 s / (1 - 0.375) = 7.2 s at pace 1.5 (it reads
    # more rows then)
    assert after.stall_s == pytest.approx(60.0 * 4 / 7.2, rel=0.05)  # 60 s at 7.2 s a batch is 33 s at 4 s
    assert after.inputs["pace_ratio"] == pytest.approx(4 / 7.2, rel=0.05)
    assert "pace" in after.sources["stall_s"] and "batch time" in after.sources["pace_ratio"]
    feed.pace = 1.5  # slow again: the forecast follows
    feed.steady_until(now + 300)
    slow = forecast_caught_up(store, JOB, replacement_delay_s=20.0, kill_driver=False, now=now + 300)
    assert slow.stall_s == pytest.approx(60.0, rel=0.05)  # 40 s at 4 s a batch is 72 s at 7.2 s; 60 and 60 as they were
    # caught up: the capacity's return (20 s + the median join, 41 s) plus the drills' offsets as they were measured:
    # the pace moves the stall alone (scaling the rest too multiplied its errors in the soak of 2026-12-03 12:23 UTC)
    expected = 61.0 + statistics.median(offsets)
    assert after.predicted_caught_up_s == slow.predicted_caught_up_s == pytest.approx(expected, abs=0.1)


def test_a_job_that_goes_on_before_the_capacity_is_back_is_caught_up_a_learnt_offset_after_it(store):
    """The soak of 2026-12-03: in every drill the job went on 14-35 s after the fault, and was caught up (its output
    reaching the input as it was at the capacity's return) 5-10 s after the capacity was back, whatever its batches
    after the stall. The forecast is the capacity's return plus that offset, and a longer replacement delay moves it."""
    now = time.time()
    feed = Feed(store, now - 1400)
    for failed_at in (now - 1000, now - 500):
        feed.steady_until(failed_at)
        feed.outage(failed_at, 20.0)  # its backlog worked off well before the capacity's return
        _drill(store, failed_at, 40.0, 46.0)  # capacity back at 40 s (a 20 s join), caught up 6 s later
    feed.steady_until(now)
    forecast = forecast_caught_up(store, JOB, replacement_delay_s=20.0, kill_driver=False, now=now)
    assert forecast.bound == "capacity" and forecast.inputs["offset_s"] == pytest.approx(6.0, abs=0.05)
    assert forecast.predicted_caught_up_s == pytest.approx(46.0, abs=0.1)
    later = forecast_caught_up(store, JOB, replacement_delay_s=50.0, kill_driver=False, now=now)
    assert later.predicted_caught_up_s == pytest.approx(76.0, abs=0.1)


def test_before_any_drill_a_job_with_executors_elsewhere_is_assumed_back_by_the_capacity_at_the_latest(store):
    now = time.time()
    feed = Feed(store, now - 400)
    feed.steady_until(now)
    elsewhere = forecast_caught_up(store, JOB, replacement_delay_s=20.0, kill_driver=False, now=now, survivors=True)
    assert elsewhere.stall_s == pytest.approx(50.0)  # the delay and a worker's assumed join
    assert elsewhere.sources["stall_s"] == "assumed: the capacity back (the job has executors elsewhere)"
    alone = forecast_caught_up(store, JOB, replacement_delay_s=20.0, kill_driver=False, now=now)
    assert alone.stall_s == pytest.approx(65.0)  # and 15 s for an executor to start there


def test_before_any_drill_a_job_whose_executors_can_start_on_free_cores_elsewhere_is_forecast_waiting(store):
    """The relaunch on a free core outside the domain races the capacity's return. With nothing learnt the forecast
    is the later outcome (the first drills of 2026-12-03: the relaunch won once and lost four times, the earlier
    outcome's forecast missing those by 28-44 %) and its inputs say what the earlier would have been."""
    now = time.time()
    feed = Feed(store, now - 400)
    feed.steady_until(now)
    raced = forecast_caught_up(store, JOB, replacement_delay_s=20.0, kill_driver=False, now=now, free_cores_outside=1)
    full = forecast_caught_up(store, JOB, replacement_delay_s=20.0, kill_driver=False, now=now, free_cores_outside=0)
    assert raced.stall_s == pytest.approx(65.0)  # the capacity back (50 s), then an executor's start (15 s)
    assert raced.predicted_caught_up_s == full.predicted_caught_up_s and raced.bound == full.bound
    assert "caught_up_if_went_on_s" not in full.inputs  # no free core: no race
    went_on = raced.inputs["caught_up_if_went_on_s"]  # an executor's start on the free core, then the backlog
    assert went_on == pytest.approx(50.0 + raced.inputs["tail_s"], abs=0.1)  # worked off by the capacity's return
    assert raced.inputs["tail_s"] == pytest.approx(2 * 4.0, rel=0.05)  # two steady batches of 4 s
    assert went_on < raced.predicted_caught_up_s
    assert f"won the race, {went_on:g} s" in raced.sources["caught_up_s"]
    restarted = forecast_caught_up(store, JOB, replacement_delay_s=20.0, kill_driver=True, now=now,
                                   free_cores_outside=1)
    assert restarted.stall_s == pytest.approx(80.0)  # a killed driver: its resubmission waits as before
    assert "caught_up_if_went_on_s" not in restarted.inputs


def test_a_workers_join_is_learnt_from_the_drills_of_every_job_on_the_same_cluster(store):
    """The CI drill of a fresh job forecast a 69 s catch-up against 20 s measured: it assumed a worker takes 30 s
    to join. A worker's join is the cluster's: another job's drill on the same master measured it."""
    now = time.time()
    feed = Feed(store, now - 400)
    feed.steady_until(now)
    master = {"primary_master": "spark://10.0.0.1:7077"}
    for name, deployment in (("neighbour", master), ("elsewhere", {"primary_master": "spark://10.0.9.9:7077"})):
        store.register_job(JobSpec(name=name, workload="w", deployment=deployment))
    with store.conn, store.conn.cursor() as cur:
        cur.execute("UPDATE ftops_job SET deployment = %s WHERE name = %s", (json.dumps(master), JOB))
    assumed = forecast_caught_up(store, JOB, replacement_delay_s=5.0, kill_driver=False, now=now)
    assert assumed.inputs["add_worker_s"] == 30.0 and assumed.sources["add_worker_s"].startswith("assumed")
    for name, alive_s in (("neighbour", 9.0), ("neighbour", 11.0), ("elsewhere", 60.0)):
        drill_id = store.start_drill(name, None, {"replacement_delay_s": 5.0})
        store.finish_drill(drill_id, {"failed_at": now - 300, "time_to_caught_up_s": 20.0, "capacity_alive_s": alive_s},
                           "passed")
    learnt = forecast_caught_up(store, JOB, replacement_delay_s=5.0, kill_driver=False, now=now)
    assert learnt.inputs["add_worker_s"] == pytest.approx(5.0)  # joins of 4 and 6 s; not the other cluster's 55 s
    assert "(of neighbour too)" in learnt.sources["add_worker_s"] and learnt.learned_from == []
    assert learnt.predicted_caught_up_s < assumed.predicted_caught_up_s


def test_the_input_rate_is_not_read_from_the_last_drills_catch_up(store):
    """The soak of 2026-12-03 12:23 UTC: the second drill's forecast, 5 min after the first drill's fault, read the
    input rate from the batches of the 300 s before, which began with the first drill's catch-up (7,300 and 2,000
    rows, arrived before that window): 125 rows/s for 100. The window starts after the last drill's catch-up."""
    now = time.time()
    feed = Feed(store, now - 900)
    feed.steady_until(now - 320)
    caught = feed.outage(now - 320, 60.0)  # the stalled batch ends 260 s before the forecast, inside its window
    _drill(store, now - 320, 50.0, caught)
    feed.steady_until(now)
    window = store.job_batches(JOB, now - 300, now)[STREAM]
    naive = sum(b["input_rows"] for b in window[1:]) / (window[-1]["batch_end"] - window[0]["batch_end"])
    assert naive > 1.15 * RATE  # what the forecast read before
    forecast = forecast_caught_up(store, JOB, replacement_delay_s=20.0, kill_driver=False, now=now)
    assert forecast.inputs["input_rate"] == pytest.approx(RATE, rel=0.05)
    after_catch_up = [b for b in window if b["batch_end"] > now - 320 + caught + 30]
    assert forecast.sources["input_rate"].startswith(f"{len(after_catch_up)} batches")
