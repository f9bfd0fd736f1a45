"""Per-message series vs the HDR bucket merge: Spark throughput on one synthesised run of one
producer and one consumer, both measured in one session, so the ratio is this run's own.

Steps, each timed end to end (plan, scan, shuffle, result to the driver):

- bucket merge (the baseline): `frames.bucket_counts` over `frames.metric_values`, the HDR
  counts of latency, service time and send lag, as `analyze_run` computes them;
- windowed series: `series.throughput`, the window pass (SO_n / RO_n over M messages, the
  ST / RT HDR buckets and both throughput curves); the stream extents it needs are taken
  once beforehand, outside the timing;
- all per-message jobs: everything `analyze_run` added for the series (stream extents, the
  latency curve, the window pass, the exact-median pass).

Rows are raw rows read (producer rows + consumer rows = 2 per message); rows/s/core divides
by the cores of local[*]. Goals (issue 5): bucket merge ≥ 2M rows/s/core, windowed series
≥ 0.5M rows/s/core. The run (1M msg/s for messages / 1M seconds, 1 % warm-up, send lag
~3 µs log-normal, service time ~50 µs log-normal, FIFO) is cached under benchmarks/out/
keyed by its size; manifest.json, written last, marks it complete.

    SPARK_LOCAL_IP=127.0.0.1 .venv/bin/python benchmarks/bench_series.py [--messages 10M]
        [--repeat 2] [--window 100] [--driver-memory 6g]

--messages 100M writes ~3 GB of parquet, and one stream of 100M rows needs more than Spark's
own 1 GB default heap (the sort before the window spills into more files than it can read
back at once); `spark_jobs.session` sizes the local heap to the machine (a quarter of its
memory), and --driver-memory sets another (the JVM's heap, fixed when it starts).
"""

from __future__ import annotations

import argparse
import os
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from sixnines.formats.integrity import read_manifest
from sixnines.formats.manifest import Manifest
from sixnines.formats.records import MESSAGES, MESSAGES_FILE
from sixnines.orchestrator.units import parse_rate
from sixnines.spark_jobs import frames, series, summarize
from sixnines.spark_jobs.session import local_heap, spark_session

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


def synthesise(messages: int) -> Path:
    """The run dir (cached): agents p (producer) and c (consumer), one clock."""
    run_dir = OUT / f"series-{messages}"
    if (run_dir / "manifest.json").is_file():
        return run_dir
    warmup_ns = messages // 100 * PERIOD_NS
    paths = {agent: run_dir / "agents" / agent / MESSAGES_FILE for agent in ("p", "c")}
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
    (run_dir / "manifest.json").write_text(manifest.text())
    return run_dir


def _timed(step: Callable[[], object]) -> float:
    began = time.perf_counter()
    step()
    return time.perf_counter() - began


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", default="10M", help="messages (e.g. 10M, 100M)")
    parser.add_argument("--repeat", type=int, default=2, help="best of this many rounds")
    parser.add_argument("--window", type=int, default=series.DEFAULT_WINDOW)
    parser.add_argument("--driver-memory", help="heap of the local Spark JVM, e.g. 6g "
                        "(default: the analysis' own, a quarter of the machine's memory)")
    args = parser.parse_args(argv)
    messages = int(parse_rate(args.messages))
    if args.driver_memory:
        os.environ["PYSPARK_SUBMIT_ARGS"] = f"--driver-memory {args.driver_memory} pyspark-shell"

    began = time.perf_counter()
    run_dir = synthesise(messages)
    print(f"run: {run_dir} ({time.perf_counter() - began:.0f} s to have it)", flush=True)
    spark = spark_session("local[*]")
    cores = spark.sparkContext.defaultParallelism
    manifest = read_manifest(run_dir)
    df = frames.measured(frames.load_messages(spark, run_dir, manifest))
    clocks = frames.RunClocks.from_manifest(manifest)
    values = frames.metric_values(df, clocks)
    streams = series.Streams.of(series.extents(df).toArrow().to_pylist(),
                                {0: T0_NS, 1: T0_NS})
    metrics, _ = summarize.gather(frames.bucket_counts(values, ("agent_id", "metric")).toArrow())

    def merge() -> object:
        return frames.bucket_counts(values, ("agent_id", "metric")).toArrow()

    def window_pass() -> object:
        return series.throughput(series.stream_rows(df), streams, args.window)

    def everything() -> object:
        series.with_median_detail(values, metrics)
        return series.per_message(df, clocks, manifest, args.window)

    steps = {"bucket merge": merge, "windowed series": window_pass,
             "all per-message jobs": everything}
    load_before = os.getloadavg()
    best = dict.fromkeys(steps, float("inf"))
    for round_ in range(args.repeat):
        for name, step in steps.items():  # interleaved: every step sees the same load
            seconds = _timed(step)
            best[name] = min(best[name], seconds)
            print(f"round {round_ + 1}: {name} {seconds:.1f} s", flush=True)
    load_after = os.getloadavg()

    rows = 2 * messages
    print(f"\n{messages:,} messages = {rows:,} raw rows, local[*] = {cores} cores, "
          f"window {args.window}, best of {args.repeat}, heap "
          f"{args.driver_memory or local_heap()}")
    print(f"load average (1/5/15 min) before {load_before[0]:.1f}/{load_before[1]:.1f}/"
          f"{load_before[2]:.1f}, after {load_after[0]:.1f}/{load_after[1]:.1f}/"
          f"{load_after[2]:.1f}")
    print(f"{'step':<22}{'seconds':>9}{'rows/s/core':>14}{'× baseline time':>17}")
    for name, seconds in best.items():
        print(f"{name:<22}{seconds:>9.1f}{rows / seconds / cores:>14,.0f}"
              f"{seconds / best['bucket merge']:>17.2f}")
    spark.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
