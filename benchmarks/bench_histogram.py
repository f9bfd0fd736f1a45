"""Histogram building cost: vectorised HDR counts vs hdrh's record_value, and hlog writing.

Both sides are measured in the same run on the same machine (this VM's speed varies, so
only side-by-side ratios mean anything).

    .venv/bin/python benchmarks/bench_histogram.py [--n 10000000] [--smoke]
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import common
import numpy as np
from hdrh.histogram import HdrHistogram

from sixnines.formats import hdr
from sixnines.formats.hlog import read_hlog, write_hlog
from sixnines.formats.layout import HLOG_FILE
from sixnines.formats.vocabulary import Metric

S = 1_000_000_000


def latency_like(rng: np.random.Generator, n: int) -> np.ndarray:
    """Mostly tens of µs with a long tail into milliseconds, as int64 ns."""
    return np.clip(rng.lognormal(mean=10.5, sigma=1.0, size=n), 1, hdr.HIGHEST).astype(np.int64)


def best_of(repeat: int, fn) -> float:
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        fn()
        times.append(time.perf_counter() - started)
    return min(times)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=10_000_000, help="values / messages")
    parser.add_argument("--baseline-n", type=int, default=200_000,
                        help="values recorded one by one with hdrh's record_value")
    parser.add_argument("--seconds", type=int, default=60, help="hlog run length (intervals)")
    parser.add_argument("--repeat", type=int, default=3, help="best of this many runs")
    args = common.arguments(parser, {"n": 100_000, "baseline_n": 10_000, "seconds": 5,
                                     "repeat": 1}, argv)

    rng = np.random.default_rng(1)
    values = latency_like(rng, args.n)

    ours_s = best_of(args.repeat, lambda: hdr.counts_of(values))
    ours_per_value = ours_s / args.n

    baseline = values[: args.baseline_n].tolist()

    def record_all() -> None:
        histogram = HdrHistogram(hdr.LOWEST, hdr.HIGHEST, hdr.SIGNIFICANT_DIGITS)
        for value in baseline:
            histogram.record_value(value)

    hdrh_per_value = best_of(1, record_all) / len(baseline)

    offsets = np.sort(rng.integers(0, args.seconds * S, args.n))
    send_lag = rng.integers(0, 50_000, args.n)
    metrics = {Metric.LATENCY: values + send_lag, Metric.SERVICE_TIME: values,
               Metric.SEND_LAG: send_lag}
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / HLOG_FILE
        started = time.perf_counter()
        write_hlog(path, start_epoch_s=time.time(),
                   series={tag: (offsets, v) for tag, v in metrics.items()},
                   warmup_ns=5 * S + S // 2)
        write_s = time.perf_counter() - started
        size = path.stat().st_size
        started = time.perf_counter()
        hlog = read_hlog(path)
        read_s = time.perf_counter() - started

    n, lines = f"{args.n:,}", len(hlog.intervals)
    rows = [
        ("hdr.counts_of", n, f"{ours_s:.3f} s", f"{ours_per_value * 1e9:.1f} ns"),
        (f"hdrh record_value (measured on {len(baseline):,})", n,
         f"{hdrh_per_value * args.n:.1f} s (extrapolated)", f"{hdrh_per_value * 1e9:.1f} ns"),
        ("speed-up (hdrh / ours per value)", "", f"{hdrh_per_value / ours_per_value:.0f}x", ""),
        (f"write_hlog {args.n:,} msgs x 3 tags", f"{lines} lines", f"{write_s:.3f} s",
         f"{size / 1024:.0f} KiB"),
        ("read_hlog", f"{lines} lines", f"{read_s:.3f} s", ""),
    ]
    header = ("step", "size", "time", "per value / file")
    widths = [max(len(row[i]) for row in [header, *rows]) for i in range(4)]
    for row in [header, tuple("-" * w for w in widths), *rows]:
        print("  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
