"""The accuracy of tentative outputs, per window: paper 000's accuracy functions (Section VI).

Problem: a drill must say how good the replica's *tentative* outputs were while the primary was
down, in the paper's terms, so that the number can be set against the planner's predicted output
fidelity (Fig. 12). Per event-time window ``w`` (rows keyed by ``(window_start, window_end)``):

- ``topk`` (Q1): ``|S_T ∩ S_A| / |S_A|`` with ``S`` the set of pages in the window's top-k;
- ``incidents`` (Q2): ``|I_T ∩ I_A| / |I_A|`` with ``I`` the set of jam incidents of the window.

``S_A`` / ``I_A`` come from the accurate (reference) rows, ``S_T`` / ``I_T`` from the tentative
ones; a window the tentative sink lacks scores 0. Windows without accurate results (``|S_A| = 0``,
e.g. no jam at all) have no defined accuracy and are skipped. Complexity: O(rows).

Example::

    >>> acc = [{"window_start": 0, "window_end": 10, "rank": 1, "page": 7, "count": 5},
    ...        {"window_start": 0, "window_end": 10, "rank": 2, "page": 3, "count": 4}]
    >>> window_accuracy("topk", acc[:1], acc)
    {(0, 10): 0.5}
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

Window = tuple[int, int]


def window_of(row: dict[str, Any]) -> Window:
    return int(row["window_start"]), int(row["window_end"])


def result_sets(workload: str, rows: list[dict[str, Any]]) -> dict[Window, set[int]]:
    """Per window, the set the accuracy function compares (top-k pages, or jam incidents)."""
    sets: dict[Window, set[int]] = defaultdict(set)
    for row in rows:
        if workload == "topk":
            sets[window_of(row)].add(int(row["page"]))
        elif workload == "incidents":
            sets[window_of(row)].update(int(i) for i in row["incidents"])
        else:
            raise ValueError(f"workload {workload!r} has no accuracy function")
    return dict(sets)


def window_accuracy(workload: str, tentative: list[dict[str, Any]], accurate: list[dict[str, Any]],
                    windows: list[Window] | None = None) -> dict[Window, float]:
    """Accuracy of ``tentative`` against ``accurate`` per window (all accurate windows, or the
    given ``windows`` among them), in window order."""
    truth = result_sets(workload, accurate)
    guess = result_sets(workload, tentative)
    chosen = sorted(truth) if windows is None else sorted(w for w in windows if w in truth)
    return {w: len(guess.get(w, set()) & truth[w]) / len(truth[w]) for w in chosen if truth[w]}
