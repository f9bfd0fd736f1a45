"""The CPU placement the controller decides (orchestrator.plan.cpus)."""

from __future__ import annotations

from sixnines.orchestrator.plan.cpus import Seat, place_loops

TWO = frozenset({0, 1})


def seat(agent: str, busy: bool, cpus=TWO, host: str = "local", kernel: str = "k1") -> Seat:
    return Seat(agent, host, kernel, frozenset(cpus), busy)


def test_a_producer_gets_the_highest_cpu_and_the_rest_keep_off_it():
    placed = place_loops([seat("consumer-0", False), seat("producer-0", True)])
    assert placed.loop_cpu == {"producer-0": 1}
    assert placed.avoided_by("k1") == [1]
    assert placed.notes == ["host local: producer-0 on CPU 1; everything else sixnines "
                            "runs there keeps off CPU 1"]


def test_loops_that_would_leave_nothing_a_cpu_get_no_placement():
    placed = place_loops([seat("producer-0", True), seat("producer-1", True),
                          seat("consumer-0", False)])
    assert placed.loop_cpu == {} and placed.avoided_by("k1") == []
    assert "2 busy loop(s) on 2 CPU(s)" in placed.notes[0]


def test_hosts_on_one_kernel_share_its_cpus():
    four = {0, 1, 2, 3}
    placed = place_loops([seat("producer-0", True, four, "tb1"),
                          seat("producer-1", True, four, "tb2"),
                          seat("consumer-0", True, four, "tb3")])
    assert sorted(placed.loop_cpu.values()) == [1, 2, 3]
    assert placed.avoided_by("k1") == [1, 2, 3]
    assert placed.notes[0].startswith("host tb1, tb2, tb3 (one kernel):")


def test_each_kernel_is_placed_on_its_own():
    placed = place_loops([seat("producer-0", True, kernel="k1"),
                          seat("consumer-0", False, kernel="k2")])
    assert placed.loop_cpu == {"producer-0": 1}
    assert placed.avoided_by("k2") == []


def test_a_loop_takes_a_cpu_it_may_use_and_an_agent_left_without_one_cancels_it():
    placed = place_loops([seat("producer-0", True, {2, 3}), seat("consumer-0", False, {2, 3})])
    assert placed.loop_cpu == {"producer-0": 3}
    placed = place_loops([seat("producer-0", True, {0, 1}), seat("consumer-0", False, {1})])
    assert placed.loop_cpu == {}
    assert "no CPU of their own" in placed.notes[0]


def test_a_receiver_that_blocks_needs_no_cpu():
    assert place_loops([seat("consumer-0", False)]).notes == []
