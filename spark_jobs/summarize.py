"""Per run, after its agents' passes: merged bucket counts → figures, .hgrm files, hlog
check.

Only sparse HDR buckets (at most COUNTS_LEN per agent and metric) and one clock-pair row
per receiving agent come back from the tasks to the process merging them per run
(spark_jobs.run_merge: the Spark application's main process, or the sidecar); the
percentiles come from `hdr.percentile_values` on the merged counts, exactly as any
HdrHistogram would report them, and the agents' own hlogs are cross-checked bucket by
bucket where they hold the same values. Lower median and robust deviation come from the
same buckets (see `distribution.robust_centre`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from sixnines.formats import hdr, hgrm
from sixnines.formats.atomic import write_atomically
from sixnines.formats.hlog import (
    HlogError,
    Interval,
    measured_counts,
    measured_intervals,
    read_hlog,
)
from sixnines.formats.load import HEADLINE, TAGS_BY_ROLE
from sixnines.formats.summary import SATURATED_LAG_P99_US, Figures, OutOfRange
from sixnines.formats.vocabulary import RECEIVER_TIMED, Load, Metric
from sixnines.spark_jobs.agent_rows import PAIRS
from sixnines.spark_jobs.distribution import Detail, robust_centre

METRICS = tuple(Metric)
HEADLINE_TAGS = frozenset(str(metric) for metric in HEADLINE.values())  # their hlog tags
NS_PER_US = 1000.0
CROSS_CLOCK, EXCLUDED = PAIRS[1:]
#: the first HDR bucket of values past SATURATED_LAG_P99_US (ns)
_LATE_FROM = int(hdr.bucket_indices(np.array([SATURATED_LAG_P99_US * NS_PER_US],
                                              dtype=np.int64))[0]) + 1


def _zeros() -> np.ndarray:
    return np.zeros(hdr.COUNTS_LEN, dtype=np.int64)


@dataclass
class MetricCounts:
    """Merged histogram of one metric plus the exact raw-value aggregates beside it."""

    counts: np.ndarray = field(default_factory=_zeros)
    total: float = 0.0  # sum of the raw values in ns
    max: int | None = None  # exact raw maximum in ns
    negative: int = 0
    too_large: int = 0
    sums: np.ndarray = field(default_factory=lambda: np.zeros(hdr.COUNTS_LEN))  # per bucket
    detail: Detail | None = None  # value counts of the median's bucket, when fetched

    @property
    def count(self) -> int:
        return int(self.counts.sum())


def metric_summary(metric: MetricCounts, unit: float = NS_PER_US) -> Figures:
    """Percentiles, max, mean, lower median and robust deviation (mean |x − lower median|),
    in values / unit (ns → µs by default), and the count; no percentile exceeds the exact
    max."""
    keys = (*hdr.PERCENTILE_KEYS, "max", "mean", "lower_median", "robust_deviation")
    if metric.count == 0 or metric.max is None:
        return Figures.model_validate({**dict.fromkeys(keys), "count": 0})
    values = np.minimum(hdr.percentile_values(metric.counts), metric.max)
    median, deviation = robust_centre(metric.counts, metric.sums, metric.detail)
    figures = [*(int(value) for value in values), metric.max, metric.total / metric.count,
               median, deviation]
    return Figures.model_validate(
        {**{key: value / unit for key, value in zip(keys, figures, strict=True)},
         "count": metric.count})


def hgrm_text(metric: MetricCounts) -> str:
    """HdrHistogram percentile distribution (what HdrHistogram's plotter reads), in µs,
    with the exact max in a last comment line."""
    exact = "none" if metric.max is None else f"{metric.max / NS_PER_US:.3f}"
    return hgrm.hgrm_text(metric.counts, NS_PER_US,
                          f"# Values in microseconds (ns / 1000); exact max = {exact} us\n")


def write_hgrm(path: Path, metric: MetricCounts) -> None:
    """The .hgrm file, whole or not at all (formats.atomic: WriteFailure names it)."""
    write_atomically(path, hgrm_text(metric))


@dataclass
class LogRead:
    """One agent's hlog reduced to what the analysis compares: its measured counts per tag
    (sparse: indices, counts), its measured intervals of the headline latency (how steady
    the run was: spark_jobs.steadiness), and for an agent that died, how far its log was
    written (ns since its t0, to the ms of the log's stamps; its last line may be cut
    short); or why it cannot be read (a damaged file: the run is refused,
    formats.integrity)."""

    tags: dict[str, tuple[np.ndarray, np.ndarray]]
    end_ns: int | None = None
    problem: str | None = None
    intervals: dict[str, list[Interval]] = field(default_factory=dict)

    def counts(self) -> dict[str, np.ndarray]:
        """The measured counts per tag as HDR counts arrays."""
        dense = {}
        for tag, (indices, counts) in self.tags.items():
            dense[tag] = _zeros()
            dense[tag][indices] = counts
        return dense


def read_log(path: str | Path, warmup_s: float, died: bool = False) -> LogRead:
    """An agent's hlog as a LogRead (`died`: its writer was killed as it appended)."""
    try:
        hlog = read_hlog(path, cut_short_end=died)
    except HlogError as error:
        return LogRead({}, problem=str(error))
    except OSError as error:
        return LogRead({}, problem=f"{path}: cannot be read ({error.strerror or error})")
    tags = {}
    for tag, counts in measured_counts(hlog, warmup_s).items():
        used = np.flatnonzero(counts)
        tags[tag] = (used, counts[used])
    return LogRead(tags, round(hlog.end_s * 1000) * 1_000_000 if died else None,
                   intervals=measured_intervals(hlog, warmup_s, HEADLINE_TAGS))


def _checked_tags(agent: str, role: str, off_clock: Mapping[str, int], load: Load
                  ) -> tuple[tuple[str, ...], list[str]]:
    """The hlog tags of an agent that hold the values the passes computed, and why any do not.

    An agent writes its latency and service_time hlog from its raw timestamps; the analysis
    leaves out or offset-corrects the deliveries whose producer is on another clock, so
    those tags only compare when every delivery of the agent was timed as recorded.
    """
    tags = TAGS_BY_ROLE[load].get(role, ())
    moved = off_clock.get(agent, 0)
    timed = [tag for tag in tags if tag in RECEIVER_TIMED]
    if not moved or not timed:
        return tags, []
    note = (f"agent {agent}: hlog {' and '.join(timed)} check not applicable: "
            f"{moved:,} of its deliveries came from a producer on another clock (raw in its "
            "hlog, left out or offset-corrected here)")
    return tuple(tag for tag in tags if tag not in RECEIVER_TIMED), [note]


def hlog_agreement(
    logged: Mapping[str, tuple[str, Mapping[str, np.ndarray]]],
    computed_counts: dict[str, dict[str, np.ndarray]],
    off_clock: Mapping[str, int],
    load: Load = Load.OPEN_LOOP,
) -> tuple[bool | None, list[str], list[str]]:
    """Does every agent's hlog hold exactly the buckets the passes built from its messages?

    logged maps agent_id → (role, its hlog's measured counts per tag; see read_log) for
    agents that have both files; off_clock maps agent_id → its deliveries not timed on its
    own clock alone (see ClockPairs); load says which tags agents write
    (formats.load.TAGS_BY_ROLE). Returns the verdict (None when there was nothing to
    compare), why tags were not applicable (facts), and one line per disagreement (only
    these make it False).
    """
    skipped: list[str] = []
    notes: list[str] = []
    compared = 0
    for agent, (role, from_log) in sorted(logged.items()):
        tags, why = _checked_tags(agent, role, off_clock, load)
        skipped += why
        for tag in tags:
            compared += 1
            counted = from_log.get(tag, _zeros())
            computed = computed_counts.get(agent, {}).get(tag, _zeros())
            if not np.array_equal(counted, computed):
                first = int(np.flatnonzero(counted != computed)[0])
                notes.append(
                    f"agent {agent}: hlog {tag} holds {int(counted.sum())} values, messages "
                    f"give {int(computed.sum())}; first differing bucket at "
                    f"{int(hdr.value_from_index(first))} ns"
                )
    if compared == 0:
        return None, skipped, []
    return not notes, skipped, notes


def out_of_range_notes(metrics: dict[str, MetricCounts]) -> list[str]:
    """Problem lines for values clipped into the histogram (mixed clocks, hung runs)."""
    notes = []
    for name, metric in metrics.items():
        if metric.negative:
            notes.append(f"{name}: {metric.negative} negative values counted as 0 "
                         "(timestamps from different clocks?)")
        if metric.too_large:
            notes.append(f"{name}: {metric.too_large} values above 1 h counted as 1 h")
    return notes


def summary_figures(metrics: dict[str, MetricCounts]) -> dict[str, Figures]:
    """The figures of each metric, by summary.json field (latency_us …)."""
    return {f"{name}_us": metric_summary(m) for name, m in metrics.items()}


def out_of_range(metrics: dict[str, MetricCounts]) -> dict[str, OutOfRange]:
    """summary.json `out_of_range`: values clipped into the histogram, per metric."""
    return {name: OutOfRange(negative=m.negative, too_large=m.too_large)
            for name, m in metrics.items()}


@dataclass(frozen=True)
class ClockPairs:
    """How the producer and receiver clocks of a run's timed deliveries paired up."""

    totals: dict[str, int]  # same_clock, cross_clock, excluded (summary "latency_pairs")
    bound_ns: int | None  # summary "clock_bound_ns": widest bound of a cross-clock delivery
    off_clock: dict[str, int]  # agent_id → its deliveries excluded or offset-corrected


def clock_pairs(agents: list[dict[str, Any]]) -> ClockPairs:
    """Merge the receiving agents' clock pair counts (agent_pass.clock_pairs)."""
    bounds = [a["clock_bound_ns"] for a in agents if a["clock_bound_ns"] is not None]
    off_clock = {a["agent_id"]: a[CROSS_CLOCK] + a[EXCLUDED] for a in agents}
    return ClockPairs(totals={name: sum(a[name] for a in agents) for name in PAIRS},
                      bound_ns=max(bounds, default=None),
                      off_clock={agent: n for agent, n in off_clock.items() if n})


def clock_warnings(pairs: ClockPairs, cross_host: bool) -> list[str]:
    """Say how many deliveries no latency covers because their ends' clocks differ
    (docs/design.md rule 3), and, unless the scenario already opted in, how to include them."""
    excluded = pairs.totals[EXCLUDED]
    if not excluded:
        return []
    left_out = (f"{excluded:,} deliveries left out of latency and service time (still counted "
                "as delivered): ")
    if cross_host:
        return [left_out + "no measured clock offset relates their producer and receiver"]
    return [left_out + "producer and receiver do not share a clock. To include them, set "
            "`cross_host_latency: true` in the scenario's placement: both ends are then put "
            "on the controller's clock by the measured offsets and the figures reported with "
            "that bound (clock_bound_ns)"]


def behind_s(send_lag: MetricCounts, send_rate: float | None, senders: int) -> float | None:
    """summary.json `behind_s`: the sends later than SATURATED_LAG_P99_US after their
    intended time, over each sending agent's share of the measured send rate; None
    without sends (formats.summary.RunSummary.behind_s)."""
    if not send_rate or send_lag.count == 0:
        return None
    late = int(send_lag.counts[_LATE_FROM:].sum())
    return late * max(senders, 1) / send_rate
