"""The `sixnines` command.

Exit codes: 0 success; 1 a run or analysis was not ok, a result file could not be written,
or `compare` found a regression; 2 bad input (scenario, arguments, a directory without
results, a summary no analysis can write) or a plan this machine cannot run; 3 `compare`'s
judged results cannot be judged (a run failed or is corrupt, or there is none); 130
interrupted by Ctrl-C, 143 by SIGTERM (data kept either way).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import logging
import math
import os
import select
import signal
import sys
import threading
import time
from pathlib import Path
from typing import NoReturn

from rich.console import Console

from sixnines import __version__
from sixnines.formats.errors import SixninesError
from sixnines.formats.layout import (
    ANALYSIS_LOG,
    HISTORY_CSV,
    HISTORY_DIR,
    HISTORY_TABLE,
    MANIFEST_FILE,
    SUMMARY_FILE,
)
from sixnines.orchestrator.terminal import console_for, printable_lines

EXIT_OK, EXIT_NOT_OK, EXIT_BAD_INPUT, EXIT_BROKEN = 0, 1, 2, 3
SPARK_MASTER_VARIABLE = "SIXNINES_SPARK_MASTER"


def spark_master(command_line: str | None, scenario: str | None) -> str:
    """Where the analysis runs: the command line over the environment over the scenario
    file over the embedded default."""
    return (command_line or os.environ.get(SPARK_MASTER_VARIABLE) or scenario
            or "local[*]")


def _messages(text: str) -> int:
    """A window length on the command line: a whole number of messages, at least 1."""
    if not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"a whole number of messages ≥ 1, not {text!r}")
    return int(text)


#: The short flags of `run`, `validate` and `hosts check`, each a `--set` of one workload
#: field: the few every reader changes (metavar, field).
SHORT_FLAGS = {"--rate": ("RATE", "workload.rate"), "--size": ("SIZE", "workload.message_size"),
               "--duration": ("DURATION", "workload.duration"),
               "--producers": ("N", "workload.producers"),
               "--consumers": ("N", "workload.consumers")}


class _Overrides(argparse.Action):
    """--set PATH=VALUE and the short flags, kept together in the order given (the last
    one on a field wins), as (flag, value)."""

    def __call__(self, parser, namespace, value, option_string=None) -> None:
        given = getattr(namespace, self.dest) or []
        setattr(namespace, self.dest, [*given, (self.option_strings[0], value)])


def _override_options(command: argparse.ArgumentParser) -> None:
    command.add_argument(
        "--set", action=_Overrides, dest="overrides", metavar="PATH=VALUE",
        help="set a field of the scenario over the file's, checked as if written there "
        "(repeatable; VALUE is YAML: 20k, 1KB, 5s, [64, 1KB]): e.g. --set workload.rate=20k, "
        "--set systems[redis].broker.recipe=redis-tuned; `run` records them in each manifest")
    for flag, (metavar, path) in SHORT_FLAGS.items():
        command.add_argument(flag, action=_Overrides, dest="overrides", metavar=metavar,
                             help=f"--set {path}={metavar}")


def _overrides(args) -> list:
    from sixnines.orchestrator.scenario.overrides import Override

    return [Override.of_set(value) if flag == "--set" else
            Override(f"{flag} {value}", SHORT_FLAGS[flag][1], value)
            for flag, value in args.overrides or ()]


def _with(overrides: list) -> str:
    """" with --set … --rate …": the overrides a command line gave, as given."""
    from sixnines.orchestrator.scenario.overrides import as_given

    return f" with {as_given(overrides)}" if overrides else ""


def _load(args):
    """The scenario in `args.file` with the command line's overrides set over it, and the
    document it was validated from (ScenarioError: every problem with its line or flag)."""
    from sixnines.orchestrator.scenario.model import read_scenario

    return read_scenario(args.file, _overrides(args))


def _machine_checks(file: str, points: list, scenario, output: Path, *, run: bool
               ) -> tuple[list[str], list[str]]:
    """The runs' memory and disk estimate in words, and why they cannot run on this
    machine (each naming `file`): too big for it, or what it lacks (orchestrator.plan.preflight;
    `run` leaves recipes to each run). Remote hosts are checked once they are prepared."""
    from sixnines.orchestrator.plan import footprint, preflight
    from sixnines.orchestrator.scenario.hosts import LOCAL

    found = footprint.estimate(points, scenario.placement.agents)
    available = {LOCAL: footprint.available_memory()}
    free = footprint.free_disk(output)
    problems = [*preflight.problems(scenario, points, output, run=run),
                *footprint.problems(found, available, free, str(output))]
    return (found.lines(available, free, str(output)),
            [f"{file}: {problem}" for problem in problems])


def _validate(args, console: Console) -> int:
    from sixnines.orchestrator.capacity.probes import describe
    from sixnines.orchestrator.scenario.matrix import expand
    from sixnines.orchestrator.scenario.readings import readings

    scenario, document = _load(args)
    points = expand(scenario)
    estimate, problems = _machine_checks(args.file, points, scenario, Path(scenario.output),
                                    run=False)
    verdict = "cannot run on this machine" if problems else "ok"
    _say(console, f"{args.file}{_with(_overrides(args))}: {verdict}, {len(points)} run(s)")
    for point in points:
        _say(console, f"  {describe(point)}")
    if guessed := readings(document):
        _say(console, "read as:")
        for reading in guessed:
            _say(console, f"  {reading.render(document, args.file)}")
    _say(console, "estimate:")
    for line in estimate:
        _say(console, f"  {line}")
    for problem in problems:
        _say(console, problem)
    return EXIT_BAD_INPUT if problems else EXIT_OK


def _say(console: Console, text: str) -> None:
    """A message as it is: no markup, not wrapped (it holds paths and commands), and
    nothing a terminal would act on (the paths and names in it may come from files)."""
    console.print(printable_lines(text), markup=False, highlight=False, soft_wrap=True)


def _run(args, console: Console) -> int:
    from sixnines.orchestrator.capacity.probes import is_search
    from sixnines.orchestrator.controller import run_scenario
    from sixnines.orchestrator.launchers.base import LaunchError
    from sixnines.orchestrator.run.interrupts import describe, exit_code
    from sixnines.orchestrator.scenario.matrix import expand

    scenario = _load(args)[0]
    output = args.output if args.output is not None else Path(scenario.output)
    points = expand(scenario)
    if args.no_analysis and any(map(is_search, points)):
        _say(console, f"{args.file}: a capacity search (rate: {{search: …}}) judges each "
                      "probe by its analysis before choosing the next rate: run it without "
                      "--no-analysis")
        return EXIT_BAD_INPUT
    _, problems = _machine_checks(args.file, points, scenario, output, run=True)
    for problem in problems:
        _say(console, problem)
    if problems:
        return EXIT_BAD_INPUT
    master = spark_master(args.spark_master, scenario.spark_master)
    try:
        outcome = run_scenario(scenario, Path(args.file), output=args.output,
                               spark_master=None if args.no_analysis else master,
                               console=console, overrides=_overrides(args))
    except LaunchError as exc:
        raise LaunchError(f"cannot use the scenario's hosts: {exc}") from None
    where = outcome.results_dir
    if outcome.unwritable is not None:
        _say(console, f"stopped: {outcome.unwritable}; every process was stopped, and what "
                      f"could be written is in {where}")
    if outcome.interrupted is not None:
        what = "the recorded runs are" if outcome.during_analysis else \
            "the data recorded so far is"
        when = " during the analysis" if outcome.during_analysis else ""
        _say(console, f"{describe(outcome.interrupted)}{when}: {what} in {where}; analyse "
                      f"it with `sixnines report {where}`")
    print(where)
    if outcome.interrupted is not None:
        return exit_code(outcome.interrupted)
    return EXIT_OK if outcome.all_ok else EXIT_NOT_OK


def _report(args, console: Console) -> int:
    from sixnines.formats.pruned import read_pruned
    from sixnines.orchestrator.reports import write_results
    from sixnines.orchestrator.results.analysis import analyse
    from sixnines.orchestrator.results.collect import unfetched_hosts
    from sixnines.orchestrator.results.console_tables import print_tables
    from sixnines.orchestrator.results.overview import print_overview
    from sixnines.orchestrator.results.recovery import recover
    from sixnines.orchestrator.results.repeats import repeated_cases
    from sixnines.orchestrator.results.store import find_run_dirs, scenario_of
    from sixnines.orchestrator.run.interrupts import describe, exit_code

    run_dirs = find_run_dirs(args.dir)
    for run_dir in run_dirs:
        if recover(run_dir):
            _say(console, f"{run_dir}: its controller stopped before the run ended; "
                          "recovered from the files its agents wrote")
        if (pruned := read_pruned(run_dir)) is not None:
            _say(console, f"{run_dir}: {pruned.note()}")
        if hosts := unfetched_hosts(run_dir):
            _say(console, f"{run_dir}: files of its agents are still on {', '.join(hosts)}; "
                          f"`sixnines collect {run_dir}` fetches them (analysed without)")
    single = run_dirs == [args.dir]
    results_dir = args.dir.parent if single else args.dir
    try:
        summaries = analyse(run_dirs, spark_master(args.spark_master, None),
                            results_dir / ANALYSIS_LOG, args.window)
    except KeyboardInterrupt as exc:
        _say(console, f"{describe(exc)} during the analysis: nothing more was written; run "
                      f"`sixnines report {args.dir}` again to analyse it")
        return exit_code(exc)
    cases = [] if single else repeated_cases(results_dir, summaries)
    written = single or write_results(results_dir, scenario_of(run_dirs), summaries, console,
                                      cases=cases)
    print_tables(summaries, console, cases)
    print_overview(results_dir, summaries, cases, console)
    print(args.dir)
    all_ok = all(s.status == "ok" for s in summaries)
    return EXIT_OK if all_ok and written else EXIT_NOT_OK


def _prune(args, console: Console) -> int:
    from sixnines.formats.atomic import human_bytes
    from sixnines.orchestrator.results.prune import prune

    if not args.root.is_dir():
        _say(console, f"{args.root}: no such directory")
        return EXIT_BAD_INPUT
    kept, pruned = prune(args.root, args.keep_raw)
    for night in pruned:
        for line in (*night.left_alone, *night.failed):
            _say(console, line)
        print(printable_lines(f"{night.path}: {night.files:,} chunk file(s) removed, "
                              f"{human_bytes(night.reclaimed)} reclaimed"), flush=True)
    total = sum(night.reclaimed for night in pruned)
    print(f"reclaimed {human_bytes(total)} ({total:,} bytes) in {len(pruned)} night(s); "
          f"{len(kept)} newest night(s) keep their raw chunks")
    return EXIT_NOT_OK if any(night.failed for night in pruned) else EXIT_OK


def _non_negative(text: str) -> int:
    if not text.isdigit():
        raise argparse.ArgumentTypeError(f"a whole number of nights ≥ 0, not {text!r}")
    return int(text)


def _collect(args, console: Console) -> int:
    from sixnines.orchestrator.results.collect import collect
    from sixnines.orchestrator.results.store import find_run_dirs

    complete = True
    for run_dir in find_run_dirs(args.dir):
        collected = collect(run_dir)
        fetched = ", ".join(collected.fetched)
        _say(console, f"{run_dir}: fetched the files of {fetched}" if fetched else
             f"{run_dir}: nothing to fetch")
        if collected.recovered:
            _say(console, f"{run_dir}: its controller stopped before the run ended; "
                          "recovered from the files its agents wrote")
        for line in (*collected.notes, *collected.problems):
            _say(console, f"{run_dir}: {line}")
        complete = complete and collected.complete
    print(args.dir)
    return EXIT_OK if complete else EXIT_NOT_OK


def _compare(args, console: Console) -> int:
    from sixnines.orchestrator.results.compare import (
        CompareError,
        compare,
        judged_run_broken,
        print_comparison,
    )

    reference, judged = _compare_sides(args)
    comparison = compare(reference, judged, threshold_pct=args.threshold)
    broken = judged_run_broken(judged.runs, judged.repeats)
    if not broken and (unrelated := comparison.nothing_in_common()):
        raise CompareError(f"{reference.path} and {judged.path} have nothing in common to "
                           f"compare: {unrelated}")
    if args.json:
        print(json.dumps(comparison.as_json(), indent=2))
    else:
        print_comparison(comparison, console)
    if broken:
        _say(console, f"{judged.path}: cannot be judged: {broken}")
    if args.junit is not None:
        _write_compare_junit(args.junit, comparison, broken)
    if broken:
        return EXIT_BROKEN
    return EXIT_NOT_OK if comparison.regression else EXIT_OK


def _compare_sides(args):
    """(A, B) from the arguments: RUN_A RUN_B, or --baseline ROOT [--last N] RUN_B
    (CompareError, exit 2, for anything else)."""
    from sixnines.orchestrator.results.baseline import load_baseline
    from sixnines.orchestrator.results.compare import CompareError, load_side

    forms = "give RUN_A RUN_B, or --baseline ROOT [--last N] RUN_B"
    if args.last is not None and args.baseline is None:
        raise CompareError(f"sixnines compare: --last needs --baseline ROOT ({forms})")
    if len(args.runs) != (1 if args.baseline is not None else 2):
        raise CompareError(f"sixnines compare: {forms}")
    if args.junit is not None and not args.junit.parent.is_dir():
        raise CompareError(f"{args.junit}: --junit: no directory {args.junit.parent} to "
                           "write it in")
    if args.baseline is None:
        return load_side(args.runs[0]), load_side(args.runs[1])
    judged = load_side(args.runs[0])
    return load_baseline(args.baseline, args.last or DEFAULT_LAST, args.runs[0]), judged


def _write_compare_junit(path: Path, comparison, broken: str | None) -> None:
    from sixnines.orchestrator.results.compare import ABSOLUTE_FLOOR_US
    from sixnines.orchestrator.results.compare_checks import comparison_checks
    from sixnines.orchestrator.results.junit import write_junit

    properties = {"a": comparison.a, "b": comparison.b,
                  "threshold_pct": f"{comparison.threshold_pct:g}",
                  "absolute_floor_us": f"{ABSOLUTE_FLOOR_US:g}"}
    if comparison.baseline_nights:
        properties["baseline_nights"] = ", ".join(comparison.baseline_nights)
    write_junit(path, comparison_checks(comparison, broken), properties)


def _runs(args, console: Console) -> int:
    from sixnines.orchestrator.results.catalog import catalog, print_catalog

    if not args.dir.is_dir():
        console.print(f"{args.dir}: no such directory", markup=False, highlight=False)
        return EXIT_BAD_INPUT
    entries = catalog(args.dir)
    if args.json:
        print(json.dumps([entry.as_json() for entry in entries], indent=2))
    else:
        print_catalog(entries, args.dir, console)
    return EXIT_OK


def _hosts_check(args, console: Console) -> int:
    from sixnines.orchestrator.plan.hosts_check import (
        Bundled,
        check_hosts,
        load_target,
        needs_of,
        summary,
    )
    from sixnines.orchestrator.scenario.recipes import RecipeError

    hosts, scenario = load_target(args.file, _overrides(args))
    if not hosts and scenario is not None:  # everything on this machine: `validate` checks
        _say(console, f"{args.file}: the scenario names no hosts besides local: nothing to "
                      f"check (`sixnines validate {args.file}` checks this machine)")
        return EXIT_OK
    if not hosts:
        _say(console, f"{args.file}: names no hosts to check (an inventory lists them "
                      "under hosts:)")
        return EXIT_BAD_INPUT
    try:
        needs = needs_of(scenario)
    except RecipeError as exc:
        _say(console, f"{args.file}: {exc}")
        return EXIT_BAD_INPUT
    verdicts = check_hosts(hosts, needs, Bundled.here())
    for verdict in verdicts:
        print(printable_lines(verdict.line()), flush=True)
    _say(console, summary(verdicts))
    return EXIT_OK if all(verdict.ok for verdict in verdicts) else EXIT_NOT_OK


COMPARE_DESCRIPTION = """\
Compare B against the reference A, run by run. A latency percentile is a regression when B
exceeds A by more than its tolerance (the percentile's sampling uncertainty in both runs, at
least --threshold) and by more than 5 µs; percentiles with fewer than 10/(1-p) samples are
not comparable. Also regressions: send or receive rate down by more than --threshold, a
worse status, more messages lost, unknown or duplicated, runs missing from B. Matched runs
whose workload differs (message_size 1 KB -> 4 KB) are not the same experiment: shown,
never judged.

