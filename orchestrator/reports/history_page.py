"""The history page: every night of every series on one self-contained HTML page.

Input: the series document the history builds (one entry per system × case × figure, each
with its nights and change points). Per system and case the page draws a latency chart
(log scale) and a throughput chart, each figure's sampling band around its line, change
points marked with their size, nights of a bad status and unsteady nights marked; a hover
or a click on a night shows its figures and a link to that night's report.

A year of nights × dozens of series is drawn by uPlot (vendored: vendor/uplot/README.md;
docs/design.md, "The history page"): a canvas per chart, the figures carried once as
JSON. Everything is inlined, so the page opens with no network. Strings from the document
reach the page only as JSON (with `<`, `>` and `&` escaped) read by history.js into text
nodes, and a report's path becomes a link only when it is relative and stays under the
page's folder (`report_href`).
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, datetime
from html import escape
from pathlib import Path
from urllib.parse import quote

from sixnines.formats.atomic import write_atomically
from sixnines.formats.status import OK, worst
from sixnines.orchestrator.reports.html import asset
from sixnines.orchestrator.reports.model import colour

THROUGHPUT_UNIT = "msg/s"
UPLOT = "vendor/uplot/"
#: Significant digits a figure keeps on the page (HdrHistogram holds 3, the read-out shows 4):
#: a year of nights × dozens of series stays a few hundred KB.
DIGITS = 4
_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:")
_CONTROL = re.compile(r"[\x00-\x1f\x7f\\]")


def report_href(path: object) -> str | None:
    """The link to a night's report, or None when `path` is not a relative path that stays
    under the page's folder: absolute paths, `..`, URLs of any scheme (`javascript:`,
    `file:`), backslashes, control characters and surrounding spaces are refused. Each segment is
    percent-encoded, so no character of the path can turn it into something else."""
    if not isinstance(path, str) or path != path.strip() or path.startswith("/") \
            or _SCHEME.match(path) or _CONTROL.search(path):
        return None
    segments = [segment for segment in path.split("/") if segment not in ("", ".")]
    if not segments or ".." in segments:
        return None
    return "/".join(quote(segment, safe="") for segment in segments)


def _number(value: object) -> float | None:
    """A finite figure rounded to DIGITS significant digits; anything else None."""
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        return None
    return float(f"{value:.{DIGITS}g}")


def _epoch(when: object) -> float | None:
    """Seconds since 1970 of an ISO-8601 time (UTC when it names no zone)."""
    try:
        moment = datetime.fromisoformat(str(when))
    except ValueError:
        return None
    return (moment if moment.tzinfo else moment.replace(tzinfo=UTC)).timestamp()


def _text(value: object) -> str:
    return "" if value is None else str(value)


def _chart_key(series: Mapping) -> tuple[str, str]:
    """Latency figures share a log-scale chart per metric; rates a linear one."""
    unit = _text(series.get("unit"))
    return ("throughput" if unit == THROUGHPUT_UNIT else _text(series.get("metric")), unit)


def _timeline(group: Sequence[Mapping]) -> tuple[list[tuple[float, str]], int]:
    """Every night of a system and case, in time order, and how many had no readable time
    (those are left out)."""
    seen: dict[str, float | None] = {}
    for series in group:
        for night in series.get("nights") or ():
            seen.setdefault(_text(night.get("night")), _epoch(night.get("when")))
    timed = sorted((when, night) for night, when in seen.items() if when is not None)
    return timed, len(seen) - len(timed)


def _line(series: Mapping, place: Mapping[str, int], count: int) -> dict:
    """One figure's values, band and unsteady nights on the section's timeline, and its
    change points moved to that timeline's indices."""
    value: list[float | None] = [None] * count
    low: list[float | None] = [None] * count
    high: list[float | None] = [None] * count
    unsteady: list[int] = []
    order: list[int | None] = []
    for night in series.get("nights") or ():
        at = place.get(_text(night.get("night")))
        order.append(at)
        if at is None:
            continue
        value[at], low[at], high[at] = (_number(night.get(key)) for key in
                                        ("value", "low", "high"))
        if night.get("unsteady") is True:
            unsteady.append(at)
    changes = []
    for change in series.get("changes") or ():
        index = change.get("index")
        if isinstance(index, int) and 0 <= index < len(order) and order[index] is not None:
            changes.append({"at": order[index], "relative": _number(change.get("relative")),
                            "before": _number(change.get("before")),
                            "after": _number(change.get("after")),
                            "direction": _text(change.get("direction"))})
    return {"name": _text(series.get("figure")), "value": value, "low": low, "high": high,
            "unsteady": unsteady, "changes": changes}


