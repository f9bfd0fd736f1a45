"""How long `sixnines history` takes on a year of nights: from nothing, and after one more.

Records one real small run (`sixnines run`, the builtin tcp relay) as the template, then
writes a synthetic year under one root: `--nights` results directories, one a day, of
`--runs` runs each (5 systems × swept message sizes), in the real layout — summary.json
and summary.csv through the store's writer, each run's manifest.json through the manifest
model, its report/latency.hgrm — the template's figures, its .hgrm's values and rates
scaled per run and per night (a slow drift, night-to-night noise, and a +20 % step in one
run's latency from night 300 on). Then times the real command in a subprocess: the index
built from nothing, then again after one new night, and once with nothing new, `--tries`
times on the same year (one more night each time); wall and CPU seconds, each step
against its goal (30 s and 2 s on a 2-core machine), and how many tries held it.

    .venv/bin/python benchmarks/bench_history.py [--nights 365] [--runs 40] [--keep DIR]
        [--tries 3] [--smoke]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import time
from datetime import datetime, timedelta
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import common

from sixnines.formats.integrity import read_manifest
from sixnines.formats.layout import (
    HISTORY_DIR,
    MANIFEST_FILE,
    REPORT_DIR,
    SUMMARY_FILE,
    hgrm_file,
)
from sixnines.formats.summary import RunSummary
from sixnines.formats.vocabulary import Metric
from sixnines.orchestrator.results.store import write_results_summary
from sixnines.orchestrator.results.summaries import read_results_summary

SIXNINES = [sys.executable, "-m", "sixnines"]
TEMPLATE = """
name: template
systems: [{name: tcp, driver: tcp}]
workload: {message_size: 64, rate: %(rate)s, duration: %(duration)s, warmup: 0s}
"""
SYSTEMS = ("tcp", "zmq", "redis", "nats", "rabbitmq")
SCENARIO = "nightly"
FIRST_NIGHT = datetime(2025, 11, 28, 2, 0, 0)
STEP_NIGHT, STEP = 300, 1.2  # run 1's latency from this night on
GOALS = {"from nothing": 30.0, "one new night": 2.0}
LATENCIES = tuple(metric.summary_field for metric in Metric)
SCALED = ("p50", "p90", "p99", "p99.9", "p99.99", "p99.999", "p99.9999", "max", "mean",
          "lower_median", "robust_deviation")


def record_template(work: Path, rate: str, duration: str) -> Path:
    """One real analysed run: the run directory of `sixnines run` of TEMPLATE."""
    (work / "template.yaml").write_text(TEMPLATE % {"rate": rate, "duration": duration})
    done = subprocess.run([*SIXNINES, "run", "template.yaml", "--output", "out"], cwd=work,
                          capture_output=True, text=True, check=False)
    if done.returncode not in (0, 1):  # 1: a run partial on a busy machine still serves
        raise SystemExit(f"the template run failed:\n{done.stderr[-2000:]}")
    results = work / done.stdout.strip().splitlines()[-1]
    return next(path for path in sorted(results.iterdir()) if (path / MANIFEST_FILE).is_file())


class Year:
    """The synthetic nights, written from one template run."""

    def __init__(self, template: Path, runs: int, seed: int = 1) -> None:
        summary = read_results_summary(template.parent / SUMMARY_FILE).runs[0]
        self.run = summary.model_dump(by_alias=True, mode="json")
        manifest = read_manifest(template).model_dump(by_alias=True, mode="json")
        hgrm = (template / REPORT_DIR / hgrm_file(Metric.LATENCY)).read_text()
        self.hgrm = [_value_first(line) for line in hgrm.splitlines(keepends=True)]
        self.slots = [(f"{n + 1:02d}-{SYSTEMS[n % 5]}-message_size={64 << n // 5}",
                       SYSTEMS[n % 5], 64 << n // 5) for n in range(runs)]
        self.manifests = [json.dumps({**manifest, "run_id": run_id, "system": system,
                                      "scenario": SCENARIO,
                                      "params": {**manifest["params"], "message_size": size}},
                                     indent=2) for run_id, system, size in self.slots]
        self.rng = np.random.default_rng(seed)
        self.base = 1 + self.rng.random(runs)  # each run's own level

    def write_night(self, root: Path, number: int) -> Path:
        """Night `number` (from 0) under `root`/nightly/<stamp>/."""
        night = root / SCENARIO / (FIRST_NIGHT + timedelta(days=number)).strftime(
            "%Y%m%d-%H%M%S")
        factors = self.base * (1 + 0.1 * number / 365) * self.rng.lognormal(0, 0.04,
                                                                           len(self.slots))
        if number >= STEP_NIGHT:
            factors[0] *= STEP
        rates = self.rng.lognormal(0, 0.01, len(self.slots))
        runs = []
        for (run_id, system, size), manifest, factor, rate in zip(
                self.slots, self.manifests, factors, rates, strict=True):
            folder = night / run_id / REPORT_DIR
            folder.mkdir(parents=True)
            (night / run_id / MANIFEST_FILE).write_text(manifest)
            (folder / hgrm_file(Metric.LATENCY)).write_text(self._hgrm(float(factor)))
            runs.append(self._run(run_id, system, size, float(factor), float(rate)))
        write_results_summary(night, SCENARIO, runs)
        return night

    def _hgrm(self, factor: float) -> str:
        """The template's percentile lines, each value times `factor`."""
        return "".join(f"{float(line[0]) * factor:12.3f} {line[1]}" if len(line) == 2
                       else line[0] for line in self.hgrm)

    def _run(self, run_id: str, system: str, size: int, factor: float, rate: float
             ) -> RunSummary:
        run = {**self.run, "run_id": run_id, "system": system,
               "params": {**self.run["params"], "message_size": size}}
        for field in LATENCIES:
            if run.get(field):
                run[field] = {key: (value * factor if key in SCALED and value is not None
                                    else value) for key, value in run[field].items()}
        for name in ("send_rate", "receive_rate"):
            run[name] = run[name] and run[name] * rate
        return RunSummary.model_validate(run)


