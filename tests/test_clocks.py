"""The offsets a run starts its agents with, one per clock domain (orchestrator.run.clocks)."""

from __future__ import annotations

from sixnines.formats.manifest import Clock
from sixnines.orchestrator.run.clocks import settle_domains


def clock(domain: str, offset_ns: int, uncertainty_ns: int) -> Clock:
    return Clock(domain=domain, estimated_offset_ns=offset_ns, uncertainty_ns=uncertainty_ns,
                 pings=7)


def test_the_controller_s_own_domain_is_offset_by_exactly_nothing():
    here = [clock("ours", 1_200, 40), clock("ours", -900, 10)]
    settle_domains(here, "ours")
    assert [(c.offset_ns, c.domain_uncertainty_ns, c.same_clock_as_controller)
            for c in here] == [(0, 0, True), (0, 0, True)]
    assert [c.estimated_offset_ns for c in here] == [1_200, -900]  # kept as evidence


def test_another_domain_shares_its_most_certain_estimate():
    there = [clock("b", 5_000, 300), clock("b", 4_100, 20), clock("c", -70, 90)]
    settle_domains(there, "ours")
    assert [(c.offset_ns, c.domain_uncertainty_ns, c.same_clock_as_controller)
            for c in there] == [(4_100, 20, False), (4_100, 20, False), (-70, 90, False)]
