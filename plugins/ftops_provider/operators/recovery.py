"""The steps of a staged incremental recovery of a recovery-units deployment of any pipeline (logic in
``spark_jobs.recovery_units``; the pipeline, its units and queries are the deployment's).

- :class:`DetectFailureOperator`: the units that are down: the deployment's last recorded failure if it is
  not recovered yet, else the applications whose drivers died (recorded now as a failure); with
  ``pipeline``, the deployment must run that pipeline;
- :class:`PlanStagesOperator`: the job's lease (kind ``recovery``: no drill, replica change or second
  recovery of the job runs beside it; a busy job fails the step, naming the holder), the recovery problem
  of that failure (measured or declared unit costs), the staged schedule (``ft_core.recovery.staged``) for
  the expected replacement nodes, written next to the deployment and stored as a ``recovery`` plan with a
  recovery run and its stages;
- :class:`StageCapacitySensor`: a deferred wait for a stage's capacity (new workers, free cores) on the
  Spark master; skipped for a stage that starts nothing;
- the stage's restart goes through ``UnitsStageSubmitOperator`` (spark-submit of ftops's launcher), then
  :class:`RecordStageOperator` marks it done, so a resumed run knows where it stands;
- :class:`QueriesRecoveredSensor` (deferred) and :class:`FinishRecoveryOperator`: per-query recovery times,
  lost/duplicated rows, the run's verdict, its experiment report (``ft_core.store.experiments``) and the
  lease released.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from airflow.sdk import BaseOperator

from ft_core.errors import InputError
from ft_core.input.names import check_name
from ftops_provider.arguments import bad_input_fails_the_task, checked
from ftops_provider.hooks.history import HistoryStoreHook
from ftops_provider.leases import run_holder
from ftops_provider.sensors.waits import _DeferredWait


class RecoveryFailed(Exception):
    """The recovery ran, and the deployment did not come back whole (the message says why)."""


def _skip(message: str):
    from airflow.sdk.exceptions import AirflowSkipException

    return AirflowSkipException(message)


class DetectFailureOperator(BaseOperator):
    """The deployment's current failure (recorded or detected now); returns it. ``pipeline`` (a sample's name
    or a ``--pipeline`` reference; empty: any) must be what the deployment runs."""

    template_fields = ("units_dir", "pipeline")

    def __init__(self, *, units_dir: str, pipeline: str = "", **kwargs: Any):
        super().__init__(**kwargs)
        self.units_dir, self.pipeline = units_dir, pipeline

    def execute(self, context: Any) -> dict[str, Any]:
        from ft_core.errors import InputError
        from spark_jobs.pipeline.loading import load_pipeline
        from spark_jobs.recovery_units.deployment import load
        from spark_jobs.recovery_units.runtime import current_failure

        with bad_input_fails_the_task():  # a wrong folder or pipeline fails at once; other errors are retried
            dep = load(Path(self.units_dir))
            if self.pipeline and load_pipeline(self.pipeline).ref != load_pipeline(dep.pipeline).ref:
                raise InputError(f"pipeline: the deployment in {dep.root} runs {dep.pipeline}, not {self.pipeline}")
        self.log.info("deployment %s runs %s", dep.root, dep.pipeline)
        failure = current_failure(Path(self.units_dir))
        if failure is None:
            raise _skip(f"no failed units in {self.units_dir}: nothing to recover")
        self.log.info("failed units: %s (domain %s)", ", ".join(failure.units), failure.domain or "-")
        return failure.model_dump()


class PlanStagesOperator(BaseOperator):
    """Plan the stages of the current failure's recovery and open the recovery run in the history store."""

    template_fields = ("units_dir", "job_name", "arrivals", "arrival_times", "cost", "policy", "node_cap", "timeout_s")

    def __init__(self, *, units_dir: str, job_name: str, arrivals: str = "1,1", cost: str = "measured",
                 policy: str = "order-then-pack", node_cap: float | str = 0.8, timeout_s: float | str = 900,
                 arrival_times: str = "", ftops_db_conn_id: str = "ftops_db",
                 spark_master_conn_id: str = "ftops_spark_master", **kwargs: Any):
        super().__init__(**kwargs)
        self.units_dir, self.job_name, self.arrivals, self.arrival_times = units_dir, job_name, arrivals, arrival_times
        self.cost, self.policy, self.node_cap, self.timeout_s = cost, policy, node_cap, timeout_s
        self.ftops_db_conn_id, self.spark_master_conn_id = ftops_db_conn_id, spark_master_conn_id

    def execute(self, context: Any) -> dict[str, Any]:
        from ft_core.input.quantities import PositiveSeconds
        from spark_jobs.recovery_units.recovery import check_stage_inputs, plan_failure_stages

        root = Path(self.units_dir)
        with bad_input_fails_the_task():  # job name, arrivals, cost, policy and node cap checked before anything is read
            if not self.job_name:
                raise InputError("job: name the registered job this recovery is recorded under (the DAG's job Param "
                                 "has no default)", field="job")
            check_name(self.job_name, "job name", "job_name")
            check_stage_inputs(self.arrivals, self.policy, self.node_cap, self.arrival_times)
            schedule, problem = plan_failure_stages(root, self.arrivals, self.cost, self.policy, self.node_cap,
                                                    _master_ui(root, self.spark_master_conn_id), self.arrival_times)
        # Every wait may take timeout_s; the run releases the lease when it ends, expiry only matters if
        # Airflow loses the run.
        ttl_s = checked(PositiveSeconds, self.timeout_s, "timeout_s") * (len(schedule.stages) + 2)
        self._take_lease(context, ttl_s)
        return self._open_run(context, root, schedule, problem)

    def _take_lease(self, context: Any, ttl_s: float) -> None:
        from airflow.sdk.exceptions import AirflowFailException

        from ft_core.store.leases import BusyError

        store = HistoryStoreHook(self.ftops_db_conn_id).store()
        try:
            store.acquire_lease(self.job_name, "recovery", run_holder(context["dag"].dag_id, context["run_id"]), ttl_s=ttl_s)
        except BusyError as exc:
            raise AirflowFailException(f"no recovery of {self.job_name}: {exc}") from None
        finally:
            store.conn.close()
        self.log.info("took the lease on %s for recovery (%.0f s)", self.job_name, ttl_s)

    def _open_run(self, context: Any, root: Path, schedule, problem: dict) -> dict[str, Any]:
        from ft_core.input_hash import input_hash

        path = root / "recoveries" / f"{_safe(context['run_id'])}.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(schedule.model_dump_json(indent=2))
        store = HistoryStoreHook(self.ftops_db_conn_id).store()
        try:
            plan = store.save_plan(self.job_name, "recovery", algorithm=schedule.policy, objective=schedule.total_priority,
                                   optimal=False, payload={"schedule": schedule.model_dump(mode="json"), "problem": problem},
                                   input_hash=input_hash(problem, self.arrivals, self.policy, self.node_cap, self.arrival_times,
                                                      schedule.model_dump(mode="json", exclude={"elapsed_s"})),
                                   parameters={"arrivals": self.arrivals, "cost": self.cost, "node_cap": self.node_cap,
                                               "arrival_times": self.arrival_times},
                                   dag_run_id=context["run_id"])
            failure = json.loads((root / "deployment.json").read_text())["failures"][-1]
            run_id = store.start_recovery_run(self.job_name, plan.plan_id, failure, context["run_id"])
            for s in schedule.stages:
                if s.partitions:
                    store.record_stage(run_id, s.stage + 1, s.capacity, s.partitions, s.placement, "pending")
        finally:
            store.conn.close()
        self.log.info("%s schedule: %s", schedule.mode, "; ".join(f"stage {s.stage}: {' '.join(s.partitions) or '-'}"
                                                                   for s in schedule.stages))
        return {"schedule_path": str(path), "stages": len(schedule.stages), "run_id": run_id, "plan_id": plan.plan_id,
                "prefix": app_prefix(context["run_id"]), "job": self.job_name}


