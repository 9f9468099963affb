"""The accuracy of tentative outputs, per event-time window: how good the replica's answers were while
the primary was down, against the failure-free (reference) answers. Paper 000, Section VI, measures
exactly this for its queries; these are its functions, made general:

- :class:`SetOverlap` (the default): per window, ``|T ∩ A| / |A|`` over the sets of values of some
  columns (a list column contributes its elements): the incidents of paper 000's Q2, alerts, ids;
- :class:`TopKOverlap`: the same over the items of a ranked top-k (Q1's pages);
- :class:`RelativeError`: per window, ``1 - mean |t - a| / |a|`` of an aggregate per key (a missing
  key counts as error 1), clipped to [0, 1]: counts, sums, averages.

``A`` comes from the accurate rows, ``T`` from the tentative ones; a window the tentative rows lack
scores 0; windows whose accurate answer is empty have no defined accuracy and are skipped. Rows carry
``window_start`` and ``window_end`` (epoch ms). A pipeline may pass any callable with the signature of
:meth:`Accuracy.__call__`. Complexity: O(rows).

    >>> acc = [{"window_start": 0, "window_end": 10, "rank": 1, "page": 7, "count": 5},
    ...        {"window_start": 0, "window_end": 10, "rank": 2, "page": 3, "count": 4}]
    >>> TopKOverlap("page")(acc[:1], acc)
    {(0, 10): 0.5}
    >>> RelativeError(key=("page",), value="count")([dict(acc[0], count=4)], acc)
    {(0, 10): 0.4}
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from ft_core.errors import InputError

Window = tuple[int, int]
Row = dict[str, Any]


def window_of(row: Row) -> Window:
    return int(row["window_start"]), int(row["window_end"])


class Accuracy(Protocol):
    def __call__(self, tentative: list[Row], accurate: list[Row], windows: list[Window] | None = None) -> dict[Window, float]:
        """Accuracy per window (all accurate windows, or the given ``windows`` among them), in window order."""


def _chosen(truth: dict[Window, Any], windows: list[Window] | None) -> list[Window]:
    return sorted(truth) if windows is None else sorted(w for w in windows if w in truth)


def _values(row: Row, columns: Sequence[str]) -> list[Any]:
    if len(columns) == 1:
        value = row[columns[0]]
        return [_hashable(v) for v in value] if isinstance(value, list) else [_hashable(value)]
    return [tuple(_hashable(row[c]) for c in columns)]


def _hashable(value: Any) -> Any:
    if isinstance(value, dict):
        return tuple(sorted((k, _hashable(v)) for k, v in value.items()))
    if isinstance(value, list):
        return tuple(_hashable(v) for v in value)
    return value


def column_names(value: str | Sequence[str], what: str) -> tuple[str, ...]:
    """One column's name or a sequence of names, as a tuple (a lone string is one column, not its letters: a new
    user's ``RelativeError(key="category", ...)`` crashed a drill with ``KeyError: 'c'``); InputError naming ``what``
    for anything else.

    >>> column_names("category", "key"), column_names(["a", "b"], "key")
    (('category',), ('a', 'b'))
    """
    names = (value,) if isinstance(value, str) else value
    if not isinstance(names, Sequence) or not all(isinstance(n, str) and n for n in names):
        raise InputError(f"{what}: {value!r} is not a column name or a list of column names", field=what)
    return tuple(names)


@dataclass(frozen=True)
class SetOverlap:
    """``|T ∩ A| / |A|`` per window over the values of ``columns`` (default: the whole row)."""

    columns: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        object.__setattr__(self, "columns", column_names(self.columns, "SetOverlap(columns)"))

    def sets(self, rows: list[Row]) -> dict[Window, set]:
        out: dict[Window, set] = defaultdict(set)
        for row in rows:
            cols = self.columns or tuple(sorted(k for k in row if k not in ("window_start", "window_end")))
            out[window_of(row)].update(_values(row, cols))
        return dict(out)

    def __call__(self, tentative: list[Row], accurate: list[Row], windows: list[Window] | None = None) -> dict[Window, float]:
        truth, guess = self.sets(accurate), self.sets(tentative)
        return {w: len(guess.get(w, set()) & truth[w]) / len(truth[w]) for w in _chosen(truth, windows) if truth[w]}


@dataclass(frozen=True)
class TopKOverlap:
    """Overlap of the items of a top-k per window: rows ranked by ``rank``, the first ``k`` kept (all
    when ``k`` is None)."""

    item: str
    rank: str = "rank"
    k: int | None = None

    def _top(self, rows: list[Row]) -> dict[Window, set]:
        out: dict[Window, set] = defaultdict(set)
        for row in rows:
            if self.k is None or row[self.rank] <= self.k:
                out[window_of(row)].add(_hashable(row[self.item]))
        return dict(out)

    def __call__(self, tentative: list[Row], accurate: list[Row], windows: list[Window] | None = None) -> dict[Window, float]:
        truth, guess = self._top(accurate), self._top(tentative)
        return {w: len(guess.get(w, set()) & truth[w]) / len(truth[w]) for w in _chosen(truth, windows) if truth[w]}


@dataclass(frozen=True)
class RelativeError:
    """``1 - mean_k min(1, |t_k - a_k| / |a_k|)`` per window over the keys ``key`` of the accurate rows;
    a key the tentative rows lack has error 1; an accurate value of 0 counts as exact only if t is 0."""

    key: tuple[str, ...]
    value: str

    def __post_init__(self) -> None:
        object.__setattr__(self, "key", column_names(self.key, "RelativeError(key)"))
        if not isinstance(self.value, str) or not self.value:
            raise InputError(f"RelativeError(value): {self.value!r} is not one column name", field="RelativeError(value)")

    def _values(self, rows: list[Row]) -> dict[Window, dict[tuple, float]]:
        out: dict[Window, dict[tuple, float]] = defaultdict(dict)
        for row in rows:
            out[window_of(row)][tuple(_hashable(row[k]) for k in self.key)] = float(row[self.value])
        return dict(out)

    def __call__(self, tentative: list[Row], accurate: list[Row], windows: list[Window] | None = None) -> dict[Window, float]:
        truth, guess = self._values(accurate), self._values(tentative)
        out = {}
        for w in _chosen(truth, windows):
            if not truth[w]:
                continue
            errors = []
            for k, a in truth[w].items():
                t = guess.get(w, {}).get(k)
                if t is None:
                    errors.append(1.0)
                elif a == 0:
                    errors.append(0.0 if t == 0 else 1.0)
                else:
                    errors.append(min(1.0, abs(t - a) / abs(a)))
            out[w] = max(0.0, 1.0 - sum(errors) / len(errors))
        return out
