"""Rate shapes as a scenario writes them (orchestrator/scenario/shapes.py): what each
resolves to at the end of the run, and what `sixnines validate` refuses, with its line,
through the real command (nothing is started)."""

from __future__ import annotations

from pathlib import Path

import pytest

from sixnines.orchestrator.plan.agents import plan_agents
from sixnines.orchestrator.scenario.matrix import expand
from sixnines.orchestrator.scenario.model import parse_scenario
from tests.faults.support import sixnines

S = 1_000_000_000

SCENARIO = """\
name: shaped
systems: [{{name: tcp, driver: tcp}}]
workload:
  message_size: 64
  duration: 10s
  warmup: 1s
  rate: {rate}
"""


def segments(rate: str) -> list[tuple[float, float, float, float]]:
    """(start s, end s, rate, to) of the one run of a scenario with `rate`."""
    (point,) = expand(parse_scenario(SCENARIO.format(rate=rate)))
    shape = point.workload.shape
    assert shape is not None and point.params["shape"] == shape.as_json()
    return [(s.start_ns / S, s.end_ns / S, s.rate, s.to) for s in shape.segments]


def test_steps_start_after_the_warm_up_at_the_first_rate_and_the_last_holds_to_the_end():
    assert segments("{steps: [{rate: 1k, for: 3s}, {rate: 5k, for: 2s}]}") == [
        (0, 1, 1000, 1000), (1, 4, 1000, 1000), (4, 11, 5000, 5000)]
    (point,) = expand(parse_scenario(SCENARIO.format(rate="{steps: [{rate: 1k, for: 3s}, "
                                                          "{rate: 5k}]}")))
    assert point.params["rate"] == pytest.approx((3 * 1000 + 7 * 5000) / 10)
    assert point.params["shape"]["steps"] == [1, 2]
    assert point.params["shape"]["label"] == "steps 1k → 5k msg/s"


def test_a_ramp_holds_its_last_rate_and_bursts_come_every_period():
    assert segments("{ramp: {from: 1k, to: 3k, over: 4s}}") == [
        (0, 1, 1000, 1000), (1, 5, 1000, 3000), (5, 11, 3000, 3000)]
    assert segments("{base: 100, bursts: {rate: 2k, for: 0.5s, every: 4s}}") == [
        (0, 1, 100, 100), (1, 5, 100, 100), (5, 5.5, 2000, 2000), (5.5, 9, 100, 100),
        (9, 9.5, 2000, 2000), (9.5, 11, 100, 100)]


def test_a_trace_is_read_beside_the_scenario(tmp_path: Path):
    (tmp_path / "trace.csv").write_text("time,rate\n# a comment\n0,200\n2.5,1k\n6s,300\n")
    (tmp_path / "s.yaml").write_text(SCENARIO.format(rate="{trace: trace.csv}"))
    done = sixnines("validate", tmp_path / "s.yaml", cwd=tmp_path.parent)
    assert done.returncode == 0, done.stderr
    assert "01-tcp" in done.stderr


def test_a_swept_list_of_shapes_is_one_run_each():
    scenario = parse_scenario(SCENARIO.format(
        rate="[{steps: [{rate: 1k}]}, {ramp: {from: 1k, to: 2k, over: 1s}}, 500]"))
    runs = expand(scenario)
    assert [run.swept["rate"] for run in runs] == [
        "steps 1k msg/s", "ramp 1k → 2k msg/s over 1s", "500"]
    assert "shape" not in runs[2].params