def _safe(run_id: str) -> str:
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in run_id)


def app_prefix(run_id: str) -> str:
    """Application names of a DAG run's stages: the same on every retry and resume of that run."""
    import hashlib

    return "rec-" + hashlib.sha1(run_id.encode()).hexdigest()[:8]


class StageCapacitySensor(_DeferredWait):
    """Wait (deferred) until stage ``stage`` of the schedule has its capacity on the primary master: the new
    workers the schedule expects by then, and a free core per application it starts. Skips a stage that
    starts nothing or does not exist; a stage whose applications already run (a resumed run) passes at once."""

    template_fields = ("units_dir", "plan_task_id", "timeout_s")

    def __init__(self, *, units_dir: str, stage: int, plan_task_id: str = "plan_stages",
                 spark_master_conn_id: str = "ftops_spark_master", **kwargs: Any):
        super().__init__(**kwargs)
        self.units_dir, self.stage, self.plan_task_id = units_dir, stage, plan_task_id
        self.spark_master_conn_id = spark_master_conn_id

    def _need(self, context: Any) -> tuple[int, int, list[str], str]:
        from spark_jobs.recovery_units.deployment import load
        from spark_jobs.recovery_units.recovery import arrivals_by, last_failure, load_schedule, stage_apps

        planned = _planned(context, self.plan_task_id)
        root = Path(self.units_dir)
        schedule = load_schedule(Path(planned["schedule_path"]), root)
        if self.stage >= len(schedule.stages):
            raise _skip(f"the schedule has {len(schedule.stages)} stages")
        apps = stage_apps(schedule, self.stage, planned["prefix"])
        todo = [a for a in apps if a not in load(root).apps]
        if not apps:
            raise _skip(f"stage {self.stage} starts nothing")
        ui = _master_ui(root, self.spark_master_conn_id)
        return arrivals_by(schedule, self.stage), len(todo), last_failure(root).known_workers(), ui

    def execute(self, context: Any) -> dict[str, Any] | None:
        """Pass at once when the capacity is there already (no deferral round trip: a task that defers and is
        resumed within seconds can meet its own late executor event, which the scheduler takes for a failure);
        otherwise defer on the master."""
        from spark_jobs.cluster.standalone import ClusterError
        from spark_jobs.recovery_units.recovery import capacity

        new, cores, known, ui = self._need(context)
        try:
            have = capacity(Path(self.units_dir), known, ui)
        except ClusterError:
            have = None  # the master does not answer now: the trigger keeps asking
        if have is not None and have[0] >= new and have[1] >= cores:
            now = time.time()
            self._record(context, "waiting", waiting_at=now)
            self._record(context, "started", started_at=now)
            self.log.info("stage %d: %d new workers and %d free cores are there already", self.stage, *have)
            return {"status": "ok", "new_workers": have[0], "free_cores": have[1], "waited_s": 0.0}
        return super().execute(context)

    def make_trigger(self, context: Any):
        from ftops_provider.triggers.spark_capacity import SparkCapacityTrigger

        new, cores, known, ui = self._need(context)
        self._record(context, "waiting", waiting_at=time.time())
        self.log.info("stage %d needs %d new workers and %d free cores", self.stage, new, cores)
        return SparkCapacityTrigger(ui, min_new_workers=new, min_free_cores=cores, known_worker_ids=known,
                                    timeout_s=self.timeout_s, poll_interval_s=self.poll_interval_s)

    def execute_complete(self, context: Any, event: dict[str, Any] | None = None) -> dict[str, Any]:
        result = super().execute_complete(context, event)
        self._record(context, "started", started_at=time.time())  # the stage's restart begins now
        return result

    def _record(self, context: Any, status: str, **times: float) -> None:
        from spark_jobs.recovery_units.recovery import load_schedule

        planned = _planned(context, self.plan_task_id)
        s = load_schedule(Path(planned["schedule_path"]), Path(self.units_dir)).stages[self.stage]
        store = HistoryStoreHook().store()
        try:
            done = {r["stage_no"] for r in store.recovery_stages(planned["run_id"]) if r["status"] == "done"}
            if self.stage + 1 not in done:
                store.record_stage(planned["run_id"], self.stage + 1, s.capacity, s.partitions, s.placement, status, **times)
        finally:
            store.conn.close()


