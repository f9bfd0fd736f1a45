"""Analyse run directories on Spark into report/summary.json, series.json and <metric>.hgrm.

    python -m sixnines.spark_jobs.analyze [--master local[*]] [--window M] RUN_DIR [RUN_DIR ...]

The one module of spark_jobs that imports pyspark: the session, the scheduler that runs
the agents' tasks as Spark jobs, and this command line. Everything else of the analysis
(the per-agent passes, the per-run merge, the checks and the report writer) is plain
Python the sidecar runs without Spark (tests/test_analysis_without_spark.py keeps it so).

All run dirs are analysed together, in one Spark session: two Spark jobs of per-agent
passes whatever the number of runs or agents (spark_jobs.run_merge), each task reading
its agents' files in order and returning small results (HDR buckets, a row per stream,
counts, ≤ 2,000-point curves); each run's report is written from its own (a run whose
analysis fails when they go together is tried alone, so it costs only its own report).
Agents are grouped into about TASKS_PER_CORE tasks per core, balanced by their records,
so a scenario of hundreds of small agents costs a few tasks, not hundreds. Executors run
sixnines' own Python: a cluster's workers need Python with sixnines, numpy and pyarrow
installed (docs/running.md, "The analysis: embedded or on a Spark
cluster"); a local master runs this process' Python.

Embedded `local[*]` is the default (a laptop or the controller host); the same session
takes a cluster master ("spark://host:port", "yarn", "k8s://…") so nothing changes when
the data outgrows one machine. The work runs in Python workers, so the JVM only schedules
tasks and carries their small results.

`--window M` is the number of messages the overhead and throughput of a stream are taken
over; without it, the run's own (the scenario's `throughput_window`, recorded in its
manifest; 100 for manifests without one). One JSON line per run on stdout: {"run_dir",
"summary": path, "status"}, or {"run_dir", "error": one line} when its analysis failed
(a report file that could not be written: the file and why). Exit status: 0 all analysed,
1 some run failed or is corrupt (the others still get their reports; spark_jobs.run_report
says what a corrupt run's summary holds), 2 bad usage or a run dir without a manifest.
"""

from __future__ import annotations

import argparse
import functools
import json
import logging
import os
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, TypeVar

from pyspark.sql import SparkSession

from sixnines.formats import integrity
from sixnines.formats.atomic import WriteFailure
from sixnines.formats.layout import MANIFEST_FILE, REPORT_DIR, SUMMARY_FILE
from sixnines.formats.status import CORRUPT
from sixnines.formats.summary import RunSummary
from sixnines.spark_jobs import series
from sixnines.spark_jobs.run_merge import Scheduler
from sixnines.spark_jobs.run_report import (
    Outcome,
    Schedulers,
    analyze_all,
    log,
)

TASKS_PER_CORE = 2

