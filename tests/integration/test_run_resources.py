"""Every run of a sweep starts clean (docs/design.md, "Every run its own topic"): against one
broker that outlives the runs, each run gets a topic, stream, stream keys or exchanges of
its own, sized for its connections, deleted at its end unless the system keeps them; a
topic the scenario names is the user's, used as it is and never deleted (one too small:
tests/faults/test_broker_resources.py)."""

from __future__ import annotations

import uuid

import pytest

from sixnines.drivers.kafka import KafkaDriver, KafkaOptions
from sixnines.spark_jobs.analyze import analyze_run
from tests.integration.broker_resources import (
    MANY,
    RATE,
    SYSTEMS,
    manifest,
    on_broker,
    run,
    scenario,
)
from tests.integration.broker_resources import brokers as brokers_fixture

pytestmark = [pytest.mark.integration, pytest.mark.timeout(300)]

brokers = brokers_fixture  # the shared fixture, under its name here


# --- the sweep ----------------------------------------------------------------------------

@pytest.mark.parametrize("system", list(SYSTEMS))
def test_a_sweep_of_connections_gets_a_clean_resource_per_run(system, brokers, tmp_path,
                                                              spark):
    """connections [1, MANY] against one broker: both runs pass with every message
    delivered once, each under a name of its own (scenario, run id, suffix), deleted at
    its end."""
    address = brokers(system)
    path = scenario(tmp_path / "sweep.yaml", system, address, f"[1, {MANY}]")
    done, run_dirs = run(path, tmp_path / "out")
    assert done.returncode == 0, done.stdout + done.stderr
    assert len(run_dirs) == 2
    names = []
    for run_dir in run_dirs:
        record = manifest(run_dir)
        assert record["status"] == "ok", record["problems"]
        resources = record["resources"]
        name = next(iter(resources["named"].values()))
        assert all(record["driver_options"][option] == "(per run)"
                   for option in resources["named"]), record["driver_options"]
        assert name.startswith(f"sweep-{system}-{record['run_id'].split('-')[0]}-")
        assert resources["kept"] is False and resources["removed"], resources
        assert resources.get("notes", []) == []
        assert on_broker(system, address, name) == [], "left on the broker"
        names.append(name)
        summary = analyze_run(spark, run_dir)
        assert summary["sent"] == RATE
        assert summary["received"] == summary["delivered"] == RATE
        assert summary["lost"] == summary["duplicated"] == summary["unexpected"] == 0
    assert names[0] != names[1]


@pytest.mark.parametrize("system", list(SYSTEMS))
def test_round_trips_leave_nothing_behind(system, brokers, tmp_path):
    """Round trips name more (requests, per-requester replies): all of it goes."""
    address = brokers(system)
    path = scenario(tmp_path / "rt.yaml", system, address, "2")
    path.write_text(path.read_text().replace("workload: {", "workload: {mode: round-trip, "))
    done, [run_dir] = run(path, tmp_path / "out")
    assert done.returncode == 0, done.stdout + done.stderr
    resources = manifest(run_dir)["resources"]
    assert resources["removed"] and resources.get("notes", []) == [], resources
    assert on_broker(system, address, next(iter(resources["named"].values()))) == []


def test_resources_are_kept_when_the_system_says_so(brokers, tmp_path):
    address = brokers("kafka")
    path = scenario(tmp_path / "keep.yaml", "kafka", address, str(MANY),
                    extra=", keep_resources: true")
    done, [run_dir] = run(path, tmp_path / "out")
    assert done.returncode == 0, done.stdout + done.stderr
    resources = manifest(run_dir)["resources"]
    assert resources["kept"] is True and "removed" not in resources
    topic = resources["named"]["topic"]
    assert on_broker("kafka", address, topic) == [topic]
    driver = KafkaDriver(address, KafkaOptions())
    assert driver.topic(topic) == MANY  # a partition per connection


def test_a_named_topic_big_enough_is_used_and_kept(brokers, tmp_path):
    address = brokers("kafka")
    topic = f"orders-{uuid.uuid4().hex[:8]}"
    assert KafkaDriver(address, KafkaOptions()).topic(topic, MANY + 2) == MANY + 2
    path = scenario(tmp_path / "named.yaml", "kafka", address, str(MANY),
                    options=f"{{topic: {topic}}}")
    done, [run_dir] = run(path, tmp_path / "out")
    assert done.returncode == 0, done.stdout + done.stderr
    record = manifest(run_dir)
    assert record["driver_options"]["topic"] == topic and "resources" not in record
    assert on_broker("kafka", address, topic) == [topic]
