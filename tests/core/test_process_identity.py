"""A recorded pid is signalled only while it is still the recorded process (spark_jobs.runtime.processes):
the kernel reuses pids, and stopping a test cluster once killed another stack's Spark master that had been
given the pid of a worker the test killed long before. Real processes (``sleep``) stand in for the daemons."""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import time

from spark_jobs.cluster.standalone import ClusterState, Process, cluster_down
from spark_jobs.runtime.processes import pid_alive, start_time


def _sleeper() -> subprocess.Popen:
    return subprocess.Popen(["sleep", "120"], start_new_session=True)


def test_cluster_down_stops_its_own_processes_and_spares_a_process_that_reuses_a_recorded_pid(tmp_path):
    own, stranger = _sleeper(), _sleeper()
    try:
        state = ClusterState(str(tmp_path), 10, [
            Process("worker-primary-rack-a-7100", "worker", "primary", own.pid, 7100, 8100, "log", "rack-a",
                    started=start_time(own.pid)),
            # the record of a worker that died: its pid now belongs to a process started later (the stranger)
            Process("worker-primary-rack-b-7101", "worker", "primary", stranger.pid, 7101, 8101, "log", "rack-b",
                    started=start_time(stranger.pid) - 1200.0),
        ])
        state.save()
        assert [p.alive() for p in state.processes] == [True, False]
        assert cluster_down(tmp_path) == ["worker-primary-rack-a-7100"]
        assert own.wait(timeout=15) is not None
        assert pid_alive(stranger.pid)  # not ours any more: left running
    finally:
        for proc in (own, stranger):
            proc.kill()
            proc.wait()


def test_a_state_written_without_start_times_still_loads_and_trusts_its_pids(tmp_path):
    proc = _sleeper()
    try:
        (tmp_path / "cluster.json").write_text(json.dumps({"state_dir": str(tmp_path), "worker_timeout_s": 10, "processes": [
            {"name": "master-primary", "role": "master", "pool": "primary", "pid": proc.pid, "port": 7077,
             "ui_port": 8090, "log": "log"}]}))
        [master] = ClusterState.load(tmp_path).processes
        assert master.started is None and master.alive()
        assert cluster_down(tmp_path) == ["master-primary"] and proc.wait(timeout=15) is not None
    finally:
        proc.kill()
        proc.wait()


def test_a_group_whose_leader_pid_went_to_another_process_is_not_ours_but_one_whose_leader_exited_is():
    from spark_jobs.runtime.processes import owns_group

    proc = _sleeper()
    try:
        assert owns_group(proc.pid, start_time(proc.pid))
        assert not owns_group(proc.pid, start_time(proc.pid) - 600.0)  # the pid names a later process now
    finally:
        proc.kill()
        proc.wait()
    assert owns_group(proc.pid, 1.0)  # the leader is gone: members left, if any, are still the recorded group's


def test_a_run_record_whose_group_leader_pid_went_to_another_process_is_not_stopped(tmp_path):
    from spark_jobs.runtime.launch import driver_running, stop_run

    run, stranger = _sleeper(), _sleeper()
    try:
        (tmp_path / "_submit.json").write_text(json.dumps({"pgid": stranger.pid, "started": start_time(stranger.pid) - 900.0}))
        assert not driver_running(tmp_path) and stop_run(tmp_path, timeout_s=1) is False
        assert pid_alive(stranger.pid)
        (tmp_path / "_submit.json").write_text(json.dumps({"pgid": run.pid, "started": start_time(run.pid)}))
        assert driver_running(tmp_path) and stop_run(tmp_path, timeout_s=1) is True
        assert run.wait(timeout=15) is not None
    finally:
        for proc in (run, stranger):
            proc.kill()
            proc.wait()


def test_cluster_down_stops_what_is_left_of_a_group_whose_leader_exited(tmp_path):
    # a launcher that starts a member in its own group and exits, as spark-submit's wrapper may
    leader = subprocess.Popen(["sh", "-c", "sleep 120 & echo $!; exit 0"], start_new_session=True, stdout=subprocess.PIPE,
                              text=True)
    member = int(leader.stdout.readline())
    started = start_time(leader.pid)
    leader.wait(timeout=15)
    try:
        ClusterState(str(tmp_path), 10, [Process("driver-x", "driver", "primary", leader.pid, 0, 0, "log",
                                                 started=started)]).save()
        assert pid_alive(member)
        assert cluster_down(tmp_path) == ["driver-x"]
        for _ in range(50):
            if not pid_alive(member):
                break
            time.sleep(0.2)
        assert not pid_alive(member)
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.kill(member, 9)


def test_the_fault_injector_pauses_its_executor_and_never_signals_a_process_that_took_its_pid():
    """A process that looks like an executor of app-x (its command line carries Spark's executor class and
    ids; a real JVM is not needed to test whose pid is signalled)."""
    import signal
    import sys

    from spark_jobs.fault_injection import EXECUTOR_CLASS, Executor, _Pauses, _signal, find_executors
    from spark_jobs.runtime.waiting import wait_for

    fake = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)", EXECUTOR_CLASS,
                             "--app-id", "app-x", "--executor-id", "3"])
    try:
        time.sleep(0.3)
        [executor] = find_executors("app-x")
        assert (executor.id, executor.pid, executor.started) == ("3", fake.pid, start_time(fake.pid))
        pauses = _Pauses()
        assert pauses.pause(executor)
        wait_for(lambda: _state(fake.pid) == "T", timeout_s=10, interval_s=0.05, what="the executor stopped")
        pauses.resume(fake.pid)
        wait_for(lambda: _state(fake.pid) in {"S", "R"}, timeout_s=10, interval_s=0.05, what="the executor running")
        # the same pid recorded with another start time: another process now; it is neither paused nor killed
        other = Executor("3", fake.pid, "app-x", executor.started + 7)
        assert not pauses.pause(other) and _state(fake.pid) in {"S", "R"}
        assert not _signal(other.pid, other.started, signal.SIGKILL) and pid_alive(fake.pid)
    finally:
        fake.kill()
        fake.wait()


def _state(pid: int) -> str:
    return open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()[0]
