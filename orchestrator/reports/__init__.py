"""The reports people read, written into `<results_dir>/report/`: `index.html` (one
self-contained page) and, per plot, a gnuplot `.dat` file and `.gp` script.

Input: the results-level run summaries (summary.json's "runs"), plus what each run's
analysis left in `<run-id>/report/` (series.json, *.hgrm) when present, and each run's
manifest (what its system ran with: orchestrator.results.setup).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

from rich.console import Console

from sixnines.formats.atomic import write_atomically
from sixnines.formats.layout import PAGE_FILE, SUMMARY_FILE
from sixnines.formats.run_files import RefusedPath, file_under, report_folder
from sixnines.formats.summary import CapacityResult, RepeatedCase, ResultsSummary, RunSummary
from sixnines.formats.vocabulary import Metric
from sixnines.orchestrator.reports import capacity, gnuplot, html, nines, per_run, sweeps
from sixnines.orchestrator.reports.inputs import read_run
from sixnines.orchestrator.results.overview import swept
from sixnines.orchestrator.results.setup import system_setups
from sixnines.orchestrator.results.store import write_results_summary
from sixnines.orchestrator.results.summaries import SummaryRefused, read_results_summary

HGRM_METRICS = tuple(Metric)  # each metric a run measured has its .hgrm


def _recorded(results_dir: Path) -> ResultsSummary | None:
    """The results' summary.json as an earlier analysis wrote it; None when there is none
    sixnines could have written (formats.run_files, orchestrator.results.summaries)."""
    try:
        return read_results_summary(file_under(results_dir, SUMMARY_FILE))
    except (RefusedPath, SummaryRefused):
        return None


def recorded_searches(results_dir: Path) -> list[CapacityResult]:
    """The capacity searches summary.json records (none without a readable one)."""
    recorded = _recorded(results_dir)
    return recorded.capacity if recorded is not None else []


def _title(results_dir: Path) -> str:
    """'<scenario> / <timestamp>': the scenario from summary.json when it is there."""
    recorded = _recorded(results_dir)
    scenario = recorded.scenario if recorded is not None else None
    name = results_dir.parent.name if scenario is None else scenario
    return f"{name} / {results_dir.name}"


def write_reports(results_dir: Path, summaries: list[RunSummary],
                  searches: Sequence[CapacityResult] = (),
                  cases: Sequence[RepeatedCase] = ()) -> Path:
    """Write the page and the gnuplot files for these runs and capacity searches; return
    the page's path. Its folder is checked first (formats.run_files.report_folder): a
    `report` that is a link leading out of the results would have them written elsewhere."""
    out = report_folder(results_dir)
    out.mkdir(parents=True, exist_ok=True)
    runs = [read_run(results_dir, summary, HGRM_METRICS) for summary in summaries]
    slugs = per_run.run_slugs(runs)
    sections = [html.RunSection(run, slug, per_run.figures(run, slug))
                for run, slug in zip(runs, slugs, strict=True)]
    overlays = nines.figures(runs)
    varying = swept(summaries)
    parametrised = sweeps.figures(summaries)
    loads = [(result, capacity.figure(result)) for result in searches]
    every = [*(f for _, f in loads), *overlays, *(f for fs in parametrised.values() for f in fs),
             *(f for section in sections for f in section.figures)]
    for figure in every:
        gnuplot.write(figure, out)
    page = html.page(_title(results_dir), sections, overlays, parametrised, varying,
                     [f"{figure.slug}.gp" for figure in every], HGRM_METRICS, loads, cases,
                     system_setups(results_dir, summaries))
    return write_atomically(out / PAGE_FILE, page)


def _attempt(write: Callable[[], object], console: Console) -> bool:
    """Run one writer; a file (or directory) it could not write, or would not write to (a
    link leading out), is one line: its path and why (WriteFailure's message, the
    OSError's or RefusedPath's, which name it too)."""
    try:
        write()
    except (OSError, RefusedPath) as failure:
        console.print(str(failure), markup=False, highlight=False, soft_wrap=True)
        return False
    return True


def write_results(results_dir: Path, scenario: str | None, summaries: list[RunSummary],
                  console: Console, searches: Sequence[CapacityResult] | None = None,
                  cases: Sequence[RepeatedCase] = ()) -> bool:
    """Everything a results directory gets from an analysis: summary.json, summary.csv
    and the report (its page printed). Each file is whole or absent (formats.atomic); one
    that cannot be written (a full disk) is named on the console and the next writer is
    still tried. True when every file was written. `searches`: what the scenario's
    capacity searches found; None (an analysis again) keeps what summary.json recorded,
    each search's decisions having been made on its probes as they ran. `cases`: the
    repeated cases (orchestrator.results.repeats)."""
    found = recorded_searches(results_dir) if searches is None else list(searches)
    summary = _attempt(lambda: write_results_summary(results_dir, scenario, summaries, found,
                                                     list(cases)), console)
    page = _attempt(lambda: console.print(
        f"report: {write_reports(results_dir, summaries, found, cases)}", markup=False,
        highlight=False, soft_wrap=True), console)
    return summary and page
