"""Experiment reports: what a drill or a recovery run set out to show, what guarded it and how it ended.

Problem: a drill's measurements (accuracy, times, lost windows) say *what* happened, not whether the
experiment was sound. Chaos tools (Chaos Toolkit's journal, Litmus's ChaosResult) pair them with the
steady-state hypothesis checked before and after, the abort probes watched during, a timeline and a
verdict; an operator reads that first. :class:`ExperimentReport` is that document: written once, when
the experiment ends (passed, failed or aborted), kept beside the drill or recovery run it reports on,
shown as a page of the Fault tolerance view and served as JSON.

    >>> r = ExperimentReport(kind="drill", job="alerts", experiment_id=3, verdict="aborted",
    ...                      reasons=["the drill ran 700 s, longer than its bound of 600 s"])
    >>> r.title
    'drill #3 of alerts: aborted'
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field

from ft_core.errors import InputError
from ft_core.store.base import StoreBase
from ft_core.store.records import jsonb

ExperimentKind = Literal["drill", "recovery"]
_TABLES = {"drill": ("ftops_drill", "drill_id"), "recovery": ("ftops_recovery_run", "run_id")}


class Check(BaseModel):
    """One steady-state check: what had to hold, what was seen."""

    name: str
    expected: str
    observed: str | None = None
    held: bool | None = None  # None: not checked (the experiment ended before it)


class Probe(BaseModel):
    """One abort probe: its bound and whether it fired."""

    name: str
    bound: str
    fired: bool = False
    reason: str | None = None


class Event(BaseModel):
    """A moment of the experiment (epoch seconds)."""

    at: float
    event: str


class ExperimentReport(BaseModel):
    """The report of one experiment (see the module's docstring)."""

    kind: ExperimentKind
    job: str
    experiment_id: int
    dag_run_id: str | None = None
    verdict: Literal["passed", "failed", "aborted"]
    reasons: list[str] = Field(default_factory=list)
    hypothesis_before: list[Check] = Field(default_factory=list)
    hypothesis_after: list[Check] = Field(default_factory=list)
    probes: list[Probe] = Field(default_factory=list)
    timeline: list[Event] = Field(default_factory=list)
    measurements: dict[str, Any] = Field(default_factory=dict)
    restored: list[str] = Field(default_factory=list)  # what an aborted experiment put back

    @property
    def title(self) -> str:
        return f"{self.kind} #{self.experiment_id} of {self.job}: {self.verdict}"


class ExperimentRecords(StoreBase):
    """Write and read experiment reports (one per drill or recovery run; writing again replaces it)."""

    def save_experiment(self, report: ExperimentReport) -> None:
        table, key = _TABLES[report.kind]
        with self.conn, self.conn.cursor() as cur:
            cur.execute(f"UPDATE {table} SET experiment = %s WHERE {key} = %s", (jsonb(report.model_dump()),
                                                                               report.experiment_id))
            if cur.rowcount == 0:
                raise InputError(f"{report.kind} {report.experiment_id} does not exist")

    def experiment(self, kind: ExperimentKind, experiment_id: int) -> ExperimentReport | None:
        """The report of a drill or recovery run (None while it runs); InputError when there is no such one."""
        if kind not in _TABLES:
            raise InputError(f"experiment kind {kind!r}: expected 'drill' or 'recovery'")
        table, key = _TABLES[kind]
        with self.conn, self.conn.cursor() as cur:
            cur.execute(f"SELECT experiment FROM {table} WHERE {key} = %s", (experiment_id,))
            row = cur.fetchone()
        if row is None:
            raise InputError(f"{kind} {experiment_id} does not exist")
        return None if row[0] is None else ExperimentReport.model_validate(row[0])


def timeline(moments: dict[str, float | None]) -> list[Event]:
    """Events in time order from ``{event: epoch seconds}`` (moments that did not happen are left out)."""
    return [Event(at=at, event=name) for name, at in sorted(((n, a) for n, a in moments.items() if a is not None),
                                                            key=lambda item: item[1])]
