"""The store's rows as series — one figure of one system and case of a scenario, night after
night — where their level changed, and the JSON document the history page reads.

Where a series changed is `find_series_changes`, the one place that judges it: the
change-point detector (orchestrator.results.changes, run in its own process:
history.detector) over its nights, each with its figure, sampling band, steadiness and
status. A level needs changes.MIN_NIGHTS nights, so
a series with fewer than two such levels' nights (MIN_NIGHTS) is not judged.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable, Iterator, Sequence
from dataclasses import asdict, dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from sixnines.formats.layout import PAGE_FILE, REPORT_DIR
from sixnines.orchestrator.results import changes
from sixnines.orchestrator.results.changes import Change, Night
from sixnines.orchestrator.results.history.detector import DetectorProcess
from sixnines.orchestrator.results.history.rows import THROUGHPUT

#: A series with fewer nights with a figure is not judged: a level before and a level
#: after a change each need the detector's MIN_NIGHTS.
MIN_NIGHTS = 2 * changes.MIN_NIGHTS
SERIES_KEY = ("scenario", "system", "case", "metric", "figure")
#: The store's columns a series' night is made of.
NIGHT_COLUMNS = ("unit", "night", "when", "value", "low", "high", "status", "unsteady",
                 "samples", "root", "path", "problem")


@dataclass(frozen=True)
class SeriesNight:
    """One night's figure of one series."""
    night: str  # the night's id (its directory's name)
    when: datetime
    value: float | None  # None: no figure that night (failed, corrupt, not comparable)
    low: float | None  # its sampling band, absolute
    high: float | None
    status: str
    samples: int | None  # the values a latency figure rests on
    report: str | None  # its results' page, absolute (a document makes it relative)
    unsteady: bool = False  # the run's own windows disagreed (formats.summary.Steadiness)


@dataclass
class Series:
    scenario: str | None
    system: str | None
    case: str
    metric: str  # latency | saturation_latency | throughput
    figure: str  # p50 … max, send_rate, receive_rate
    unit: str
    nights: list[SeriesNight] = field(default_factory=list)

    @property
    def key(self) -> tuple:
        """Its SERIES_KEY: what names it across nights."""
        return tuple(getattr(self, name) for name in SERIES_KEY)

    @property
    def higher_is_worse(self) -> bool:
        return self.metric != THROUGHPUT

    def label(self) -> str:
        """'tcp message_size=64' (with its scenario in front when asked)."""
        return " ".join(part for part in (self.system or "?", self.case) if part)


def find_series_changes(detector: DetectorProcess, series: Sequence[Series]
                        ) -> list[list[Change]]:
    """Where each series' level changed: the detector over its nights (module
    docstring)."""
    return detector.find([([Night(night.night, night.value, night.low, night.high,
                                  night.unsteady, night.status) for night in one.nights],
                           one.higher_is_worse) for one in series])


def load_series(table: pa.Table, since: datetime | None = None) -> list[Series]:
    """Every series of the store's `table` (nights from `since` on), nights in order. A
    night that could not be read (corrupt) is a night without a figure in every series of
    its scenario."""
    table = table.select(list(dict.fromkeys((*SERIES_KEY, *NIGHT_COLUMNS, "run_id"))))
    if since is not None:
        table = table.filter(pc.greater_equal(table["when"], pa.scalar(since, pa.timestamp("ms"))))
    runs = table.filter(pc.is_valid(table["run_id"]))
    unread = table.filter(pc.and_(pc.is_null(table["run_id"]),
                                  pc.equal(table["status"], pa.scalar("corrupt"))))
    series = list(_grouped(runs.sort_by([(name, "ascending")
                                         for name in (*SERIES_KEY, "when")])))
    for row in unread.to_pylist():
        for one in series:
            if one.scenario == row["scenario"]:
                one.nights.append(_night(row, None))
                one.nights.sort(key=lambda night: night.when)
    return series


def _grouped(table: pa.Table) -> Iterator[Series]:
    columns = {name: table[name].to_pylist() for name in (*SERIES_KEY, *NIGHT_COLUMNS)}
    reports: dict[tuple[str, str], str] = {}
    current: Series | None = None
    for index in range(table.num_rows):
        row: dict[str, Any] = {name: values[index] for name, values in columns.items()}
        if current is None or current.key != tuple(row[name] for name in SERIES_KEY):
            if current is not None:
                yield current
            current = Series(row["scenario"], row["system"], row["case"], row["metric"],
                             row["figure"], row["unit"])
        place: tuple[str, str] = (row["root"], row["path"])
        if place not in reports:
            reports[place] = os.path.join(*place, REPORT_DIR, PAGE_FILE)
        current.nights.append(_night(row, reports[place]))
    if current is not None:
        yield current


def _night(row: dict[str, Any], report: str | None) -> SeriesNight:
    return SeriesNight(row["night"], row["when"], row.get("value"), row.get("low"),
                       row.get("high"), row["status"] or "failed", row.get("samples"), report,
                       bool(row.get("unsteady")))


def history_document(series: list[Series], found: list[list[Change]], title: str,
                     folder: Path) -> dict[str, Any]:
    """What the history page shows: every series with its nights and changes (`found`,
    series by series), each night's report relative to `folder` (where the document is
    read from)."""
    relative = functools.cache(lambda report: os.path.relpath(report, folder))
    return {"title": title, "generated": datetime.now().astimezone().isoformat(
                timespec="seconds"),
            "series": [_series_json(one, changes_of, relative)
                       for one, changes_of in zip(series, found, strict=True)]}


def _series_json(series: Series, found: list[Change], relative: Callable[[str], str]
                 ) -> dict[str, Any]:
    nights = [{**{key: value for key, value in asdict(night).items() if key != "samples"},
               "when": night.when.isoformat(),
               "report": night.report and relative(night.report)} for night in series.nights]
    return {"scenario": series.scenario, "system": series.system, "case": series.case,
            "metric": series.metric, "figure": series.figure, "unit": series.unit,
            "nights": nights,
            "changes": [asdict(change) for change in found]}
