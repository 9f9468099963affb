"""The serving view: one table per job that consumers read, during a failure and after it.

Problem (issue 7, paper 001 Sec. III "replication transparency", closing paper 000's open loop of
reconciling tentative outputs): a job with a partial replica has two sinks, the primary's accurate
output and the replica's tentative output. A dashboard should not have to know about either: it
reads one table which, while the primary is down, carries the replica's rows (flagged tentative,
with the plan's predicted output fidelity) and, once the primary has delivered a window, that
window's accurate rows instead, so that the final content equals the failure-free output.

Method: a small process polls both sinks' committed micro-batch files (``batch-<id>.jsonl``, each
written atomically by :mod:`spark_jobs.pipeline.sink`, so a visible file is complete; a replayed
batch rewrites the same rows) and the primary's per-batch progress (its watermark, from the
metrics file of :mod:`spark_jobs.pipeline.metrics`). For every window whose rows changed it runs
:func:`ft_core.transparency.duplicate_filter.serving_view` (first-arrival filtering per (window, key) on each
side; per window the primary's rows once it has any, else the replica's rows flagged
``tentative: true`` with ``predicted_of``; a window the primary's watermark closed without rows is
dropped) and replaces that window's file. Work per refresh is proportional to the new batch files.

What consumers read (``--out DIR``):

- ``DIR/windows/<window_start>-<window_end>.jsonl``: one file per window, its served rows (the
  sink's fields plus ``tentative`` and ``predicted_of``, null for accurate rows). A file is
  replaced atomically (written under a hidden name, then renamed): a reader sees the whole
  tentative or the whole accurate content of a window, never a mix.
- ``DIR/_view.json``: the manifest, renamed into place after each refresh's window files: per
  window its ``state`` (tentative|accurate), row count, ``tentative_at`` / ``accurate_at`` (wall
  time the view first served it in that state), the primary's watermark and the refresh count.
  Read it first for a consistent list of windows; a window file can only have moved forward
  (tentative -> accurate) since.

Defaults come from the runs' descriptors (``_run.json``): the pipeline (hence the key fields of a row
within its window, its :class:`~spark_jobs.pipeline.definition.Output` ``key``: ``rank`` for topk, none
for incidents, whose rows are one per window) and the predicted OF, which is recomputed from the
replica's plan tasks and topology (paper 000's OF, :mod:`ft_core.replication.fidelity`).

    ftops transparency serve --primary P --replica R --out V [--predicted-of X] [--once]

Memory: the rows of the windows served (per-window state, no global snapshot).
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from ft_core.cli.output import print_json
from ft_core.errors import InputError
from ft_core.input.documents import read_document
from ft_core.input.validation import json_type
from ft_core.input.quantities import Fraction, PositiveSeconds, flag
from ft_core.transparency.duplicate_filter import RowIdentity, serving_view

Window = tuple[int, int]
WINDOW_FIELDS = ("window_start", "window_end")
MANIFEST = "_view.json"
SERVED_FIELDS = ("tentative", "predicted_of")


class WindowEntry(BaseModel):
    """One window of the view as the manifest lists it."""

    window_start: int
    window_end: int
    state: str = Field(description="tentative | accurate")
    rows: int
    file: str
    tentative_at: float | None = None
    accurate_at: float | None = None


class ViewManifest(BaseModel):
    """``_view.json``: what the view serves after the last refresh."""

    primary: str
    replica: str | None
    predicted_of: float | None
    key_fields: list[str]
    primary_watermark_ms: int | None
    refreshes: int
    refreshed_at: float
    windows: list[WindowEntry]


class _SinkReader:
    """A sink folder read incrementally: rows per batch file (re-read when a file changes)."""

    def __init__(self, folder: Path):
        self.folder = folder
        self.files: dict[str, tuple[int, int]] = {}
        self.rows: dict[str, list[dict[str, Any]]] = {}

    def poll(self) -> set[Window]:
        """Read new or rewritten batch files; returns the windows whose rows changed."""
        touched: set[Window] = set()
        for path in sorted(self.folder.glob("batch-*.jsonl")):
            try:
                st = path.stat()
                stamp = (st.st_mtime_ns, st.st_size)
                if self.files.get(path.name) == stamp:
                    continue
                rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
            except FileNotFoundError:  # replaced between glob and read: the next poll reads it
                continue
            touched |= {_window(r) for r in self.rows.get(path.name, [])} | {_window(r) for r in rows}
            self.files[path.name], self.rows[path.name] = stamp, rows
        return touched

    def window_rows(self, window: Window) -> list[dict[str, Any]]:
        """The window's rows in batch order (file names sort by batch id)."""
        return [r for name in sorted(self.rows) for r in self.rows[name] if _window(r) == window]


