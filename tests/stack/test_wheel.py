"""The wheel runs where users run it: built from this tree, installed outside the checkout (tests/stack/installed_wheel.py).

The installed package migrates a real PostgreSQL with the migrations it carries, plans, gives Airflow
its four DAGs through ``ftops dags install``, finds the stream launcher it submits to Spark inside
itself, and keeps its state under ``~/.ftops``. About a minute, most of it Airflow importing.
"""

from __future__ import annotations

import json
from pathlib import Path

import psycopg2
import pytest

from tests.conftest import ROOT
from tests.store_fixtures import pg_server  # noqa: F401 - fixture

DAG_IDS = ["ftops_chaos_drill", "ftops_checkpoint_tuning", "ftops_fleet_recovery", "ftops_fleet_watch",
           "ftops_incremental_recovery", "ftops_profile_and_plan", "ftops_safety_net"]
PACKAGES = ("ft_core", "spark_jobs", "plugins/ftops_provider")


def _git_files(folder: str) -> list[Path]:
    import subprocess

    out = subprocess.run(["git", "ls-files", "--cached", "--others", "--exclude-standard", folder], cwd=ROOT,
                         capture_output=True, text=True, check=True).stdout.split()
    return [Path(p) for p in out]


def test_the_wheel_carries_every_file_of_the_packages(installed_wheel):
    names = installed_wheel.names()
    wanted = {str(p.relative_to("plugins") if p.parts[0] == "plugins" else p)
              for folder in PACKAGES for p in _git_files(folder)
              if p.suffix in (".py", ".sql", ".json", ".yaml") and "tests" not in p.parts}
    # the console's templates, styles and scripts, and the vendored charting library with its licence
    wanted |= {str(p.relative_to("plugins")) for p in _git_files("plugins/ftops_provider/ui")
               if p.suffix in (".html", ".css", ".js", ".LICENSE")}
    assert wanted - names == set()
    assert {n for n in names if n.startswith("ft_core/store/sql/")} == {
        f"ft_core/store/sql/{p.name}" for p in (ROOT / "ft_core" / "store" / "sql").glob("*.sql")}
    assert {n.split("/")[-1] for n in names if n.startswith("ftops_provider/dags/")} >= {f"{d}.py" for d in DAG_IDS}
    assert not [n for n in names if n.startswith(("tests/", "dags/"))]


@pytest.fixture
def wheel_database(pg_server):  # noqa: F811 - the store fixture
    """A database of its own on the test server (other tests empty the ftops database between tests)."""
    conn = psycopg2.connect(pg_server.url())
    conn.autocommit = True
    with conn.cursor() as cur:
        cur.execute("DROP DATABASE IF EXISTS ftops_wheel_test")
        cur.execute("CREATE DATABASE ftops_wheel_test OWNER ftops")
    conn.close()
    yield pg_server.url().rsplit("/", 1)[0] + "/ftops_wheel_test"


def test_the_installed_wheel_migrates_postgresql_and_plans(installed_wheel, wheel_database):
    assert installed_wheel.run("ftops", "--version").stdout.strip() == "ftops 0.1.0"
    upgraded = installed_wheel.run("ftops", "db", "upgrade", "--json", FTOPS_DATABASE_URL=wheel_database)
    assert upgraded.returncode == 0, upgraded.stdout + upgraded.stderr
    migrations = sorted(int(p.name[:3]) for p in (ROOT / "ft_core" / "store" / "sql").glob("*.sql"))
    assert json.loads(upgraded.stdout)["applied"] == migrations
    assert json.loads(upgraded.stdout)["schema_version"] == migrations[-1]

    sample = installed_wheel.site_packages() / "ft_core" / "samples" / "q1-topk.json"
    plan = installed_wheel.run("ftops", "plan", "replication", sample, "--budget", "3", "--json")
    assert plan.returncode == 0, plan.stderr
    assert json.loads(plan.stdout)["tasks"] == ["O1[0]", "O2[0]", "O3[0]"]


PROBE = """
import json, sys
from airflow.dag_processing.dagbag import DagBag
from ft_core.home import ftops_home
from ftops_provider.dags import ftops_checkpoint_tuning, ftops_incremental_recovery
from ftops_provider.operators.streams import LAUNCHER
from spark_jobs.runtime import run_pipeline

bag = DagBag(dag_folder=sys.argv[1])
print(json.dumps({"import_errors": {k: v[-300:] for k, v in bag.import_errors.items()}, "dag_ids": sorted(bag.dag_ids),
                  "launcher": LAUNCHER, "run_pipeline": run_pipeline.__file__, "home": str(ftops_home()),
                  "profiling": ftops_checkpoint_tuning.WORK_DIR, "units": ftops_incremental_recovery.DEFAULT_UNITS_DIR}))
"""


def test_airflow_parses_the_installed_dags_and_the_launcher_is_in_the_package(installed_wheel):
    dags = installed_wheel.work / "dags"
    dags.mkdir()
    installed = installed_wheel.run("ftops", "dags", "install", "--dags-folder", dags)
    assert installed.returncode == 0, installed.stderr
    proc = installed_wheel.run("python", "-c", PROBE, dags, AIRFLOW__CORE__DAGS_FOLDER=str(dags))
    assert proc.returncode == 0, proc.stderr[-3000:]
    found = json.loads(proc.stdout.strip().splitlines()[-1])
    assert found["import_errors"] == {} and found["dag_ids"] == DAG_IDS

    site = installed_wheel.site_packages()
    for key in ("launcher", "run_pipeline"):  # the files spark-submit runs
        assert Path(found[key]).is_file() and Path(found[key]).is_relative_to(site), found[key]
    home = installed_wheel.home / ".ftops"
    assert found["home"] == str(home)
    assert found["profiling"] == str(home / "profiling") and found["units"] == str(home / "units" / "smartcity")
    # spark-submit runs the launcher as a script, from wherever it is: its imports resolve in the installed package
    usage = installed_wheel.run("python", found["launcher"], "--help")
    assert usage.returncode == 0 and "units-stage" in usage.stdout, usage.stderr
