"""Per run: its agents' task results (spark_jobs.agent_pass) merged into its figures, in
two rounds, whatever runs the tasks (a Scheduler: in this process, or on Spark from
spark_jobs.analyze; nothing here imports Spark).

The work is numpy over each agent's files in order (spark_jobs.agent_pass): an agent's
files hold its streams whole, so the matching, reorder counting, windows and histograms
that Spark SQL did with a shuffle or a sort of every row are one ordered pass per agent
here (docs/performance.md, "Per-agent passes").

Round one gives each agent's tallies, histograms, rates, clock pairs, stream extents and
measured sends; from their merge, in the process that schedules the tasks, this decides
what round two needs (the sends every receipt is matched against, the median buckets, the
curves' axes), and round two gives the matching, the unknown deliveries at dead receivers,
the exact medians and the curves. Two scheduled rounds (two Spark jobs) whatever the
number of runs or agents.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, TypeVar

import numpy as np
import pyarrow as pa

from sixnines.formats.load import HEADLINE
from sixnines.formats.manifest import AgentEntry, Manifest
from sixnines.formats.summary import Steadiness
from sixnines.formats.vocabulary import RECORDING, SENDERS, FanOut, Load, Role
from sixnines.spark_jobs import (
    agent_pass,
    agent_rows,
    delivery,
    delivery_pass,
    histograms,
    intervals,
    series,
    series_pass,
    steadiness,
    steps_pass,
)
from sixnines.spark_jobs.agent_pass import FirstPass, RunPlan, SecondPass
from sixnines.spark_jobs.agent_rows import DEFAULT_DOMAIN, AgentFiles, Clock, RunContext
from sixnines.spark_jobs.backlog_pass import BacklogPart, merged_backlog
from sixnines.spark_jobs.delivery_pass import Intervals, Messages, WatchedReceiver
from sixnines.spark_jobs.distribution import Detail, bucket_range, median_bucket
from sixnines.spark_jobs.grid import Grid
from sixnines.spark_jobs.histograms import Buckets
from sixnines.spark_jobs.key_figures import hottest_key
from sixnines.spark_jobs.series import RECEIVER, SCHEDULE, SENDER
from sixnines.spark_jobs.summarize import METRICS, ClockPairs, MetricCounts, clock_pairs

DETAIL_MAX_WIDTH = 1 << 16  # exact median only for buckets this narrow (medians < ~134 ms)

Item = TypeVar("Item")
Result = TypeVar("Result")


@dataclass(frozen=True)
class AnalysedRun:
    """One run to analyse: its manifest, its agents' files (agent_id → (role, paths)), the
    window of its series, its load, what its accounting expects and its agents' hlogs
    (agent_id → path)."""

    manifest: Manifest
    messages: dict[str, tuple[Role, list]]
    window: int
    load: Load
    expected: delivery.Expected
    hlogs: dict[str, Path] = field(default_factory=dict)


@dataclass
class RunFigures:
    """What the passes found for one run."""

    counts: dict[str, int]  # delivery.COUNTS
    rate: dict[str, float | None]  # send_rate, receive_rate
    pairs: ClockPairs
    metrics: dict[str, MetricCounts]
    per_agent: dict[str, dict[str, np.ndarray]]  # agent_id → metric → counts (hlog check)
    per_message: series.PerMessage
    logs: dict[str, dict[str, np.ndarray]]  # agent_id → its hlog's measured counts per tag
    log_ends_s: dict[str, float]  # of agents that died: how far their hlog was written
    unplaced: list[str]  # agents that died with an hlog but no known start: not checked
    drained_out: list[str] = field(default_factory=list)  # problem lines (`drained_out`)
    steadiness: Steadiness | None = None  # how far p99 moved within the run
    steps: list[StepCounts] | None = None  # a shape of steps: each step's
    intervals: intervals.IntervalCounts | None = None  # per interval (interval_grid)
    backlog: BacklogPart | None = None  # a backlog run: the build and drain's counts
    by_key: dict[str, MetricCounts] | None = None  # keyed runs: the hottest key, the others


@dataclass(frozen=True)
class DamagedRun:
    """A run refused after its first pass: a file (an hlog) cannot be read."""

    problems: list[str]


# --- schedulers ---------------------------------------------------------------------------


#: Runs function(item) for every item (weights: each item's size), results in order.
Scheduler = Callable[[Callable[[Item], Result], list[Item], Sequence[int]], list[Result]]


def in_process(function: Callable[[Item], Result], items: list[Item],
               weights: Sequence[int]) -> list[Result]:
    """The scheduler of a test: every item here, one after the other."""
    return [function(item) for item in items]


# --- the runs' contexts ------------------------------------------------------------------


def agent_clock(agent: AgentEntry) -> Clock:
    """An agent's clock: a missing domain is the shared default one; the offset is its
    domain's, bounded by that estimate's uncertainty (formats.manifest.Clock.bound_ns)."""
    return agent.clock.domain or DEFAULT_DOMAIN, agent.clock.offset_ns, agent.clock.bound_ns


def _producer_ids(agent: AgentEntry, connections: int) -> range:
    first = agent.first_id
    assert first is not None  # every sender's entry has it
    return range(first, first + (agent.connections or connections))


def producer_agents(manifest: Manifest) -> dict[int, int]:
    """Each producer id's sender, by its agent_index."""
    return {producer_id: index for index, agent in enumerate(manifest.agents)
            if agent.role in SENDERS and agent.first_id is not None
            for producer_id in _producer_ids(agent, manifest.workload.connections)}


