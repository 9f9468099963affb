"""The safety net on the Fault tolerance pages: the halt while it is in force, and a job's fault journal (every
fault ftops injected into it, when, by whom, and how and by whom it was undone; an open one stands out).

    >>> halt_banner(None)
    ''
"""

from __future__ import annotations

from html import escape
from typing import Any


def halt_banner(halt: dict[str, Any] | None) -> str:
    """A banner while experiments are halted (``ftops halt``), empty otherwise."""
    if halt is None:
        return ""
    return (f"<p id='halted' class='bad'><b>Experiments are halted</b> since "
            f"{halt['halted_at']:%Y-%m-%d %H:%M:%S %Z} by {escape(halt['halted_by'])}: {escape(halt['reason'])}. "
            "Running drills abort and undo their faults; no drill starts until it is resumed "
            "(<code>ftops resume</code>, or Resume below).</p>")


def halt_form(halt: dict[str, Any] | None) -> str:
    """The Halt button (with its reason) or, while halted, the Resume button. Posting needs permission to change
    DAG runs; the server refuses others (403)."""
    if halt is not None:
        return ("<form id='resume-form' method='post' action='resume'><button id='resume' type='submit'>Resume "
                "experiments</button></form>")
    return ("<form id='halt-form' method='post' action='halt'><h2>Halt</h2><p class='caption'>Aborts every running "
            "drill of the fleet (each undoes its faults) and refuses new ones until resumed, as <code>ftops halt</code>."
            "</p><input id='halt-reason' name='reason' required maxlength='500' placeholder='why (shown to everyone)' "
            "size='50'> <button id='halt' type='submit'>Halt all experiments</button></form>")


def faults_section(faults: list[dict[str, Any]]) -> str:
    """The job's newest faults, newest first."""
    if not faults:
        return "<h2 id='faults'>Fault journal</h2><p>No fault injected yet.</p>"
    rows = "".join(
        f"<tr class='{'bad' if f['closed_at'] is None else ''}'><td>#{f['fault_id']}</td>"
        f"<td>{f['opened_at']:%Y-%m-%d %H:%M:%S}</td><td>{escape(f['kind'])}</td><td>{escape(f['target'])}</td>"
        f"<td>{escape(f['experiment_kind'])} #{f['experiment_id'] or '-'}</td><td>{escape(f['holder'])}</td>"
        f"<td>{'OPEN (undo by ' + format(f['undo_by'], '%H:%M:%S') + ')' if f['closed_at'] is None else format(f['closed_at'], '%Y-%m-%d %H:%M:%S')}</td>"
        f"<td>{escape(f['closed_by'] or '-')}</td><td>{escape(f['outcome'] or '-')}</td></tr>" for f in faults)
    return ("<h2 id='faults'>Fault journal</h2><p class='caption'>Every fault ftops injected into the job, written before "
            "it was applied; an open one whose holder died is undone by the safety net (ftops_safety_net).</p>"
            "<table><tr><th>fault</th><th>opened</th><th>kind</th><th>target</th><th>experiment</th><th>by</th>"
            f"<th>closed</th><th>undone by</th><th>how</th></tr>{rows}</table>")
