"""A pause lasts its length from the moment the process is stopped (spark_jobs.fault_injection): finding the
executor (the master's API, a scan of /proc) can take a good part of a short pause on a loaded machine, and a CI
run once measured 74 ms of a 500 ms pause when the length was counted from before the search. A real process is
stopped and continued; the search is made slow on purpose (a stand-in for the scan under load)."""

from __future__ import annotations

import subprocess
import threading
import time

from ft_core.redundancy.fault_profile import FaultEvent
from spark_jobs.fault_injection import Executor, _Run


class _SlowSearch:
    def __init__(self, executor: Executor, search_s: float):
        self.executor, self.search_s = executor, search_s

    def resolve(self, target: str) -> Executor:
        time.sleep(self.search_s)
        return self.executor


def test_a_slow_search_for_the_executor_does_not_shorten_its_pause():
    child = subprocess.Popen(["sleep", "30"])
    try:
        executor = Executor(id="1", pid=child.pid, app_id="app-1")
        events = [FaultEvent(time_s=0.0, kind="slowdown", target="executor[0]", magnitude_ms=400)]
        run = _Run(events, _SlowSearch(executor, 0.3), None, threading.Event(), lambda _m: None)
        run.execute()
        paused = run.pauses.total["app-1/1"]
        assert 0.39 <= paused < 0.6, paused  # the whole 400 ms, not 400 - 300
        assert run.pauses.count[child.pid] == 0 and child.poll() is None  # continued, still alive
    finally:
        child.kill()
        child.wait()
