"""ftops's own chaos (issue 35, item 4): kill a piece of ftops in the middle of an experiment and measure how
long until the job is whole again, on the local stack (its PostgreSQL, Spark clusters, Airflow and the running
sample job ``topk``).

Each scenario starts a drill of the job, waits until its fault is applied (its row in the fault journal), then
breaks one piece of ftops, and waits, without any person or other experiment acting, until the job is *whole*:
the primary's live workers per failure domain are those before the drill, no fault of the job is open, the
primary runs with executors and is steady again (within the steady-state bound of its input). It then reads how
the drill was recorded and compares the primary's output with the failure-free reference over every window from
just before the drill (0 lost, 0 duplicated is the target). Scenarios:

- ``drill-command-killed``: ``ftops drill job`` SIGKILLed after its fault (lease TTL 30 s): the safety net undoes it;
- ``dag-worker-killed``: a DAG drill's ``add_capacity`` task killed with the scheduler that runs it (LocalExecutor:
  the workers are the scheduler's children), the scheduler started again 20 s later; the run's ``finish`` undoes;
- ``scheduler-and-triggerer-killed``: both SIGKILLed while the DAG drill waits (deferred), started again 60 s later;
- ``postgres-down-60s``: the history store stopped for 60 s while the DAG drill waits;
- ``spark-master-restarted``: the primary's Spark master SIGKILLed while the DAG drill waits, started again on its
  port 10 s later;
- ``airflow-master-partition`` (the stack on a namespace network only: ``--network namespaces``): nothing passes
  between this machine (Airflow, the history store, the drivers) and the masters' host for 60 s, from just after
  the DAG drill's fault, while its replacement capacity is due (40 s); the masters keep their workers.

Not run here (said so in the report): the staged recovery DAG's worker killed between stages
(tests/airflow/test_recovery_dag.py kills its scheduler and triggerer while a stage waits and shows it resumes).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable

from pydantic import BaseModel, Field

from ft_core.errors import ExternalError, InputError
from spark_jobs.runtime.waiting import wait_for

SCENARIOS = ("drill-command-killed", "dag-worker-killed", "scheduler-and-triggerer-killed", "postgres-down-60s",
             "spark-master-restarted", "airflow-master-partition")
NAMESPACES_ONLY = {"airflow-master-partition"}  # a cut between two hosts: the stack's daemons on hosts of their own
PARTITION_S = 60.0
NOT_RUN = {"airflow-master-partition": "runs on a stack on a namespace network: `ftops bench self-chaos --network "
                                       "namespaces --scenarios airflow-master-partition`",
           "recovery-worker-killed-between-stages": "covered by tests/airflow/test_recovery_dag.py (scheduler and "
                                                    "triggerer SIGKILLed while a stage waits: the run resumes) and "
                                                    "tests/airflow/test_attached_job.py (a fleet recovery's process "
                                                    "SIGKILLed while a stage waits: the safety net resubmits the job it "
                                                    "held down within its lease TTL), not benchmarked here"}
TTL_S = 30.0  # the command's lease TTL: the bound of the drill-command-killed scenario is TTL + 120 s


class ChaosRow(BaseModel):
    scenario: str
    network: str = "loopback"
    drill_id: int | None = None
    recorded: str | None = Field(default=None, description="the drill's status in the history store")
    whole_after_s: float | None = Field(default=None, description="seconds from the break until the job was whole")
    domains_before: dict[str, int] = {}
    domains_after: dict[str, int] = {}
    lost_windows: int | None = None
    duplicated_windows: int | None = None
    repaired_by: str | None = None
    error: str | None = None
    measured_at: float | None = Field(default=None, description="when the scenario ended (epoch s)")

    @property
    def restored(self) -> bool:
        return (self.whole_after_s is not None and self.domains_after == self.domains_before and self.lost_windows == 0
                and self.duplicated_windows == 0 and self.error is None)


class ChaosResult(BaseModel):
    command: str
    started_at: float
    elapsed_s: float
    rows: list[ChaosRow]


class _Scenario:
    """One scenario on a started stack (see the module docstring)."""

    def __init__(self, stack, name: str, say: Callable[[str], None]):
        from ftops_provider.local_stack import RUNNING_JOB, SAMPLE_JOBS
        from spark_jobs.cluster.seam import cluster_of

        self.stack, self.name, self.say, self.job = stack, name, say, RUNNING_JOB
        self.dep = stack.deployment(next(j for j in SAMPLE_JOBS if j.name == RUNNING_JOB))
        self.cluster = cluster_of(self.dep)
        self.network = stack.spark_network()

    def run(self, whole_within_s: float) -> ChaosRow:
        from spark_jobs.drills.live import delivered_until

        self._steady()
        before, since_ms = self.cluster.capacity(), delivered_until(self.dep.primary_output)
        row = ChaosRow(scenario=self.name, domains_before=before, network=self.network)
        try:
            drill, fault = self._start_drill()
            row.drill_id = drill
            broke = self._break()
            whole = self._whole(before, whole_within_s)
            row.whole_after_s = round(whole - broke, 1)
            row.repaired_by = self._closed_by(fault)
            row.recorded = self._recorded(drill)
            row.lost_windows, row.duplicated_windows = self._output_check(since_ms)
        except (ExternalError, OSError) as exc:
            row.error = str(exc)
        row.domains_after = self.cluster.capacity()
        row.measured_at = time.time()
        return row

    # -- the drill and the break ---------------------------------------------------------------------------------
    def _start_drill(self) -> tuple[int, dict]:
        if self.name == "drill-command-killed":
            self._command = subprocess.Popen(
                [sys.executable, "-m", "ft_core.cli.main", "drill", "job", self.job, "--lease-ttl-s", str(TTL_S),
                 "--replacement-delay-s", "900", "--max-duration-s", "3000", "--json"],
                env={**os.environ, "FTOPS_DATABASE_URL": self.stack.postgres.url()},
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        else:
            delay = 40 if self.name in ("dag-worker-killed", "airflow-master-partition") else 150
            self._run_id = self.stack.airflow.trigger("ftops_chaos_drill", {"job": self.job, "replacement_delay_s": delay})
        fault = wait_for(self._applied_fault, timeout_s=600, interval_s=1, what=f"{self.name}: the drill's fault")
        self.say(f"{self.name}: fault #{fault['fault_id']} ({fault['kind']} {fault['target']}) applied")
        return fault["experiment_id"], fault

    def _applied_fault(self) -> dict | None:
        with self.stack.store() as store:
            return next((f for f in store.open_faults(self.job) if f["applied_at"] is not None), None)

    def _break(self) -> float:
        """Break the piece the scenario names; the moment it broke."""
        a = self.stack.airflow
        env = self.stack.connections()
        if self.name == "drill-command-killed":
            self._command.kill()
            self._command.wait(timeout=30)
            return time.time()
        if self.name == "dag-worker-killed":
            wait_for(lambda: a.task_instances("ftops_chaos_drill", self._run_id).get("add_capacity", {}).get("state")
                     == "running" or None, timeout_s=300, interval_s=0.5, what="add_capacity to run")
            a.crash(("scheduler",))
            broke = time.time()
            time.sleep(20)
            a.restart(("scheduler",), extra_env=env)
            return broke
        if self.name == "scheduler-and-triggerer-killed":
            a.crash(("scheduler", "triggerer"))
            broke = time.time()
            time.sleep(60)
            a.restart(("scheduler", "triggerer"), extra_env=env)
            return broke
        if self.name == "postgres-down-60s":
            self.stack.postgres.stop()
            broke = time.time()
            time.sleep(60)
            self.stack.postgres.start()
            return broke
        if self.name == "spark-master-restarted":
            from spark_jobs.cluster.standalone import restart_master

            broke = time.time()
            restart_master(self.stack.spark_state, "primary", down_s=10.0)
            return broke
        if self.name == "airflow-master-partition":
            from spark_jobs.cluster.standalone import rejoin_masters, separate_masters

            separate_masters(self.stack.spark_state)
            broke = time.time()
            try:
                time.sleep(PARTITION_S)
            finally:
                rejoin_masters(self.stack.spark_state)
            return broke
        raise ExternalError(f"unknown scenario {self.name!r}")

    # -- whole again ------------------------------------------------------------------------------------------------
    def _whole(self, before: dict[str, int], timeout_s: float) -> float:
        """When the job was whole (see the module docstring); ExternalError when not within ``timeout_s``."""
        from spark_jobs.runtime.job_streams import primary_app_name

        def whole() -> bool | None:
            try:
                with self.stack.store() as store:
                    open_faults = store.open_faults(self.job)
                hosting = self.cluster.executor_domains(primary_app_name(self.job))
            except (ExternalError, OSError):  # the store or a master away for a moment
                return None
            return (not open_faults and self.cluster.capacity() == before and sum(hosting.values()) > 0) or None

        wait_for(whole, timeout_s=timeout_s, interval_s=1, what=f"{self.name}: the job whole again")
        t = time.time()
        self._steady()
        return t

    def _steady(self) -> None:
        from spark_jobs.drills.probes import STEADY_LAG_S, wait_steady

        wait_steady(self.dep.pipeline, self.dep.params, self.dep.input, self.dep.primary_output, STEADY_LAG_S,
                    wait_s=600, interval_s=3)

    def _closed_by(self, fault: dict) -> str | None:
        with self.stack.store() as store:
            row = next((f for f in store.faults(self.job) if f["fault_id"] == fault["fault_id"]), None)
        return None if row is None else row["closed_by"]

    def _recorded(self, drill_id: int) -> str | None:
        """The drill's final status (a DAG drill still running is waited for, up to 20 minutes)."""
        def final() -> str | None:
            with self.stack.store() as store:
                status = store.drill_status(drill_id)
            return None if status == "running" else status

        return wait_for(final, timeout_s=1200, interval_s=3, what=f"drill #{drill_id} to be recorded")

    def _output_check(self, since_ms: int) -> tuple[int, int]:
        """Lost and duplicated windows of the primary against the batch reference, from before the drill."""
        from spark_jobs.drills.progress import watermark_of
        from spark_jobs.pipeline.sink import closed_rows, compare_output
        from spark_jobs.runtime.reference import batch_reference

        until = watermark_of(self.dep.primary_output) or 0
        work = self.dep.path / "self-chaos" / f"{self.name}-{int(time.time())}"
        reference, _ = batch_reference(self.dep.workload(), self.dep.input, work, since_ms=since_ms,
                                       event_index=self.dep.path / "drills" / "event-index.json")
        comparison = compare_output(self.dep.primary_output, closed_rows(reference, until), until_ms=until, from_ms=since_ms)
        return len(comparison.lost_windows), len(comparison.duplicated_windows)


