"""How soon a long run's report is on disk after the run ends: `sixnines run` of one raw
TCP stream (64 B, builtin relay) at RATE for DURATION, analysed as users run it — with the
analysis sidecar folding its chunks while it goes — and with the whole analysis after the
run (SIXNINES_FOLLOW=0, the baseline), alternated. The figure is the time from the run's
end (its manifest's `ended_at`) to its summary.json on disk, against the records analysed.

    .venv/bin/python benchmarks/bench_long_run.py [--rate 100k] [--duration 3m] [--rounds 1]
        [--warmup 2s] [--smoke]
"""

from __future__ import annotations

import argparse
import json
import tempfile
from pathlib import Path

import common
import pyarrow.parquet as pq

from sixnines.formats.chunks import message_files
from sixnines.formats.layout import AGENTS_DIR, MANIFEST_FILE, REPORT_DIR, SIDECAR_LOG, SUMMARY_FILE

VARIANTS = {"sidecar": {}, "whole analysis after the run": {"SIXNINES_FOLLOW": "0"}}


def measure(rate: str, duration: str, warmup: str, work: Path, env: dict[str, str]) -> dict:
    scenario = f"""
name: long
systems: [{{name: tcp, driver: tcp, broker: builtin}}]
workload: {{message_size: 64, rate: {rate}, duration: {duration}, warmup: {warmup},
           drain: 5s}}
"""
    run = common.sixnines_run(scenario, work, tty=False, env=env, analysis=True)
    manifest = json.loads((run / MANIFEST_FILE).read_text())
    summary = run / REPORT_DIR / SUMMARY_FILE
    records = sum(pq.ParquetFile(path).metadata.num_rows
                  for agent in (run / AGENTS_DIR).iterdir() for path in message_files(agent))
    return {"report_after_s": summary.stat().st_mtime - manifest["ended_at"],
            "records": records, "status": json.loads(summary.read_text())["status"],
            "followed": (run / SIDECAR_LOG).is_file()
            and "finished in" in (run / SIDECAR_LOG).read_text()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rate", default="100k")
    parser.add_argument("--duration", default="3m")
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--warmup", default="2s")
    args = common.arguments(parser, smoke={"rate": "1k", "duration": "1s", "warmup": "0s"})
    found: dict[str, list[dict]] = {name: [] for name in VARIANTS}
    with tempfile.TemporaryDirectory() as tmp:
        for round_ in range(args.rounds):
            for name, env in VARIANTS.items():
                result = measure(args.rate, args.duration, args.warmup,
                                 Path(tmp) / f"{round_}-{name}", env)
                found[name].append(result)
                print(f"{name}: {result}", flush=True)
    baseline = min(r["report_after_s"] for r in found["whole analysis after the run"])
    print(f"\n{args.rate} msg/s for {args.duration}: report on disk after the run's end")
    for name, results in found.items():
        best = min(r["report_after_s"] for r in results)
        records = results[0]["records"]
        print(f"{name:30s} {best:7.1f} s  ({records / 1e6:.1f}M records, "
              f"{baseline / best:.1f}x sooner than the whole analysis)")


if __name__ == "__main__":
    main()
