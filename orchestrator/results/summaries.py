"""summary.json files read back by `compare` and `runs`, which trust nothing in them.

A results directory may come from anywhere (a colleague's nightly run, a ticket), so a
summary is bounded before it is parsed (formats.json_input), validated against its model,
and then held to what the analysis can write: no NaN or infinity anywhere (JSON has
neither; sixnines never writes them), no negative count, rate or latency, percentiles that
never fall from p50 to the max, and a schema_version this sixnines knows. Anything else is
refused in one line naming the file and the field, as bad input: a comparison of figures
no run could produce would only say something false (a NaN p99 "not comparable", a
negative loss "better").
"""

from __future__ import annotations

import math
from itertools import pairwise
from pathlib import Path
from typing import Any, TypeVar

from pydantic import ValidationError

from sixnines.formats.document import first_error
from sixnines.formats.errors import BadInput
from sixnines.formats.json_input import read_json
from sixnines.formats.summary import (
    SCHEMA_VERSION,
    Figures,
    RepeatedCase,
    ResultsSummary,
    RunSummary,
)
from sixnines.formats.vocabulary import Metric
from sixnines.orchestrator.results.store import FIGURE_KEYS

#: A run's summary is a few kilobytes (its CPU and capacity sections included).
MAX_RUN_SUMMARY_BYTES = 16 * 1024 * 1024
#: A scenario's: up to 10,000 runs (orchestrator.scenario.model.MAX_RUNS) of those.
MAX_RESULTS_SUMMARY_BYTES = 256 * 1024 * 1024
COUNTS = ("sent", "received", "delivered", "lost", "unknown", "duplicated", "reordered",
          "unexpected", "clock_bound_ns")
RATES = ("send_rate", "receive_rate", "density_us")
LATENCIES = tuple(metric.summary_field for metric in Metric)
SPREAD_KEYS = ("mean", "lower_median", "robust_deviation")


class SummaryRefused(BadInput):
    """A summary.json that cannot be what sixnines wrote: exit 2, one line."""


Summary = TypeVar("Summary", ResultsSummary, RunSummary)


def read_results_summary(path: Path) -> ResultsSummary:
    """`<results>/summary.json`, or SummaryRefused naming the file and what is wrong."""
    return _read(path, ResultsSummary, MAX_RESULTS_SUMMARY_BYTES)


def read_run_summary(path: Path) -> RunSummary:
    """`<run>/report/summary.json`, or SummaryRefused naming the file and what is wrong."""
    return _read(path, RunSummary, MAX_RUN_SUMMARY_BYTES)


def _read(path: Path, model: type[Summary], max_bytes: int) -> Summary:
    try:
        body = read_json(path, max_bytes)
    except (OSError, ValueError) as exc:
        raise SummaryRefused(f"{path}: unreadable: {exc}") from None
    if not isinstance(body, dict):
        raise SummaryRefused(f"{path}: not a sixnines summary (a JSON object is expected)")
    why = _non_finite(body) or _newer(body)
    if why is not None:
        raise SummaryRefused(f"{path}: {why}")
    try:
        summary = model.model_validate(body)
    except ValidationError as exc:
        raise SummaryRefused(f"{path}: not a sixnines summary ({first_error(exc)})") from None
    runs = summary.runs if isinstance(summary, ResultsSummary) else [summary]
    for index, run in enumerate(runs):
        why = _impossible(run, f"runs[{index}]." if isinstance(summary, ResultsSummary) else "")
        if why is not None:
            raise SummaryRefused(f"{path}: {why}")
    cases: list[RepeatedCase] = summary.repeats if isinstance(summary, ResultsSummary) else []
    for index, case in enumerate(cases):
        why = _impossible(case.merged, f"repeats[{index}].merged.") or \
            _impossible_spread(case, f"repeats[{index}].spread.")
        if why is not None:
            raise SummaryRefused(f"{path}: {why}")
    return summary


