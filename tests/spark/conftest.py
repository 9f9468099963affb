"""Shared fixtures of the Spark tests."""

from __future__ import annotations

import os
from pathlib import Path

import pytest


@pytest.fixture(scope="module")
def spark():
    """An in-process local[2] Spark session for the module (jobs run with ``spark=`` on it)."""
    from spark_jobs.runtime.run_pipeline import JobConfig, make_session

    os.environ["SPARK_LOCAL_IP"] = "127.0.0.1"
    session = make_session(JobConfig("topk", "primary", Path("."), Path("."), master="local[2]"))
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()