def scenarios_for(network: str, chosen: list[str] | None) -> list[str]:
    """The scenarios to run on a stack on ``network``: ``chosen`` (InputError naming one that needs a namespace
    network on loopback), or every scenario the network allows.

    >>> scenarios_for("loopback", None)[-1]
    'spark-master-restarted'
    """
    if chosen is None:
        return [n for n in SCENARIOS if network == "namespaces" or n not in NAMESPACES_ONLY]
    wrong = [n for n in chosen if network != "namespaces" and n in NAMESPACES_ONLY]
    if wrong:
        raise InputError(f"--scenarios: {', '.join(wrong)} needs the stack on a namespace network (--network namespaces; "
                         "`ftops stack down` first if it runs on loopback)", field="--scenarios")
    return chosen


def run_self_chaos(stack, scenarios: list[str], command: str, whole_within_s: float = 900.0,
                   progress: Callable[[str], None] = lambda _m: None) -> ChaosResult:
    """Every scenario in turn on a started stack (``LocalStack.up()``)."""
    started, rows = time.time(), []
    for name in scenarios:
        progress(f"scenario {name}")
        rows.append(_Scenario(stack, name, progress).run(whole_within_s))
        last = rows[-1]
        progress(f"{name}: {'restored' if last.restored else 'NOT restored'} after {last.whole_after_s} s, drill "
                 f"{last.recorded}, {last.lost_windows} lost, {last.duplicated_windows} duplicated"
                 + (f" ({last.error})" if last.error else ""))
    return ChaosResult(command=command, started_at=started, elapsed_s=time.time() - started, rows=rows)


