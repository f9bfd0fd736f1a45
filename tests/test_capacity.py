"""The capacity search without servers: its syntax and errors, the probe verdicts on
hand-made summaries, and the search's steps against simulated systems (orchestrator
.rate_search, probe_verdict, capacity)."""

from __future__ import annotations

import math

import pytest
from pydantic import TypeAdapter, ValidationError

from sixnines.formats.lag import LagCause, crowded_note
from sixnines.formats.summary import (
    CapacityProbe,
    CapacityResult,
    Cpu,
    CpuSide,
    Figures,
    LoopTime,
    RunSummary,
)
from sixnines.orchestrator.capacity.probes import rate_label, run_search
from sixnines.orchestrator.capacity.search import Finding, Searcher
from sixnines.orchestrator.capacity.verdict import Verdict, VerdictKind, judge
from sixnines.orchestrator.reports import capacity
from sixnines.orchestrator.scenario.model import load_scenario
from sixnines.orchestrator.scenario.problems import ScenarioError
from sixnines.orchestrator.scenario.search_spec import PROBE_LIMIT_NS, RateOrSearch, RateSearch
from tests.integration.support import points

SECOND = 1_000_000_000


def spec(**fields) -> RateSearch:
    return RateSearch.model_validate({"search": "max", "objective": {"p99": "1ms"},
                                      "from": "1k", "to": "1M", **fields})


# --- syntax -----------------------------------------------------------------------------


def test_a_search_reads_as_written():
    found = spec(objective={"p99": "500us", "p99.99": "5ms"}, precision="2%", confirm=4,
                 max_runs=12, max_time="30m")
    assert (found.low, found.high, found.precision, found.confirm) == (1000, 1e6, 0.02, 4)
    assert found.objective == {"p99": 500_000, "p99.99": 5_000_000}
    assert found.max_time == 1800 * SECOND
    assert found.label() == "p99 ≤ 500us, p99.99 ≤ 5ms"
    rate = TypeAdapter(RateOrSearch)
    assert rate.validate_python("20k") == 20_000
    assert rate.validate_python("max") == "max"
    assert isinstance(rate.validate_python({"search": "max", "objective": {"p50": "1ms"},
                                            "from": 10, "to": 20}), RateSearch)


@pytest.mark.parametrize(("fields", "message"), [
    ({"to": "1k"}, "must be above `from`"),
    ({"from": "max"}, "not max"),
    ({"objective": {}}, "at least 1 item"),
    ({"objective": {"p98": "1ms"}}, "'p99.9'"),
    ({"objective": {"p99": "0ms"}}, "longer than 0"),
    ({"precision": "60%"}, "between 0.1% and 50%"),
    ({"confirm": 2}, "greater than or equal to 3"),
    ({"search": "min"}, "'max'"),
    ({"spare": 1}, "Extra inputs"),
])
def test_a_search_refuses_what_cannot_run(fields, message):
    with pytest.raises(ValidationError, match=message):
        spec(**fields)


def test_a_probe_is_as_long_as_its_objective_needs():
    found = spec(objective={"p99.99": "5ms"})  # 10 / 1e-4 = 100,000 samples
    assert found.samples_needed() == 100_000
    assert found.probe_duration(10 * SECOND, 1e6) == 10 * SECOND
    assert found.probe_duration(10 * SECOND, 1000) == 100 * SECOND


def test_scenario_errors_name_the_field_and_line(tmp_path):
    path = tmp_path / "s.yaml"
    path.write_text("""name: cap
systems: [{name: tcp, driver: tcp}]
workload:
  message_size: 64
  duration: 5s
  rate:
    search: max
    objective: {p98: 1ms, p99.9999: 5ms}
    from: 100
    to: 1k
    precision: 70%
""")
    with pytest.raises(ScenarioError) as error:
        load_scenario(path)
    text = str(error.value)
    assert "s.yaml:8: workload.rate.objective.p98: must be 'p50'" in text
    assert "s.yaml:11: workload.rate.precision: must be between 0.1% and 50%" in text


def test_a_search_whose_objective_would_need_too_long_a_probe_is_refused():
    with pytest.raises(ScenarioError, match=r"raise `from` to at least 16,667 msg/s"):
        points("""
name: cap
systems: [{name: tcp, driver: tcp}]
workload: {message_size: 64, duration: 5s,
           rate: {search: max, objective: {p99.9999: 1ms}, from: 100, to: 1M}}
""")
    assert PROBE_LIMIT_NS == 600 * SECOND


