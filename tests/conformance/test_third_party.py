"""The suite as a third party uses it: examples/driver (a driver distribution of its own,
registered through the `sixnines.drivers` entry points) installed into a throwaway
directory, then tested by `python -m sixnines.testing` and by its own subclass of
DriverConformance. Its lossy twin must fail exactly the cases that count deliveries."""

from __future__ import annotations

import os
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

pytestmark = [pytest.mark.integration, pytest.mark.timeout(600)]

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "driver"
DELIVERY_CASES = {"one_way", "fan_out", "several_connections", "one_large_batch",
                  "large_messages", "round_trip", "round_trip_several_requesters",
                  "round_trip_large_messages", "broker_killed", "pollable_signals_held_messages",
                  "lanes_divide_the_load"}


@pytest.fixture(scope="module")
def installed(tmp_path_factory) -> dict[str, str]:
    """The example installed with pip into a directory of its own; the environment that
    puts it on the path."""
    target = tmp_path_factory.mktemp("site")
    done = subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps",
                           "--no-build-isolation", "--target", str(target), str(EXAMPLE)],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    return {**os.environ, "PYTHONPATH": str(target)}


def outcomes(env: dict[str, str], cwd: Path, *argv: str) -> tuple[int, dict[str, str]]:
    """Runs `argv` (a pytest run writing junit XML); exit status and outcome by case (and
    the run's output, under "output")."""
    report = cwd / "report.xml"
    done = subprocess.run([sys.executable, *argv, f"--junitxml={report}", "-q"], env=env,
                          cwd=cwd, capture_output=True, text=True, timeout=500)
    cases = {}
    for case in ET.parse(report).iter("testcase"):
        name = case.get("name").removeprefix("test_")
        kinds = {child.tag for child in case}
        outcome = next((k for k in ("failure", "error", "skipped") if k in kinds), "passed")
        cases[name] = outcome if cases.get(name, "passed") == "passed" else cases[name]
    cases["output"] = done.stdout[-3000:]
    return done.returncode, cases


def failed(cases: dict[str, str]) -> set[str]:
    return {name.split("[")[0] for name, outcome in cases.items()
            if name != "output" and outcome in ("failure", "error")}


def test_the_command_line_passes_a_good_driver(installed, tmp_path):
    status, cases = outcomes(installed, tmp_path, "-m", "sixnines.testing", "--driver", "hub")
    assert status == 0 and not failed(cases), cases["output"]
    assert cases["one_way"] == cases["broker_killed"] == "passed"  # its builtin broker


def test_the_command_line_fails_a_lossy_driver_where_it_loses(installed, tmp_path):
    status, cases = outcomes(installed, tmp_path, "-m", "sixnines.testing",
                             "--driver", "hub-lossy")
    assert status == 1, cases["output"]
    assert failed(cases) == DELIVERY_CASES, cases["output"]


def test_a_subclass_runs_the_suite_with_a_login(installed, tmp_path):
    status, cases = outcomes(installed, tmp_path, "-m", "pytest", "-p", "no:cacheprovider",
                             str(EXAMPLE / "tests"), "-k", "TestHub")
    assert status == 0, cases["output"]
    assert cases["wrong_credentials[sender]"] == "passed"
    assert {name.split("[")[0] for name in cases} >= DELIVERY_CASES | {"unreachable"}
    assert not failed(cases), cases["output"]


def test_validate_refuses_keys_for_a_driver_that_cannot_carry_them(installed, tmp_path):
    """A driver that says nothing of keys (`Driver.carries_keys`) is refused a keyed
    workload by name, at its system's line."""
    (tmp_path / "s.yaml").write_text(
        "name: keyed\nsystems: [{name: hub, driver: hub, broker: builtin}]\n"
        "workload: {message_size: 64, rate: 100, duration: 1s, keys: {count: 10}}\n")
    done = subprocess.run([sys.executable, "-m", "sixnines", "validate", "s.yaml"],
                          env=installed, cwd=tmp_path, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 2
    assert done.stderr.strip() == (
        "s.yaml:2: systems[0]: hub: cannot carry message keys (workload keys count=10); "
        "leave keys out for this system, or use one that carries them (kafka, nats, "
        "rabbitmq, redis, tcp, zmq)")
