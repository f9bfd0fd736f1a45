"""Handing the recorded runs to the Spark analysis and presenting what comes back: the
results-level summary.json (formats.summary; the output contract in the README) and the
console tables."""

from __future__ import annotations

import csv
import json
import logging
import os
import sys
from pathlib import Path
from typing import Any, BinaryIO

from rich.console import Console
from rich.table import Table

from sixnines.formats.atomic import atomic_path, write_atomically
from sixnines.formats.controller_lock import holder
from sixnines.formats.errors import BadInput
from sixnines.formats.hdr import PERCENTILE_KEYS
from sixnines.formats.integrity import Damaged, read_manifest
from sixnines.formats.manifest import Manifest
from sixnines.formats.status import CORRUPT, FAILED
from sixnines.formats.summary import CapacityResult, Figures, ResultsSummary, RunSummary
from sixnines.orchestrator.launchers.local import run_guarded
from sixnines.orchestrator.results.load import latency_of, run_load, saturation
from sixnines.orchestrator.run.manifest import MANIFEST_FILE
from sixnines.orchestrator.terminal import markup

SUMMARY_FILE = "summary.json"
CSV_FILE = "summary.csv"
CSV_COUNTS = ("sent", "received", "delivered", "lost", "unknown", "duplicated", "reordered",
              "send_rate", "receive_rate")
CSV_METRICS = (("latency_us", "latency"), ("service_time_us", "service_time"),
               ("send_lag_us", "send_lag"), ("saturation_latency_us", "saturation_latency"))
METRICS = (("latency_us", "latency"), ("service_time_us", "service"),
           ("send_lag_us", "send lag"))
FIGURE_KEYS = (*PERCENTILE_KEYS, "max")
CSV_FIGURES = (*FIGURE_KEYS, "mean")
#: a receiver's time − a producer's
CROSS_CLOCK_METRICS = ("latency_us", "service_time_us", "saturation_latency_us")


class AnalysisError(BadInput):
    pass


def find_run_dirs(path: Path) -> list[Path]:
    """A run directory itself, or every run directory inside a results directory; refused
    (exit 2) while a run among them is still going: its manifest is its controller's to
    write until the end (formats.controller_lock)."""
    if os.path.lexists(path / MANIFEST_FILE):  # whatever it is: its check names it
        runs = [path]
    else:
        runs = sorted(d for d in path.iterdir() if os.path.lexists(d / MANIFEST_FILE)) \
            if path.is_dir() else []
    if not runs:
        raise AnalysisError(f"{path}: no run directory (with {MANIFEST_FILE}) found there")
    for run_dir in runs:
        if (pid := holder(run_dir)) is not None:
            by = f" (pid {pid})" if pid else ""
            raise AnalysisError(f"{run_dir}: the run is still going: its controller{by} "
                                "holds it until the run ends; try again then")
    return runs


def analyse(run_dirs: list[Path], spark_master: str, log_path: Path,
            window: int | None = None) -> list[RunSummary]:
    """Run the Spark job over the runs (one session for all) and return their summaries.

    The job runs in its own process: a JVM crash or memory blow-up there cannot take the
    controller down, and the same entry point is what spark-submit runs on a cluster. It
    never outlives the controller: an interrupt stops it, and so does the controller's
    death (launchers.guard). Runs that failed outright recorded nothing: they are
    summarised from their manifests. A manifest that cannot be read goes to the job too,
    which refuses it in one line (status corrupt, formats.integrity).
    """
    recorded = [d for d in run_dirs if _recorded(d)]
    results = _run_spark_job(recorded, spark_master, log_path, window) if recorded else {}
    summaries = []
    for run_dir in run_dirs:
        result = results.get(run_dir, {})
        if "summary" in result:
            summaries.append(read_summary(Path(result["summary"])))
        elif run_dir not in recorded:
            summaries.append(_unanalysed(run_dir, None))
        else:
            error = result.get("error", "the analysis did not finish")
            summaries.append(_unanalysed(run_dir, f"analysis failed: {error}; see {log_path}; "
                                         f"`sixnines report {run_dir}` analyses it again"))
    return summaries


def read_summary(path: Path) -> RunSummary:
    """A run's summary.json as the analysis wrote it."""
    return RunSummary.model_validate_json(path.read_text(encoding="utf-8"))


