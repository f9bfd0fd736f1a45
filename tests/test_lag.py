"""formats.lag: whose doing a send lag was, on summaries holding the figures real runs
gave (the relay SIGSTOPped 2 s, two producers on one CPU, a busy machine, a generator
flat out), and without the kernel's account (older runs)."""

from __future__ import annotations

import pytest

from sixnines.formats.lag import (
    LagCause,
    behind_schedule,
    crowded,
    crowded_note,
    lag_cause,
    lag_warnings,
)
from sixnines.formats.summary import Cpu, CpuSide, Figures, LoopTime, RunSummary

PLACED = "host local: producer-0 on CPU 1; everything else sixnines runs there keeps off CPU 1"
CROWDED = crowded_note("host local", 2, 1)


def cpu(cores: float | None = 0.95, loop: LoopTime | None = None) -> Cpu:
    return Cpu(sender=CpuSide(us_per_message=Figures(), cores=cores, empty_intervals=0,
                              loop=loop),
               receiver=None, broker=None, interval_ms=1000.0, notes=[])


def run(lag_p99_us: float = 5_000.0, send_rate: float = 1000.0, producers: int = 1,
        schedule: str = "fixed", behind_s: float | None = 0.3, **fields) -> RunSummary:
    return RunSummary(params={"rate": 1000.0, "schedule": schedule, "producers": producers},
                      load="open-loop", send_lag_us=Figures(p99=lag_p99_us),
                      send_rate=send_rate, behind_s=behind_s, **fields)


def test_what_falls_behind_the_schedule():
    assert behind_schedule(run()) == ["send lag p99 is 5,000 µs (over 1,000 µs); latency "
                                      "includes that wait"]
    assert behind_schedule(run(10.0, 800.0)) == ["sent 800 msg/s of the 1,000 msg/s scheduled"]
    assert behind_schedule(run(10.0, 999.0)) == []
    assert behind_schedule(run(50_000.0, 10.0, schedule="closed")) == []  # waits on purpose


def test_a_relay_stalled_two_seconds_blocked_the_sends_the_system_s_doing():
    """Measured: 1 KB at 20k msg/s, the relay SIGSTOPped 2 s: the sender was 1.78 s behind,
    its loop blocked 1.8 s in sendall (at 0.58 cores over the run, which alone read as a
    busy generator)."""
    stalled = run(1_724_908.0, 20_001.0, behind_s=1.78, cpu=cpu(0.58, LoopTime(
        running_s=4.3, waiting_s=0.4, blocked_s=1.8)), cpu_placement=[PLACED])
    assert lag_cause(stalled) == LagCause.SYSTEM
    (line,) = lag_warnings(stalled)
    assert line.startswith("system pushed back: send lag p99 is 1,724,908 µs")
    assert "blocked in calls 1.80 s" in line and "the system did not take the messages" in line


def test_loops_without_a_cpu_of_their_own_are_never_the_system_s_doing():
    """Measured: two producers at 5k msg/s on one CPU: each loop waited half its time for
    the CPU, at 0.46 cores between them (which alone read as blocked sends)."""
    crowded_run = run(4_317.0, 5_009.0, producers=2, behind_s=0.4, cpu_placement=[CROWDED],
                      cpu=cpu(0.46, LoopTime(running_s=3.9, waiting_s=4.0, blocked_s=0.1)))
    assert lag_cause(crowded_run) == LagCause.PLACEMENT
    (line,) = lag_warnings(crowded_run)
    assert line.startswith("CPUs oversubscribed: send lag p99 is 4,317 µs")
    assert "host local: 2 busy loop(s) on 1 CPU(s): no CPU of their own" in line
    assert "fewer busy loops per host" in line
    without_account = crowded_run.model_copy(update={"cpu": cpu(0.46)})
    assert lag_cause(without_account) == LagCause.PLACEMENT


def test_a_crowded_placement_is_said_also_when_the_senders_kept_up():
    (line,) = lag_warnings(run(300.0, cpu_placement=[PLACED, CROWDED]))
    assert line.startswith("CPUs oversubscribed: host local: 2 busy loop(s) on 1 CPU(s): no "
                           "CPU of their own (expect send-lag tails from the placement")
    assert lag_warnings(run(300.0, cpu_placement=[PLACED])) == []


def test_a_loop_kept_from_its_cpu_by_other_work_is_the_machine_s_doing():
    busy = run(3_879.0, behind_s=0.02, cpu=cpu(0.85, LoopTime(
        running_s=0.85, waiting_s=0.11, blocked_s=0.0005)))
    assert lag_cause(busy) == LagCause.MACHINE
    assert lag_warnings(busy)[0].startswith("machine busy: send lag p99 is 3,879 µs")


