"""The page's "Repeats" section: each repeated case's merged distribution, and how far its
repeats spread (orchestrator.results.repeats makes both; the console shows the same)."""

from __future__ import annotations

from collections.abc import Sequence
from html import escape

from sixnines.formats.summary import RATES_SPREAD, RepeatedCase, Spread
from sixnines.orchestrator.reports.table import (
    FIGURE_KEYS,
    METRICS,
    counts_line,
    metrics_table,
    micro,
    rate,
)
from sixnines.orchestrator.results.console_tables import SPREAD_ROWS

LABELS = dict(METRICS)
HEAD = "".join(f"<th>{key}</th>" for key in FIGURE_KEYS)


def _band(spread: Spread | None) -> str:
    return "–" if spread is None or spread.band_pct is None else f"{spread.band_pct:.1f}"


def _spread_table(case: RepeatedCase) -> str:
    """Per latency metric, the repeats' min, median and max of each figure and the band
    between them (max / min − 1, %)."""
    rows = []
    for field, by_key in case.spread.items():
        if field == RATES_SPREAD:
            continue
        label = escape(LABELS.get(field, field.removesuffix("_us").replace("_", " ")))
        for row, statistic in SPREAD_ROWS:
            cells = "".join(f"<td>{micro(getattr(by_key[key], statistic, None))}</td>"
                            if key in by_key else "<td>–</td>" for key in FIGURE_KEYS)
            rows.append(f'<tr><td class="text">{label} {escape(row.strip())}</td>{cells}</tr>')
        cells = "".join(f"<td>{_band(by_key.get(key))}</td>" for key in FIGURE_KEYS)
        rows.append(f'<tr><td class="text">{label} band %</td>{cells}</tr>')
    return (f'<div class="scroll"><table class="figures spread"><thead><tr>'
            f'<th class="text">repeats, µs</th>{HEAD}</tr></thead>'
            f'<tbody>{"".join(rows)}</tbody></table></div>')


def _rates(case: RepeatedCase) -> str:
    rates = case.spread.get(RATES_SPREAD, {})
    parts = [f"{name.replace('_', ' ')}: {rate(spread.min)} … {rate(spread.max)} msg/s "
             f"(band {_band(spread)}%)" for name, spread in rates.items()]
    return f'<p class="note">repeats {escape(" · ".join(parts))}</p>' if parts else ""


def _case(case: RepeatedCase) -> str:
    merged = case.merged
    return (f"<article><h3>{escape(str(merged.run_id))}</h3>"
            f'<p class="note">{len(case.merged_from)} of {len(case.runs)} repeats merged '
            f'({escape(", ".join(case.merged_from))}): their histograms added, the figures '
            f"taken from the sum · status {escape(str(merged.status))}</p>"
            + "".join(f'<p class="bad">{escape(problem)}</p>' for problem in merged.problems)
            + "".join(f'<p class="note">{escape(note)}</p>' for note in merged.notes)
            + f"{counts_line(merged)}{metrics_table(merged)}{_spread_table(case)}"
            f"{_rates(case)}</article>")


def section(cases: Sequence[RepeatedCase]) -> str:
    """The section, or nothing when no case was repeated."""
    if not cases:
        return ""
    return ('<section id="repeats"><h2>Repeats</h2><p class="note">Each case ran '
            f"{max(len(case.runs) for case in cases)} times, interleaved with the others. "
            "Merged: every repeat's messages in one distribution (histograms add; "
            "percentiles are never averaged). Below it, each figure's lowest, median and "
            "highest value across the repeats and the band between them (max/min − 1): the "
            "run-to-run noise <code>sixnines compare</code> allows for.</p>"
            f'{"".join(_case(case) for case in cases)}</section>')
