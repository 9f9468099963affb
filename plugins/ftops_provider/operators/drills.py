"""The chaos drill's steps as Airflow operators: each a thin wrapper around one step of the drill engine
(:mod:`spark_jobs.drills.engine`), which owns the logic, the state and the fault journal.

Every step reads the drill's :class:`~spark_jobs.drills.engine.DrillState` from the XCom of the step before it
(``state_task_id``), runs its engine step with the job's lease renewed meanwhile, and returns the new state
(its XCom). The DAG maps the steps over jobs (a mapped task group, one drill per job): every pull reads the XCom of
the same map index (:func:`~ftops_provider.operators.fleet.pulled`; in Airflow 3.3 a pull without ``map_indexes`` returns every index's value). The waits between the steps are :class:`~ftops_provider.sensors.waits.DrillWaitSensor`, deferred.
:class:`FinishDrillOperator` runs whatever happened before (trigger rule ``all_done``): it undoes the drill's open
faults, records the verdict and the experiment report, releases the lease, and fails the run visibly unless the
drill passed.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from airflow.sdk import BaseOperator
from airflow.sdk.exceptions import AirflowFailException, AirflowSkipException

from ftops_provider.arguments import bad_input_fails_the_task
from ftops_provider.hooks.history import HistoryStoreHook
from ftops_provider.leases import run_holder
from ftops_provider.operators.fleet import pulled

# The steps that hand the drill's state on, in order: the finish reads the newest one that ran.
STATE_STEPS = ("preflight", "inject_failure", "add_capacity", "ensure_primary", "verify")
# the tasks that may end a drill on purpose (an abort probe, the halt, a lost lease), saying why in their XCom
ABORTING = ("wait_steady", "inject_failure", "wait_tentative", "wait_replacement_due", "wait_executors", "wait_caught_up")


def approved(decision: dict | None) -> bool:
    """Whether an approval task's answer (its XCom) says Approve."""
    return bool(decision) and "Approve" in (decision.get("chosen_options") or [])


def drill_approval_body(state: dict) -> str:
    """What a person approves (Markdown): the job, the domain to fail, what the drill expects and risks."""
    from spark_jobs.drills.engine import DrillState

    s = DrillState.model_validate(state)
    ctx, st = s.ctx, s.settings
    return "\n".join([
        f"ftops would fail **{ctx.domain}** under job **{s.job}** (drill #{s.drill_id}): {st.fault} of its workers"
        f"{' and the primary driver' if st.kill_driver else ''}, its capacity given back after "
        f"{st.replacement_delay_s:.0f} s.", "",
        f"- replication plan #{ctx.plan_id}: predicted output fidelity {ctx.predicted_output_fidelity:.3f}, "
        f"predicted accuracy {_fraction(ctx.predicted_accuracy)}"
        if ctx.plan_id is not None else "- no replica runs: tentative output is lost during the failure",
        f"- steady state: the primary within {st.steady_lag_s:.0f} s of its input (checked before the fault)",
        f"- aborted if it runs past {st.max_duration_s:.0f} s, another domain is lost, the primary falls "
        f"{st.max_lag_s:.0f} s behind once capacity is back, or experiments are halted (`ftops halt`)"])


def _driver_env(conn_id: str) -> dict[str, str]:
    """The store's URL for drivers a step starts (they write their progress there); masked in logs."""
    from airflow.sdk.log import mask_secret

    dsn = HistoryStoreHook(conn_id).dsn()
    mask_secret(dsn)
    return {"FTOPS_DATABASE_URL": dsn}


def _fraction(value: float | None) -> str:
    return "not estimated" if value is None else f"{value:.3f}"


class _DrillStep(BaseOperator):
    """One engine step: the state in (XCom of ``state_task_id``), the new state out."""

    ui_color = "#fde8e8"

    def __init__(self, *, state_task_id: str, ftops_db_conn_id: str = "ftops_db", **kwargs: Any):
        super().__init__(**kwargs)
        self.state_task_id, self.ftops_db_conn_id = state_task_id, ftops_db_conn_id

    def state_in(self, context: Any):
        from spark_jobs.drills.engine import DrillState

        doc = pulled(context["ti"], self.state_task_id)
        if not doc:
            raise AirflowSkipException(f"{self.state_task_id} handed on no drill")
        return DrillState.model_validate(doc)

    def driver_env(self) -> dict[str, str]:
        return _driver_env(self.ftops_db_conn_id)

    def run_step(self, state, step: Callable) -> dict[str, Any]:
        """``step(store, state)`` with the lease renewed meanwhile; the new state as JSON (the XCom)."""
        from ft_core.store.leases import LeaseRenewal

        hook = HistoryStoreHook(self.ftops_db_conn_id)
        store = hook.store()
        try:
            with LeaseRenewal(hook.store, state.job, state.holder, state.settings.lease_ttl_s), bad_input_fails_the_task():
                return step(store, state).model_dump(mode="json")
        finally:
            store.conn.close()


