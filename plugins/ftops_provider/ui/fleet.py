"""The jobs page: the fleet at a glance.

Each job's state (:mod:`ft_core.fleet.job_state`), the experiment holding it, its primary's newest micro-batch
and lag, its current plan, its newest and next drill, its priority, why a scheduled drill skipped it and the approval
requests that name it. The
page counts the jobs in each state, filters by state and by name, sorts, and shows ``PAGE_SIZE`` rows a page.
In two steps, so that a fleet of thousands costs little more than a page: :func:`select_page` chooses the page
from every job's few deciding columns (``HistoryStore.fleet_states``); only the page's jobs are then read in
full (``HistoryStore.fleet_overview(names)``, their kinds) and pay for their next drill's cron arithmetic
(croniter: about 0.2 ms a job).

    >>> FleetQuery(state="lagging", sort="lag").state
    'lagging'
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any, Literal

from pydantic import BaseModel, Field, field_validator

from ft_core.fleet.job_state import STATES, JobState, states_of
from ftops_provider.ui.formats import minute
from ftops_provider.ui.templates import render

PAGE_SIZE = 100
SORTS = {"job": "name", "state": "state (experiment, no progress, down, lagging, running)",
         "lag": "lag (most behind first)", "priority": "priority (highest first)",
         "drill": "newest drill (longest ago first)"}


class FleetQuery(BaseModel):
    """The jobs page's filter, order and page (its URL's query string)."""

    state: JobState | None = Field(default=None, description="only the jobs in this state")
    q: str = Field(default="", max_length=100, description="only the jobs whose name contains this")
    sort: Literal["job", "state", "lag", "priority", "drill"] = "job"
    page: int = Field(default=1, ge=1, le=100_000)

    @field_validator("state", mode="before")
    @classmethod
    def _any_state(cls, value: Any) -> Any:
        return value or None  # the form's "any" sends an empty state


_SORT_KEYS = {
    "job": lambda r: r["job"],
    "state": lambda r: (STATES.index(r["state"]), r["job"]),
    "lag": lambda r: (r["lag_ms"] is None, -(r["lag_ms"] or 0), r["job"]),
    "priority": lambda r: (-r["priority"], r["job"]),
    "drill": lambda r: (r["last_drill_at"] is not None, r["last_drill_at"] or datetime.min.replace(tzinfo=timezone.utc),
                        r["job"]),
}


@dataclass(frozen=True)
class FleetSelection:
    """The jobs one view of the page shows, in order, and what it says of the whole fleet."""

    names: list[str]  # the page's jobs, in the view's order
    states: dict[str, JobState]  # every job's state
    counts: dict[str, int]  # jobs per state, over the fleet
    matching: int  # jobs that pass the filter
    pages: int
    page: int  # the page shown: the one asked for, or the last one when it asked past the end


def select_page(fleet: list[dict[str, Any]], query: FleetQuery, now: datetime | None = None) -> FleetSelection:
    """The view's page of jobs, from ``HistoryStore.fleet_states`` rows: every job's state, filtered, sorted and cut
    to ``PAGE_SIZE`` (O(n log n) in the jobs)."""
    now = now or datetime.now(timezone.utc)
    states = states_of(fleet, now)
    rows = [{**r, "state": states[r["job"]]} for r in fleet]
    picked = [r for r in rows if (query.state is None or r["state"] == query.state) and query.q.lower() in r["job"].lower()]
    picked.sort(key=_SORT_KEYS[query.sort])
    pages = max(1, -(-len(picked) // PAGE_SIZE))
    page = min(query.page, pages)
    shown = picked[(page - 1) * PAGE_SIZE:page * PAGE_SIZE]
    return FleetSelection(names=[r["job"] for r in shown], states=states,
                          counts={s: sum(1 for r in rows if r["state"] == s) for s in STATES},
                          matching=len(picked), pages=pages, page=page)


HEAD = ("job", "state", "workload", "kind", "replica budget", "now", "primary", "current plan", "last drill", "next drill",
        "priority", "skipped by the scheduled drill", "waiting for a person")


def fleet_page(selection: FleetSelection, overview: list[dict[str, Any]], kinds: dict[str, str], query: FleetQuery,
               waiting: dict[str, list[dict]], view_url: str, now: datetime | None = None) -> str:
    """The filter form, then the state counts, the page's table (``overview``: ``HistoryStore.fleet_overview`` rows of
    the selection's jobs; ``waiting``: the open approval requests per job, each with its ``answer_path``) and the
    pager, which the open page redraws from ``view_url`` (``templates/fleet.html``)."""
    now = now or datetime.now(timezone.utc)
    by_name = {o["job"]: o for o in overview}
    rows = [(n, _cells({**by_name[n], "state": selection.states[n]}, kinds, now), waiting.get(n, []))
            for n in selection.names if n in by_name]  # not one deleted since
    first, matching = (selection.page - 1) * PAGE_SIZE, selection.matching
    shown = f"{first + 1:,}-{min(first + PAGE_SIZE, matching):,} of {matching:,}" if matching else "0 of 0"
    pages = [(label, {**query.model_dump(exclude_defaults=True), "page": page})
             for label, page in (("previous", selection.page - 1), ("next", selection.page + 1))
             if 1 <= page <= selection.pages]
    return render("fleet.html", total=len(selection.states), counts=list(selection.counts.items()), states=STATES,
                  sorts=SORTS, query=query, head=HEAD, rows=rows, shown=shown, pages=pages, view_url=view_url)


def _cells(o: dict[str, Any], kinds: dict[str, str], now: datetime) -> list[str]:
    """A job's row after its name."""
    return [o["state"], o["workload"], kinds[o["job"]], o["replication_budget"],
            f"{o['experiment']} by {o['holder']}" if o["experiment"] else "-", _primary(o, now), _plan(o),
            _last_drill(o), _next_drill(o, now), f"{o['priority']:g}", o["skipped"] or "-"]


