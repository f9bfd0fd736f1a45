"""orchestrator.plan.footprint: what a plan needs, and the refusal when a host cannot hold it."""

from __future__ import annotations

from sixnines.agents import recording
from sixnines.orchestrator.plan import footprint
from sixnines.orchestrator.plan.footprint import (
    AGENT_BASE_BYTES,
    CHUNK_ROW_BYTES,
    ROW_DISK_BYTES,
    WRITER_ROW_BYTES,
)
from sixnines.orchestrator.scenario.matrix import expand
from sixnines.orchestrator.scenario.model import parse_scenario

GB = 1 << 30


def points(workload: str, placement: str = ""):
    return expand(parse_scenario(f"""
name: fit
systems: [{{name: tcp, driver: tcp}}]
workload: {workload}
{placement}
"""))


def test_memory_stays_the_same_however_long_the_run_and_disk_grows(streaming):
    short, long = (footprint.estimate(points(f"{{message_size: 64, rate: 101k, "
                                             f"duration: {duration}, warmup: 0s}}"))
                   for duration in ("10s", "1h"))
    assert short.memory["local"][0] == long.memory["local"][0]  # chunks, not the run
    assert short.memory["local"][0] > 2 * AGENT_BASE_BYTES
    messages = 101_000 * 3590  # more sent and received
    assert long.disk - short.disk > 2 * messages * ROW_DISK_BYTES


def test_a_requester_s_memory_stays_the_same_however_long_the_run(streaming):
    short, long = (footprint.agent_needs(points(
        f"{{mode: round-trip, message_size: 64, rate: 10k, duration: {duration}, "
        "warmup: 0s}")[0])[0] for duration in ("10s", "1h"))
    assert short.plan.role == "requester"
    assert short.memory == long.memory  # chunks of requests and of replies, not the run
    requests = 10_000 * 3590  # more sent, each with its reply
    assert long.disk - short.disk >= 2 * requests * ROW_DISK_BYTES


def test_a_consumer_s_buffers_hold_a_second_of_its_deliveries(streaming):
    one, four, twice = ({need.plan.role: need for need in footprint.agent_needs(points(
        f"{{message_size: {size}, rate: {rate}, duration: 10s, warmup: 0s, "
        f"connections: {c}}}")[0])}
        for size, rate, c in ((64, "100k", 1), (64, "100k", 4), (64, "200k", 1)))
    per_row = recording.pool_buffers() * CHUNK_ROW_BYTES["consumer"] + WRITER_ROW_BYTES
    # a second's deliveries, however many connections carry them: the same 100,000 on one
    # connection or four; twice the rate, 100,000 more
    assert four["consumer"].memory - one["consumer"].memory == 0
    assert twice["consumer"].memory - one["consumer"].memory == 100_000 * per_row


def test_a_held_consumer_s_buffers_hold_the_backlog_between_them(streaming):
    """A backlog of 800,000 messages comes at once when the consumer goes: its four
    buffers hold 200,000 each, where a second's deliveries would be 100,000."""
    def consumer(backlog: str):
        (point,) = expand(parse_scenario(f"""
name: fit
systems: [{{name: k, driver: kafka, broker: {{external: "127.0.0.1:9"}}}}]
workload: {{message_size: 64, rate: 100k, duration: 20s, warmup: 0s{backlog}}}
"""))
        return next(need for need in footprint.agent_needs(point)
                    if need.plan.role == "consumer")
    per_row = recording.pool_buffers() * CHUNK_ROW_BYTES["consumer"] + WRITER_ROW_BYTES
    held = consumer(", backlog: {build: 8s, drain_within: 10s}")
    assert held.memory - consumer("").memory == 100_000 * per_row


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


def test_a_plan_too_big_for_the_host_is_refused_with_the_numbers_and_the_knobs(streaming):
    found = footprint.estimate(points("{message_size: 64, rate: 5M, duration: 1h}"))
    memory, disk = footprint.problems(found, {"local": GB // 2}, 100 * GB, "runs")
    assert "run 01-tcp needs about 776.0 MB of memory on host local" in memory
    assert "18,005,000,000 messages" in memory and "512.0 MB is available" in memory
    assert "lower rate, duration or messages" in memory
    assert "537.3 GB under runs, but 100.0 GB is free" in disk
    # chunks: an hour at 5M msg/s fits a 16 GB machine's memory, not its disk
    assert footprint.problems(found, {"local": 16 * GB}, 100 * GB, "runs") == [disk]
    assert footprint.problems(found, {"local": None}, None, "runs") == []  # unknown: passes


def test_a_remote_host_without_room_for_a_run_is_named():
    found = footprint.estimate(points("{message_size: 64, rate: 100k, duration: 60s}"),
                               agent_hosts=("h1",))
    problems = footprint.problems(found, {}, None, "", host_free={"h1": 10 << 20})
    assert len(problems) == 1 and "on host h1, but 10.0 MB is free" in problems[0]


def test_runs_whose_busy_loops_would_have_no_cpu_of_their_own_here_are_named():
    """Three producers on two CPUs: their send lag is the placement's, and validate says so
    before anything runs (the run that puts the most busy loops here)."""
    found = footprint.estimate(points("{message_size: 64, rate: 5k, duration: 1s, "
                                      "producers: [1, 3]}"), cpus=2)
    (line,) = found.crowded
    assert line.startswith("CPUs: run 02-tcp-producers=3: host local: 3 busy loop(s) on 2 "
                           "CPU(s): no CPU of their own")
    assert "fewer busy loops per host" in line and line in found.lines({}, None, "runs")
    assert footprint.estimate(points("{message_size: 64, rate: 5k, duration: 1s}"),
                              cpus=2).crowded == []
    polling = points("{message_size: 64, rate: 5k, duration: 1s, receive: busy-poll}")
    assert "2 busy loop(s) on 2 CPU(s)" in footprint.estimate(polling, cpus=2).crowded[0]
    elsewhere = points("{message_size: 64, rate: 5k, duration: 1s, producers: 3}",
                       "hosts: [{name: h1, address: 10.0.0.1}]\nplacement: {agents: [h1]}")
    assert footprint.estimate(elsewhere, ("h1",), cpus=2).crowded == []
