"""Shared test fixtures: the repository root and a helper to run the ``ftops`` CLI for real."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SAMPLES = ROOT / "ft_core" / "samples"
# pytest-xdist's worker (gw0, gw1, ...; "" without -n): each worker gets its own ports, Airflow home and
# PostgreSQL folder, so the workers' Spark clusters, servers and SQLite metadata never meet.
WORKER = os.environ.get("PYTEST_XDIST_WORKER", "")
WORKER_INDEX = int(WORKER[2:]) if WORKER.startswith("gw") else 0
# Every server a test starts listens on a fixed port of its own, all in one block, 11,000-16,999;
# FTOPS_TEST_PORT_OFFSET moves them all, so two checkouts (or a developer's stack) can run tests at once,
# and each xdist worker adds one block more (6,000), so no worker's ports meet another's.
PORT_BLOCK = 6000
PORT_OFFSET = int(os.environ.get("FTOPS_TEST_PORT_OFFSET", "0")) + PORT_BLOCK * WORKER_INDEX
if WORKER:  # before anything imports airflow (it reads AIRFLOW_HOME once)
    os.environ["AIRFLOW_HOME"] = str(ROOT / ".state" / f"airflow-test-{WORKER}")
# Every JVM the tests start (Spark masters, workers, drivers, executors) compiles with C1 only and
# collects with the serial collector: a test's JVMs live minutes, and C2's compiler threads were half
# of their CPU on this 2-core machine (a DAG test went from 267 s to 155 s). Semantics are unchanged;
# users' jobs and ftops's own stack keep the JVM's defaults. They also map Spark's classes from a
# class-data archive instead of loading them from the jars (tests/spark_class_archive.py). Set once, by the
# first process (xdist's controller); its workers inherit it. A JDK_JAVA_OPTIONS of your own wins.
TEST_JVM_OPTIONS = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"
# The tiers: `make test` runs every test (FTOPS_TEST_TIER=full, the default); `make check` (FTOPS_TEST_TIER=check)
# the tests that need neither a JVM nor Airflow processes, where none can start (tests/check_tier.py). A test is
# in the full tier only when it is marked `full`: every test under FULL_TIER_DIRS, or using FULL_TIER_FIXTURES,
# is (pytest_collection_modifyitems); elsewhere mark it with @pytest.mark.full.
TIER = os.environ.get("FTOPS_TEST_TIER") or "full"
if TIER not in ("full", "check"):
    raise ValueError(f"FTOPS_TEST_TIER={TIER!r}: full (make test) or check (make check)")
FULL_TIER_DIRS = ("tests/spark/", "tests/airflow/", "tests/stack/")
FULL_TIER_FIXTURES = {"spark", "airflow_db", "installed_wheel"}  # a Spark session, Airflow's database, the wheel
CHECK_TIER_LOG = None
if TIER == "check":
    from tests.check_tier import guard

    CHECK_TIER_LOG = guard(ROOT / ".state" / "check-tier", WORKER)
elif "JDK_JAVA_OPTIONS" not in os.environ:
    from tests.spark_class_archive import java_options

    os.environ["JDK_JAVA_OPTIONS"] = " ".join([TEST_JVM_OPTIONS, *java_options(ROOT / ".state", TEST_JVM_OPTIONS)])


def test_port(port: int) -> int:
    """A test's fixed port (11,000-16,999), moved by ``FTOPS_TEST_PORT_OFFSET`` and the xdist worker's
    block; below 32,768 no outgoing connection's ephemeral port can take it first."""
    moved = port + PORT_OFFSET
    if not 1024 <= moved <= 65535 - 500:  # room for the worker and UI ports counted up from a base
        raise ValueError(f"FTOPS_TEST_PORT_OFFSET={PORT_OFFSET} moves test port {port} to {moved}, outside 1024-65035; "
                         "choose a smaller offset")
    return moved


test_port.__test__ = False  # a helper, not a test


def namespaces_missing() -> str | None:
    """What this machine lacks for network namespaces (None: nothing, they can be made)."""
    import shutil

    if os.geteuid() != 0:
        return "root (network namespaces are created as root)"
    if shutil.which("ip") is None:
        return "the `ip` command (iproute2)"
    return None


def test_network() -> str:
    """The network of the multi-host tests' Spark clusters (issue 14): ``namespaces`` (a host per daemon,
    faults that cut links: spark_jobs.cluster.netns) when the tests run as root with iproute2 (CI does),
    else ``loopback``; ``FTOPS_TEST_NETWORK=loopback|namespaces`` chooses, and asking for namespaces where
    they cannot be made is an error, not a quiet fallback."""
    chosen = os.environ.get("FTOPS_TEST_NETWORK")
    if chosen not in (None, "", "loopback", "namespaces"):
        raise ValueError(f"FTOPS_TEST_NETWORK={chosen!r}: loopback or namespaces")
    missing = namespaces_missing()
    if chosen == "namespaces" and missing:
        raise ValueError(f"FTOPS_TEST_NETWORK=namespaces: this machine lacks {missing}")
    return chosen or ("loopback" if missing else "namespaces")