def test_a_loop_that_ran_and_still_fell_behind_is_the_generator_s_doing():
    flat_out = run(2_900.0, 2_000_000.0, behind_s=0.4, cpu=cpu(0.996, LoopTime(
        running_s=4.98, waiting_s=0.01, blocked_s=0.01)))
    assert lag_cause(flat_out) == LagCause.GENERATOR
    assert "the generator's own work set the pace" in lag_warnings(flat_out)[0]


@pytest.mark.parametrize(("cores", "cause"), [(0.3, LagCause.SYSTEM), (1.9, LagCause.GENERATOR),
                                              (None, LagCause.GENERATOR)])
def test_without_the_kernel_s_account_the_loops_cpu_share_decides(cores, cause):
    """Runs recorded before the account (or on a kernel without it): two senders under a
    quarter of a core each mostly waited in their sends."""
    older = run(producers=2, behind_s=None, cpu=cpu(cores))
    assert lag_cause(older) == cause
    assert lag_cause(run(producers=2, cpu=None)) == LagCause.GENERATOR


def test_the_placement_note_reads_back():
    assert crowded([PLACED, CROWDED, crowded_note("host a, b (one kernel)", 3, 2)]) == [
        "host local: 2 busy loop(s) on 1 CPU(s): no CPU of their own",
        "host a, b (one kernel): 3 busy loop(s) on 2 CPU(s): no CPU of their own"]


def test_a_system_stall_on_a_busy_machine_is_still_the_system_s():
    """Measured under a load of 5 on two cores: the relay stalled 2 s, the loop blocked
    1.67 s and also waited 2.08 s for its CPU, 3.67 s behind in all: the blocked sends are
    the specific sign, the waiting is in the evidence."""
    both = run(1_601_176.0, 20_000.0, behind_s=3.67, cpu=cpu(0.3, LoopTime(
        running_s=1.7, waiting_s=2.08, blocked_s=1.67)))
    assert lag_cause(both) == LagCause.SYSTEM
    assert "waited for a CPU 2.08 s" in lag_warnings(both)[0]


def test_on_a_crowded_host_blocked_sends_are_the_system_s_only_when_waiting_explains_nothing():
    """There the relay shares the loops' CPUs: starved, it blocks their sends too."""
    crowded_both = run(behind_s=1.0, cpu_placement=[CROWDED],
                       cpu=cpu(0.4, LoopTime(running_s=2.0, waiting_s=1.5, blocked_s=0.6)))
    assert lag_cause(crowded_both) == LagCause.PLACEMENT
    stalled = crowded_both.model_copy(update={"cpu": cpu(0.4, LoopTime(
        running_s=2.0, waiting_s=0.1, blocked_s=0.9))})
    assert lag_cause(stalled) == LagCause.SYSTEM


def test_a_blocked_millisecond_explains_no_lag():
    """Loops that kept up were blocked 0.5–0.8 ms over a whole run: not the system's doing,
    however short the time behind."""
    tiny = run(1_100.0, behind_s=0.002, cpu=cpu(0.99, LoopTime(
        running_s=5.0, waiting_s=0.0, blocked_s=0.0008)))
    assert lag_cause(tiny) == LagCause.GENERATOR


def test_sends_blocked_long_enough_to_lag_on_their_own_are_the_system_s():
    """Under a load of 4: the relay stalled 2 s while the loop waited 3.2 s for its CPU;
    blocked 1.0 s of 4.15 s behind, under a third, but 18 % of the loop's time: the system
    alone would have put p99 over 1 ms."""
    both = run(472_908.0, 10_000.0, behind_s=4.15, cpu=cpu(0.3, LoopTime(
        running_s=1.47, waiting_s=3.21, blocked_s=1.02)))
    assert lag_cause(both) == LagCause.SYSTEM


def test_loops_too_slow_on_a_cpu_are_the_generator_s_though_the_system_blocked_them_too():
    """20M msg/s through the relay: the relay blocked the sends a third of the time, but
    the loop sent 1M messages in 0.095 s on a CPU, 10.5M a second: 20M was never its."""
    flood = RunSummary(params={"rate": 2e7, "schedule": "fixed", "producers": 1},
                       load="open-loop", send_lag_us=Figures(p99=138_019.0),
                       send_rate=5_383_286.0, behind_s=0.18, cpu=cpu(None, LoopTime(
                           running_s=0.095, waiting_s=0.062, blocked_s=0.036)))
    assert lag_cause(flood) == LagCause.GENERATOR