class DrillPreflightOperator(BaseOperator):
    """Take the job's lease, undo what a dead experiment left on it, check it can be drilled and open the drill
    record (:func:`spark_jobs.drills.engine.begin`). Skipped, naming why, when another experiment holds the job,
    experiments are halted or the job is in recommend mode; failed on bad input or a job that is not drillable."""

    template_fields = ("settings",)

    def __init__(self, *, settings: dict[str, Any] | str, ftops_db_conn_id: str = "ftops_db", **kwargs: Any):
        super().__init__(**kwargs)
        self.settings, self.ftops_db_conn_id = settings, ftops_db_conn_id

    def execute(self, context: Any) -> dict[str, Any]:
        from ft_core.errors import ExternalError
        from ft_core.store.faults import HaltedError
        from ft_core.store.leases import BusyError
        from spark_jobs.drills.engine import begin, drill_settings

        with bad_input_fails_the_task():  # before anything is touched
            settings = drill_settings(dict(self.settings))
        store = HistoryStoreHook(self.ftops_db_conn_id).store()
        try:
            with bad_input_fails_the_task():
                state = begin(store, settings, run_holder(context["dag"].dag_id, context["run_id"]), context["run_id"],
                              driver_env=_driver_env(self.ftops_db_conn_id))
        except (BusyError, HaltedError) as exc:  # one experiment per job; a halt refuses new ones: skipped, not failed
            raise AirflowSkipException(str(exc)) from None
        except AirflowFailException as exc:
            if "recommend mode" in str(exc):
                raise AirflowSkipException(str(exc)) from None
            self._refused_when_scheduled(store, context, settings.job, exc)
            raise
        except ExternalError as exc:
            self._refused_when_scheduled(store, context, settings.job, exc)
            raise
        finally:
            store.conn.close()
        self.log.info("drill #%s of %s: plan %s (predicted OF %.3f, accuracy %s), failing %s once steady", state.drill_id,
                      state.job, state.ctx.plan_id, state.ctx.predicted_output_fidelity,
                      _fraction(state.ctx.predicted_accuracy), state.ctx.domain)
        return state.model_dump(mode="json")

    def _refused_when_scheduled(self, store, context: Any, job: str, exc: Exception) -> None:
        """In a scheduled run (no ``job`` Param: it operates the due jobs), a job that cannot be drilled now is
        skipped, not failed, and why is recorded (``ftops job status``, ``ftops job fleet``): one stopped job must
        not fail every hourly run of the fleet. A person's run for one job fails, as before."""
        if (context.get("params") or {}).get("job"):
            return
        reason = str(exc)
        store.refuse("drill", job, reason)
        self.log.warning("job %s is due but cannot be drilled now, skipped (it stays due): %s", job, reason)
        raise AirflowSkipException(f"not drillable now, recorded and skipped: {reason}") from None


class InjectFailureOperator(_DrillStep):
    """Journal, then apply, the failure (:func:`spark_jobs.drills.engine.inject`) once the steady state held
    (``wait_steady``'s answer) and, in approve mode, a person approved."""

    def __init__(self, *, steady_task_id: str = "wait_steady", approval_task_id: str = "approve_drill", **kwargs: Any):
        super().__init__(**kwargs)
        self.steady_task_id, self.approval_task_id = steady_task_id, approval_task_id

    def execute(self, context: Any) -> dict[str, Any]:
        from ft_core.store.faults import HaltedError
        from spark_jobs.drills.engine import Hypothesis, inject

        state = self.state_in(context)
        if state.needs_approval and not approved(pulled(context["ti"], self.approval_task_id)):
            raise AirflowSkipException("nobody approved the drill: nothing was injected")
        steady = pulled(context["ti"], self.steady_task_id)
        hypothesis = Hypothesis(**steady["seen"])
        try:
            out = self.run_step(state, lambda store, s: inject(store, s, hypothesis))
        except HaltedError as exc:  # the journal refused the fault: nothing was injected; finish records the abort
            context["ti"].xcom_push(key="abort_probe", value="halted")
            context["ti"].xcom_push(key="abort_reason", value=str(exc))
            raise AirflowSkipException(f"not injected: {exc}") from None
        self.log.info("failed %s at %s: %s", out["ctx"]["domain"], out["ctx"]["t_fail"], ", ".join(out["ctx"]["killed"]))
        return out


