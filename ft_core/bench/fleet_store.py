"""The history store at fleet scale (issue 33, item 4): how long the store queries behind the UI pages, the DAGs and
the fleet commands take on a synthetic fleet with a year of history, and whether they are index-backed.

Problem: a query quick on a test store of three jobs can read a whole table of a fleet's; a page must stay under 200 ms.

:func:`fill_fleet` fills an empty store set-based (``INSERT ... SELECT`` over ``generate_series``; CHECKs and foreign
keys hold; noise from a seeded ``sin`` hash), then runs ``VACUUM ANALYZE``. :func:`measure_queries` runs the store calls
of each page, DAG task and command (:data:`CALLS`, named after their callers: ft_core imports neither the UI nor the
DAGs) through the real ``HistoryStore``: the median of ``repeats`` runs (one for a call over a second), the SQL it ran
(a recording cursor factory) and that SQL's ``EXPLAIN (ANALYZE, FORMAT JSON)``. A Seq Scan of a table over 10,000 rows,
or any scan reading over 10,000 of its rows, is not index-backed.

Size: 5,000 jobs over 365 days are 5.6 million rows (1.4 GB), filled in about 2.5 minutes on 2 cores. Note: production
writes some tables more often (a rates profile every hourly ftops_profile_and_plan run, a progress row per
micro-batch), so a query flagged here is slower there, not faster.
"""

from __future__ import annotations

import json
import re
import statistics
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import datetime, timedelta, timezone
from typing import Any

from pydantic import BaseModel

from ft_core.errors import InputError
from ft_core.fleet.schedules import Scheduled, due, take
from ft_core.store.history import HistoryStore
from ft_core.store.migrations import upgrade

BIG_TABLE = 10_000  # rows: a Seq Scan of a bigger table is not index-backed
TARGET_MS = 200.0  # a page's store queries together
SLOW_S = 1.0  # a call slower than this (a page's query per job) is timed once
MAX_MAP_LENGTH = 1024  # Airflow's [core] max_map_length default: the most due jobs one scheduled run picks
PROGRESS_BATCHES = 288  # stream progress rows per runnable job: every 5 minutes over the last day

