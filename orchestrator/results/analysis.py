"""Handing recorded runs to the analysis (spark_jobs.analyze) and getting their
summaries back: the Spark job in its own process, its log beside the results, and a
summary for every run — from its manifest for one the analysis could not give (nothing
recorded, its analysis failed)."""

from __future__ import annotations

import json
import logging
import os
import sys
from pathlib import Path
from typing import BinaryIO

from sixnines.formats.errors import BadInput
from sixnines.formats.layout import REPORT_DIR, SUMMARY_FILE
from sixnines.formats.pruned import read_pruned
from sixnines.formats.run_files import RefusedPath, file_under
from sixnines.formats.status import CORRUPT, FAILED
from sixnines.formats.summary import RunSummary
from sixnines.orchestrator.launchers.local import run_guarded
from sixnines.orchestrator.results.store import manifest_or_problem, read_summary
from sixnines.orchestrator.results.summaries import SummaryRefused, read_run_summary


class AnalysisError(BadInput):
    pass


def analyse(run_dirs: list[Path], spark_master: str, log_path: Path,
            window: int | None = None) -> list[RunSummary]:
    """Run the Spark job over the runs (one session for all) and return their summaries.

    The job runs in its own process: a JVM crash or memory blow-up there cannot take the
    controller down, and the same entry point is what spark-submit runs on a cluster. It
    never outlives the controller: an interrupt stops it, and so does the controller's
    death (launchers.guard). Runs that failed outright recorded nothing: they are
    summarised from their manifests. A manifest that cannot be read goes to the job too,
    which refuses it in one line (status corrupt, formats.integrity). A run whose raw
    records were pruned (formats.pruned) keeps the summary its analysis made before.
    """
    kept = {run_dir: summary for run_dir in run_dirs
            if (summary := kept_analysis(run_dir)) is not None}
    recorded = [d for d in run_dirs if d not in kept and _recorded(d)]
    results = _run_spark_job(recorded, spark_master, log_path, window) if recorded else {}
    summaries = []
    for run_dir in run_dirs:
        result = results.get(run_dir, {})
        if run_dir in kept:
            summaries.append(kept[run_dir])
        elif "summary" in result:
            summaries.append(read_summary(Path(result["summary"])))
        elif run_dir not in recorded:
            summaries.append(_unanalysed(run_dir, None))
        else:
            error = result.get("error", "the analysis did not finish")
            summaries.append(_unanalysed(run_dir, f"analysis failed: {error}; see {log_path}; "
                                         f"`sixnines report {run_dir}` analyses it again"))
    return summaries


def kept_analysis(run_dir: Path) -> RunSummary | None:
    """A pruned run's summary as its analysis wrote it, saying it was pruned; None for a
    run not pruned, or whose summary cannot be read (the analysis then names why it
    cannot be analysed again)."""
    pruned = read_pruned(run_dir)
    if pruned is None:
        return None
    try:
        summary = read_run_summary(file_under(run_dir, REPORT_DIR, SUMMARY_FILE))
    except (SummaryRefused, RefusedPath):
        return None
    note = pruned.note()
    return summary if note in summary.notes else \
        summary.model_copy(update={"notes": [*summary.notes, note]})


def _recorded(run_dir: Path) -> bool:
    """Whether the run is the analysis's to look at: anything but a run its manifest says
    failed (one that cannot be read goes too: the analysis refuses it in one line)."""
    manifest, _ = manifest_or_problem(run_dir)
    return manifest is None or manifest.status != FAILED


def _run_spark_job(run_dirs: list[Path], spark_master: str, log_path: Path,
                   window: int | None) -> dict:
    """{run_dir: {"summary": path} or {"error": text}} from the job's JSON result lines."""
    argv = [sys.executable, "-m", "sixnines.spark_jobs.analyze", "--master", spark_master,
            *(["--window", str(window)] if window else []),
            *map(str, run_dirs)]
    env = {**os.environ, "SPARK_LOCAL_IP": os.environ.get("SPARK_LOCAL_IP", "127.0.0.1")}
    log_path.parent.mkdir(parents=True, exist_ok=True)
    logging.getLogger(__name__).info("analysis: %s (its log: %s)", " ".join(argv), log_path)
    with _log_file(log_path) as log:  # an interrupt stops the job (and its JVM): see above
        _, output = run_guarded(argv, env, None, stderr=log)
    results = {}
    for line in output.splitlines():
        try:
            result = json.loads(line)
            results[Path(result["run_dir"])] = result
        except (ValueError, KeyError, TypeError):
            continue
    return results


def _log_file(path: Path) -> BinaryIO:
    """The analysis log, opened to append. The results directory may have come from
    anywhere: a link or a FIFO in its place is removed, never written through or waited
    on."""
    if path.is_symlink() or (path.exists() and not path.is_file()):
        try:
            path.unlink()
        except OSError as error:
            raise AnalysisError(f"{path}: {error.strerror}; it cannot be the analysis "
                                "log") from None
    flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC
    return open(os.open(path, flags, 0o644), "ab")


def _unanalysed(run_dir: Path, problem: str | None) -> RunSummary:
    """A run without an analysis: failed, or corrupt when its manifest cannot be read."""
    manifest, unusable = manifest_or_problem(run_dir)
    known = dict(run_id=run_dir.name, system=None, params={}) if manifest is None else \
        dict(run_id=manifest.run_id or run_dir.name, system=manifest.system,
             params=manifest.params, repeat=manifest.repeat, durability=manifest.durability)
    return RunSummary(**known, status=CORRUPT if unusable else FAILED,
                      problems=[*(manifest.problems if manifest else []),
                                *(line for line in (unusable, problem) if line)])
