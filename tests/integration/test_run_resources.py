"""Every run of a sweep starts clean (docs/design.md, "Every run its own topic"): against one
broker that outlives the runs, each run gets a topic, stream, stream keys or exchanges of
its own, sized for its connections, deleted at its end unless the system keeps them; a
topic the scenario names is the user's, used as it is and never deleted (one too small:
tests/faults/test_broker_resources.py)."""

from __future__ import annotations

import asyncio
import uuid
from collections import Counter
from pathlib import Path

import pyarrow.parquet as pq
import pytest
import redis

from sixnines.drivers.kafka import KafkaDriver, KafkaOptions
from sixnines.formats.chunks import message_files
from sixnines.formats.keys import KeySpace, message_keys
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


# --- keys: a stream or subject per key ----------------------------------------------------

def sent_by_lane_and_key(run_dir: Path) -> Counter[str]:
    """`<lane>.<key name>` of every message the run's producers sent: their records, each
    message's key as the manifest's draws give it, its lane its connection."""
    record = manifest(run_dir)
    draws = record["workload"]["key_draws"]
    space = KeySpace.of(draws["space"])
    sent: Counter[str] = Counter()
    for agent in record["agents"]:
        if agent["role"] == "producer":
            table = pq.read_table(message_files(run_dir / "agents" / agent["id"]))
            producer, seq = (table[name].to_numpy() for name in ("producer_id", "seq"))
            keys = message_keys(space, draws["seed"], draws["period"], producer, seq)
            sent.update(f"{lane}.{space.name(key)}" for lane, key in zip(
                (producer - agent["first_id"]).tolist(), keys.tolist(), strict=True))
    return sent


def held_per_key(system: str, address: str, names: dict[str, str]) -> Counter[str]:
    """What the broker holds of a run's names, per `<lane>.<key name>` below its channel
    (subject): each key's stream's length (Redis), the stream's count per subject (NATS)."""
    host, port = address.rsplit(":", 1)
    if system == "redis":
        client = redis.Redis(host, int(port))
        try:
            return Counter({key.decode().removeprefix(names["channel"] + "."): client.xlen(key)
                            for key in client.scan_iter(match=f"{names['channel']}.*")})
        finally:
            client.close()
    import nats

    async def subjects() -> dict[str, int]:
        client = await nats.connect(f"nats://{host}:{port}")
        try:
            info = await client.jsm().stream_info(names["stream"], subjects_filter=">")
            return info.state.subjects or {}
        finally:
            await client.close()

    return Counter({subject.removeprefix(names["subject"] + "."): count
                    for subject, count in asyncio.run(subjects()).items()})


@pytest.mark.parametrize("system", ["redis", "nats"])
def test_a_keyed_run_has_a_stream_per_key_and_leaves_none(system, brokers, tmp_path):
    """Zipf keys over two lanes: each key's stream (subject) of each lane holds exactly the
    messages of that key its lane sent, kept when the system says so; a run of the same
    system that keeps nothing leaves nothing of them."""
    address = brokers(system)
    path = scenario(tmp_path / "keys.yaml", system, address, "2",
                    extra=", keep_resources: true", workload=", keys: {count: 12, zipf: 1.1}")
    kept = next(line for line in path.read_text().splitlines() if "keep_resources" in line)
    gone = kept.replace(f"name: {system},", "name: gone,").replace(", keep_resources: true", "")
    path.write_text(path.read_text().replace(kept, f"{kept}\n{gone}"))
    done, run_dirs = run(path, tmp_path / "out")
    assert done.returncode == 0, done.stdout + done.stderr
    for run_dir in run_dirs:
        record = manifest(run_dir)
        assert record["status"] == "ok", record["problems"]
        names = record["resources"]["named"]
        if record["system"] == system:
            held = held_per_key(system, address, names)
            assert held == sent_by_lane_and_key(run_dir)
            assert len(held) > 12  # both lanes, most keys
        else:
            assert record["resources"]["removed"]
            held_in = names["stream" if system == "nats" else "channel"]
            assert on_broker(system, address, held_in) == []
