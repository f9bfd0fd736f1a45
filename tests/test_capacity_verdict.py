"""Whether a probe passed (orchestrator.capacity.verdict), on hand-made summaries."""

from __future__ import annotations

import pytest

from sixnines.formats.lag import LagCause, crowded_note
from sixnines.formats.summary import Cpu, CpuSide, Figures, LoopTime
from sixnines.orchestrator.capacity.verdict import VerdictKind, judge
from tests.capacity_cases import spec, summary

FLAT = [100.0] * 40


def test_a_probe_within_its_objective_passes():
    assert judge(summary(), FLAT, spec(), 10_000).kind == VerdictKind.PASS


@pytest.mark.parametrize(("changes", "curve", "reason"), [
    ({"p99_us": 1500.0}, FLAT, "p99 1,500.0 µs over 1,000.0 µs"),
    ({"lost": 3}, FLAT, "3 lost"),
    ({"unknown": 2}, FLAT, "2 of unknown fate"),
    ({"count": 500}, FLAT, "p99 unmeasured: 500 samples, 1,000 needed"),
    ({"receive_rate": 9000.0}, FLAT, "receivers took 9,000 deliveries/s of the 10,000"),
    ({}, [100.0] * 10 + [150.0] * 20 + [400.0] * 10, "latency rising through the run"),
    ({"status": "partial", "problems": ["consumer-0 died"]}, FLAT, "run partial"),
])
def test_a_probe_fails_on_its_own_figures(changes, curve, reason):
    verdict = judge(summary(**changes), curve, spec(), 10_000)
    assert verdict.kind == VerdictKind.FAIL
    assert any(reason in line for line in verdict.reasons), verdict.reasons


def test_fan_out_and_round_trips_keep_up_by_their_own_measure():
    two = summary(params={"mode": "one-way", "consumers": 2}, receive_rate=20_000.0)
    assert judge(two, FLAT, spec(), 10_000).passed
    assert not judge(summary(params={"mode": "one-way", "consumers": 2}), FLAT, spec(),
                     10_000).passed
    assert judge(summary(params={"mode": "round-trip", "consumers": 3}), FLAT, spec(),
                 10_000).passed


@pytest.mark.parametrize(("changes", "reason"), [
    ({"send_lag_us": Figures(p99=4000.0, count=10_000)}, "send lag p99 is 4,000 µs"),
    ({"send_rate": 8000.0, "receive_rate": 8000.0}, "sent 8,000 msg/s of the 10,000"),
])
def test_a_generator_that_cannot_keep_the_rate_is_no_verdict_on_the_system(changes, reason):
    busy = Cpu(sender=CpuSide(us_per_message=Figures(), cores=0.99, empty_intervals=0),
               receiver=None, broker=None, interval_ms=1000.0, notes=[])
    for cpu in (busy, None):  # loops busy, or no CPU figures: the generator's doing
        verdict = judge(summary(p99_us=9000.0, cpu=cpu, **changes), FLAT, spec(), 10_000)
        assert verdict.kind == VerdictKind.GENERATOR_BOUND
        assert any(reason in line for line in verdict.reasons), verdict.reasons


def test_a_generator_that_could_not_offer_the_rate_is_bound_though_the_run_is_partial():
    """zmq at 3M msg/s: one producer sent 1.6M per second, its consumer still receiving the
    backlog when its drain ended (deliveries of unknown fate, the run partial). The rate
    was never offered: generator-bound, not a failure of the system; a run without figures
    still fails."""
    busy = Cpu(sender=CpuSide(us_per_message=Figures(), cores=0.99, empty_intervals=0),
               receiver=None, broker=None, interval_ms=1000.0, notes=[])
    backlog = dict(status="partial", unknown=900, send_rate=6_000.0, receive_rate=6_000.0,
                   problems=["agent consumer-0: still receiving during its drain"], cpu=busy)
    assert judge(summary(**backlog), FLAT, spec(), 10_000).kind == \
        VerdictKind.GENERATOR_BOUND
    failed = judge(summary(**{**backlog, "status": "failed"}), FLAT, spec(), 10_000)
    assert failed.kind == VerdictKind.FAIL and failed.reasons[0].startswith("run failed")


def test_senders_blocked_by_the_system_fail_the_probe():
    """Lagging while their loops idled (Redis at 1.6M msg/s: 0.19 cores, lag 313 ms):
    their sends blocked on the system, which is not keeping up."""
    idle = Cpu(sender=CpuSide(us_per_message=Figures(), cores=0.19, empty_intervals=0),
               receiver=None, broker=None, interval_ms=1000.0, notes=[])
    verdict = judge(summary(send_lag_us=Figures(p99=313_524.0, count=10_000), cpu=idle),
                    FLAT, spec(), 10_000)
    assert verdict.kind == VerdictKind.FAIL
    assert any(line.startswith("system pushed back: ") for line in verdict.reasons)


def loops(waiting_s: float, blocked_s: float, running_s: float = 1.0) -> Cpu:
    """Senders whose loop threads ran, waited for a CPU and blocked so long."""
    return Cpu(sender=CpuSide(us_per_message=Figures(), cores=0.9, empty_intervals=0,
                              loop=LoopTime(running_s=running_s, waiting_s=waiting_s,
                                            blocked_s=blocked_s)),
               receiver=None, broker=None, interval_ms=1000.0, notes=[])


def test_a_stall_of_the_machine_the_senders_caught_up_from_leaves_the_probe_to_its_figures():
    """The relay's first probe at 1k msg/s on a busy machine: send-lag p99 6.2 ms, the loop
    waiting for its CPU, the rate kept. Not generator-bound: its latency (stall included)
    meets the objective, so it passes; over the objective it fails as any probe would."""
    stalled = dict(send_lag_us=Figures(p99=6_200.0, count=10_000), behind_s=0.02,
                   cpu=loops(waiting_s=0.12, blocked_s=0.0005))
    verdict = judge(summary(p99_us=900.0, **stalled), FLAT, spec(), 10_000)
    assert (verdict.kind, verdict.lag) == (VerdictKind.PASS, LagCause.MACHINE)
    assert judge(summary(p99_us=6_300.0, **stalled), FLAT, spec(), 10_000).kind == \
        VerdictKind.FAIL
    busier = {**stalled, "send_rate": 8_000.0, "receive_rate": 8_000.0,
              "cpu": loops(waiting_s=0.6, blocked_s=0.0005, running_s=0.5)}
    behind = judge(summary(**busier), FLAT, spec(), 10_000)  # too busy to keep the rate
    assert (behind.kind, behind.lag) == (VerdictKind.GENERATOR_BOUND, LagCause.MACHINE)


def test_loops_without_a_cpu_of_their_own_are_no_verdict_on_the_system():
    crowded = summary(send_lag_us=Figures(p99=5_784.0, count=10_000), behind_s=0.3,
                      cpu=loops(waiting_s=2.0, blocked_s=0.0),
                      cpu_placement=[crowded_note("host local", 3, 2)])
    verdict = judge(crowded, FLAT, spec(), 10_000)
    assert (verdict.kind, verdict.lag) == (VerdictKind.GENERATOR_BOUND, LagCause.PLACEMENT)
    assert any("3 busy loop(s) on 2 CPU(s)" in line for line in verdict.reasons)
