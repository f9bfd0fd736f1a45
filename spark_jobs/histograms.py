"""HDR histograms of one agent's records (spark_jobs.agent_pass): each metric's values,
their sparse HDR buckets with the exact raw aggregates beside them, and the exact value
counts inside a metric's median bucket (distribution.robust_centre)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from sixnines.formats import hdr
from sixnines.formats.vocabulary import Load, Metric
from sixnines.spark_jobs.agent_rows import EXCLUDED, Rows
from sixnines.spark_jobs.summarize import MetricCounts


@dataclass
class Buckets:
    """One metric's values of one agent as sparse HDR buckets, with the exact raw
    aggregates (summarize.MetricCounts once merged)."""

    indices: np.ndarray
    counts: np.ndarray
    sums: np.ndarray  # raw values summed per bucket
    total: float
    max: int | None
    negative: int
    too_large: int

    @classmethod
    def of(cls, values: np.ndarray) -> Buckets:
        clipped, negative, too_large = hdr.clip(values)
        index = hdr.bucket_indices(clipped)
        counts = np.bincount(index, minlength=hdr.COUNTS_LEN)
        sums = np.bincount(index, weights=values.astype(np.float64), minlength=hdr.COUNTS_LEN)
        used = np.flatnonzero(counts)
        return cls(used, counts[used].astype(np.int64), sums[used],
                   float(values.sum(dtype=np.float64)),
                   int(values.max()) if len(values) else None, negative, too_large)

    @classmethod
    def merged(cls, parts: list[Buckets]) -> Buckets:
        """One metric's buckets from several batches' (or agents')."""
        if len(parts) == 1:
            return parts[0]
        indices = np.concatenate([part.indices for part in parts])
        used, inverse = np.unique(indices, return_inverse=True)
        counts = np.zeros(len(used), np.int64)
        sums = np.zeros(len(used))
        np.add.at(counts, inverse, np.concatenate([part.counts for part in parts]))
        np.add.at(sums, inverse, np.concatenate([part.sums for part in parts]))
        maxima = [part.max for part in parts if part.max is not None]
        return cls(used, counts, sums, sum(part.total for part in parts),
                   max(maxima) if maxima else None, sum(part.negative for part in parts),
                   sum(part.too_large for part in parts))

    @classmethod
    def of_metric(cls, metric: MetricCounts) -> Buckets:
        """A metric's histogram as its buckets holding values (`metric` undone): what a
        run's report/histograms.json keeps (formats.run_histograms, whose fields are
        these)."""
        used = np.flatnonzero(metric.counts)
        return cls(used, metric.counts[used], metric.sums[used], metric.total, metric.max,
                   metric.negative, metric.too_large)

    def metric(self) -> MetricCounts:
        """The buckets as a metric's histogram (counts arrays of the HDR layout)."""
        merged = MetricCounts(total=self.total, max=self.max, negative=self.negative,
                              too_large=self.too_large)
        merged.counts[self.indices] = self.counts
        merged.sums[self.indices] = self.sums
        return merged


def merged_buckets(parts: list[dict[str, Buckets]]) -> dict[str, Buckets]:
    """Per metric, the buckets of every part that has it."""
    names = dict.fromkeys(name for part in parts for name in part)
    return {name: Buckets.merged([part[name] for part in parts if name in part])
            for name in names}


def metric_values(rows: Rows, load: str, select: np.ndarray) -> dict[str, np.ndarray]:
    """Each metric's values in ns over the rows `select` keeps. Open loop: latency =
    recv − intended and service time = recv − sent of the timed receipts whose ends can be
    put on one clock (agent_rows), send lag = sent − intended of every message sent;
    saturation: saturation latency = recv − sent of the same receipts."""
    timed = rows.timed & select & (rows.pair != EXCLUDED)
    recv = rows.recv[timed] - rows.correction[timed]
    if load == Load.SATURATION:
        return {Metric.SATURATION_LATENCY: recv - rows.sent[timed]}
    sending = rows.sender & select
    return {Metric.LATENCY: recv - rows.intended[timed],
            Metric.SERVICE_TIME: recv - rows.sent[timed],
            Metric.SEND_LAG: rows.sent[sending] - rows.intended[sending]}


def metric_buckets(rows: Rows, load: str, select: np.ndarray) -> dict[str, Buckets]:
    return {name: Buckets.of(values)
            for name, values in metric_values(rows, load, select).items() if len(values)}


def median_detail(rows: Rows, load: str, ranges: dict[str, tuple[int, int]]
                  ) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """Each metric's measured values inside its median's bucket: (distinct values, their
    counts)."""
    if not ranges:
        return {}
    return detail_of(metric_values(rows, load, rows.measured), ranges)


def detail_of(values: dict[str, np.ndarray], ranges: dict[str, tuple[int, int]]
              ) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """The metric values inside each range given: (distinct values, their counts)."""
    detail = {}
    for name, (low, high) in ranges.items():
        mine = values.get(name)
        if mine is not None and len(mine):
            detail[name] = np.unique(mine[(mine >= low) & (mine <= high)], return_counts=True)
    return detail


def merged_detail(parts: list[dict[str, tuple[np.ndarray, np.ndarray]]]
                  ) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """Per metric, the value counts of every part (batches, agents) added up."""
    merged = {}
    for name in dict.fromkeys(name for part in parts for name in part):
        values = np.concatenate([part[name][0] for part in parts if name in part])
        counts = np.concatenate([part[name][1] for part in parts if name in part])
        distinct, inverse = np.unique(values, return_inverse=True)
        merged[name] = (distinct, np.bincount(inverse, weights=counts,
                                              minlength=len(distinct)).astype(np.int64))
    return merged
