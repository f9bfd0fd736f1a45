"""`sixnines run`: every run of a scenario in turn, then one analysis over all of them.

Data flows one way (docs/design.md): scenario → plan → launch → agents record → artifacts →
Spark → report. A run that fails does not stop the others; Ctrl-C or SIGTERM, during a run
or during the analysis, stops everything, keeps what was recorded and says how to analyse
it later; a results directory that cannot be written (a full disk) stops the scenario
after the run it happened in, every process stopped.
"""

from __future__ import annotations

import logging
import shutil
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from rich.console import Console

from sixnines.formats.atomic import WriteFailure, write_atomically
from sixnines.formats.errors import BadInput
from sixnines.formats.layout import ANALYSIS_LOG, MANIFEST_FILE, SCENARIO_FILE
from sixnines.formats.summary import CapacityResult, RunSummary
from sixnines.orchestrator.capacity.probes import is_search, run_search
from sixnines.orchestrator.launchers.base import LaunchError
from sixnines.orchestrator.plan import footprint
from sixnines.orchestrator.reports import capacity, write_results
from sixnines.orchestrator.results.analysis import analyse
from sixnines.orchestrator.results.console_tables import print_tables
from sixnines.orchestrator.results.overview import print_overview
from sixnines.orchestrator.results.repeats import repeated_cases
from sixnines.orchestrator.results.store import read_summary
from sixnines.orchestrator.run.fleet import Fleet
from sixnines.orchestrator.run.interrupts import held
from sixnines.orchestrator.run.progress import ProgressView
from sixnines.orchestrator.run.runner import Run, RunSettings
from sixnines.orchestrator.scenario.matrix import RunPoint, expand
from sixnines.orchestrator.scenario.model import Scenario
from sixnines.orchestrator.scenario.overrides import Override, as_given
from sixnines.orchestrator.terminal import printable

logger = logging.getLogger(__name__)

DEFAULT_SPARK_MASTER = "local[*]"


@dataclass
class Outcome:
    results_dir: Path
    summaries: list[RunSummary]

    statuses: list[str]  # of the runs, from their manifests
    interrupted: KeyboardInterrupt | None = None  # Ctrl-C, or SIGTERM (`Terminated`)
    during_analysis: bool = False  # the runs were recorded; their analysis was cut short
    unwritable: WriteFailure | None = None  # a run's file could not be written: stopped
    results_written: bool = True  # False: a results file could not be written (named)

    @property
    def all_ok(self) -> bool:
        return (self.interrupted is None and self.unwritable is None and self.results_written
                and all(status == "ok" for status in self.statuses))


def results_dir_for(scenario: Scenario, output: Path | None) -> Path:
    stamp = time.strftime("%Y%m%d-%H%M%S")
    base = Path(output if output is not None else scenario.output) / scenario.name
    path = base / stamp
    suffix = 1
    while path.exists():  # two runs in the same second
        suffix += 1
        path = base / f"{stamp}-{suffix}"
    return path


def _prepare(fleet: Fleet, points: list[RunPoint], agent_hosts: tuple[str, ...],
             console: Console) -> None:
    """Check and bootstrap the remote hosts (nothing to do for a local-only scenario), and
    check the runs fit their memory and disk."""
    if set(fleet.launchers) == {"local"}:
        return
    started = time.monotonic()
    console.print(f"preparing hosts: {', '.join(h for h in fleet.launchers if h != 'local')}")
    fleet.prepare()
    for host, facts in fleet.facts.items():
        setup = facts.get("bootstrap", {})
        how = "reused" if setup.get("reused") else setup.get("installed_by", "installed")
        console.print(f"  {host}: Python {facts.get('python')}, sixnines {how}")
    found = footprint.estimate(points, agent_hosts)
    problems = footprint.problems(
        found, {host: facts.get("mem_available_bytes") for host, facts in fleet.facts.items()},
        None, "", {host: facts.get("free_bytes") for host, facts in fleet.facts.items()})
    if problems:
        raise LaunchError("; ".join(problems))
    console.print(f"hosts ready in {time.monotonic() - started:.1f} s")


def _keep_scenario(scenario_file: Path, results_dir: Path,
                   overrides: Sequence[Override]) -> None:
    """The scenario file in the results, as it ran: overrides head it as comments (not
    applied to the text: it stays the file as written)."""
    if not overrides:
        shutil.copyfile(scenario_file, results_dir / SCENARIO_FILE)
        return
    heading = ["# sixnines ran this file with these fields set over it (each run's "
               f"{MANIFEST_FILE}", "# lists them as `overrides`):",
               *(f"#   {override.named}" for override in overrides)]
    text = scenario_file.read_text(encoding="utf-8")
    write_atomically(results_dir / SCENARIO_FILE, "\n".join([*heading, text]))


