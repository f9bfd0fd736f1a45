"""What the report reads besides the summaries: per run, the per-message series
(`<run-id>/report/series.json`, written by the Spark analysis) and the HdrHistogram
percentile distributions (`<run-id>/report/<metric>.hgrm`).

Either may be missing (a run analysed before the per-message analysis existed, a failed
run): the page then shows what the summaries allow and says what is missing, so nothing
here raises on absent or malformed files.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from sixnines.formats.summary import RunSummary

SERIES_FILE = "series.json"


@dataclass(frozen=True)
class Distribution:
    """One .hgrm file: (percentile as a fraction, value µs) rows."""

    percentiles: tuple[float, ...]
    values: tuple[float, ...]


@dataclass(frozen=True)
class RunInputs:
    summary: RunSummary
    series: dict | None = None
    series_problem: str | None = None  # the file exists but cannot be used
    hgrm: dict[str, Distribution] = field(default_factory=dict)  # by metric name

    @property
    def run_id(self) -> str:
        return str(self.summary.run_id or "?")


def read_hgrm(path: Path) -> Distribution | None:
    """Parse HdrHistogram's percentile-distribution text; None when absent or empty."""
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None
    percentiles, values = [], []
    for line in text.splitlines():
        cells = line.split()
        if len(cells) < 3 or line.lstrip().startswith("#"):
            continue
        try:
            value, percentile = float(cells[0]), float(cells[1])
        except ValueError:
            continue  # the column header
        percentiles.append(percentile)
        values.append(value)
    if not values:
        return None
    return Distribution(tuple(percentiles), tuple(values))


def read_series(path: Path) -> tuple[dict | None, str | None]:
    """(series, None), or (None, why it cannot be used); (None, None) when absent."""
    if not path.is_file():
        return None, None
    try:
        series = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as error:
        return None, f"{path.name} is unreadable ({error})"
    if not isinstance(series, dict):
        return None, f"{path.name} does not hold a JSON object"
    return series, None


def read_run(results_dir: Path, summary: RunSummary, metrics: tuple[str, ...]) -> RunInputs:
    """Everything the report uses for one run. The run id names a directory, so one that
    could step outside the results directory is not followed."""
    run_id = summary.run_id or ""
    if not run_id or "/" in run_id or "\\" in run_id or run_id in (".", ".."):
        return RunInputs(summary)
    report = results_dir / run_id / "report"
    series, problem = read_series(report / SERIES_FILE)
    hgrm = {m: d for m in metrics if (d := read_hgrm(report / f"{m}.hgrm")) is not None}
    return RunInputs(summary, series, problem, hgrm)