def producer_clocks(manifest: Manifest) -> dict[int, Clock]:
    """Each producer id's clock: a sender's ids are [first_id, first_id + connections).
    Two senders claiming one id would mix their messages, so that manifest is refused."""
    owners: dict[int, str] = {}
    clocks = {}
    for agent in manifest.agents:
        if agent.role not in SENDERS or agent.first_id is None:
            continue
        for producer_id in _producer_ids(agent, manifest.workload.connections):
            if producer_id in owners:
                raise ValueError(f"producer id {producer_id} claimed by agents "
                                 f"{owners[producer_id]} and {agent.id}")
            owners[producer_id] = agent.id
            clocks[producer_id] = agent_clock(agent)
    return clocks


def warmup_ends(manifest: Manifest) -> dict[int, int]:
    """Each producer id's end of warm-up on its own clock: t0 + warmup (a sender that died
    never reported its t0: the start instant it was sent stands in, Manifest.t0_of)."""
    return {producer_id: t0 + manifest.workload.warmup_ns
            for agent in manifest.agents
            if agent.role in SENDERS and (t0 := manifest.t0_of(agent)) is not None
            and agent.first_id is not None
            for producer_id in _producer_ids(agent, manifest.workload.connections)}


def sole_domain(manifest: Manifest) -> str | None:
    """The domain every recording agent is in, None when they span several."""
    domains = {agent_clock(agent)[0] for agent in manifest.agents
               if agent.role in (Role.PRODUCER, Role.CONSUMER, Role.REQUESTER)}
    return domains.pop() if len(domains) == 1 else None


def interval_grid(manifest: Manifest) -> Grid | None:
    """The intervals a run is counted in when its timeline tells something a whole-run
    figure cannot: one with faults (their figures come from it), a rate shape or a backlog
    (the report's timeline against the intended rate and the backlog's instants). Its
    measured time and drain; None otherwise, or without a planned duration to lay them
    over."""
    workload = manifest.workload
    timed = manifest.faults or workload.shape is not None or workload.backlog is not None
    if not timed or not workload.duration_ns:
        return None
    return Grid.over(workload.duration_ns + (workload.drain_ns or 0))