def _impossible_spread(case: RepeatedCase, prefix: str) -> str | None:
    """The first figure's spread no repeats can have, in words: a negative figure or band,
    or min, median and max out of order (`compare` takes the band as a tolerance)."""
    for group, by_key in case.spread.items():
        for key, spread in by_key.items():
            ladder = (spread.min, spread.median, spread.max)
            if spread.min < 0 or (spread.band_pct or 0) < 0 or spread.repeats < 1 \
                    or list(ladder) != sorted(ladder):
                return (f"`{prefix}{_where((group, key))}` is {ladder} (band "
                        f"{spread.band_pct}%, {spread.repeats} repeats): no repeats spread "
                        "so")
    return None


#: Longest key of the file quoted in a message (a hostile key may be megabytes long).
MAX_KEY_SHOWN = 40


def _where(path: tuple) -> str:
    """A place in the file as `runs[0].latency_us.p99`, each key cut short."""
    keys = (f"[{part}]" if isinstance(part, int) else
            f".{part if len(part) <= MAX_KEY_SHOWN else part[:MAX_KEY_SHOWN] + '…'}"
            for part in path)
    return "".join(keys).lstrip(".")


def _non_finite(value: Any) -> str | None:
    """Where the first NaN or infinity is (Python's JSON reader takes `NaN`, `Infinity`
    and numbers too large for a float), walked without recursion."""
    stack: list[tuple[Any, tuple]] = [(value, ())]
    while stack:
        item, where = stack.pop()
        if isinstance(item, float) and not math.isfinite(item):
            return f"`{_where(where)}` is {item}, not a figure (sixnines never writes one)"
        if isinstance(item, dict):
            stack.extend((child, (*where, str(key))) for key, child in item.items())
        elif isinstance(item, list):
            stack.extend((child, (*where, index)) for index, child in enumerate(item))
    return None


def _newer(body: dict) -> str | None:
    """A schema_version past this sixnines' (SCHEMA_VERSION), in the file or any run:
    its fields may mean something else now, so it is not read as if they did not."""
    runs = body.get("runs")
    documents = [(body, ()), *((run, ("runs", index)) for index, run
                               in enumerate(runs if isinstance(runs, list) else [])
                               if isinstance(run, dict))]
    for document, where in documents:
        version = document.get("schema_version")
        if isinstance(version, int) and not isinstance(version, bool) \
                and version > SCHEMA_VERSION:
            return (f"`{_where((*where, 'schema_version'))}` is {version}: written by a newer "
                    f"sixnines (this one reads up to {SCHEMA_VERSION}); read it with that "
                    "version")
    return None


def _impossible(run: RunSummary, prefix: str) -> str | None:
    """The first figure of `run` the analysis cannot have written, in words."""
    found = None
    if run.schema_version < 1:
        found = "schema_version", f"{run.schema_version}: versions start at 1"
    for name in (*COUNTS, *RATES):
        found = found or _negative(name, getattr(run, name))
    for name in LATENCIES:
        figures = run.metric(name)
        if found is None and figures is not None:
            found = _impossible_figures(figures, f"{name}.")
    if found is None:
        return None
    field, why = found
    return f"`{prefix}{field}` is {why}"


def _negative(field: str, value: float | None) -> tuple[str, str] | None:
    if value is not None and value < 0:
        return field, f"{value}: it cannot be negative"
    return None


def _impossible_figures(figures: Figures, prefix: str) -> tuple[str, str] | None:
    """(field, why) of the first figure below 0, or below the percentile before it."""
    values = [(key, figures.figure(key)) for key in (*SPREAD_KEYS, *FIGURE_KEYS)]
    found = next(filter(None, (_negative(f"{prefix}{key}", value)
                               for key, value in [("count", figures.count), *values])), None)
    if found is not None:
        return found
    ladder = [(key, value) for key, value in values if key in FIGURE_KEYS and value is not None]
    for (lower, below), (key, value) in pairwise(ladder):
        if value < below:
            return f"{prefix}{key}", f"{value}, below {lower} ({below}): percentiles never fall"
    return None
