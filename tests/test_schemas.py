"""The result models (formats.summary, formats.manifest) and their shipped JSON Schemas
(docs/*.schema.json): the files are what the models generate, a changed shape changes
schema_version, what sixnines writes validates, and older files still load."""

from __future__ import annotations

import json

import pytest

from sixnines.formats import manifest, schema, summary
from sixnines.formats.integrity import Damaged, read_manifest
from sixnines.formats.manifest import AgentEntry, Clock, Manifest
from sixnines.formats.summary import Figures, ResultsSummary, RunSummary
from sixnines.orchestrator.run.manifest import new_manifest
from sixnines.orchestrator.scenario.matrix import expand
from sixnines.orchestrator.scenario.model import parse_scenario
from tests.result_schemas import DOCS, MANIFEST, SUMMARY, unchecked_problems, violations

#: The fingerprint of each schema version's shape (formats.schema.fingerprint): a
#: version, once released, keeps its shape.
SHAPES = {
    SUMMARY: {1: "87d47d8c6e5f5765", 2: "64fdf974a8fc97d5", 3: "64fdf974a8fc97d5",
              4: "fe5e4adce5b81996", 5: "e17d1e64662aa302"},
    MANIFEST: {1: "63fd376dff80d39a", 2: "6a1c32a770d4c7f4", 3: "d94aee0e3204e6c7",
               4: "830b66f822739f8b", 5: "9ecebca4e558eeaf", 6: "164eb10a76095fd0"},
}
MODULES = {SUMMARY: summary, MANIFEST: manifest}
SCENARIO = """
name: s
systems: [{name: tcp, driver: tcp, broker: builtin}]
workload: {message_size: 64, rate: 1000, duration: 1s}
"""


@pytest.mark.parametrize("name", list(schema.SCHEMAS))
def test_the_shipped_schema_is_what_the_model_generates(name):
    shipped = (DOCS / name).read_text(encoding="utf-8")
    assert shipped == schema.text(name), (
        f"docs/{name} is stale: the model changed and the shipped schema did not. "
        f"Regenerate it with `{schema.COMMAND}` (and see the next test on schema_version)")


@pytest.mark.parametrize("name", list(schema.SCHEMAS))
def test_a_changed_shape_has_a_new_schema_version(name):
    module = MODULES[name]
    version, found = module.SCHEMA_VERSION, schema.fingerprint(schema.schema(name))
    assert SHAPES[name].get(version) == found, (
        f"{name}: the shape (fields, types, required keys) is not the one schema_version "
        f"{version} was released with. If the change is meant, bump SCHEMA_VERSION in "
        f"{module.__name__} (its docstring says when), record {found!r} for the new version "
        f"in SHAPES here and regenerate the schemas with `{schema.COMMAND}`")


def test_the_check_command_names_a_stale_schema(tmp_path, capsys):
    assert schema.main(["--check", str(DOCS)]) == 0
    assert schema.main([str(tmp_path)]) == 0
    (tmp_path / SUMMARY).write_text("{}\n")
    assert schema.main(["--check", str(tmp_path)]) == 1
    assert f"{tmp_path / SUMMARY}: stale; regenerate with" in capsys.readouterr().err


FIGURES = {"p50": 70.0, "p90": 80.0, "p99": 150.0, "p99.9": 1400.0, "p99.99": 3000.0,
           "p99.999": 3500.0, "p99.9999": 3500.0, "max": 3500.0, "mean": 75.5,
           "lower_median": 70.1, "robust_deviation": 4.5, "count": 20_000}
EMPTY = {**dict.fromkeys(FIGURES), "count": 0}
CPU_SIDE = {"us_per_message": FIGURES, "cores": 0.98, "empty_intervals": 0,
            "loop": {"running_s": 9.8, "waiting_s": 0.1, "blocked_s": 0.1}}


