"""Small server-side SVG charts (no JavaScript build step): series of fractions, values over the last hour, a layered
topology, and a Gantt-like timeline of recovery stages.

Every chart is a standalone ``<svg>`` whose marks carry a ``class`` naming their series or kind, so tests (and users'
stylesheets) can find them; the fraction, topology and stage charts give each mark a ``<title>`` (the browser shows it
on hover), the timeline of values (a point per minute) does not.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from html import escape

# Series colours, chosen to stay apart for colour-blind readers (blue/orange) and reused by the page's legend.
BLUE = "#1f6feb"
ORANGE = "#d4760a"
GREEN = "#2da44e"
RED = "#cf222e"
GREY = "#c8d1dc"
PURPLE = "#8250df"


@dataclass
class Series:
    """One line of a chart: values in [0, 1] per x label (None: no value there, the line breaks)."""

    name: str
    key: str  # CSS class of its marks
    color: str
    values: list[float | None]
    dashed: bool = False


def line_chart(points: list[tuple[str, float]], *, title: str, y_label: str, width: int = 640, height: int = 220) -> str:
    """A line chart of ``(label, value)`` points in order, values in [0, 1] (fidelity, accuracy)."""
    return series_chart([label for label, _ in points], [Series(y_label, "plan", BLUE, [v for _, v in points])],
                        title=title, y_label=y_label, width=width, height=height, legend=False)


def series_chart(labels: list[str], series: list[Series], *, title: str, y_label: str, width: int = 640,
                 height: int = 240, legend: bool = True) -> str:
    """Several series of fractions over the same x labels (e.g. predicted OF and measured accuracy per drill)."""
    pad_l, pad_r, pad_t, pad_b = 48, 16, 28 + (18 if legend else 0), 36
    inner_w, inner_h = width - pad_l - pad_r, height - pad_t - pad_b
    parts = [_open(width, height, title), f'<text x="{pad_l}" y="18" font-size="14" font-weight="bold">{escape(title)}</text>']
    if legend:
        parts.append(_legend([(s.name, s.color, s.dashed) for s in series], pad_l, 38))
    parts += _fraction_axis(pad_l, width - pad_r, pad_t, inner_h, y_label)
    xs = _x_positions(len(labels), pad_l, inner_w)
    for s in series:
        parts += _series_marks(s, labels, xs, lambda v: pad_t + inner_h * (1 - max(0.0, min(1.0, v))))
    for x, label in zip(xs, labels):
        parts.append(f'<text x="{x:.1f}" y="{height - 12}" font-size="10" text-anchor="middle">{escape(label)}</text>')
    parts.append("</svg>")
    return "".join(parts)


@dataclass
class GanttRow:
    """A row of the timeline: its bars ``(start_s, end_s, kind, tip)`` and point marks ``(t_s, kind, tip)``.
    ``kind`` is the CSS class and picks the colour (see ``GANTT_COLORS``)."""

    label: str
    bars: list[tuple[float, float, str, str]] = field(default_factory=list)
    points: list[tuple[float, str, str]] = field(default_factory=list)


GANTT_COLORS = {"waiting": GREY, "started": BLUE, "done": GREEN, "failed": RED, "query": PURPLE, "unrecovered": RED}
_GANTT_LEGEND = [("waiting for capacity", GREY), ("restarting", BLUE), ("done", GREEN), ("failed", RED),
                 ("query available again", PURPLE)]


def gantt_chart(rows: list[GanttRow], *, span_s: float, title: str, width: int = 760, row_h: int = 24) -> str:
    """Rows of bars and point marks on one time axis in seconds from 0 to ``span_s`` (a recovery run:
    one row per stage with its wait and restart, and a row of per-query recovery markers)."""
    pad_l, pad_r, pad_t, pad_b = 120, 16, 48, 30
    inner_w = width - pad_l - pad_r
    height = pad_t + row_h * max(1, len(rows)) + pad_b
    span = max(span_s, 1e-9)

    def x(t: float) -> float:
        return pad_l + inner_w * max(0.0, min(1.0, t / span))

    parts = [_open(width, height, title), f'<text x="{pad_l}" y="18" font-size="14" font-weight="bold">{escape(title)}</text>',
             _legend([(n, c, False) for n, c in _GANTT_LEGEND], pad_l, 36)]
    parts += _time_axis(x, span, pad_t, height - pad_b)
    for i, row in enumerate(rows):
        top = pad_t + i * row_h
        parts.append(f'<text x="{pad_l - 8}" y="{top + row_h / 2 + 4:.1f}" font-size="11" text-anchor="end">{escape(row.label)}</text>')
        for start, end, kind, tip in row.bars:
            parts.append(f'<rect class="bar {kind}" x="{x(start):.1f}" y="{top + 4}" width="{max(2.0, x(end) - x(start)):.1f}" '
                         f'height="{row_h - 8}" fill="{GANTT_COLORS[kind]}" rx="2"><title>{escape(tip)}</title></rect>')
        for t, kind, tip in row.points:
            cx, cy = x(t), top + row_h / 2
            parts.append(f'<path class="mark {kind}" d="M{cx:.1f},{cy - 7:.1f} L{cx + 6:.1f},{cy:.1f} L{cx:.1f},{cy + 7:.1f} '
                         f'L{cx - 6:.1f},{cy:.1f} Z" fill="{GANTT_COLORS[kind]}"><title>{escape(tip)}</title></path>')
    parts.append("</svg>")
    return "".join(parts)


def topology_graph(operators: list[tuple[str, list[str]]], edges: list[tuple[str, str]], highlighted: set[str],
                   *, width: int = 640) -> str:
    """Tasks in columns by operator (topological order), substreams as lines, replicated tasks filled."""
    col_w = width / max(1, len(operators))
    tallest = max((len(tasks) for _, tasks in operators), default=1)
    row_h = 26
    height = 40 + tallest * row_h
    pos: dict[str, tuple[float, float]] = {}
    for c, (_, tasks) in enumerate(operators):
        top = 34 + (tallest - len(tasks)) * row_h / 2
        for r, task in enumerate(tasks):
            pos[task] = (col_w * c + col_w / 2, top + r * row_h + row_h / 2)
    parts = [_open(width, height, "topology")]
    for c, (name, _) in enumerate(operators):
        parts.append(f'<text x="{col_w * c + col_w / 2:.1f}" y="18" font-size="12" font-weight="bold" text-anchor="middle">{escape(name)}</text>')
    for a, b in edges:
        (x1, y1), (x2, y2) = pos[a], pos[b]
        parts.append(f'<line x1="{x1:.1f}" y1="{y1:.1f}" x2="{x2:.1f}" y2="{y2:.1f}" stroke="#bbb"/>')
    for task, (x, y) in pos.items():
        fill = GREEN if task in highlighted else "#fff"
        parts.append(f'<circle cx="{x:.1f}" cy="{y:.1f}" r="8" fill="{fill}" stroke="#333"><title>{escape(task)}'
                     f'{" (replicated)" if task in highlighted else ""}</title></circle>')
    parts.append("</svg>")
    return "".join(parts)


# -- pieces ---------------------------------------------------------------------------------------------

@dataclass
class TimedSeries:
    """One line of a :func:`timeline_chart`: ``(seconds before now, value)`` points in time order."""

    name: str
    key: str  # CSS class of its marks
    color: str
    points: list[tuple[float, float]]


def timeline_chart(series: list[TimedSeries], *, span_s: float, title: str, y_label: str, width: int = 640,
                   height: int = 220, gap_s: float = 60.0) -> str:
    """Values over the last ``span_s`` seconds (x: minutes before now), y from 0 to a round top above the largest
    value; a line breaks where two points are over ``gap_s`` apart (nothing ran in between)."""
    pad_l, pad_r, pad_t, pad_b = 56, 16, 46, 30
    inner_w, inner_h = width - pad_l - pad_r, height - pad_t - pad_b
    top = _round_top(max((v for s in series for _, v in s.points), default=0.0))
    x = lambda ago: pad_l + inner_w * (1 - min(span_s, max(0.0, ago)) / span_s)  # noqa: E731
    y = lambda v: pad_t + inner_h * (1 - min(top, max(0.0, v)) / top)  # noqa: E731
    parts = [_open(width, height, title), f'<text x="{pad_l}" y="18" font-size="14" font-weight="bold">{escape(title)}</text>',
             _legend([(s.name, s.color, False) for s in series], pad_l, 38)]
    ticks = 4 if round(top / 10 ** math.floor(math.log10(top))) == 2 else 5  # round steps: 0.5 of 2, 1 of 5, 2 of 10
    for k in range(ticks + 1):
        v = top * k / ticks
        parts.append(f'<line x1="{pad_l}" x2="{width - pad_r}" y1="{y(v):.1f}" y2="{y(v):.1f}" stroke="#ddd"/>'
                     f'<text x="{pad_l - 6}" y="{y(v) + 4:.1f}" font-size="11" text-anchor="end">{v:g}</text>')
    mid = pad_t + inner_h / 2
    parts.append(f'<text x="12" y="{mid:.1f}" font-size="11" transform="rotate(-90 12 {mid:.1f})" '
                 f'text-anchor="middle">{escape(y_label)}</text>')
    step = 600 if span_s > 1800 else 300 if span_s > 600 else 60
    for ago in range(0, int(span_s) + 1, step):
        label = "now" if ago == 0 else f"-{ago // 60} min"
        parts.append(f'<text x="{x(ago):.1f}" y="{height - 10}" font-size="10" text-anchor="middle">{label}</text>')
    for s in series:
        runs: list[list[tuple[float, float]]] = []
        for ago, v in s.points:
            if not runs or runs[-1][-1][0] - ago > gap_s:
                runs.append([])
            runs[-1].append((ago, v))
        for run in runs:
            if len(run) == 1:
                parts.append(f'<circle class="point {s.key}" cx="{x(run[0][0]):.1f}" cy="{y(run[0][1]):.1f}" r="2" '
                             f'fill="{s.color}"/>')
            else:
                parts.append(f'<polyline class="line {s.key}" fill="none" stroke="{s.color}" stroke-width="1.5" points="'
                             + " ".join(f"{x(a):.1f},{y(v):.1f}" for a, v in run) + '"/>')
    parts.append("</svg>")
    return "".join(parts)


def _round_top(value: float) -> float:
    """The least of 1, 2, 5 times a power of ten at or above ``value`` (1 for nothing above 0).

    >>> _round_top(0), _round_top(3.2), _round_top(466), _round_top(0.07)
    (1.0, 5.0, 500.0, 0.1)
    """
    if value <= 0:
        return 1.0
    power = 10.0 ** math.floor(math.log10(value))
    return next(m * power for m in (1, 2, 5, 10) if m * power >= value * (1 - 1e-12))


def _open(width: int, height: int, title: str) -> str:
    return (f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" viewBox="0 0 {width} {height}" '
            f'role="img" aria-label="{escape(title)}">')


def _legend(entries: list[tuple[str, str, bool]], left: float, y: float) -> str:
    """Colour swatches with names in one line (width estimated from the text: no font metrics server-side)."""
    out, x = [], left
    for name, color, dashed in entries:
        dash = ' stroke-dasharray="5 3"' if dashed else ""
        out.append(f'<line x1="{x:.1f}" x2="{x + 18:.1f}" y1="{y - 4}" y2="{y - 4}" stroke="{color}" stroke-width="6"{dash}/>'
                   f'<text x="{x + 24:.1f}" y="{y}" font-size="11">{escape(name)}</text>')
        x += 24 + 6.5 * len(name) + 16
    return f'<g class="legend">{"".join(out)}</g>'


def _fraction_axis(left: float, right: float, top: float, inner_h: float, y_label: str) -> list[str]:
    parts = []
    for tick in (0.0, 0.25, 0.5, 0.75, 1.0):
        y = top + inner_h * (1 - tick)
        parts.append(f'<line x1="{left}" x2="{right}" y1="{y:.1f}" y2="{y:.1f}" stroke="#ddd"/>')
        parts.append(f'<text x="{left - 6}" y="{y + 4:.1f}" font-size="11" text-anchor="end">{tick:.2f}</text>')
    mid = top + inner_h / 2
    parts.append(f'<text x="12" y="{mid:.1f}" font-size="11" transform="rotate(-90 12 {mid:.1f})" '
                 f'text-anchor="middle">{escape(y_label)}</text>')
    return parts


def _time_axis(x, span: float, top: float, bottom: float) -> list[str]:
    """Vertical grid lines at round seconds, labelled under the rows."""
    steps = [s for s in (1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 1800, 3600) if span / s <= 8]
    step = steps[0] if steps else span / 8
    parts, t = [], 0.0
    while t <= span + 1e-9:
        parts.append(f'<line x1="{x(t):.1f}" x2="{x(t):.1f}" y1="{top}" y2="{bottom}" stroke="#e5e5e5"/>')
        parts.append(f'<text x="{x(t):.1f}" y="{bottom + 14}" font-size="10" text-anchor="middle">{t:g} s</text>')
        t += step
    return parts


def _x_positions(n: int, left: float, inner_w: float) -> list[float]:
    if n == 1:
        return [left + inner_w / 2]
    step = inner_w / max(1, n - 1)
    return [left + i * step for i in range(n)]


def _series_marks(s: Series, labels: list[str], xs: list[float], y) -> list[str]:
    """The series' line (broken where a value is missing) and one marker per value."""
    parts, run = [], []
    dash = ' stroke-dasharray="6 4"' if s.dashed else ""
    for x, v in list(zip(xs, s.values)) + [(None, None)]:
        if v is None:
            if len(run) > 1:
                parts.append(f'<polyline class="line {s.key}" fill="none" stroke="{s.color}" stroke-width="2"{dash} points="'
                             + " ".join(f"{px:.1f},{py:.1f}" for px, py in run) + '"/>')
            run = []
            continue
        run.append((x, y(v)))
    for x, v, label in zip(xs, s.values, labels):
        if v is not None:
            parts.append(f'<circle class="point {s.key}" cx="{x:.1f}" cy="{y(v):.1f}" r="4" fill="{s.color}">'
                         f'<title>{escape(label)}: {escape(s.name)} {v:.4f}</title></circle>')
    return parts