With --baseline, A is the last N passing nights under ROOT (results directories of B's
scenario recorded before it, every run ok), pooled: their distributions add, and each
percentile's band widens to cover every night's own figure.

Exit codes, for a nightly job:
  0  no regression
  1  regression
  2  bad input (arguments, directories, summaries, no passing night to compare with),
     or A and B have nothing in common (no run of B matches one of A)
  3  B cannot be judged: a run of it failed or is corrupt, or it holds none, or a run
     (or a repeat) was unsteady: its own seconds disagreed on p99 (its summary's
     steadiness) — a broken night, not a slower system

examples:
  sixnines compare runs/nightly/20261126-030000 runs/nightly/20261127-030000
  sixnines compare --baseline runs --last 7 --junit compare.xml \\
      runs/nightly/20261127-030000
"""

HISTORY_DESCRIPTION = f"""\
Index every results directory under the ROOTs (each one a night) in a store kept beside
them (Parquet and CSV, updated incrementally: new nights added, deleted ones dropped,
edited ones read again), then say what changed since the last night and in the last 30
days. A series (one figure of one system and case) changed where its nights moved to a
new level and held it for 3 nights or more, by more than the nights' sampling bands and
the series' own night-to-night spread (change points); unsteady nights and nights of a
status other than ok count half. A series needs 6 nights with the figure to be judged.
A change is news since the last night on the night that made it visible.