def context(run_index: int, run: AnalysedRun) -> RunContext:
    manifest = run.manifest
    return RunContext(run_index, run.load, run.window, warmup_ends(manifest),
                      producer_clocks(manifest), sole_domain(manifest),
                      manifest.cross_host_latency,
                      frozenset(run.expected.dead.producer_ids), manifest.workload.warmup_ns,
                      manifest.workload.fan_out == FanOut.CONNECTION, step_windows(manifest),
                      interval_grid(manifest), manifest.workload.backlog,
                      manifest.workload.key_draws, hottest_key(manifest),
                      delivery.acknowledged(manifest))


def step_windows(manifest: Manifest) -> tuple[tuple[int, int], ...]:
    """The (start, end) of each step of a shape of steps, from the start instant."""
    shape = manifest.workload.shape
    if shape is None:
        return ()
    return tuple((shape.segments[i].start_ns, shape.segments[i].end_ns) for i in shape.steps)


def agent_files(runs: Sequence[AnalysedRun]) -> list[AgentFiles]:
    """Every agent with records of every run."""
    found = []
    for run_index, run in enumerate(runs):
        run_context = context(run_index, run)
        for index, agent in enumerate(run.manifest.agents):
            if agent.id in run.messages:
                role, paths = run.messages[agent.id]
                hlog = run.hlogs.get(agent.id)
                found.append(AgentFiles(
                    run_context, index, agent.id, str(role), tuple(map(str, paths)),
                    agent_clock(agent), str(hlog) if hlog is not None else None,
                    agent.ended_early, run.manifest.t0_of(agent) if agent.ended_early else None))
    return found


# --- round one -----------------------------------------------------------------------------


def _second(job: tuple[AgentFiles, RunPlan, WatchedReceiver | None]) -> SecondPass:
    return agent_pass.second_pass(*job)


@dataclass
class Merged:
    """Round one of a run, merged."""

    tally: delivery.Tally
    send_rate: float | None
    receive_rate: float | None
    pairs: ClockPairs
    metrics: dict[str, MetricCounts]
    per_agent: dict[str, dict[str, np.ndarray]]
    extents: list[dict[str, Any]]
    sent: dict[int, Intervals]
    extra: Messages | None
    steps: list[StepCounts] | None = None
    backlog: BacklogPart | None = None
    by_key: dict[str, MetricCounts] | None = None  # keyed runs: "hot", "others"


@dataclass
class StepCounts:
    """One step of a shape of steps, merged over the run's agents."""

    metrics: dict[str, MetricCounts]
    sent: int
    received: int


def _steps(found: list[FirstPass]) -> list[StepCounts] | None:
    merged = steps_pass.merged_steps([result.steps for result in found])
    if merged is None:
        return None
    return [StepCounts({name: buckets.metric() for name, buckets in step.metrics.items()},
                       step.sent, step.received) for step in merged]


def _sum_rates(rates: list[float | None]) -> float | None:
    known = [rate for rate in rates if rate is not None]
    return sum(known) if known else None


def _extents(found: list[FirstPass]) -> list[dict[str, Any]]:
    """Stream extents of every agent, merged (a producer's schedule spans its receivers)."""
    names = ("side", "stream", "agent_index", "n", "first", "last", "bytes")
    return [dict(zip(names, row, strict=True))
            for row in series_pass.merged_extents([result.extents for result in found])]


