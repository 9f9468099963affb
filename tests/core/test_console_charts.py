"""The console's charts (``ftops_provider/ui/charts.py``) and the charting library they are drawn with: the vendored
Apache ECharts is the version ``scripts/vendor-echarts.sh`` pins, and the page loads that file; each chart's option is
what ECharts draws and its data table says the same (the browser side is tests/airflow/test_ui_browser.py)."""

from __future__ import annotations

import json
import re

from ftops_provider.ui.charts import BLUE, GanttRow, Series, TimedSeries, fraction_chart, stages_chart, time_chart
from ftops_provider.ui.templates import CHART_MARK, ECHARTS, macro, render_page
from tests.conftest import ROOT

STATIC = ROOT / "plugins" / "ftops_provider" / "ui" / "static"


def render_chart(chart) -> str:
    return macro("chart.html", "chart_figure")(chart)


def test_the_vendored_library_is_the_pinned_version_with_its_licence():
    pinned = re.search(r"^VERSION=(\S+)$", (ROOT / "scripts" / "vendor-echarts.sh").read_text(), re.M).group(1)
    assert ECHARTS == f"echarts-{pinned}.min.js"
    library = (STATIC / ECHARTS).read_text()
    assert f'version="{pinned}"' in library and "Apache License" in library[:2000]
    assert "Apache License" in (STATIC / f"echarts-{pinned}.LICENSE").read_text()
    assert sorted(p.name for p in STATIC.iterdir()) == sorted([ECHARTS, f"echarts-{pinned}.LICENSE"])  # no stale copy


def test_a_page_loads_the_library_only_when_it_has_a_chart():
    chart = fraction_chart("h", "Plans <b>", ["#1"], [Series("OF", BLUE, [0.5])], y_label="OF")
    figure = render_chart(chart)
    assert figure.lstrip().startswith(CHART_MARK) and "Plans &lt;b&gt;" in figure  # escaped
    with_chart = render_page("Job", figure, "/ftops/static")
    assert f'<script src="/ftops/static/{ECHARTS}" defer></script>' in with_chart and "ftopsCharts" in with_chart
    assert ECHARTS not in render_page("Jobs", "<p>none</p>", "/ftops/static")


def test_the_option_travels_as_inert_json_that_cannot_close_its_script():
    hostile = "</script><script>alert(1)</script>"
    figure = render_chart(fraction_chart("h", "t", [hostile], [Series(hostile, BLUE, [0.5])], y_label="OF"))
    assert "</script><script>" not in figure
    text = re.search(r'class="chart-option">(.*?)</script>', figure, re.S).group(1)
    assert json.loads(text)["xAxis"]["data"] == [hostile]


def test_a_time_chart_breaks_its_line_over_a_gap_and_tables_every_point():
    chart = time_chart("lag", "Lag", [TimedSeries("primary", BLUE, [(1000, 1.0), (1060, 2.0), (1300, 3.0)])],
                       start=0, end=1400, y_label="seconds", gap_s=90)
    assert chart.option["series"][0]["data"] == [[1000000, 1.0], [1060000, 2.0], [1180000, None], [1300000, 3.0]]
    assert chart.option["xAxis"] == {"type": "time", "min": 0, "max": 1400000}
    assert chart.table[1:] == [["primary", "00:16:40", "1"], ["primary", "00:17:40", "2"], ["primary", "00:21:40", "3"]]


def test_a_stages_chart_has_a_series_per_kind_and_names_each_mark():
    rows = [GanttRow("stage 0", bars=[(0, 4, "waiting", "waited"), (4, 9, "done", "restarted a")]),
            GanttRow("queries", points=[(12.5, "query", "Q1 back after 12.5 s"), (20, "unrecovered", "Q2 not back")])]
    chart = stages_chart("run-1", "Run", rows, origin="the failure")
    kinds = [(s["name"], s["type"], len(s["data"])) for s in chart.option["series"]]
    assert kinds == [("waiting for capacity", "custom", 1), ("done", "custom", 1), ("query available again", "scatter", 1),
                     ("not available again", "scatter", 1)]
    assert all(s["renderItem"] == "stageBar" for s in chart.option["series"] if s["type"] == "custom")
    assert chart.option["yAxis"]["data"] == ["stage 0", "queries"]
    assert ["queries", "Q1 back after 12.5 s", "12.5", ""] in chart.table
