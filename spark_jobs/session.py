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
#: A local JVM analysing fewer records than this starts with QUICK_START_JVM (`quick_start`).
QUICK_START_MAX_ROWS = 1_000_000
#: C1 alone keeps the code cache at its 48 MB non-tiered default, which a JVM running many
#: jobs fills ("Out of space in CodeCache", as the test suite's did): 256 MB, as tiered.
QUICK_START_JVM = ("-XX:TieredStopAtLevel=1 -XX:+UseSerialGC "
                   "-XX:ReservedCodeCacheSize=256m")


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


def quick_start(input_rows: int | None) -> bool:
    """Whether a local JVM about to analyse `input_rows` records should start lean: with
    the default tiered compiler and parallel GC it spends cores compiling and collecting
    that a small analysis needs for itself; the client compiler alone and the serial GC
    made the quickstart's analysis (80k records, JVM start included) about a quarter
    quicker on two cores. The client compiler's code is slower, though: 6.6M records took
    70 % longer (docs/performance.md), so larger inputs keep the default. Options the user
    gave (spark.driver.extraJavaOptions in PYSPARK_SUBMIT_ARGS) win."""
    given = "extraJavaOptions" in os.environ.get("PYSPARK_SUBMIT_ARGS", "")
    return input_rows is not None and input_rows < QUICK_START_MAX_ROWS and not given


def spark_session(master: str = "local[*]", app_name: str = "sixnines",
                  input_rows: int | None = None) -> SparkSession:
    """A (possibly shared, already running) session, quiet, UI off, Arrow on.

    Settings that only make sense on one machine (loopback binding, few shuffle partitions,
    a heap sized to the machine, a lean JVM for a small analysis: `quick_start` of
    `input_rows`, the records to analyse when known) apply to `local` masters
    only; a cluster keeps its own defaults.
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
        # The analysis caches its input for the passes over it (spark_jobs.analyze):
        # compressing the cached columns took longer than every pass then saved (6.6M
        # records: 9.7 s against 5.7 s to fill; docs/performance.md).
        .config("spark.sql.inMemoryColumnarStorage.compressed", "false")
        # The record files are named one by one (spark_jobs.frames): above this many,
        # Spark lists them in a job of a task per file, slower than the driver's listing.
        .config("spark.sql.sources.parallelPartitionDiscovery.threshold", "1000000")
    )
    if local:
        builder = builder.config("spark.sql.shuffle.partitions", str(LOCAL_SHUFFLE_PARTITIONS))
        builder = builder.config("spark.driver.bindAddress", "127.0.0.1")
        if not heap_given():  # read when the JVM starts: no effect on a running session
            builder = builder.config("spark.driver.memory", local_heap())
        if quick_start(input_rows):  # likewise
            builder = builder.config("spark.driver.extraJavaOptions", QUICK_START_JVM)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("WARN")
    return spark
