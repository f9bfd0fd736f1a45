"""Files a scenario names beside itself (a file of sizes) gone while its sweep runs: each
run that cannot read it fails as a run, with its manifest saying why, and the sweep goes
on to its end."""

from __future__ import annotations

import json
import subprocess
import sys
import time

import pytest

from tests.faults.support import failed_cleanly

pytestmark = pytest.mark.integration

SWEEP = """
name: gone
systems: [{name: tcp, driver: tcp}]
workload: {message_size: {file: sizes.txt}, rate: [500, 600], duration: 2s, warmup: 0s}
"""


def test_a_file_of_sizes_gone_mid_sweep_fails_the_later_run_with_its_manifest(tmp_path):
    (tmp_path / "scenario.yaml").write_text(SWEEP)
    sizes = tmp_path / "sizes.txt"
    sizes.write_text("64\n128\n256\n")
    sweep = subprocess.Popen([sys.executable, "-m", "sixnines", "run", "scenario.yaml",
                              "--output", "runs"], cwd=tmp_path, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 120
        while not list((tmp_path / "runs").glob("*/*/01-*/manifest.json")):
            assert time.monotonic() < deadline and sweep.poll() is None, "no first run"
            time.sleep(0.05)
        sizes.unlink()  # the first run may or may not have read it: the second cannot
        out, err = sweep.communicate(timeout=300)
    finally:
        sweep.kill()
        sweep.wait()
    failed_cleanly(subprocess.CompletedProcess(sweep.args, sweep.returncode, out, err))
    second = list((tmp_path / "runs").glob("*/*/02-*/manifest.json"))
    assert len(second) == 1, err
    manifest = json.loads(second[0].read_text())
    assert manifest["status"] == "failed"
    assert any(problem.startswith("message_size: cannot read 'sizes.txt'")
               for problem in manifest["problems"]), manifest["problems"]
