"""`compare` of runs with a shape of steps (orchestrator/results/compare.py): the same
steps are compared step by step, other steps say so in a note."""

from __future__ import annotations

from sixnines.formats.summary import Figures, RunSummary, StepFigures
from sixnines.orchestrator.results.compare import compare_pair, label, unit

SHAPE = {"kind": "steps", "label": "steps 1k → 10k msg/s"}


def step(rate: float, start: float, p99: float, received: float) -> StepFigures:
    latency = Figures.model_validate({"p50": 100.0, "p90": 150.0, "p99": p99,
                                      "p99.9": 2 * p99, "max": 5 * p99, "count": 200_000})
    return StepFigures(rate=rate, start_s=start, duration_s=10.0, sent=int(rate * 10),
                       received=int(received * 10), send_rate=rate, receive_rate=received,
                       latency_us=latency)


def run(run_id: str, steps: list[StepFigures], shape: dict = SHAPE) -> RunSummary:
    whole = Figures.model_validate({"p50": 100.0, "p99": 300.0, "count": 400_000})
    return RunSummary(run_id=run_id, system="tcp", status="ok", params={"shape": shape},
                      sent=110_000, received=110_000, send_rate=5500.0, receive_rate=5500.0,
                      latency_us=whole, steps=steps)


def test_the_same_steps_are_compared_step_by_step():
    a = run("a", [step(1000, 0, 200.0, 1000), step(10_000, 10, 300.0, 10_000)])
    b = run("b", [step(1000, 0, 205.0, 1000), step(10_000, 10, 900.0, 7000)])
    pair = compare_pair(a, b, [], 10.0)
    by_name = {label(figure): figure for figure in pair.figures}
    assert by_name["latency p99 at step 1"].verdict == "same"
    assert by_name["latency p99 at step 2"].verdict == "regression"
    assert unit(by_name["latency p99 at step 2"]) == "µs"
    assert by_name["receive_rate at step 2"].verdict == "regression"
    assert unit(by_name["receive_rate at step 2"]) == "msg/s"
    assert "latency p99 at step 2 300.0 → 900.0 (+200.0%, tolerance 11%)" in pair.findings
    assert not [note for note in pair.notes if "per-step" in note]


def test_other_steps_are_not_compared_step_by_step_and_a_note_says_so():
    a = run("a", [step(1000, 0, 200.0, 1000), step(10_000, 10, 300.0, 10_000)])
    other = {**SHAPE, "label": "steps 1k → 20k msg/s"}
    b = run("b", [step(1000, 0, 200.0, 1000), step(20_000, 10, 300.0, 20_000)], other)
    pair = compare_pair(a, b, [], 10.0)
    assert not [figure for figure in pair.figures if " at step " in label(figure)]
    assert "per-step figures not compared: the runs did not follow the same steps" in pair.notes
    assert not pair.same_experiment  # another shape: another experiment, shown not judged
