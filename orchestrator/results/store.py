"""The results store: what a results directory holds at its top and how it is read and
written — its run directories (found, refused while a run is still going), each run's
manifest and the summary its analysis wrote, and the scenario's summary.json and
summary.csv, each written whole or not at all (formats.atomic; the output contract in
docs/results.md, "The results directory"). Summaries from elsewhere, trusted in nothing,
are read by orchestrator.results.summaries."""

from __future__ import annotations

import csv
import json
import os
from pathlib import Path
from typing import Any

from sixnines.formats.atomic import atomic_path, write_atomically
from sixnines.formats.controller_lock import holder
from sixnines.formats.errors import BadInput
from sixnines.formats.hdr import PERCENTILE_KEYS
from sixnines.formats.integrity import Damaged, read_manifest
from sixnines.formats.layout import CSV_FILE, MANIFEST_FILE, SUMMARY_FILE
from sixnines.formats.load import run_load
from sixnines.formats.manifest import Manifest
from sixnines.formats.summary import CapacityResult, RepeatedCase, ResultsSummary, RunSummary
from sixnines.formats.vocabulary import Metric

CSV_COUNTS = ("sent", "received", "delivered", "lost", "unknown", "duplicated", "reordered",
              "send_rate", "receive_rate")
#: The rates in bytes a second (RunSummary.bytes_per_s: msg/s times the message size).
CSV_BYTE_RATES = {"send_bytes_per_s": "send_rate", "receive_bytes_per_s": "receive_rate"}
CSV_BROKER = ("kind", "recipe", "version")
#: What to know before trusting a row's figures, each a JSON list of lines.
CSV_LINES = ("problems", "warnings")
CSV_METRICS = tuple((metric.summary_field, metric.value) for metric in Metric)
FIGURE_KEYS = (*PERCENTILE_KEYS, "max")
CSV_FIGURES = (*FIGURE_KEYS, "mean")


class RunsRefused(BadInput):
    """A directory a command cannot take runs from: none there, or one still going."""


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
        raise RunsRefused(f"{path}: no run directory (with {MANIFEST_FILE}) found there")
    for run_dir in runs:
        if (pid := holder(run_dir)) is not None:
            by = f" (pid {pid})" if pid else ""
            raise RunsRefused(f"{run_dir}: the run is still going: its controller{by} "
                              "holds it until the run ends; try again then")
    return runs


def read_summary(path: Path) -> RunSummary:
    """A run's summary.json as the analysis wrote it."""
    return RunSummary.model_validate_json(path.read_text(encoding="utf-8"))


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


def write_results_summary(results_dir: Path, scenario: str | None,
                          summaries: list[RunSummary],
                          searches: list[CapacityResult] | None = None,
                          cases: list[RepeatedCase] | None = None) -> Path:
    """summary.json and summary.csv, each whole or not at all (WriteFailure names it)."""
    path = results_dir / SUMMARY_FILE
    write_atomically(path, ResultsSummary(scenario=scenario, runs=summaries,
                                          capacity=searches or [], repeats=cases or []).text())
    write_results_csv(results_dir / CSV_FILE, summaries)
    return path


def write_results_csv(path: Path, summaries: list[RunSummary]) -> Path:
    """summary.csv: the summary flattened to one row per run for spreadsheets and pandas.
    `load` says open-loop or saturation (`rate: max`, whose latency is only in the
    saturation_latency columns); parameters get a column each (in the order they first
    appear); the broker's kind, recipe and version; the rates also in bytes a second;
    empty cells are figures a run does not have (a failed run has no latency); the
    problems and warnings last, each cell a JSON list of lines."""
    params = list(dict.fromkeys(name for s in summaries for name in s.params))
    header = ["run_id", "system", "status", "load", *(f"broker_{name}" for name in CSV_BROKER),
              *params, *CSV_COUNTS, *CSV_BYTE_RATES,
              *(f"{label}_{key}_us" for _, label in CSV_METRICS for key in CSV_FIGURES),
              *(f"{label}_count" for _, label in CSV_METRICS), *CSV_LINES]
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
            *(getattr(summary.broker, name) for name in CSV_BROKER),
            *(summary.params.get(name) for name in params),
            *(getattr(summary, name) for name in CSV_COUNTS),
            *(summary.bytes_per_s(rate) for rate in CSV_BYTE_RATES.values()),
            *(None if figures is None else figures.figure(key) for figures in metrics
              for key in CSV_FIGURES),
            *(None if figures is None else figures.count for figures in metrics),
            *(getattr(summary, name) for name in CSV_LINES)]


def _csv_cell(value: Any) -> str | int | float:
    """Numbers and text as they are; nothing as an empty cell; structures as JSON."""
    if value is None:
        return ""
    if isinstance(value, dict | list):
        return json.dumps(value, sort_keys=True)
    return value