def _primary(o: dict[str, Any], now: datetime) -> str:
    """Its primary's newest micro-batch: how long ago, and how far its output is behind its input (event time)."""
    if o["last_batch_at"] is None:
        return "no progress recorded"
    ago = (now - o["last_batch_at"]).total_seconds()
    lag = "" if o["lag_ms"] is None else f", {max(o['lag_ms'], 0) / 1000:.0f} s behind its input"
    return f"last batch {ago:.0f} s ago{lag}"


def _plan(o: dict[str, Any]) -> str:
    """Its current replication plan: OF, predicted tentative accuracy (once estimated) and replicated tasks."""
    if o["plan_of"] is None:
        return "-"
    accuracy = "" if o["plan_accuracy"] is None else f", accuracy {o['plan_accuracy']:.2f} predicted"
    return f"OF {o['plan_of']:.3f}{accuracy}, {o['plan_replicas']} replicated tasks"


def _last_drill(o: dict[str, Any]) -> str:
    """Its newest drill: verdict and when, and its measured tentative accuracy against the prediction it started with
    (the plan's predicted accuracy, else its OF)."""
    if not o["last_drill"]:
        return "never"
    said = f"{o['last_drill']}, {minute(o['last_drill_at'])}"
    if o["drill_accuracy"] is None:
        return said
    predicted = (f"{o['drill_predicted_accuracy']:.2f} predicted" if o["drill_predicted_accuracy"] is not None
                 else "-" if o["drill_predicted_of"] is None else f"OF {o['drill_predicted_of']:.2f}")
    return f"{said}; accuracy {o['drill_accuracy']:.2f} measured vs {predicted}"


def _next_drill(o: dict[str, Any], now: datetime) -> str:
    from ft_core.fleet.schedules import next_fire

    if not o["drill_schedule"]:
        return "by hand only"
    due = next_fire(o["drill_schedule"], o["drill_since"])
    return f"due ({o['drill_schedule']})" if due <= now else f"{minute(due)} ({o['drill_schedule']})"
