"""Highest open-loop publish rate one sixnines process sustains through NATS: 256-byte
messages, send-lag p99 ≤ 100 µs and no loss, to one consumer (core NATS by default).

Each step is a real run (nats-server from the recipe, consumer and producer agent
processes, `Run` as `sixnines run` drives it) at a higher rate; the figures come from the
agents' parquet files. The baseline, measured in the same script against the same server,
is nats-py's own publishing loop: `await nc.publish(...)` as fast as it goes, then
`await nc.flush()` (no pacing, no stamping, nobody measuring latency).

    .venv/bin/python benchmarks/bench_nats.py [--rates 50k,100k,200k,300k,400k]
        [--mode core|jetstream] [--seconds 3] [--smoke]
"""

from __future__ import annotations

import argparse
import asyncio
import tempfile
import time
from pathlib import Path

import common

SIZE = 256
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
    options = f"{{subject: {SUBJECT}, mode: {mode}}}"
    system = common.external_system("nats", "nats", address, options)
    return common.measure_step("nats-rate", system, SIZE, rate, seconds,
                               work / f"rate-{int(rate)}", stop_on_failure=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rates", default="50k,100k,200k,300k,400k")
    parser.add_argument("--mode", choices=["core", "jetstream"], default="core")
    parser.add_argument("--seconds", type=int, default=3)
    args = common.arguments(parser, smoke={"rates": "5k", "seconds": 1})
    rates = common.parse_rates(args.rates)
    with tempfile.TemporaryDirectory() as tmp, common.recipe_broker("nats", Path(tmp)) as broker:
        baseline = nats_py_rate(broker.address, args.mode, args.seconds)
        print(f"baseline: nats-py publish loop ({args.mode}) = {baseline:,.0f} msg/s")
        print(common.ladder_header("x nats-py", 9))
        best = 0.0
        for rate in rates:
            r = step(broker.address, args.mode, rate, args.seconds, Path(tmp))
            best = max(best, r["achieved"]) if common.held(r) else best
            print(common.ladder_row(rate, r, baseline, 9))
        print(f"highest sustained (send-lag p99 <= {common.LAG_P99_LIMIT_US:.0f} us, no loss): "
              f"{best:,.0f} msg/s = {best / baseline:.2f}x nats-py's publish loop")


if __name__ == "__main__":
    main()