BAD = [
    ("{steps: [{rate: 1k, for: 6s}, {rate: 2k, for: 6s}]}",
     "s.yaml:7: workload.rate: the steps last 12s, longer than the duration (10s)"),
    ("{steps: [{rate: 1k, for: 10s}, {rate: 2k}]}",
     "s.yaml:7: workload.rate: the steps before the last fill the duration (10s)"),
    ("{steps: [{rate: 1k}, {rate: 2k, for: 1s}]}",
     "s.yaml:7: workload.rate: only the last step may leave out `for`"),
    ("{steps: [{rate: 1k, for: 1s}, {rate: 0}]}",
     "s.yaml:7: workload.rate.steps[1].rate: must be greater than 0 msg/s"),
    ("{steps: [{rate: -5, for: 1s}]}",
     "s.yaml:7: workload.rate.steps[0].rate: must be greater than 0 msg/s"),
    ("{steps: [{rate: max}]}",
     "s.yaml:7: workload.rate.steps[0].rate: must be a rate in msg/s here, not max"),
    ("{ramp: {from: 1k, to: 2k, over: 11s}}",
     "s.yaml:7: workload.rate: the ramp takes 11s, longer than the duration (10s)"),
    ("{base: 1k, bursts: {rate: 5k, for: 2s, every: 1s}}",
     "s.yaml:7: workload.rate: a burst's `for` must be shorter than its `every`"),
    ("{base: 1k, bursts: {rate: 5k, for: 1s, every: 10s}}",
     "s.yaml:7: workload.rate: no burst would start within the duration (10s)"),
    ("{search: max, objective: {p99: 1ms}, from: 1k, to: 2k, steps: []}",
     "s.yaml:7: workload.rate.steps: unknown field"),
    ("{stairs: [1k]}", "s.yaml:7: workload.rate.rate_shape: a rate shape is one of"),
    ("{trace: missing.csv}",
     "s.yaml:7: workload.rate.trace: cannot read trace 'missing.csv': No such file"),
    ("{trace: t.csv}", "s.yaml:7: workload.rate.trace: t.csv:3: the rate must be greater "
     "than 0 msg/s"),
    ("{trace: late.csv}", "s.yaml:7: workload.rate: trace 'late.csv' has rows at or after "
     "the end of the duration (10s), the first at 12s"),
    ("{trace: unsorted.csv}", "s.yaml:7: workload.rate.trace: unsorted.csv:2: times must "
     "increase"),
    ("{trace: wide.csv}", "s.yaml:7: workload.rate.trace: wide.csv:1: a row is `time,rate` "
     "(two fields), not 3"),
    ("{trace: late_start.csv}", "s.yaml:7: workload.rate.trace: late_start.csv:2: the first "
     "row must be at time 0"),
]


@pytest.mark.parametrize(("rate", "line"), BAD)
def test_validate_refuses_a_bad_shape_with_its_line(tmp_path: Path, rate: str, line: str):
    (tmp_path / "t.csv").write_text("time,rate\n0,1k\n2s,0\n")
    (tmp_path / "late.csv").write_text("0,1k\n12s,2k\n")
    (tmp_path / "unsorted.csv").write_text("0,1k\n0,2k\n")
    (tmp_path / "wide.csv").write_text("0,1k,3\n")
    (tmp_path / "late_start.csv").write_text("time,rate\n1s,1k\n")
    (tmp_path / "s.yaml").write_text(SCENARIO.format(rate=rate))
    done = sixnines("validate", "s.yaml", cwd=tmp_path)
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert done.stderr.startswith(line), done.stderr


def test_a_closed_loop_cannot_follow_a_shape(tmp_path: Path):
    text = SCENARIO.format(rate="{steps: [{rate: 1k}]}") + \
        "  mode: round-trip\n  schedule: closed\n"
    (tmp_path / "s.yaml").write_text(text)
    done = sixnines("validate", "s.yaml", cwd=tmp_path)
    assert done.returncode == 2
    assert done.stderr.startswith("s.yaml:9: workload.schedule: 'closed' cannot follow a rate "
                                  "shape"), done.stderr


def test_a_shape_is_planned_as_lanes_sharing_its_count():
    text = SCENARIO.format(rate="{steps: [{rate: 1k, for: 4s}, {rate: 3k}]}") + \
        "  producers: 2\n  connections: 3\n"
    (point,) = expand(parse_scenario(text))
    producers = [plan for plan in plan_agents(point.workload) if plan.role == "producer"]
    # 1 s of warm-up and 4 s at 1k, 6 s at 3k: 23,000 messages over 6 lanes
    assert [plan.sends for plan in producers] == [23_000 // 6 * 3] * 2
    assert [plan.rate for plan in producers] == [pytest.approx(2200 / 2)] * 2
    assert [plan.peak for plan in producers] == [1500.0, 1500.0]
    assert [plan.phase_ns for plan in producers] == [0, 0]