# The fleet: 9 jobs in 10 runnable, the rest plan-only (one in two discovered); drill schedules @weekly, @daily, cron
# or none; one runnable job in three tuned; priorities 1 to 10. Per job, in time order: a topology version, a rates
# profile and a replication plan a week; a drill a week when drilled (3 windows, 2 closed faults); a checkpoint plan
# and its validation every 4 weeks when tuned; a recovery run (3 stages, 2 queries) and an applied replica plan every
# 4 weeks; a policy change a quarter; their events; stream progress every 5 minutes over the last day. Drilling now:
# jobs 7 and 8 of each 1,000 (a lease, 2 failure domains, an open fault); job 8's lease has expired: fault orphaned.
_STEPS: tuple[tuple[str, str], ...] = (
    ("ftops_job, ftops_policy_change", """
WITH j AS (INSERT INTO ftops_job (name, workload, primary_master, standby_master, deployment, apply_mode,
    drill_schedule, tuning_schedule, priority, replication_budget, max_recovery_s, query_priorities)
SELECT 'job-' || lpad(i::text, 5, '0'), CASE WHEN run THEN 'topk' ELSE 'plan-only' END, m, m, CASE WHEN run THEN
    jsonb_build_object('kind', 'runnable', 'pipeline', 'topk', 'root', '/srv/ftops/job-' || i, 'trigger_s', 10,
    'primary_master', m, 'standby_master', m, 'primary_ui', ui, 'standby_ui', ui, 'spark_conf', '{}'::jsonb,
    'domains', jsonb_build_object('w1-' || c, 'rack-a', 'w2-' || c, 'rack-b', 'w3-' || c, 'rack-c')) END,
    CASE WHEN NOT run THEN 'recommend' WHEN mod(i, 3) = 0 THEN 'auto' ELSE 'approve' END, CASE WHEN run THEN
    (ARRAY[NULL, '@weekly', '@daily', mod(i, 60) || ' 3 * * ' || mod(i, 7), '@weekly'])[1 + mod(i, 5)] END,
    CASE WHEN run AND mod(i, 3) = 0 THEN '@weekly' END, 1 + mod(i, 10), 2, 600, '{"q1": 1, "q2": 3}'
FROM generate_series(1, %(jobs)s) i, LATERAL (SELECT mod(i, 10) <> 0 AS run, mod(i, 20) AS c, CASE WHEN mod(i, 10) <> 0
    THEN 'spark://10.0.' || mod(i, 20) || '.1:7077' END AS m, 'http://10.0.' || mod(i, 20) || '.1:8080' AS ui) x
    RETURNING job_id, apply_mode)
INSERT INTO ftops_policy_change (job_id, changed_by, changed_at, changes)
SELECT job_id, CASE q WHEN 0 THEN 'registration' ELSE 'ops via ftops job set' END, %(t0)s + q * interval '91 days',
    CASE q WHEN 0 THEN jsonb_build_object('apply_mode', jsonb_build_object('from', NULL, 'to', apply_mode))
    ELSE jsonb_build_object('priority', jsonb_build_object('from', q, 'to', q + 1)) END
FROM j, generate_series(0, %(quarters)s) q"""),
    ("ftops_topology_version, ftops_profile, ftops_plan, ftops_checkpoint_validation", """
WITH t AS (
    INSERT INTO ftops_topology_version (job_id, version, doc, doc_hash, created_at)
    SELECT j.job_id, w, jsonb_build_object('name', j.name, 'version', w, 'tasks', '{"t1": {"parallelism": 2},
        "t2": {"parallelism": 4}}'::jsonb), md5(j.job_id || '/' || w),
        %(t0)s + (w - 1) * interval '7 days' + mod(j.job_id, 10000) * interval '1 minute' AS at
    FROM ftops_job j CROSS JOIN generate_series(1, %(weeks)s) w ORDER BY at
    RETURNING topology_id, job_id, version, created_at, 0.6 + 0.35 * pg_temp.noise(topology_id) AS f),
p AS (INSERT INTO ftops_profile (job_id, kind, doc, dag_run_id, created_at)
    SELECT t.job_id, 'rates', jsonb_build_object('rates', jsonb_build_object('t1', round(100 * t.f), 't2', 40),
        'topology_id', t.topology_id) || CASE WHEN j.deployment IS NULL THEN '{"rediscover": {"spark_ui":
        "http://10.0.9.1:4040"}}' ELSE '{}' END::jsonb, 'scheduled__w' || t.version, t.created_at
    FROM t JOIN ftops_job j USING (job_id) WHERE j.deployment IS NOT NULL OR mod(j.job_id, 20) = 0),
pl AS (
    INSERT INTO ftops_plan (job_id, kind, algorithm, parameters, objective, optimal, payload, input_hash, topology_id,
        dag_run_id, predicted_accuracy, accuracy_estimate, created_at)
    SELECT t.job_id, k.kind, k.algo, '{"budget": 2}', t.f, true, CASE k.kind WHEN 'replication' THEN
        jsonb_build_object('tasks', jsonb_build_array('t1', 't' || (2 + mod(t.version, 4)))) ELSE
        jsonb_build_object('interval_ms', 5000 * (1 + mod(t.version, 6))) END, md5(k.kind || t.topology_id),
        t.topology_id, 'scheduled__w' || t.version, CASE k.kind WHEN 'replication' THEN t.f - 0.05 END,
        CASE k.kind WHEN 'replication' THEN '{"windows": 12}'::jsonb END, t.created_at + interval '5 minutes'
    FROM t JOIN ftops_job j USING (job_id), (VALUES ('replication', 'exact'), ('checkpoint', 'chiron')) k(kind, algo)
    WHERE k.kind = 'replication' OR (mod(t.version, 4) = 2 AND j.tuning_schedule IS NOT NULL) ORDER BY t.created_at
    RETURNING plan_id, job_id, kind, payload, dag_run_id, created_at)
INSERT INTO ftops_checkpoint_validation (plan_id, job_id, interval_ms, variant, predicted_recovery_s, measured_recovery_s,
    recovery_error, max_recovery_error, validated, reason, dag_run_id, created_at)
SELECT plan_id, job_id, (payload->>'interval_ms')::float, 'recommended', 40, s, abs(s - 40) / 40, 0.25,
    abs(s - 40) / 40 <= 0.25, 'measured', dag_run_id, created_at + interval '1 hour'
FROM pl, LATERAL (SELECT 28 + 24 * pg_temp.noise(plan_id) AS s) m WHERE kind = 'checkpoint'"""),
    ("ftops_applied_plan", """
INSERT INTO ftops_applied_plan (plan_id, job_id, role, spark_app_id, master_url, started_at, stopped_at)
SELECT plan_id, job_id, 'replica', 'app-' || plan_id, master, at, lead(at) OVER (PARTITION BY job_id ORDER BY at)
FROM (SELECT p.plan_id, p.job_id, j.standby_master AS master, p.created_at + interval '1 hour' AS at
    FROM ftops_plan p JOIN ftops_job j USING (job_id) WHERE p.kind = 'replication' AND j.deployment IS NOT NULL
    AND mod(floor(extract(epoch FROM p.created_at) / 604800)::int, 4) = 1) a ORDER BY at"""),
    ("ftops_drill, ftops_drill_window, ftops_fault", """
WITH d AS (
    INSERT INTO ftops_drill (job_id, plan_id, params, status, predicted_output_fidelity, predicted_accuracy,
        tentative_accuracy, time_to_first_tentative_s, time_to_caught_up_s, lost_windows, duplicated_windows,
        output_equals_reference, report, dag_run_id, started_at, finished_at)
    SELECT p.job_id, p.plan_id, jsonb_build_object('domain', 'rack-' || chr(97 + mod(p.plan_id, 3)::int)), s.status,
        p.objective, p.predicted_accuracy, least(1, p.objective + 0.05 * pg_temp.noise(p.plan_id)),
        20 + 40 * pg_temp.noise(p.plan_id + 1), 60 + 240 * pg_temp.noise(p.plan_id + 2), 0, 0, s.status = 'passed',
        CASE s.status WHEN 'passed' THEN '{}' ELSE '{"error": "the steady state did not hold"}' END::jsonb,
        'scheduled__drill_' || p.plan_id, p.created_at + interval '1 day', p.created_at + interval '1 day 20 minutes'
    FROM ftops_plan p JOIN ftops_job j USING (job_id), LATERAL (SELECT CASE WHEN pg_temp.noise(p.plan_id + 3) < 0.02
        THEN 'failed' WHEN pg_temp.noise(p.plan_id + 3) < 0.05 THEN 'aborted' ELSE 'passed' END AS status) s
    WHERE p.kind = 'replication' AND j.drill_schedule IS NOT NULL
        AND p.created_at + interval '1 day 20 minutes' < %(now)s ORDER BY p.created_at
    RETURNING drill_id, job_id, params->>'domain' AS domain, tentative_accuracy AS accuracy, started_at AS at,
        'dag run ftops_chaos_drill/' || dag_run_id AS holder),
w AS (INSERT INTO ftops_drill_window (drill_id, window_start, accuracy)
    SELECT drill_id, at + k * interval '2 minutes', accuracy * (0.97 + 0.03 * pg_temp.noise(drill_id + k))
    FROM d CROSS JOIN generate_series(1, 3) k)
INSERT INTO ftops_fault (job_id, experiment_kind, experiment_id, holder, kind, target, undo, undo_by, opened_at,
    applied_at, closed_at, closed_by, outcome)
SELECT job_id, 'drill', drill_id, holder, f.kind, f.target, jsonb_build_object('kind', f.kind, 'target', f.target),
    at + interval '15 minutes', at + f.k * interval '1 minute', at + f.k * interval '61 seconds',
    at + (f.k + 8) * interval '1 minute', holder, 'undone'
FROM d, LATERAL (VALUES (1, 'domain_down', domain), (2, 'driver_killed', 'ftops-primary')) f(k, kind, target)"""),
    ("live drills", """
WITH l AS (
    INSERT INTO ftops_lease (job_id, kind, holder, acquired_at, expires_at)
    SELECT job_id, 'drill', 'dag run ftops_chaos_drill/manual__live_' || job_id, now() - interval '5 minutes',
        now() + CASE mod(job_id, 1000) WHEN 8 THEN interval '-1 hour' ELSE interval '1 day' END
    FROM ftops_job WHERE drill_schedule IS NOT NULL AND mod(job_id, 1000) IN (7, 8) RETURNING *),
d AS (INSERT INTO ftops_drill (job_id, plan_id, status, predicted_output_fidelity, dag_run_id, started_at)
    SELECT l.job_id, p.plan_id, 'running', p.objective, 'manual__live_' || l.job_id, l.acquired_at
    FROM l, LATERAL (SELECT plan_id, objective FROM ftops_plan WHERE job_id = l.job_id AND kind = 'replication'
        ORDER BY created_at DESC LIMIT 1) p RETURNING drill_id, job_id),
f AS (INSERT INTO ftops_fault (job_id, experiment_kind, experiment_id, holder, kind, target, undo, undo_by, opened_at)
    SELECT l.job_id, 'drill', d.drill_id, l.holder, 'domain_down', 'rack-a', '{"kind": "domain_down"}',
        l.acquired_at + interval '15 minutes', l.acquired_at FROM d JOIN l USING (job_id))
INSERT INTO ftops_domain_lock (domain, job_id, holder, acquired_at)
SELECT j.primary_master || '#' || r, l.job_id, l.holder, l.acquired_at
FROM l JOIN ftops_job j USING (job_id), (VALUES ('rack-a'), ('rack-b')) d(r)"""),
    ("ftops_fleet_turn", """
INSERT INTO ftops_fleet_turn (job_id, operation, picked_at, picked_by, started_at, refused_at, refused_reason)
SELECT j.job_id, o.op, s.at, 'dag run ' || o.dag || '/scheduled', CASE o.op WHEN 'tuning' THEN s.at END,
    CASE WHEN mod(j.job_id, 50) = 3 THEN %(now)s - interval '1 hour' END,
    CASE WHEN mod(j.job_id, 50) = 3 THEN 'its primary is stopped: no driver answers at ' || j.primary_master END
FROM ftops_job j, (VALUES ('drill', 'ftops_chaos_drill'), ('tuning', 'ftops_checkpoint_tuning')) o(op, dag),
    LATERAL (SELECT CASE o.op WHEN 'drill' THEN (SELECT max(started_at) FROM ftops_drill d WHERE d.job_id = j.job_id)
        ELSE %(now)s - mod(j.job_id, 7) * interval '1 day' END AS at) s
WHERE CASE o.op WHEN 'drill' THEN j.drill_schedule ELSE j.tuning_schedule END IS NOT NULL"""),
    ("ftops_recovery_run, ftops_recovery_stage, ftops_recovery_query", """
WITH r AS (
    INSERT INTO ftops_recovery_run (job_id, plan_id, status, failure, dag_run_id, started_at, finished_at)
    SELECT p.job_id, p.plan_id, CASE WHEN pg_temp.noise(p.plan_id + 4) < 0.05 THEN 'failed' ELSE 'succeeded' END,
        '{"domain": "rack-b", "units": 2}', 'manual__recovery_' || p.plan_id, p.created_at + interval '2 days',
        p.created_at + interval '2 days 15 minutes'
    FROM ftops_plan p JOIN ftops_job j USING (job_id) WHERE p.kind = 'replication' AND j.deployment IS NOT NULL
        AND mod(floor(extract(epoch FROM p.created_at) / 604800)::int, 4) = 0
        AND p.created_at + interval '2 days 15 minutes' < %(now)s
    ORDER BY p.created_at RETURNING run_id, started_at AS at),
s AS (INSERT INTO ftops_recovery_stage (run_id, stage_no, capacity, partitions, status, waiting_at, started_at,
        finished_at)
    SELECT run_id, s, 0.5 * s, jsonb_build_array('p' || s, 'p' || (s + 3)), 'done', at + (4 * s - 3) * interval
        '1 minute', at + (4 * s - 2) * interval '1 minute', at + 4 * s * interval '1 minute'
    FROM r, generate_series(1, 3) s)
INSERT INTO ftops_recovery_query (run_id, query, priority, recovered_s)
SELECT run_id, q, prio, prio * 100 * pg_temp.noise(run_id) FROM r, (VALUES ('q1', 1.0), ('q2', 3.0)) q(q, prio)"""),
    ("ftops_event", """
INSERT INTO ftops_event (job_id, kind, payload, created_at)
SELECT job_id, 'plan_stored', jsonb_build_object('plan_id', plan_id, 'kind', kind), created_at FROM ftops_plan
UNION ALL SELECT job_id, 'drill_' || e, jsonb_build_object('drill_id', drill_id, 'status', status), t FROM ftops_drill,
    LATERAL (VALUES ('started', started_at), ('finished', finished_at)) x(e, t) WHERE t IS NOT NULL
UNION ALL SELECT job_id, 'fault_' || e, jsonb_build_object('fault_id', fault_id, 'kind', kind), t FROM ftops_fault,
    LATERAL (VALUES ('opened', opened_at), ('closed', closed_at)) x(e, t) WHERE t IS NOT NULL
UNION ALL SELECT job_id, 'recovery_' || e, jsonb_build_object('run_id', run_id), t FROM ftops_recovery_run,
    LATERAL (VALUES ('started', started_at), ('finished', finished_at)) x(e, t)
UNION ALL SELECT job_id, 'plan_applied', jsonb_build_object('plan_id', plan_id), started_at FROM ftops_applied_plan
UNION ALL SELECT job_id, 'policy_changed', changes, changed_at FROM ftops_policy_change
    WHERE changed_by <> 'registration'"""),
    ("ftops_stream_progress", """
INSERT INTO ftops_stream_progress (stream, app_id, batch_id, role, batch_end, watermark_ms, input_rows, output_rows,
    input_files, lag_files, recorded_at, watermark_arrived, input_watermark_ms)
SELECT 'ftops-' || j.name || '-primary', 'app-primary-' || j.job_id, b, 'primary', at, ms - 60000,
    1000 + mod(b * j.job_id, 500), 10 + mod(b, 7), 12, mod(b, 3), at, at - interval '50 seconds', ms - 30000
FROM ftops_job j, generate_series(1, %(batches)s) b, LATERAL (SELECT %(now)s - (%(batches)s - b) * interval '5 minutes'
    - mod(j.job_id, 300) * interval '1 second' AS at) e, LATERAL (SELECT (extract(epoch FROM at) * 1000)::bigint ms) w
WHERE j.deployment IS NOT NULL"""),
)


