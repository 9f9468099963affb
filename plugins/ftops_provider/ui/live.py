"""The job page's last hour (issue 36, item 2): how far its output is behind its input, and how many rows a second
it reads, from its streams' progress rows (its primary's; a job attached to unchanged code: each of its queries').

Per stream, the batches are summed per minute: the minute's largest lag and its rows read over 60 s (a batch's own
rate, rows over the time since the one before, swings with the trigger; a minute's does not). A minute without a
batch has no point, so a stop shows as a gap in the lines. O(batches) per page.
"""

from __future__ import annotations

from pydantic import BaseModel

from ftops_provider.ui.charts import BLUE, GREEN, ORANGE, PURPLE, TimedSeries, time_chart
from ftops_provider.ui.templates import render

SPAN_S = 3600.0  # the last hour
MINUTE_S = 60.0
COLORS = (BLUE, ORANGE, GREEN, PURPLE)


class MinuteOut(BaseModel):
    """One stream's minute: when it ends (epoch s), its batches, the rows they read per second, their largest lag."""

    stream: str
    minute_end: float
    batches: int
    rows_per_s: float
    max_lag_s: float | None


def per_minute(batches: dict[str, list[dict]], now: float, span_s: float = SPAN_S) -> list[MinuteOut]:
    """Each stream's batches of the last ``span_s`` seconds before ``now`` summed per minute, oldest first.

    >>> rows = {"ftops-a-primary": [{"batch_end": 1000.0 - 70, "input_rows": 600, "lag_s": 4.0},
    ...                             {"batch_end": 1000.0 - 10, "input_rows": 300, "lag_s": 2.5},
    ...                             {"batch_end": 1000.0 - 5, "input_rows": 300, "lag_s": None},
    ...                             {"batch_end": 1000.0 + 0.5, "input_rows": 300, "lag_s": 3.0}]}  # a clock ahead
    >>> [(m.minute_end, m.batches, m.rows_per_s, m.max_lag_s) for m in per_minute(rows, 1000.0)]
    [(940.0, 1, 10.0, 4.0), (1000.0, 3, 15.0, 3.0)]
    """
    out = []
    for stream, rows in sorted(batches.items()):
        minutes: dict[int, list[dict]] = {}
        for row in rows:
            ago = max(0.0, now - row["batch_end"])  # a driver's clock a little ahead of this server's: now
            if ago < span_s:
                minutes.setdefault(int(ago // MINUTE_S), []).append(row)
        for k in sorted(minutes, reverse=True):
            lags = [r["lag_s"] for r in minutes[k] if r["lag_s"] is not None]
            out.append(MinuteOut(stream=stream, minute_end=now - k * MINUTE_S, batches=len(minutes[k]),
                                 rows_per_s=round(sum(r["input_rows"] for r in minutes[k]) / MINUTE_S, 3),
                                 max_lag_s=max(lags) if lags else None))
    return out


def live_section(batches: dict[str, list[dict]], now: float) -> str:
    """The section: two charts (lag, rows read per second) and a line saying where the job stands now, which the open
    page redraws (``templates/live.html``)."""
    minutes = per_minute(batches, now)
    streams = sorted(batches)
    lag, rate = [], []
    for i, stream in enumerate(streams):
        own = [m for m in minutes if m.stream == stream]
        name, color = _short(stream), COLORS[i % len(COLORS)]
        lag.append(TimedSeries(name, color, [(m.minute_end - MINUTE_S / 2, m.max_lag_s) for m in own
                                             if m.max_lag_s is not None]))
        rate.append(TimedSeries(name, color, [(m.minute_end - MINUTE_S / 2, m.rows_per_s) for m in own]))
    window = {"start": now - SPAN_S, "end": now, "gap_s": 1.5 * MINUTE_S}
    charts = [time_chart("lag", "Lag: output behind input, largest per minute", lag, y_label="seconds", **window),
              time_chart("rate", "Throughput: rows read per second, per minute", rate, y_label="rows/s", **window)]
    return render("live.html", batches=bool(batches), minutes=bool(minutes),
                  now_line=_now_line(minutes, streams, now) if minutes else "", charts=charts)


def _now_line(minutes: list[MinuteOut], streams: list[str], now: float) -> str:
    """Per stream: its newest minute's lag and rate, against the hour's peak lag and mean rate."""
    parts = []
    for stream in streams:
        own = [m for m in minutes if m.stream == stream]
        if not own:
            parts.append(f"{_short(stream)}: no batch in the last hour")
            continue
        last, lags = own[-1], [m.max_lag_s for m in own if m.max_lag_s is not None]
        ago = now - last.minute_end
        lag = "lag unknown" if last.max_lag_s is None else f"{last.max_lag_s:.0f} s behind (peak {max(lags):.0f} s)"
        mean = sum(m.rows_per_s for m in own) / len(own)
        parts.append(f"{_short(stream)}: {lag}, {last.rows_per_s:g} rows/s in its newest minute"
                     f"{f' ({ago / 60:.0f} min ago)' if ago >= MINUTE_S else ''}, {mean:.1f} rows/s on average over "
                     f"its {len(own)} minutes with batches in the hour")
    return "; ".join(parts)


def _short(stream: str) -> str:
    """``ftops-<job>-primary`` as ``primary``; an attached job's query by its own name."""
    return stream.rsplit("-", 1)[-1] if stream.endswith("-primary") else stream.removeprefix("ftops-")
