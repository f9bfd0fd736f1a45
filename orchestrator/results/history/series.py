"""The store's rows as series — one figure of one system and case of a scenario, night after
night — where their level changed, and the JSON document the history page reads.

Where a series changed is `find_series_changes`, the one place that judges it. It holds
each night against the night before that has the figure, by `compare`'s rule
(orchestrator.results.compare: beyond both nights' sampling bands and the relative floor,
and, for latency, by more than its absolute floor): a step from one night to the next is
found on the night it happens, a single-night spike on its night and on the next, and a
slow creep over weeks not at all — that takes a change-point detector over the whole
series, which is what this function is to call instead.
"""

from __future__ import annotations

import math
import os
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from sixnines.formats.layout import PAGE_FILE, REPORT_DIR
from sixnines.formats.summary import Figures
from sixnines.orchestrator.results.compare import latency_figure, rate_change
from sixnines.orchestrator.results.history.rows import THROUGHPUT

#: The relative floor of `compare`'s rule (its --threshold).
THRESHOLD_PCT = 10.0
#: A series with fewer nights with a figure is not judged: a level is not seen in fewer.
MIN_NIGHTS = 5
SERIES_KEY = ("scenario", "system", "case", "metric", "figure")
#: The store's columns a series' night is made of.
NIGHT_COLUMNS = ("unit", "night", "when", "value", "low", "high", "status", "samples", "root",
                 "path", "problem")


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
    report: str | None  # its results' page, relative to the store's folder
    unsteady: bool = False


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

    @property
    def judged(self) -> bool:
        """Enough nights with the figure to judge the series (MIN_NIGHTS)."""
        return sum(night.value is not None for night in self.nights) >= MIN_NIGHTS

    def label(self) -> str:
        """'tcp message_size=64' (with its scenario in front when asked)."""
        return " ".join(part for part in (self.system or "?", self.case) if part)


@dataclass(frozen=True)
class Change:
    """Where a series' level changed: `index` is the first night at the new level."""
    index: int
    before: float
    after: float
    relative: float  # after / before - 1
    direction: str  # regression | improvement


def find_series_changes(series: Series, start: int = 0,
                        threshold_pct: float = THRESHOLD_PCT) -> list[Change]:
    """The changes of `series` at nights `start` and after (module docstring)."""
    changes = []
    previous: SeriesNight | None = None
    for index, night in enumerate(series.nights):
        if night.value is None:
            continue
        if previous is not None and previous.value is not None and index >= start:
            verdict = _verdict(series, previous, night, threshold_pct)
            if verdict in ("regression", "improved"):
                changes.append(Change(index, previous.value, night.value,
                                      night.value / previous.value - 1,
                                      "regression" if verdict == "regression"
                                      else "improvement"))
        previous = night
    return changes


class StoredBand:
    """A night's band as the store keeps it, in the shape compare's rule reads a band."""

    def __init__(self, night: SeriesNight) -> None:
        self.night = night

    def half_widths(self, key: str) -> tuple[float, float]:
        value, low, high = self.night.value, self.night.low, self.night.high
        if not (value and low and high):
            return 0.0, 0.0
        return math.log(value / low), math.log(high / value)


def _verdict(series: Series, before: SeriesNight, after: SeriesNight,
             threshold_pct: float) -> str:
    """compare's verdict on the figure from `before` to `after`."""
    if series.metric == THROUGHPUT:
        return rate_change(before.value, after.value, series.figure, threshold_pct).verdict
    a, b = (Figures.model_validate({series.figure: night.value, "count": night.samples or 0})
            for night in (before, after))
    return latency_figure(a, b, series.figure, threshold_pct,
                          (StoredBand(before), StoredBand(after))).verdict  # type: ignore[arg-type]


def load_series(table: pa.Table, location: Path, since: datetime | None = None
                ) -> list[Series]:
    """Every series of the store's `table` (nights from `since` on), nights in order. A
    night that could not be read (corrupt) is a night without a figure in every series of
    its scenario."""
    table = table.select(list(dict.fromkeys((*SERIES_KEY, *NIGHT_COLUMNS, "run_id"))))
    if since is not None:
        table = table.filter(pc.greater_equal(table["when"], pa.scalar(since, pa.timestamp("ms"))))
    runs = table.filter(pc.is_valid(table["run_id"]))
    unread = table.filter(pc.and_(pc.is_null(table["run_id"]),
                                  pc.equal(table["status"], pa.scalar("corrupt"))))
    series = list(_grouped(runs.sort_by([(name, "ascending") for name in (*SERIES_KEY, "when")]),
                           location))
    for row in unread.to_pylist():
        for one in series:
            if one.scenario == row["scenario"]:
                one.nights.append(_night(row, None))
                one.nights.sort(key=lambda night: night.when)
    return series


def _grouped(table: pa.Table, location: Path) -> Iterator[Series]:
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
            reports[place] = os.path.relpath(Path(*place, REPORT_DIR, PAGE_FILE), location)
        current.nights.append(_night(row, reports[place]))
    if current is not None:
        yield current


def _night(row: dict[str, Any], report: str | None) -> SeriesNight:
    return SeriesNight(row["night"], row["when"], row.get("value"), row.get("low"),
                       row.get("high"), row["status"] or "failed", row.get("samples"), report)


def history_document(series: list[Series], title: str,
                     threshold_pct: float = THRESHOLD_PCT) -> dict[str, Any]:
    """What the history page shows: every series with its nights and changes."""
    return {"title": title, "generated": datetime.now().astimezone().isoformat(
                timespec="seconds"),
            "series": [_series_json(one, threshold_pct) for one in series]}


def _series_json(series: Series, threshold_pct: float) -> dict[str, Any]:
    nights = [{**{key: value for key, value in asdict(night).items() if key != "samples"},
               "when": night.when.isoformat()} for night in series.nights]
    return {"scenario": series.scenario, "system": series.system, "case": series.case,
            "metric": series.metric, "figure": series.figure, "unit": series.unit,
            "nights": nights,
            "changes": [asdict(change) for change in find_series_changes(
                series, threshold_pct=threshold_pct)]}
