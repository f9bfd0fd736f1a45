"""A classic shape run for real, scaled down: examples/size-latency.yaml (round-trip latency
vs message size, raw TCP beside ZeroMQ) at three sizes and about a second per run, through
the CLI, ending in the report's sweep plots and their gnuplot data."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from sixnines.orchestrator.scenario.model import load_scenario

pytestmark = pytest.mark.integration

EXAMPLE = Path(__file__).parents[2] / "examples" / "size-latency.yaml"
SIZES = [28, 1024, 65536]  # the smallest message sixnines sends, 1 KB, 64 KB
SYSTEMS = ["tcp", "zmq"]
SWEEP_PLOTS = ("latency-log", "latency-linear", "throughput", "density")


def scaled_down(work: Path) -> Path:
    """The example as shipped, with three of its sizes and a short run each."""
    assert set(SIZES) <= set(load_scenario(EXAMPLE).workload.message_size)
    scenario = yaml.safe_load(EXAMPLE.read_text(encoding="utf-8"))
    scenario["workload"].update(message_size=SIZES, duration="1s", warmup="200ms")
    path = work / EXAMPLE.name
    path.write_text(yaml.safe_dump(scenario), encoding="utf-8")
    return path


def _rows_per_block(dat: str) -> list[list[float]]:
    """The x values of each block (series) of a gnuplot data file."""
    return [[float(line.split()[0]) for line in block.splitlines()
             if line.strip() and not line.startswith("#")]
            for block in re.split(r"\n\n\n", dat)]


@pytest.fixture(scope="module")
def results(tmp_path_factory) -> Path:
    work = tmp_path_factory.mktemp("classic")
    done = subprocess.run([sys.executable, "-m", "sixnines", "run",
                           str(scaled_down(work)), "--output", str(work / "out")],
                          cwd=work, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    return Path(done.stdout.strip().splitlines()[-1])


def test_every_run_is_ok(results):
    runs = json.loads((results / "summary.json").read_text())["runs"]
    assert [(r["system"], r["params"]["message_size"]) for r in runs] == [
        (system, size) for system in SYSTEMS for size in SIZES]
    for run in runs:
        assert run["status"] == "ok", (run["run_id"], run["problems"])
        assert run["params"]["mode"] == "round-trip"
        assert run["lost"] == 0 and run["latency_us"]["count"] > 0
        assert run["density_us"] > 0 and run["throughput"]["bytes_per_s"]["receiver"] > 0


def test_the_sweep_plots_hold_one_row_per_size_per_system(results):
    report = results / "report"
    page = (report / "index.html").read_text(encoding="utf-8")
    for plot in SWEEP_PLOTS:
        slug = f"sweep-message_size-{plot}"
        assert f'id="fig-{slug}"' in page
        blocks = _rows_per_block((report / f"{slug}.dat").read_text(encoding="utf-8"))
        # latency: p50 and p99 per system; throughput: received and sent; density: one
        assert len(blocks) == (1 if plot == "density" else 2) * len(SYSTEMS), plot
        assert all(xs == SIZES for xs in blocks), (plot, blocks)
    assert "Round-trip latency" in (report / "sweep-message_size-latency-log.gp").read_text()
