"""Running a capacity search (docs/design.md, "Capacity search"): each probe an ordinary
run of the search's point at one rate, analysed as soon as it ends, judged
(orchestrator.capacity.verdict) and fed to the search (orchestrator.capacity.search) for the next
rate. The controller gives the function that runs and analyses one point."""

from __future__ import annotations

import json
import math
import time
from collections.abc import Callable
from pathlib import Path

from sixnines.formats.lag import FEWER_LOOPS, LagCause
from sixnines.formats.layout import REPORT_DIR, SERIES_FILE
from sixnines.formats.summary import (
    SATURATED_RATE_SHARE,
    CapacityProbe,
    CapacityResult,
    RunSummary,
)
from sixnines.formats.vocabulary import Metric
from sixnines.orchestrator.capacity.search import Finding, Searcher
from sixnines.orchestrator.capacity.verdict import Verdict, judge
from sixnines.orchestrator.scenario.fields import SECOND_NS
from sixnines.orchestrator.scenario.matrix import RunPoint, safe_label
from sixnines.orchestrator.scenario.search_spec import RateSearch

#: Runs a point and analyses it: its run directory and summary.
RunAndAnalyse = Callable[[RunPoint], tuple[Path, RunSummary]]


def is_search(point: RunPoint) -> bool:
    return isinstance(point.workload.rate, RateSearch)


def _search(point: RunPoint) -> RateSearch:
    """The capacity search of a point `is_search` says is one."""
    rate = point.workload.rate
    assert isinstance(rate, RateSearch), f"{point.run_id} searches no rate"
    return rate


def rate_label(rate: float) -> str:
    """A probe's rate as run ids and tables show it: 41.2k, 1.5M, 800."""
    for factor, unit in ((1e6, "M"), (1e3, "k")):
        if rate >= factor:
            return f"{rate / factor:.3g}{unit}"
    return f"{rate:.3g}"


def probe_point(point: RunPoint, rate: float, number: int) -> RunPoint:
    """Probe `number` of `point`'s search: the point at `rate`, measured long enough for
    the objective's samples (RateSearch.probe_duration)."""
    duration = _search(point).probe_duration(point.workload.duration_ns, rate)
    workload = point.workload.model_copy(update={"rate": rate, "duration_ns": duration})
    label = rate_label(rate)
    return RunPoint(point.index, f"{point.run_id}-probe{number:02d}-rate={safe_label(label)}",
                    point.system, workload, workload.model_dump(mode="json"),
                    {**point.swept, "rate": label})


def describe(point: RunPoint) -> str:
    """A point as `sixnines validate` lists it: a search says what it looks for."""
    search = point.workload.rate
    if not isinstance(search, RateSearch):
        return point.run_id
    return (f"{point.run_id}: capacity search {rate_label(search.low)} … "
            f"{rate_label(search.high)} msg/s under {search.label()} (precision "
            f"{search.precision:.0%}, {search.confirm} confirming runs, at most "
            f"{search.max_runs} probes; the estimate is its heaviest probe's)")


def heaviest(point: RunPoint) -> RunPoint:
    """The point itself, or for a search its probe that records the most (at `to`: the
    messages a probe sends grow with its rate), for memory and disk estimates."""
    search = point.workload.rate
    return probe_point(point, search.high, 0) if isinstance(search, RateSearch) else point


def run_search(point: RunPoint, run_and_analyse: RunAndAnalyse,
               clock: Callable[[], float] = time.monotonic) -> CapacityResult:
    """Every probe of `point`'s search in turn, until the search is over or its budget
    (max_runs, max_time: a probe that could not end in time is not started) is spent;
    what it found, for summary.json."""
    search = _search(point)
    searcher = Searcher(search)
    started = clock()
    probes: list[CapacityProbe] = []
    while (rate := searcher.next_rate(_runs_left(search, point, clock() - started,
                                                 len(probes)))) is not None:
        probe = probe_point(point, rate, len(probes) + 1)
        run_dir, summary = run_and_analyse(probe)
        verdict = judge(summary, _latency_curve(run_dir), search, rate)
        searcher.record(rate, verdict)
        probes.append(_probe_record(probe, summary, verdict, searcher.probes[-1].confirming))
    return _result(point, searcher, probes)


