"""The experiment report page of a drill or recovery run (:class:`ft_core.store.experiments.ExperimentReport`):
verdict and reasons, the steady-state hypothesis before and after, the abort probes, the timeline (seconds
from the first moment), what an abort restored, and the measurements."""

from __future__ import annotations

from datetime import datetime, timezone
from html import escape
from typing import Any

from ft_core.store.experiments import ExperimentReport

_HELD = {True: "<span class='ok'>held</span>", False: "<span class='bad'>did not hold</span>", None: "not checked"}
_VERDICT = {"passed": "ok", "failed": "bad", "aborted": "bad"}


def experiment_section(report: ExperimentReport) -> str:
    parts = [f"<p id='verdict'>Verdict: <strong class='{_VERDICT.get(report.verdict, '')}'>{escape(report.verdict)}"
             f"</strong>{''.join(f'<br>{escape(r)}' for r in report.reasons)}</p>"]
    if report.dag_run_id:
        parts.append(f"<p class='caption'>DAG run {escape(report.dag_run_id)}</p>")
    parts.append(_checks("Steady state before", "hypothesis-before", report.hypothesis_before))
    parts.append(_probes(report))
    parts.append(_timeline(report))
    parts.append(_checks("Steady state after", "hypothesis-after", report.hypothesis_after))
    if report.restored:
        parts.append("<h2>Undone at the end</h2><ul id='restored'>"
                     + "".join(f"<li>{escape(r)}</li>" for r in report.restored) + "</ul>")
    if report.measurements:
        parts.append("<h2>Measurements</h2><table id='measurements'>"
                     + "".join(f"<tr><th>{escape(k)}</th><td>{escape(_value(v))}</td></tr>"
                               for k, v in report.measurements.items()) + "</table>")
    return "".join(parts)


def _checks(title: str, css_id: str, checks) -> str:
    rows = "".join(f"<tr><td>{escape(c.name)}</td><td>{escape(c.expected)}</td><td>{escape(c.observed or '-')}</td>"
                   f"<td>{_HELD[c.held]}</td></tr>" for c in checks)
    return (f"<h2>{escape(title)}</h2><table id='{css_id}'><tr><th>check</th><th>expected</th><th>observed</th>"
            f"<th>result</th></tr>{rows}</table>")


def _probes(report: ExperimentReport) -> str:
    rows = "".join(f"<tr><td>{escape(p.name.replace('_', ' '))}</td><td>{escape(p.bound)}</td><td>"
                   f"{'<span class=bad>fired</span>: ' + escape(p.reason or '') if p.fired else 'did not fire'}</td></tr>"
                   for p in report.probes)
    return f"<h2>Abort probes</h2><table id='probes'><tr><th>probe</th><th>bound</th><th>during the experiment</th></tr>{rows}</table>"


def _timeline(report: ExperimentReport) -> str:
    if not report.timeline:
        return ""
    t0 = report.timeline[0].at
    rows = "".join(f"<tr><td>{datetime.fromtimestamp(e.at, tz=timezone.utc):%H:%M:%S} UTC</td><td>+{e.at - t0:.1f} s</td>"
                   f"<td>{escape(e.event)}</td></tr>" for e in report.timeline)
    return f"<h2>Timeline</h2><table id='timeline'><tr><th>time</th><th>since start</th><th>event</th></tr>{rows}</table>"


def _value(v: Any) -> str:
    if isinstance(v, float):
        return f"{v:.4f}"
    return "-" if v is None else str(v)