Exit codes, for a nightly job:
  0  no change for the worse since the last night
  1  a change for the worse found since the last night
  2  bad input (a root that is no directory or holds no results, a file's directory
     missing)
  3  a scenario's newest night cannot be judged: it could not be read, a run of it failed
     or is corrupt, or a run was unsteady (its own seconds' p99 disagreed)

examples:
  sixnines history runs/
  sixnines history runs/ --html runs/history.html --junit runs/junit.xml
  (the store: runs/{HISTORY_DIR}/{HISTORY_TABLE} and {HISTORY_CSV})
"""

#: Nights pooled by `compare --baseline` without --last: a week of nightly runs.
DEFAULT_LAST = 7


def _nights(text: str) -> int:
    """--last: a whole number of nights, at least 1."""
    if not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"a whole number of nights ≥ 1, not {text!r}")
    return int(text)


def _history(args, console: Console) -> int:
    from sixnines.formats.errors import BadInput
    from sixnines.orchestrator.results.history.detector import DetectorProcess

    for option, path in (("--html", args.html), ("--junit", args.junit)):
        if path is not None and not path.parent.is_dir():
            raise BadInput(f"{path}: {option}: no directory {path.parent} to write it in")
    with DetectorProcess() as detector:  # first: it loads while the store is updated
        from sixnines.orchestrator.results.history.console import (
            judge,
            print_summary,
            window_start,
        )
        from sixnines.orchestrator.results.history.series import load_series
        from sixnines.orchestrator.results.history.store import default_location, update_store

        location = args.store or default_location(args.roots)
        update = update_store(args.roots, location, rebuild=args.rebuild)
        recent = load_series(update.table, since=window_start(update.table))
        judgement = judge(update.table, recent, detector)
        if args.json or args.html:
            _history_documents(args, update.table, location, detector)
    if not args.json:
        print_summary(update, judgement, console)
    if args.junit is not None:
        from sixnines.orchestrator.results.history.checks import history_checks
        from sixnines.orchestrator.results.junit import write_junit

        write_junit(args.junit, history_checks(judgement), {
            "roots": ", ".join(map(str, args.roots)), "store": str(location)})
    return judgement.exit_code


def _history_documents(args, table, location: Path, detector) -> None:
    """--json on stdout (reports relative to the store) and the --html page (reports
    relative to the page): every series over all its nights, judged once."""
    from sixnines.orchestrator.reports.history_page import write_history_page
    from sixnines.orchestrator.results.history.series import (
        find_series_changes,
        history_document,
        load_series,
    )

    title = f"sixnines history of {', '.join(map(str, args.roots))}"
    series = load_series(table)
    found = find_series_changes(detector, series)
    if args.json:
        print(json.dumps(history_document(series, found, title, location), indent=2))
    if args.html is not None:
        write_history_page(history_document(series, found, title, args.html.parent.absolute()),
                           args.html)


#: The largest --threshold: B eleven times A. Beyond, no latency change would be flagged
#: (and `inf` would turn every check off).
MAX_THRESHOLD_PCT = 1000.0


def _percentage(text: str) -> float:
    """A percentage above 0 and at most MAX_THRESHOLD_PCT for --threshold (argparse turns
    the error into exit 2)."""
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not 0 < value <= MAX_THRESHOLD_PCT:
        raise argparse.ArgumentTypeError(
            f"{text}: a percentage above 0 and at most {MAX_THRESHOLD_PCT:,.0f} is expected")
    return value


def _agent(args, console: Console) -> int:
    from sixnines.agents.main import main as agent_main

    return agent_main()


def _broker(args, console: Console) -> int:
    from sixnines.drivers import registry
    from sixnines.orchestrator.scenario.fields import split_address

    try:
        driver = registry.load(args.driver)
        host, port = split_address(args.bind, any_port=True)
    except (LookupError, ValueError) as exc:
        _say(console, f"sixnines broker: {exc}")
        return EXIT_BAD_INPUT
    if not driver.has_builtin_broker:
        _say(console, f"sixnines broker: driver {args.driver!r} has no builtin broker")
        return EXIT_BAD_INPUT
    listening: list[str] = []  # the address, once bound

    def announce(address: str) -> None:
        listening.append(address)
        print(json.dumps({"listening": address}), flush=True)

    if args.exit_on_eof:
        _exit_at_end_of_input()
    try:
        with contextlib.suppress(KeyboardInterrupt):
            driver.serve_broker(host, port, announce)
    except OSError as exc:  # the address cannot be bound (bad input), or serving failed
        why = exc.strerror or str(exc)
        if listening:
            _say(console, f"sixnines broker {args.driver} at {listening[0]}: stopped: {why}")
            return EXIT_NOT_OK
        _say(console, f"sixnines broker: cannot listen on {args.bind}: {why}")
        return EXIT_BAD_INPUT
    return EXIT_OK


SCHEMA_NAMES = ("scenario", "summary", "manifest")


def _schema(args, console: Console) -> int:
    if args.name == "scenario":
        from sixnines.orchestrator.scenario.json_schema import text
    else:
        from sixnines.formats.schema import text as result_text

        def text() -> str:
            return result_text(f"{args.name}.schema.json")
    sys.stdout.write(text())
    return EXIT_OK


SHELLS = ("bash", "zsh")
#: What the completion offers for an argument, by its metavar: paths of the right kind.
COMPLETE_FILES = {"FILE"}
COMPLETE_DIRECTORIES = {"DIR", "ROOT", "RUN_A RUN_B"}


def _completion(args, console: Console) -> int:
    """shtab's static script (docs/design.md, "Shell completion": why shtab), with paths
    offered where an argument's metavar names one."""
    import shtab

    top = parser()
    pending = [top]
    while pending:
        command = pending.pop()
        for action in command._actions:
            if isinstance(action, argparse._SubParsersAction):
                pending += action.choices.values()
            elif action.metavar in COMPLETE_FILES:
                action.complete = shtab.FILE  # type: ignore[attr-defined]
            elif action.metavar in COMPLETE_DIRECTORIES:
                action.complete = shtab.DIRECTORY  # type: ignore[attr-defined]
    sys.stdout.write(shtab.complete(top, shell=args.shell))
    return EXIT_OK


#: The most a broker whose input ended waits for the processes entered into its PID
#: namespace from outside: in a container, the broker's end ends the namespace, which its
#: CPU monitor shares, so the broker waits until the monitor (told by its own input, whose
#: silence may come a beat later) has written what it sampled and gone, however busy the
#: machine. The bound only keeps a monitor that hangs from holding the broker, and its
#: port, for good.
EXIT_WAIT_S = 60.0
PF_KTHREAD = 0x00200000  # /proc/<pid>/stat flags: a kernel thread


def _exit_at_end_of_input() -> None:
    """Exit once standard input ends, or falls silent for SILENCE_S after something came
    (heartbeats: formats.protocol), and no process entered our PID namespace from outside
    (`_entered_from_outside`, at most `EXIT_WAIT_S`). A controller starts its builtin
    brokers with their input a pipe (or channel) from itself, which ends when the
    controller dies, even on hosts and in containers no guard of its own reaches; a
    builtin broker keeps no data to write."""
    from sixnines.formats.protocol import SILENCE_S

    def watch() -> None:
        heard = False
        while select.select([sys.stdin], [], [], SILENCE_S if heard else None)[0] and \
                os.read(sys.stdin.fileno(), 65536):
            heard = True
        deadline = time.monotonic() + EXIT_WAIT_S
        while _entered_from_outside() and time.monotonic() < deadline:
            time.sleep(0.05)
        os._exit(EXIT_OK)

    threading.Thread(target=watch, name="stdin-watch", daemon=True).start()


def _entered_from_outside() -> list[int]:
    """The processes of our PID namespace whose parent is outside it (parent pid 0), but
    its init and the kernel's threads: in a container, the broker's CPU monitor, which the
    engine started into the broker's namespace; on a host, none."""
    entered = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit() or pid == "1":
            continue
        try:
            with open(f"/proc/{pid}/stat", "rb") as stat:
                text = stat.read()
        except OSError:  # gone meanwhile
            continue
        fields = text[text.rindex(b")") + 2:].split()  # after the command name
        if fields[1] == b"0" and not int(fields[6]) & PF_KTHREAD:
            entered.append(int(pid))
    return entered


#: -v on every command, before or after its name (`sixnines -v run` = `sixnines run -v`).
VERBOSE = argparse.ArgumentParser(add_help=False)
VERBOSE.add_argument("-v", "--verbose", action="count", default=argparse.SUPPRESS,
                     help="say what is being done (-vv: and how, for debugging)")


def _recipe_option(command: argparse.ArgumentParser) -> None:
    command.add_argument("--recipes", action="append", type=Path, default=[], metavar="DIR",
                         help="a directory of broker recipes, searched first (repeatable; "
                         "also $SIXNINES_RECIPE_PATH, then deploy/recipes)")


def _use_recipe_dirs(dirs: list[Path]) -> None:
    """--recipes: searched before $SIXNINES_RECIPE_PATH (recipes.search_path reads it)."""
    if dirs:
        from sixnines.orchestrator.scenario.recipes import PATH_VARIABLE

        given = [str(d) for d in dirs]
        os.environ[PATH_VARIABLE] = os.pathsep.join(
            [*given, *filter(None, [os.environ.get(PATH_VARIABLE)])])


class _HelpFormatter(argparse.HelpFormatter):
    """Descriptions and epilogs by line: prose refilled to the terminal's width, and lines
    that start with a space (commands, tables of exit codes) kept as written."""

    def _fill_text(self, text: str, width: int, indent: str) -> str:
        out: list[str] = []
        prose: list[str] = []
        for line in [*text.splitlines(), ""]:
            if line and not line[0].isspace():
                prose.append(line)
                continue
            if prose:
                out.append(super()._fill_text(" ".join(prose), width, indent))
                prose = []
            out.append(indent + line)
        return "\n".join(out[:-1])


def _command(commands, name: str, summary: str | None, description: str, *examples: str,
             **options) -> argparse.ArgumentParser:
    """A subcommand with a description and examples (`sixnines NAME --help`); with no
    `summary` it is left out of the top-level list (an internal command)."""
    listed = {} if summary is None else {"help": summary}
    lines = "\n".join(f"  {example}" for example in examples)
    return commands.add_parser(
        name, parents=[VERBOSE], formatter_class=_HelpFormatter, description=description,
        epilog=f"example{'s' if len(examples) > 1 else ''}:\n{lines}", **listed, **options)


def parser() -> argparse.ArgumentParser:
    top = argparse.ArgumentParser(
        prog="sixnines", formatter_class=_HelpFormatter, description=(
            "Open-loop load generation for messaging systems: coordinated-omission-corrected "
            "latency to 99.9999% and the max."),
        epilog="`sixnines COMMAND --help` says more of each, with examples.\n\n"
               "examples:\n  sixnines validate examples/quickstart.yaml\n"
               "  sixnines run examples/quickstart.yaml")
    top.add_argument("--version", action="version", version=f"sixnines {__version__}")
    top.add_argument("-v", "--verbose", action="count", default=0,
                     help="say what is being done (-vv: and how, for debugging)")
    commands = top.add_subparsers(dest="command", required=True, metavar="COMMAND",
                                  title="commands")

    run = _command(
        commands, "run", "run a scenario and analyse it",
        "Run every case of the scenario FILE on every system, one run at a time (each "
        "broker started fresh), then analyse the runs and write the results: a directory "
        "per scenario and start time under the scenario's output, its path printed last. "
        "Exit 0: every run ok; 1: a run failed or was not ok; 2: bad input or a plan this "
        "machine cannot run; 130/143: interrupted (data kept).",
        "sixnines run examples/quickstart.yaml",
        "sixnines run nightly.yaml --output /data/runs --no-analysis")
    run.add_argument("file", metavar="FILE", help="the scenario (YAML; docs/scenario.md)")
    _recipe_option(run)
    _override_options(run)
    run.add_argument("--output", type=Path, metavar="DIR",
                     help="results root (default: the scenario's output)")
    run.add_argument("--spark-master", metavar="URL",
                     help=f"Spark master (default: ${SPARK_MASTER_VARIABLE}, the scenario's "
                     "spark_master, or embedded local[*])")
    run.add_argument("--no-analysis", action="store_true",
                     help="record only; analyse later with `sixnines report`")
    run.set_defaults(handler=_run)

    validate = _command(
        commands, "validate", "check a scenario without running it",
        "Check the scenario FILE without running anything: every problem as FILE:LINE: "
        "PATH: MESSAGE, the runs it would make, and the memory and disk they need beside "
        "what this machine has. Exit 0: it can run here; 2: it cannot (each reason named).",
        "sixnines validate examples/quickstart.yaml")
    validate.add_argument("file", metavar="FILE", help="the scenario (YAML; docs/scenario.md)")
    _recipe_option(validate)
    _override_options(validate)
    validate.set_defaults(handler=_validate)

    report = _command(
        commands, "report", "re-run the analysis of recorded runs",
        "Analyse recorded runs again (after `run --no-analysis`, an interrupted run, or to "
        "use another --window) and rewrite their summaries, report pages and console "
        "tables. Exit 0: every run ok; 1: a run was not ok or a result could not be written.",
        "sixnines report runs/quickstart/20261127-101500",
        "sixnines report runs/quickstart/20261127-101500 --window 1000")
    report.add_argument("dir", type=Path, metavar="DIR",
                        help="a results directory or one run directory")
    report.add_argument("--spark-master", metavar="URL", help=f"Spark master (default: "
                        f"${SPARK_MASTER_VARIABLE} or embedded local[*])")
    report.add_argument("--window", type=_messages, metavar="N",
                        help="messages per window of the throughput and overhead figures: "
                        "a stream's rate is measured over every N consecutive messages, so a "
                        "larger N smooths bursts and a smaller one shows them (default: each "
                        "run's throughput_window, 100 unless the scenario says)")
    report.set_defaults(handler=_report)

    collect = _command(
        commands, "collect", "fetch the files a killed controller left on remote hosts",
        "Fetch the files of agents on SSH and container hosts that the controller did not "
        "fetch (it was killed, or its machine went down), from the hosts its manifests name; "
        "verify them against their checksums, record them, and remove the remote copies "
        "that arrived whole. Then `sixnines report DIR`. Exit 0: everything there is here; "
        "1: something is missing or failed its check.",
        "sixnines collect runs/multihost/20261127-101500")
    collect.add_argument("dir", type=Path, metavar="DIR",
                         help="a results directory or one run directory")
    collect.set_defaults(handler=_collect)

    prune = _command(
        commands, "prune", "remove older nights' raw chunks, keep the rest",
        "Under ROOT, keep the raw per-message chunks of the newest N nights of each scenario "
        "(a night: a results directory); of older ones, remove only the chunk files their "
        "agents' chunk indexes list, in analysed runs, keeping summary, report, hlogs and "
        "manifest. Pruned runs are marked: `report` then keeps their analysis and says the "
        "raw records were pruned; `compare` works as before. Prints the space reclaimed. "
        "Exit 0: done; 1: a file could not be removed; 2: bad input.",
        "sixnines prune runs/nightly --keep-raw 7")
    prune.add_argument("root", type=Path, metavar="ROOT", help="where the nights are")
    prune.add_argument("--keep-raw", type=_non_negative, required=True, metavar="N",
                       help="nights (per scenario, newest first) whose raw chunks stay")
    prune.set_defaults(handler=_prune)

    compare = commands.add_parser(
        "compare", parents=[VERBOSE], help="compare two results (regressions: exit 1)",
        usage="sixnines compare [options] RUN_A RUN_B\n"
              "       sixnines compare [options] --baseline ROOT [--last N] RUN_B",
        formatter_class=_HelpFormatter, description=COMPARE_DESCRIPTION)
    compare.add_argument("runs", type=Path, nargs="+", metavar="RUN_A RUN_B",
                         help="the reference A, then the one to judge B: each a results "
                         "directory or one run directory (with --baseline: B alone)")
    compare.add_argument("--baseline", type=Path, metavar="ROOT",
                         help="compare B against the last passing nights under ROOT, pooled")
    compare.add_argument("--last", type=_nights, metavar="N",
                         help=f"how many nights --baseline pools (default {DEFAULT_LAST})")
    compare.add_argument("--junit", type=Path, metavar="FILE",
                         help="also write JUnit XML to FILE: a test case per system, case and "
                         "figure checked (regressions fail, figures not comparable are "
                         "skipped), for Jenkins and GitLab")
    compare.add_argument("--threshold", type=_percentage, default=10.0, metavar="PCT",
                         help="relative floor of the tolerance, %% (default 10; tail "
                              "percentiles backed by few samples get more)")
    compare.add_argument("--json", action="store_true", help="print the result as JSON")
    compare.set_defaults(handler=_compare)

    runs = _command(
        commands, "runs", "list past results, newest first",
        "List the results directories under DIR, newest first: one line per result with "
        "its scenario, systems, runs and verdict, and a table of each result's runs.",
        "sixnines runs", "sixnines runs /data/runs --json")
    runs.add_argument("dir", type=Path, nargs="?", default=Path("runs"), metavar="DIR",
                      help="where results are (default: ./runs)")
    runs.add_argument("--json", action="store_true", help="print the list as JSON")
    runs.set_defaults(handler=_runs)

    hosts = _command(
        commands, "hosts", "check the hosts of an inventory or scenario",
        "Commands about the hosts a scenario runs on (SSH and container hosts).",
        "sixnines hosts check lab/hosts.yaml")
    host_commands = hosts.add_subparsers(dest="hosts_command", required=True,
                                         metavar="COMMAND", title="commands")
    check = _command(
        host_commands, "check", "check every host in parallel before a run",
        "Reach every host of FILE at once, as a run does (host keys checked against "
        "known_hosts), and check what a run needs there: Python and the sixnines bundle, "
        "free disk in its work directory, cores, its clock against this one, the programs "
        "of the broker recipes it starts, ports on its address. One line per host on "
        "stdout. A scenario's hosts (its inventory's too) are checked against its plan; an "
        "inventory's against the minimum a run needs. Exit 0: every host ok; 1: a host has "
        "a problem (named); 2: bad input.",
        "sixnines hosts check lab/hosts.yaml",
        "sixnines hosts check nightly.yaml   # its hosts, against its plan")
    check.add_argument("file", metavar="FILE", help="an inventory (hosts: [...]) or a scenario")
    _recipe_option(check)
    _override_options(check)
    check.set_defaults(handler=_hosts_check)

    history = commands.add_parser(
        "history", parents=[VERBOSE], help="index every night's results and say what changed",
        formatter_class=_HelpFormatter, description=HISTORY_DESCRIPTION)
    history.add_argument("roots", type=Path, nargs="+", metavar="ROOT",
                         help="where results are (a scenario's output, e.g. runs/)")
    history.add_argument("--store", type=Path, metavar="DIR",
                         help=f"the store's folder (default: {HISTORY_DIR}/ in the first ROOT)")
    history.add_argument("--rebuild", action="store_true",
                         help="read every night again instead of only new and changed ones")
    history.add_argument("--json", action="store_true",
                         help="print every series, night by night, as JSON (reports "
                         "relative to the store's folder)")
    history.add_argument("--html", type=Path, metavar="FILE",
                         help="also write the history page to FILE: every series over its "
                         "nights, bands, change points, bad and unsteady nights (no network "
                         "needed to open it)")
    history.add_argument("--junit", type=Path, metavar="FILE",
                         help="also write JUnit XML to FILE: a test case per series of the "
                         "newest nights (a change for the worse since the last night fails, "
                         "too few nights skip), for Jenkins and GitLab")
    history.set_defaults(handler=_history)

    schema = _command(
        commands, "schema", "print the JSON Schema of a file sixnines reads or writes",
        "Print a JSON Schema: of the scenario file (what editors complete and check a "
        f"scenario with; docs/scenario.md explains every field), or of the {SUMMARY_FILE} "
        f"and {MANIFEST_FILE} files results hold.",
        "sixnines schema scenario > scenario.schema.json")
    schema.add_argument("name", choices=SCHEMA_NAMES, metavar="|".join(SCHEMA_NAMES),
                        help="which file's schema")
    schema.set_defaults(handler=_schema)

    completion = _command(
        commands, "completion", "print the shell completion script",
        "Print the script that completes sixnines' commands, options and their values "
        "(files, directories, choices) in bash or zsh. It is static: completing runs no "
        "Python. Print it again after an upgrade that adds commands or options.",
        "sixnines completion bash > ~/.local/share/bash-completion/completions/sixnines",
        "sixnines completion zsh > ~/.zfunc/_sixnines   # a directory on $fpath")
    completion.add_argument("shell", choices=SHELLS, metavar="|".join(SHELLS))
    completion.set_defaults(handler=_completion)

    agent = _command(
        commands, "agent", None,
        "The agent process a controller starts on each host and drives over standard input "
        "and output (internal: not for use by hand).", "sixnines agent")
    agent.set_defaults(handler=_agent)

    broker = _command(
        commands, "broker", "run a builtin broker (tcp relay, zmq proxy)",
        "Run a driver's builtin broker by hand (the tcp relay, the zmq proxy), for a system "
        "whose broker is {external: HOST:PORT}. It prints {\"listening\": ADDRESS} once "
        "bound.",
        "sixnines broker tcp --bind 127.0.0.1:7000")
    broker.add_argument("driver", metavar="DRIVER", help="a driver with a builtin broker: "
                        "tcp or zmq")
    broker.add_argument("--bind", default="127.0.0.1:0", metavar="HOST:PORT",
                        help="where to listen (port 0: any free port, announced on stdout)")
    broker.add_argument("--exit-on-eof", action="store_true",
                        help="exit when standard input ends (how its controller's death "
                        "stops a broker it started)")
    broker.set_defaults(handler=_broker)
    return top


def _log_to(console: Console, verbosity: int) -> None:
    """Log records on the console's stream: warnings by default, -v progress (INFO),
    -vv everything (DEBUG); third-party libraries stay at warnings."""
    handler = logging.StreamHandler(console.file)
    handler.set_name("sixnines")
    handler.addFilter(_without_foreign_tracebacks)
    handler.setFormatter(logging.Formatter("%(asctime)s %(name)s: %(message)s", "%H:%M:%S"))
    root = logging.getLogger()
    for old in [h for h in root.handlers if h.get_name() == "sixnines"]:
        root.removeHandler(old)  # main() called again in one process (tests)
    root.addHandler(handler)
    root.setLevel(logging.WARNING)
    logging.getLogger("sixnines").setLevel(
        (logging.WARNING, logging.INFO, logging.DEBUG)[min(verbosity, 2)])


def _without_foreign_tracebacks(record: logging.LogRecord) -> bool:
    """A third-party library's record is one line: its traceback is not ours to show (what
    failed reaches the user in sixnines' words)."""
    if not record.name.startswith("sixnines"):
        record.exc_info, record.exc_text, record.stack_info = None, None, None
    return True


def entry() -> NoReturn:
    """The `sixnines` command: main's exit code, which an interrupt arriving while the
    process exits (a third Ctrl-C after the wind-down) must not replace with death by
    that signal: there is nothing left to interrupt."""
    code = main()
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    sys.exit(code)


def main(argv: list[str] | None = None) -> int:
    from sixnines.orchestrator.run import interrupts

    args = parser().parse_args(argv)
    console = console_for()
    if args.handler is not _agent:  # an agent's stdio and SIGTERM are its own
        interrupts.install()
        _log_to(console, args.verbose)
    _use_recipe_dirs(getattr(args, "recipes", []))
    try:
        return args.handler(args, console)
    except KeyboardInterrupt as exc:  # outside a run (runs handle it themselves)
        console.print(interrupts.describe(exc))
        return interrupts.exit_code(exc)
    except SixninesError as exc:  # worded for the user already: no traceback
        _say(console, str(exc))
        return exc.exit_code