def _recorded(run_dir: Path) -> bool:
    """Whether the run is the analysis's to look at: anything but a run its manifest says
    failed (one that cannot be read goes too: the analysis refuses it in one line)."""
    manifest, _ = manifest_or_problem(run_dir)
    return manifest is None or manifest.status != FAILED


def manifest_or_problem(run_dir: Path) -> tuple[Manifest | None, str | None]:
    """The run's manifest, or (None, one line naming it and what is wrong:
    formats.integrity)."""
    try:
        return read_manifest(run_dir), None
    except Damaged as damaged:
        return None, damaged.problems[0]


def scenario_of(run_dirs: list[Path]) -> str | None:
    """The scenario the runs belong to, from the first manifest that can be read."""
    manifests = (manifest_or_problem(run_dir)[0] for run_dir in run_dirs)
    return next((m.scenario for m in manifests if m is not None and m.scenario), None)


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
             params=manifest.params)
    return RunSummary(**known, status=CORRUPT if unusable else FAILED,
                      problems=[*(manifest.problems if manifest else []),
                                *(line for line in (unusable, problem) if line)])


def write_results_summary(results_dir: Path, scenario: str | None,
                          summaries: list[RunSummary],
                          searches: list[CapacityResult] | None = None) -> Path:
    """summary.json and summary.csv, each whole or not at all (WriteFailure names it)."""
    path = results_dir / SUMMARY_FILE
    write_atomically(path, ResultsSummary(scenario=scenario, runs=summaries,
                                          capacity=searches or []).text())
    write_results_csv(results_dir / CSV_FILE, summaries)
    return path


def write_results_csv(path: Path, summaries: list[RunSummary]) -> Path:
    """summary.csv: the summary flattened to one row per run for spreadsheets and pandas.
    `load` says open-loop or saturation (`rate: max`, whose latency is only in the
    saturation_latency columns); parameters get a column each (in the order they first
    appear); empty cells are figures a run does not have (a failed run has no latency)."""
    params = list(dict.fromkeys(name for s in summaries for name in s.params))
    header = ["run_id", "system", "status", "load", *params, *CSV_COUNTS,
              *(f"{label}_{key}_us" for _, label in CSV_METRICS for key in CSV_FIGURES),
              *(f"{label}_count" for _, label in CSV_METRICS)]
    with atomic_path(path) as temp, open(temp, "w", newline="", encoding="utf-8") as out:
        writer = csv.writer(out)
        writer.writerow(header)
        for summary in summaries:
            writer.writerow([_csv_cell(value) for value in _csv_row(summary, params)])
    return path


def _csv_row(summary: RunSummary, params: list[str]) -> list:
    """Empty cells for what the run lacks: figures of a run never analysed."""
    metrics = [summary.metric(field) for field, _ in CSV_METRICS]
    return [summary.run_id, summary.system, summary.status, run_load(summary),
            *(summary.params.get(name) for name in params),
            *(getattr(summary, name) for name in CSV_COUNTS),
            *(None if figures is None else figures.figure(key) for figures in metrics
              for key in CSV_FIGURES),
            *(None if figures is None else figures.count for figures in metrics)]


def _csv_cell(value: Any) -> str | int | float:
    """Numbers and text as they are; nothing as an empty cell; structures as JSON."""
    if value is None:
        return ""
    if isinstance(value, dict | list):
        return json.dumps(value, sort_keys=True)
    return value


def _us(value) -> str:
    if value is None:
        return "-"
    return f"{value:,.1f}" if value < 10_000 else f"{value:,.0f}"


def supported(key: str, count: int) -> bool:
    """Whether `count` samples can tell percentile `key` from the max: at least one sample
    must lie above it (count × (1 − p) ≥ 1)."""
    if not key.startswith("p"):
        return True
    return count * (1 - float(key[1:]) / 100) >= 1


def _cell(figures: Figures, key: str) -> str:
    text = _us(figures.figure(key))
    return text if supported(key, figures.count) else f"[dim]{text}[/]"


def _clock_bound_us(summary: RunSummary) -> float | None:
    """The clock bound of cross-host figures, µs; None when every figure is on one clock."""
    bound = summary.clock_bound_ns
    return None if bound is None else bound / 1000


def _clock_cells(field: str, bound: float | None) -> list[str]:
    """A metric row's "± clock" cell, present only when some figure was timed across hosts."""
    if bound is None:
        return []
    return [_us(bound) if field in CROSS_CLOCK_METRICS else ""]