def _runs_left(search: RateSearch, point: RunPoint, elapsed_s: float, done: int) -> int:
    """Probes the budget still allows: none once the next could not end within max_time
    (judged by the longest a probe at `from` takes: warm-up, measuring and drain)."""
    left = search.max_runs - done
    if search.max_time is None:
        return left
    workload = point.workload
    longest = (workload.warmup_ns + search.probe_duration(workload.duration_ns, search.low)
               + workload.drain_ns) / SECOND_NS
    return left if elapsed_s + longest <= search.max_time / SECOND_NS else 0


def _latency_curve(run_dir: Path) -> list[float | None]:
    """The mean latency per bucket of a probe's series.json (empty without one)."""
    try:
        series = json.loads((run_dir / REPORT_DIR / SERIES_FILE).read_text(encoding="utf-8"))
        return list(series[Metric.LATENCY]["mean_us"])
    except (OSError, ValueError, KeyError, TypeError):
        return []


def _probe_record(point: RunPoint, summary: RunSummary, verdict: Verdict,
                  confirming: bool) -> CapacityProbe:
    latency = summary.latency_us
    return CapacityProbe(
        run_id=point.run_id, rate=point.workload.rate, confirming=confirming,
        verdict=verdict.kind, reasons=list(verdict.reasons), status=summary.status,
        send_rate=summary.send_rate, receive_rate=summary.receive_rate,
        latency_us={key: latency.figure(key) for key in ("p50", "p99", "p99.9", "p99.99")}
        if latency else {})


def _result(point: RunPoint, searcher: Searcher, probes: list[CapacityProbe]
            ) -> CapacityResult:
    search = searcher.spec
    finding = searcher.finding or Finding.BUDGET
    capacity = searcher.capacity()
    return CapacityResult(
        system=point.system.name, point=point.run_id, finding=finding,
        capacity_msg_s=capacity, note=_note(finding, searcher, point, probes),
        objective_us={key: ns / 1000 for key, ns in search.objective.items()},
        precision=search.precision, probes=probes)


def _note(finding: Finding, searcher: Searcher, point: RunPoint,
          probes: list[CapacityProbe]) -> str:
    """One line saying what the search found, as the console prints it."""
    capacity, search = searcher.capacity(), searcher.spec
    shown = f"{capacity:,.0f} msg/s" if capacity is not None else "none"
    confirmations = sum(1 for p in searcher.probes if p.rate == capacity and p.verdict.passed)
    runs = f"{len(searcher.probes)} run(s)"
    if finding == Finding.CONFIRMED:
        return (f"{shown} under {search.label()} (confirmed by {confirmations} runs; "
                f"{runs})")
    if finding == Finding.AT_LEAST:
        return f"at least {shown} (`to` passed {confirmations} times; {runs})"
    if finding == Finding.BELOW:
        return f"below {search.low:,.0f} msg/s (`from` failed: {_reasons(searcher)})"
    if finding == Finding.GENERATOR_BOUND:
        return _generator_note(probes[-1], searcher.probes[-1].verdict.lag,
                               point.workload.producers, shown)
    return (f"budget spent after {runs}: highest passing {shown}, not confirmed"
            + (f", lowest failing {searcher.failing():,.0f} msg/s"
               if searcher.failing() is not None else ""))


def _reasons(searcher: Searcher) -> str:
    return "; ".join(searcher.probes[-1].verdict.reasons)


def _generator_note(last: CapacityProbe, lag: LagCause | None, producers: int,
                    shown: str) -> str:
    """Generator-bound: the rate it happened at, why, and what would keep that rate: for
    loops that ran and fell behind, how many producers, at the rate each one did keep
    (one more when they kept it, but late); for loops kept from a CPU, CPUs."""
    found = (f"generator-bound at {last.rate:,.0f} msg/s ({'; '.join(last.reasons)}): not "
             f"the system's capacity; highest passing {shown}. ")
    if lag == LagCause.PLACEMENT:
        return found + f"The producers' loops need CPUs of their own: {FEWER_LOOPS}"
    if lag == LagCause.MACHINE:
        return found + ("Other work on the machine kept the producers' loops from a CPU: "
                        "run it where they have CPUs to themselves")
    kept = (last.send_rate or 0) / producers
    needed = math.ceil(last.rate / kept) if 0 < kept < SATURATED_RATE_SHARE * last.rate \
        / producers else producers + 1
    return found + (f"The scenario needs at least {needed} producers for that rate (it has "
                    f"{producers}; each kept {kept:,.0f} msg/s), on more hosts if this "
                    "one's cores are taken")