class AddCapacityOperator(_DrillStep):
    """The lost domain's capacity given back in that domain (:func:`spark_jobs.drills.engine.add_capacity`)."""

    def execute(self, context: Any) -> dict[str, Any]:
        from spark_jobs.drills.engine import add_capacity

        out = self.run_step(self.state_in(context), add_capacity)
        self.log.info("capacity back in %s %.1f s after the failure", out["ctx"]["domain"],
                      out["ctx"]["t_capacity"] - out["ctx"]["t_fail"])
        return out


class EnsurePrimaryOperator(_DrillStep):
    """The primary resubmitted from its checkpoint if its driver is gone (:func:`spark_jobs.drills.engine.ensure_primary`)."""

    def execute(self, context: Any) -> dict[str, Any]:
        from spark_jobs.drills.engine import ensure_primary

        env = self.driver_env()
        out = self.run_step(self.state_in(context), lambda store, s: ensure_primary(store, s, env))
        self.log.info("the primary %s", "was resubmitted from its checkpoint" if out["resubmitted"] else "kept running")
        return out


class VerifyDrillOperator(_DrillStep):
    """Measure the drill and record it passed or failed (:func:`spark_jobs.drills.engine.verify`); the finish
    fails the run when it failed. The fault profile's report, if one ran, goes with the measurement."""

    def __init__(self, *, faults_task_id: str = "inject_faults", **kwargs: Any):
        super().__init__(**kwargs)
        self.faults_task_id = faults_task_id

    def execute(self, context: Any) -> dict[str, Any]:
        from spark_jobs.drills.engine import verify

        state = self.state_in(context)
        faults = pulled(context["ti"], self.faults_task_id)
        out = self.run_step(state, lambda store, s: verify(store, s, {"faults": faults} if faults else None))
        r = out["report"]
        acc = r["tentative_accuracy"]
        self.log.info("drill #%s: predicted OF %.3f, measured accuracy %s over %d windows, caught up %s s, %d lost / %d "
                      "duplicated windows; %s", out["drill_id"], r["predicted_output_fidelity"],
                      "-" if acc is None else f"{acc:.3f}", len(r["tentative_accuracy_per_window"]), r["time_to_caught_up_s"],
                      r["lost_windows"], r["duplicated_windows"], "; ".join(out["problems"]) or "passed")
        return out


class InjectFaultsOperator(_DrillStep):
    """Apply a fault profile (thesis 002's fault model, ``ftops faults validate``) to the primary for ``duration_s``
    once it runs again, journaled like every fault (``executors_paused``: what undoes it continues every paused
    executor and gives back the profile's domains); skipped without a profile. The injector works in this task for
    the duration (it pauses and resumes executor JVMs on this host, so it is work, not a wait)."""

    template_fields = ("profile", "duration_s", "seed")

    def __init__(self, *, profile: str, duration_s: float | str = 60, seed: int | str = 1, **kwargs: Any):
        super().__init__(**kwargs)
        self.profile, self.duration_s, self.seed = profile, duration_s, seed

    def execute(self, context: Any) -> dict[str, Any]:
        from spark_jobs.drills.fault_profile_step import checked_profile, run_fault_profile

        if not self.profile:
            raise AirflowSkipException("no fault profile given")
        with bad_input_fails_the_task():  # a bad profile, or one with too many faults, fails here, naming the field
            profile, duration, seed = checked_profile(self.profile, self.duration_s, self.seed)
        from ft_core.store.leases import LeaseRenewal

        state = self.state_in(context)
        hook = HistoryStoreHook(self.ftops_db_conn_id)
        store = hook.store()
        try:
            with LeaseRenewal(hook.store, state.job, state.holder, state.settings.lease_ttl_s):
                report = run_fault_profile(store, state, profile, duration, seed, store_factory=hook.store,
                                           log=self.log.info)
        finally:
            store.conn.close()
        self.log.info("%s: %s applied, %d skipped, paused %s", report["profile"], report["applied"], report["skipped"],
                      report["paused_s"])
        return report


