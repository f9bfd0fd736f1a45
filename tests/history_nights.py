"""Nights for the history's tests: real small runs recorded with `sixnines run` (once per
test session), copied under a root as the nights of a nightly job, one slowed on purpose
where a test needs a change, and `sixnines history` run as a user runs it."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pyarrow.parquet as pq

from sixnines.formats.layout import (
    HISTORY_CSV,
    HISTORY_DIR,
    HISTORY_TABLE,
    REPORT_DIR,
    SUMMARY_FILE,
    hgrm_file,
)
from tests.faults.support import analysed, sixnines, unsteady_steadiness

#: Two runs a night (a swept size: a case each), 1,000 messages each through the relay.
NIGHTLY = """
name: nightly
systems: [{name: tcp, driver: tcp}]
workload: {message_size: [64, 128], rate: 1000, duration: 1s, warmup: 0s}
"""
RUNS, FIGURES = 2, 10  # runs a night, figures a run (8 latency, 2 rates)
LATENCY_KEYS = ("p50", "p90", "p99", "p99.9", "p99.99", "p99.999", "p99.9999", "max", "mean",
                "lower_median")


def recorded(tmp_path_factory, count: int = 2) -> list[Path]:
    """`count` real analysed results directories of NIGHTLY, recorded once per session."""
    where = tmp_path_factory.getbasetemp() / "history-recorded"
    nights = [where / f"night-{number}" for number in range(count)]
    for night in nights:
        if not (night / "done").exists():
            shutil.rmtree(night, ignore_errors=True)
            results = analysed(night, NIGHTLY)
            (night / "done").write_text(str(results))
    return [Path((night / "done").read_text()) for night in nights]


def recorded_repeated(tmp_path_factory) -> Path:
    """A real analysed results directory of NIGHTLY with each case run 3 times, recorded
    once per session."""
    where = tmp_path_factory.getbasetemp() / "history-repeated"
    if not (where / "done").exists():
        shutil.rmtree(where, ignore_errors=True)
        results = analysed(where, NIGHTLY + "repeat: 3\n")
        (where / "done").write_text(str(results))
    return Path((where / "done").read_text())


def night(source: Path, root: Path, day: int, name: str | None = None) -> Path:
    """A copy of the results directory `source` (without the agents' records, which the
    history does not read) as night `day` of November under `root`/nightly/."""
    dest = root / "nightly" / (name or f"202611{day:02d}-020000")
    shutil.copytree(source, dest, ignore=shutil.ignore_patterns("agents"))
    return dest


def slowed(results: Path, factor: float) -> Path:
    """Every run of `results` made `factor` times slower, as a slower system would be:
    its latency figures in summary.json and the values of its latency.hgrm."""
    path = results / SUMMARY_FILE
    summary = json.loads(path.read_text())
    for run in summary["runs"]:
        figures = run["latency_us"]
        figures.update({key: figures[key] * factor for key in LATENCY_KEYS
                        if figures.get(key) is not None})
        hgrm = results / run["run_id"] / REPORT_DIR / hgrm_file("latency")
        hgrm.write_text("".join(_scaled(line, factor)
                                for line in hgrm.read_text().splitlines(keepends=True)))
    path.write_text(json.dumps(summary, indent=2))
    return results


def made_unsteady(results: Path) -> Path:
    """Every run of `results` unsteady, as the analysis says of a run whose own seconds
    disagreed on p99."""
    path = results / SUMMARY_FILE
    summary = json.loads(path.read_text())
    for run in summary["runs"]:
        run["steadiness"] = unsteady_steadiness(run["latency_us"]["p99"])
    path.write_text(json.dumps(summary, indent=2))
    return results


def _scaled(line: str, factor: float) -> str:
    """A percentile line of a .hgrm with its value times `factor`; other lines as they are."""
    parts = line.split(maxsplit=1)
    try:
        return f"{float(parts[0]) * factor:12.3f} {parts[1]}"
    except (IndexError, ValueError):
        return line


def history(*args: str | Path) -> subprocess.CompletedProcess:
    """`sixnines history ARGS` in its own process."""
    return sixnines("history", *args)


def store_rows(root: Path) -> list[dict]:
    """The rows of the store in `root`'s default place."""
    return pq.read_table(root / HISTORY_DIR / HISTORY_TABLE).to_pylist()


def csv_path(root: Path) -> Path:
    return root / HISTORY_DIR / HISTORY_CSV