def run_scenario(scenario: Scenario, scenario_file: Path, *, output: Path | None,
                 spark_master: str | None, console: Console,
                 overrides: Sequence[Override] = ()) -> Outcome:
    """Run every point; analyse them on `spark_master` (None: record only). A capacity
    search's probes are analysed as each ends (the next rate depends on it). `overrides`
    were set over the file: said first, and recorded with the results."""
    points = expand(scenario)
    results_dir = results_dir_for(scenario, output)
    try:
        results_dir.mkdir(parents=True)
        _keep_scenario(scenario_file, results_dir, overrides)
    except OSError as exc:  # checked before (orchestrator.plan.preflight), changed since
        raise BadInput(f"cannot write the results in {results_dir}: "
                       f"{exc.strerror or exc}") from None
    if overrides:
        console.print(printable(f"{scenario_file} with {as_given(overrides)}"), markup=False,
                      highlight=False, soft_wrap=True)
    view = ProgressView(len(points), console.file)
    logger.info("%d run(s) of %s into %s", len(points), scenario.name, results_dir)
    fleet = Fleet.for_scenario(scenario)
    settings = RunSettings.of(scenario, analysed=spark_master is not None,
                              overrides=tuple(override.text for override in overrides),
                              scenario_dir=scenario_file.parent)
    run_dirs: list[Path] = []
    statuses: list[str] = []
    followed: dict[Path, Path] = {}  # run dir → the summary its sidecar wrote
    judged: dict[Path, RunSummary] = {}  # probes of capacity searches, analysed as they ran
    searches: list[CapacityResult] = []

    def execute(point: RunPoint) -> Path:
        run_dir = results_dir / point.run_id
        run = Run(point, run_dir, fleet, view, settings)
        run.execute()
        if run.analysed is not None:
            followed[run_dir] = run.analysed
        run_dirs.append(run_dir)
        statuses.append(run.status)
        return run_dir

    def probe(point: RunPoint) -> tuple[Path, RunSummary]:
        """A capacity search's probe, run and analysed at once: the next rate hangs on it."""
        run_dir = execute(point)
        assert spark_master is not None, "the command line refuses a search unanalysed"
        summary = read_summary(followed[run_dir]) if run_dir in followed else \
            analyse([run_dir], spark_master, results_dir / ANALYSIS_LOG)[0]
        judged[run_dir] = summary
        return run_dir, summary

    try:
        _prepare(fleet, points, scenario.placement.agents, console)
        for point in points:
            if is_search(point):
                searches.append(run_search(point, probe))
                console.print(capacity.console_line(searches[-1]), markup=False,
                              highlight=False, soft_wrap=True)
            else:
                execute(point)
    except KeyboardInterrupt as exc:
        return Outcome(results_dir, [], statuses, interrupted=exc)
    except WriteFailure as exc:
        return Outcome(results_dir, [], statuses, unwritable=exc)
    finally:
        with held():  # interrupts from here on: the hosts are released all the same
            fleet.close()
    if spark_master is None:
        return Outcome(results_dir, [], statuses)
    rest = [run_dir for run_dir in run_dirs if run_dir not in followed | judged]
    if followed:
        console.print(f"{len(followed)} run(s) analysed by their sidecar, without Spark")
    if rest:
        console.print(f"analysing {len(rest)} run(s) with Spark ({spark_master})")
    try:
        analysed = dict(zip(rest, analyse(rest, spark_master, results_dir / ANALYSIS_LOG)
                            if rest else [], strict=True))
    except KeyboardInterrupt as exc:
        return Outcome(results_dir, [], statuses, interrupted=exc, during_analysis=True)
    summaries = [analysed.get(run_dir) or judged.get(run_dir)
                 or read_summary(followed[run_dir]) for run_dir in run_dirs]
    cases = repeated_cases(results_dir, summaries)
    written = write_results(results_dir, scenario.name, summaries, console, searches, cases)
    print_tables(summaries, console, cases)
    print_overview(results_dir, summaries, cases, console)
    for result in searches:
        console.print(capacity.console_line(result), markup=False, highlight=False,
                      soft_wrap=True)
    return Outcome(results_dir, summaries, [s.status or "failed" for s in summaries],
                   results_written=written)
