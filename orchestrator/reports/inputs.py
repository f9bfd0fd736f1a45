"""What the report reads besides the summaries: per run, the per-message series
(`<run-id>/report/series.json`, written by the Spark analysis) and the HdrHistogram
percentile distributions (`<run-id>/report/<metric>.hgrm`).

Either may be missing (a run analysed before the per-message analysis existed, a failed
run): the page then shows what the summaries allow and says what is missing, so nothing
here raises on absent or malformed files. A results directory is untrusted input: each
file is reached through formats.run_files (a plain run id, nothing outside the results
directory, a regular file) and read within a bound.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from sixnines.formats.hgrm import MAX_HGRM_BYTES
from sixnines.formats.json_input import read_json
from sixnines.formats.layout import REPORT_DIR, SERIES_FILE, hgrm_file
from sixnines.formats.run_files import RefusedPath, file_under, read_bounded
from sixnines.formats.summary import RunSummary

#: More than a series.json holds: a dozen curves of at most 2,000 points each.
MAX_SERIES_BYTES = 64 * 1024 * 1024


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
    """Parse HdrHistogram's percentile-distribution text; None when absent, empty or not
    one (no regular file, larger than any .hgrm)."""
    try:
        text = read_bounded(path, MAX_HGRM_BYTES).decode("utf-8", errors="replace")
    except (OSError, RefusedPath):
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
    if not path.exists():
        return None, None
    try:
        series = read_json(path, MAX_SERIES_BYTES)
    except (OSError, ValueError) as error:  # RefusedJson, RefusedPath among them
        return None, f"{path.name} is unreadable ({error})"
    if not isinstance(series, dict):
        return None, f"{path.name} does not hold a JSON object"
    return series, None


def read_run(results_dir: Path, summary: RunSummary, metrics: tuple[str, ...]) -> RunInputs:
    """Everything the report uses for one run. The run id is a name from a file: it is
    followed only as a plain name, to files inside the results directory
    (formats.run_files.file_under)."""
    try:
        series_path = file_under(results_dir, summary.run_id or "", REPORT_DIR, SERIES_FILE)
        hgrms = {m: file_under(results_dir, summary.run_id or "", REPORT_DIR, hgrm_file(m))
                 for m in metrics}
    except RefusedPath:
        return RunInputs(summary)
    series, problem = read_series(series_path)
    hgrm = {m: d for m, path in hgrms.items() if (d := read_hgrm(path)) is not None}
    return RunInputs(summary, series, problem, hgrm)
