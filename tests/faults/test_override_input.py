"""Overrides on the command line that cannot be set or break the scenario: each refused as
`FLAG: PATH: MESSAGE` (the flag as given in place of the file's line), all of them at once,
exit 2, no traceback, nothing started or written; by `validate`, `run` and `hosts check`
alike."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.faults.support import refused, sixnines
from tests.test_overrides import SCENARIO

CASES = """\
name: cased
systems: [{name: tcp, driver: tcp}]
workload: {message_size: 64, rate: 500, duration: 1s}
cases:
  - {name: slow}
  - {name: fast, rate: 1000}
"""
PATHS = "(keys joined by dots, a list item as [N] or [NAME]: e.g. workload.rate, " \
    "systems[0].broker.recipe)"

#: (arguments, the line they are refused with)
REFUSED = [
    (["--set", "workload.rat=20k"],
     "--set workload.rat=20k: workload.rat: unknown field (did you mean 'rate'?)"),
    (["--set", "wrkload.rate=20k"],
     "--set wrkload.rate=20k: wrkload: unknown field (did you mean 'workload'?)"),
    (["--set", "systems[0].options.nodelay=maybe"],
     "--set systems[0].options.nodelay=maybe: systems[0].options.nodelay: must be true or "
     "false"),
    (["--size", "10"],
     "--size 10: workload.message_size: must be at least 28 bytes (the message header)"),
    (["--duration", "10 parsecs"],
     "--duration 10 parsecs: workload.duration: '10 parsecs' is not a duration: use e.g. "
     "10s, 500ms, 2m"),
    (["--producers", "0"], "--producers 0: workload.producers: must be at least 1"),
    (["--set", "systems[kafka].driver=tcp"],
     "--set systems[kafka].driver=tcp: no item of systems is named 'kafka' (names: tcp)"),
    (["--set", "systems[3].driver=tcp"],
     "--set systems[3].driver=tcp: systems has 1 item(s): [0] to [0]"),
    (["--set", "name.first=x"], "--set name.first=x: name: must be a string"),
    (["--set", "workload.seed[0]=1"], "--set workload.seed[0]=1: workload.seed is no list "
     "to pick item [0] of"),
    (["--set", "workload.rate"], f"--set workload.rate: give PATH=VALUE {PATHS}"),
    (["--set", "workload..rate=1"],
     f"--set workload..rate=1: 'workload..rate' is not a field path {PATHS}"),
    (["--set", "workload.consumers=[1"],
     "--set workload.consumers=[1: the value is not YAML: while parsing a flow sequence: "
     "expected ',' or ']', but got '<stream end>'"),
]


def test_every_refused_override_is_told_against_its_flag_at_once(tmp_path: Path) -> None:
    (tmp_path / "s.yaml").write_text(SCENARIO)
    done = sixnines("validate", "s.yaml", *(arg for args, _ in REFUSED for arg in args),
                    cwd=tmp_path)
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr
    assert sorted(done.stderr.splitlines()) == sorted(line for _, line in REFUSED)


@pytest.mark.parametrize("command", [["validate"], ["run", "--output", "runs"],
                                     ["hosts", "check"]])
def test_a_bad_value_is_refused_before_anything_starts(command: list[str], tmp_path: Path
                                                       ) -> None:
    (tmp_path / "s.yaml").write_text(SCENARIO)
    line = refused(sixnines(*command, "s.yaml", "--set", "workload.rate=abc", cwd=tmp_path))
    assert line == ("--set workload.rate=abc: workload.rate: 'abc' is not a rate: use e.g. "
                    "2000, 20k, 1.5M, 500/s, or max")
    assert not (tmp_path / "runs").exists()


def test_a_base_field_every_case_sets_itself_is_refused_naming_the_cases(tmp_path: Path
                                                                         ) -> None:
    (tmp_path / "s.yaml").write_text(CASES)
    line = refused(sixnines("validate", "s.yaml", "--rate", "20k", cwd=tmp_path))
    assert line == ("--rate 20k: cases[1] set rate over workload's, so this would not reach "
                    "them: set it there (--set cases[1].rate=…)")
    done = sixnines("validate", "s.yaml", "--set", "cases[fast].rate=20k", cwd=tmp_path)
    assert done.returncode == 0, done.stderr


def test_a_problem_in_the_file_keeps_its_line_beside_the_flags(tmp_path: Path) -> None:
    (tmp_path / "s.yaml").write_text(SCENARIO.replace("rate: 1000", "rate: fast"))
    done = sixnines("validate", "s.yaml", "--size", "10", cwd=tmp_path)
    assert done.returncode == 2, done.stderr
    assert done.stderr.splitlines() == [
        "s.yaml:5: workload.rate: 'fast' is not a rate: use e.g. 2000, 20k, 1.5M, 500/s, or max",
        "--size 10: workload.message_size: must be at least 28 bytes (the message header)"]


def test_an_inventory_takes_no_override(tmp_path: Path) -> None:
    (tmp_path / "hosts.yaml").write_text("hosts: []\n")
    line = refused(sixnines("hosts", "check", "hosts.yaml", "--rate", "1k", cwd=tmp_path))
    assert line == ("--rate 1k: hosts.yaml is an inventory, which takes no override (they "
                    "set fields of a scenario)")
