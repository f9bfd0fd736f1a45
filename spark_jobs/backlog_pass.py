"""A backlog's build and drain from the records (workload `backlog:`, formats.backlog): an
agent's part, small and mergeable like the rest of the first pass (agent_pass), and the
run's figures from the merged parts.

Times are taken from each message's producer's start instant, receipts on the sender's
clock, as steps_pass takes them. A part counts sends and receipts per millisecond from the
start to the end of the drain's bound (per tick: a ms, doubled while more than MAX_TICKS
would be needed, so a long bound, or a manifest's hostile one, keeps the counts small):
what a consumer still has to receive at any tick is the sends so far less its receipts so
far, so the backlog built (the sends before the release, none of them received) and the
instant it is gone come out exact to the tick, whatever the agents' own progress reports
said. The latency of the
backlog's messages (intended before the release) is kept apart from the live ones'
(intended once it was gone): those are kept per window of the watched stretch, as the
instant the backlog was gone is known only once every part is merged.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import numpy as np

from sixnines.formats.backlog import DRAINED_SHARE, BacklogPlan
from sixnines.formats.summary import BacklogFigures
from sixnines.formats.vocabulary import Metric
from sixnines.spark_jobs.agent_rows import EXCLUDED, Rows, RunContext
from sixnines.spark_jobs.histograms import Buckets, metric_buckets
from sixnines.spark_jobs.steps_pass import start_instants
from sixnines.spark_jobs.summarize import MetricCounts, metric_summary

MS = 1_000_000
#: The most ticks a part counts over (8 MiB per count): a bound of over ~17 minutes is
#: counted in ticks of 2, 4, … ms.
MAX_TICKS = 1 << 20
#: Windows of the watched stretch (release to bound) whose live latency is kept apart:
#: the live messages are those of the windows that begin once the backlog is gone.
LIVE_WINDOWS = 50


@dataclass
class BacklogPart:
    """Some records' part of a backlog: sends and receipts per tick from the start instant
    (to the end of the bound), the sends before the release (and their bytes), the
    latency of the backlog's messages and, per window of the watched stretch, of the
    messages intended in it."""

    sent: np.ndarray
    received: np.ndarray
    built: int
    built_bytes: int
    backlog: Buckets | None
    windows: list[Buckets | None]


def _window_edges(plan: BacklogPlan) -> np.ndarray:
    return np.linspace(plan.release_ns, plan.release_ns + plan.drain_within_ns,
                       LIVE_WINDOWS + 1).astype(np.int64)


def tick_ns(plan: BacklogPlan) -> int:
    """The width the plan's sends and receipts are counted in: a ms, doubled until
    MAX_TICKS cover the start to the end of the bound."""
    tick = MS
    while -(-(plan.release_ns + plan.drain_within_ns) // tick) > MAX_TICKS:
        tick *= 2
    return tick


def _per_tick(times: np.ndarray, tick: int, length: int) -> np.ndarray:
    """How many of `times` (ns from the start) fall in each tick up to `length` ticks."""
    kept = times[(times >= 0) & (times < length * tick)]
    return np.bincount(kept // tick, minlength=length).astype(np.int64)


def _latency(rows: Rows, run: RunContext, mask: np.ndarray) -> Buckets | None:
    return metric_buckets(rows, run.load, mask).get(Metric.LATENCY)


def backlog_part(rows: Rows, run: RunContext) -> BacklogPart | None:
    """These records' part (None: the run builds no backlog)."""
    plan = run.backlog
    if plan is None:
        return None
    tick = tick_ns(plan)
    length = -(-(plan.release_ns + plan.drain_within_ns) // tick)
    start, known = start_instants(rows, run)
    intended, sent = rows.intended - start, rows.sent - start
    senders = rows.sender & known
    timed = rows.timed & known & (rows.pair != EXCLUDED)
    received = (rows.recv - rows.correction - start)[timed]
    before = senders & (sent < plan.release_ns)
    measured = rows.measured & known
    edges = _window_edges(plan)
    return BacklogPart(
        _per_tick(sent[senders], tick, length), _per_tick(received, tick, length),
        int(np.count_nonzero(before)), int(rows.size[before].sum(dtype=np.int64)),
        _latency(rows, run, measured & (intended < plan.release_ns)),
        [_latency(rows, run, measured & (intended >= low) & (intended < high))
         for low, high in itertools.pairwise(edges)])


def _buckets(parts: list[Buckets | None]) -> Buckets | None:
    known = [part for part in parts if part is not None]
    return Buckets.merged(known) if known else None


def merged_backlog(parts: list[BacklogPart | None]) -> BacklogPart | None:
    """Parts (of batches or agents) as one."""
    known = [part for part in parts if part is not None]
    if not known:
        return None
    return BacklogPart(
        np.sum([part.sent for part in known], axis=0),
        np.sum([part.received for part in known], axis=0),
        sum(part.built for part in known), sum(part.built_bytes for part in known),
        _buckets([part.backlog for part in known]),
        [_buckets(list(window)) for window in zip(*(p.windows for p in known), strict=True)])


def _figures(buckets: Buckets | None) -> MetricCounts:
    return MetricCounts() if buckets is None else buckets.metric()


def backlog_figures(plan: BacklogPlan, part: BacklogPart, consumers: int,
                    warmup_ns: int) -> BacklogFigures:
    """The run's figures from its merged part; every consumer receives every message."""
    copies = max(consumers, 1)
    tick = tick_ns(plan)
    owed = np.cumsum(part.sent) - np.cumsum(part.received) / copies  # at each tick's end
    first = plan.release_ns // tick
    threshold = max(1.0, DRAINED_SHARE * part.built)
    gone = np.flatnonzero(owed[first:] <= threshold)
    end_ns = (first + gone[0] + 1) * tick if len(gone) else \
        plan.release_ns + plan.drain_within_ns
    watched = slice(first, -(-end_ns // tick))
    span_s = (end_ns - plan.release_ns) / 1e9
    drain_rate = float(part.received[watched].sum()) / copies / span_s
    send_rate = float(part.sent[watched].sum()) / span_s
    live = MetricCounts()
    if len(gone):
        edges = _window_edges(plan)
        live = _figures(_buckets([window for low, window in zip(edges[:-1], part.windows,
                                                                 strict=True)
                                  if low >= end_ns]))
    left = None if len(gone) else round(float(owed[-1]))
    return BacklogFigures(
        built_messages=part.built, built_bytes=part.built_bytes,
        released_at_s=(plan.release_ns - warmup_ns) / 1e9,
        drain_within_s=plan.drain_within_ns / 1e9, drained=bool(len(gone)),
        drained_at_s=(end_ns - warmup_ns) / 1e9 if len(gone) else None,
        drained_in_s=span_s if len(gone) else None,
        drain_rate=drain_rate, send_rate=send_rate, left_messages=left,
        verdict=verdict(part.built, span_s, drain_rate, send_rate, left),
        backlog_latency_us=metric_summary(_figures(part.backlog)),
        live_latency_us=metric_summary(live))


def verdict(built: int, span_s: float, drain_rate: float, send_rate: float,
            left: int | None) -> str:
    """The outcome in words: drained, or why not (consumers no faster than producers, or
    faster but not enough within the bound)."""
    rates = f"consumers at {drain_rate:,.0f} msg/s"
    if left is None:
        return (f"drained {built:,} messages in {span_s:.3g} s: {rates} while producers "
                f"sent {send_rate:,.0f} msg/s")
    if drain_rate <= send_rate:
        return (f"not drained within {span_s:.3g} s: {rates} cannot catch up with "
                f"{send_rate:,.0f} msg/s ({left:,} messages still queued)")
    more = left / (drain_rate - send_rate)
    return (f"not drained within {span_s:.3g} s: {rates} gain only "
            f"{drain_rate - send_rate:,.0f} msg/s on {send_rate:,.0f} msg/s "
            f"({left:,} messages still queued, about {more:.3g} s more)")
