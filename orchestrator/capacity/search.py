"""The capacity search's steps (docs/design.md, "Capacity search"): which rate to probe
next given the verdicts so far, and what the search found. Pure: verdicts in, rates out,
so the search is tested on its own against simulated systems; orchestrator.controller
runs each probe as an ordinary run.

A geometric ramp doubles from `from` until a probe fails (or `to` passes); bisection at
the geometric mean of the highest passing and the lowest failing rate then narrows them
to within `precision`; the highest passing rate is then run again until `confirm` runs
at it have passed. A confirmation that fails makes that rate a failing one, and the
search narrows below it. A generator-bound probe says nothing about the system: the
search stops there.

One stall of the machine must not decide a search: a probe that failed, or was
generator-bound, is run again once before the search ends on it. A failure whose re-run
passes was not the system's limit (the rate counts as not failed; both probes stay on
record); a generator-bound probe whose re-run is generator-bound again ends the search.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from enum import StrEnum

from sixnines.orchestrator.capacity.verdict import Verdict, VerdictKind
from sixnines.orchestrator.scenario.search_spec import RateSearch


class Finding(StrEnum):
    """How a search ended."""

    CONFIRMED = "confirmed"  # the capacity, every confirming run passed
    AT_LEAST = "at-least"  # `to` itself passed and was confirmed: the capacity is higher
    BELOW = "below"  # `from` failed (twice): the capacity is lower
    GENERATOR_BOUND = "generator-bound"  # the producers could not keep a rate, twice
    BUDGET = "budget"  # out of runs or time before it was confirmed


@dataclass(frozen=True)
class Probe:
    """One run of the search: its rate, whether it ran again at a rate already probed
    (to confirm that rate's verdict), and its verdict."""

    rate: float
    confirming: bool
    verdict: Verdict


@dataclass
class Searcher:
    """The state of one search: feed it each probe's verdict (`record`), ask it for the
    next rate (`next_rate`, None once it is over), then read `finding`."""

    spec: RateSearch
    probes: list[Probe] = field(default_factory=list)
    finding: Finding | None = None

    def _verdicts(self, rate: float) -> list[VerdictKind]:
        return [p.verdict.kind for p in self.probes if p.rate == rate]

    def _failed(self, rate: float) -> bool:
        """Whether `rate` counts as failed: it failed twice, or once with no pass since
        (a failure whose re-run passed was a stall, not the system's limit)."""
        verdicts = self._verdicts(rate)
        fails = verdicts.count(VerdictKind.FAIL)
        if fails != 1:
            return fails > 1
        return VerdictKind.PASS not in verdicts[verdicts.index(VerdictKind.FAIL):]

    def _settled(self, rate: float) -> bool:
        """Whether a rate's last verdict was seen twice there: its failure (or its
        generator-bound probe) confirmed by a re-run."""
        verdicts = self._verdicts(rate)
        return verdicts.count(verdicts[-1]) > 1

    def passing(self) -> float | None:
        """The highest rate that passed, below the lowest failing one."""
        failed = self.failing()
        rates = [p.rate for p in self.probes if p.verdict.passed
                 and (failed is None or p.rate < failed)]
        return max(rates, default=None)

    def failing(self) -> float | None:
        """The lowest rate that counts as failed (`_failed`)."""
        return min((p.rate for p in self.probes if p.verdict.kind == VerdictKind.FAIL
                    and self._failed(p.rate)), default=None)

    def record(self, rate: float, verdict: Verdict) -> None:
        self.probes.append(Probe(rate, any(p.rate == rate for p in self.probes), verdict))
        if verdict.kind == VerdictKind.GENERATOR_BOUND and self._settled(rate):
            self.finding = Finding.GENERATOR_BOUND

    def next_rate(self, runs_left: int) -> float | None:
        """The rate to probe next, or None when the search is over (`finding` says how);
        `runs_left`: the budget left (0: over)."""
        if self.finding is not None:
            return None
        spec, low, high = self.spec, self.passing(), self.failing()
        if not self.probes:
            return self._next(spec.low, runs_left)
        last = self.probes[-1]
        if last.verdict.kind == VerdictKind.GENERATOR_BOUND:  # once: _settled ended it
            return self._next(last.rate, runs_left)
        if high is not None and not self._settled(high) and (
                low is None or high / low - 1 <= spec.precision):
            return self._next(high, runs_left)  # the search would end on it: once more
        if low is None:
            self.finding = Finding.BELOW
            return None
        if high is None and low < spec.high:  # still ramping
            return self._next(min(low * 2, spec.high), runs_left)
        if high is not None and high / low - 1 > spec.precision:
            return self._next(math.sqrt(low * high), runs_left)
        if self._confirmations(low) >= spec.confirm:
            self.finding = Finding.AT_LEAST if high is None else Finding.CONFIRMED
            return None
        return self._next(low, runs_left)

    def _confirmations(self, rate: float) -> int:
        return self._verdicts(rate).count(VerdictKind.PASS)

    def _next(self, rate: float, runs_left: int) -> float | None:
        if runs_left <= 0:
            self.finding = Finding.BUDGET
            return None
        return _readable(rate, self.passing(), self.failing())

    def capacity(self) -> float | None:
        """The rate found: confirmed (or at least it), else the highest that passed."""
        return self.passing()


def _readable(rate: float, low: float | None, high: float | None) -> float:
    """`rate` to 3 significant digits (run ids and tables read "41.2k", not "41231.056"),
    unless that would leave the open interval the search narrows."""
    rounded = float(f"{rate:.3g}")
    inside = (low is None or rounded > low) and (high is None or rounded < high)
    return rounded if inside or rounded == rate else rate
