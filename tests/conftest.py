"""Shared fixtures: one Spark session for the whole test run (JVM start-up costs ~10 s)."""

from __future__ import annotations

import os

import pytest


@pytest.fixture(scope="session")
def spark():
    """A local Spark session shared by every Spark test, stopped at the end."""
    pytest.importorskip("pyspark")
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    from sixnines.spark_jobs.session import spark_session

    session = spark_session("local[2]", app_name="sixnines-tests")
    yield session
    session.stop()
