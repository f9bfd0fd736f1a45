"""`history --junit`: what the history judged tonight, as the checks a CI server shows
(orchestrator.results.junit).

One test suite per scenario, system and case of each scenario's newest night, one test case
per series there (latency p50 … max, send and receive rate): failed when a change for the
worse is news since the last night (history.console), its message and details the
evidence — the level before and after, the change, the nights' typical sampling bands on
either side, the nights at the new level and where the newest's report is; skipped when
the series has too few nights to judge; passed otherwise (an improvement too). One case of
its own says whether the newest nights could be judged at all: it fails when one could
not be read, holds a failed or corrupt run, or an unsteady one (exit 3).

The classname is `<scenario>.<system>.<case>` (Jenkins shows the case as the class).
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence

from sixnines.orchestrator.results.changes import Change
from sixnines.orchestrator.results.history.console import Judgement
from sixnines.orchestrator.results.history.series import MIN_NIGHTS, Series, SeriesNight
from sixnines.orchestrator.results.junit import CaseOutcome, Check, classname

#: The suite of what concerns the nights as a whole.
WHOLE = "history"


def history_checks(judgement: Judgement) -> list[Check]:
    """Every check of tonight's `judgement`."""
    checks = [Check(WHOLE, "newest nights usable", WHOLE,
                    CaseOutcome.FAILED if judgement.broken else CaseOutcome.PASSED,
                    f"cannot be judged: {judgement.broken}" if judgement.broken else "")]
    news = {one.key: found for one, found in judgement.since_last}
    for one in judgement.tonight:
        checks.append(_series_check(one, news.get(one.key, []), one.key in judgement.few))
    return checks


def _series_check(series: Series, news: list[Change], few: bool) -> Check:
    suite = " ".join(part for part in (series.scenario, series.label()) if part)
    name = f"{series.metric} {series.figure}"
    where = classname(series.scenario, series.system, series.case)
    if few:
        counted = sum(night.value is not None for night in series.nights)
        return Check(suite, name, where, CaseOutcome.SKIPPED,
                     f"{counted} recent night(s) with the figure: a series needs "
                     f"{MIN_NIGHTS} to be judged (two levels of 3 nights)")
    worse = [change for change in news if change.direction == "regression"]
    if not worse:
        return Check(suite, name, where, CaseOutcome.PASSED)
    message, details = _evidence(series, worse[-1])
    return Check(suite, name, where, CaseOutcome.FAILED, message, details)


def _evidence(series: Series, change: Change) -> tuple[str, str]:
    """The change in one line, and the same with its nights a line each."""
    before, after = series.nights[:change.index], series.nights[change.index:]
    first = series.nights[change.index]
    message = (f"{series.metric} {series.figure} changed for the worse from night "
               f"{first.night} on: {_value(change.before, series)} before, "
               f"{_value(change.after, series)} after ({change.relative:+.1%}), beyond the "
               f"nights' sampling bands (before {_band(before, series)}, after "
               f"{_band(after, series)}) and their night-to-night spread")
    lines = [message, f"before: {_value(change.before, series)} (level of "
             f"{sum(night.value is not None for night in before)} night(s); typical band "
             f"{_band(before, series)})",
             f"after: {_value(change.after, series)} (typical band {_band(after, series)})",
             f"change: {change.relative:+.1%}",
             *(f"night {night.night}: {_value(night.value, series)}, band "
               f"{_band([night], series)}, {night.status}"
               f"{', unsteady' if night.unsteady else ''}" for night in after),
             f"report of the newest night: {after[-1].report or 'none'}"]
    return message, "\n".join(lines)


def _band(nights: Sequence[SeriesNight], series: Series) -> str:
    """The typical band of `nights` (the median of their lows and of their highs), or
    'none' where none has one."""
    lows = [night.low for night in nights if night.low is not None]
    highs = [night.high for night in nights if night.high is not None]
    if not (lows and highs):
        return "none"
    return (f"{statistics.median(lows):,.1f}–{statistics.median(highs):,.1f} "
            f"{series.unit}")


def _value(value: float | None, series: Series) -> str:
    return "none" if value is None else f"{value:,.1f} {series.unit}"
