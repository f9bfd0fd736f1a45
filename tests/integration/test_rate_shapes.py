"""A shaped rate as a user runs it: the real CLI, the builtin tcp relay, agents following
steps of 500 then 2,000 msg/s (and a ramp under Poisson arrivals beside it), the sidecar's
analysis, the console's per-step table, the HTML report's step table and timeline, and
`compare` step by step."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest

from sixnines.formats.chunks import message_files
from sixnines.formats.manifest import Manifest
from tests.integration.report_pages import (
    compare,
    compared_rows,
    edited_copy,
    number,
    plot_data,
    run_section,
    table_rows,
)

pytestmark = pytest.mark.integration

MS = 1_000_000
SCENARIO = """
name: shaped
systems: [{name: tcp, driver: tcp, broker: builtin}]
workload: {message_size: 100, warmup: 500ms, duration: 2s, drain: 3s, producers: 2}
cases:
  - {name: steps, rate: {steps: [{rate: 500, for: 1s}, {rate: 2000}]}}
  - {name: ramp, schedule: poisson, rate: {ramp: {from: 200, to: 2000, over: 2s}}}
"""


def sixnines(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "sixnines", *args], cwd=cwd,
                          capture_output=True, text=True, timeout=600)


@pytest.fixture(scope="module")
def shaped(tmp_path_factory) -> tuple[Path, str, dict[str, dict]]:
    work = tmp_path_factory.mktemp("shaped")
    (work / "shaped.yaml").write_text(SCENARIO)
    done = sixnines("run", "shaped.yaml", "--output", str(work / "out"), cwd=work)
    assert done.returncode == 0, done.stderr
    results = Path(done.stdout.strip().splitlines()[-1])
    runs = json.loads((results / "summary.json").read_text())["runs"]
    return results, done.stdout + done.stderr, {run["run_id"]: run for run in runs}


def records(run_dir: Path, role: str) -> dict[str, np.ndarray]:
    """The measured records of every agent of `role`, as arrays."""
    manifest = Manifest.model_validate_json((run_dir / "manifest.json").read_text())
    columns: dict[str, list] = {}
    for agent in manifest.agents:
        if agent.role != role:
            continue
        for path in message_files(run_dir / "agents" / agent.id):
            table = pq.read_table(path).to_pydict()
            for name, values in table.items():
                columns.setdefault(name, []).extend(values)
    arrays = {name: np.array(values) for name, values in columns.items()}
    measured = ~arrays["warmup"].astype(bool)
    return {name: values[measured] for name, values in arrays.items()}


def test_each_step_is_sent_at_its_rate_and_figured_apart(shaped):
    _, console, runs = shaped
    run = runs["01-tcp-steps"]
    assert run["status"] == "ok", run["problems"]
    assert (run["sent"], run["received"], run["lost"]) == (2500, 2500, 0)
    assert run["params"]["rate"] == pytest.approx(1250.0)
    first, second = run["steps"]
    assert (first["rate"], first["start_s"], first["duration_s"]) == (500.0, 0.0, 1.0)
    assert (second["rate"], second["start_s"], second["duration_s"]) == (2000.0, 1.0, 1.0)
    # every message belongs to the step it was intended in, whenever it went
    assert (first["latency_us"]["count"], second["latency_us"]["count"]) == (500, 2000)
    # the achieved rates follow the steps (sends by their send time: a late one counts in
    # the step it went in, so these are bounds, not equalities)
    assert first["send_rate"] <= 600 and second["send_rate"] >= 1500
    assert first["sent"] + second["sent"] <= 2500
    assert second["receive_rate"] > 2 * first["receive_rate"]
    assert "per step: from and for in s" in console


def test_latency_is_measured_from_the_intended_times_of_the_steps(shaped):
    results, _, runs = shaped
    run_dir = results / "01-tcp-steps"
    sent = records(run_dir, "producer")
    manifest = Manifest.model_validate_json((run_dir / "manifest.json").read_text())
    shape = manifest.workload.shape
    assert shape is not None and shape.label == "steps 500 → 2k msg/s"
    t0 = {agent.first_id: agent.t0_ns for agent in manifest.agents if agent.role == "producer"}
    # two producers, one lane each: every lane's intended times are the shape's grid,
    # every 4 ms in the first step (500 msg/s over 2 lanes), every 1 ms in the second
    for producer in (0, 1):
        mine = np.sort(sent["intended_ns"][sent["producer_id"] == producer]) - t0[producer]
        first = mine[mine < 1500 * MS]
        assert len(first) == 250 and len(mine) - len(first) == 1000
        assert np.all(np.abs(np.diff(first) - 4 * MS) <= 1)
        assert np.all(np.abs(np.diff(mine[len(first):]) - MS) <= 1)
    # the step's latency is recv − intended of its messages, as the records have them
    got = records(run_dir, "consumer")
    starts = np.array([t0[p] for p in got["producer_id"]])
    late = got["intended_ns"] - starts >= 1500 * MS
    latency_us = (got["recv_ns"] - got["intended_ns"])[late] / 1000
    figured = runs["01-tcp-steps"]["steps"][1]["latency_us"]
    assert figured["max"] == pytest.approx(latency_us.max(), rel=1e-6)
    assert figured["mean"] == pytest.approx(latency_us.mean(), rel=1e-6)


def test_a_ramp_under_poisson_arrivals_sends_the_area_under_it(shaped):
    results, _, runs = shaped
    run = runs["02-tcp-ramp"]
    assert run["status"] == "ok", run["problems"]
    assert run.get("steps") is None
    # warm-up 0.5 s at 200 msg/s, then ∫ 200 → 2,000 over 2 s = 2,200: 2,300 in all, a
    # Poisson share of them intended in the warm-up
    assert run["sent"] + run["warmup"]["sent"] == 2300 and run["received"] == run["sent"]
    assert abs(run["warmup"]["sent"] - 100) < 5 * 100 ** 0.5
    manifest = Manifest.model_validate_json(
        (results / "02-tcp-ramp" / "manifest.json").read_text())
    t0 = {agent.first_id: agent.t0_ns for agent in manifest.agents if agent.role == "producer"}
    sent = records(results / "02-tcp-ramp", "producer")
    offsets = sent["intended_ns"] - np.array([t0[p] for p in sent["producer_id"]])
    halves = np.histogram(offsets, bins=[500 * MS, 1500 * MS, 2500 * MS])[0]
    # ∫ over each second: 650 then 1,550, Poisson around it
    assert abs(halves[0] - 650) < 5 * 650 ** 0.5 and abs(halves[1] - 1550) < 5 * 1550 ** 0.5


def test_a_shaped_run_is_counted_per_interval(shaped):
    """Every shape gets series.json's timeline: each step's and the ramp's receive rate per
    10 ms interval, and the latency of the messages intended in each."""
    results, _, runs = shaped
    for run_id in ("01-tcp-steps", "02-tcp-ramp"):
        series = json.loads((results / run_id / "report" / "series.json").read_text())
        timeline = series["timeline"]
        seconds = np.array(timeline["t_s"])
        received = np.array(timeline["received_msg_s"])
        assert seconds[1] - seconds[0] == pytest.approx(0.01)
        # every receipt is in one interval: the rates add up to the messages received
        assert received.sum() * 0.01 == pytest.approx(runs[run_id]["received"], abs=2)
    steps = json.loads((results / "01-tcp-steps" / "report" / "series.json").read_text())
    seconds = np.array(steps["timeline"]["t_s"])
    received = np.array(steps["timeline"]["received_msg_s"])
    first, second = received[seconds < 1.0].mean(), received[(seconds >= 1) & (seconds < 2)]
    assert first == pytest.approx(500, rel=0.1) and second.mean() == pytest.approx(2000, rel=0.1)


def test_the_report_shows_each_step_and_each_shape_s_timeline(shaped):
    results, _, runs = shaped
    page = (results / "report" / "index.html").read_text()
    steps = runs["01-tcp-steps"]["steps"]
    rows = table_rows(run_section(page, "01-tcp-steps"), "steps")
    assert [row[:4] for row in rows] == [["1", "0", "1", "500"], ["2", "1", "1", "2,000"]]
    for row, step in zip(rows, steps, strict=True):
        assert [number(cell) for cell in row[4:6]] == [step["sent"], step["received"]]
        assert number(row[7]) == pytest.approx(step["receive_rate"], abs=0.5)
        assert number(row[9]) == pytest.approx(step["latency_us"]["p99"], abs=0.5)
        assert number(row[12]) == step["latency_us"]["count"]
    assert "<table class=\"figures steps\">" not in run_section(page, "02-tcp-ramp")
    for run_id, rates in (("01-tcp-steps", {500.0, 2000.0}), ("02-tcp-ramp", None)):
        assert f'id="fig-run-{run_id}-timeline"' in page
        data = plot_data(results / "report" / f"run-{run_id}-timeline.dat")
        intended, received = data["intended msg/s"], data["received msg/s"]
        assert intended[:, 0].min() == 0 and intended[:, 0].max() == pytest.approx(2.0)
        if rates:  # the steps as the schedule intended them, from the measured start
            assert set(intended[:, 1]) == rates
            assert set(intended[intended[:, 0] < 1, 1]) == {500.0}
        else:  # the ramp from 200 to 2,000 msg/s over the measured time
            assert intended[0, 1] == pytest.approx(200) and intended[-1, 1] == pytest.approx(2000)
        assert received[:, 1].sum() * 0.01 == pytest.approx(runs[run_id]["received"], abs=2)
        assert {"p50", "p99", "max"} <= set(data)


def test_compare_judges_runs_of_the_same_steps_step_by_step(shaped, tmp_path):
    """The same run, and a copy whose second step is 10 times slower and received half as
    fast: step 2 regressed, step 1 did not."""
    results, _, _ = shaped
    original = results / "01-tcp-steps"

    def slower(summary: dict) -> None:
        second = summary["steps"][1]
        second["latency_us"] = {key: value * 10 if key != "count" and value is not None
                                else value for key, value in second["latency_us"].items()}
        second["receive_rate"] /= 2

    code, lines = compare(original, edited_copy(original, tmp_path / "slower", slower))
    assert code == 1, lines
    row = compared_rows(lines)
    assert row["latency p50 at step 1 µs"][-1] == ""
    assert row["latency p99 at step 2 µs"][-1] == "regression"
    assert row["receive_rate at step 2 msg/s"][-1] == "regression"
    same, lines = compare(original, original)
    assert same == 0 and compared_rows(lines)["latency p99 at step 2 µs"][-1] == ""


def test_compare_says_when_the_steps_differ(shaped, tmp_path):
    results, _, _ = shaped
    original = results / "01-tcp-steps"

    def faster_second_step(summary: dict) -> None:
        shape = summary["params"]["shape"]
        shape["label"] = "steps 500 → 4k msg/s"
        shape["segments"][-1]["rate"] = shape["segments"][-1]["to"] = 4000.0
        summary["steps"][1]["rate"] = 4000.0

    code, lines = compare(original, edited_copy(original, tmp_path / "other",
                                                 faster_second_step))
    text = "\n".join(lines)
    assert code == 0, text  # another experiment: shown, not judged
    assert not any(" at step " in line for line in lines)
    assert "per-step figures not compared: the runs did not follow the same steps" in text
    assert "not the same experiment: shape steps 500 → 2k msg/s → steps 500 → 4k msg/s" in text
