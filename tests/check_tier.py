"""The check tier's guard (``make check``: the tests that need neither a JVM nor Airflow processes).

Which tests are in the tier is decided in tests/conftest.py: everything but the tests marked ``full``, and every
test under tests/spark/, tests/airflow/ and tests/stack/ (or using their Spark, Airflow or installed-wheel
fixtures) is marked so. A marker alone would rot: a new test in tests/core that starts Spark would slip into the
quick tier and make it slow. So the tier runs where no JVM and no Airflow process can start, and a test that tries
fails, named:

- ``java`` and ``airflow`` on PATH, and ``$JAVA_HOME/bin/java`` (what Spark's launcher runs), are a guard script
  that records the call (with pytest's current test) in this test process's log and exits 1 at once, so nothing waits
  for a JVM; it catches JVMs started by the test's subprocesses too (``ftops workload run``, ``spark-submit``);
- an audit hook (:func:`sys.addaudithook`) records every ``python -m airflow`` the test process itself would start,
  and stops it (the ``subprocess.Popen`` raises);
- after each test, the autouse fixture in tests/conftest.py fails the test when the log grew during it
  (:func:`started_during`).

Not caught: an Airflow that a test's subprocess starts with ``python -m airflow`` (the audit hook lives in the
test processes only); such tests start Airflow through ftops's stack, whose tests are under tests/stack/.
"""

from __future__ import annotations

import atexit
import os
import sys
from pathlib import Path

GUARD = """#!/bin/sh
# make check's guard in place of {name}: this tier starts no JVM and no Airflow (tests/check_tier.py)
printf '%s\\t{name} %s\\n' "${{PYTEST_CURRENT_TEST:-outside a test}}" "$*" >> "${{FTOPS_CHECK_TIER_LOG:-/dev/null}}"
echo "make check: {name} is not available in this tier (mark the test @pytest.mark.full)" >&2
exit 1
"""


def guard(folder: Path, worker: str) -> Path:
    """Put the guard scripts first (PATH, JAVA_HOME) and install the audit hook, for this process and its children; returns
    this process's log (one per process: xdist's workers append to their own)."""
    bin_dir = folder / "bin"
    bin_dir.mkdir(parents=True, exist_ok=True)
    for name in ("java", "airflow"):
        script = bin_dir / name
        text = GUARD.format(name=name)
        if not script.exists() or script.read_text() != text:
            partial = bin_dir / f".{name}.{os.getpid()}"  # xdist's workers write it too: whole files only
            partial.write_text(text)
            partial.chmod(0o755)
            partial.replace(script)
    log = folder / f"started-{worker or 'main'}-{os.getpid()}.log"
    log.write_text("")
    atexit.register(log.unlink, missing_ok=True)  # read by this process's tests only
    os.environ["FTOPS_CHECK_TIER_LOG"] = str(log)
    os.environ["JAVA_HOME"] = str(folder)  # $JAVA_HOME/bin/java: the guard
    os.environ["PATH"] = os.pathsep.join([str(bin_dir), *[p for p in os.environ.get("PATH", "").split(os.pathsep)
                                                           if p != str(bin_dir)]])
    sys.addaudithook(_airflow_hook(log))
    return log


def _airflow_hook(log: Path):
    def hook(event: str, args: tuple) -> None:
        if event != "subprocess.Popen":
            return
        argv = [str(a) for a in (args[1] if isinstance(args[1], (list, tuple)) else [args[1]])]
        if any(a == "-m" and b == "airflow" for a, b in zip(argv, argv[1:])):
            with open(log, "a") as out:
                out.write(f"{os.environ.get('PYTEST_CURRENT_TEST', 'outside a test')}\t{' '.join(argv[:6])}\n")
            raise RuntimeError("make check: Airflow is not started in this tier (mark the test @pytest.mark.full)")
    return hook


def started_during(log: Path, offset: int) -> tuple[int, list[str]]:
    """The log's new size and what it recorded since ``offset``."""
    with open(log, "rb") as fh:
        fh.seek(offset)
        new = fh.read()
    return offset + len(new), [line.split("\t", 1)[-1] for line in new.decode(errors="replace").splitlines()]