def test_a_closed_loop_cannot_search():
    with pytest.raises(ScenarioError, match="'closed' cannot search for a rate"):
        points("""
name: cap
systems: [{name: tcp, driver: tcp}]
workload: {mode: round-trip, schedule: closed, message_size: 64, duration: 5s,
           rate: {search: max, objective: {p99: 1ms}, from: 1k, to: 10k}}
""")


# --- verdicts ---------------------------------------------------------------------------


def summary(p99_us: float = 200.0, count: int = 10_000, **fields) -> RunSummary:
    """An analysed probe at 10,000 msg/s that passes a p99 ≤ 1 ms objective."""
    base = dict(run_id="r", status="ok", params={"mode": "one-way", "consumers": 1,
                                                 "rate": 10_000.0},
                sent=count, lost=0, unknown=0, send_rate=10_000.0, receive_rate=10_000.0,
                latency_us=Figures(p50=50.0, p99=p99_us, count=count),
                send_lag_us=Figures(p99=5.0, count=count))
    return RunSummary(**{**base, **fields})


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


# --- the search -------------------------------------------------------------------------


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


# --- the report ---------------------------------------------------------------------------


def test_the_plot_shows_every_probe_by_rate_with_its_verdict_and_the_objective():
    def probe(rate: float, verdict: str, p99: float) -> CapacityProbe:
        return CapacityProbe(run_id=f"r-{rate}", rate=rate, confirming=False, verdict=verdict,
                             reasons=[] if verdict == "pass" else ["p99 over"], status="ok",
                             send_rate=rate, receive_rate=rate,
                             latency_us={"p50": 10.0, "p99": p99, "p99.9": 2 * p99,
                                         "p99.99": 3 * p99})
    result = CapacityResult(system="s", point="01-s", finding="confirmed", capacity_msg_s=2e3,
                            note="2,000 msg/s", objective_us={"p99": 500.0}, precision=0.05,
                            probes=[probe(1e3, "pass", 100.0), probe(4e3, "fail", 900.0),
                                    probe(2e3, "pass", 300.0), probe(2e3, "pass", 320.0)])
    figure = capacity.figure(result)
    lines = {line.name: line for line in figure.lines}
    assert list(lines["p99"].xs) == [1e3, 2e3, 2e3, 4e3]  # joined in rate order
    assert list(lines["p99"].ys) == [100.0, 300.0, 320.0, 900.0]
    assert (list(lines["fail (p99)"].xs), lines["fail (p99)"].style) == ([4e3], "markers")
    assert len(lines["pass (p99)"].xs) == 3
    assert list(lines["objective p99"].ys) == [500.0, 500.0] and lines["objective p99"].dashed
    assert (figure.x.scale, figure.y.scale) == ("log", "log")
    table = capacity.table(result)
    assert table.count("<tr>") == 5 and "p99 over" in table


def test_a_search_starts_no_probe_that_could_not_end_within_its_time(tmp_path):
    """Probes of 3 s warm-up + 5 s + 2 s drain, each taking 60 s of the clock here: a
    search allowed 3 minutes makes 3 and reports its budget spent."""
    (point,) = points("""
name: cap
systems: [{name: tcp, driver: tcp}]
workload: {message_size: 64, warmup: 3s, duration: 5s, drain: 2s,
           rate: {search: max, objective: {p99: 1ms}, from: 1k, to: 1M, max_time: 3m}}
""")
    now = [0.0]
    ran = []

    def run_and_analyse(probe):
        now[0] += 60
        ran.append(probe)
        rate = probe.workload.rate
        return tmp_path, summary(send_rate=rate, receive_rate=rate,
                                 params={"mode": "one-way", "consumers": 1, "rate": rate})

    result = run_search(point, run_and_analyse, clock=lambda: now[0])
    assert [probe.workload.rate for probe in ran] == [1000, 2000, 4000]
    assert ran[0].run_id == "01-tcp-probe01-rate=1k"
    assert ran[0].workload.duration_ns == 5 * SECOND  # enough samples: not lengthened
    assert (result.finding, result.capacity_msg_s) == ("budget", 4000)
    assert "not confirmed" in result.note
