"""`sixnines run` with an override, as a user runs it: the runs use the value given on the
command line over the file's, the console says so, and every manifest and the results'
copy of the scenario record it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sixnines.formats.layout import MANIFEST_FILE, SCENARIO_FILE
from sixnines.orchestrator.results.store import find_run_dirs
from tests.faults.support import sixnines

pytestmark = pytest.mark.integration

FILE_RATE, RATE = 1000, 400  # msg/s: the file's, and the override's
SCENARIO = f"""\
name: overridden
systems: [{{name: tcp, driver: tcp}}]
workload: {{message_size: 64, rate: {FILE_RATE}, duration: 1s, warmup: 0s, drain: 1s}}
"""


def test_a_run_uses_and_records_the_rate_set_on_the_command_line(tmp_path: Path) -> None:
    (tmp_path / "s.yaml").write_text(SCENARIO)
    done = sixnines("run", "s.yaml", "--output", "runs", "--no-analysis",
                    "--set", f"workload.rate={RATE}", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stderr.splitlines()[0] == f"s.yaml with --set workload.rate={RATE}"
    results = tmp_path / done.stdout.strip().splitlines()[-1]
    (run_dir,) = find_run_dirs(results)
    manifest = json.loads((run_dir / MANIFEST_FILE).read_text())
    assert manifest["status"] == "ok", manifest["problems"]
    assert manifest["overrides"] == [f"workload.rate={RATE}"]
    assert manifest["params"]["rate"] == RATE
    senders = [agent for agent in manifest["agents"] if agent["role"] == "producer"]
    assert sum(agent["sent"] for agent in senders) == RATE  # 1 s at the rate given
    kept = (results / SCENARIO_FILE).read_text()
    assert kept.endswith(SCENARIO)  # the file as written, the override heading it
    assert f"#   --set workload.rate={RATE}\n" in kept
