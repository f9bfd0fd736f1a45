"""What the analysis sidecar does to the latency it measures: `sixnines run` of one raw TCP
stream (64 B, builtin relay) at each rate, analysed as users run it in each of the
sidecar's modes (orchestrator.run.sidecar) — `end` (the default: it analyses the run after
it), `live` (it folds closed chunks while the run goes) — and without it (the whole
analysis after the run with Spark, the baseline), interleaved round after round. Prints
each variant's median p50, p99 and p99.9 of latency (recv − intended) and the ratio to
the baseline's.

    .venv/bin/python benchmarks/bench_sidecar_latency.py [--rates 40k,100k] [--rounds 3]
        [--seconds 5] [--warmup 3s] [--smoke]
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
from pathlib import Path

import common

from sixnines.formats.layout import REPORT_DIR, SUMMARY_FILE
from sixnines.formats.vocabulary import Metric

VARIANTS = {"no sidecar (baseline)": {"SIXNINES_FOLLOW": "0"},
            "end (default)": {},
            "live": {"SIXNINES_FOLLOW": "live"}}
FIGURES = ("p50", "p99", "p99.9")


def measure(rate: str, seconds: int, warmup: str, work: Path, env: dict[str, str]
            ) -> dict[str, float]:
    scenario = f"""
name: sidecar-latency
systems: [{{name: tcp, driver: tcp, broker: builtin}}]
workload: {{message_size: 64, rate: {rate}, duration: {seconds}s, warmup: {warmup},
           drain: 2s}}
"""
    run = common.sixnines_run(scenario, work, tty=False, env=env, analysis=True)
    summary = json.loads((run / REPORT_DIR / SUMMARY_FILE).read_text())
    latency = summary[Metric.LATENCY.summary_field]
    return {key: latency[key] for key in FIGURES}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rates", default="40k,100k")
    parser.add_argument("--seconds", type=int, default=5)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--warmup", default="3s")
    args = common.arguments(parser, smoke={"rates": "1k", "seconds": 1, "rounds": 1,
                                           "warmup": "0s"})
    with tempfile.TemporaryDirectory() as tmp:
        for rate in args.rates.split(","):
            found: dict[str, list[dict[str, float]]] = {name: [] for name in VARIANTS}
            for round_ in range(args.rounds):
                for name, env in VARIANTS.items():
                    work = Path(tmp) / f"{rate}-{round_}-{len(found[name])}-{name[:4]}"
                    found[name].append(measure(rate, args.seconds, args.warmup, work, env))
            baseline = {key: statistics.median(r[key] for r in found[next(iter(VARIANTS))])
                        for key in FIGURES}
            print(f"rate {rate} msg/s, {args.rounds} rounds of {args.seconds} s measured, "
                  "latency µs (median over rounds; × baseline)")
            for name, runs in found.items():
                medians = {key: statistics.median(r[key] for r in runs) for key in FIGURES}
                cells = "  ".join(f"{key} {medians[key]:>9,.1f} "
                                  f"({medians[key] / baseline[key]:.2f}×)" for key in FIGURES)
                print(f"  {name:<22} {cells}")


if __name__ == "__main__":
    main()
