"""The safety net on the Fault tolerance pages: the halt while it is in force (``templates/halt.html``), and a job's
fault journal (``templates/faults.html``: every fault ftops injected into it, when, by whom, and how and by whom it
was undone; an open one stands out).

    >>> str(halt_banner(None)).strip()
    ''
"""

from __future__ import annotations

from typing import Any

from ftops_provider.ui.templates import macro, render


def halt_banner(halt: dict[str, Any] | None) -> str:
    """A banner while experiments are halted (``ftops halt``), empty otherwise."""
    return macro("halt.html", "banner")(halt)


def halt_form(halt: dict[str, Any] | None, root: str) -> str:
    """The Halt button (with its reason) or, while halted, the Resume button, posting to the app at ``root``."""
    return macro("halt.html", "form")(halt, root)


def faults_section(faults: list[dict[str, Any]]) -> str:
    """The job's newest faults, newest first."""
    return render("faults.html", faults=faults)
