"""sixnines' Redis publish rate from one producer process versus redis-benchmark, side by
side on one redis-server started from deploy/recipes/redis.yaml.

* redis-benchmark: `redis-benchmark -c 1 -P <pipeline> -n N PUBLISH <channel> <payload>`
  with a payload of the same size, its requests per second as it reports them.
* sixnines: a real one-way run (`Run`, as `sixnines run` drives it: one producer agent,
  one consumer agent) at a fixed rate far above what one process can send (default 2M
  msg/s), so the generator is saturated and sends everything due in one write; the figure
  is the *achieved* send rate over the measured window, from the producer's parquet file.
  With `--rates a,b,c` (rates one process can follow) it instead reports the highest rate
  held with send-lag p99 <= 100 µs and no loss.

Both sides publish to a channel with one subscriber draining it (sixnines' consumer agent;
for redis-benchmark a raw subscriber started here), so the server does the same fan-out
work. The ratio printed is sixnines / redis-benchmark (goal >= 1.0).

    .venv/bin/python benchmarks/bench_redis.py [--size 256] [--pipeline 16] [--seconds 3]
        [--rates 2M] [--smoke]
"""

from __future__ import annotations

import argparse
import csv
import io
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import common

CHANNEL = "bench"


def drain(host: str, port: int, channel: str) -> None:
    """A subscriber that only reads and discards (runs as its own process)."""
    sock = socket.create_connection((host, port))
    name = channel.encode()
    sock.sendall(b"*2\r\n$9\r\nSUBSCRIBE\r\n$%d\r\n%s\r\n" % (len(name), name))
    sink = bytearray(1 << 20)
    while sock.recv_into(sink):
        pass


def reference_rate(address: str, size: int, pipeline: int, requests: int) -> float:
    host, port = address.rsplit(":", 1)
    subscriber = subprocess.Popen([sys.executable, __file__, "--drain", address])
    try:
        time.sleep(0.5)  # subscribed
        done = subprocess.run(
            ["redis-benchmark", "-h", host, "-p", port, "-c", "1", "-P", str(pipeline),
             "-n", str(requests), "--csv", "PUBLISH", CHANNEL, "x" * size],
            capture_output=True, text=True, check=True, timeout=600)
    finally:
        subscriber.terminate()
        subscriber.wait(10)
    rows = list(csv.DictReader(io.StringIO(done.stdout)))
    return float(rows[-1]["rps"])


def sixnines_run(address: str, size: int, rate: float, seconds: int, work: Path) -> dict:
    system = common.external_system("redis", "redis", address, f"{{channel: {CHANNEL}}}")
    return common.measure_step("redis-rate", system, size, rate, seconds,
                               work / f"rate-{int(rate)}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=256, help="message size in bytes")
    parser.add_argument("--pipeline", type=int, default=16, help="redis-benchmark -P")
    parser.add_argument("--requests", type=int, default=1_000_000, help="redis-benchmark -n")
    parser.add_argument("--seconds", type=int, default=3, help="measured seconds per run")
    parser.add_argument("--rates", default="2M",
                        help="one saturating rate (achieved rate) or a ladder (highest held)")
    parser.add_argument("--drain", metavar="ADDRESS", help=argparse.SUPPRESS)
    args = common.arguments(parser, smoke={"rates": "10k", "seconds": 1,
                                           "requests": 10_000})
    if args.drain:
        host, port = args.drain.rsplit(":", 1)
        drain(host, int(port), CHANNEL)
        return
    rates = common.parse_rates(args.rates)
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        with common.recipe_broker("redis", work / "server") as broker:
            reference = reference_rate(broker.address, args.size, args.pipeline, args.requests)
            print(f"redis-benchmark -c 1 -P {args.pipeline} PUBLISH ({args.size} B): "
                  f"{reference:,.0f} msg/s")
            best = 0.0
            for rate in rates:
                r = sixnines_run(broker.address, args.size, rate, args.seconds, work)
                print(f"sixnines at {rate:,.0f} msg/s: achieved {r['achieved']:,.0f} msg/s, "
                      f"send-lag p99 {r['lag_p99']:,.1f} us, lost {r['lost']}, "
                      f"run {r['status']}")
                if common.held(r) or len(rates) == 1:
                    best = max(best, r["achieved"])
    what = ("achieved send rate, generator saturated" if len(rates) == 1 else
            f"highest rate with send-lag p99 <= {common.LAG_P99_LIMIT_US:.0f} us and no loss")
    print(f"sixnines ({what}): {best:,.0f} msg/s = {best / reference:.2f}x redis-benchmark "
          f"-P {args.pipeline}")


if __name__ == "__main__":
    main()
