"""Open-loop and throughput-mode runs as the reports tell them apart (spark_jobs.load).

A throughput-mode run (`rate: max`) has no schedule: its latency is saturation latency
(receive − send while the system is flooded), so every report labels it so, plots it apart
and compares it only with another saturation run; its headline is throughput.
"""

from __future__ import annotations

from sixnines.formats.summary import RunSummary
from sixnines.spark_jobs.load import OPEN_LOOP, SATURATION, load_of

#: (summary field, label) of the latency each load measures
LATENCY = {OPEN_LOOP: ("latency_us", "latency"),
           SATURATION: ("saturation_latency_us", "saturation latency")}


def run_load(summary: RunSummary) -> str:
    """The summary's `load`; a run the analysis never saw (failed) by its parameters."""
    return summary.load or load_of(summary.params)


def saturation(summary: RunSummary) -> bool:
    return run_load(summary) == SATURATION


def latency_of(summary: RunSummary) -> tuple[str, str]:
    """(summary field, label) of the run's latency."""
    return LATENCY[run_load(summary)]
