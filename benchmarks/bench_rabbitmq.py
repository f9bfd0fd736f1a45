"""sixnines' highest open-loop publish rate from one producer process to RabbitMQ (256 B,
send-lag p99 <= 100 µs, no loss), transient without confirms and with publisher confirms,
next to a plain pika publisher measured in the same script on the same node.

* Baseline: pika's BlockingConnection, `basic_publish` in a loop as fast as it goes (no
  pacing, no stamping) for `--seconds`; with confirms, pika's blocking confirm mode (each
  publish waits for its ack: what the plain pika API gives).
* sixnines: real one-way runs (`Run`, as `sixnines run` drives them: one producer agent,
  one consumer agent) at each rate of the ladder; the figure is the highest *achieved* rate
  whose send-lag p99 stayed <= 100 µs with nothing lost, from the agents' parquet files.

Both publish to a fanout exchange with one consumer draining its queue (for the baseline a
drain process started here, using the driver's receiver), on one node started from
deploy/recipes/rabbitmq.yaml. Ratios printed are sixnines / pika (goal >= 1.0).

    .venv/bin/python benchmarks/bench_rabbitmq.py [--rates 10k,20k,40k,60k] [--seconds 3]
"""

from __future__ import annotations

import argparse
import io
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pika
import pyarrow.parquet as pq

from drivers.rabbitmq import RabbitmqDriver, RabbitmqOptions
from orchestrator.brokers import start_recipe
from orchestrator.launchers.local import LocalLauncher
from orchestrator.matrix import expand
from orchestrator.progress import ProgressView
from orchestrator.recipes import load_recipe
from orchestrator.runner import Run
from orchestrator.scenario import parse_scenario
from orchestrator.units import parse_rate

LAG_P99_LIMIT_US = 100.0
EXCHANGE = "bench"


def drain(address: str, size: int) -> None:
    """A consumer that only receives and discards (runs as its own process); prints a line
    once subscribed."""
    receiver = RabbitmqDriver(address, RabbitmqOptions(exchange=EXCHANGE)).receiver(size, 0)
    out = memoryview(bytearray(4 << 20))
    print("subscribed", flush=True)
    while True:
        receiver.receive(out, size, 100)


def pika_rate(address: str, size: int, seconds: float, confirms: bool) -> float:
    """Plain pika: one basic_publish per message, unpaced."""
    host, port = address.rsplit(":", 1)
    consumer = subprocess.Popen([sys.executable, __file__, "--drain", address,
                                 "--size", str(size)], stdout=subprocess.PIPE, text=True)
    try:
        consumer.stdout.readline()
        connection = pika.BlockingConnection(pika.ConnectionParameters(host, int(port)))
        channel = connection.channel()
        channel.exchange_declare(EXCHANGE, "fanout", durable=True)
        if confirms:
            channel.confirm_delivery()
        body = bytes(size)
        sent, started = 0, time.perf_counter()
        deadline = started + seconds
        while time.perf_counter() < deadline:
            for _ in range(100):
                channel.basic_publish(EXCHANGE, "", body)
            sent += 100
        rate = sent / (time.perf_counter() - started)
        connection.close()
    finally:
        consumer.terminate()
        consumer.wait(10)
    return rate


def sixnines_run(address: str, size: int, rate: float, seconds: int, confirms: bool,
                 work: Path) -> dict:
    text = f"""
name: rabbitmq-rate
systems: [{{name: rmq, driver: rabbitmq, broker: {{external: "{address}"}},
            options: {{exchange: {EXCHANGE}, confirms: {str(confirms).lower()}}}}}]
workload: {{message_size: {size}, rate: {rate}, duration: {seconds}s, warmup: 1s, drain: 5s}}
"""
    point = expand(parse_scenario(text))[0]
    run_dir = work / f"rate-{int(rate)}-{'confirms' if confirms else 'plain'}"
    manifest = Run(point, run_dir, LocalLauncher(), ProgressView(1, io.StringIO()),
                   "bench").execute()
    sent = pq.read_table(run_dir / "agents/producer-0/messages.parquet").to_pandas()
    got = pq.read_table(run_dir / "agents/consumer-0/messages.parquet",
                        columns=["seq"]).num_rows
    measured = sent[~sent.warmup]
    lag_us = (measured.sent_ns - measured.intended_ns).to_numpy() / 1000
    span_s = (measured.sent_ns.max() - measured.sent_ns.min()) / 1e9
    return {
        "status": manifest["status"], "achieved": (len(measured) - 1) / span_s,
        "lag_p99": float(np.percentile(lag_us, 99)), "lost": len(sent) - got,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=256, help="message size in bytes")
    parser.add_argument("--seconds", type=int, default=3, help="measured seconds per run")
    parser.add_argument("--rates", default="10k,20k,30k,40k,60k,80k",
                        help="the ladder of offered rates (msg/s)")
    parser.add_argument("--drain", metavar="ADDRESS", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.drain:
        drain(args.drain, args.size)
        return
    rates = [parse_rate(r) for r in args.rates.split(",")]
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        broker = start_recipe("bench", load_recipe("rabbitmq"), LocalLauncher(), work / "node")
        try:
            for confirms in (False, True):
                mode = "with confirms" if confirms else "transient, no confirms"
                baseline = pika_rate(broker.address, args.size, args.seconds, confirms)
                print(f"[{mode}] pika basic_publish loop ({args.size} B): "
                      f"{baseline:,.0f} msg/s")
                best = 0.0
                for rate in rates:
                    r = sixnines_run(broker.address, args.size, rate, args.seconds, confirms,
                                     work)
                    held = r["lag_p99"] <= LAG_P99_LIMIT_US and r["lost"] == 0
                    print(f"[{mode}] sixnines at {rate:,.0f} msg/s: achieved "
                          f"{r['achieved']:,.0f} msg/s, send-lag p99 {r['lag_p99']:,.1f} us, "
                          f"lost {r['lost']}, run {r['status']}, "
                          f"{'held' if held else 'not held'}")
                    best = max(best, r["achieved"]) if held else best
                print(f"[{mode}] sixnines highest held (send-lag p99 <= "
                      f"{LAG_P99_LIMIT_US:.0f} us, no loss): {best:,.0f} msg/s = "
                      f"{best / baseline:.2f}x pika")
        finally:
            broker.stop(keep_data=False)


if __name__ == "__main__":
    main()