class FleetSize(BaseModel):
    """What :func:`fill_fleet` wrote: rows per ftops table, and the time it took (VACUUM ANALYZE included)."""

    jobs: int
    days: int
    seed: int
    seconds: float
    rows: dict[str, int]


def fill_fleet(conn, jobs: int = 5000, days: int = 365, seed: int = 1,
               progress: Callable[[str, int], None] | None = None) -> FleetSize:
    """Fill the empty store of ``conn`` (migrated first) with a synthetic fleet (module docstring); ``progress(step,
    rows)`` after each statement. InputError when the store has jobs already."""
    if not 1 <= jobs <= 99_999 or days < 7:
        raise InputError(f"fleet: 1 to 99,999 jobs and at least 7 days of history, got {jobs} jobs, {days} days")
    start = time.perf_counter()
    upgrade(conn)
    now = datetime.now(timezone.utc).replace(microsecond=0)
    params = {"jobs": jobs, "weeks": days // 7, "quarters": (days - 1) // 91, "batches": PROGRESS_BATCHES, "now": now,
              "t0": now - timedelta(days=days)}
    with conn, conn.cursor() as cur:
        cur.execute("SELECT count(*) FROM ftops_job")
        if cur.fetchone()[0]:
            raise InputError("fill_fleet fills an empty history store; this one has jobs (use a fresh database)")
        cur.execute("CREATE OR REPLACE FUNCTION pg_temp.noise(bigint) RETURNS double precision LANGUAGE sql IMMUTABLE "
                    f"AS 'SELECT 0.5 + 0.5 * sin($1::float8 * 12.9898 + {int(seed) * 78.233})'")  # in [0, 1]
    for step, sql in _STEPS:
        with conn, conn.cursor() as cur:
            cur.execute(sql, params)
            if progress is not None:
                progress(step, cur.rowcount)
    conn.autocommit = True
    try:
        with conn.cursor() as cur:
            cur.execute("VACUUM ANALYZE")
    finally:
        conn.autocommit = False
    return FleetSize(jobs=jobs, days=days, seed=seed, seconds=round(time.perf_counter() - start, 1),
                     rows=table_rows(conn))