class _WatermarkReader:
    """The largest watermark (ms) in a run's metrics file, read by byte offset (append-only)."""

    def __init__(self, path: Path):
        self.path, self.offset, self.value = path, 0, None

    def poll(self) -> int | None:
        try:
            with self.path.open("rb") as fh:
                fh.seek(self.offset)
                chunk = fh.read()
        except FileNotFoundError:
            return self.value
        complete = chunk[: chunk.rfind(b"\n") + 1]  # a line still being written is read next time
        self.offset += len(complete)
        for line in complete.splitlines():
            mark = _epoch_ms(json.loads(line).get("watermark")) if line.strip() else None
            if mark is not None and (self.value is None or mark > self.value):
                self.value = mark
        return self.value


class ServingView:
    """The view's state and one :meth:`refresh` step (the loop is :func:`serve`)."""

    def __init__(self, primary: Path, replica: Path | None, out: Path, *, predicted_of: float | None,
                 key_fields: tuple[str, ...], clock: Callable[[], float] = time.time):
        self.primary_dir, self.replica_dir, self.out = Path(primary), None if replica is None else Path(replica), Path(out)
        self.predicted_of, self.clock = predicted_of, clock
        self.identity = RowIdentity(WINDOW_FIELDS, tuple(key_fields))
        self.primary = _SinkReader(self.primary_dir)
        self.replica = _SinkReader(self.replica_dir) if self.replica_dir is not None else None
        self.watermark = _WatermarkReader(_metrics_path(self.primary_dir))
        self.entries: dict[Window, WindowEntry] = {}
        self.served: dict[Window, list[dict[str, Any]]] = {}
        self.refreshes = 0
        (self.out / "windows").mkdir(parents=True, exist_ok=True)

    def refresh(self) -> ViewManifest:
        """Read what the sinks committed since the last refresh and update the changed windows."""
        now = self.clock()
        touched = self.primary.poll() | (self.replica.poll() if self.replica else set())
        mark = self.watermark.poll()
        # a tentative window can also change because the primary's watermark closed it empty
        touched |= {w for w, e in self.entries.items() if e.state == "tentative" and mark is not None and w[1] <= mark}
        for window in sorted(touched):
            self._update(window, mark, now)
        self.refreshes += 1
        manifest = ViewManifest(primary=str(self.primary_dir), replica=None if self.replica_dir is None else str(self.replica_dir),
                                predicted_of=self.predicted_of, key_fields=list(self.identity.key_fields),
                                primary_watermark_ms=mark, refreshes=self.refreshes, refreshed_at=now,
                                windows=[self.entries[w] for w in sorted(self.entries)])
        _write_atomic(self.out / MANIFEST, manifest.model_dump_json(indent=1))
        return manifest

    def _update(self, window: Window, mark: int | None, now: float) -> None:
        tentative = self.replica.window_rows(window) if self.replica else []
        rows = serving_view(self.primary.window_rows(window), tentative, self.identity,
                            predicted_of=self.predicted_of, primary_complete_through=mark)
        if rows == self.served.get(window, []):
            return
        path = self.out / "windows" / f"{window[0]}-{window[1]}.jsonl"
        if not rows:  # the primary closed the window empty: the replica's guess must go
            path.unlink(missing_ok=True)
            self.served.pop(window, None)
            self.entries.pop(window, None)
            return
        _write_atomic(path, "".join(json.dumps(r, separators=(",", ":")) + "\n" for r in rows))
        self.served[window] = rows
        state = "tentative" if rows[0]["tentative"] else "accurate"
        old = self.entries.get(window)
        first = {"tentative": old.tentative_at if old else None, "accurate": old.accurate_at if old else None}
        first[state] = first[state] or now  # when the view first served the window in this state
        self.entries[window] = WindowEntry(window_start=window[0], window_end=window[1], state=state, rows=len(rows),
                                           file=f"windows/{path.name}", tentative_at=first["tentative"],
                                           accurate_at=first["accurate"])


