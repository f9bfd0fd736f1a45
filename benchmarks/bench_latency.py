"""CO-corrected one-way latency at 1,000 msg/s for every driver, one run each, side by side.

Runs benchmarks/latency-1k.yaml with `sixnines run` (brokers from their recipes, Spark
analysis; results under the scenario's output, relative to the working directory) and
prints each system's latency percentiles as a ratio to the raw-TCP relay measured in the
same invocation (the brokerless floor of this machine).

    .venv/bin/python benchmarks/bench_latency.py [--scenario benchmarks/latency-1k.yaml]
        [--workload FIELD=VALUE ...] [--smoke]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

import common

from sixnines.formats.layout import SUMMARY_FILE
from sixnines.formats.vocabulary import Metric

KEYS = ("p50", "p90", "p99", "p99.9", "max")
LATENCY = Metric.LATENCY.summary_field


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scenario", type=Path,
                        default=Path(__file__).with_name("latency-1k.yaml"))
    common.workload_option(parser)
    args = common.arguments(parser, smoke={"workload": [("duration", "0.5s"), ("warmup", "0s")]})
    with tempfile.TemporaryDirectory(prefix="bench-latency-") as work:
        scenario = common.scenario_with(args.scenario, Path(work), args.workload)
        done = subprocess.run([sys.executable, "-m", "sixnines", "run", str(scenario)],
                              capture_output=True, text=True, check=False)
    if not done.stdout.strip():
        sys.exit(f"sixnines run printed no results directory:\n{done.stderr[-2000:]}")
    results = Path(done.stdout.strip().splitlines()[-1])
    runs = json.loads((results / SUMMARY_FILE).read_text())["runs"]
    base = next(r for r in runs if r["system"] == "tcp")[LATENCY]
    print(f"one-way latency, µs (x tcp relay); results in {results}")
    print(f"{'system':<12} {'status':<8} {'lost':>5} " + " ".join(f"{k:>16}" for k in KEYS))
    for run in runs:
        figures = run.get(LATENCY) or {}
        cells = [f"{figures.get(k) or 0:>8,.0f} ({(figures.get(k) or 0) / base[k]:>4.1f}x)"
                 for k in KEYS]
        print(f"{run['system']:<12} {run['status']:<8} {run.get('lost', 0):>5} " + " ".join(cells))


if __name__ == "__main__":
    main()
