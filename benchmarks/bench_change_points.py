"""Change points over nights (orchestrator/results/changes.py) on nights made from real runs of
this machine: detection of injected steps within 3 nights, false alarms per 100 nights of no
change, per latency percentile.

Real runs first: `sixnines run` of one tcp step (`--rate`, `--seconds` measured), `--runs`
times, recorded as a user records them (or the runs under `--from DIR`, any results
directories holding consumers' latency.hlog). Each run's receivers' per-second interval
histograms (the hlog) are its raw material. A night is a bootstrap of one run's seconds
(drawn with replacement, as many as it has): its histogram is their sum, its figures the
HDR percentiles of that, its sampling band what `sixnines compare` computes from its .hgrm
(`Tail.half_widths`), its unsteady flag the steadiness rule (spark_jobs.steadiness) on the
drawn seconds' p99. Three machines are made of them:

- steady: every night of a series from one run's steady twin — its seconds drawn
  independently from the run's whole distribution, so only sampling noise is left: this
  machine's latency distribution on a machine that behaves the same all the time;
- one run: every night of a series from the same run — sampling noise and the run's own
  unsteadiness (stalls: which seconds a night happens to hold);
- as they came: each night from any of the runs — also the run-to-run drift of this
  shared machine.

A series is HISTORY nights then AFTER more: with a step, the last AFTER nights' figures
(value and band) multiplied by 1 + step, found when a regression is reported within one
night of where it starts; without one, every change reported is a false alarm, as is
every change in a series with one night at SPIKE times its level somewhere. The columns:
the percentile, how many samples lie above it in a night (the false-alarm goal is for those
with >= 100), the share of +10/20/50 % steps found, false alarms per 100 nights without and
with a spike.

    .venv/bin/python benchmarks/bench_change_points.py [--runs 4] [--seconds 40]
        [--rate 5000] [--from DIR] [--trials 200] [--seed 1] [--smoke]
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import common
import numpy as np

from sixnines.formats import hdr, hgrm
from sixnines.formats.hlog import measured_intervals, read_hlog
from sixnines.formats.layout import AGENTS_DIR, HLOG_FILE, MANIFEST_FILE
from sixnines.formats.vocabulary import Metric
from sixnines.orchestrator.results.changes import Night, find_changes
from sixnines.orchestrator.results.compare import Tail
from sixnines.spark_jobs.steadiness import UNSTEADY_SPREAD

KEYS = ("p50", "p90", "p99", "p99.9", "p99.99")
HISTORY, AFTER = 30, 3
STEPS = (0.10, 0.20, 0.50)
SPIKE = 2.0
POOL = 100  # nights bootstrapped per run
TAG = str(Metric.LATENCY)


def recorded(args: argparse.Namespace, work: Path) -> list[Path]:
    """The real runs: those under --from, or --runs new ones of one tcp step."""
    if args.source is not None:
        return sorted(manifest.parent for manifest in args.source.rglob(MANIFEST_FILE)
                      if list((manifest.parent / AGENTS_DIR).glob(f"consumer-*/{HLOG_FILE}")))
    scenario = common.step_scenario("nights", "{name: tcp, driver: tcp}", 64, args.rate,
                                    args.seconds)
    return [common.sixnines_run(scenario, work / f"night-{i}", tty=False)
            for i in range(args.runs)]


def seconds_of(run: Path) -> np.ndarray:
    """The run's measured seconds of latency, receivers added: one dense HDR counts row
    per second."""
    warmup_s = json.loads((run / MANIFEST_FILE).read_text())["workload"]["warmup_ns"] / 1e9
    by_start: dict[int, np.ndarray] = {}
    for path in sorted((run / AGENTS_DIR).glob(f"consumer-*/{HLOG_FILE}")):
        for item in measured_intervals(read_hlog(path), warmup_s, frozenset({TAG})).get(TAG, []):
            row = by_start.setdefault(round(item.start_s * 1000),
                                      np.zeros(hdr.COUNTS_LEN, np.int64))
            row[item.indices] += item.values
    return np.array([by_start[start] for start in sorted(by_start)])


def nights_of(seconds: np.ndarray, count: int, rng: np.random.Generator) -> list[dict]:
    """`count` bootstrapped nights of one run: per key (value, low, high) µs, whether the
    night is unsteady ("unsteady") and its latencies ("count")."""
    p99 = np.array([hdr.percentile_values(row, [99.0])[0] for row in seconds], float)
    made = []
    for _ in range(count):
        drawn = rng.integers(0, len(seconds), len(seconds))
        counts = seconds[drawn].sum(axis=0)
        tail = Tail.from_text(hgrm.hgrm_text(counts, 1000.0))
        values = hdr.percentile_values(counts, [float(key[1:]) for key in KEYS]) / 1000.0
        night: dict = {}
        for key, value in zip(KEYS, values, strict=True):
            down, up = tail.half_widths(key) if tail is not None else (0.0, 0.0)
            night[key] = (float(value), float(value) * np.exp(-down), float(value) * np.exp(up))
        low, high = np.percentile(p99[drawn], [25, 75])
        night["unsteady"] = bool(high / max(low, 1.0) - 1 > UNSTEADY_SPREAD)
        night["count"] = int(counts.sum())
        made.append(night)
    return made


def steady_twin(seconds: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """The run's seconds drawn anew, each as many latencies as it held, from the run's
    whole distribution: no second differs from another but by sampling."""
    total = seconds.sum(axis=0)
    return np.array([rng.multinomial(int(row.sum()), total / total.sum()) for row in seconds])


def series(pools: list[list[dict]], key: str, model: str, rng: np.random.Generator,
           step: float = 0.0, spike: bool = False) -> list[Night]:
    """HISTORY + AFTER nights of one percentile, a step of `step` at HISTORY, or a spike."""
    if model != "as they came":
        pool = pools[rng.integers(len(pools))]
        picked = [pool[rng.integers(len(pool))] for _ in range(HISTORY + AFTER)]
    else:
        picked = [(pool := pools[rng.integers(len(pools))])[rng.integers(len(pool))]
                  for _ in range(HISTORY + AFTER)]
    factors = np.ones(HISTORY + AFTER)
    factors[HISTORY:] += step
    if spike:
        factors[rng.integers(5, HISTORY + AFTER)] *= SPIKE
    return [Night(f"n{i}", *(figure * factor for figure in night[key]),
                  unsteady=night["unsteady"])
            for i, (night, factor) in enumerate(zip(picked, factors, strict=True))]


def measure(pools: list[list[dict]], key: str, model: str, trials: int, seed: int
            ) -> list[float]:
    """[found share per step..., false alarms per 100 nights, the same with a spike]."""
    rng = np.random.default_rng(seed)
    figures = []
    for step in STEPS:
        found = 0
        for _ in range(trials):
            changes = find_changes(series(pools, key, model, rng, step))
            found += any(c.direction == "regression" and abs(c.index - HISTORY) <= 1
                         for c in changes)
        figures.append(found / trials)
    for spike in (False, True):
        alarms = sum(len(find_changes(series(pools, key, model, rng, spike=spike)))
                     for _ in range(trials))
        figures.append(100 * alarms / (trials * (HISTORY + AFTER)))
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=4, help="real runs to record")
    parser.add_argument("--seconds", type=int, default=40, help="measured seconds per run")
    parser.add_argument("--rate", type=float, default=5000, help="msg/s of each run")
    parser.add_argument("--from", dest="source", type=Path, default=None,
                        help="use the runs under this results root instead of recording")
    parser.add_argument("--trials", type=int, default=200, help="series per case")
    parser.add_argument("--pool", type=int, default=POOL, help="nights made per run")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--out", type=Path, default=None, help="keep the recorded runs here")
    args = common.arguments(parser, {"runs": 2, "seconds": 3, "rate": 1000, "trials": 3,
                                     "pool": 8})
    began = time.monotonic()
    with common.directory(args.out) as work:
        runs = recorded(args, work)
        if not runs:
            raise SystemExit(f"no run with a consumer's {HLOG_FILE} to make nights of")
        rng = np.random.default_rng(args.seed)
        raw = [seconds_of(run) for run in runs]
        raw = [seconds for seconds in raw if len(seconds)]
        pools = [nights_of(seconds, args.pool, rng) for seconds in raw]
        steady = [nights_of(steady_twin(seconds, rng), args.pool, rng) for seconds in raw]
    p99 = [hdr.percentile_values(seconds.sum(axis=0), [99.0])[0] / 1000 for seconds in raw]
    unsteady = np.mean([night["unsteady"] for pool in pools for night in pool])
    print(f"real runs: {len(runs)}, {np.median([s.sum() for s in raw]):,.0f} latencies each "
          f"(median), p99 {min(p99):,.0f} to {max(p99):,.0f} µs; nights unsteady: "
          f"{unsteady:.0%}")
    count = int(np.median([night["count"] for pool in pools for night in pool]))
    steps = "  ".join(f"+{step:.0%}".rjust(5) for step in STEPS)
    print(f"{'machine':<12} {'figure':<7} {'above':>7}  found: {steps}   false/100 nights "
          "(no change, a spike)")
    for model in ("steady", "one run", "as they came"):
        for key in KEYS:
            figures = measure(steady if model == "steady" else pools, key, model,
                              args.trials, args.seed)
            above = count * (1 - float(key[1:]) / 100)
            found = "  ".join(f"{share:5.2f}" for share in figures[:len(STEPS)])
            print(f"{model:<12} {key:<7} {above:7.0f}         {found}   "
                  f"{figures[-2]:5.2f} {figures[-1]:5.2f}", flush=True)
    print(f"took {time.monotonic() - began:.0f} s")


if __name__ == "__main__":
    main()
