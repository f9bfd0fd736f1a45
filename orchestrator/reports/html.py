"""The report page: one self-contained HTML file (styles and script inlined, no fonts,
images or scripts fetched) so it opens offline, from a mail attachment or a CI artifact.

Layout: summary table, what each system ran with (setup), the repeated cases merged,
percentile distributions, parametrised plots per swept parameter, then one section per run
(figures and CPU tables, warnings, per-message plots), then the files a user can take
further (gnuplot scripts, .hgrm files).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from html import escape
from importlib.resources import files
from urllib.parse import quote

from sixnines.formats.durability import labelled
from sixnines.formats.layout import REPORT_DIR, SERIES_FILE, hgrm_file
from sixnines.formats.status import CORRUPT
from sixnines.formats.summary import CapacityResult, RepeatedCase
from sixnines.formats.wording import params_text
from sixnines.orchestrator.reports import capacity, per_run, repeats, setups, svg
from sixnines.orchestrator.reports.backlog import backlog_section
from sixnines.orchestrator.reports.cpu import cpu_table
from sixnines.orchestrator.reports.faults import fault_table
from sixnines.orchestrator.reports.inputs import RunInputs
from sixnines.orchestrator.reports.model import Figure, slugify
from sixnines.orchestrator.reports.steps import steps_table
from sixnines.orchestrator.reports.table import (
    counts_line,
    details,
    metrics_table,
    notes_list,
    summary_table,
)
from sixnines.orchestrator.results.setup import SystemSetup


@dataclass(frozen=True)
class RunSection:
    run: RunInputs
    anchor: str
    figures: list[Figure]


def asset(name: str) -> str:
    """A file shipped beside this module (styles, scripts, vendor/), to inline in a page."""
    return files("sixnines.orchestrator.reports").joinpath(name).read_text(encoding="utf-8")


def _figures(figures: list[Figure]) -> str:
    return "".join(svg.render(figure) for figure in figures)


def _capacity_section(searches: Sequence[tuple[CapacityResult, Figure]]) -> str:
    if not searches:
        return ""
    parts = "".join(f"<h3>{escape(result.system)}: {escape(result.point)}</h3>"
                    f'<p>{escape(result.note)}</p>{svg.render(figure)}'
                    f"{capacity.table(result)}" for result, figure in searches)
    return (f'<section id="capacity"><h2>Capacity</h2><p class="note">Each probe is an '
            "open-loop run at one rate; a probe passes with no loss, every objective "
            "percentile met on enough samples, receivers keeping up and latency not rising "
            "through the run (docs/design.md, \"Capacity search\").</p>"
            f"{parts}</section>")


def _run_section(section: RunSection, hgrm_metrics: tuple[str, ...]) -> str:
    run, s = section.run, section.run.summary
    params = params_text(s.params)
    links = " ".join(f'<a href="../{quote(run.run_id)}/{REPORT_DIR}/{hgrm_file(m)}">'
                     f"{hgrm_file(m)}</a>" for m in hgrm_metrics if m in run.hgrm)
    if s.status == CORRUPT:
        plots = ('<p class="bad">Not analysed: files of this run fail their checks (listed '
                 "above), and a damaged file never feeds a figure.</p>")
    elif run.series is None:
        why = escape(run.series_problem or f"no {SERIES_FILE}")
        plots = (f'<p class="note">Per-message plots (latency over the run, throughput, '
                 f"histogram) need the per-message analysis: {why} for this run. Re-run the "
                 "analysis with <code>sixnines report RESULTS_DIR</code>.</p>")
    else:
        lacking = per_run.lacking(run, section.anchor)
        missing = "" if not lacking else (
            f'<p class="note">{lacking} per-message plot(s) missing: {SERIES_FILE} lacks '
            "their data.</p>")
        plots = _figures(section.figures) + missing
    return (f'<article id="{section.anchor}"><h3>{escape(run.run_id)}</h3>'
            f'<p class="note">system {escape(labelled(s.system, s.durability))} · '
            f'{escape(params)}</p>{notes_list(run)}{counts_line(s)}{metrics_table(s)}'
            f"{steps_table(s)}{backlog_section(s)}{cpu_table(s)}{fault_table(s)}{details(s)}"
            + (f'<p class="note">HdrHistogram plotter files: {links}</p>' if links else "")
            + f"{plots}</article>")


def _nav(entries: list[tuple[str, str]]) -> str:
    return "<nav>" + "".join(f'<a href="#{a}">{escape(t)}</a>' for a, t in entries) + "</nav>"


def page(title: str, runs: list[RunSection], nines: list[Figure],
         sweeps: dict[str, list[Figure]], swept: list[str], gnuplot_files: list[str],
         hgrm_metrics: tuple[str, ...],
         searches: Sequence[tuple[CapacityResult, Figure]] = (),
         cases: Sequence[RepeatedCase] = (), systems: Sequence[SystemSetup] = ()) -> str:
    """The whole page. `swept`: parameters that vary across runs (table columns);
    `sweeps`: the plots of the numeric ones; `searches`: each capacity search with its
    latency-against-load plot; `cases`: the repeated cases, merged; `systems`: what each
    system ran with."""
    entries = [("summary", "Summary")] + ([(setups.SETUP_ID, "Setup")] if systems else [])
    entries += [("repeats", "Repeats")] if cases else []
    entries += [("capacity", "Capacity")] if searches else []
    entries += [("percentiles", "Percentile distribution")]
    entries += [(f"across-{slugify(p)}", f"Across {p}") for p in sweeps]
    entries += [("runs", "Runs"), ("files", "Files")]
    sweep_sections = "".join(
        f'<section id="across-{slugify(param)}"><h2>Across {escape(param)}</h2>'
        f"{_figures(figures)}</section>" for param, figures in sweeps.items())
    gp = "".join(f"<li><code>{escape(name)}</code></li>" for name in gnuplot_files)
    table = summary_table([r.run for r in runs], [r.anchor for r in runs], swept)
    return (
        '<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>sixnines: {escape(title)}</title><style>{asset('report.css')}</style>"
        f"</head><body><h1>sixnines: {escape(title)}</h1>"
        f'<p class="note">{len(runs)} run(s). Latency is measured from each message\'s '
        "intended send time (open loop, coordinated-omission free).</p>"
        f"{_nav(entries)}"
        f'<section id="summary"><h2>Summary</h2>{table}</section>'
        f"{setups.section(systems)}"
        f"{repeats.section(cases)}"
        f"{_capacity_section(searches)}"
        f'<section id="percentiles"><h2>Percentile distribution</h2>'
        f"{_figures(nines) or '<p class=note>No run measured any latency.</p>'}</section>"
        f"{sweep_sections}"
        f'<section id="runs"><h2>Runs</h2>'
        f'{"".join(_run_section(r, hgrm_metrics) for r in runs)}</section>'
        f'<section id="files"><h2>Files</h2><p>Every plot has a gnuplot data file and '
        "script beside this page; <code>gnuplot report/NAME.gp</code> writes "
        "<code>NAME.png</code> next to it (from any directory). Each run's "
        "<code>report/*.hgrm</code> files load in HdrHistogram's plotter.</p>"
        f"<ul>{gp}</ul></section>"
        f"<script>{asset('report.js')}</script></body></html>\n"
    )
