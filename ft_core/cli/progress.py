r"""Progress of long commands (drills, benchmarks, the demo): step k of n and an estimate of the time
left, on stderr, so stdout stays the command's result (a table, or JSON untouched).

On a terminal a live line (rich) shows the current step with elapsed and remaining time, and news
lines scroll above it; elsewhere (CI logs, pipes) every line is plain text:
``[drill 12:03:04 3/9 41s ~1m left] waiting for steady operation``.

- :meth:`Progress.step` starts the next step (k/n and the estimate move on);
- :meth:`Progress.skip` counts a step done elsewhere (e.g. kept from an interrupted run): k/n moves on,
  the estimate leaves it out;
- calling the object (``progress("...")``) reports news within the current step, so any function
  that takes a plain ``Callable[[str], None]`` callback can be handed a :class:`Progress`.

The estimate is linear: the mean time of the steps done so far (skipped ones left out) times the steps left.

    >>> import io, re
    >>> out = io.StringIO()
    >>> with Progress("demo", total=2, stream=out, clock=iter([0.0, 0.0, 10.0, 20.0, 20.0]).__next__) as p:
    ...     p.step("first")
    ...     p.step("second")
    >>> print(re.sub(r"\d\d:\d\d:\d\d", "HH:MM:SS", out.getvalue()), end="")
    [demo HH:MM:SS 1/2 0s] first
    [demo HH:MM:SS 2/2 10s ~10s left] second
    [demo HH:MM:SS 2/2 20s] done in 20s
    >>> out = io.StringIO()
    >>> with Progress("demo", total=3, stream=out, clock=iter([0.0, 0.0, 0.0, 30.0, 40.0, 40.0]).__next__) as p:
    ...     p.skip("kept")
    ...     p.step("second")
    ...     p.step("third")
    >>> print(re.sub(r"\d\d:\d\d:\d\d", "HH:MM:SS", out.getvalue()), end="")
    [demo HH:MM:SS 1/3 0s] kept
    [demo HH:MM:SS 2/3 0s] second
    [demo HH:MM:SS 3/3 30s ~30s left] third
    [demo HH:MM:SS 3/3 40s] done in 40s
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, TextIO

if TYPE_CHECKING:
    from rich.progress import Progress as RichProgress


class Progress:
    """Report a long command's steps on ``stream`` (stderr by default); a no-op when ``quiet``. Use it as
    a context manager (or call :meth:`close`) once steps are reported, to end the live line."""

    def __init__(self, label: str, total: int | None = None, *, stream: TextIO | None = None, quiet: bool = False,
                 clock: Callable[[], float] = time.monotonic):
        self.label, self.total, self.quiet, self._clock = label, total, quiet, clock
        self.stream = stream if stream is not None else sys.stderr
        self.done = 0
        self._skipped = 0
        self._start = clock()
        self._live: RichProgress | None = None  # the live line, from the first step on a terminal
        self._task = None

    @classmethod
    def silent(cls) -> Progress:
        """A reporter that says nothing (library defaults, tests)."""
        return cls("", quiet=True)

    def set_total(self, total: int) -> None:
        """The number of steps, once it is known (e.g. after planning the work)."""
        self.total = total
        if self._live is not None:
            self._live.update(self._task, total=total)

    def step(self, message: str) -> None:
        """Begin the next step, described by ``message``."""
        self._advance(message, with_estimate=True)

    def skip(self, message: str) -> None:
        """Count a step that needs no work here (done by an earlier invocation); the estimate ignores it."""
        self._skipped += 1
        self._advance(message, with_estimate=False)

    def _advance(self, message: str, *, with_estimate: bool) -> None:
        self.done += 1
        if self._live is None and not self.quiet and self.stream.isatty():
            self._live = _live_line(self.label, self.stream)
            self._live.start()
            self._task = self._live.add_task("", total=self.total)
        if self._live is not None:
            self._live.update(self._task, completed=self.done - 1, description=message)
        self._say(message, with_estimate=with_estimate)

    def __call__(self, message: str) -> None:
        """News within the current step."""
        self._say(message, with_estimate=False)

    def close(self, message: str | None = None) -> None:
        if self._live is not None:
            self._live.update(self._task, completed=self.done)
            self._live.stop()
            self._live = None
        self._say(message or f"done in {_duration(self._clock() - self._start)}", with_estimate=False)

    def __enter__(self) -> Progress:
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        self.close(None if exc_type is None else f"stopped: {exc_type.__name__}")

    def _say(self, message: str, *, with_estimate: bool) -> None:
        if self.quiet:
            return
        elapsed = self._clock() - self._start
        where = f" {self.done}/{self.total}" if self.total else (f" {self.done}" if self.done else "")
        left = ""
        timed = self.done - 1 - self._skipped  # steps finished here, each with its own time
        if with_estimate and self.total and timed > 0 and self.done <= self.total:
            left = f" ~{_duration(elapsed / timed * (self.total - self.done + 1))} left"
        line = f"[{self.label} {time.strftime('%H:%M:%S')}{where} {_duration(elapsed)}{left}] {message}"
        if self._live is not None:
            self._live.console.print(line, markup=False, highlight=False)
        else:
            print(line, file=self.stream, flush=True)


def _duration(seconds: float) -> str:
    """``41s``, ``3m05s``, ``1h02m``."""
    s = int(round(seconds))
    if s < 60:
        return f"{s}s"
    if s < 3600:
        return f"{s // 60}m{s % 60:02d}s"
    return f"{s // 3600}h{s % 3600 // 60:02d}m"


def _live_line(label: str, stream: TextIO) -> RichProgress:
    """rich's live progress line (imported here: a command that never shows one does not load rich)."""
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, TextColumn, TimeElapsedColumn, TimeRemainingColumn
    from rich.progress import Progress as RichProgress

    return RichProgress(TextColumn(f"{label} {{task.description}}", markup=False), BarColumn(), MofNCompleteColumn(),
                        TimeElapsedColumn(), TimeRemainingColumn(), console=Console(file=stream), transient=True)