def _completed_by_receivers(found: list[FirstPass], tally: delivery.Tally,
                            sent: dict[int, Intervals]
                            ) -> Messages | None:
    """Messages of dead senders that receivers got but that their sender's kept chunks do
    not hold count as sent (spark_jobs.delivery): added to the tally and to the measured
    sends; the measured ones returned as (producer ids, seqs, sent times)."""
    seen = delivery_pass.merged_seen([result.seen for result in found])
    if seen is None:
        return None
    own = delivery_pass.merged_sends([result.sent_by_dead for result in found])
    new = np.ones(len(seen.seq), bool)
    for start, end in agent_rows.segments(seen.producer_id):  # sorted by producer
        new[start:end] = ~delivery_pass.inside(seen.seq[start:end],
                                            own.get(int(seen.producer_id[start])))
    warm, request = seen.warmup[new], seen.request[new]
    tally.sent += int(np.count_nonzero(~warm))
    tally.requests += int(np.count_nonzero(~warm & request))
    tally.warmup_sent += int(np.count_nonzero(warm))
    measured = new & ~seen.warmup
    extra = seen.producer_id[measured], seen.seq[measured], seen.sent[measured]
    completed = delivery_pass.merged_sends([sent, delivery_pass.sends_of(*extra[:2])])
    sent.update(completed)
    return extra


def merge_first(found: list[FirstPass]) -> Merged:
    """A run's first pass: its agents' results merged."""
    tally = sum((result.tally for result in found), delivery.Tally())
    merged = histograms.merged_buckets([result.metrics for result in found])
    metrics = {metric: MetricCounts() for metric in METRICS} | {
        metric: buckets.metric() for metric, buckets in merged.items()}
    per_agent = {result.agent_id: _counts(result.metrics) for result in found
                 if result.metrics}
    sent = delivery_pass.merged_sends([result.sent for result in found])
    extra = _completed_by_receivers(found, tally, sent)
    pairs = clock_pairs([result.pairs for result in found if result.pairs is not None])
    return Merged(tally, _sum_rates([r.send_rate for r in found]),
                  _sum_rates([r.receive_rate for r in found]), pairs, metrics, per_agent,
                  _extents(found), sent, extra, steps=_steps(found),
                  backlog=merged_backlog([result.backlog for result in found]),
                  by_key=_by_key(found))


def _by_key(found: list[FirstPass]) -> dict[str, MetricCounts] | None:
    """A keyed run's headline metric of the hottest key and of the others."""
    parts = [result.by_key for result in found if result.by_key is not None]
    if not parts:
        return None
    return {name: buckets.metric()
            for name, buckets in histograms.merged_buckets(parts).items()}


def _counts(metrics: dict[str, Buckets]) -> dict[str, np.ndarray]:
    """An agent's HDR counts per metric (what its hlog is checked against)."""
    return {metric: buckets.metric().counts for metric, buckets in metrics.items()}


def _logged(found: list[FirstPass]) -> dict[str, dict[str, np.ndarray]]:
    """Per dead agent with an hlog: the bucket counts of its records its log covers."""
    return {result.agent_id: _counts(result.logged)
            for result in found if result.logged is not None}


# --- round two -----------------------------------------------------------------------------


def medians(metrics: dict[str, MetricCounts]) -> dict[str, tuple[int, int]]:
    """The raw value range of each metric's median bucket, when narrow enough to count
    its values exactly (DETAIL_MAX_WIDTH)."""
    ranges = {}
    for name, metric in metrics.items():
        if metric.count:
            low, high = bucket_range(median_bucket(metric.counts)[0])
            if low is not None and high is not None and high - low < DETAIL_MAX_WIDTH:
                ranges[name] = (low, high)
    return ranges


def _placements(streams: series.Streams, side: int, axis: series.TimeBins | None
                ) -> dict[int, series_pass.Placement]:
    if axis is None:
        return {}
    return {stream: (origin, axis.low, axis.width_ns, axis.bins)
            for (s, stream), origin in streams.origins.items() if s == side}


@dataclass(frozen=True)
class Axes:
    """A run's streams and the axes of its curves."""

    streams: series.Streams
    schedule: series.TimeBins | None
    throughput: dict[int, series.TimeBins]