def table_rows(conn) -> dict[str, int]:
    """Rows per ftops table, counted."""
    with conn, conn.cursor() as cur:
        cur.execute("SELECT relname FROM pg_class WHERE relkind = 'r' AND relname LIKE 'ftops\\_%' "
                    "AND pg_table_is_visible(oid) ORDER BY relname")
        tables = [r[0] for r in cur.fetchall()]
        cur.execute(" UNION ALL ".join(f"SELECT '{t}', count(*) FROM {t}" for t in tables))  # names from pg_class
        return dict(cur.fetchall())


class Subjects(BaseModel):
    """What the calls are about: a drilled job in the middle of the fleet (its pages show a full history)."""

    job: str
    names: list[str]  # every job
    plan_only: list[str]  # jobs without a deployment (their kind comes from their latest rates profile)
    plans: list[int]  # the job's two newest replication plans (the job page diffs them)
    drill_id: int  # the job's newest drill
    drill_run: str  # the run id of the DAG run that drilled it
    due: dict[str, list[str]]  # per operation, the due jobs a scheduled run picks


def subjects(store: HistoryStore) -> Subjects:
    with store.conn, store.conn.cursor() as cur:
        cur.execute("SELECT name, deployment IS NULL, drill_schedule IS NOT NULL FROM ftops_job ORDER BY job_id")
        jobs = cur.fetchall()
    drilled = [name for name, _, drill in jobs if drill]
    if not drilled:
        raise InputError("measure_queries: the store has no drilled job; fill it first (fill_fleet)")
    job, now = drilled[len(drilled) // 2], datetime.now(timezone.utc)
    picked = {op: [r.job for r in take(due([Scheduled(**r) for r in store.scheduled(op)], now), MAX_MAP_LENGTH)[0]]
              for op in ("drill", "tuning")}
    drill = store.drills(job, limit=1)[-1]
    return Subjects(job=job, names=sorted(n for n, _, _ in jobs), plan_only=[n for n, none, _ in jobs if none],
                    plans=[p["plan_id"] for p in store.plans(job, "replication", limit=2)],
                    drill_id=drill["drill_id"], drill_run=drill["dag_run_id"], due=picked)


Call = Callable[[HistoryStore, Subjects], Any]
PAGE_ROWS = 100  # the console's jobs page shows 100 jobs a page (plugins/ftops_provider/ui/fleet.py PAGE_SIZE)


def _c(method: str, *args: Any, job: bool = False, why: str = "") -> tuple[str, Call]:
    """The store call ``method([job, ]*args)`` (``job``: the subject job first) and its name, ``why`` it is made."""
    name = f"{method}({', '.join((['job'] if job else []) + [repr(a) for a in args])}){why}"
    return name, lambda st, s: getattr(st, method)(*([s.job] if job else []), *args)


# (side, page / DAG task / command) -> its store calls in order: (name, call)
CALLS: dict[tuple[str, str], list[tuple[str, Call]]] = {
    # plugins/ftops_provider/ui/app.py jobs_page: the jobs, every job's kind (ui/models.py JobKind) and overview, the halt
    # (fleet_states for every job; then the landing page's 100 jobs in full, ui/fleet.py)
    ("ui", "jobs page"): [_c("fleet_states"),
                          ("fleet_overview(100 names)", lambda st, s: st.fleet_overview(s.names[:PAGE_ROWS])),
                          ("job_kinds(100 names)", lambda st, s: st.job_kinds(s.names[:PAGE_ROWS])), _c("halted")],
    # dag_run_view: the "Fault tolerance" tab of a DAG run in Airflow's UI
    ("ui", "DAG run tab"): [("dag_run_records(a drill run's id)", lambda st, s: st.dag_run_records(s.drill_run))],
    # job_page: _known, plans, JobKind.from_store, the halt, the last hour (ui/live.py), the topology, _diff of the two
    # newest plans (_known, both plans), drills, recovery runs, fleet recoveries, the fault journal
    ("ui", "job page"): [_c("has_job", job=True, why=" (_known)"), _c("plans", "replication", job=True),
                         _c("job_kinds", job=True), _c("halted"),
                         ("job_batches(job, the last hour)", lambda st, s: st.job_batches(s.job, time.time() - 3600)),
                         _c("latest_topology", job=True),
                         _c("has_job", job=True, why=" (_diff's _known)"),
                         ("plan(a), plan(b)", lambda st, s: [st.plan(i) for i in s.plans]), _c("drills", job=True),
                         _c("recovery_runs", job=True), _c("job_fleet_recoveries", job=True),
                         _c("faults", 20, job=True)],
    # drill_page (recovery_page alike): _known, the experiment report
    ("ui", "drill page"): [_c("has_job", job=True, why=" (_known)"), ("experiment('drill', id)",
                                                                   lambda st, s: st.experiment("drill", s.drill_id))],
    # plugins/ftops_provider/operators/fleet.py jobs_to_operate: the due_jobs task of each fleet DAG
    ("dag", "ftops_chaos_drill due_jobs"): [_c("scheduled", "drill"), (
        "pick('drill', due jobs)", lambda st, s: st.pick("drill", s.due["drill"], "bench fleet"))],
    ("dag", "ftops_checkpoint_tuning due_jobs"): [_c("scheduled", "tuning"), (
        "pick('tuning', due jobs)", lambda st, s: st.pick("tuning", s.due["tuning"], "bench fleet"))],
    # ftops_profile_and_plan: registered_jobs; undo_orphaned_faults (spark_jobs/drills/reconcile.py reconcile); then
    # mapped per job: profile (job; a plan-only job's latest profile: rediscovery), plan_replication (jobs, topology,
    # current plan), replica_changes (the running replica: applied_plans)
    ("dag", "ftops_profile_and_plan"): [_c("jobs", why=" (registered_jobs)"),
                                        _c("orphaned_faults", why=" (undo_orphaned_faults)"),
                                        _c("running_fleet_recoveries", why=" (reconcile: dead fleet recoveries)")],
    ("dag", "ftops_profile_and_plan, per job"): [
        _c("job", job=True), ("latest_profile(plan-only job, 'rates')",
                              lambda st, s: [st.latest_profile(n, "rates") for n in s.plan_only[:1]]),
        _c("job", job=True, why=" (plan_replication)"), _c("latest_topology", job=True),
        _c("current_plan", "replication", job=True), _c("applied_plans", job=True)],
    # ftops_safety_net: the trigger's poll (triggers/orphaned_faults.py); make_whole of a repaired job (reconcile.py)
    ("dag", "ftops_safety_net"): [_c("orphaned_faults", why=" (trigger poll)"), _c("lease", job=True),
                                  _c("running_replica_plan", job=True)],
    # ftops_fleet_watch: the trigger's poll (spark_jobs/fleet_recovery/watch.py find_losses): the fleet's states, then
    # per job without executors, its newest fleet recovery
    ("dag", "ftops_fleet_watch"): [_c("fleet_states", why=" (trigger poll)"),
                                   _c("job_fleet_recoveries", 1, job=True, why=" (a lost job)")],
    # ftops_chaos_drill per job (spark_jobs/drills): the halt, the job's open faults, a stream's progress (waits)
    ("dag", "ftops_chaos_drill, per job"): [_c("halted"), _c("open_faults", job=True), (
        "progress_since(stream, 10 min ago)",
        lambda st, s: st.progress_since(f"ftops-{s.job}-primary", time.time() - 600))],
    # spark_jobs/cli/job_policy.py _fleet (ftops job fleet); spark_jobs/cli/job.py (ftops job list)
    ("cli", "ftops job fleet"): [_c("fleet_policy"), _c("domain_locks"), _c("scheduled", "drill"),
                                 _c("scheduled", "tuning"), _c("refusals")],
    ("cli", "ftops job list"): [_c("jobs"), _c("job_kinds"), _c("policies")],
}


class QueryTiming(BaseModel):
    """One store call of a page (a DAG task, a command): its median time and what its SQL's plans read."""

    side: str  # ui, dag or cli
    page: str
    name: str
    median_ms: float
    runs: int
    rows: int  # rows its statements returned (or wrote)
    statements: int  # SQL statements one call ran
    node_types: list[str]
    indexes: list[str]
    seq_scans: list[str]  # tables of more than BIG_TABLE rows read by a Seq Scan
    wide_scans: list[str]  # such tables of which one scan node read more than BIG_TABLE rows
    rows_read: int  # the most rows one scan node read (returned and filtered out, over its loops)
    index_backed: bool
    explain: list[dict[str, Any]]  # EXPLAIN (ANALYZE, FORMAT JSON) of each statement shape


class PageTiming(BaseModel):
    side: str
    page: str
    total_ms: float  # the sum of its calls' medians
    within_target: bool  # total_ms <= TARGET_MS


class FleetStoreReport(BaseModel):
    table_rows: dict[str, int]
    repeats: int
    job: str  # the job the per-job calls read
    queries: list[QueryTiming]
    pages: list[PageTiming]


def measure_queries(conn, repeats: int = 5) -> FleetStoreReport:
    """Time and EXPLAIN every call of :data:`CALLS` on the filled store of ``conn`` (module docstring). The ``pick``
    calls write, as a scheduled run does: they record the due jobs as picked."""
    store = HistoryStore(conn)
    about, sizes = subjects(store), table_rows(conn)
    queries, pages = [], []
    for (side, page), calls in CALLS.items():
        timed = [_measure(store, about, call, repeats, sizes, side=side, page=page, name=name) for name, call in calls]
        total = sum(t.median_ms for t in timed)
        queries += timed
        pages.append(PageTiming(side=side, page=page, total_ms=round(total, 2), within_target=total <= TARGET_MS))
    return FleetStoreReport(table_rows=sizes, repeats=repeats, job=about.job, queries=queries, pages=pages)


def _measure(store: HistoryStore, about: Subjects, call: Call, repeats: int, sizes: dict[str, int],
             **names: str) -> QueryTiming:
    with _recording(store.conn) as statements:  # this run records the SQL and warms the cache
        first = _timed(store, about, call)
    times = [first] if first > SLOW_S else [_timed(store, about, call) for _ in range(repeats)]
    plans = explain(store.conn, [sql for sql, _ in statements])
    return QueryTiming(median_ms=round(statistics.median(times) * 1000, 3), runs=len(times), statements=len(statements),
                       rows=sum(n for _, n in statements), explain=plans, **names, **plan_summary(plans, sizes))


def _timed(store: HistoryStore, about: Subjects, call: Call) -> float:
    start = time.perf_counter()
    call(store, about)
    return time.perf_counter() - start


@contextmanager
def _recording(conn) -> Iterator[list[tuple[str, int]]]:
    """The SQL (parameters bound) of every statement run meanwhile on new cursors of ``conn``, with its rows."""
    import psycopg2.extensions

    seen: list[tuple[str, int]] = []

    class Recording(psycopg2.extensions.cursor):
        def execute(self, query, vars=None):
            sql = self.mogrify(query, vars).decode()
            super().execute(query, vars)
            seen.append((sql, self.rowcount))

    before, conn.cursor_factory = conn.cursor_factory, Recording
    try:
        yield seen
    finally:
        conn.cursor_factory = before


def explain(conn, statements: list[str], most: int = 4) -> list[dict[str, Any]]:
    """``EXPLAIN (ANALYZE, FORMAT JSON)`` of each statement shape (literals aside; ``most`` of them), rolled back."""
    shapes: dict[str, str] = {}
    for sql in statements:
        shapes.setdefault(re.sub(r"'(?:[^']|'')*'|\b\d+(?:\.\d+)?\b", "?", sql), sql)
    plans = []
    try:
        with conn.cursor() as cur:
            for sql in list(shapes.values())[:most]:
                cur.execute("EXPLAIN (ANALYZE, FORMAT JSON) " + sql)
                doc = cur.fetchone()[0]
                plans.append((json.loads(doc) if isinstance(doc, str) else doc)[0])
    finally:
        conn.rollback()  # an explained write (pick) is undone
    return plans


def plan_summary(plans: list[dict[str, Any]], sizes: dict[str, int]) -> dict[str, Any]:
    """Node types, indexes, and on tables over BIG_TABLE rows (``sizes``): Seq Scans, and scans of any kind that read
    over BIG_TABLE rows (an index read whole for its order); the most rows one scan node read."""
    nodes, todo = [], [p["Plan"] for p in plans]
    while todo:
        nodes.append(todo.pop())
        todo += nodes[-1].get("Plans", [])
    scans = [(n["Relation Name"], n["Node Type"], int((n.get("Actual Rows", 0) + n.get("Rows Removed by Filter", 0))
              * n.get("Actual Loops", 1))) for n in nodes if "Relation Name" in n]
    big = [(table, kind, read) for table, kind, read in scans if sizes.get(table, 0) > BIG_TABLE]
    seq = sorted({table for table, kind, _ in big if kind == "Seq Scan"})
    wide = sorted({table for table, _, read in big if read > BIG_TABLE})
    return {"node_types": sorted({n["Node Type"] for n in nodes}), "seq_scans": seq, "wide_scans": wide,
            "index_backed": not seq and not wide, "rows_read": max((read for *_, read in scans), default=0),
            "indexes": sorted({n["Index Name"] for n in nodes if "Index Name" in n})}
