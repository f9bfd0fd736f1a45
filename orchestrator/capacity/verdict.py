"""Whether one probe of a capacity search passed (docs/design.md, "Capacity search"), from
the probe's own figures: its summary.json and the latency curve of its series.json.

In order, the first that holds decides:
- the run has no figures (failed, corrupt): fail, with its status;
- the senders did not keep the schedule (send-lag p99 over 1 ms, or under 95 % of the
  rate sent), and formats.lag says whose doing it was (the rule of the run's warning):
  the system's (their sends blocked) fails the probe; a stall of the machine the senders
  caught up from (their loops waited for a CPU, and they kept the rate) leaves the probe
  to the rules below, its latency including the stall; anything else (their own work,
  more busy loops than CPUs, a machine too busy for them to keep the rate) is
  generator-bound, never a verdict on the system — also when the run is partial: a
  generator that could not offer the rate leaves a backlog its consumers' drain may not
  hear out (zmq at 3M msg/s), which says nothing of the rate;
- the run did not finish well (partial): fail, with its problems;
- a delivery lost or of unknown fate: fail;
- an objective percentile resting on too few samples (fewer than
  rate_search.SAMPLES_BEYOND beyond it): fail, as unmeasured;
- an objective percentile over its threshold: fail;
- receivers not keeping up: deliveries per second under KEEP_UP of the send rate times
  the fan-out;
- latency rising through the run: the median of the curve's bucket means over its last
  quarter over RISE times that of its first quarter and RISE_MIN_US above it — a system
  falling behind fails even when the run is too short for its tail to reach the
  objective.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum

from sixnines.formats.hdr import PERCENTILE_KEYS, PERCENTILES
from sixnines.formats.lag import LagCause, behind_schedule, evidence, lag_cause
from sixnines.formats.summary import SATURATED_RATE_SHARE, RunSummary
from sixnines.formats.vocabulary import Mode
from sixnines.orchestrator.scenario.search_spec import SAMPLES_BEYOND, RateSearch

KEEP_UP = 0.98
RISE = 2.0
RISE_MIN_US = 50.0


class VerdictKind(StrEnum):
    PASS = "pass"
    FAIL = "fail"
    GENERATOR_BOUND = "generator-bound"


@dataclass(frozen=True)
class Verdict:
    kind: VerdictKind
    reasons: tuple[str, ...] = ()
    """Why it failed or was generator-bound, one line each (empty for a pass)."""
    lag: LagCause | None = None
    """Whose doing the senders' lag was, when they did not keep the schedule."""

    @property
    def passed(self) -> bool:
        return self.kind == VerdictKind.PASS


def judge(summary: RunSummary, latency_means_us: Sequence[float | None], search: RateSearch,
          rate: float) -> Verdict:
    """The verdict on a probe at `rate` (msg/s) whose summary and latency curve (mean µs
    per bucket of the measured stretch, in schedule order; None for a bucket without one)
    these are."""
    if summary.status not in ("ok", "partial") or summary.sent is None:
        return _unfinished(summary)
    behind = behind_schedule(summary)
    cause = lag_cause(summary) if behind else None
    if cause is not None:
        why = (*behind, f"{cause}: {evidence(summary, cause)}")
        if cause == LagCause.SYSTEM:
            return Verdict(VerdictKind.FAIL, why, cause)
        kept = summary.send_rate is not None and summary.send_rate >= SATURATED_RATE_SHARE * rate
        if not (cause == LagCause.MACHINE and kept):
            return Verdict(VerdictKind.GENERATOR_BOUND, why, cause)
    if summary.status != "ok":
        return _unfinished(summary)
    reasons = [*_losses(summary), *_objective(summary, search), *_keeping_up(summary),
               *_rising(latency_means_us)]
    return Verdict(VerdictKind.FAIL, tuple(reasons), cause) if reasons else \
        Verdict(VerdictKind.PASS, (), cause)


def _unfinished(summary: RunSummary) -> Verdict:
    return _fail(f"run {summary.status}: {'; '.join(summary.problems) or 'no figures'}")


def _fail(*reasons: str) -> Verdict:
    return Verdict(VerdictKind.FAIL, reasons)


def _losses(summary: RunSummary) -> list[str]:
    return [f"{count:,} {what}" for what, count in (("lost", summary.lost),
                                                   ("of unknown fate", summary.unknown))
            if count]


def _objective(summary: RunSummary, search: RateSearch) -> list[str]:
    latency = summary.latency_us
    found = []
    for key, threshold_ns in search.objective.items():
        p = PERCENTILES[PERCENTILE_KEYS.index(key)]
        needed = SAMPLES_BEYOND / (1 - p / 100)
        value = latency.figure(key) if latency else None
        if latency is None or value is None or latency.count < needed:
            found.append(f"{key} unmeasured: {latency.count if latency else 0:,} samples, "
                         f"{needed:,.0f} needed")
        elif value * 1000 > threshold_ns:
            found.append(f"{key} {value:,.1f} µs over {threshold_ns / 1000:,.1f} µs")
    return found


def _keeping_up(summary: RunSummary) -> list[str]:
    fan_out = 1 if summary.params.get("mode") == Mode.ROUND_TRIP else \
        summary.params.get("consumers", 1)
    sent, received = summary.send_rate, summary.receive_rate
    if sent is None or received is None or received >= KEEP_UP * sent * fan_out:
        return []
    return [f"receivers took {received:,.0f} deliveries/s of the {sent * fan_out:,.0f} sent"]


def _rising(curve_us: Sequence[float | None]) -> list[str]:
    means_us = [mean for mean in curve_us if mean is not None]
    quarter = len(means_us) // 4
    if quarter == 0:
        return []
    first = statistics.median(means_us[:quarter])
    last = statistics.median(means_us[-quarter:])
    if last > RISE * first and last - first > RISE_MIN_US:
        return [f"latency rising through the run: {first:,.1f} µs in its first quarter, "
                f"{last:,.1f} µs in its last"]
    return []