def recovery_experiment(store, planned: dict, recovered: dict[str, float | None], check, problems: list[str],
                        dag_run_id: str):
    """The recovery run's experiment report: the hypothesis after (every query back, no row lost or
    duplicated, every begun stage finished), the stages' moments as its timeline, the measured times."""
    from ft_core.store.experiments import Check, ExperimentReport, timeline

    stages = store.recovery_stages(planned["run_id"])
    moments = {f"stage {s['stage_no']} {what}": s[f"{what}_at"].timestamp()
               for s in stages for what in ("waiting", "started", "finished") if s.get(f"{what}_at")}
    after = [Check(name=f"{q} available again", expected="recovered", observed="no" if v is None else f"after {v:.1f} s",
                   held=v is not None) for q, v in recovered.items()]
    after += [Check(name="rows lost", expected="0", observed=str(check.lost_rows), held=check.lost_rows == 0),
              Check(name="rows duplicated", expected="0", observed=str(check.duplicated_rows), held=check.duplicated_rows == 0)]
    return ExperimentReport(kind="recovery", job=planned["job"], experiment_id=planned["run_id"], dag_run_id=dag_run_id,
                            verdict="failed" if problems else "passed", reasons=problems, hypothesis_after=after,
                            timeline=timeline(moments),
                            measurements={"query_recovered_s": recovered, **_predicted(planned),
                                          "lost_rows": check.lost_rows, "duplicated_rows": check.duplicated_rows,
                                          "stages": len(stages)})


