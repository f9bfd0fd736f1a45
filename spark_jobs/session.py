"""One place that knows how to start Spark for sixnines' analysis jobs.

Embedded `local[*]` is the default (a laptop or the controller host); the same builder takes
a cluster master ("spark://host:port", "yarn", ...) so the jobs do not change when the data
outgrows one machine.
"""

from __future__ import annotations

import os

from pyspark.sql import SparkSession

LOCAL_SHUFFLE_PARTITIONS = 8  # Spark's default 200 makes tiny local jobs spend seconds on tasks
HEAP_SHARE = 4  # a local JVM takes 1/HEAP_SHARE of the machine's memory ...
HEAP_MIN_MB, HEAP_MAX_MB = 1024, 16 * 1024  # ... within these bounds


def local_heap() -> str:
    """The local JVM's heap: Spark's 1 GB default cannot sort one 100M-message stream before
    the window pass (it spills into more files than it can read back), and a local job has
    the machine to itself. A heap the user set (PYSPARK_SUBMIT_ARGS --driver-memory, or
    SPARK_DRIVER_MEMORY) wins: this only fills in the default."""
    total_mb = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") // 2**20
    return f"{min(max(total_mb // HEAP_SHARE, HEAP_MIN_MB), HEAP_MAX_MB)}m"


def heap_given() -> bool:
    return ("--driver-memory" in os.environ.get("PYSPARK_SUBMIT_ARGS", "")
            or "SPARK_DRIVER_MEMORY" in os.environ)


def spark_session(master: str = "local[*]", app_name: str = "sixnines") -> SparkSession:
    """A (possibly shared, already running) session, quiet, UI off, Arrow on.

    Settings that only make sense on one machine (loopback binding, few shuffle partitions,
    a heap sized to the machine) apply to `local` masters only; a cluster keeps its own
    defaults.
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
        if not heap_given():  # read when the JVM starts: no effect on a running session
            builder = builder.config("spark.driver.memory", local_heap())
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("WARN")
    return spark