def merged(previous: ChaosResult | None, new: ChaosResult) -> ChaosResult:
    """``new``'s rows, and ``previous``'s for the scenarios ``new`` did not run (a scenario run again after a fix
    replaces its row; each row keeps when it was measured), in the order of :data:`SCENARIOS`."""
    if previous is None:
        return new
    rows = {r.scenario: r for r in previous.rows} | {r.scenario: r for r in new.rows}
    order = [name for name in SCENARIOS if name in rows]
    kept = [name for name in order if name not in {r.scenario for r in new.rows}]
    command = new.command if not kept else f"{previous.command}, then {new.command}"
    return ChaosResult(command=command, started_at=min(previous.started_at, new.started_at),
                       elapsed_s=previous.elapsed_s + new.elapsed_s, rows=[rows[n] for n in order])


def self_chaos_report(result: ChaosResult) -> str:
    from ft_core.cli.output import format_table

    show = (lambda c: ", ".join(f"{d} {n}" for d, n in sorted(c.items())) or "none")
    rows = [[r.scenario, r.network, r.drill_id or "-", r.recorded or "-", "-" if r.whole_after_s is None else f"{r.whole_after_s:.0f}",
             show(r.domains_before), show(r.domains_after), "-" if r.lost_windows is None else r.lost_windows,
             "-" if r.duplicated_windows is None else r.duplicated_windows, (r.repaired_by or "-").split(" (")[0],
             "yes" if r.restored else "no",
             "-" if r.measured_at is None else time.strftime("%m-%d %H:%M", time.gmtime(r.measured_at))] for r in result.rows]
    restored, ran = sum(r.restored for r in result.rows), {r.scenario for r in result.rows}
    return "\n".join([
        f"# ftops's own chaos: {len(result.rows)} scenarios on the local stack", "",
        f"Produced by `{result.command}` in {result.elapsed_s / 60:.1f} min, from "
        f"{time.strftime('%Y-%m-%d %H:%M', time.gmtime(result.started_at))} UTC; {os.cpu_count()} cores (times are "
        "wall-clock on a shared machine).", "",
        "Each scenario starts a drill of the running job `topk`, waits until its fault is applied, breaks one piece of "
        "ftops, and waits with nobody acting until the job is whole: the primary's live workers per failure domain as "
        "before the drill, no open fault in the journal, the primary running with executors and steady again. "
        "*whole after* counts from the break. Output is compared with the batch reference from just before the drill. "
        "*network*: where the stack's Spark daemons ran (loopback, or hosts of their own on a namespace network with "
        "this machine, where Airflow, PostgreSQL and the drivers run, as the gateway).",
        "", "```", format_table(["scenario", "network", "drill", "recorded", "whole after (s)", "domains before", "domains after",
                                 "lost", "duplicated", "undone by", "restored", "measured (UTC)"], rows), "```", "",
        f"**{restored} of {len(result.rows)} restored** with 0 lost and 0 duplicated windows.", "",
        *[f"- {r.scenario}: {r.error}" for r in result.rows if r.error],
        "Not run: " + "; ".join(f"{k} ({v})" for k, v in NOT_RUN.items() if k not in ran) + ".", ""])