def _value_first(line: str) -> list[str]:
    """A percentile line as [value, the rest]; any other line whole."""
    parts = line.split(maxsplit=1)
    try:
        float(parts[0])
    except (IndexError, ValueError):
        return [line]
    return parts


def timed_history(root: Path) -> tuple[float, float]:
    """Seconds `sixnines history ROOT` took, and the CPU seconds it and its children used
    (on a machine shared with other work the two part). Its exit code says what changed,
    not whether it worked: 0 and 1 are both a finished update."""
    began, used = time.monotonic(), _cpu_of_children()
    done = subprocess.run([*SIXNINES, "history", str(root)], capture_output=True, text=True,
                          check=False)
    took = time.monotonic() - began
    if done.returncode not in (0, 1):
        raise SystemExit(f"sixnines history exited {done.returncode}:\n{done.stderr[-3000:]}")
    return took, _cpu_of_children() - used


def _cpu_of_children() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nights", type=int, default=365)
    parser.add_argument("--runs", type=int, default=40, help="runs per night")
    parser.add_argument("--keep", type=Path, help="keep the nights here")
    parser.add_argument("--template-rate", default="10000", help="the template run's rate")
    parser.add_argument("--template-duration", default="1s")
    parser.add_argument("--tries", type=int, default=3,
                        help="times the steps are timed on the same year")
    args = common.arguments(parser, smoke={"nights": 4, "runs": 5, "template_rate": "1000",
                                           "tries": 1})
    with common.directory(args.keep) as work:
        year = Year(record_template(work, args.template_rate, args.template_duration),
                    args.runs)
        root = work / "root"
        shutil.rmtree(root, ignore_errors=True)  # a kept directory's earlier year
        began = time.monotonic()
        for number in range(args.nights):
            year.write_night(root, number)
        print(f"synthetic year: {args.nights} nights x {args.runs} runs written in "
              f"{time.monotonic() - began:.1f} s")
        print(f"{'try':<4} {'step':<14} {'wall':>8} {'CPU':>8}  load")
        held = dict.fromkeys(GOALS, 0)
        for attempt in range(1, args.tries + 1):
            shutil.rmtree(root / HISTORY_DIR, ignore_errors=True)
            figures = {"from nothing": timed_history(root)}
            year.write_night(root, args.nights + attempt - 1)
            figures["one new night"] = timed_history(root)
            figures["nothing new"] = timed_history(root)
            for name, (seconds, cpu) in figures.items():
                goal = GOALS.get(name)
                against = f"   {seconds / goal:.2f} of the goal ({goal:g} s)" if goal else ""
                held[name] = held.get(name, 0) + (goal is not None and seconds <= goal)
                print(f"{attempt:<4} {name:<14} {seconds:6.2f} s {cpu:6.2f} s  "
                      f"{os.getloadavg()[0]:4.1f}{against}")
        for name, goal in GOALS.items():
            print(f"{name} within {goal:g} s: {held[name]} of {args.tries} tries "
                  f"({os.cpu_count()} cores; load: the 1-minute load average after the step)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