def serve(view: ServingView, poll_s: float, stop: threading.Event, duration_s: float | None = None) -> ViewManifest:
    """Refresh every ``poll_s`` until ``stop`` is set or ``duration_s`` passes; a final refresh
    after the stop, so that what the sinks committed last is served."""
    deadline = None if duration_s is None else time.monotonic() + duration_s
    while not stop.is_set() and (deadline is None or time.monotonic() < deadline):
        view.refresh()
        stop.wait(poll_s)
    return view.refresh()


def read_view(out: str | Path) -> list[dict[str, Any]]:
    """Every served row of a view folder (what a consumer reads), in the sinks' canonical row order."""
    from spark_jobs.pipeline.sink import row_key

    rows: list[dict[str, Any]] = []
    for path in Path(out, "windows").glob("*.jsonl"):
        rows.extend(json.loads(line) for line in path.read_text().splitlines() if line.strip())
    return sorted(rows, key=row_key)


def read_manifest(out: str | Path) -> ViewManifest | None:
    path = Path(out) / MANIFEST
    return ViewManifest.model_validate_json(path.read_text()) if path.exists() else None


def strip_served_fields(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The rows without the view's own fields, to compare with a sink or the reference."""
    return [{k: v for k, v in r.items() if k not in SERVED_FIELDS} for r in rows]


def make_view(primary: Path, replica: Path | None, out: Path, *, predicted_of: float | None = None,
              key_fields: tuple[str, ...] | None = None) -> ServingView:
    """Validate the folders and fill the defaults from the runs' descriptors; raises InputError."""
    if not Path(primary).is_dir():
        raise InputError(f"--primary: {str(primary)!r} is not a folder (a primary run's --output)")
    if replica is not None and not Path(replica).is_dir():
        raise InputError(f"--replica: {str(replica)!r} is not a folder (a replica run's --output)")
    if predicted_of is not None and not 0 <= predicted_of <= 1:
        raise InputError(f"--predicted-of: must be in [0, 1], got {predicted_of:g}")
    if key_fields is None:
        key_fields = _output_key(primary, replica)
    if predicted_of is None and replica is not None:
        predicted_of = predicted_fidelity(replica)
    return ServingView(primary, replica, out, predicted_of=predicted_of, key_fields=tuple(key_fields))


def _output_key(primary: Path, replica: Path | None) -> tuple[str, ...]:
    """The key fields of the pipeline the runs ran (from their descriptors)."""
    from spark_jobs.pipeline.loading import load_workload

    doc = _descriptor(primary) or (_descriptor(replica) if replica else {})
    if not doc.get("pipeline"):
        raise InputError("--key: cannot tell the pipeline (no _run.json in the sinks); give the key fields with --key")
    workload = load_workload(doc["pipeline"], {k: v for k, v in (doc.get("params") or {}).items()})
    return tuple(workload.pipeline.output.key)


def predicted_fidelity(replica: Path) -> float | None:
    """The replica plan's predicted OF, from the replica run's descriptor (None if it has none yet)."""
    from ft_core.replication.fidelity import replicated_fidelity
    from ft_core.topology.document import parse_topology
    from ft_core.topology.task_graph import build_task_graph

    doc = _descriptor(replica)
    if not doc.get("topology") or doc.get("plan_tasks") is None:
        return None
    graph = build_task_graph(parse_topology(doc["topology"]))
    return replicated_fidelity(graph, graph.indices(doc["plan_tasks"], "plan task"))


def _descriptor(folder: Path | None) -> dict[str, Any]:
    """A run's ``_run.json`` ({} before the run wrote it), through the input gate: the folder is the user's."""
    path = Path(folder) / "_run.json" if folder is not None else None
    if path is None or not path.exists():
        return {}
    doc = read_document(path, "run descriptor")
    if not isinstance(doc, dict):
        raise InputError(f"run descriptor {str(path)!r}: expected an object, got {json_type(doc)}", field="run descriptor")
    return doc


def _metrics_path(output: Path) -> Path:
    return Path(_descriptor(output).get("metrics") or Path(output) / "_metrics" / "metrics.jsonl")


def _window(row: dict[str, Any]) -> Window:
    return int(row["window_start"]), int(row["window_end"])


def _epoch_ms(iso: str | None) -> int | None:
    from datetime import datetime

    if not iso:
        return None
    return round(datetime.fromisoformat(iso.replace("Z", "+00:00")).timestamp() * 1000)


def _write_atomic(path: Path, text: str) -> None:
    tmp = path.parent / f".{path.name}.tmp"
    tmp.write_text(text)
    os.replace(tmp, path)


# --- the view in a drill ---------------------------------------------------------------------

def start_serving(primary: Path, replica: Path | None, out: Path, predicted_of: float, key_fields: tuple[str, ...],
                  poll_s: float = 0.25) -> subprocess.Popen:
    """``ftops transparency serve`` as its own process group (what consumers would run). The key fields are given:
    the view may start before the runs have written the ``_run.json`` it would read them from."""
    out.mkdir(parents=True, exist_ok=True)
    cmd = [sys.executable, "-m", "ft_core.cli.main", "transparency", "serve", "--primary", str(primary), "--out", str(out),
           "--predicted-of", f"{predicted_of:.6g}", "--poll-s", f"{poll_s:g}"]
    cmd += ["--replica", str(replica)] if replica is not None else []
    for key in key_fields:
        cmd += ["--key", key]
    with (out / "_serve.log").open("w") as log:
        return subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True)


