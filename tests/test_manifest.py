"""The run manifest's model (formats.manifest): older manifests read with their fallbacks, one
that breaks the model is a one-line refusal, and what the controller writes validates."""

from __future__ import annotations

import json

import pytest

from sixnines.formats import manifest
from sixnines.formats.integrity import Damaged, read_manifest
from sixnines.formats.manifest import AgentEntry, Clock, Manifest
from sixnines.formats.vocabulary import MAX_PARALLEL
from sixnines.orchestrator.run.manifest import new_manifest
from sixnines.orchestrator.scenario.matrix import expand
from sixnines.orchestrator.scenario.model import parse_scenario
from tests.result_schemas import MANIFEST, violations

SCENARIO = """
name: s
systems: [{name: tcp, driver: tcp, broker: builtin}]
workload: {message_size: 64, rate: 1000, duration: 1s}
"""


def test_an_older_manifest_reads_with_the_promised_fallbacks(tmp_path):
    (tmp_path / "manifest.json").write_text(json.dumps(
        {"run_id": "01", "status": "ok", "shiny": {"new": True},
         "agents": [{"id": "p", "role": "producer", "clock": {"uncertainty_ns": 9}}]}))
    found = read_manifest(tmp_path)
    assert found.throughput_window == 100 and found.workload.connections == 1
    assert found.workload.warmup_ns == 0 and found.cross_host_latency is False
    agent = found.agents[0]
    assert agent.clock.domain is None and agent.clock.bound_ns == 9
    assert agent.first_id is None and agent.artifacts == {}
    # rewritten (recovery), it keeps every key it had and adds none but its version
    assert found.as_json() == {"schema_version": manifest.SCHEMA_VERSION, "run_id": "01",
                               "status": "ok", "shiny": {"new": True},
                               "agents": [{"id": "p", "role": "producer",
                                           "clock": {"uncertainty_ns": 9}}]}


def test_a_manifest_that_breaks_the_model_is_one_line_refusal(tmp_path):
    (tmp_path / "manifest.json").write_text(
        '{"run_id": "01", "status": "ok", "agents": [{"id": "p", "sent": "many"}]}')
    with pytest.raises(Damaged) as caught:
        read_manifest(tmp_path)
    assert caught.value.problems == [
        f"{tmp_path / 'manifest.json'}: not a sixnines manifest (`agents[0].sent`: Input "
        "should be a valid integer, unable to parse string as an integer): edited or damaged"]


@pytest.mark.parametrize(("key_draws", "said"), [
    ({"space": "count=10", "seed": 1, "period": 1 << 40},
     "`workload.key_draws.period`: Input should be less than or equal to 4096"),
    ({"space": "count=99999999999", "seed": 1, "period": 16},
     "`workload.key_draws.space`: 'count=99999999999' is not a key space"),
    ({"space": "count=10,zipf=nan", "seed": 1, "period": 16},
     "`workload.key_draws.space`: 'count=10,zipf=nan' is not a key space"),
    ({"space": "lots", "seed": 1, "period": 16},
     "`workload.key_draws.space`: 'lots' is not a key space"),
])
def test_key_draws_the_analysis_would_allocate_without_bound_are_refused(tmp_path, key_draws,
                                                                         said):
    """The analysis draws every sender's `period` keys over `count` probabilities again:
    a hostile manifest must not make it allocate terabytes or fail with a traceback."""
    (tmp_path / "manifest.json").write_text(json.dumps(
        {"run_id": "01", "status": "ok", "agents": [], "workload": {"key_draws": key_draws}}))
    with pytest.raises(Damaged) as caught:
        read_manifest(tmp_path)
    [line] = caught.value.problems
    assert said in line and "\n" not in line, line


@pytest.mark.parametrize("where", ["workload", "agent"])
def test_more_connections_than_a_scenario_may_have_are_refused(tmp_path, where):
    """The analysis goes over each sender's connections: a manifest saying 10^12 of them
    is corrupt in one line, not a loop that never ends."""
    agent: dict = {"id": "producer-0", "role": "producer"}
    workload: dict = {}
    (agent if where == "agent" else workload)["connections"] = 10**12
    (tmp_path / "manifest.json").write_text(json.dumps(
        {"run_id": "01", "status": "ok", "agents": [agent], "workload": workload}))
    with pytest.raises(Damaged) as caught:
        read_manifest(tmp_path)
    [line] = caught.value.problems
    assert f"less than or equal to {MAX_PARALLEL}" in line and "\n" not in line, line


def test_more_faults_than_a_scenario_may_hold_are_refused(tmp_path):
    """The analysis compares every fault with every other: a manifest of 4 MB of faults
    would keep it busy for hours."""
    fault = {"index": 0, "action": "pause", "target": "broker", "at_ns": 0}
    (tmp_path / "manifest.json").write_text(json.dumps(
        {"run_id": "01", "status": "ok", "agents": [],
         "faults": [fault] * (manifest.MAX_FAULTS + 1)}))
    with pytest.raises(Damaged) as caught:
        read_manifest(tmp_path)
    [line] = caught.value.problems
    assert f"`faults`: List should have at most {manifest.MAX_FAULTS} items" in line, line


def test_a_manifest_as_the_controller_first_writes_it_validates():
    point = expand(parse_scenario(SCENARIO))[0]
    written = new_manifest(point, "s").model_copy(update=dict(
        placement={}, cross_host_latency=False, hosts={}, cpu_sample_ns=10**9,
        throughput_window=100, monitor=None,
        agents=[AgentEntry(id="producer-0", role="producer", clock=Clock())]))
    assert violations(json.loads(written.text()), MANIFEST) == []
    bare = json.loads(Manifest(run_id="01", agents=[{"id": "p"}]).text())
    assert "(top): 'sixnines' is a required property" in violations(bare, MANIFEST)


@pytest.mark.parametrize(("steps", "said"), [
    (list(range(1001)), "`workload.shape.steps`: List should have at most 1000 items"),
    ([0, 0], "`workload.shape`: Value error, steps must name their segments in order"),
])
def test_steps_the_analysis_would_take_without_bound_are_refused(tmp_path, steps, said):
    """Each step's figures are taken from every batch of records: a manifest repeating
    its steps a million times would keep the analysis busy for hours."""
    segments = [{"start_ns": i, "end_ns": i + 1, "rate": 1.0, "to": 1.0} for i in range(1001)]
    shape = {"kind": "steps", "label": "x", "segments": segments, "steps": steps}
    (tmp_path / "manifest.json").write_text(json.dumps(
        {"run_id": "01", "status": "ok", "agents": [], "workload": {"shape": shape}}))
    with pytest.raises(Damaged) as caught:
        read_manifest(tmp_path)
    [line] = caught.value.problems
    assert said.replace("Value error, ", "") in line, line
