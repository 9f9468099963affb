"""Whether a drill on a private cluster can measure what it is for, checked before any slow work (issue 37).

Problem: a drill measures tentative accuracy over its *failure windows* (:mod:`spark_jobs.drills.local`): the
reference windows that end after the primary's last output before the failure and no later than the input's
watermark when the capacity is given back, ``new_capacity_after_s`` wall seconds after the fault. With
1-minute windows and the default 30-s outage none may end in it: the drill runs for minutes, measures nothing
(tentative accuracy null) and its verdict fails ("no failure window measured").

Algorithm: over those seconds the input gains ``span = speedup * new_capacity_after_s`` event seconds, in whole
files of ``file_s`` event seconds, and window ends are ``slide`` apart (the window's length when tumbling). So
whatever the moment of the fault, at least ``floor((span - file_s) / slide)`` window ends fall in it: the
windows the drill is *sure* to measure. More may (the primary's lag at the fault adds to the span, and where
the fault falls among the windows is chance), but a drill cannot count on them:

- no window sure: **refused** (exit 2 naming ``--new-capacity-after``): whether anything is measured is chance;
  the message gives the ``--new-capacity-after`` or the ``--speedup`` that makes two windows sure;
- one window sure: **warned** (stderr and the report's ``design_warnings``): the measured accuracy is one
  window's, too few to set against the prediction's spread;
- the window unknown (the pipeline declares no ``Output(window_s=...)`` and has no ``window_s`` parameter):
  warned that the outage could not be checked.

The master's detection of the failed domain does not lengthen the span: the replacement joins at
``new_capacity_after_s`` whatever the master knows. O(1).

    >>> sure_windows(span_s=30.0, file_s=1.0, slide_s=60.0), sure_windows(span_s=30.0, file_s=1.0, slide_s=10.0)
    (0, 2)
"""

from __future__ import annotations

import math

from pydantic import BaseModel

from ft_core.errors import InputError
from spark_jobs.pipeline.definition import Workload

SURE_ENOUGH = 2  # windows a drill must be sure of not to be warned (and what a refusal's advice aims at)


class DrillDesign(BaseModel):
    """What a drill's outage holds (event seconds) against its pipeline's windows; ``warnings`` to show."""

    window_s: float | None
    slide_s: float | None
    span_s: float
    sure_windows: int | None
    warnings: list[str]


def sure_windows(span_s: float, file_s: float, slide_s: float) -> int:
    """Window ends certain to fall in ``span_s`` event seconds the input gains in files of ``file_s``."""
    return max(0, math.floor((span_s - file_s) / slide_s + 1e-9))


def check_design(workload: Workload, new_capacity_after_s: float, speedup: float) -> DrillDesign:
    """The drill's design against the pipeline's windows (see the module docstring); InputError when no
    failure window is sure."""
    span = speedup * new_capacity_after_s
    windowing = workload.windowing()
    if windowing is None:
        return DrillDesign(window_s=None, slide_s=None, span_s=span, sure_windows=None, warnings=[
            f"the outage could not be checked against {workload.name}'s windows: the pipeline declares no window "
            "length (Output(window_s=...) or a window_s parameter); if no window ends within --new-capacity-after "
            f"({new_capacity_after_s:g} s) x --speedup ({speedup:g}) = {span:g} event seconds, the drill measures nothing"])
    window, slide = windowing
    file_s = workload.file_s
    sure = sure_windows(span, file_s, slide)
    windows = f"{_s(window)} windows" + ("" if slide == window else f" sliding every {_s(slide)}")
    held = (f"the outage holds {span:g} event seconds (--new-capacity-after {new_capacity_after_s:g} s x --speedup "
            f"{speedup:g}, the input written in {_s(file_s)} files) against {workload.name}'s {windows}")
    if sure == 0:
        raise InputError(f"--new-capacity-after {new_capacity_after_s:g}: {held}: no window is sure to end while the "
                         "primary is down, so the drill may measure nothing (tentative accuracy null) and fail its "
                         f"verdict; {_advice(new_capacity_after_s, speedup, file_s, slide)}", field="--new-capacity-after")
    warnings = []
    if sure < SURE_ENOUGH:
        warnings.append(f"{held}: only {sure} failure window is sure, so the measured accuracy may be one window's; "
                        f"{_advice(new_capacity_after_s, speedup, file_s, slide)}")
    return DrillDesign(window_s=window, slide_s=slide, span_s=span, sure_windows=sure, warnings=warnings)


def span_needed_s(slide_s: float, file_s: float) -> float:
    """The event seconds an outage must hold for :data:`SURE_ENOUGH` windows to be sure (:func:`sure_windows`)."""
    return SURE_ENOUGH * slide_s + file_s


def _advice(new_capacity_after_s: float, speedup: float, file_s: float, slide_s: float) -> str:
    """The flags that make :data:`SURE_ENOUGH` windows sure."""
    need = span_needed_s(slide_s, file_s)
    options = [f"--new-capacity-after {math.ceil(need / speedup - 1e-9)}"]
    if new_capacity_after_s > 0:
        options.append(f"--speedup {math.ceil(10 * need / new_capacity_after_s - 1e-9) / 10:g} (the input rate "
                       "grows with it)")
    return f"for {SURE_ENOUGH} windows use {' or '.join(options)}"


def _s(seconds: float) -> str:
    return f"{seconds:g}-s"
