"""One stream of M messages analysed: the per-agent passes against reading the records,
and the product's command end to end, on one synthesised run of one producer and one
consumer.

Steps, each timed in this process on one core, interleaved over rounds (best kept):

- read (the baseline): both agents' record files as the passes read them
  (`agent_rows.batches`: columns, row kinds, warm-up, clock pairing, 1M rows at a time);
- first pass: `agent_pass.first_pass` of both agents (tallies, reorder count, rates,
  every metric's HDR buckets, stream extents, measured sends);
- second pass: `agent_pass.second_pass` of both (matching, exact-median values, the
  latency curve, the ST / RT windows), from the first's merged results;

then `python -m sixnines.spark_jobs.analyze RUN_DIR` once, the process `sixnines report`
starts (JVM, both Spark jobs, every report file), on local[*]. Rows are raw rows (producer
rows + consumer rows = 2 per message). The run (1M msg/s for messages / 1M seconds, 1 %
warm-up, send lag ~3 µs log-normal, service time ~50 µs log-normal, FIFO) is cached under
benchmarks/out/ (or `--out`) keyed by its size; manifest.json, written last, marks it
complete; a smoke run's goes to a temporary directory.

    .venv/bin/python benchmarks/bench_series.py [--messages 10M] [--repeat 2] [--out DIR]
        [--smoke]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import common
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from sixnines.formats.integrity import read_manifest
from sixnines.formats.layout import AGENTS_DIR, MANIFEST_FILE, MESSAGES_FILE
from sixnines.formats.load import load_of
from sixnines.formats.manifest import Manifest
from sixnines.formats.records import MESSAGES
from sixnines.orchestrator.scenario.units import parse_rate
from sixnines.spark_jobs import agent_pass, agent_rows, delivery, run_merge

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "benchmarks" / "out"
PERIOD_NS = 1_000  # 1M msg/s
T0_NS = 10**12
CHUNK = 4_000_000  # messages synthesised and written at a time (one row group each)
SIZE = 64


def _chunk(rng: np.random.Generator, seq: np.ndarray, floor: tuple[int, int]
           ) -> dict[str, np.ndarray]:
    """One chunk of the stream; floor: the last send and receive times so far (a sender
    sends in order, a FIFO stream delivers in order: running maxima across chunks too)."""
    intended = T0_NS + seq * PERIOD_NS
    lag = rng.lognormal(np.log(3_000), 0.5, len(seq)).astype(np.int64)
    sent = np.maximum.accumulate(np.maximum(intended + lag, floor[0]))
    service = rng.lognormal(np.log(50_000), 0.3, len(seq)).astype(np.int64)
    recv = np.maximum.accumulate(np.maximum(sent + service, floor[1]))
    return {"seq": seq, "intended_ns": intended, "sent_ns": sent, "recv_ns": recv}


def _table(rows: dict[str, np.ndarray], warmup_ns: int, receiving: bool) -> pa.Table:
    n = len(rows["seq"])
    columns = {"producer_id": np.zeros(n, np.int32), "seq": rows["seq"],
               "size": np.full(n, SIZE, np.int32), "intended_ns": rows["intended_ns"],
               "sent_ns": rows["sent_ns"], "warmup": rows["intended_ns"] < T0_NS + warmup_ns}
    if receiving:
        columns.update(recv_ns=rows["recv_ns"], consumer_id=np.zeros(n, np.int32),
                       rx_index=rows["seq"])
    else:
        columns.update({name: pa.nulls(n, MESSAGES.field(name).type)
                        for name in ("recv_ns", "consumer_id", "rx_index")})
    return pa.table(columns, schema=MESSAGES)


def synthesise(messages: int, out: Path = OUT) -> Path:
    """The run dir (cached in `out`): agents p (producer) and c (consumer), one clock."""
    run_dir = out / f"series-{messages}"
    if (run_dir / MANIFEST_FILE).is_file():
        return run_dir
    warmup_ns = messages // 100 * PERIOD_NS
    paths = {agent: run_dir / AGENTS_DIR / agent / MESSAGES_FILE for agent in ("p", "c")}
    for path in paths.values():
        path.parent.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(7)
    floor = (0, 0)
    with pq.ParquetWriter(paths["p"], MESSAGES) as sent, \
            pq.ParquetWriter(paths["c"], MESSAGES) as received:
        for start in range(0, messages, CHUNK):
            rows = _chunk(rng, np.arange(start, min(messages, start + CHUNK)), floor)
            floor = (int(rows["sent_ns"][-1]), int(rows["recv_ns"][-1]))
            sent.write_table(_table(rows, warmup_ns, receiving=False))
            received.write_table(_table(rows, warmup_ns, receiving=True))
    agents = [{"id": agent, "role": role, "status": "ok", "first_id": 0, "t0_ns": T0_NS}
              for agent, role in (("p", "producer"), ("c", "consumer"))]
    manifest = Manifest.model_validate(
        {"run_id": run_dir.name, "system": "synthetic", "params": {}, "status": "ok",
         "workload": {"warmup_ns": warmup_ns, "duration_ns": messages * PERIOD_NS,
                      "connections": 1},
         "agents": agents})
    (run_dir / MANIFEST_FILE).write_text(manifest.text())
    return run_dir


def _timed(step: Callable[[], object]) -> float:
    began = time.perf_counter()
    step()
    return time.perf_counter() - began


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", default="10M", help="messages (e.g. 10M, 100M)")
    parser.add_argument("--repeat", type=int, default=2, help="best of this many rounds")
    parser.add_argument("--out", type=Path, default=OUT, help="where the run is cached")
    args = common.arguments(parser, {"messages": "20k", "repeat": 1, "out": None}, argv)
    with common.directory(args.out) as out:
        return measure(int(parse_rate(args.messages)), args.repeat, out)


def measure(messages: int, repeat: int, out: Path) -> int:
    """Time every step on the run of `messages` (synthesised into `out` if not there)."""
    began = time.perf_counter()
    run_dir = synthesise(messages, out)
    print(f"run: {run_dir} ({time.perf_counter() - began:.0f} s to have it)", flush=True)
    manifest = read_manifest(run_dir)
    run = run_merge.AnalysedRun(manifest, agent_rows.message_paths(run_dir, manifest),
                                manifest.throughput_window, load_of(manifest.params),
                                delivery.Expected())
    agents = run_merge.agent_files([run])
    merged = run_merge.merge_first([agent_pass.first_pass(agent) for agent in agents])
    plan = run_merge.plan(merged, run_merge.axes(run, merged.extents))
    steps: dict[str, Callable[[], object]] = {
        "read": lambda: [sum(map(len, agent_rows.batches(agent))) for agent in agents],
        "first pass": lambda: [agent_pass.first_pass(agent) for agent in agents],
        "second pass": lambda: [agent_pass.second_pass(agent, plan) for agent in agents]}
    best = dict.fromkeys(steps, float("inf"))
    for round_ in range(repeat):
        for name, step in steps.items():  # interleaved: every step sees the same load
            seconds = _timed(step)
            best[name] = min(best[name], seconds)
            print(f"round {round_ + 1}: {name} {seconds:.1f} s", flush=True)
    cores = os.cpu_count() or 1
    end_to_end = _timed(lambda: subprocess.run(
        [sys.executable, "-m", "sixnines.spark_jobs.analyze", str(run_dir)], check=True,
        stdout=subprocess.DEVNULL))

    rows = 2 * messages
    print(f"\n{messages:,} messages = {rows:,} raw rows, best of {repeat}")
    print(f"{'step':<34}{'seconds':>9}{'rows/s/core':>14}{'× read':>8}")
    for name, seconds in best.items():
        print(f"{name + ' (one core)':<34}{seconds:>9.1f}{rows / seconds:>14,.0f}"
              f"{seconds / best['read']:>8.2f}")
    print(f"{f'analyze end to end ({cores} cores)':<34}{end_to_end:>9.1f}"
          f"{rows / end_to_end / cores:>14,.0f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