def _metrics(summary: RunSummary) -> tuple[tuple[str, str], ...]:
    """The (field, label) rows a run's table shows: its saturation latency alone in
    throughput mode (no schedule: no open-loop latency, service time or send lag)."""
    return (latency_of(summary),) if saturation(summary) else METRICS


def _captions(summary: RunSummary) -> list[str]:
    """Footnotes: dim percentiles, and what the ± clock column means (docs/design.md rule 3)."""
    captions = []
    if saturation(summary):
        captions.append("throughput mode (rate: max): saturation latency = receive − send "
                        "with the system flooded, not open-loop latency")
    if any(not supported(key, summary.figures(field).count)
           for field, _ in _metrics(summary) for key in FIGURE_KEYS):
        captions.append("dim: too few samples for that percentile (fewer than 1/(1-p))")
    bound = _clock_bound_us(summary)
    if bound is not None:
        cross = summary.latency_pairs.cross_clock
        captions.append(f"± clock: {cross:,} deliveries timed across hosts, both ends put on "
                        f"the controller's clock; figures may be off by up to {_us(bound)} µs")
    return captions


STATUS_COLOUR = {"ok": "green", "partial": "yellow", CORRUPT: "bold red"}  # else red


def _status_text(summary: RunSummary) -> str:
    status = summary.status
    return f"[{STATUS_COLOUR.get(status, 'red')}]{markup(status)}[/]"


def _counts(summary: RunSummary) -> str:
    """The accounting line: every expected delivery is delivered, lost or unknown (the
    last only when receivers died: it is not loss)."""
    unknown = summary.unknown or 0
    return (f"sent {summary.sent or 0:,}  received {summary.received or 0:,}  "
            f"delivered {summary.delivered or 0:,}  lost {summary.lost or 0:,}  "
            + (f"[yellow]unknown {unknown:,}[/]  " if unknown else "")
            + f"duplicated {summary.duplicated or 0:,}  "
            f"reordered {summary.reordered or 0:,}")


def run_table(summary: RunSummary) -> Table:
    """One run: accounting and throughput in the title, the latency distribution below;
    figures timed across hosts carry their clock bound in a "± clock" column."""
    rates = (f"send {summary.send_rate or 0:,.0f} msg/s  "
             f"receive {summary.receive_rate or 0:,.0f} msg/s")
    table = Table(title=f"{markup(summary.run_id)}  {_status_text(summary)}\n"
                        f"{_counts(summary)}\n{rates}", title_justify="left")
    table.add_column("µs", justify="left")
    bound = _clock_bound_us(summary)
    for key in (*FIGURE_KEYS, *(["± clock"] if bound is not None else []), "count"):
        table.add_column(key, justify="right")
    for field, label in _metrics(summary):
        figures = summary.figures(field)
        table.add_row(label, *(_cell(figures, key) for key in FIGURE_KEYS),
                      *_clock_cells(field, bound), f"{figures.count:,}")
    captions = _captions(summary)
    if captions:
        table.caption = "\n".join(captions)
        table.caption_justify = "left"
    return table


def print_tables(summaries: list[RunSummary], console: Console) -> None:
    """Each run's table, then its problems (red), warnings (yellow: what to act on before
    trusting the figures) and notes (dim: facts that ask nothing). A run without figures
    (corrupt: its files fail their checks; or never analysed: nothing recorded, or its
    analysis failed) gets a line saying so instead of a table of zeros; its problems say
    why."""
    for summary in summaries:
        if summary.status == CORRUPT:
            console.print(f"{markup(summary.run_id)}  {_status_text(summary)}: its "
                          "files fail their checks, no figures")
        elif summary.sent is None:
            console.print(f"{markup(summary.run_id)}  {_status_text(summary)}: no figures")
        else:
            console.print(run_table(summary))
        for style, mark, lines in (("red", "!", summary.problems),
                                   ("yellow", "!", summary.warnings),
                                   ("dim", "·", summary.notes)):
            for line in lines:
                console.print(f"  [{style}]{mark} {markup(line)}[/]", soft_wrap=True,
                              highlight=False)
        note = summary.broker.note
        if note:
            console.print(f"  note: {markup(note)}", soft_wrap=True)
