"""Every run records the durability it was measured with: what the driver asked for and,
where the broker can be asked, what it runs with (read back over an admin connection of
its own), against real brokers; the label shows in the console next to the system's name,
summary.json carries it, and `compare` of two results measured with different durability
says so rather than judging them."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.integration.support import (
    SHORT_RUN,
    execute,
    external,
    free_port,
    missing,
    one_system,
    points,
    server_process,
)

pytestmark = [pytest.mark.integration, pytest.mark.timeout(300)]


NO_REDIS = pytest.mark.skipif(missing("redis-server"), reason="redis-server not installed")
NO_NATS = pytest.mark.skipif(missing("nats-server"), reason="nats-server not installed")
NO_KAFKA = pytest.mark.skipif(missing("noida-db"), reason="noida-db not installed")
NO_RABBITMQ = pytest.mark.skipif(missing("rabbitmqctl", "/usr/lib/rabbitmq/bin/rabbitmq-server"),
                                 reason="rabbitmq-server not installed")


@pytest.mark.parametrize("driver, recipe, options, label, actual", [
    # no topic or stream named: the run's own are read back (orchestrator.run.resources)
    pytest.param("kafka", "kafka-noida", "{acks: all}",
                 "acks=all, rf=1, min.isr=", {"replication.factor": 1}, marks=NO_KAFKA,
                 id="kafka"),
    pytest.param("nats", "nats", "{mode: jetstream, storage: file}",
                 "jetstream, file, R1",
                 {"mode": "jetstream", "storage": "file", "replicas": 1, "publish_acks": True},
                 marks=NO_NATS, id="nats-jetstream"),
    pytest.param("redis", "redis", "{mode: streams}", "in memory only",
                 {"appendonly": "no", "save": ""}, marks=NO_REDIS, id="redis-in-memory"),
])
def test_the_manifest_records_what_was_asked_and_what_the_broker_runs_with(
        tmp_path, driver, recipe, options, label, actual):
    point = points(one_system(driver, f"{{recipe: {recipe}}}", SHORT_RUN, options))[0]
    manifest = execute(point, tmp_path / "run")
    assert manifest["status"] == "ok", manifest["problems"]
    durability = manifest["durability"]
    assert durability["label"].startswith(label), durability
    assert durability["actual"] is not None, durability["note"]
    assert actual.items() <= durability["actual"].items(), durability
    assert durability["asked"], durability  # and what was asked, beside it


@pytest.mark.parametrize("driver, broker, options, label, note", [
    # a classic queue bound to the fanout exchange is its consumer connection's alone
    pytest.param("rabbitmq", "{recipe: rabbitmq}", "{confirms: true, persistent: true}",
                 "confirms, classic, persistent", "exclusive to its consumer's connection",
                 marks=NO_RABBITMQ, id="rabbitmq-fanout-classic"),
    pytest.param("nats", "{recipe: nats}", "{}", "core", "core NATS stores nothing",
                 marks=NO_NATS, id="nats-core"),
    pytest.param("tcp", "builtin", "{}", "none", "no durability", id="tcp"),
])
def test_a_broker_that_cannot_be_asked_is_recorded_as_asked_with_why(
        tmp_path, driver, broker, options, label, note):
    point = points(one_system(driver, broker, SHORT_RUN, options))[0]
    manifest = execute(point, tmp_path / "run")
    assert manifest["status"] == "ok", manifest["problems"]
    durability = manifest["durability"]
    assert durability["label"] == label
    assert durability["actual"] is None and note in durability["note"], durability


# --- through the CLI: console, summary.json, compare --------------------------------------


def sixnines(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "sixnines", *args], cwd=cwd,
                          capture_output=True, text=True, timeout=600)


def run_against(work: Path, address: str, name: str) -> tuple[Path, str]:
    """The Redis streams scenario run through the CLI against `address`: its results
    directory and what the run printed."""
    scenario = one_system("redis", external(address), SHORT_RUN, "{mode: streams}",
                          name=name, system="redis") + "output: out\n"
    (work / f"{name}.yaml").write_text(scenario)
    done = sixnines("run", f"{name}.yaml", cwd=work)
    assert done.returncode == 0, done.stderr
    return work / done.stdout.strip().splitlines()[-1], done.stderr


@NO_REDIS
def test_results_of_different_durability_are_labelled_and_compare_says_so(tmp_path):
    work = tmp_path
    port = free_port()
    aof = ["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--save", "",
           "--appendonly", "yes", "--appendfsync", "everysec", "--dir", str(tmp_path)]
    with server_process(aof, port) as address:
        fsynced, printed = run_against(work, address, "durable")
    assert "redis (aof=everysec)" in printed
    port = free_port()
    in_memory = ["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--save", "",
                 "--appendonly", "no", "--dir", str(tmp_path)]
    with server_process(in_memory, port) as address:
        volatile, printed = run_against(work, address, "durable")
    assert "redis (in memory only)" in printed

    run = json.loads((fsynced / "summary.json").read_text())["runs"][0]
    assert run["durability"]["label"] == "aof=everysec"
    assert run["durability"]["actual"]["appendonly"] == "yes"

    done = sixnines("compare", str(fsynced), str(volatile), cwd=work)
    assert done.returncode == 0, done.stdout + done.stderr
    text = " ".join((done.stdout + done.stderr).split())
    assert ("not the same experiment: durability aof=everysec → in memory only: figures "
            "shown, not judged") in text
    assert "redis (A aof=everysec; B in memory only)" in text
    done = sixnines("compare", str(fsynced), str(volatile), "--json", cwd=work)
    pair = json.loads(done.stdout)["pairs"][0]
    assert pair["differs"] == ["durability aof=everysec → in memory only"]
    assert not pair["same_experiment"] and not pair["regression"]
    done = sixnines("runs", "out", "--json", cwd=work)
    listed = {entry["path"]: entry["headlines"][0]["durability"]
              for entry in json.loads(done.stdout)}
    assert sorted(listed.values()) == ["aof=everysec", "in memory only"]
