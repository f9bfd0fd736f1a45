"""One place that knows how to start Spark for sixnines' analysis jobs.

Embedded `local[*]` is the default (a laptop or the controller host); the same builder takes
a cluster master ("spark://host:port", "yarn", ...) so the jobs do not change when the data
outgrows one machine.
"""

from __future__ import annotations

import os

from pyspark.sql import SparkSession

LOCAL_SHUFFLE_PARTITIONS = 8  # Spark's default 200 makes tiny local jobs spend seconds on tasks


def spark_session(master: str = "local[*]", app_name: str = "sixnines") -> SparkSession:
    """A (possibly shared, already running) session, quiet, UI off, Arrow on.

    Settings that only make sense on one machine (loopback binding, few shuffle partitions)
    apply to `local` masters only; a cluster keeps its own defaults.
    """
    local = master.startswith("local")
    if local:
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    builder = (
        SparkSession.builder.master(master)
        .appName(app_name)
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.execution.arrow.pyspark.enabled", "true")
        .config("spark.sql.session.timeZone", "UTC")
    )
    if local:
        builder = builder.config("spark.sql.shuffle.partitions", str(LOCAL_SHUFFLE_PARTITIONS))
        builder = builder.config("spark.driver.bindAddress", "127.0.0.1")
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("WARN")
    return spark
