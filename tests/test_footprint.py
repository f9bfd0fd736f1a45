"""orchestrator.footprint: what a plan needs, and the refusal when a host cannot hold it."""

from __future__ import annotations

from sixnines.orchestrator import footprint
from sixnines.orchestrator.footprint import AGENT_BASE_BYTES, ROW_DISK_BYTES, ROW_MEMORY_BYTES
from sixnines.orchestrator.matrix import expand
from sixnines.orchestrator.scenario import parse_scenario

GB = 1 << 30


def points(workload: str, placement: str = ""):
    return expand(parse_scenario(f"""
name: fit
systems: [{{name: tcp, driver: tcp}}]
workload: {workload}
{placement}
"""))


def test_memory_grows_with_the_messages_each_agent_records():
    small, large = (footprint.estimate(points(f"{{message_size: 64, rate: {rate}, "
                                              "duration: 10s, warmup: 0s}"))
                    for rate in ("1k", "101k"))
    grown = large.memory["local"][0] - small.memory["local"][0]
    # 1,000,000 more messages, recorded by the producer and by the consumer
    assert grown == 1_000_000 * (ROW_MEMORY_BYTES["producer"] + ROW_MEMORY_BYTES["consumer"])
    assert large.disk - small.disk == 2 * 1_000_000 * ROW_DISK_BYTES
    assert small.memory["local"][0] > 2 * AGENT_BASE_BYTES


def test_a_consumer_records_every_connection_s_deliveries():
    one, four = (footprint.agent_needs(points(f"{{message_size: 64, rate: 10k, duration: 10s, "
                                              f"warmup: 0s, connections: {c}}}")[0])
                 for c in (1, 4))
    consumer = {need.plan.role: need for need in four}["consumer"]
    alone = {n.plan.role: n for n in one}["consumer"]
    # three more connections, each receiving all 100,000 messages
    assert consumer.memory - alone.memory == 3 * 100_000 * ROW_MEMORY_BYTES["consumer"]


def test_the_largest_run_counts_for_memory_and_every_run_for_disk():
    found = footprint.estimate(points("{message_size: 64, rate: [1k, 50k], duration: 10s}"))
    assert found.memory["local"][1] == "02-tcp-rate=50k"
    each = [footprint.estimate([p]).disk for p in points(
        "{message_size: 64, rate: [1k, 50k], duration: 10s}")]
    assert found.disk == sum(each)


def test_agents_are_counted_on_the_hosts_they_are_placed_on():
    found = footprint.estimate(
        points("{message_size: 64, rate: 1k, duration: 1s, producers: 2, consumers: 2}"),
        agent_hosts=("h1", "h2"))
    assert set(found.memory) == {"h1", "h2"}
    assert {a.plan.agent_id for a in found.memory["h1"][2]} == {"producer-0", "consumer-0"}


def test_a_plan_too_big_for_the_host_is_refused_with_the_numbers_and_the_knobs():
    found = footprint.estimate(points("{message_size: 64, rate: 5M, duration: 1h}"))
    problems = footprint.problems(found, {"local": 16 * GB}, 100 * GB, "runs")
    memory, disk = problems
    assert "run 01-tcp needs about 5.2 TB of memory on host local" in memory
    assert "18,005,000,000 messages" in memory and "16.0 GB is available" in memory
    assert "lower rate, duration or messages" in memory
    assert "537.0 GB under runs, but 100.0 GB is free" in disk
    assert footprint.problems(found, {"local": None}, None, "runs") == []  # unknown: passes


def test_a_remote_host_without_room_for_a_run_is_named():
    found = footprint.estimate(points("{message_size: 64, rate: 100k, duration: 60s}"),
                               agent_hosts=("h1",))
    problems = footprint.problems(found, {}, None, "", host_free={"h1": 10 << 20})
    assert len(problems) == 1 and "on host h1, but 10.0 MB is free" in problems[0]
