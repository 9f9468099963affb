"""The drill's steady-state hypothesis (spark_jobs.drills.probes.check_steady) on real input files and the
metrics records a run's listener writes: the primary and, when given, the replica must be within the
bound of the input's watermark; each refusal names the stream that lags."""

from __future__ import annotations

import json
import time
from datetime import datetime, timezone
from pathlib import Path

import pytest

from ft_core.errors import InputError
from spark_jobs.drills.probes import check_steady
from spark_jobs.pipeline import sample_input
from spark_jobs.pipeline.loading import load_workload

PARAMS = ["rate=50"]
START_MS = 1_700_000_000_000  # topk's default start


def _iso(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000, tz=timezone.utc).isoformat().replace("+00:00", "Z")


def _ran_until(output: Path, watermark_ms: int) -> Path:
    """A run whose last micro-batch used this watermark (the record its metrics listener writes)."""
    (output / "_metrics").mkdir(parents=True)
    record = {"batch_id": 3, "timestamp": _iso(START_MS), "watermark": _iso(watermark_ms), "batch_duration_ms": 500}
    (output / "_metrics" / "metrics.jsonl").write_text(json.dumps(record) + "\n")
    return output


@pytest.fixture
def job(tmp_path):
    sample_input.write_seconds(load_workload("topk", PARAMS), tmp_path / "in", 100)  # input watermark ~ +99 s
    return tmp_path


def test_a_job_whose_streams_keep_up_is_steady(job):
    primary, replica = _ran_until(job / "p", START_MS + 90_000), _ran_until(job / "r", START_MS + 80_000)
    state = check_steady("topk", PARAMS, job / "in", primary, 60, replica)
    assert 5 < state.lag_s < 12 and 15 < state.replica_lag_s < 22
    assert check_steady("topk", PARAMS, job / "in", primary, 60).replica_lag_s is None


def test_a_replica_still_behind_its_input_refuses_the_drill(job):
    primary, replica = _ran_until(job / "p", START_MS + 90_000), _ran_until(job / "r", START_MS + 10_000)
    with pytest.raises(InputError, match=r"steady state: the replica is 8\d s behind its input, more than 60 s"):
        check_steady("topk", PARAMS, job / "in", primary, 60, replica)
    (job / "fresh").mkdir()
    with pytest.raises(InputError, match="the replica has no watermark yet"):
        check_steady("topk", PARAMS, job / "in", primary, 60, job / "fresh")


def test_a_replica_whose_batches_have_passed_no_event_time_yet_has_no_watermark_not_an_epoch_sized_lag(job):
    """Spark reports the watermark as the epoch until event time passes one: a replica reading its backlog was
    said to be 1,700,000,572 s behind its input (a new user's trial)."""
    primary = _ran_until(job / "p", START_MS + 90_000)
    with pytest.raises(InputError, match="the replica has no watermark yet"):
        check_steady("topk", PARAMS, job / "in", primary, 60, _ran_until(job / "r", 0))


def test_a_primary_behind_its_input_refuses_the_drill(job):
    with pytest.raises(InputError, match=r"steady state: the primary is \d+ s behind its input, more than 30 s"):
        check_steady("topk", PARAMS, job / "in", _ran_until(job / "p", START_MS + 20_000), 30)


def test_the_preflight_waits_for_a_replica_that_catches_up_and_not_longer(job):
    from threading import Timer

    from spark_jobs.drills.probes import wait_steady

    primary = _ran_until(job / "p", START_MS + 90_000)
    (job / "r").mkdir()
    catch_up = Timer(1.0, _ran_until, (job / "r", START_MS + 85_000))  # its first micro-batch ends a second later
    catch_up.start()
    try:
        assert wait_steady("topk", PARAMS, job / "in", primary, 60, job / "r", wait_s=30, interval_s=0.2).replica_lag_s < 20
    finally:
        catch_up.cancel()
    (job / "never").mkdir()
    started = time.monotonic()
    with pytest.raises(InputError, match="the replica has no watermark yet"):
        wait_steady("topk", PARAMS, job / "in", primary, 60, job / "never", wait_s=1, interval_s=0.2)
    assert time.monotonic() - started < 10  # its own bound, not the default 180 s


def test_after_the_drill_the_primary_is_given_time_to_get_back_within_its_bound_and_not_longer(job):
    """A drill's batch reference runs beside the job on the same cores and can leave the primary behind for a
    while (CI, stop 44: 128 s behind right after it, the drill failed): the check after waits like the one before."""
    from threading import Timer

    from spark_jobs.drills.probes import settled_lag_s

    behind = _ran_until(job / "p", START_MS + 20_000)  # ~79 s behind, over the 60 s bound
    back = Timer(1.0, lambda: (behind / "_metrics" / "metrics.jsonl").write_text(json.dumps(
        {"batch_id": 4, "timestamp": _iso(START_MS), "watermark": _iso(START_MS + 90_000), "batch_duration_ms": 500})))
    polls = []
    back.start()
    try:
        lag, waited = settled_lag_s("topk", PARAMS, job / "in", behind, 60, wait_s=30, interval_s=0.2,
                                    on_poll=lambda: polls.append(1))
    finally:
        back.cancel()
    assert 5 < lag < 12 and 0.8 < waited < 10 and polls  # back within the bound; the lease kept while waiting
    stuck = _ran_until(job / "s", START_MS + 10_000)
    lag, waited = settled_lag_s("topk", PARAMS, job / "in", stuck, 60, wait_s=1, interval_s=0.2)
    assert 85 < lag < 92 and waited < 5  # the last lag seen, after its own bound


def test_the_second_domain_probe_fires_for_a_dead_worker_and_for_a_reused_pid():
    import subprocess

    from spark_jobs.drills.probes import Probes
    from spark_jobs.runtime.processes import start_time

    worker = subprocess.Popen(["sleep", "60"])
    try:
        started = start_time(worker.pid)
        probes = Probes(t_fail=0.0, domain="rack-a", others={"worker-b": (worker.pid, started)})
        assert probes.second_domain_lost() is None
        # the same pid with another start time is another process: the worker it names has died
        reused = Probes(t_fail=0.0, domain="rack-a", others={"worker-b": (worker.pid, started + 5)})
        assert reused.second_domain_lost() == "a second failure domain was lost during the drill: worker-b died"
        assert Probes.model_validate_json(probes.model_dump_json()).others == probes.others  # through XCom
        assert Probes(t_fail=0.0, domain="rack-a", others={"old": worker.pid}).others == {"old": (worker.pid, None)}
    finally:
        worker.kill()
        worker.wait()
    assert probes.second_domain_lost() == "a second failure domain was lost during the drill: worker-b died"