Item = TypeVar("Item")
Result = TypeVar("Result")

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
    and its workers need a Python with sixnines (docs/running.md, "The analysis:
    embedded or on a Spark cluster").
    """
    local = master.startswith("local")
    if local:
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
        # The passes' tasks run sixnines' own code (spark_jobs.agent_pass): in this Python.
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


def _groups(weights: Sequence[int], tasks: int) -> list[list[int]]:
    """Item indices in `tasks` groups of about equal weight (largest first, each to the
    lightest group)."""
    loads = [0] * tasks
    chosen: list[list[int]] = [[] for _ in range(tasks)]
    for index in sorted(range(len(weights)), key=lambda i: -weights[i]):
        lightest = loads.index(min(loads))
        chosen[lightest].append(index)
        loads[lightest] += weights[index] + 1
    return [group for group in chosen if group]


def on_spark(spark: SparkSession) -> Scheduler:
    """A scheduler running the items in one Spark job of about TASKS_PER_CORE tasks per
    core (items grouped by weight)."""
    def run(function: Callable[[Item], Result], items: list[Item], weights: Sequence[int]
            ) -> list[Result]:
        if not items:
            return []
        parallelism = spark.sparkContext.defaultParallelism
        groups = _groups(weights, min(len(items), TASKS_PER_CORE * parallelism))
        batches = [[items[i] for i in group] for group in groups]
        results = (spark.sparkContext.parallelize(batches, len(batches))
                   .map(lambda batch: [function(item) for item in batch]).collect())
        ordered: list[Any] = [None] * len(items)
        for group, found in zip(groups, results, strict=True):
            for index, result in zip(group, found, strict=True):
                ordered[index] = result
        return ordered
    return run


def _schedulers(master: str) -> Schedulers:
    """The scheduler on the command's one session, started when first asked for (a run
    passed its checks)."""
    return functools.cache(lambda: on_spark(spark_session(master)))


def _summary(outcome: Outcome) -> RunSummary:
    if isinstance(outcome, Exception):
        raise outcome
    return outcome


def analyze_run(spark: SparkSession, run_dir: Path, window: int | None = None
                ) -> dict[str, Any]:
    """Analyse one run dir, write its report files and return the summary as written,
    its JSON object (status corrupt, without figures, when its files fail their
    checks)."""
    return _summary(analyze_all(lambda: on_spark(spark), [Path(run_dir)], window)[0]).as_json()


def _check(run_dirs: list[Path]) -> None:
    """Each is a run directory: one whose manifest is no file is refused by its checks."""
    missing = [str(d) for d in run_dirs if not os.path.lexists(Path(d) / MANIFEST_FILE)]
    if missing:
        raise FileNotFoundError(f"no {MANIFEST_FILE} in: {', '.join(missing)}")


def analyze_runs(run_dirs: list[Path], master: str = "local[*]",
                 window: int | None = None) -> list[dict[str, Any]]:
    """Analyse the run dirs together in one Spark session (an active one is reused, not
    stopped; none is started when no run passes its checks); their summaries as written
    (the first failure raised)."""
    run_dirs = [Path(d) for d in run_dirs]
    _check(run_dirs)
    return [_summary(outcome).as_json()
            for outcome in analyze_all(_schedulers(master), run_dirs, window)]


def _error_line(error: Exception) -> str:
    """One line on why a run's analysis failed: a Spark error's Java message, not the
    Python wrapper's ("An error occurred while calling o513…") nor the stack trace."""
    if isinstance(error, WriteFailure):  # a full disk: the file is named, no trace needed
        return str(error)
    java = getattr(error, "java_exception", None)
    text = integrity.first_line(str(java if java is not None else error))
    return f"{type(error).__name__}: {text}"


def _result(run_dir: Path, outcome: Outcome) -> dict[str, Any]:
    """The JSON result line of one run: its summary's path and status, or its error."""
    if isinstance(outcome, Exception):
        log.error("%s: %s", run_dir, _error_line(outcome))
        return {"run_dir": str(run_dir), "error": _error_line(outcome)}
    return {"run_dir": str(run_dir), "summary": str(run_dir / REPORT_DIR / SUMMARY_FILE),
            "status": outcome.status}


def _window(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be a whole number of messages ≥ 1: {text}")
    return value


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m sixnines.spark_jobs.analyze",
                                     description=__doc__.splitlines()[0])
    parser.add_argument("--master", default="local[*]", help="Spark master (default local[*])")
    parser.add_argument("--window", type=_window, metavar="M",
                        help="messages per overhead/throughput window (default: each run's "
                        f"own, else {series.DEFAULT_WINDOW})")
    parser.add_argument("run_dirs", nargs="+", type=Path, metavar="RUN_DIR")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr,
                        format="%(asctime)s %(name)s %(message)s")
    log.setLevel(logging.INFO)
    try:
        _check(args.run_dirs)
    except FileNotFoundError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    schedulers = _schedulers(args.master)
    try:
        results = [_result(run_dir, outcome) for run_dir, outcome in
                   zip(args.run_dirs, analyze_all(schedulers, args.run_dirs, args.window),
                       strict=True)]
    finally:
        active = SparkSession.getActiveSession()
        if active is not None:
            active.stop()
    for result in results:
        print(json.dumps(result), flush=True)
    return 1 if any("error" in r or r["status"] == CORRUPT for r in results) else 0


if __name__ == "__main__":
    sys.exit(main())
