"""The two per-agent passes of the analysis over one agent's files, a batch at a time
(spark_jobs.agent_rows): the per-agent half of the analysis, each agent a task that
spark_jobs.run_merge schedules (on Spark, or in this process) and merges per run. Every
result is small and mergeable: sparse HDR buckets, a row per stream, a few counts. What
each pass computes lives with its subject: delivery_pass (tallies, reorder, sends,
matching, dead receivers), histograms (metric values, HDR buckets, median values),
series_pass (extents, latency curve, throughput windows).

First pass: what an agent's files tell alone: the delivery tallies, the reordered
receipts, the rates, the clock pairing counts, the HDR buckets of every metric (and of
the part of a dead agent's records its hlog holds), the stream extents, each producer's
measured sends as seq intervals, the messages of dead senders it received, its hlog, and
with a shape of steps its part of each step (steps_pass), and in a run counted per
interval (faults, a rate shape, a backlog: run_merge.interval_grid) its counts per interval
(spark_jobs.intervals).

Second pass: what needs the first's merged results: the (producer, seq) matching of its
receipts against the measured sends of every producer (unique, duplicated, unexpected),
the deliveries of unknown fate at a watched receiver (spark_jobs.delivery), the value
counts inside each metric's median bucket, the latency curve on the run's schedule axis,
the throughput windows of its streams on the run's axes (spark_jobs.series), and in a
run counted per interval its first deliveries, duplicates and unknown deliveries per
interval.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from sixnines.formats.keys import KeySpace, message_keys
from sixnines.formats.load import HEADLINE
from sixnines.formats.manifest import KeyDraws
from sixnines.formats.vocabulary import Load, Role
from sixnines.spark_jobs.agent_rows import CROSS_CLOCK, PAIRS, AgentFiles, Rows, batches, read_rows
from sixnines.spark_jobs.backlog_pass import BacklogPart, backlog_part, merged_backlog
from sixnines.spark_jobs.delivery import Matched, Tally
from sixnines.spark_jobs.delivery_pass import (
    Intervals,
    Matching,
    Messages,
    Seen,
    WatchedReceiver,
    lost_acknowledged,
    merged_seen,
    merged_sends,
    missed,
    reordered,
    reordered_mask,
    seen_from_dead,
    sends,
    tally,
)
from sixnines.spark_jobs.histograms import (
    Buckets,
    detail_of,
    merged_buckets,
    merged_detail,
    metric_buckets,
    metric_values,
)
from sixnines.spark_jobs.intervals import (
    IntervalCounts,
    first_counts,
    late_at,
    merged,
    planned_interval,
)
from sixnines.spark_jobs.series import RECEIVER, SENDER
from sixnines.spark_jobs.series_pass import (
    Curve,
    Placement,
    WindowPass,
    Windows,
    latency_curve,
    merged_curve,
    merged_extents,
    stream_extents,
)
from sixnines.spark_jobs.steps_pass import StepPart, merged_steps, step_parts
from sixnines.spark_jobs.summarize import LogRead, read_log

#: (count, earliest, latest) of some timestamps of one agent's clock
Span = tuple[int, int, int]


def _span(ts: np.ndarray) -> Span | None:
    return (len(ts), int(ts.min()), int(ts.max())) if len(ts) else None


def _joined(spans: list[Span | None]) -> Span | None:
    known = [span for span in spans if span is not None]
    if not known:
        return None
    return (sum(n for n, _, _ in known), min(lo for _, lo, _ in known),
            max(hi for _, _, hi in known))


def rate(span: Span | None) -> float | None:
    """Messages per second over the span of their timestamps (one agent's clock: a rate
    is never taken across agents)."""
    if span is None or span[0] < 2 or span[2] <= span[1]:
        return None
    return (span[0] - 1) / (span[2] - span[1]) * 1e9


def clock_pairs(rows: Rows, agent_id: str) -> dict | None:
    """Its measured timed receipts by clock pair, and the widest bound of a cross-clock
    one (None when none)."""
    timed = rows.timed & rows.measured
    if not timed.any():
        return None
    pair = rows.pair[timed]
    cross = pair == CROSS_CLOCK
    return {"agent_id": agent_id,
            **{name: int(np.count_nonzero(pair == code)) for code, name in enumerate(PAIRS)},
            "clock_bound_ns": int(rows.bound[timed][cross].max()) if cross.any() else None}


def merged_pairs(parts: list[dict | None]) -> dict | None:
    known = [part for part in parts if part is not None]
    if not known:
        return None
    bounds = [part["clock_bound_ns"] for part in known if part["clock_bound_ns"] is not None]
    return {"agent_id": known[0]["agent_id"],
            **{name: sum(part[name] for part in known) for name in PAIRS},
            "clock_bound_ns": max(bounds) if bounds else None}


@dataclass
class FirstPass:
    run_index: int
    agent_index: int
    agent_id: str
    tally: Tally
    send_rate: float | None
    receive_rate: float | None
    pairs: dict | None  # counts of its timed receipts by clock pair, and the widest bound
    metrics: dict[str, Buckets]
    logged: dict[str, Buckets] | None  # a dead agent's records its hlog covers
    extents: list[tuple]  # (side, stream, agent_index, n, first, last, bytes)
    sent: dict[int, Intervals]  # its measured sends, by producer id
    sent_by_dead: dict[int, Intervals]  # all its sends (warm-up too) if it died
    seen: Seen | None
    log: LogRead | None  # its hlog
    started_ns: int | None  # its start instant if it died (AgentFiles.started_ns)
    last_receipt: int | None = None  # its clock: when its latest receipt came (warm-up too)
    steps: list[StepPart] | None = None  # a shape of steps: its part of each step
    intervals: IntervalCounts | None = None  # per interval (run_merge.interval_grid)
    backlog: BacklogPart | None = None  # a backlog run: its part of the build and drain
    #: keyed runs: the headline metric's buckets of the hottest key's receipts and others'
    by_key: dict[str, Buckets] | None = None


def _logged_until(agent: AgentFiles, log: LogRead | None) -> int | None:
    """For an agent that died, the intended instant its hlog reaches (its clock): its
    records before it are what its log is checked against."""
    if log is None or log.end_ns is None or agent.started_ns is None:
        return None
    return agent.started_ns + log.end_ns


class FirstFold:
    """The first pass over an agent's records, fed a batch at a time in file order (all
    its files at once, or its closed chunks as they close): the state that spans batches
    (each stream's highest seq, the consumer connections) and every batch's mergeable
    part, merged as it comes so the state stays small."""

    PARTS = ("sent_span", "recv_span", "last_recv", "pairs", "metrics", "logged", "extents",
             "sent", "by_dead", "seen", "steps", "intervals", "backlog", "by_key")

    def __init__(self, agent: AgentFiles, logged_until: int | None = None) -> None:
        self.agent, self.logged_until = agent, logged_until
        self.total = Tally()
        self.consumers: set[int] = set()
        self.highest: dict[int, int] = {}
        self.key_highest: dict[int, int] = {}  # keyed runs: per (stream, key)
        self.parts: dict[str, list] = {name: [] for name in self.PARTS}

    def add(self, rows: Rows) -> None:
        agent, run, parts = self.agent, self.agent.run, self.parts
        measured = rows.measured
        self.total += tally(rows, agent.role)
        late = reordered_mask(rows, self.highest)
        self.total.reordered += int(np.count_nonzero(late))
        if run.key_draws is not None:
            self.total.key_reordered += reordered(rows, self.key_highest, run.key_draws)
        if agent.role == Role.CONSUMER:
            self.consumers.update(np.unique(rows.consumer[rows.consumer >= 0]).tolist())
        parts["sent_span"].append(_span(rows.sent[rows.sender & measured]))
        parts["recv_span"].append(_span(rows.recv[rows.timed & measured]))
        parts["last_recv"].append(_span(rows.recv[rows.timed]))
        parts["pairs"].append(clock_pairs(rows, agent.agent_id))
        parts["metrics"].append(metric_buckets(rows, run.load, measured))
        if self.logged_until is not None:
            parts["logged"].append(metric_buckets(
                rows, run.load, measured & (rows.intended < self.logged_until)))
        parts["extents"].append(stream_extents(rows, agent.agent_index))
        parts["sent"].append(sends(rows, measured))
        parts["steps"].append(step_parts(rows, run))
        parts["backlog"].append(backlog_part(rows, run))
        if run.key_draws is not None and run.hottest_key is not None:
            parts["by_key"].append(hot_and_others(rows, run.load, run.key_draws,
                                                  run.hottest_key))
        if run.dead_producer_ids:
            parts["by_dead"].append(
                sends(rows, np.isin(rows.producer_id, list(run.dead_producer_ids))))
            parts["seen"].append(seen_from_dead(rows, agent.role, run.dead_producer_ids))
        if run.grid is not None:
            parts["intervals"].append(first_counts(rows, run, agent.role == Role.REQUESTER,
                                                   late))
        self._merge()

    def _merge(self) -> None:
        parts = self.parts
        merges: dict[str, Callable[[list], Any]] = {
            "sent_span": _joined, "recv_span": _joined, "last_recv": _joined,
            "pairs": merged_pairs, "metrics": merged_buckets, "logged": merged_buckets,
            "extents": merged_extents, "sent": merged_sends, "by_dead": merged_sends,
            "steps": merged_steps, "intervals": merged, "backlog": merged_backlog,
            "by_key": merged_buckets}
        for name, merge in merges.items():  # the dead senders' messages seen: at the end
            if len(parts[name]) > 1:
                parts[name] = [merge(parts[name])]

    def result(self, log: LogRead | None = None) -> FirstPass:
        agent, parts = self.agent, self.parts
        copies = (len(self.consumers) if agent.run.per_connection
                  else int(bool(self.consumers)))
        total = replace(self.total, consumers=copies)

        def one(name: str, empty: Any) -> Any:
            return parts[name][0] if parts[name] else empty

        return FirstPass(
            agent.run.run_index, agent.agent_index, agent.agent_id, total,
            rate(one("sent_span", None)), rate(one("recv_span", None)),
            one("pairs", None), one("metrics", {}),
            one("logged", {}) if self.logged_until is not None else None,
            one("extents", []), one("sent", {}), one("by_dead", {}), merged_seen(parts["seen"]),
            log, agent.started_ns, last[2] if (last := one("last_recv", None)) else None,
            steps=one("steps", None), intervals=one("intervals", None),
            backlog=one("backlog", None), by_key=one("by_key", None))


def hot_and_others(rows: Rows, load: Load, draws: KeyDraws, hottest: int
                   ) -> dict[str, Buckets]:
    """The headline metric's buckets of the measured receipts of the hottest key ("hot")
    and of every other key ("others")."""
    mine = rows.receipt & rows.measured
    keys = np.full(len(rows.seq), -1, dtype=np.int64)
    keys[mine] = message_keys(KeySpace.of(draws.space), draws.seed, draws.period,
                              rows.producer_id[mine], rows.seq[mine])
    headline = HEADLINE[load]
    found = {}
    for name, select in (("hot", mine & (keys == hottest)), ("others", mine & (keys != hottest))):
        buckets = metric_buckets(rows, load, select).get(headline)
        if buckets is not None:
            found[name] = buckets
    return found


def first_pass(agent: AgentFiles) -> FirstPass:
    """The first pass over an agent's files, a batch at a time (agent_rows.batches), and
    its hlog read (summarize.read_log)."""
    run = agent.run
    log = (read_log(agent.hlog, run.warmup_ns / 1e9, agent.died)
           if agent.hlog is not None else None)
    fold = FirstFold(agent, _logged_until(agent, log))
    for rows in batches(agent):
        fold.add(rows)
    return fold.result(log)


@dataclass(frozen=True)
class RunPlan:
    """What the second pass needs of its run, from the first's merged results.

    sent: producer id → its measured sends (dead senders' completed by what receivers
    got); extra: the measured sends only receivers recorded, (producer ids, seqs, sent
    times); medians: metric → the raw value range of its median's bucket; schedule:
    producer id → its placement on the latency curve's axis; streams: (side, stream) →
    its placement on the side's throughput axis."""

    sent: dict[int, Intervals] = field(default_factory=dict)
    extra: Messages | None = None
    medians: dict[str, tuple[int, int]] = field(default_factory=dict)
    schedule: dict[int, Placement] = field(default_factory=dict)
    streams: dict[tuple[int, int], Placement] = field(default_factory=dict)


@dataclass
class SecondPass:
    run_index: int
    matched: Matched = field(default_factory=Matched)
    detail: dict[str, tuple[np.ndarray, np.ndarray]] = field(default_factory=dict)
    curve: Curve | None = None
    windows: dict[int, Windows] = field(default_factory=dict)
    matched_at: dict[str, np.ndarray] | None = None  # per interval (interval_grid)


@dataclass
class Counted:
    """Metric values counted exactly over a stretch of an agent's records: those in
    `ranges` (metric → raw value range), the metrics the stretch had values of, and its
    files when a follower keeps them (spark_jobs.follow reads a stretch again when its
    ranges miss the run's final median bucket)."""

    ranges: dict[str, tuple[int, int]]
    detail: dict[str, tuple[np.ndarray, np.ndarray]] = field(default_factory=dict)
    had: set[str] = field(default_factory=set)
    paths: list[str] = field(default_factory=list)

    def add(self, values: dict[str, np.ndarray]) -> None:
        self.had.update(name for name, mine in values.items() if len(mine))
        self.detail = merged_detail([self.detail, detail_of(values, self.ranges)])


class SecondFold:
    """The second pass over an agent's records, fed a batch at a time in file order,
    against its run's plan: the matching (delivered flags, pending receipts), each
    stream's last M timestamps, and every batch's median values and curve, merged as
    they come."""

    def __init__(self, agent: AgentFiles, plan: RunPlan) -> None:
        self.agent, self.plan = agent, plan
        grid = agent.run.grid
        self.matching = Matching(agent.run.per_connection, grid.bins if grid else 0,
                                 agent.run.acknowledged)
        self.counted = [Counted(dict(plan.medians))]
        self.curve: list[Curve | None] = []
        self.flows = {side: WindowPass(side, agent.agent_index, agent.run.window,
                                       plan.streams)
                      for side in (SENDER, RECEIVER)}

    def add(self, rows: Rows, final: bool = True) -> None:
        """One batch; `final`: the plan's sends are the run's last (receipts of other seqs
        are unexpected, not pending)."""
        plan, run = self.plan, self.agent.run
        where = planned_interval(rows, run.grid, run.warmup_ends)[0] if run.grid else None
        self.matching.add(rows, plan.sent, final, where)
        self.counted[-1].add(metric_values(rows, self.agent.run.load, rows.measured))
        self.curve = [merged_curve([*self.curve, latency_curve(rows, plan.schedule)])]
        for flow in self.flows.values():
            flow.add(rows)

    def replan(self, plan: RunPlan) -> None:
        """The run's plan as more of it is known (closed chunks analysed while the run
        goes): more sends, more streams placed on the same axes."""
        self.plan = plan
        for flow in self.flows.values():
            flow.streams = plan.streams

    def count_in(self, ranges: dict[str, tuple[int, int]]) -> None:
        """From the next batch on, count the values in these ranges."""
        if self.counted[-1].had:
            self.counted.append(Counted(dict(ranges)))
        else:
            self.counted[-1].ranges = dict(ranges)

    def result(self, watched: WatchedReceiver | None = None) -> SecondPass:
        """Its figures; at a watched receiver (one that died) with its unknown deliveries,
        from its kept chunks read whole."""
        found, at = self.matching.result(), self.matching.at
        run = self.agent.run
        if watched is None and run.acknowledged and not run.per_connection \
                and self.agent.role == Role.CONSUMER:
            found.lost_acknowledged = lost_acknowledged(self.matching, self.plan.sent,
                                                        run.acknowledged)
        if watched is not None:
            producer, intended, missing = missed(read_rows(self.agent), watched,
                                                 self.plan.extra)
            found.late = int(missing.sum())
            if at is not None:
                at = {**at, "late": late_at(self.agent.run, producer, intended, missing)}
        return SecondPass(self.agent.run.run_index, found,
                          merged_detail([counted.detail for counted in self.counted]),
                          self.curve[0] if self.curve else None,
                          {side: result for side, flow in self.flows.items()
                           if (result := flow.result()) is not None},
                          at)


def second_pass(agent: AgentFiles, plan: RunPlan, watched: WatchedReceiver | None = None
                ) -> SecondPass:
    """The second pass over an agent's files, a batch at a time (agent_rows.batches)."""
    fold = SecondFold(agent, plan)
    for rows in batches(agent):
        fold.add(rows)
    return fold.result(watched)
