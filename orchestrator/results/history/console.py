"""`sixnines history` on the console: one screen on what changed since the last night,
what changed in the last 30 days, which series have too few nights to judge, and which
nights could not be read. `--json` prints every series instead (series.history_document).

Only what the screen needs is judged: the series of the last 30 days (and the few nights
before, which hold the level their first nights are judged against), each with at least
series.MIN_NIGHTS nights with a figure over the whole store. The detector (in a process of
its own: history.detector) runs once over each; a change is news "since the last night"
when it is found at a series' scenario's newest night and the detector, run again without
that night on the series where it found any, did not find it (same first night and
direction): the night that made it visible — the third at a new level for steady
nights, later for unsteady ones or a step the nights' spread keeps in doubt. It is
reported on that night, not again on the following ones (they show it in the last 30
days).

The exit code is what a nightly job acts on: 3 when the newest night of a scenario cannot
be judged (it could not be read, a run of it failed, or a run was unsteady: a broken night
is not a slow system), else 1 when a change for the worse is news since the last night,
else 0.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import datetime, timedelta

import pyarrow as pa
import pyarrow.compute as pc
from rich.console import Console

from sixnines.formats.status import FAILED, rank
from sixnines.orchestrator.results.changes import MIN_NIGHTS as LEVEL_NIGHTS
from sixnines.orchestrator.results.changes import Change
from sixnines.orchestrator.results.history.detector import DetectorProcess
from sixnines.orchestrator.results.history.series import (
    MIN_NIGHTS,
    SERIES_KEY,
    Series,
    find_series_changes,
)
from sixnines.orchestrator.results.history.store import Update, distinct
from sixnines.orchestrator.terminal import markup

EXIT_NO_CHANGE, EXIT_REGRESSION, EXIT_BROKEN_NIGHT = 0, 1, 3
MONTH = timedelta(days=30)
#: Lines per section: the screen holds them all; --json holds everything.
MAX_LINES = 8


def window_start(table: pa.Table) -> datetime | None:
    """The earliest night the console looks at: 30 days before the newest, and the days
    of a level before them (a change on the month's first night is judged against it);
    None for an empty store."""
    newest = pc.max(table["when"]).as_py()
    return None if newest is None else newest - MONTH - timedelta(days=LEVEL_NIGHTS)


@dataclass
class Judgement:
    """What the screen says, and the exit code it makes (module docstring)."""
    since_last: list[tuple[Series, list[Change]]]
    month: list[tuple[Series, list[Change]]]
    few: set[tuple]
    broken: str | None  # why a scenario's newest night cannot be judged
    tonight: list[Series]  # the series of each scenario's newest night, too few included

    @property
    def exit_code(self) -> int:
        if self.broken:
            return EXIT_BROKEN_NIGHT
        worse = any(change.direction == "regression" for _, found in self.since_last
                    for change in found)
        return EXIT_REGRESSION if worse else EXIT_NO_CHANGE


def judge(table: pa.Table, recent: list[Series], detector: DetectorProcess) -> Judgement:
    """The changes of the series of the last 30 days (`recent`: from `window_start` on)
    new at their scenario's newest night and over the month, the series too few nights to
    judge (over the whole store), and whether a scenario's newest night is broken or
    unsteady."""
    few = too_few(table)
    newest = _newest_nights(table)
    judged = [one for one in recent if one.key not in few]
    found = list(zip(judged, find_series_changes(detector, judged), strict=True))
    tonight = [(one, of_series) for one, of_series in found
               if of_series and one.nights[-1].night == newest.get(one.scenario)]
    before = find_series_changes(detector, [replace(one, nights=one.nights[:-1])
                                            for one, _ in tonight])
    since_last = [(one, new) for (one, of_series), shown in zip(tonight, before, strict=True)
                  if (new := _new(of_series, shown))]
    horizon = max((one.nights[-1].when for one in recent), default=datetime.min) - MONTH
    month = [(one, kept) for one, of_series in found
             if (kept := [change for change in of_series
                          if one.nights[change.index].when >= horizon])]
    return Judgement(since_last, month, few, _broken(table, newest),
                     [one for one in recent if one.nights[-1].night == newest.get(one.scenario)])


def _new(found: list[Change], shown: list[Change]) -> list[Change]:
    """The changes of `found` (with the newest night) not `shown` without it (module
    docstring: the same first night and direction)."""
    before = {(change.index, change.direction) for change in shown}
    return [change for change in found if (change.index, change.direction) not in before]


def print_summary(update: Update, judgement: Judgement, console: Console) -> None:
    """The screen (module docstring)."""
    console.print(_headline(update), highlight=False, soft_wrap=True)  # paths whole
    if judgement.broken:
        console.print(f"[bold red]the newest night cannot be judged[/] (exit 3): "
                      f"{markup(judgement.broken)}", highlight=False, soft_wrap=True)
    _section(console, "since the last night", judgement.since_last, _since_last)
    _section(console, "in the last 30 days", judgement.month, _over_month)
    _print_few(console, judgement.few)
    _print_unread(console, update.table)


def _since_last(found: list[tuple[Series, Change]]) -> str:
    """Each figure that changed at the newest night, with how much."""
    return ", ".join(f"{markup(one.figure)} {change.relative:+.0%}" for one, change in found)


def _over_month(found: list[tuple[Series, Change]]) -> str:
    """How many changes on how many nights, and the largest."""
    one, change = max(found, key=lambda item: abs(math.log1p(item[1].relative)))
    nights = len({one.nights[change.index].night for one, change in found})
    return (f"{len(found)} change(s) on {nights} night(s), the largest {markup(one.figure)} "
            f"{change.relative:+.0%} on {markup(one.nights[change.index].night)}")


def too_few(table: pa.Table) -> set[tuple]:
    """The series (SERIES_KEY) with fewer than MIN_NIGHTS nights with a figure (a row
    each)."""
    table = table.select([*SERIES_KEY, "run_id", "value"])
    runs = table.filter(pc.is_valid(table["run_id"]))
    nights = distinct(runs.filter(pc.is_valid(runs["value"])), SERIES_KEY)
    return {key for key in distinct(runs, SERIES_KEY) if nights.get(key, 0) < MIN_NIGHTS}


def _headline(update: Update) -> str:
    what = ", ".join(f"{count} {word}" for count, word in (
        (update.added, "new"), (update.changed, "changed"), (update.removed, "removed"),
        (update.rechecked, "read again, unchanged"))
        if count) or "nothing new"
    rebuilt = f"; rebuilt: {markup(update.rebuilt)}" if update.rebuilt else ""
    return (f"[bold]history[/] of {update.nights} night(s): {what}{rebuilt}\n"
            f"  store: {markup(update.location)}")


def _newest_nights(table: pa.Table) -> dict[str | None, str]:
    """Each scenario's newest night."""
    nights = sorted(distinct(table, ["when", "scenario", "night"]), key=lambda row: row[0])
    return {scenario: night for _, scenario, night in nights}


def _broken(table: pa.Table, newest: dict[str | None, str]) -> str | None:
    """Why a scenario's newest night cannot be judged — it could not be read, a run of it
    failed or is corrupt, or a run was unsteady (its own seconds disagreed: its figures
    stand for no steady state) — or None."""
    table = table.select(["scenario", "night", "run_id", "status", "unsteady"])
    rows = table.filter(pc.is_in(table["night"], value_set=pa.array(
        list(newest.values()), pa.string())))
    found = [(night, run_id, status, unsteady) for scenario, night, run_id, status, unsteady
             in distinct(rows, ["scenario", "night", "run_id", "status", "unsteady"])
             if newest.get(scenario) == night]
    problems = [f"{night}: {run_id or 'the night'} {status}"
                for night, run_id, status, _ in found if rank(status) >= rank(FAILED)]
    problems += [f"{night}: {run_id} unsteady" for night, run_id, _, unsteady in found
                 if unsteady]
    if not problems:
        return None
    more = f" and {len(problems) - MAX_LINES} more" if len(problems) > MAX_LINES else ""
    return ", ".join(problems[:MAX_LINES]) + more


def _section(console: Console, title: str, found: list[tuple[Series, list[Change]]],
             describe: Callable[[list[tuple[Series, Change]]], str]) -> None:
    """One line per system and case with a change (✗: one for the worse), what
    `describe` says of its changes."""
    cases: dict[tuple, list[tuple[Series, Change]]] = {}
    for one, changes in found:
        cases.setdefault((one.scenario, one.label()), []).extend(
            (one, change) for change in changes)
    console.print(f"[bold]{title}[/]: {len(found)} series changed", highlight=False)
    lines = sorted(cases.items(), key=lambda item: not _worse(item[1]))
    for (scenario, label), of_case in lines[:MAX_LINES]:
        mark = "[bold red]✗[/]" if _worse(of_case) else "[green]✓[/]"
        console.print(f"  {mark} {markup(scenario)}: {markup(label)}: {describe(of_case)}",
                      highlight=False)
    _more(console, len(cases))


def _worse(changes: list[tuple[Series, Change]]) -> bool:
    return any(change.direction == "regression" for _, change in changes)


def _print_few(console: Console, few: set[tuple]) -> None:
    """The series too few nights to judge, by scenario, system and case."""
    cases = sorted({(scenario, system, case) for scenario, system, case, *_ in few})
    if not cases:
        return
    console.print(f"[bold]too few nights to judge[/] (fewer than {MIN_NIGHTS} with a figure):",
                  highlight=False)
    for scenario, system, case in cases[:MAX_LINES]:
        console.print(f"  {markup(scenario)}: {markup(' '.join(filter(None, (system, case))))}",
                      highlight=False)
    _more(console, len(cases))


def _print_unread(console: Console, table: pa.Table) -> None:
    """The nights not read, one line each."""
    rows = table.filter(pc.is_null(table["run_id"])).to_pylist()
    if rows:
        console.print("[bold]not read[/]:", highlight=False)
    for row in rows[:MAX_LINES]:
        console.print(f"  [red]{markup(row['status'])}[/]: {markup(row['problem'])}",
                      highlight=False, soft_wrap=True)
    _more(console, len(rows))


def _more(console: Console, count: int) -> None:
    if count > MAX_LINES:
        console.print(f"  … and {count - MAX_LINES} more (--json lists every series)",
                      highlight=False)