def _predicted(planned: dict) -> dict:
    """The plan's predicted time back per query (policy catch-up), to read beside the measured ones."""
    schedule = json.loads(Path(planned["schedule_path"]).read_text())
    if schedule.get("predicted_back_s") is None:
        return {}
    return {"predicted_back_s": schedule["predicted_back_s"], "policy": schedule["policy"]}


def _planned(context: Any, plan_task_id: str) -> dict:
    """The plan task's result; skip when there is none (nothing failed, or planning did not run)."""
    planned = context["ti"].xcom_pull(task_ids=plan_task_id)
    if not planned:
        raise _skip("no recovery was planned in this run")
    return planned


def _master_ui(root: Path, spark_master_conn_id: str) -> str:
    """The primary master's web UI: the one the deployment records (its own, or its local cluster's), else
    the Airflow connection's (a deployment on a user's master that was deployed without ``--master-ui``)."""
    from ftops_provider.hooks.spark_master import SparkMasterHook
    from spark_jobs.recovery_units.recovery import recorded_master_ui

    return recorded_master_ui(root) or SparkMasterHook(spark_master_conn_id).ui_url()


class RecordStageOperator(BaseOperator):
    """Mark a stage done in the history store (with its applications), after its units run."""

    template_fields = ("units_dir",)

    def __init__(self, *, units_dir: str, stage: int, plan_task_id: str = "plan_stages",
                 ftops_db_conn_id: str = "ftops_db", **kwargs: Any):
        super().__init__(**kwargs)
        self.units_dir, self.stage, self.plan_task_id = units_dir, stage, plan_task_id
        self.ftops_db_conn_id = ftops_db_conn_id

    def execute(self, context: Any) -> dict[str, Any]:
        from spark_jobs.recovery_units.recovery import load_schedule

        planned = _planned(context, self.plan_task_id)
        s = load_schedule(Path(planned["schedule_path"]), Path(self.units_dir)).stages[self.stage]
        store = HistoryStoreHook(self.ftops_db_conn_id).store()
        try:
            store.record_stage(planned["run_id"], self.stage + 1, s.capacity, s.partitions, s.placement, "done",
                               finished_at=time.time())
        finally:
            store.conn.close()
        return {"stage": self.stage, "units": s.partitions}


