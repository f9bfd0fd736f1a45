"""Figures per step of a run whose rate is a shape of steps (formats.shape): an agent's
part of each step, small and mergeable like the rest of the first pass (agent_pass).

A message belongs to the step its intended time falls in (its latency and send lag are
that step's); the achieved send rate of a step counts the sends whose send time falls in
it, the receive rate the receipts whose receive time (on the sender's clock, as latency
puts it) falls in it, so a system that falls behind in a step shows it there and its
backlog in the next. Times are taken from each producer's start instant (its end of
warm-up less the warm-up), as the shape's segments are.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from sixnines.spark_jobs.agent_rows import EXCLUDED, Rows, RunContext
from sixnines.spark_jobs.histograms import Buckets, merged_buckets, metric_buckets


@dataclass
class StepPart:
    """One step's figures from some records: metrics' buckets, sends and receipts."""

    metrics: dict[str, Buckets]
    sent: int
    received: int


def start_instants(rows: Rows, run: RunContext) -> tuple[np.ndarray, np.ndarray]:
    """Each row's producer's start instant (its clock), and whether it is known."""
    ends = run.warmup_ends or {}
    ids = np.array(sorted(ends), dtype=np.int64)
    starts = np.array([ends[i] - run.warmup_ns for i in ids.tolist()], dtype=np.int64)
    if not len(ids):
        return np.zeros(len(rows), np.int64), np.zeros(len(rows), bool)
    at = np.clip(np.searchsorted(ids, rows.producer_id), 0, len(ids) - 1)
    return starts[at], ids[at] == rows.producer_id


def step_parts(rows: Rows, run: RunContext) -> list[StepPart] | None:
    """Each step's part of these records (None: the run has no steps)."""
    if not run.steps:
        return None
    start, known = start_instants(rows, run)
    intended, sent = rows.intended - start, rows.sent - start
    timed = rows.timed & known & (rows.pair != EXCLUDED)
    received = np.where(timed, rows.recv - rows.correction - start, -1)
    parts = []
    for begin, end in run.steps:
        due = known & (intended >= begin) & (intended < end)
        parts.append(StepPart(
            metric_buckets(rows, run.load, rows.measured & due),
            int(np.count_nonzero(rows.sender & known & (sent >= begin) & (sent < end))),
            int(np.count_nonzero(timed & (received >= begin) & (received < end)))))
    return parts


def merged_steps(parts: list[list[StepPart] | None]) -> list[StepPart] | None:
    """Each step's parts (of batches or agents) as one."""
    known = [part for part in parts if part is not None]
    if not known:
        return None
    return [StepPart(merged_buckets([step.metrics for step in steps]),
                     sum(step.sent for step in steps), sum(step.received for step in steps))
            for steps in zip(*known, strict=True)]
