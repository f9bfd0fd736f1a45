"""Plans that cannot fit the machine are refused before anything starts, with the numbers
(5M msg/s for an hour: half a terabyte of files; agents that record in chunks need the
same memory for it as for a minute); and the estimate is checked
against what real agents use, so it cannot drift below reality unnoticed."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys

import pytest

from sixnines.orchestrator.plan import footprint
from sixnines.orchestrator.scenario.matrix import expand
from sixnines.orchestrator.scenario.model import load_scenario
from tests.faults.processes import Sixnines

HUGE = """
name: huge
systems: [{name: tcp, driver: tcp}]
workload: {message_size: 64, rate: 5M, duration: 1h}
"""


@pytest.mark.parametrize("command", ["validate", "run"])
def test_a_plan_bigger_than_the_machine_is_refused_before_anything_starts(tmp_path, command):
    """With chunks streaming (opt-in) an hour needs no more memory, only disk."""
    (tmp_path / "huge.yaml").write_text(HUGE)
    done = subprocess.run([sys.executable, "-m", "sixnines", command, "huge.yaml"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=120,
                          env={**os.environ, "SIXNINES_CHUNK_ROWS": str(1 << 19)})
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr
    assert re.search(r"huge.yaml: the runs' files need about 537.3 GB under runs, but "
                     r"[\d.,]+ [GM]B is free there: free some space", done.stderr)
    assert "of memory on host" not in done.stderr  # chunks: an hour needs no more memory
    assert not (tmp_path / "runs").exists()
    if command == "validate":
        assert "cannot run on this machine" in done.stderr and "estimate:" in done.stderr


@pytest.mark.integration
def test_the_estimate_bounds_what_real_agents_use(tmp_path):
    """800,000 messages through the relay: each agent's peak memory stays under its
    estimate, and not far under it (an estimate that is all margin refuses good plans)."""
    (tmp_path / "s.yaml").write_text("""
name: fit
systems: [{name: tcp, driver: tcp}]
workload: {message_size: 64, rate: 400k, duration: 2s, warmup: 0s, drain: 2s}
""")
    needs = {need.plan.agent_id: need
             for need in footprint.agent_needs(expand(load_scenario(tmp_path / "s.yaml"))[0])}
    controller = Sixnines("run", "s.yaml", "--output", "out", "--no-analysis", cwd=tmp_path)
    peaks = controller.peak_memory("-m sixnines.agents")
    controller.finish()
    manifest = json.loads(next(tmp_path.glob("out/fit/*/*/manifest.json")).read_text())
    for agent in manifest["agents"]:
        need = needs[agent["id"]]
        used = peaks[agent["pid"]]
        assert used <= need.memory, (agent["id"], used, need.memory)
        assert used >= need.memory / 3, (agent["id"], used, need.memory)
        written = sum(f["bytes"] for f in agent["artifacts"].values())
        assert written <= need.disk, (agent["id"], written, need.disk)
