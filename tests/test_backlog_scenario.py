"""`workload.backlog` as a user writes it: `sixnines validate` refuses what cannot build a
backlog, each at its line; a valid one is planned as the release instant its consumers
hold to (the figures of a run: tests/test_backlog_pass.py)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from sixnines.orchestrator.scenario.matrix import expand
from sixnines.orchestrator.scenario.model import parse_scenario

SCENARIO = """name: s
systems:
  - {{name: a, driver: {driver}, broker: {broker}, options: {options}}}
workload:
  message_size: 100
  rate: {rate}
  duration: 5s
  warmup: 0
  backlog: {backlog}
"""
GOOD = "{build: 2k messages, drain_within: 2s}"
BUILTIN = ("tcp", "zmq")


def scenario(driver: str, rate: str, backlog: str, options: str = "{}") -> str:
    broker = "builtin" if driver in BUILTIN else "{external: '127.0.0.1:9'}"
    return SCENARIO.format(driver=driver, broker=broker, options=options, rate=rate,
                           backlog=backlog)


def validate(tmp_path: Path, driver: str = "kafka", options: str = "{}", rate: str = "1k",
             backlog: str = GOOD, extra: str = "") -> subprocess.CompletedProcess:
    text = scenario(driver, rate, backlog, options) + extra
    (tmp_path / "s.yaml").write_text(text)
    return subprocess.run([sys.executable, "-m", "sixnines", "validate", "s.yaml"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize(("driver", "options"), [
    ("tcp", "{}"), ("zmq", "{}"), ("redis", "{mode: pubsub}"), ("nats", "{mode: core}")])
def test_validate_refuses_a_backlog_on_a_system_that_stores_nothing(tmp_path, driver, options):
    done = validate(tmp_path, driver, options)
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert done.stderr.startswith(f"s.yaml:3: systems[0]: driver {driver!r} with these "
                                  "options keeps no messages for a consumer that is not "
                                  "reading"), done.stderr


@pytest.mark.parametrize(("driver", "options"), [
    ("kafka", "{}"), ("rabbitmq", "{}")])
def test_a_backlog_on_a_system_that_stores_messages_is_valid(tmp_path, driver, options):
    done = validate(tmp_path, driver, options)
    assert done.returncode == 0, done.stderr


@pytest.mark.parametrize(("backlog", "rate", "extra", "message"), [
    ("{build: 2k, drain_within: 2s}", "1k", "", "build must be a count of messages (20k "
     "messages), bytes (5MB) or a time (10s) (got '2k')"),
    ("{build: 2000, drain_within: 2s}", "1k", "", "with its unit (got 2000)"),
    ("{build: 2k messages}", "1k", "", "drain_within required"),
    ("{build: 2k messages, drain_within: 2s, at: 1s}", "1k", "", "unknown field(s) at"),
    ("{build: 4s, drain_within: 2s}", "1k", "", "built at 4s from the start, then "
     "drain_within 2s, ends after the warm-up and duration (5s)"),
    ("{build: 400KB, drain_within: 1s}", "1k", "", "built at 4096ms from the start"),
    (GOOD, "max", "  messages: 1000\n", "needs a scheduled rate"),
    (GOOD, "1k", "  mode: round-trip\n", "needs mode one-way"),
])
def test_validate_refuses_a_backlog_that_cannot_build_or_drain(tmp_path, backlog, rate, extra,
                                                               message):
    done = validate(tmp_path, backlog=backlog, rate=rate, extra=extra)
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert done.stderr.startswith("s.yaml:9: workload.backlog: "), done.stderr
    assert message in done.stderr


@pytest.mark.parametrize(("build", "release_ns"), [
    ("2k messages", 2_000_000_000), ("100KB", 1_024_000_000), ("1500ms", 1_500_000_000)])
def test_the_release_is_when_the_schedule_has_intended_the_build(build, release_ns):
    text = scenario("kafka", "1k", f"{{build: {build}, drain_within: 2s}}")
    (point,) = expand(parse_scenario(text))
    params = point.workload.params()
    assert params["backlog"]["release_ns"] == release_ns
    assert params["backlog"]["drain_within_ns"] == 2_000_000_000


@pytest.mark.parametrize(("sizes", "release_ns"), [
    ("{64: 3, 256: 1}", 1_000_000_000),  # a mean of 112 B: 1,000 messages at 1k msg/s
    ("{uniform: [100, 124]}", 1_000_000_000),
])
def test_a_build_in_bytes_of_sizes_that_vary_is_in_messages_of_their_mean(sizes, release_ns):
    text = scenario("kafka", "1k", "{build: 112000B, drain_within: 2s}").replace(
        "message_size: 100", f"message_size: {sizes}")
    (point,) = expand(parse_scenario(text))
    assert point.workload.release_ns == release_ns
    assert point.workload.backlog_messages == 1000


def test_the_release_follows_a_shape():
    """500 msg/s for 1 s, then 2k: 1,500 messages are due at 1.5 s."""
    text = scenario("kafka", "{steps: [{rate: 500, for: 1s}, {rate: 2k}]}",
                    "{build: 1500 messages, drain_within: 2s}")
    (point,) = expand(parse_scenario(text))
    assert point.workload.release_ns == 1_500_000_000


def test_validate_says_how_a_backlog_s_units_were_read(tmp_path):
    done = validate(tmp_path, backlog="{build: 100KB, drain_within: 2}")
    assert done.returncode == 0, done.stderr
    assert "s.yaml:9: workload.backlog.build: 100KB → 102,400 B (KB read as KiB)" in done.stderr
    assert "s.yaml:9: workload.backlog.drain_within: 2 → 2 s (no unit: seconds)" in done.stderr


@pytest.mark.parametrize(("driver", "options", "message"), [
    ("redis", "{mode: streams, stream_maxlen: 1000}", "a backlog of 2,000 messages is more "
     "than stream_maxlen 1,000: the stream would trim entries the consumers have not read"),
    ("nats", "{mode: jetstream, max_bytes: 100000}", "a backlog of 2,000 messages (200,000 B) "
     "is more than the stream's max_bytes 100,000"),
])
def test_validate_refuses_a_backlog_its_stream_would_trim(tmp_path, driver, options, message):
    done = validate(tmp_path, driver, options)
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert done.stderr.startswith(f"s.yaml:3: systems[0]: {message}"), done.stderr
    assert validate(tmp_path, driver, options.replace("1000", "10000")).returncode == 0