def _nights(group: Sequence[Mapping], place: Mapping[str, int], count: int) -> dict:
    """Per night of the section: its worst status over the section's series and the first
    report link any of them gives."""
    status: list[str] = [OK] * count
    report: list[str | None] = [None] * count
    for series in group:
        for night in series.get("nights") or ():
            at = place.get(_text(night.get("night")))
            if at is None:
                continue
            status[at] = worst(status[at], _text(night.get("status")) or OK) or OK
            report[at] = report[at] or report_href(night.get("report"))
    return {"status": status, "report": report}


def _section(system: str, case: str, group: Sequence[Mapping]) -> dict:
    timed, untimed = _timeline(group)
    place = {night: at for at, (_, night) in enumerate(timed)}
    charts: dict[tuple[str, str], list[dict]] = {}
    for series in group:
        lines = charts.setdefault(_chart_key(series), [])
        lines.append({**_line(series, place, len(timed)), "colour": colour(len(lines))})
    return {"system": system, "case": case, "untimed": untimed,
            "night": [night for _, night in timed], "x": [when for when, _ in timed],
            **_nights(group, place, len(timed)),
            "charts": [{"title": f"{name} ({unit})" if unit else name, "unit": unit,
                        "log": unit != THROUGHPUT_UNIT, "lines": lines}
                       for (name, unit), lines in charts.items()]}


def sections(document: Mapping) -> list[dict]:
    """What history.js draws: one section per system and case, in the document's order."""
    groups: dict[tuple[str, str], list[Mapping]] = {}
    for series in document.get("series") or ():
        key = (_text(series.get("system")), _text(series.get("case")))
        groups.setdefault(key, []).append(series)
    return [_section(system, case, group) for (system, case), group in groups.items()]


def json_for_script(data: object) -> str:
    """JSON that cannot end its <script> element or open markup inside it."""
    text = json.dumps(data, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
    for raw, escaped in (("<", "\\u003c"), (">", "\\u003e"), ("&", "\\u0026"),
                         ("\u2028", "\\u2028"), ("\u2029", "\\u2029")):
        text = text.replace(raw, escaped)
    return text


def _styles(names: Iterable[str]) -> str:
    return "".join(f"<style>{asset(name)}</style>" for name in names)


def page(document: Mapping) -> str:
    """The whole page as HTML text."""
    title = _text(document.get("title")) or "history"
    drawn = sections(document)
    nights = len({night for section in drawn for night in section["night"]})
    return (
        '<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>sixnines history: {escape(title)}</title>"
        f"{_styles(('report.css', UPLOT + 'uPlot.min.css', 'history.css'))}</head><body>"
        f"<h1>sixnines history: {escape(title)}</h1>"
        f'<p class="note">{nights} night(s), {len(drawn)} system × case; generated '
        f"{escape(_text(document.get('generated')))}. Each line is one figure over the "
        "nights, its shaded band the night's sampling band; a dashed line marks a change "
        "point with its size, a red mark a night whose run was not ok, a ring an unsteady "
        "night. Hover a night for its figures, click to keep them; drag to zoom, "
        "double-click to reset.</p>"
        f'<script type="application/json" id="history-data">{json_for_script(drawn)}'
        f'</script><main id="history"></main>'
        f"<script>{asset(UPLOT + 'uPlot.iife.min.js')}</script>"
        f"<script>{asset('history.js')}</script></body></html>\n"
    )


def write_history_page(document: dict, path: Path) -> None:
    """Write the page for this series document to `path`, whole or not at all."""
    write_atomically(Path(path), page(document))
