"""The capacity search's steps (orchestrator.capacity.search) against simulated systems."""

from __future__ import annotations

import math

import pytest

from sixnines.orchestrator.capacity.probes import rate_label
from sixnines.orchestrator.capacity.search import Finding, Searcher
from sixnines.orchestrator.capacity.verdict import Verdict, VerdictKind
from sixnines.orchestrator.scenario.search_spec import RateSearch
from tests.capacity_cases import spec


def search(found: RateSearch, system, budget: int = 1000) -> Searcher:
    """Run the search against `system` (rate → Verdict)."""
    searcher = Searcher(found)
    while (rate := searcher.next_rate(budget - len(searcher.probes))) is not None:
        searcher.record(rate, system(rate))
    return searcher


def capped(capacity: float, flaky: set[int] = frozenset()):
    """A system passing every rate up to `capacity`; probe numbers in `flaky` fail."""
    count = [0]

    def system(rate: float) -> Verdict:
        count[0] += 1
        ok = rate <= capacity and count[0] not in flaky
        return Verdict(VerdictKind.PASS if ok else VerdictKind.FAIL)
    return system


@pytest.mark.parametrize("capacity", [1_000, 1_234, 47_000, 333_333, 999_999])
def test_the_search_finds_the_capacity_within_its_precision(capacity):
    found = search(spec(), capped(capacity))
    assert found.finding == Finding.CONFIRMED
    rate = found.capacity()
    assert rate <= capacity < found.failing() <= rate * 1.05
    assert sum(1 for p in found.probes if p.rate == rate and p.verdict.passed) == 3
    assert all(p.confirming for p in found.probes[-2:])
    ramp = [p.rate for p in found.probes[:3]]
    assert ramp[:2] == [1000, 2000][:len(ramp[:2])]


def test_rates_read_as_people_write_them():
    found = search(spec(), capped(47_000))
    assert all(float(f"{p.rate:.3g}") == p.rate for p in found.probes)
    assert [rate_label(r) for r in (800.0, 41_200.0, 1_500_000.0)] == ["800", "41.2k", "1.5M"]


def test_a_confirmation_that_fails_twice_moves_the_capacity_below_it():
    clean = search(spec(), capped(47_000))
    runs = []

    def flaky_at_the_top(rate: float) -> Verdict:
        """Passes up to 47k, but the rate the clean search found passes only its first run."""
        runs.append(rate)
        ok = rate <= 47_000 and (rate != clean.capacity() or runs.count(rate) == 1)
        return Verdict(VerdictKind.PASS if ok else VerdictKind.FAIL)
    found = search(spec(), flaky_at_the_top)
    assert found.finding == Finding.CONFIRMED
    assert found.capacity() < clean.capacity()
    assert found.failing() == clean.capacity()
    assert [p.verdict.kind for p in found.probes if p.rate == clean.capacity()] == [
        VerdictKind.PASS, VerdictKind.FAIL, VerdictKind.FAIL]


def test_a_confirmation_whose_re_run_passes_keeps_the_capacity():
    clean = search(spec(), capped(47_000))
    first = len(clean.probes) - 1
    found = search(spec(), capped(47_000, {first}))
    assert (found.finding, found.capacity()) == (Finding.CONFIRMED, clean.capacity())
    at_capacity = [p.verdict.kind for p in found.probes if p.rate == clean.capacity()]
    assert at_capacity[:3] == [VerdictKind.PASS, VerdictKind.FAIL, VerdictKind.PASS]
    assert at_capacity.count(VerdictKind.PASS) == 3


@pytest.mark.parametrize("stalled", [1, 3])  # `from` itself, and 4k on the ramp
def test_one_failure_the_re_run_does_not_repeat_does_not_decide_the_search(stalled):
    """A stall of the machine fails one probe: it is run again before the search ends on
    it, and the search goes on as if it had passed."""
    clean = search(spec(), capped(47_000))
    found = search(spec(), capped(47_000, {stalled}))
    assert (found.finding, found.capacity()) == (Finding.CONFIRMED, clean.capacity())
    failed = found.probes[stalled - 1]
    assert failed.verdict.kind == VerdictKind.FAIL
    assert any(p.rate == failed.rate and p.verdict.passed and p.confirming
               for p in found.probes[stalled:])


def test_a_failing_from_is_run_again_before_the_search_ends_below_it():
    found = search(spec(), capped(500))
    assert found.finding == Finding.BELOW
    assert [(p.rate, p.verdict.kind, p.confirming) for p in found.probes] == [
        (1000, VerdictKind.FAIL, False), (1000, VerdictKind.FAIL, True)]


def test_the_ends_of_the_range():
    assert search(spec(), capped(500)).finding == Finding.BELOW
    top = search(spec(), capped(5e6))
    assert (top.finding, top.capacity()) == (Finding.AT_LEAST, 1e6)
    assert len(top.probes) == math.ceil(math.log2(1000)) + 1 + 2


def test_a_generator_bound_probe_confirmed_by_its_re_run_stops_the_search():
    def system(rate: float) -> Verdict:
        if rate > 100_000:
            return Verdict(VerdictKind.GENERATOR_BOUND, ("sent less",))
        return Verdict(VerdictKind.PASS)
    found = search(spec(), system)
    assert found.finding == Finding.GENERATOR_BOUND
    assert [(p.rate, p.verdict.kind, p.confirming) for p in found.probes[-2:]] == [
        (128_000, VerdictKind.GENERATOR_BOUND, False),
        (128_000, VerdictKind.GENERATOR_BOUND, True)]
    assert found.capacity() == 64_000


def test_a_generator_stall_its_re_run_does_not_repeat_does_not_end_the_search():
    """The first probe's senders stalled once (the relay's 1k msg/s probe, send-lag p99
    6.2 ms on a busy machine): generator-bound; the same rate again passes, and the
    search finds the capacity as if nothing had happened."""
    clean = search(spec(), capped(47_000))
    system = capped(47_000)
    probes = [0]

    def stalled_once(rate: float) -> Verdict:
        probes[0] += 1
        if probes[0] == 1:
            return Verdict(VerdictKind.GENERATOR_BOUND, ("send lag p99 6,200 µs",))
        return system(rate)
    found = search(spec(), stalled_once)
    assert (found.finding, found.capacity()) == (Finding.CONFIRMED, clean.capacity())
    assert [(p.rate, p.verdict.kind) for p in found.probes[:2]] == [
        (1000, VerdictKind.GENERATOR_BOUND), (1000, VerdictKind.PASS)]


def test_the_budget_ends_a_search_unconfirmed():
    found = search(spec(), capped(47_000), budget=5)
    assert (found.finding, len(found.probes)) == (Finding.BUDGET, 5)