class QueriesRecoveredSensor(_DeferredWait):
    """Wait (deferred) until every failed query is available again; returns their recovery times. The trigger
    reads the units' progress from the history store (``ftops_db_conn_id``) when their drivers write it there,
    else from the deployment's folders."""

    template_fields = ("units_dir", "timeout_s")

    def __init__(self, *, units_dir: str, plan_task_id: str = "plan_stages", ftops_db_conn_id: str = "ftops_db",
                 **kwargs: Any):
        super().__init__(**kwargs)
        self.units_dir = units_dir
        self.plan_task_id = plan_task_id
        self.ftops_db_conn_id = ftops_db_conn_id

    def make_trigger(self, context: Any):
        from spark_jobs.recovery_units.deployment import unit_stream
        from spark_jobs.recovery_units.recovery import recovery_watch

        from ftops_provider.triggers.queries_recovered import QueriesRecoveredTrigger

        _planned(context, self.plan_task_id)
        watch = recovery_watch(Path(self.units_dir))  # read here, on the worker that started the units
        return QueriesRecoveredTrigger(self.units_dir, timeout_s=self.timeout_s, poll_interval_s=self.poll_interval_s,
                                       watch=watch.model_dump(), ftops_db_conn_id=self.ftops_db_conn_id,
                                       streams={u: unit_stream(self.units_dir, u) for u in watch.units()})


class FinishRecoveryOperator(BaseOperator):
    """Verify every unit's table against the reference, store per-query recovery times and the run's status;
    fail when a query did not come back, rows were lost or duplicated, or a stage began and did not finish."""

    template_fields = ("units_dir",)

    def __init__(self, *, units_dir: str, plan_task_id: str = "plan_stages", wait_task_id: str = "wait_recovered",
                 ftops_db_conn_id: str = "ftops_db", **kwargs: Any):
        super().__init__(**kwargs)
        self.units_dir, self.plan_task_id, self.wait_task_id = units_dir, plan_task_id, wait_task_id
        self.ftops_db_conn_id = ftops_db_conn_id

    def execute(self, context: Any) -> dict[str, Any]:
        from spark_jobs.recovery_units.deployment import load
        from spark_jobs.recovery_units.recovery import failed_queries, query_recovery
        from spark_jobs.recovery_units.verification import verify

        root = Path(self.units_dir)
        planned = _planned(context, self.plan_task_id)
        queries = failed_queries(root)
        recovered = query_recovery(root, queries)
        check = verify(root)
        priority = load(root).units.queries()
        problems = [f"{q} not available again" for q, v in recovered.items() if v is None]
        if check.lost_rows or check.duplicated_rows:
            problems.append(f"{check.lost_rows} rows lost, {check.duplicated_rows} duplicated")
        store = HistoryStoreHook(self.ftops_db_conn_id).store()
        try:
            for q, seconds in recovered.items():
                store.record_query_recovery(planned["run_id"], q, priority[q], seconds)
            stalled = store.fail_unfinished_stages(planned["run_id"])
            if stalled:  # a stage's wait or restart failed (this task runs after failures too)
                problems.append(f"stage(s) {', '.join(map(str, stalled))} did not finish")
            store.finish_recovery_run(planned["run_id"], "failed" if problems else "succeeded")
            store.save_experiment(recovery_experiment(store, planned, recovered, check, problems, context["run_id"]))
        finally:
            if store.release_lease(planned["job"], run_holder(context["dag"].dag_id, context["run_id"])):
                self.log.info("released the lease on %s", planned["job"])
            store.conn.close()
        self.log.info("queries back after (s): %s; lost %d, duplicated %d rows", recovered, check.lost_rows,
                      check.duplicated_rows)
        if problems:
            raise RecoveryFailed("recovery incomplete: " + "; ".join(problems))
        return {"query_recovered_s": recovered, "lost_rows": check.lost_rows, "duplicated_rows": check.duplicated_rows}
