"""One place that knows how to start Spark for sixnines' analysis jobs.

Embedded `local[*]` is the default (a laptop or the controller host); the same builder takes
a cluster master ("spark://host:port", "yarn", "k8s://…") so the jobs do not change when the
data outgrows one machine. Spark schedules the analysis' per-agent passes
(spark_jobs.passes); the work runs in Python workers, so the JVM only schedules tasks and
carries their small results.
"""

from __future__ import annotations

import os
import sys

from pyspark.sql import SparkSession

#: The JVM of a local master only schedules the passes: the client compiler alone and the
#: serial GC leave the cores to the Python workers (docs/performance.md: the 6.6M-record
#: run 12.5 → 11.1 s, the quickstart's analysis quicker to start). C1 alone keeps the code
#: cache at its 48 MB non-tiered default, which a JVM running many jobs fills ("Out of
#: space in CodeCache", as the test suite's did): 256 MB, as tiered.
LEAN_JVM = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC -XX:ReservedCodeCacheSize=256m"


def _java_options_given() -> bool:
    """Options the user gave (spark.driver.extraJavaOptions in PYSPARK_SUBMIT_ARGS) win."""
    return "extraJavaOptions" in os.environ.get("PYSPARK_SUBMIT_ARGS", "")


def spark_session(master: str = "local[*]", app_name: str = "sixnines") -> SparkSession:
    """A (possibly shared, already running) session, quiet, UI off.

    Settings that only make sense on one machine (loopback binding, the lean JVM, the
    workers running this Python) apply to `local` masters only; a cluster keeps its own,
    and its workers need a Python with sixnines (README, "Across machines").
    """
    local = master.startswith("local")
    if local:
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
        # The passes' tasks run sixnines' own code (spark_jobs.passes): in this Python.
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    builder = (
        SparkSession.builder.master(master)
        .appName(app_name)
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.session.timeZone", "UTC")
    )
    if local:
        builder = builder.config("spark.driver.bindAddress", "127.0.0.1")
        if not _java_options_given():  # read when the JVM starts: no effect on a running one
            builder = builder.config("spark.driver.extraJavaOptions", LEAN_JVM)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("WARN")
    return spark
