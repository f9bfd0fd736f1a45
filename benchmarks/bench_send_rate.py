"""Highest open-loop rate one agent process sustains: 64-byte raw-TCP messages, send-lag
p99 ≤ 100 µs and no loss, through the sixnines relay to one consumer.

Each step is a real run (relay, consumer and producer processes; `Run` as `sixnines run`
drives it) at a higher rate; the figures come straight from the agents' parquet files. The
baseline, measured in the same script against the same relay, is the naive generator: a
Python loop doing one `send()` per message as fast as it can (no pacing, no stamping).

    .venv/bin/python benchmarks/bench_send_rate.py [--rates 100k,250k,500k,750k,1M,1.25M]
"""

from __future__ import annotations

import argparse
import io
import json
import socket
import struct
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq

from drivers.tcp import HELLO, LENGTH, PUBLISH
from orchestrator.launchers.local import LocalLauncher
from orchestrator.matrix import expand
from orchestrator.progress import ProgressView
from orchestrator.runner import Run
from orchestrator.scenario import parse_scenario
from orchestrator.units import parse_rate

SIZE = 64
LAG_P99_LIMIT_US = 100.0


def start_relay() -> tuple[subprocess.Popen, str]:
    relay = subprocess.Popen([sys.executable, "-m", "orchestrator", "broker", "tcp"],
                             stdout=subprocess.PIPE, text=True)
    return relay, json.loads(relay.stdout.readline())["listening"]


def naive_rate(address: str, seconds: float = 2.0) -> float:
    """One send() per 64-byte frame, unpaced: what a simple generator reaches."""
    host, port = address.rsplit(":", 1)
    sock = socket.create_connection((host, int(port)))
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    sock.sendall(HELLO.pack(b"SXN", PUBLISH, LENGTH.size + SIZE))
    sock.recv(1)
    frame = struct.pack("<I", SIZE) + bytes(SIZE)
    sent, deadline = 0, time.perf_counter() + seconds
    started = time.perf_counter()
    while time.perf_counter() < deadline:
        for _ in range(1000):
            sock.send(frame)
        sent += 1000
    rate = sent / (time.perf_counter() - started)
    sock.close()
    return rate


def step(address: str, rate: float, seconds: int, work: Path) -> dict:
    text = f"""
name: rate
systems: [{{name: tcp, driver: tcp, broker: {{external: "{address}"}}}}]
workload: {{message_size: {SIZE}, rate: {rate}, duration: {seconds}s, warmup: 1s, drain: 5s}}
"""
    point = expand(parse_scenario(text))[0]
    run_dir = work / f"rate-{int(rate)}"
    manifest = Run(point, run_dir, LocalLauncher(), ProgressView(1, io.StringIO()),
                   "bench").execute()
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
    parser.add_argument("--rates", default="100k,250k,500k,750k,1M,1.25M")
    parser.add_argument("--seconds", type=int, default=3)
    args = parser.parse_args()
    rates = [parse_rate(r) for r in args.rates.split(",")]
    relay, address = start_relay()
    try:
        baseline = naive_rate(address)
        print(f"baseline: naive one-send-per-message loop = {baseline:,.0f} msg/s")
        print(f"{'target':>10} {'achieved':>10} {'lag p50':>8} {'p99':>8} {'p99.9':>8} "
              f"{'lost':>6} {'ok':>3} {'x naive':>8}")
        best = 0.0
        with tempfile.TemporaryDirectory() as tmp:
            for rate in rates:
                r = step(address, rate, args.seconds, Path(tmp))
                ok = r["lag_p99"] <= LAG_P99_LIMIT_US and r["lost"] == 0
                best = max(best, r["achieved"]) if ok else best
                print(f"{rate:>10,.0f} {r['achieved']:>10,.0f} {r['lag_p50']:>8.1f} "
                      f"{r['lag_p99']:>8.1f} {r['lag_p999']:>8.1f} {r['lost']:>6} "
                      f"{'yes' if ok else 'no':>3} {r['achieved'] / baseline:>8.2f}")
        print(f"highest sustained (send-lag p99 <= {LAG_P99_LIMIT_US:.0f} us, no loss): "
              f"{best:,.0f} msg/s = {best / baseline:.1f}x the naive loop")
    finally:
        relay.terminate()
        relay.wait(10)


if __name__ == "__main__":
    main()