def stop_serving(proc: subprocess.Popen, timeout_s: float = 30.0) -> int:
    """SIGTERM (the view refreshes a last time and exits), SIGKILL after ``timeout_s``."""
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            return proc.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
    return proc.wait(timeout=timeout_s)


class ViewMeasures(BaseModel):
    """What a drill checks of the view (times in seconds, windows named by their start in ms)."""

    windows_per_s: float | None = Field(description="failure windows first served per second, from the kill to the primary's catch-up")
    expected_windows_per_s: float = Field(description="the rate at which the input closes windows (speedup / slide)")
    gap_windows: list[int] = Field(description="failure windows not served tentatively before the primary delivered them")
    max_staleness_s: float | None = Field(description="worst delay from the input closing a failure window to the view serving it")
    tentative_windows: int
    equals_reference: bool


def measure_view(out: Path, expected: list[dict[str, Any]], failure_windows: list[Window], t_fail: float,
                 t_caught_up: float, closed_at: Callable[[int], float | None], expected_rate: float) -> ViewMeasures:
    """The view after a drill: gaps and staleness of the failure windows, its final content."""
    manifest = read_manifest(out)
    entries = {(e.window_start, e.window_end): e for e in (manifest.windows if manifest else [])}
    served = [entries[w].tentative_at for w in failure_windows if w in entries and entries[w].tentative_at is not None]
    gaps = [w[0] for w in failure_windows if w not in entries or entries[w].tentative_at is None]
    in_failure = [t for t in served if t_fail <= t <= t_caught_up]
    stale = [entries[w].tentative_at - closed_at(w[1]) for w in failure_windows
             if w[0] not in gaps and closed_at(w[1]) is not None]
    rows = read_view(out)
    return ViewMeasures(
        windows_per_s=len(in_failure) / (t_caught_up - t_fail) if t_caught_up > t_fail else None,
        expected_windows_per_s=expected_rate, gap_windows=gaps, max_staleness_s=max(stale) if stale else None,
        tentative_windows=sum(e.tentative_at is not None for e in entries.values()),
        equals_reference=not any(r["tentative"] for r in rows) and strip_served_fields(rows) == expected)


