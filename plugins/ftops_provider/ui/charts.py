"""The console's charts as Apache ECharts options: drawn in the browser by the vendored library (``ui/static``,
``scripts/vendor-echarts.sh``), with hover tooltips, zoom (the mouse wheel, or the zoom tool's box; *restore* undoes it)
and time axes. Each :class:`Chart` also carries its data as a table, shown under it (screen readers, copying, tests).

The options are plain JSON: the one thing JSON cannot carry, the function that draws a stage's bar, is named
(``"renderItem": "stageBar"``) and looked up by the page's script (``templates/console.js``).

Charts here: fractions per labelled point (plan history, drills), values over the last hour on a time axis (lag,
throughput), a recovery run's stages as bars on a seconds axis with the moments its queries came back, and a
topology with its replicated tasks filled.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from pydantic import BaseModel

from ftops_provider.ui.formats import clock

# Series colours, chosen to stay apart for colour-blind readers (blue/orange).
BLUE = "#1f6feb"
ORANGE = "#d4760a"
GREEN = "#2da44e"
RED = "#cf222e"
GREY = "#8c959f"
PURPLE = "#8250df"

_ZOOM = {"dataZoom": [{"type": "inside", "filterMode": "none"}],
         "toolbox": {"right": 8, "feature": {"dataZoom": {"yAxisIndex": "none"}, "restore": {}}}}


class Chart(BaseModel):
    """One chart of a page: its element's key, its caption, the ECharts option, its size in CSS pixels, and its data
    as table rows (the header first)."""

    key: str
    title: str
    option: dict
    width: int = 640
    height: int = 240
    table: list[list[str]]


@dataclass
class Series:
    """One line of a fraction chart: values in [0, 1] per x label (None: no value there, the line breaks)."""

    name: str
    color: str
    values: list[float | None]
    dashed: bool = False


def fraction_chart(key: str, title: str, labels: list[str], series: list[Series], *, y_label: str,
                   height: int = 240) -> Chart:
    """Series of fractions over the same labels (e.g. predicted OF and measured accuracy per drill), y from 0 to 1.

    >>> c = fraction_chart("h", "Plans", ["#1", "#2"], [Series("OF", BLUE, [0.5, None])], y_label="OF")
    >>> c.option["series"][0]["data"], c.table
    ([0.5, None], [['', 'OF'], ['#1', '0.5000'], ['#2', '-']])
    """
    option = {"grid": {"left": 56, "right": 24, "top": 40 if len(series) > 1 else 24, "bottom": 32},
              "tooltip": {"trigger": "axis"}, "xAxis": {"type": "category", "data": labels, "boundaryGap": False},
              "yAxis": {"type": "value", "min": 0, "max": 1, "name": y_label, "nameLocation": "middle", "nameGap": 40},
              "series": [{"name": s.name, "type": "line", "data": s.values, "color": s.color, "symbolSize": 8,
                          "lineStyle": {"width": 2, "type": "dashed" if s.dashed else "solid"}} for s in series], **_ZOOM}
    if len(series) > 1:
        option["legend"] = {"top": 0, "left": 48}
    rows = [[label] + [_fraction(s.values[i]) for s in series] for i, label in enumerate(labels)]
    return Chart(key=key, title=title, option=option, height=height, table=[[""] + [s.name for s in series]] + rows)


@dataclass
class TimedSeries:
    """One line of a :func:`time_chart`: ``(epoch seconds, value)`` points in time order."""

    name: str
    color: str
    points: list[tuple[float, float]]


def time_chart(key: str, title: str, series: list[TimedSeries], *, start: float, end: float, y_label: str,
               gap_s: float) -> Chart:
    """Values over time from ``start`` to ``end`` (epoch seconds); a line breaks where two points are more than
    ``gap_s`` apart (nothing ran in between).

    >>> c = time_chart("lag", "Lag", [TimedSeries("a", BLUE, [(0, 1.0), (10, 2.0), (100, 3.0)])], start=0, end=120,
    ...                y_label="s", gap_s=30)
    >>> c.option["series"][0]["data"]
    [[0, 1.0], [10000, 2.0], [55000, None], [100000, 3.0]]
    """
    def data(points: list[tuple[float, float]]) -> list[list]:
        out: list[list] = []
        for i, (t, v) in enumerate(points):
            if i and t - points[i - 1][0] > gap_s:
                out.append([round((t + points[i - 1][0]) / 2 * 1000), None])  # a gap: the line breaks here
            out.append([round(t * 1000), v])
        return out

    option = {"grid": {"left": 64, "right": 24, "top": 40, "bottom": 32}, "legend": {"top": 0, "left": 56},
              "tooltip": {"trigger": "axis"},
              "xAxis": {"type": "time", "min": round(start * 1000), "max": round(end * 1000)},
              "yAxis": {"type": "value", "min": 0, "name": y_label, "nameLocation": "middle", "nameGap": 48},
              "series": [{"name": s.name, "type": "line", "data": data(s.points), "color": s.color, "symbolSize": 4,
                          "connectNulls": False} for s in series], **_ZOOM}
    table = [["stream", "time (UTC)", y_label]] + [[s.name, clock(t), f"{v:g}"] for s in series for t, v in s.points]
    return Chart(key=key, title=title, option=option, height=240, table=table)


@dataclass
class GanttRow:
    """A row of a stages chart: its bars ``(start_s, end_s, kind, tip)`` and point marks ``(t_s, kind, tip)``.
    ``kind`` picks the colour and legend entry (see ``GANTT_KINDS``)."""

    label: str
    bars: list[tuple[float, float, str, str]] = field(default_factory=list)
    points: list[tuple[float, str, str]] = field(default_factory=list)


GANTT_KINDS = {"waiting": ("waiting for capacity", GREY), "started": ("restarting", BLUE), "done": ("done", GREEN),
               "failed": ("failed", RED), "query": ("query available again", PURPLE),
               "unrecovered": ("not available again", RED)}


def stages_chart(key: str, title: str, rows: list[GanttRow], *, origin: str) -> Chart:
    """Rows of bars and point marks on one axis of seconds from 0 (``origin``) to a round value past the last one (a
    recovery run: one row per stage with its wait and restart, and a row of the moments its queries were available
    again). One series per kind.

    >>> c = stages_chart("r", "Run", [GanttRow("stage 1", bars=[(0, 5, "waiting", "w"), (5, 9, "done", "d")])],
    ...                  origin="the failure")
    >>> [(s["name"], s["data"]) for s in c.option["series"]]
    [('waiting for capacity', [{'name': 'w', 'value': [0, 0, 5]}]), ('done', [{'name': 'd', 'value': [0, 5, 9]}])]
    """
    series = []
    for kind, (name, color) in GANTT_KINDS.items():
        bars = [{"name": tip, "value": [i, round(a, 3), round(b, 3)]}
                for i, row in enumerate(rows) for a, b, k, tip in row.bars if k == kind]
        points = [{"name": tip, "value": [round(t, 3), i]} for i, row in enumerate(rows) for t, k, tip in row.points
                  if k == kind]
        if bars:
            series.append({"name": name, "type": "custom", "renderItem": "stageBar", "color": color, "data": bars,
                           "encode": {"x": [1, 2], "y": 0}, "tooltip": {"formatter": "{b}"}})
        if points:
            series.append({"name": name, "type": "scatter", "symbol": "diamond", "symbolSize": 14, "color": color,
                           "data": points, "tooltip": {"formatter": "{b}"}})
    option = {"grid": {"left": 96, "right": 24, "top": 40, "bottom": 40}, "legend": {"top": 0, "left": 88},
              "tooltip": {"trigger": "item"},
              "xAxis": {"type": "value", "min": 0, "name": f"seconds from {origin}",
                        "nameLocation": "middle", "nameGap": 24},
              "yAxis": {"type": "category", "data": [r.label for r in rows], "inverse": True},
              "series": series, **_ZOOM}
    table = [["row", "what", "from (s)", "to (s)"]]
    table += [[row.label, tip, f"{a:.1f}", f"{b:.1f}"] for row in rows for a, b, _, tip in row.bars]
    table += [[row.label, tip, f"{t:.1f}", ""] for row in rows for t, _, tip in row.points]
    return Chart(key=key, title=title, option=option, height=88 + 28 * max(1, len(rows)), width=760, table=table)


def topology_chart(key: str, title: str, operators: list[tuple[str, list[str]]], edges: list[tuple[str, str]],
                   replicated: set[str]) -> Chart:
    """Tasks in columns by operator (in topological order), substreams as lines, replicated tasks filled.

    >>> c = topology_chart("t", "T", [("src", ["s0"]), ("agg", ["a0"])], [("s0", "a0")], {"a0"})
    >>> [(n["name"], n["value"], n["category"]) for n in c.option["series"][0]["data"]]
    [('s0', [0, 0.0], 1), ('a0', [1, 0.0], 0)]
    """
    tallest = max((len(tasks) for _, tasks in operators), default=1)
    nodes = [{"name": task, "value": [c, (tallest - len(tasks)) / 2 + r], "category": 0 if task in replicated else 1}
             for c, (_, tasks) in enumerate(operators) for r, task in enumerate(tasks)]
    option = {"grid": {"left": 24, "right": 24, "top": 48, "bottom": 16}, "legend": {"top": 0, "left": 16},
              "tooltip": {"trigger": "item", "formatter": "{b}"},
              "xAxis": {"type": "category", "data": [name for name, _ in operators], "position": "top",
                        "axisLine": {"show": False}, "axisTick": {"show": False}},
              "yAxis": {"type": "value", "inverse": True, "show": False, "min": -0.5, "max": tallest - 0.5},
              "series": [{"type": "graph", "coordinateSystem": "cartesian2d", "symbolSize": 16, "data": nodes,
                          "links": [{"source": a, "target": b} for a, b in edges],
                          "categories": [{"name": "replicated", "itemStyle": {"color": GREEN}},
                                         {"name": "not replicated", "itemStyle": {"color": "transparent",
                                                                                  "borderColor": GREY,
                                                                                  "borderWidth": 1.5}}],
                          "lineStyle": {"color": GREY, "opacity": 0.6}}]}
    table = [["operator", "task", "replicated"]] + [[name, t, "yes" if t in replicated else "no"]
                                                     for name, tasks in operators for t in tasks]
    return Chart(key=key, title=title, option=option, height=72 + 26 * tallest, table=table)


def _fraction(v: float | None) -> str:
    return "-" if v is None else f"{v:.4f}"
