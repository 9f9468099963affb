"""Waiting for real state with a deadline (tenacity): a worker registered, an application running,
a process gone. Every wait in ftops polls the system itself, never sleeps a guessed time.

- :func:`wait_for` polls a probe until it returns a value (not None, not False) and returns it; at the
  deadline it raises an error naming what was awaited. An exception from the probe (the driver
  exited, the master is gone) ends the wait at once.
- :func:`wait_while` polls a condition until it is false or the deadline passes (grace periods
  before a SIGKILL), and says which.

    >>> import itertools
    >>> counter = itertools.count()
    >>> wait_for(lambda: next(counter) >= 2 or None, timeout_s=5, interval_s=0.01, what="the third poll")
    True
    >>> wait_while(lambda: True, timeout_s=0.05, interval_s=0.01)
    False
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

from tenacity import RetryError, Retrying, retry_if_result, stop_after_delay, wait_fixed

from ft_core.errors import ExternalError, FtopsError

T = TypeVar("T")


def _pending(value: object) -> bool:
    return value is None or value is False


def wait_for(probe: Callable[[], T | None], *, timeout_s: float, what: str | Callable[[], str],
             interval_s: float = 0.5, error: type[FtopsError] = ExternalError,
             sleep: Callable[[float], None] = time.sleep) -> T:
    """Poll ``probe`` every ``interval_s`` until it returns a value; ``error`` (naming ``what``, which may
    be a function giving the last state seen) when ``timeout_s`` passes first. ``sleep`` may raise to
    abandon the wait between polls (another part of the run failed)."""
    retrying = Retrying(stop=stop_after_delay(timeout_s), wait=wait_fixed(interval_s),
                        retry=retry_if_result(_pending), reraise=True, sleep=sleep)
    try:
        return retrying(probe)
    except RetryError:
        described = what() if callable(what) else what
        raise error(f"timed out after {timeout_s:.0f} s waiting for {described}") from None


def wait_while(busy: Callable[[], bool], *, timeout_s: float, interval_s: float = 0.2) -> bool:
    """Poll ``busy`` until it is false (True) or ``timeout_s`` passes (False)."""
    retrying = Retrying(stop=stop_after_delay(timeout_s), wait=wait_fixed(interval_s),
                        retry=retry_if_result(bool), reraise=True)
    try:
        retrying(busy)
    except RetryError:
        return False
    return True