def planned(manifest: Manifest) -> series.Planned | None:
    """The run's schedule as planned, when its curves can be placed on it before any
    record is read (what analysing closed chunks while the run goes needs): every
    recording agent's t0 known, a duration and a rate in msg/s. Otherwise (rate max, a
    manifest of another tool) the curves' axes are the streams' observed extents."""
    workload = manifest.workload
    streams = len(producer_clocks(manifest))
    if (workload.duration_ns is None or workload.duration_ns <= 0 or not streams
            or not isinstance(workload.rate, float | int) or isinstance(workload.rate, bool)
            or any(agent.t0_ns is None for agent in manifest.agents
                   if agent.role in RECORDING)):
        return None
    return series.Planned(workload.warmup_ns, workload.duration_ns, workload.drain_ns or 0,
                          workload.rate * workload.duration_ns / 1e9 / streams)


def axes(run: AnalysedRun, extents: list[dict[str, Any]]) -> Axes:
    """The run's streams and its curves' axes: as planned, or as observed (`planned`)."""
    starts = {index: agent.t0_ns for index, agent in enumerate(run.manifest.agents)
              if agent.t0_ns is not None}
    streams = series.Streams.of(extents, starts, producer_agents(run.manifest))
    schedule = planned(run.manifest)
    if schedule is None:
        throughput = {side: axis for side in (SENDER, RECEIVER)
                      if (axis := streams.throughput_axis(side, run.window)) is not None}
        return Axes(streams, streams.axis(SCHEDULE, series.MAX_POINTS), throughput)
    return Axes(streams, schedule.schedule_axis() if streams.side(SCHEDULE) else None,
                {side: schedule.throughput_axis(run.window) for side in (SENDER, RECEIVER)
                 if streams.side(side)})


def plan(merged: Merged, found_axes: Axes) -> RunPlan:
    streams = {(side, stream): placement
               for side, axis in found_axes.throughput.items()
               for stream, placement in _placements(found_axes.streams, side, axis).items()}
    return RunPlan(merged.sent, merged.extra, medians(merged.metrics),
                   _placements(found_axes.streams, SCHEDULE, found_axes.schedule), streams)


#: What a problem line says of a receiver whose drain ran out while the system still held
#: messages (after delivery.drain_verdict's reason).
DRAINED_OUT = ("what it misses that was sent after its last delivery (less the longest "
               "latency seen) is unknown, not lost: the system may still hold it; lengthen "
               "`drain`")


def drained_out(run: AnalysedRun, first: list[FirstPass]) -> dict[int, str]:
    """agent_index → a problem line for each receiver of the run whose drain ran out while
    the system still held messages (delivery.drain_verdict, from when its last receipt
    came: `first`, the run's first pass). None when the broker sixnines started exited
    during the run: what it held is lost with it."""
    manifest = run.manifest
    drain_ns = manifest.workload.drain_ns
    if manifest.broker_exit is not None or drain_ns is None:
        return {}
    last = {result.agent_index: result.last_receipt for result in first}
    found = {}
    for index, agent in enumerate(manifest.agents):
        if (index in last and delivery.receives(agent) and agent.drain_ended_ns is not None
                and not agent.died and agent.cut_short is None):
            verdict = delivery.drain_verdict(agent.drain_ended_ns, drain_ns, last[index])
            if verdict is not None:
                found[index] = f"agent {agent.id}: {verdict}: {DRAINED_OUT}"
    return found


def watched_receivers(run: AnalysedRun, agents: list[AgentFiles], first: list[FirstPass]
                      ) -> dict[int, WatchedReceiver]:
    """agent_index → each receiver of the run whose misses may be unknown (those the
    manifest names, and those whose drain ran out: `drained_out`), with the files of the
    senders it expects."""
    senders = [agent for agent in agents if agent.role in SENDERS]
    manifest, connections = run.manifest, run.manifest.workload.connections
    watched = [*run.expected.dead.receivers,
               *(delivery.Watched.of(index, manifest.agents[index], manifest.workload)
                 for index in drained_out(run, first))]
    found = {}
    for receiver in watched:
        ids = receiver.ids
        theirs = [agent for agent in senders
                  if ids is None or _claims(manifest.agents[agent.agent_index],
                                            connections, ids)]
        found[receiver.agent_index] = WatchedReceiver(receiver.copies, ids,
                                                      receiver.relay_died, tuple(theirs))
    return found


