"""Shared fixtures: one Spark session for the whole test run (JVM start-up costs ~10 s),
and, after every test, the summaries and manifests it left checked against the shipped JSON
Schemas (tests/result_schemas.py)."""

from __future__ import annotations

import os

import pytest

from tests.result_schemas import unchecked_problems


@pytest.fixture(scope="session")
def spark():
    """A local Spark session shared by every Spark test, stopped at the end."""
    pytest.importorskip("pyspark")
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    from sixnines.spark_jobs.session import spark_session

    session = spark_session("local[2]", app_name="sixnines-tests")
    yield session
    session.stop()


@pytest.fixture(autouse=True)
def _results_follow_their_schemas(request, tmp_path_factory):
    """Every summary.json and manifest.json a test leaves under the temporary directories
    validates against docs/summary.schema.json and docs/manifest.schema.json (an error at
    the test's teardown names the file and what breaks the schema)."""
    yield
    if request.node.get_closest_marker("unchecked_results") is None:
        problems = unchecked_problems(tmp_path_factory.getbasetemp())
        if problems:
            pytest.fail("results that break their shipped JSON Schema:\n"
                        + "\n".join(problems), pytrace=False)