# --- command line (``ftops transparency serve`` is registered by spark_jobs.cli.faults) ---------------------

def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--primary", type=Path, required=True, help="the primary run's output folder (accurate rows)")
    parser.add_argument("--replica", type=Path, help="the replica run's output folder (tentative rows)")
    parser.add_argument("--out", type=Path, required=True, help="the view folder consumers read")
    parser.add_argument("--predicted-of", type=flag(Fraction), help="predicted OF of tentative rows (default: from the replica's plan)")
    parser.add_argument("--key", action="append", help="key field of a row within its window (repeatable; default: "
                        "the pipeline's, from the runs' _run.json)")
    parser.add_argument("--poll-s", type=flag(PositiveSeconds), default=0.5, help="seconds between refreshes (default 0.5)")
    parser.add_argument("--duration-s", type=flag(PositiveSeconds), help="stop after this many seconds (default: until SIGTERM/SIGINT)")
    parser.add_argument("--once", action="store_true", help="refresh once, print the manifest summary, exit")
    parser.add_argument("--json", action="store_true", help="with --once: the summary as JSON; else, once the view is "
                        "served, what runs (pid, folders, manifest) as JSON, and the final summary on stderr")


def run_from_args(args: argparse.Namespace) -> int:
    """``ftops transparency serve``: the summary line at the end on stdout (a JSON line), or with ``--json``
    one document: the summary (``--once``) or, for the long-running view, what was started."""
    view = make_view(args.primary, args.replica, args.out, predicted_of=args.predicted_of,
                     key_fields=tuple(args.key) if args.key else None)
    if args.once:
        _print_summary(args.out, view.refresh(), args.json, sys.stdout)
        return 0
    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    if args.json:
        view.refresh()  # consumers can read the manifest as soon as the document says the view runs
        print_json(_started(view, args))
    manifest = serve(view, args.poll_s, stop, args.duration_s)
    _print_summary(args.out, manifest, False, sys.stderr if args.json else sys.stdout)
    return 0


def _started(view: ServingView, args: argparse.Namespace) -> dict[str, Any]:
    """What ``serve --json`` started: the process to signal and the folder consumers read."""
    return {"pid": os.getpid(), "primary": str(view.primary_dir), "replica": None if view.replica_dir is None else str(view.replica_dir),
            "out": str(view.out), "manifest": str(view.out / MANIFEST), "predicted_of": view.predicted_of,
            "key_fields": list(view.identity.key_fields), "poll_s": args.poll_s, "duration_s": args.duration_s}


def _print_summary(out: Path, manifest: ViewManifest, as_json: bool, stream) -> None:
    states = [w.state for w in manifest.windows]
    doc = {"out": str(out), "windows": len(states), "tentative": states.count("tentative"), "accurate": states.count("accurate"),
           "primary_watermark_ms": manifest.primary_watermark_ms, "predicted_of": manifest.predicted_of}
    if as_json:
        print_json(doc)
    else:
        print(json.dumps(doc), file=stream, flush=True)
