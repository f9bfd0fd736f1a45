"""A run's broker resources when they do not fit or cannot go (docs/design.md, "Every run
its own topic"): a topic the user names with fewer partitions than the run's connections
is refused before the first message, with the numbers (exit 1); a run's own resources the
broker will not delete are a note in the manifest, the run whole."""

from __future__ import annotations

import shutil
import uuid

import pytest
import redis

from sixnines.drivers.kafka import KafkaDriver, KafkaOptions
from tests.faults.support import failed_cleanly, line_with
from tests.integration.broker_resources import (
    MANY,
    manifest,
    on_broker,
    run,
    scenario,
)
from tests.integration.broker_resources import brokers as brokers_fixture
from tests.integration.support import recipe_server

pytestmark = [pytest.mark.integration, pytest.mark.timeout(300)]

brokers = brokers_fixture  # the shared fixture, under its name here


def test_a_named_topic_too_small_is_refused_before_the_first_message(brokers, tmp_path):
    """A user's topic with 3 partitions for a run of MANY connections: the run fails (exit
    1) before anything is sent, saying the numbers; the topic is the user's, not deleted."""
    address = brokers("kafka")
    topic = f"orders-{uuid.uuid4().hex[:8]}"
    assert KafkaDriver(address, KafkaOptions()).topic(topic, 3) == 3
    path = scenario(tmp_path / "named.yaml", "kafka", address, str(MANY),
                    options=f"{{topic: {topic}}}")
    done, [run_dir] = run(path, tmp_path / "out")
    wanted = f"topic '{topic}' has 3 partitions, fewer than the {MANY} connections"
    line_with(failed_cleanly(done), wanted)
    record = manifest(run_dir)
    assert record["status"] == "failed"
    assert any(wanted in problem for problem in record["problems"]), record["problems"]
    assert "started_at_ns" not in record  # never started: not one message sent
    assert "resources" not in record  # nothing of the run's own
    assert on_broker("kafka", address, topic) == [topic]


@pytest.mark.skipif(shutil.which("redis-server") is None, reason="needs redis-server")
def test_a_deletion_refused_is_a_note_and_the_run_stays_ok(tmp_path, monkeypatch):
    """A Redis user who may write and read streams but not DEL: the run is ok (its
    measurements are whole), the manifest's resources say what is left and why."""
    with recipe_server("redis", tmp_path / "broker") as server:
        host, port = server.address.rsplit(":", 1)
        admin = redis.Redis(host, int(port))
        admin.execute_command("ACL", "SETUSER", "nodel", "on", ">nodel-pw", "~*", "&*",
                              "+@all", "-del", "-unlink")
        admin.close()
        monkeypatch.setenv("NODEL_PW", "nodel-pw")
        path = scenario(tmp_path / "nodel.yaml", "redis", server.address, "2",
                        options="{mode: streams, username: nodel, password_env: NODEL_PW}")
        done, [run_dir] = run(path, tmp_path / "out")
        assert done.returncode == 0, done.stdout + done.stderr
        line_with(done.stderr, "not deleted")  # said on the console too
        resources = manifest(run_dir)["resources"]
        name = resources["named"]["channel"]
        [note] = resources["notes"]
        assert note.startswith(f"not deleted: {name} (") and "DEL" in note, note
        assert on_broker("redis", server.address, name) == [f"{name}.0", f"{name}.1"]
