"""The names a run gives the broker resources a scenario leaves unnamed
(orchestrator.run.resources): one per run, bounded, in characters every broker takes, and
only for the options the scenario left out."""

from __future__ import annotations

import re

import pytest

from sixnines.orchestrator.run.resources import RunResources, resource_name
from sixnines.orchestrator.scenario.matrix import expand
from sixnines.orchestrator.scenario.model import parse_scenario

SAFE = re.compile(r"[A-Za-z0-9_-]{1,64}")


def test_a_name_says_scenario_and_run_in_safe_characters_within_its_length():
    name = resource_name("nightly: µs & more", "01-kafka-connections=25", "a1b2c3")
    assert name == "nightly-s-more-01-kafka-connections-25-a1b2c3"
    long = resource_name("s" * 100, "r" * 100)
    assert SAFE.fullmatch(long) and long.startswith("s" * 24 + "-" + "r" * 32 + "-")
    assert resource_name("x", "01") != resource_name("x", "01")  # a suffix of its own


def resources(system: str, connections: str = "1") -> RunResources:
    point = expand(parse_scenario(f"""
name: names
systems: [{system}]
workload: {{message_size: 64, rate: 10, duration: 1s, connections: {connections}}}
"""))[0]
    return RunResources.of(point, "names")


@pytest.mark.parametrize(("driver", "options", "named"), [
    ("kafka", "{}", ["topic"]),
    ("kafka", "{topic: orders}", []),
    ("redis", "{mode: streams}", ["channel"]),
    ("nats", "{}", ["subject"]),
    ("nats", "{mode: jetstream}", ["subject", "stream"]),
    ("nats", "{mode: jetstream, stream: s}", ["subject"]),
    ("rabbitmq", "{}", ["exchange", "queue"]),
    ("rabbitmq", "{exchange: ''}", ["queue"]),
    ("tcp", "{}", []),
])
def test_only_what_the_scenario_left_out_is_named_for_the_run(driver, options, named):
    got = resources(f"{{name: s, driver: {driver}, broker: {{external: 'h:1'}}, "
                    f"options: {options}}}")
    if not named:
        assert got.record is None
        return
    assert list(got.record.named) == named
    [name] = set(got.record.named.values())
    assert name.startswith("names-01-")
    options = got.point.system.options
    assert all(getattr(options, option) == name for option in named)


def test_the_manifest_keeps_the_options_as_written_and_the_agents_get_the_names():
    got = resources("{name: k, driver: kafka, broker: {external: 'h:1'}, keep_resources: true}")
    assert got.record.kept is True
    assert got.point.system.options.topic == got.record.named["topic"] != "sixnines"
