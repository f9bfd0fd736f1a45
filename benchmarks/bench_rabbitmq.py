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

    .venv/bin/python benchmarks/bench_rabbitmq.py [--rates 10k,20k,40k,60k] [--seconds 3] [--smoke]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import common
import pika

from sixnines.drivers.rabbitmq import RabbitmqDriver, RabbitmqOptions

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
    system = common.external_system("rmq", "rabbitmq", address,
                                    f"{{exchange: {EXCHANGE}, confirms: {str(confirms).lower()}}}")
    run_dir = work / f"rate-{int(rate)}-{'confirms' if confirms else 'plain'}"
    return common.measure_step("rabbitmq-rate", system, size, rate, seconds, run_dir)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=256, help="message size in bytes")
    parser.add_argument("--seconds", type=int, default=3, help="measured seconds per run")
    parser.add_argument("--rates", default="10k,20k,30k,40k,60k,80k",
                        help="the ladder of offered rates (msg/s)")
    parser.add_argument("--drain", metavar="ADDRESS", help=argparse.SUPPRESS)
    args = common.arguments(parser, smoke={"rates": "1k", "seconds": 1})
    if args.drain:
        drain(args.drain, args.size)
        return
    rates = common.parse_rates(args.rates)
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        with common.recipe_broker("rabbitmq", work / "node") as broker:
            for confirms in (False, True):
                mode = "with confirms" if confirms else "transient, no confirms"
                baseline = pika_rate(broker.address, args.size, args.seconds, confirms)
                print(f"[{mode}] pika basic_publish loop ({args.size} B): "
                      f"{baseline:,.0f} msg/s")
                best = 0.0
                for rate in rates:
                    r = sixnines_run(broker.address, args.size, rate, args.seconds, confirms,
                                     work)
                    print(f"[{mode}] sixnines at {rate:,.0f} msg/s: achieved "
                          f"{r['achieved']:,.0f} msg/s, send-lag p99 {r['lag_p99']:,.1f} us, "
                          f"lost {r['lost']}, run {r['status']}, "
                          f"{'held' if common.held(r) else 'not held'}")
                    best = max(best, r["achieved"]) if common.held(r) else best
                print(f"[{mode}] sixnines highest held (send-lag p99 <= "
                      f"{common.LAG_P99_LIMIT_US:.0f} us, no loss): {best:,.0f} msg/s = "
                      f"{best / baseline:.2f}x pika")

if __name__ == "__main__":
    main()