def _claims(agent: AgentEntry, connections: int, ids: tuple[int, int]) -> bool:
    """Whether a sender's producer ids meet [first, end)."""
    if agent.first_id is None:
        return False
    mine = _producer_ids(agent, connections)
    return mine.start < ids[1] and ids[0] < mine.stop


# --- merging round two -------------------------------------------------------------------


def _curve(found: list[SecondPass]) -> pa.Table | None:
    """The latency curve's rows (bucket, count, latency_min, …) of every agent, merged."""
    curve = series_pass.merged_curve([result.curve for result in found])
    if curve is None:
        return None
    return pa.table({"bucket": curve.bucket, "count": curve.count, **curve.figures})


def _throughput(found: list[SecondPass], side: int, axis: series.TimeBins
                ) -> series.ThroughputSeries:
    parts = [result.windows[side] for result in found if side in result.windows]
    if not parts:
        return series.ThroughputSeries(MetricCounts(), [], [], 0)
    counts = Buckets.merged([part.buckets for part in parts]).metric()
    keys = np.concatenate([part.keys for part in parts])
    used, inverse = np.unique(keys, return_inverse=True)
    rate = np.zeros(len(used))
    defined = np.zeros(len(used), bool)
    np.add.at(rate, inverse, np.concatenate([part.rate for part in parts]))
    np.logical_or.at(defined, inverse, np.concatenate([part.defined for part in parts]))
    zero_span = int(sum(int(part.zero_span.sum()) for part in parts))
    return series.ThroughputSeries(counts, axis.centres_s(used[defined]).tolist(),
                                   rate[defined].tolist(), zero_span)


def _per_message(run: AnalysedRun, found_axes: Axes, found: list[SecondPass]) -> series.PerMessage:
    streams = found_axes.streams
    curve = _curve(found) if found_axes.schedule is not None else None
    return series.PerMessage(
        run.window, run.load, series.latency_json(curve, run.load, found_axes.schedule),
        {series.SIDES[side]: _throughput(found, side, axis)
         for side, axis in found_axes.throughput.items()},
        series.density_ns(streams),
        {name: series.bytes_per_s(streams, side) for side, name in series.SIDES.items()})


def _logs(found: list[FirstPass]) -> tuple[dict[str, dict[str, np.ndarray]],
                                            dict[str, float], list[str]]:
    """A run's hlogs as its first pass read them: the measured counts per tag of those to
    compare, how far those of agents that died were written (s), and the agents that
    died with an hlog but no known start (nothing places their records in their log)."""
    logs, ends, unplaced = {}, {}, []
    for result in found:
        if result.log is None:
            continue
        if result.log.end_ns is not None and result.started_ns is None:
            unplaced.append(result.agent_id)
            continue
        logs[result.agent_id] = result.log.counts()
        if result.log.end_ns is not None:
            ends[result.agent_id] = result.log.end_ns / 1e9
    return logs, ends, unplaced


def damage(found: list[FirstPass]) -> list[str]:
    """The problems of the run's hlogs its first pass read (none: the run is analysed)."""
    return sorted(r.log.problem for r in found if r.log is not None and r.log.problem)


