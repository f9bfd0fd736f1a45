"""kafka-python next to confluent-kafka: the kafka driver's two clients, same broker, same load.

One scenario, run through `sixnines run`: both clients (`client: kafka-python`, `client:
confluent`), each run on a fresh Kafka-protocol broker from the `kafka-noida` recipe
(noida-db, NOT Apache Kafka: the figures describe the clients against noida-db), 256-byte
messages, one producer and one consumer process, open loop at each rate of `--rates`.
For every run: the achieved send and receive rates (messages over the measured window, at
the sender and the receiver), send-lag p99, latency p50/p99 and lost messages.

It prints two comparisons as confluent / kafka-python ratios:
- the highest tested rate each client sustained with send-lag p99 <= 100 µs and no loss
  ("-" if none did);
- the achieved send and receive rates at the highest tested rate (a fixed high rate: what
  each client gets through when asked for more than it can do).

    .venv/bin/python benchmarks/bench_kafka.py [--seconds 5] [--rates 1k,10k,50k,200k] [--smoke]

Broker, producer and consumer share this host's CPUs, so compare the ratio, not the
absolute figures, and run it on an otherwise idle machine.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

import common
import numpy as np

from sixnines.formats.layout import AGENTS_DIR, MANIFEST_FILE

SIZE = 256
CLIENTS = ("kafka-python", "confluent")


def scenario(seconds: int, rates: list[str]) -> str:
    systems = "\n".join(
        f"  - {{name: {client}, driver: kafka, broker: {{recipe: kafka-noida}}, "
        f"options: {{client: {client}, topic: bench}}}}" for client in CLIENTS)
    return f"""
name: bench-kafka
systems:
{systems}
workload:
  message_size: {SIZE}
  rate: [{", ".join(rates)}]
  duration: {seconds}s
  warmup: 1s
  drain: 10s
"""


def figures(run_dir: Path) -> dict:
    manifest = json.loads((run_dir / MANIFEST_FILE).read_text())
    sent = common.agent_messages(run_dir, "producer")
    got = common.agent_messages(run_dir, "consumer")
    result = {"client": manifest["driver_options"]["client"],
              "rate": manifest["params"]["rate"], "status": manifest["status"]}
    if sent is None or got is None or sent.empty:
        return result | {"send_rate": 0.0, "receive_rate": 0.0, "lag_p99_us": float("nan"),
                         "lat_p50_ms": float("nan"), "lat_p99_ms": float("nan"),
                         "lost": len(sent) if sent is not None else 0}
    sent, got = sent[~sent.warmup], got[~got.warmup]
    window_s = (sent.sent_ns.max() - sent.intended_ns.min()) / 1e9
    received = got.drop_duplicates(["producer_id", "seq"])
    receive_s = (received.recv_ns.max() - received.recv_ns.min()) / 1e9 if len(received) > 1 \
        else float("inf")
    lag_us = (sent.sent_ns - sent.intended_ns).to_numpy() / 1e3
    latency_ms = (received.recv_ns - received.intended_ns).to_numpy() / 1e6
    return result | {
        "send_rate": len(sent) / window_s,
        "receive_rate": len(received) / receive_s,
        "lag_p99_us": float(np.percentile(lag_us, 99)),
        "lat_p50_ms": float(np.percentile(latency_ms, 50)) if len(latency_ms) else float("nan"),
        "lat_p99_ms": float(np.percentile(latency_ms, 99)) if len(latency_ms) else float("nan"),
        "lost": len(sent) - len(received),
    }


def ratio(ours: float, baseline: float) -> str:
    return f"{ours / baseline:.1f}x" if baseline else "-"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=int, default=5)
    parser.add_argument("--rates", default="1k,10k,50k,200k",
                        help="comma-separated open-loop rates, msg/s")
    args = common.arguments(parser, smoke={"rates": "1k", "seconds": 1})
    rates = common.split_rates(args.rates)
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        (work / "bench.yaml").write_text(scenario(args.seconds, rates))
        done = subprocess.run([sys.executable, "-m", "sixnines", "run", "bench.yaml",
                               "--output", str(work / "out"), "--no-analysis"],
                              cwd=work, capture_output=True, text=True)
        if done.returncode not in (0, 1):  # 1: some run failed or was partial; shown below
            sys.exit(done.stderr)
        results = [figures(m.parent) for m in sorted((work / "out").glob(f"**/{MANIFEST_FILE}"))
                   if (m.parent / AGENTS_DIR).is_dir()]
    print(f"kafka driver, {SIZE} B, 1 producer -> Kafka-protocol broker noida-db (not Apache "
          "Kafka) -> 1 consumer, one host")
    header = (f"{'client':<13}{'rate':>9}{'sent/s':>10}{'recv/s':>10}{'lag p99 µs':>12}"
              f"{'lat p50 ms':>12}{'lat p99 ms':>12}{'lost':>8}  status")
    print(header)
    for r in sorted(results, key=lambda r: (r["client"], r["rate"])):
        print(f"{r['client']:<13}{r['rate']:>9.0f}{r['send_rate']:>10.0f}{r['receive_rate']:>10.0f}"
              f"{r['lag_p99_us']:>12.1f}{r['lat_p50_ms']:>12.2f}{r['lat_p99_ms']:>12.2f}"
              f"{r['lost']:>8}  {r['status']}")
    best, top = {}, {}
    for client in CLIENTS:
        mine = [r for r in results if r["client"] == client]
        ok = [r["rate"] for r in mine
              if r["lag_p99_us"] <= common.LAG_P99_LIMIT_US and r["lost"] == 0
              and r["status"] == "ok"]
        best[client] = max(ok, default=0.0)
        top[client] = max(mine, key=lambda r: r["rate"], default=None)
    print(f"\nhighest rate with send-lag p99 <= {common.LAG_P99_LIMIT_US:.0f} µs and no loss: "
          + ", ".join(f"{c} {best[c] or '-'}" for c in CLIENTS)
          + f"; confluent / kafka-python = {ratio(best['confluent'], best['kafka-python'])}")
    if all(top.values()):
        base, ours = top["kafka-python"], top["confluent"]
        print(f"at {ours['rate']:.0f} msg/s asked: sent/s confluent / kafka-python = "
              f"{ratio(ours['send_rate'], base['send_rate'])}, recv/s = "
              f"{ratio(ours['receive_rate'], base['receive_rate'])}")


if __name__ == "__main__":
    main()
