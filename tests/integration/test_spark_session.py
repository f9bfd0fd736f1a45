"""A local session runs the analysis' tasks (spark_jobs.agent_pass) in this Python: the one
with sixnines installed, not whatever `python3` is first on the PATH."""

from __future__ import annotations

import sys


def _prefix(_: int) -> tuple[str, str]:
    import sixnines.spark_jobs.agent_pass  # what every task of the passes imports

    return sys.prefix, sixnines.spark_jobs.agent_pass.__name__


def test_local_tasks_run_in_this_python(spark):
    found = spark.sparkContext.parallelize([0, 1], 2).map(_prefix).collect()
    assert found == [(sys.prefix, "sixnines.spark_jobs.agent_pass")] * 2