def assembled(run: AnalysedRun, first: list[FirstPass], merged: Merged, found_axes: Axes,
              second: list[SecondPass]) -> RunFigures:
    """A run's figures from its two rounds."""
    details = histograms.merged_detail([result.detail for result in second])
    metrics = {name: replace(metric, detail=Detail(*details[name]) if name in details
                             else None)
               for name, metric in merged.metrics.items()}
    rate = {"send_rate": merged.send_rate, "receive_rate": merged.receive_rate}
    matched = sum((result.matched for result in second), delivery.Matched())
    counts = delivery.counts(run.expected, merged.tally, matched)
    return RunFigures(counts, rate, merged.pairs, metrics, merged.per_agent | _logged(first),
                      _per_message(run, found_axes, second), *_logs(first),
                      list(drained_out(run, first).values()),
                      _steadiness(run, first, merged.pairs), steps=merged.steps,
                      intervals=_intervals(run, first, merged.extra, second),
                      backlog=merged.backlog, by_key=merged.by_key)


def _intervals(run: AnalysedRun, first: list[FirstPass], extra: Messages | None,
               second: list[SecondPass]) -> intervals.IntervalCounts | None:
    """The run's counts per interval: its agents' first passes', with the matching's, and
    the sends only receivers recorded (a dead sender's, which the run's tally counts too:
    spark_jobs.delivery), by their send time, all that is known of when they were due."""
    found = intervals.merged([result.intervals for result in first])
    if found is None:
        return None
    for result in second:
        for name, values in (result.matched_at or {}).items():
            found.counts[name] += values
    grid = interval_grid(run.manifest)
    if extra is not None and grid is not None:
        producer, _, sent = extra
        ends = warmup_ends(run.manifest)
        request = np.isin(producer, _requester_ids(run.manifest))
        found.counts["sent"] += intervals.counted_at(grid, ends, producer, sent)
        found.counts["requests"] += intervals.counted_at(grid, ends, producer[request],
                                                         sent[request])
    return found


def _requester_ids(manifest: Manifest) -> list[int]:
    """The producer ids of requesters' connections (their sends are requests)."""
    return [producer_id for producer_id, index in producer_agents(manifest).items()
            if manifest.agents[index].role == Role.REQUESTER]


def _steadiness(run: AnalysedRun, found: list[FirstPass], pairs: ClockPairs) -> Steadiness | None:
    """From the receivers' logged headline latency, but those whose log holds values on
    another clock than the figures' (pairs.off_clock: raw in their hlog)."""
    tag = HEADLINE[run.load]
    return steadiness.steadiness(
        result.log.intervals.get(tag, []) for result in found
        if result.log is not None and result.agent_id not in pairs.off_clock)


def figures(schedule: Scheduler, runs: Sequence[AnalysedRun]) -> list[RunFigures | DamagedRun]:
    """Every run's figures from two rounds of per-agent passes over all their agents (two
    Spark jobs with spark_jobs.analyze.on_spark); a run with an hlog that cannot be read is
    refused after the first (DamagedRun) and takes no part in the second."""
    agents = agent_files(runs)
    weights = [agent.rows_hint for agent in agents]
    first = schedule(agent_pass.first_pass, agents, weights)
    by_run = [[r for r in first if r.run_index == index] for index in range(len(runs))]
    damaged = {index: problems for index, found in enumerate(by_run)
               if (problems := damage(found))}
    merged = [merge_first(found) for found in by_run]
    run_axes = [axes(run, m.extents) for run, m in zip(runs, merged, strict=True)]
    plans = [plan(m, a) for m, a in zip(merged, run_axes, strict=True)]
    watched = [watched_receivers(run, [a for a in agents if a.run.run_index == index],
                                 by_run[index])
               for index, run in enumerate(runs)]
    jobs = [(agent, plans[agent.run.run_index],
             watched[agent.run.run_index].get(agent.agent_index))
            for agent in agents if agent.run.run_index not in damaged]
    second = schedule(_second, jobs, [weight for agent, weight in zip(agents, weights,
                                                                       strict=True)
                                      if agent.run.run_index not in damaged])
    return [DamagedRun(damaged[index]) if index in damaged else
            assembled(run, by_run[index], merged[index], run_axes[index],
                      [r for r in second if r.run_index == index])
            for index, run in enumerate(runs)]