test_network.__test__ = False


def namespaces_of(subnet: int) -> list[str]:
    """What is left of the namespace network 198.18.<subnet>.0/24: its namespaces and links (empty once torn down)."""
    found = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout.split()
    links = subprocess.run(["ip", "-o", "link"], capture_output=True, text=True).stdout
    return ([n for n in found if n.startswith(f"ftops{subnet}-")]
            + [w.rstrip(":").split("@")[0] for w in links.split() if w.startswith((f"ftops{subnet}h", f"ftopsbr{subnet}:"))])

# The slowest modules (minutes each of real Spark and Airflow; CI prints the slowest tests) run first, so
# that the xdist workers (whole modules each: --dist loadfile) do not end on one long module.
SLOWEST_FIRST = [  # as measured on 2026-11-29 (CONTRIBUTING.md)
    "tests/airflow/test_dag_runs.py",
    "tests/airflow/test_recovery_dag.py",
    "tests/airflow/test_checkpoint_dag.py",
    "tests/airflow/test_fleet_on_spark.py",
    "tests/spark/test_units.py",
    "tests/airflow/test_safety_net.py",
    "tests/airflow/test_fleet_dags.py",
    "tests/airflow/test_attached_job.py",
    "tests/spark/test_fault_injection.py",
    "tests/spark/test_drill.py",
    "tests/spark/test_accuracy_estimator.py",
    "tests/spark/test_profiling.py",
    "tests/spark/test_executor_faults.py",
    "tests/spark/test_multi_host.py",
]


def pytest_configure(config) -> None:
    config.addinivalue_line("markers", "full: needs a JVM (Spark) or Airflow processes; runs in `make test`, not in "
                                       "`make check` (tests/conftest.py, tests/check_tier.py)")


def pytest_ignore_collect(collection_path: Path, config) -> bool | None:
    """The check tier does not even import the full tier's directories (their modules import Spark and Airflow)."""
    if TIER == "check" and any(collection_path.is_relative_to(ROOT / d) for d in FULL_TIER_DIRS):
        return True
    return None


def pytest_collection_modifyitems(config, items: list) -> None:
    for item in items:
        if item.nodeid.startswith(FULL_TIER_DIRS) or FULL_TIER_FIXTURES & set(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.full)
    if TIER == "check":
        left_out = [item for item in items if item.get_closest_marker("full")]
        if left_out:
            config.hook.pytest_deselected(items=left_out)
            items[:] = [item for item in items if not item.get_closest_marker("full")]
    rank = {name: i for i, name in enumerate(SLOWEST_FIRST)}
    items.sort(key=lambda item: rank.get(item.nodeid.split("::")[0], len(rank)))  # stable: modules keep their order


@pytest.fixture(autouse=True)
def _check_tier_guard():
    """In the check tier, a test that started a JVM or Airflow (what the guard recorded while it ran) fails."""
    if CHECK_TIER_LOG is None:
        yield
        return
    from tests.check_tier import started_during

    offset = CHECK_TIER_LOG.stat().st_size
    yield
    _, started = started_during(CHECK_TIER_LOG, offset)
    if started:
        pytest.fail("make check starts no JVM and no Airflow, and this test started " + "; ".join(sorted(set(started)))
                    + ": mark it @pytest.mark.full (it then runs in make test only)", pytrace=False)


class CliResult:
    def __init__(self, proc: subprocess.CompletedProcess):
        self.code = proc.returncode
        self.out = proc.stdout
        self.err = proc.stderr

    def json(self):
        return json.loads(self.out)


def run_cli(*args: str, timeout: float = 300, env: dict[str, str] | None = None) -> CliResult:
    """Run ``ftops`` in a subprocess (the console script's module), as users and checks do."""
    proc = subprocess.run(
        [sys.executable, "-m", "ft_core.cli.main", *map(str, args)],
        capture_output=True, text=True, timeout=timeout, cwd=ROOT,
        env={**os.environ, **(env or {})},
    )
    return CliResult(proc)


def assert_plot(path: Path, report: str, *texts: str) -> None:
    """A benchmark's plot: a well-formed SVG file beside its report, linked from the report's Markdown, that
    shows ``texts`` (title, axis and series labels; matplotlib keeps each text as a comment in the SVG)."""
    assert ET.parse(path).getroot().tag == "{http://www.w3.org/2000/svg}svg", path
    assert f"]({path.name})" in report, f"{path.name} is not linked from the report"
    svg = path.read_text()
    missing = [t for t in texts if f"<!-- {t} -->" not in svg]
    assert not missing, f"{path.name} lacks {missing}"


@pytest.fixture
def cli():
    return run_cli


@pytest.fixture
def samples() -> Path:
    return SAMPLES
