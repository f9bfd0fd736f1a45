"""Orchestration overhead: what SSH hosts add to a run, over the same run on this machine.

For each placement — local only; 1 SSH host (broker and agents on it); 3 SSH hosts (broker
on one, a producer/consumer pair on each of the others) — it times, in the controller:

- start-up: from `run_scenario` being called to the first scheduled message (the start
  instant the agents were given), host preparation included with the bootstrap cached;
- wind-down: from the last scheduled message to the results on disk (agents finished,
  files fetched and verified, everything stopped, manifest written; no Spark).

The hosts are test-bed hosts (deploy/testbed: network namespaces with their own sshd), so
the network is loopback-fast and the figures are the orchestration's own cost. Each
placement runs `--repeat` times and the median is printed, with the difference to local.

    .venv/bin/python benchmarks/bench_orchestration.py [--repeat 3] [--seconds 2] [--smoke]
"""

from __future__ import annotations

import argparse
import io
import json
import os
import statistics
import sys
import tempfile
import textwrap
import time
from pathlib import Path

from rich.console import Console

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import common

from sixnines.formats.layout import MANIFEST_FILE
from sixnines.orchestrator.controller import run_scenario
from sixnines.orchestrator.run.fleet import Fleet
from sixnines.orchestrator.scenario.model import load_scenario
from tests.integration.testbed import testbed

PLACEMENTS = {
    "local": None,
    "1 SSH host": "{broker: h1, agents: [h1]}",
    "3 SSH hosts": "{broker: h1, agents: [h2, h3]}",
}
RATE = 1000


def scenario(work: Path, inventory: Path, placement: str | None, seconds: int) -> Path:
    text = textwrap.dedent(f"""\
        name: overhead
        systems: [{{name: tcp, driver: tcp}}]
        workload: {{message_size: 256, rate: {RATE}, duration: {seconds}s, warmup: 0s,
                    producers: 2, consumers: 2}}
        inventory: {inventory}
        output: {work / "runs"}
        """)
    if placement:
        text += f"placement: {placement}\n"
    path = work / f"scenario-{abs(hash(placement))}.yaml"
    path.write_text(text)
    return path


def measure(path: Path, seconds: int) -> tuple[float, float]:
    """(start-up s, wind-down s) of one run of the scenario at `path`, `seconds` long."""
    loaded = load_scenario(path)
    began = time.perf_counter_ns()
    outcome = run_scenario(loaded, path, output=None, spark_master=None,
                           console=Console(file=io.StringIO()))
    ended = time.perf_counter_ns()
    if outcome.statuses != ["ok"]:
        raise SystemExit(f"the run in {outcome.results_dir} was {outcome.statuses}")
    (manifest_path,) = outcome.results_dir.glob(f"*/{MANIFEST_FILE}")
    t0 = json.loads(manifest_path.read_text())["started_at_ns"]
    last = t0 + seconds * 1_000_000_000
    return (t0 - began) / 1e9, (ended - last) / 1e9


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--seconds", type=int, default=2, help="each run's duration")
    args = common.arguments(parser, smoke={"repeat": 1, "seconds": 1})
    with tempfile.TemporaryDirectory() as tmp, testbed(3) as bed:
        work = Path(tmp)
        paths = {name: scenario(work, bed.inventory, p, args.seconds)
                 for name, p in PLACEMENTS.items()}
        Fleet.for_scenario(load_scenario(paths["3 SSH hosts"])).prepare()  # bootstrap cached
        figures = {name: [measure(path, args.seconds) for _ in range(args.repeat)]
                   for name, path in paths.items()}
    print(f"orchestration overhead, median of {args.repeat} (load average "
          f"{os.getloadavg()[0]:.1f} on {os.cpu_count()} cores)")
    print(f"{'placement':<12} {'start-up s':>11} {'added':>7} {'wind-down s':>12} {'added':>7}")
    base_up = statistics.median(up for up, _ in figures["local"])
    base_down = statistics.median(down for _, down in figures["local"])
    for name, runs in figures.items():
        up = statistics.median(u for u, _ in runs)
        down = statistics.median(d for _, d in runs)
        print(f"{name:<12} {up:>11.2f} {up - base_up:>+7.2f} {down:>12.2f} "
              f"{down - base_down:>+7.2f}")


if __name__ == "__main__":
    main()
