"""`message_size` as a distribution, as `sixnines validate` reads it through the real CLI:
a sweep of every form is accepted on a driver that carries varying sizes, and each
malformed or unsupported one is one FILE:LINE line (exit 2, never a traceback)."""

from __future__ import annotations

from pathlib import Path

import pytest

from sixnines.drivers.base import fixed_size_problem
from tests.faults.support import sixnines

SCENARIO = """\
name: sizes
systems:
  - {{name: {driver}, driver: {driver}, broker: {broker}}}
workload:
  mode: {mode}
  message_size: {sizes}
  rate: 100
  duration: 1s
"""
SYSTEM_LINE, SIZE_LINE = 3, 6


def validate(folder: Path, sizes: str, driver: str = "tcp", mode: str = "one-way",
             broker: str = "builtin"):
    (folder / "s.yaml").write_text(SCENARIO.format(sizes=sizes, driver=driver, mode=mode,
                                                   broker=broker))
    return sixnines("validate", "s.yaml", cwd=folder)


def test_every_form_of_distribution_is_a_run_of_its_own_named_as_written(tmp_path):
    (tmp_path / "sizes.txt").write_text("64\n1KB\n300\n")
    done = validate(tmp_path, "[{uniform: [64, 4KB]}, {lognormal: {median: 512, p99: 16KB}}, "
                              "{64: 0.7, 1KB: 0.25, 64KB: 0.05}, {file: sizes.txt}, 256, "
                              "{64: 1}]")
    assert done.returncode == 0, done.stderr
    assert "s.yaml: ok, 6 run(s)" in done.stderr
    for run_id in ("01-tcp-message_size=uniform-64-4KB", "02-tcp-message_size=lognormal-512-16KB",
                   "03-tcp-message_size=weighted-64-0.7-1KB-0.25-64KB-0.05",
                   "04-tcp-message_size=file=sizes.txt", "05-tcp-message_size=256",
                   "06-tcp-message_size=weighted-64-1"):
        assert f"  {run_id}\n" in done.stderr


@pytest.mark.parametrize(("sizes", "says"), [
    ("{uniform: [10, 100]}", "its smallest size, 10 B, is below the 28-byte message header"),
    ("{20: 0.5, 1KB: 0.5}", "its smallest size, 20 B, is below the 28-byte message header"),
    ("{lognormal: {median: 20, p99: 1KB}}", "the lognormal's median 20 B is below the 28-byte"),
    ("{uniform: [64, 2GB]}", "its largest size, 2GiB, is above the largest message (1GiB)"),
    ("{file: missing.txt}", "file: cannot read"),
    ("{uniform: [64, 1KB], file: x}", "a distribution is one of"),
])
def test_a_distribution_that_cannot_be_sent_is_refused_at_its_line(tmp_path, sizes, says):
    done = validate(tmp_path, sizes)
    assert done.returncode == 2
    assert f"s.yaml:{SIZE_LINE}: workload.message_size" in done.stderr
    assert says in done.stderr
    assert "Traceback" not in done.stderr


def test_a_driver_that_sends_one_size_is_refused_by_name(tmp_path):
    """RabbitMQ copies a body over one frame into a template of one size."""
    done = validate(tmp_path, "{64: 0.5, 1MB: 0.5}", driver="rabbitmq",
                    broker="{recipe: rabbitmq}")
    assert done.returncode == 2
    assert f"s.yaml:{SYSTEM_LINE}: systems[0]: {fixed_size_problem('rabbitmq')}" in done.stderr


def test_rabbitmq_carries_sizes_whose_bodies_fit_one_frame(tmp_path):
    done = validate(tmp_path, "{64: 0.5, 64KB: 0.5}", driver="rabbitmq",
                    broker="{recipe: rabbitmq}")
    assert done.returncode == 0, done.stderr


def test_a_distribution_needs_one_way_mode(tmp_path):
    done = validate(tmp_path, "{64: 0.5, 1KB: 0.5}", mode="round-trip")
    assert done.returncode == 2
    assert "a distribution of sizes needs mode 'one-way'" in done.stderr


def validate_with(folder: Path, sizes: str, field: str, value: str):
    """`validate` of a kafka system (it carries keys and keeps a backlog) with `field`."""
    (folder / "s.yaml").write_text(SCENARIO.format(
        sizes=sizes, driver="kafka", mode="one-way",
        broker='{external: "127.0.0.1:9"}').replace("duration: 1s", "duration: 3s")
        + f"  {field}: {value}\n")
    return sixnines("validate", "s.yaml", cwd=folder)


@pytest.mark.parametrize(("field", "value"), [
    ("keys", "{count: 10, zipf: 1.1}"),
    ("backlog", "{build: 1s, drain_within: 1s}"),
    ("backlog", "{build: 50 messages, drain_within: 1s}"),
    ("backlog", "{build: 5KB, drain_within: 1s}"),
])
def test_keys_and_backlogs_ride_on_sizes_that_vary(tmp_path, field, value):
    done = validate_with(tmp_path, "{64: 1, 128: 1}", field, value)
    assert done.returncode == 0, done.stderr


@pytest.mark.parametrize(("sizes", "says"), [
    ("{30: 1, 128: 1}", "its smallest size, 30 B, is below the 32-byte keyed header (the key "
                        "index follows the 28-byte message header)"),
    ("{lognormal: {median: 30, p99: 1KB}}", "the lognormal's median 30 B is below the 32-byte "
                                            "keyed header"),
    ("{64: 1, 2MB: 1}", "its largest size, 2097152 B, is above the largest keyed message, "
                        "1 MiB"),
])
def test_keyed_sizes_must_hold_the_key_and_fit_a_keyed_ring(tmp_path, sizes, says):
    done = validate_with(tmp_path, sizes, "keys", "{count: 10}")
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert f"s.yaml:{SIZE_LINE}: workload.message_size: {says}" in done.stderr


def test_a_backlog_in_bytes_of_sizes_from_a_file_is_refused_at_its_line(tmp_path):
    """Bytes are counted in messages of the sizes' mean: a file's is known only when the
    run reads it."""
    (tmp_path / "sizes.txt").write_text("64\n1KB\n")
    done = validate_with(tmp_path, "{file: sizes.txt}", "backlog",
                         "{build: 5KB, drain_within: 1s}")
    assert done.returncode == 2 and "Traceback" not in done.stderr
    (line,) = done.stderr.strip().splitlines()
    assert line.startswith("s.yaml:9: workload.backlog: a build in bytes is counted in "
                           "messages of the sizes' mean")
