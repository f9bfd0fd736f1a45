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


@pytest.mark.parametrize(("field", "value", "says"), [
    ("keys", "{count: 10}", "keys with sizes that vary: not yet"),
    ("backlog", "{build: 1s, drain_within: 1s}", "backlog with sizes that vary: not yet"),
])
def test_keys_and_backlogs_need_one_size_for_now(tmp_path, field, value, says):
    (tmp_path / "s.yaml").write_text(SCENARIO.format(
        sizes="{64: 1, 128: 1}", driver="kafka", mode="one-way",
        broker='{external: "127.0.0.1:9"}').replace("duration: 1s", "duration: 3s")
        + f"  {field}: {value}\n")
    done = sixnines("validate", "s.yaml", cwd=tmp_path)
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert f"workload.{field}: {says}" in done.stderr