def analysed() -> RunSummary:
    """A run summary as the analysis writes it: every field."""
    return RunSummary.model_validate({
        "run_id": "01-tcp", "system": "tcp", "params": {"rate": 2000.0, "message_size": 64},
        "load": "open-loop",
        "broker": {"kind": "builtin", "recipe": None, "version": None, "note": None},
        "status": "ok", "problems": [], "notes": [], "sent": 20_000, "received": 20_000,
        "delivered": 20_000, "lost": 0,
        "unknown": 0, "duplicated": 0, "reordered": 0, "unexpected": 0,
        "warmup": {"sent": 100, "received": 100}, "send_rate": 2000.0, "receive_rate": 1999.9,
        "latency_us": FIGURES, "service_time_us": FIGURES, "send_lag_us": FIGURES,
        "behind_s": 0.0, "saturation_latency_us": EMPTY,
        "out_of_range": {"latency": {"negative": 0, "too_large": 0}},
        "latency_pairs": {"same_clock": 20_000, "cross_clock": 0, "excluded": 0},
        "clock_bound_ns": None, "hlog_agrees": True,
        "throughput": {"window": 100, "sender_msg_s": FIGURES, "receiver_msg_s": FIGURES,
                       "bytes_per_s": {"sender": 128_000.0, "receiver": None},
                       "zero_span_windows": {"sender": 0}},
        "density_us": 500.0, "humps": {"count": 1, "modes_us": [70.0]},
        "cpu": {"sender": CPU_SIDE, "receiver": CPU_SIDE, "broker": None,
                "interval_ms": 1000.0, "notes": ["no broker CPU: the broker is external"]},
        "cpu_placement": ["host local: producer-0 on CPU 1; everything else sixnines runs "
                          "there keeps off CPU 1"],
        "warnings": []})


def test_what_the_writers_build_validates_and_keeps_its_shape():
    failed = RunSummary(run_id="02-zmq", system="zmq", params={}, status="failed",
                        problems=["the broker did not start"])
    document = json.loads(ResultsSummary(scenario="s", runs=[analysed(), failed]).text())
    assert violations(document, SUMMARY) == []
    assert document["schema_version"] == summary.SCHEMA_VERSION
    assert list(document["runs"][1]) == ["schema_version", "run_id", "system", "params",
                                         "status", "problems"]  # no figures, not nulls
    assert document["runs"][0]["latency_us"]["p99.9"] == 1400.0
    assert violations(document["runs"][0], SUMMARY, "RunSummary") == []


def test_the_schema_refuses_an_analysed_run_without_its_figures():
    run = analysed().as_json()
    del run["latency_us"], run["schema_version"]
    found = violations(run, SUMMARY, "RunSummary")
    assert any("'latency_us' is a required property" in line for line in found)
    assert any("'schema_version' is a required property" in line for line in found)


def test_older_summaries_still_load():
    """No schema_version (before it existed), no lower median (before the per-message
    analysis), keys a newer sixnines added: read as version 1, figures absent, extras
    ignored."""
    old = {"run_id": "01", "system": "tcp", "params": {}, "status": "ok",
           "latency_us": {"p50": 70, "count": 5}, "someday": 1}
    run = RunSummary.model_validate(old)
    assert run.schema_version == 1 and run.latency_us.lower_median is None
    assert run.latency_us.figure("p50") == 70.0 and run.figures("send_lag_us") == Figures()
    assert "someday" not in run.as_json()


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


def test_a_manifest_as_the_controller_first_writes_it_validates():
    point = expand(parse_scenario(SCENARIO))[0]
    written = new_manifest(point, "s").model_copy(update=dict(
        placement={}, cross_host_latency=False, hosts={}, cpu_sample_ns=10**9,
        throughput_window=100, monitor=None,
        agents=[AgentEntry(id="producer-0", role="producer", clock=Clock())]))
    assert violations(json.loads(written.text()), MANIFEST) == []
    bare = json.loads(Manifest(run_id="01", agents=[{"id": "p"}]).text())
    assert "(top): 'sixnines' is a required property" in violations(bare, MANIFEST)


def test_the_check_after_each_test_names_a_file_that_breaks_its_schema(tmp_path):
    results = tmp_path / "results"
    (results / "01" / "report").mkdir(parents=True)
    good = ResultsSummary(scenario="s", runs=[analysed()])
    (results / "summary.json").write_text(good.text())
    (results / "01" / "report" / "summary.json").write_text(analysed().text())
    (results / "01" / "manifest.json").write_text("{not json")  # damaged on purpose
    assert unchecked_problems(results) == []
    broken = good.as_json()
    broken["runs"][0]["sent"] = "many"
    (results / "summary.json").write_text(json.dumps(broken))
    (problem,) = unchecked_problems(results)
    assert problem.startswith(f"{results / 'summary.json'}: runs/0/sent: 'many' is not ")
    (results / "summary.json").write_text(good.text())  # this test's teardown checks too
