"""The test tiers (issue 37): ``make check`` runs the tests that need neither a JVM nor Airflow processes, and a
test that starts one there fails, named, instead of making the quick tier slow (tests/check_tier.py). Checked on
a small suite of its own, run by pytest with the suite's conftest as its plugin."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

from tests.conftest import ROOT

SUITE = '''
import subprocess, sys

import pytest


def test_quick():
    assert sum(range(4)) == 6


def test_starts_a_jvm_and_ignores_that_it_failed():
    subprocess.run(["java", "-version"], capture_output=True)


def test_starts_spark():
    from pyspark.sql import SparkSession

    SparkSession.builder.master("local[1]").getOrCreate()


def test_starts_airflow_and_ignores_that_it_failed():
    subprocess.run([sys.executable, "-m", "airflow", "version"], capture_output=True, timeout=120)


@pytest.mark.full
def test_marked_full():
    subprocess.run(["java", "-version"], check=True)
'''


def _run(tmp_path, tier: str) -> subprocess.CompletedProcess:
    (tmp_path / "test_suite.py").write_text(textwrap.dedent(SUITE))
    env = {**os.environ, "FTOPS_TEST_TIER": tier, "PYTHONPATH": str(ROOT), "JDK_JAVA_OPTIONS": "-XX:+UseSerialGC"}
    return subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "tests.conftest", "-p", "no:cacheprovider",
                           "-rfE", "test_suite.py"], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)


def test_the_check_tier_leaves_out_full_tests_and_fails_a_test_that_starts_a_jvm_or_airflow(tmp_path):
    res = _run(tmp_path, "check")
    out = res.stdout
    assert res.returncode == 1, out
    assert "1 deselected" in out  # the test marked full
    assert "PASSED" not in out and "test_quick" not in out.split("short test summary")[-1]
    summary = out.split("short test summary")[-1]
    failed = {line.split("::")[1].split()[0] for line in summary.splitlines() if line.startswith(("FAILED", "ERROR"))}
    assert failed == {"test_starts_a_jvm_and_ignores_that_it_failed", "test_starts_spark",
                      "test_starts_airflow_and_ignores_that_it_failed"}, out
    assert "make check starts no JVM and no Airflow, and this test started java -version: mark it @pytest.mark.full" in out
    assert "-m airflow version" in out


def test_an_unknown_tier_is_refused(tmp_path):
    res = _run(tmp_path, "quick")
    assert res.returncode != 0 and "FTOPS_TEST_TIER='quick': full (make test) or check (make check)" in res.stderr + res.stdout
