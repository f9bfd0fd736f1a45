"""Overrides on the command line (`--set PATH=VALUE` and the short flags) and what
`validate` says it read where a unit was guessed, through the real `sixnines` command
(validate and hosts check of a scenario without hosts: nothing is started). Refused
overrides: tests/faults/test_override_input.py; a run with one: tests/integration."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from pydantic import BaseModel

from sixnines.drivers import registry
from sixnines.orchestrator.scenario import units
from sixnines.orchestrator.scenario.hosts import Inventory
from sixnines.orchestrator.scenario.model import CaseScenario
from tests.faults.support import refused, sixnines

SCENARIO = """\
name: small
systems: [{name: tcp, driver: tcp}]
workload:
  message_size: 64
  rate: 1000
  duration: 1s
"""


@pytest.fixture
def scenario(tmp_path: Path) -> Path:
    (tmp_path / "s.yaml").write_text(SCENARIO)
    return tmp_path


def test_overrides_are_read_as_the_file_and_said(scenario: Path) -> None:
    done = sixnines("validate", "s.yaml", "--size", "[64, 1KB]", "--set", "workload.rate=20k",
                    "--duration", "5", "--set", "systems[tcp].options.nodelay=false",
                    cwd=scenario)
    assert done.returncode == 0, done.stderr
    lines = done.stderr.splitlines()
    assert lines[:3] == [
        "s.yaml with --size [64, 1KB] --set workload.rate=20k --duration 5 --set "
        "systems[tcp].options.nodelay=false: ok, 2 run(s)",
        "  01-tcp-message_size=64", "  02-tcp-message_size=1KB"]
    assert lines[3:7] == [
        "read as:",
        "  --size [64, 1KB]: workload.message_size[1]: 1KB → 1,024 B (KB read as KiB)",
        "  --set workload.rate=20k: workload.rate: 20k → 20,000 msg/s",
        "  --duration 5: workload.duration: 5 → 5 s (no unit: seconds)"]


def test_the_last_override_of_a_field_wins(scenario: Path) -> None:
    done = sixnines("validate", "s.yaml", "--set", "workload.rate=abc", "--rate", "2k",
                    cwd=scenario)
    assert done.returncode == 0, done.stderr
    assert "  --rate 2k: workload.rate: 2k → 2,000 msg/s" in done.stderr.splitlines()
    line = refused(sixnines("validate", "s.yaml", "--rate", "2k", "--set",
                            "workload.rate=abc", cwd=scenario))
    assert line.startswith("--set workload.rate=abc: workload.rate: 'abc' is not a rate")


UNITS = """\
name: units
systems: [{name: tcp, driver: tcp}]
cpu_sample: 0.1
workload:
  message_size: [64, 1KiB, 2kb]
  duration: 5
  warmup: 500ms
  drain: 2m
cases:
  - {name: fixed, rate: 20k}
  - {name: plain, rate: 2000}
  - name: search
    rate: {search: max, objective: {p99: 1ms, p99.9: 0.01}, from: 5k, to: 2M, max_time: 10m}
"""


def test_validate_lists_each_value_whose_unit_was_guessed_and_no_other(tmp_path: Path
                                                                       ) -> None:
    (tmp_path / "s.yaml").write_text(UNITS)
    done = sixnines("validate", "s.yaml", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    lines = done.stderr.splitlines()
    start = lines.index("read as:")
    assert lines[start:lines.index("estimate:")] == [
        "read as:",
        "  s.yaml:3: cpu_sample: 0.1 → 0.1 s (no unit: seconds)",
        "  s.yaml:5: workload.message_size[2]: 2kb → 2,048 B (kb read as KiB)",
        "  s.yaml:6: workload.duration: 5 → 5 s (no unit: seconds)",
        "  s.yaml:8: workload.drain: 2m → 120 s (m: minutes)",
        "  s.yaml:10: cases[0].rate: 20k → 20,000 msg/s",
        "  s.yaml:13: cases[2].rate.from: 5k → 5,000 msg/s",
        "  s.yaml:13: cases[2].rate.to: 2M → 2,000,000 msg/s",
        "  s.yaml:13: cases[2].rate.max_time: 10m → 600 s (m: minutes)",
        "  s.yaml:13: cases[2].rate.objective.p99.9: 0.01 → 0.01 s (no unit: seconds)"]


def test_validate_says_nothing_read_where_every_unit_is_written(scenario: Path) -> None:
    done = sixnines("validate", "s.yaml", cwd=scenario)
    assert done.returncode == 0, done.stderr
    assert "read as:" not in done.stderr


@pytest.mark.parametrize(("value", "read_as"), [
    ("1KB", "1,024 B (KB read as KiB)"), ("1.5 mb", "1,572,864 B (mb read as MiB)"),
    (64, None), ("512B", None), ("4KiB", None), ("1GiB", None)])
def test_a_size_is_said_where_its_unit_means_1000_elsewhere(value, read_as) -> None:
    assert units.size_reading(value) == read_as


@pytest.mark.parametrize(("value", "read_as"), [
    (5, "5 s (no unit: seconds)"), ("2.5", "2.5 s (no unit: seconds)"),
    ("1.5m", "90 s (m: minutes)"), (0, None), ("0", None), ("10s", None), ("500ms", None),
    ("1h", None), (None, None)])
def test_a_duration_is_said_without_its_unit_or_in_minutes(value, read_as) -> None:
    assert units.duration_reading(value) == read_as


@pytest.mark.parametrize(("value", "read_as"), [
    ("20k", "20,000 msg/s"), ("1.5M", "1,500,000 msg/s"), ("2.5k msg/s", "2,500 msg/s"),
    (2000, None), ("500/s", None), ("max", None)])
def test_a_rate_is_said_where_a_k_or_m_multiplies_it(value, read_as) -> None:
    assert units.rate_reading(value) == read_as


def test_hosts_check_reads_the_scenario_with_its_overrides(scenario: Path) -> None:
    done = sixnines("hosts", "check", "s.yaml", "--rate", "5k", cwd=scenario)
    assert done.returncode == 0, done.stderr
    assert "names no hosts besides local" in done.stderr
    line = refused(sixnines("hosts", "check", "s.yaml", "--rate", "abc", cwd=scenario))
    assert line.startswith("--rate abc: workload.rate: 'abc' is not a rate")


#: Where a credential is, never the credential: what names one must end so.
REFERENCE = re.compile(r".*_(env|file)")
CREDENTIAL = re.compile(r".*(password|passwd|token|secret|credential)")


def _fields(model: type[BaseModel], seen: set[type]) -> list[str]:
    """Every field name of `model` and of the models its fields hold, once each."""
    if model in seen:
        return []
    seen.add(model)
    found = []
    for name, field in model.model_fields.items():
        found.append(name)
        pending = [field.annotation]
        while pending:
            annotation = pending.pop()
            if isinstance(annotation, type) and issubclass(annotation, BaseModel):
                found += _fields(annotation, seen)
            pending += getattr(annotation, "__args__", ())
    return found


def test_no_field_an_override_can_set_holds_a_credential() -> None:
    """Overrides are printed and recorded as given: that is safe while the scenario, its
    inventory and every driver's options hold where a credential is, never one."""
    seen: set[type] = set()
    models = [CaseScenario, Inventory, *(registry.load(name).Options
                                         for name in registry.available())]
    names = [name for model in models for name in _fields(model, seen)]
    assert "password_env" in names
    assert [name for name in names if CREDENTIAL.match(name) and
            not REFERENCE.fullmatch(name)] == []
