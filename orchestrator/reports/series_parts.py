"""Reading the parts of a run's series.json the per-run plots draw (orchestrator.reports
per_run and timeline), and the colour each curve keeps on every plot of the page.

series.json is read as untrusted JSON: a list that is absent or not a list drops the plot
that needs it, and a value that is not a number is a gap.
"""

from __future__ import annotations

LATENCY, MEAN, SERVICE = "#1f77b4", "#0b3c61", "#ff7f0e"
P50, P99, MAXIMUM = "#1f77b4", "#ff7f0e", "#d62728"
SENDER, RECEIVER, BROKER = "#2ca02c", "#9467bd", "#8c564b"
INTENDED = "#222222"


def clean(values: list) -> list[float | None]:
    """Numbers as they are, anything else (null for an undefined window) as a gap."""
    return [v if isinstance(v, int | float) and not isinstance(v, bool) else None
            for v in values]


def numbers(part: object, *keys: str) -> list[list[float | None]] | None:
    """The named lists of a series.json part, cut to a common length; None when any is
    missing."""
    if not isinstance(part, dict):
        return None
    columns = [column for key in keys if isinstance(column := part.get(key), list)]
    if len(columns) < len(keys):
        return None
    length = min(len(c) for c in columns)
    return [clean(c[:length]) for c in columns]