class FinishDrillOperator(_DrillStep):
    """The drill's last step, whatever happened before (trigger rule ``all_done``): the drill's open faults undone,
    the verdict recorded, the experiment report written (history store and ``<job root>/drills/drill-N/
    experiment.json``), the lease released (:func:`spark_jobs.drills.engine.finish`).

    - refused (busy, halted, recommend mode): skipped, nothing was started;
    - not approved: recorded ``aborted`` (nothing was injected), skipped;
    - a wait ended it (an abort probe, the halt, the lease lost): recorded ``aborted`` with the reason; fails;
    - another step failed: recorded ``failed`` (unless verification recorded it); fails;
    - verified: passed, or failed with verification's reasons (the run fails)."""

    def __init__(self, **kwargs: Any):
        super().__init__(state_task_id="", **kwargs)

    def execute(self, context: Any) -> dict[str, Any]:
        from spark_jobs.drills.engine import DrillState, Outcome, finish

        ti = context["ti"]
        states = task_states(context)
        doc = next((d for t in reversed(STATE_STEPS) if (d := pulled(ti, t))), None)
        if doc is None:
            if states.get("preflight") == "skipped":
                raise AirflowSkipException("the drill was refused before it started (see the preflight's log)")
            raise AirflowFailException("the preflight failed: no drill was started")
        state = DrillState.model_validate(doc)
        outcome = self._outcome(state, states, ti)
        hook = HistoryStoreHook(self.ftops_db_conn_id)
        store = hook.store()
        try:
            experiment = finish(store, state, outcome, self.driver_env())
        finally:
            store.conn.close()
        self.log.info("%s; restored: %s", experiment.title, "; ".join(experiment.restored) or "nothing to restore")
        if experiment.verdict == "aborted" and state.ctx.t_fail is None and not outcome.fired:
            raise AirflowSkipException(f"drill #{state.drill_id}: {experiment.reasons[0]}; recorded as aborted")
        if experiment.verdict != "passed":
            raise AirflowFailException(f"drill #{state.drill_id} {experiment.verdict}: {'; '.join(experiment.reasons)}")
        return experiment.model_dump(mode="json")

    def _outcome(self, state, states: dict[str, str], ti):
        from spark_jobs.drills.engine import Outcome

        fired = next(((pulled(ti, w, "abort_probe"), r) for w in ABORTING if (r := pulled(ti, w, "abort_reason"))), None)
        if fired is not None:
            return Outcome(verdict="aborted", reasons=[f"abort probe {fired[0]}: {fired[1]}"], fired=fired)
        failed = sorted(t for t, s in states.items() if s in ("failed", "upstream_failed") and t != self.task_id)
        if states.get("wait_steady") == "failed":
            why = pulled(ti, "wait_steady", "missing") or "see wait_steady's log"
            return Outcome(verdict="aborted", reasons=[f"not drilled: the steady state did not hold: {why}"])
        if failed:
            return Outcome(verdict="failed", reasons=[f"step {', '.join(failed)} failed; see the DAG run"])
        if state.ctx.t_fail is None:
            return Outcome(verdict="aborted", reasons=["not approved: nothing was injected"])
        return Outcome(verdict="failed" if state.problems else "passed", reasons=state.problems)


def task_states(context: Any) -> dict[str, str]:
    """Task id -> state of this DAG run's tasks (through the Task SDK: a task cannot query the database); in a mapped
    task group, those of the same map index (the same job's drill), by their task ids."""
    ti = context["ti"]
    mapped = ti.map_index is not None and ti.map_index >= 0
    states = ti.get_task_states(dag_id=ti.dag_id, run_ids=[ti.run_id], **({"map_index": ti.map_index} if mapped else {}))
    suffix = f"_{ti.map_index}"  # the Task SDK names a mapped instance <task id>_<map index>
    return {task.removesuffix(suffix) if mapped else task: str(getattr(state, "value", state))
            for task, state in states.get(ti.run_id, {}).items()}
