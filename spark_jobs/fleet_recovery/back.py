"""When a job a fleet recovery restarted is back (issue 33, item 3): every stream it ran before the failure ran two
micro-batches within its caught-up band of its input, started since its restart (twice its steady lag plus 5 s, at most
:data:`BOUND_S`: :func:`spark_jobs.attach.drill_support.caught_up_band`, the drills' rule). A stream's lag is its output
watermark behind its input's (the history store's rows); a job that had no lag before the failure (stateless, or
before its first window closed) is back after two micro-batches. Read from the history store only, so the triggerer
needs no disk shared with the drivers.
"""

from __future__ import annotations

BOUND_S = 60.0  # a job counts as back within this many seconds of its input at most (the drills' steady bound)


def back_times(store, run_id: int, bound_s: float = BOUND_S) -> tuple[dict[str, dict[str, float]], list[str]]:
    """Each restarted job of the run that is back (``back_at``, ``restart_delay_s``: restart to its first batch's start,
    its end for rows written without one: the first batch reads the outage's backlog, which is catch-up), and
    what is missing for the others; a job its plan never restarts (no stage) is neither."""
    back, missing = {}, []
    for row in store.fleet_recovery(run_id)["jobs"]:
        if row["stage"] is None:
            continue
        if row["restarted_at"] is None:
            missing.append(f"{row['job']}: not restarted yet")
            continue
        sources = row["inputs"].get("sources", {})
        found = back_since(store, row["job"], row["restarted_at"].timestamp(), sources.get("streams", []),
                           sources.get("steady_lag_s"), bound_s)
        if isinstance(found, str):
            missing.append(f"{row['job']}: {found}")
        else:
            back[row["job"]] = found
    return back, missing


def back_since(store, job: str, since: float, streams: list[str], steady_lag_s: float | None,
               bound_s: float = BOUND_S) -> dict[str, float] | str:
    """When the last of ``streams`` ran the first of two micro-batches within its band since ``since`` (module
    docstring), with the restart delay; or what is missing."""
    from spark_jobs.attach.drill_support import caught_up_band

    band = caught_up_band(steady_lag_s or 0.0, bound_s)
    batches = store.job_batches(job, since)
    firsts, ends = [], []
    for stream in streams or list(batches):
        rows = batches.get(stream, [])
        # a batch counts from its start: one the failure caught finishing (its tasks done, committed just after) or
        # in flight across the restart is not a batch run since
        good = [b["batch_end"] for b in rows if (b.get("batch_start") or b["batch_end"]) >= since and (
            (b["lag_s"] is None and steady_lag_s is None) or (b["lag_s"] is not None and b["lag_s"] <= band))]
        if len(good) < 2:
            return f"{stream}: {len(good)} of 2 micro-batches within {band:.0f} s of its input since its restart"
        # the first batch's start: its work is catch-up; a batch in flight across the restart (a job kept waiting:
        # its stalled batch resumes on the new executors) started before it, and had no restart delay
        firsts.append(max(since, rows[0].get("batch_start") or rows[0]["batch_end"]))
        ends.append(good[0])
    if not ends:
        return "no stream of the job is known"
    return {"back_at": max(ends), "restart_delay_s": round(min(firsts) - since, 2)}
