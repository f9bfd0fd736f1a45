"""Highest open-loop publish rate one sixnines process sustains through NATS: 256-byte
messages, send-lag p99 ≤ 100 µs and no loss, to one consumer (core NATS by default).

Each step is a real run (nats-server from the recipe, consumer and producer agent
processes, `Run` as `sixnines run` drives it) at a higher rate; the figures come from the
agents' parquet files. The baseline, measured in the same script against the same server,
is nats-py's own publishing loop: `await nc.publish(...)` as fast as it goes, then
`await nc.flush()` (no pacing, no stamping, nobody measuring latency).

    .venv/bin/python benchmarks/bench_nats.py [--rates 50k,100k,200k,300k,400k]
        [--mode core|jetstream] [--seconds 3]
"""

from __future__ import annotations

import argparse
import asyncio
import io
import tempfile
import time
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq

from orchestrator.brokers import start_recipe
from orchestrator.launchers.local import LocalLauncher
from orchestrator.matrix import expand
from orchestrator.progress import ProgressView
from orchestrator.recipes import load_recipe
from orchestrator.runner import Run
from orchestrator.scenario import parse_scenario
from orchestrator.units import parse_rate

SIZE = 256
LAG_P99_LIMIT_US = 100.0
SUBJECT = "bench"


def nats_py_rate(address: str, mode: str, seconds: float) -> float:
    """nats-py publishing 256-byte messages as fast as it goes (JetStream: the same loop
    through `js.publish`, which awaits each ack: nats-py has no asynchronous publish)."""
    import nats

    async def run() -> float:
        nc = await nats.connect(f"nats://{address}")
        payload = bytes(SIZE)
        sent = 0
        started = time.perf_counter()
        deadline = started + seconds
        if mode == "jetstream":
            js = nc.jetstream()
            await js.add_stream(name="benchbase", subjects=["benchbase"])
            while time.perf_counter() < deadline:
                for _ in range(100):
                    await js.publish("benchbase", payload)
                sent += 100
        else:
            while time.perf_counter() < deadline:
                for _ in range(1000):
                    await nc.publish(SUBJECT + ".baseline", payload)
                sent += 1000
            await nc.flush()
        rate = sent / (time.perf_counter() - started)
        await nc.close()
        return rate

    return asyncio.run(run())


def step(address: str, mode: str, rate: float, seconds: int, work: Path) -> dict:
    text = f"""
name: nats-rate
systems:
  - name: nats
    driver: nats
    broker: {{external: "{address}"}}
    options: {{subject: {SUBJECT}, mode: {mode}}}
workload: {{message_size: {SIZE}, rate: {rate}, duration: {seconds}s, warmup: 1s, drain: 5s}}
"""
    point = expand(parse_scenario(text))[0]
    run_dir = work / f"rate-{int(rate)}"
    manifest = Run(point, run_dir, LocalLauncher(), ProgressView(1, io.StringIO()),
                   "bench").execute()
    if manifest["status"] == "failed":
        raise SystemExit(f"the run at {rate:,.0f} msg/s failed: {manifest['problems']}")
    sent = pq.read_table(run_dir / "agents/producer-0/messages.parquet").to_pandas()
    got = pq.read_table(run_dir / "agents/consumer-0/messages.parquet",
                        columns=["seq"]).num_rows
    measured = sent[~sent.warmup]
    lag_us = (measured.sent_ns - measured.intended_ns).to_numpy() / 1000
    span_s = (measured.sent_ns.max() - measured.sent_ns.min()) / 1e9
    return {
        "rate": rate, "status": manifest["status"], "achieved": (len(measured) - 1) / span_s,
        "lag_p50": float(np.percentile(lag_us, 50)), "lag_p99": float(np.percentile(lag_us, 99)),
        "lag_p999": float(np.percentile(lag_us, 99.9)), "lost": len(sent) - got,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rates", default="50k,100k,200k,300k,400k")
    parser.add_argument("--mode", choices=["core", "jetstream"], default="core")
    parser.add_argument("--seconds", type=int, default=3)
    args = parser.parse_args()
    rates = [parse_rate(r) for r in args.rates.split(",")]
    with tempfile.TemporaryDirectory() as tmp:
        broker = start_recipe("bench", load_recipe("nats"), LocalLauncher(), Path(tmp))
        try:
            baseline = nats_py_rate(broker.address, args.mode, args.seconds)
            print(f"baseline: nats-py publish loop ({args.mode}) = {baseline:,.0f} msg/s")
            print(f"{'target':>10} {'achieved':>10} {'lag p50':>8} {'p99':>8} {'p99.9':>8} "
                  f"{'lost':>6} {'ok':>3} {'x nats-py':>9}")
            best = 0.0
            for rate in rates:
                r = step(broker.address, args.mode, rate, args.seconds, Path(tmp))
                ok = r["lag_p99"] <= LAG_P99_LIMIT_US and r["lost"] == 0
                best = max(best, r["achieved"]) if ok else best
                print(f"{rate:>10,.0f} {r['achieved']:>10,.0f} {r['lag_p50']:>8.1f} "
                      f"{r['lag_p99']:>8.1f} {r['lag_p999']:>8.1f} {r['lost']:>6} "
                      f"{'yes' if ok else 'no':>3} {r['achieved'] / baseline:>9.2f}")
            print(f"highest sustained (send-lag p99 <= {LAG_P99_LIMIT_US:.0f} us, no loss): "
                  f"{best:,.0f} msg/s = {best / baseline:.2f}x nats-py's publish loop")
        finally:
            broker.stop(keep_data=False)


if __name__ == "__main__":
    main()
