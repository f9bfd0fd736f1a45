"""`keys:` as `sixnines validate` reads it, through the real CLI: one FILE:LINE line (exit
2) for a malformed value, a workload keys cannot ride on, and options under which a system
cannot carry them (a driver that carries none: tests/conformance/test_third_party.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.faults.support import sixnines

SCENARIO = """\
name: keyed
systems: [{{name: s, driver: {driver}, broker: {{external: "127.0.0.1:9"}}}}]
workload:
  mode: {mode}
  message_size: {size}
  rate: 100
  duration: 1s
  keys: {keys}
"""
SYSTEM_LINE, KEYS_LINE = 2, 8


def validate(folder: Path, keys: str, driver: str = "tcp", mode: str = "one-way",
             size: int = 64):
    (folder / "s.yaml").write_text(SCENARIO.format(keys=keys, driver=driver, mode=mode,
                                                   size=size))
    return sixnines("validate", "s.yaml", cwd=folder)


def test_a_key_space_validates(tmp_path):
    done = validate(tmp_path, "{count: 1000, zipf: 1.1}")
    assert done.returncode == 0, done.stderr


@pytest.mark.parametrize(("keys", "says"), [
    ("{count: 0}", "count: must be a whole number of keys, 1 to 65536 (got 0)"),
    ("{count: 10, zipf: -1}", "zipf: must be an exponent above 0"),
    ("{count: 10, skew: 2}", "must be none, {count: N} (uniform) or {count: N, zipf: S}"),
    ("lots", "must be none, {count: N}"),
])
def test_a_malformed_value_is_one_line_at_its_line(tmp_path, keys, says):
    done = validate(tmp_path, keys)
    assert done.returncode == 2
    (line,) = done.stderr.strip().splitlines()
    assert line.startswith(f"s.yaml:{KEYS_LINE}: workload.keys: ")
    assert says in line and "Traceback" not in done.stderr


@pytest.mark.parametrize(("mode", "size", "says"), [
    ("round-trip", 64, "keys need mode 'one-way'"),
    ("one-way", 30, "keyed messages need message_size of at least 32 bytes"),
    ("one-way", 2 << 20, "keyed messages may be at most 1 MiB"),
])
def test_a_workload_keys_cannot_ride_on_is_refused(tmp_path, mode, size, says):
    done = validate(tmp_path, "{count: 10}", mode=mode, size=size)
    assert done.returncode == 2
    assert f"s.yaml:{KEYS_LINE}: workload.keys: {says}" in done.stderr


@pytest.mark.parametrize(("options", "count", "says"), [
    ("{mode: streams}", 257, "redis: keys are a stream each in mode streams, at most 256 "
     "(got 257): every receiver's XREAD names each key's stream"),
    ("{mode: pubsub}", 4097, "redis: keys are a channel each in mode pubsub, at most 4,096 "
     "(got 4,097): every receiver subscribes to each key's channel"),
])
def test_redis_bounds_its_keys_at_the_system_s_line(tmp_path, options, count, says):
    """A stream (channel) per key: as many as a receiver can read (subscribe to) at once."""
    scenario = SCENARIO.format(keys=f"{{count: {count}}}", driver="redis", mode="one-way",
                               size=64).replace("driver: redis,", f"driver: redis, "
                                                                  f"options: {options},")
    (tmp_path / "s.yaml").write_text(scenario)
    done = sixnines("validate", "s.yaml", cwd=tmp_path)
    assert done.returncode == 2
    assert f"s.yaml:{SYSTEM_LINE}: systems[0]: {says}" in done.stderr
    (tmp_path / "s.yaml").write_text(scenario.replace(f"count: {count}", f"count: {count - 1}"))
    assert sixnines("validate", "s.yaml", cwd=tmp_path).returncode == 0


@pytest.mark.parametrize(("driver", "options", "says"), [
    ("kafka", "{client: kafka-python}", "kafka: keys need option client 'confluent'"),
    ("rabbitmq", "{exchange: ''}", "rabbitmq: keys are routing keys on a named exchange"),
], ids=["kafka-python", "rabbitmq-default-exchange"])
def test_options_under_which_a_system_cannot_carry_keys_are_refused(tmp_path, driver,
                                                                    options, says):
    (tmp_path / "s.yaml").write_text(SCENARIO.format(
        keys="{count: 10}", driver=driver, mode="one-way", size=64).replace(
        f"driver: {driver},", f"driver: {driver}, options: {options},"))
    done = sixnines("validate", "s.yaml", cwd=tmp_path)
    assert done.returncode == 2
    assert f"s.yaml:{SYSTEM_LINE}: systems[0]: {says}" in done.stderr
