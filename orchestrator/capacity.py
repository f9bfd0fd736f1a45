"""The capacity search's steps (docs/design.md, "Capacity search"): which rate to probe
next given the verdicts so far, and what the search found. Pure: verdicts in, rates out,
so the search is tested on its own against simulated systems; orchestrator.controller
runs each probe as an ordinary run.

A geometric ramp doubles from `from` until a probe fails (or `to` passes); bisection at
the geometric mean of the highest passing and the lowest failing rate then narrows them
to within `precision`; the highest passing rate is then run again until `confirm` runs
at it have passed. A confirmation that fails makes that rate a failing one, and the
search narrows below it. A generator-bound probe stops the search: the rate it was at
says nothing about the system.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from enum import StrEnum

from sixnines.orchestrator.probe_verdict import Verdict, VerdictKind
from sixnines.orchestrator.rate_search import RateSearch


class Finding(StrEnum):
    """How a search ended."""

    CONFIRMED = "confirmed"  # the capacity, every confirming run passed
    AT_LEAST = "at-least"  # `to` itself passed and was confirmed: the capacity is higher
    BELOW = "below"  # `from` failed: the capacity is lower
    GENERATOR_BOUND = "generator-bound"  # the producers could not keep a rate
    BUDGET = "budget"  # out of runs or time before it was confirmed


@dataclass(frozen=True)
class Probe:
    """One run of the search: its rate, whether it confirms a rate that passed, and its
    verdict."""

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
    _candidate: float | None = None  # the rate being confirmed

    def passing(self) -> float | None:
        """The highest rate that passed and was not failed by a confirmation since."""
        failed = self.failing()
        rates = [p.rate for p in self.probes if p.verdict.passed
                 and (failed is None or p.rate < failed)]
        return max(rates, default=None)

    def failing(self) -> float | None:
        """The lowest rate a probe failed at (a failed confirmation included)."""
        return min((p.rate for p in self.probes if p.verdict.kind == VerdictKind.FAIL),
                   default=None)

    def record(self, rate: float, verdict: Verdict) -> None:
        self.probes.append(Probe(rate, rate == self._candidate, verdict))
        if verdict.kind == VerdictKind.GENERATOR_BOUND:
            self.finding = Finding.GENERATOR_BOUND

    def next_rate(self, runs_left: int) -> float | None:
        """The rate to probe next, or None when the search is over (`finding` says how);
        `runs_left`: the budget left (0: over)."""
        if self.finding is not None:
            return None
        spec, low, high = self.spec, self.passing(), self.failing()
        if not self.probes:
            return self._next(spec.low, runs_left)
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
        self._candidate = low
        return self._next(low, runs_left)

    def _confirmations(self, rate: float) -> int:
        return sum(1 for p in self.probes if p.rate == rate and p.verdict.passed)

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
