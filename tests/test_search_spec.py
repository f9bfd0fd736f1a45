"""A capacity search as a scenario writes it (orchestrator.scenario.search_spec): its syntax,
what it refuses, and how long its probes must be."""

from __future__ import annotations

import pytest
from pydantic import TypeAdapter, ValidationError

from sixnines.orchestrator.scenario.model import load_scenario
from sixnines.orchestrator.scenario.problems import ScenarioError
from sixnines.orchestrator.scenario.search_spec import PROBE_LIMIT_NS, RateOrSearch, RateSearch
from tests.capacity_cases import SECOND, spec
from tests.integration.support import points


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
