"""Plots next to benchmark tables: matplotlib without a display, saved as SVG beside the Markdown.

Every ``ftops bench`` writes its table to ``docs/benchmarks/<name>.md`` and its pictures beside it as
``<name>-<what>.svg``, linked from the table. SVG keeps the files small and diffable; the output is
deterministic (no creation date, a fixed hash salt), so rerunning a benchmark on the same numbers
changes nothing in git.

    >>> import tempfile, pathlib
    >>> table = pathlib.Path(tempfile.mkdtemp()) / "demo.md"
    >>> fig, ax = new_figure("OF by budget", "budget", "OF")
    >>> _ = ax.plot([1, 2, 3], [0.2, 0.5, 0.9], marker="o")
    >>> save_next_to(fig, table, "of").name
    'demo-of.svg'
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # no display on servers and in CI

import matplotlib.pyplot as plt  # noqa: E402 - after choosing the backend
from matplotlib.axes import Axes  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402

matplotlib.rcParams["svg.hashsalt"] = "ftops"  # stable element ids: same numbers, same file


def new_figure(title: str, xlabel: str, ylabel: str, *, size: tuple[float, float] = (6.0, 4.0)) -> tuple[Figure, Axes]:
    """One axes with a title, axis labels and a light grid."""
    fig, ax = plt.subplots(figsize=size)
    ax.set_title(title)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.grid(True, alpha=0.3)
    return fig, ax


def save_next_to(fig: Figure, table: Path, what: str) -> Path:
    """Save ``fig`` as ``<table stem>-<what>.svg`` in the table's folder; returns the path."""
    path = Path(table).with_name(f"{Path(table).stem}-{what}.svg")
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.tight_layout()
    fig.savefig(path, format="svg", metadata={"Date": None})
    plt.close(fig)
    return path


def predicted_vs_measured(ax: Axes, predicted: Sequence[float], measured: Sequence[float],
                          labels: Sequence[str] | None = None) -> None:
    """A scatter of measured against predicted values with the y = x line: points on the line are
    predictions that held; ``labels`` (one per point) name the series in the legend."""
    lo = min([*predicted, *measured, 0.0])
    hi = max([*predicted, *measured, 1e-9])
    pad = 0.05 * (hi - lo or 1.0)
    ax.plot([lo - pad, hi + pad], [lo - pad, hi + pad], color="grey", linestyle="--", linewidth=1, label="predicted = measured")
    if labels is None:
        ax.scatter(predicted, measured, zorder=3)
    else:
        for label in dict.fromkeys(labels):
            xs = [p for p, lab in zip(predicted, labels) if lab == label]
            ys = [m for m, lab in zip(measured, labels) if lab == label]
            ax.scatter(xs, ys, label=label, zorder=3)
    ax.set_xlim(lo - pad, hi + pad)
    ax.set_ylim(lo - pad, hi + pad)
    ax.legend(loc="best", fontsize="small")


def grouped_bars(ax: Axes, groups: Sequence[str], series: dict[str, Sequence[float | None]]) -> None:
    """Bars of every series side by side over each group (the x tick labels); a ``None`` value leaves
    its bar out (a query that never came back, a scenario that failed), so a gap is never drawn as 0."""
    width = 0.8 / max(1, len(series))
    for k, (label, values) in enumerate(series.items()):
        offset = (k - (len(series) - 1) / 2) * width
        points = [(i + offset, v) for i, v in enumerate(values) if v is not None]
        ax.bar([x for x, _ in points], [v for _, v in points], width, label=label)
    long = max(map(len, groups), default=0) > 8  # long names slant so that neighbours do not overlap
    ax.set_xticks(range(len(groups)), groups, rotation=20 if long else 0, ha="right" if long else "center")
    ax.legend(loc="best", fontsize="small")


def markdown_image(path: Path, alt: str) -> str:
    """The Markdown that shows ``path`` in a table written to the same folder."""
    return f"![{alt}]({Path(path).name})"
