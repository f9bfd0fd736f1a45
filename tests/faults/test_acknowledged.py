"""Messages the broker acknowledged through a broker kill, with real brokers started and
killed by their recipes: NATS JetStream on file storage and RabbitMQ with publisher
confirms and persistent messages on a durable classic or quorum queue lose none of them
(if either did, the report would say so: these tests would then fail on that finding,
naming it); a JetStream stream in memory, its consumer not reading yet, loses what it
acknowledged, and the run says "the broker acknowledged N messages it never delivered"."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.faults.support import sixnines
from tests.integration.support import missing

pytestmark = [pytest.mark.integration, pytest.mark.timeout(600)]


NO_NATS = pytest.mark.skipif(missing("nats-server"), reason="nats-server not installed "
                             "(deploy/setup.sh --test installs it)")
NO_RABBITMQ = pytest.mark.skipif(
    missing("rabbitmqctl", "/usr/lib/rabbitmq/bin/rabbitmq-server"),
    reason="rabbitmq-server not installed (deploy/setup.sh --test installs it)")
KILL = "  - {at: 1s, action: kill, target: broker, restart_after: 0.5s, data: keep}"


def ran(tmp_path: Path, system: str, workload: str, faults: str = KILL
        ) -> tuple[int, str, dict, dict]:
    """`sixnines run` of one system with `faults` (by default the broker killed 1 s into
    the measured time and started again; none: ""): exit code, console, manifest,
    summary."""
    listed = f"faults:\n{faults}" if faults else ""
    (tmp_path / "s.yaml").write_text(f"""
name: acknowledged
systems: [{system}]
workload: {workload}
{listed}
""")
    done = sixnines("run", "s.yaml", "--output", "out", cwd=tmp_path)
    assert "Traceback" not in done.stderr, done.stderr
    results = tmp_path / done.stdout.strip().splitlines()[-1]
    manifest = json.loads((next(results.glob("01-*")) / "manifest.json").read_text())
    summary = json.loads((results / "summary.json").read_text())["runs"][0]
    return done.returncode, done.stderr, manifest, summary


def producer(manifest: dict) -> dict:
    [found] = [agent for agent in manifest["agents"] if agent["role"] == "producer"]
    return found


def acknowledged(manifest: dict) -> list[dict]:
    return producer(manifest)["acknowledged"]


def kept_every_acknowledged(code: int, manifest: dict, summary: dict) -> None:
    """The run went through the kill (each client reconnected once), its producer's acks
    were recorded on both connections, and no acknowledged message was lost."""
    assert code == 0 and manifest["status"] == "ok", manifest["problems"]
    assert manifest["faults"][0]["outcome"] == "done"
    for agent in manifest["agents"]:
        assert agent["reconnects"]["count"] == 1, agent
    runs = acknowledged(manifest)
    assert len(runs) == 2 and runs[1]["first_seq"] > runs[0]["first_seq"], runs
    # the connection before the kill and the one after had most of the messages acked
    assert sum(run["count"] for run in runs) >= 0.9 * producer(manifest)["sent"], runs
    assert summary["lost_acknowledged"] == 0, summary["problems"]
    assert summary["faults"][0]["delivery"]["lost_acknowledged"] == 0
    assert not any("acknowledged" in problem for problem in summary["problems"])


@NO_NATS
def test_jetstream_on_file_loses_no_acknowledged_message_through_a_kill(tmp_path):
    code, _, manifest, summary = ran(
        tmp_path, "{name: sut, driver: nats, broker: {recipe: nats}, "
                  "options: {mode: jetstream, storage: file}}",
        "{message_size: 64, rate: 500, duration: 3s, warmup: 0.5s, drain: 3s}")
    kept_every_acknowledged(code, manifest, summary)


@NO_RABBITMQ
@pytest.mark.parametrize("options", [
    # the default exchange: one named durable classic queue, which outlives the broker (a
    # fanout exchange's classic queues are exclusive, gone with their connection)
    pytest.param("{exchange: '', confirms: true, persistent: true}", id="classic"),
    # the fanout exchange: a quorum queue cannot be exclusive, so the consumer's is named
    # and outlives the broker too
    pytest.param("{queue_type: quorum, confirms: true, persistent: true}", id="quorum"),
])
def test_rabbitmq_confirms_on_a_durable_queue_lose_no_acknowledged_message(tmp_path, options):
    # the node takes seconds to start again, so the schedule outlasts it
    code, _, manifest, summary = ran(
        tmp_path, "{name: sut, driver: rabbitmq, broker: {recipe: rabbitmq}, "
                  f"options: {options}}}",
        "{message_size: 64, rate: 200, duration: 20s, warmup: 0.5s, drain: 3s}")
    kept_every_acknowledged(code, manifest, summary)
    assert manifest["durability"]["actual"]["x-queue-type"] == (
        "quorum" if "quorum" in options else "classic")


@NO_NATS
def test_jetstream_in_memory_killed_loses_what_it_acknowledged_and_the_run_says_so(tmp_path):
    # consumers read nothing for the first 2 s (a backlog) and pull one message at a time,
    # so what the stream acknowledged before the kill at 1 s sits in its memory, then goes
    code, stderr, manifest, summary = ran(
        tmp_path, "{name: sut, driver: nats, broker: {recipe: nats}, "
                  "options: {mode: jetstream, storage: memory, batch: 1}}",
        "{message_size: 64, rate: 500, duration: 4s, warmup: 0s, drain: 3s, "
        "backlog: {build: 2s, drain_within: 2s}}")
    acked = sum(run["count"] for run in acknowledged(manifest))
    assert acked >= 300, acknowledged(manifest)  # 1 s at 500 msg/s, before the kill
    lost = summary["lost_acknowledged"]
    assert acked - 1 <= lost <= acked, (acked, summary)  # one may have been pulled early
    line = f"the broker acknowledged {lost} messages it never delivered"
    assert line in summary["problems"]
    assert f"the broker acknowledged {lost:,} messages it never delivered" in stderr
    assert 0 <= summary["faults"][0]["delivery"]["lost_acknowledged"] <= lost
    assert code in (0, 1)
