"""The README is where people start: every scenario it shows is one `sixnines validate`
accepts, checked by the real command as a reader would run it, and its test command is the
one CI runs (.ci/run)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.faults.support import sixnines

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text(encoding="utf-8")
SCENARIOS = re.findall(r"^```yaml\n(.*?)^```", README, re.MULTILINE | re.DOTALL)
COMMANDS = re.findall(r"^```sh\n(.*?)^```", README, re.MULTILINE | re.DOTALL)


def name_of(scenario: str) -> str:
    found = re.search(r"^name: (\S+)", scenario, re.MULTILINE)
    assert found, f"a README scenario without a name:\n{scenario}"
    return found[1]


def test_the_readme_shows_a_scenario_for_each_common_question():
    assert [name_of(s) for s in SCENARIOS] == ["my-rabbitmq", "rabbitmq-vs-nats",
                                               "rabbitmq-capacity", "rabbitmq-on-three-hosts",
                                               "relay-faults"]


@pytest.mark.parametrize("scenario", SCENARIOS, ids=name_of)
def test_every_scenario_in_the_readme_validates(scenario: str, tmp_path: Path) -> None:
    (tmp_path / "my.yaml").write_text(scenario)
    checked = sixnines("validate", "my.yaml", cwd=tmp_path)
    verdict, *lines = checked.stderr.splitlines() or [""]
    problems = [line for line in lines if line.startswith("my.yaml: ")]
    if verdict.startswith("my.yaml: cannot run on this machine") and problems and \
            all("not installed" in problem for problem in problems):
        pytest.skip(f"a broker program is not installed here: {problems[0]}")
    assert checked.returncode == 0 and verdict.startswith("my.yaml: ok"), checked.stderr


def test_the_two_commands_are_the_quickstart_and_what_ci_runs():
    first, second = (block.strip() for block in COMMANDS[:2])
    assert first == "deploy/setup.sh && .venv/bin/sixnines run examples/quickstart.yaml"
    assert second == "deploy/setup.sh --test && .venv/bin/pytest"
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8").splitlines()[-1]
    setup, *_, tests = ci.split(" && ")
    assert (setup, tests) == tuple(second.split(" && ")), ci
