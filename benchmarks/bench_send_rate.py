"""Highest open-loop rate one agent process sustains: 64-byte raw-TCP messages, send-lag
p99 ≤ 100 µs and no loss, through the sixnines relay to one consumer.

Each step is `sixnines run` of the builtin tcp relay at a higher rate, as a user runs it
(a subprocess, its live view on a pseudo-terminal, the relay and its CPU monitor started by
the run); the figures come straight from the agents' parquet files. The baseline, measured
in the same script against a relay of its own, is the naive generator: a Python loop
doing one `send()` per message as fast as it can (no pacing, no stamping).

`--ab` runs each rate four ways, interleaved, to show what each part `sixnines run` adds
around the agents costs: as users get it; without the live view (stderr a pipe, as in
CI); with the relay started by this script instead of the run (so no broker monitor);
with `loop_cpus: shared` (no CPU placement). `--recording-ab` runs each rate with chunks
streaming to disk and with the run kept in memory; `--analysis-ab` with the analysis
sidecar folding chunks while the run goes (as users run it) and with the whole analysis
after the run. Every run is analysed, as users run it.

    .venv/bin/python benchmarks/bench_send_rate.py [--rates 100k,250k,500k,750k,1M,1.25M]
        [--seconds 3] [--baseline-seconds 2] [--ab | --recording-ab | --analysis-ab] [--smoke]
"""

from __future__ import annotations

import argparse
import json
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import common

from sixnines.drivers.tcp.wire import LENGTH, PUBLISH, frame_prefix, hello

SIZE = 64


def start_relay() -> tuple[subprocess.Popen, str]:
    relay = subprocess.Popen([sys.executable, "-m", "sixnines", "broker", "tcp"],
                             stdout=subprocess.PIPE, text=True)
    return relay, json.loads(relay.stdout.readline())["listening"]


def naive_rate(address: str, seconds: float) -> float:
    """One send() per 64-byte frame, unpaced: what a simple generator reaches."""
    host, port = address.rsplit(":", 1)
    sock = socket.create_connection((host, int(port)))
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    sock.sendall(hello(PUBLISH, LENGTH.size + SIZE))
    sock.recv(1)
    frame = frame_prefix(SIZE) + bytes(SIZE)
    sent, deadline = 0, time.perf_counter() + seconds
    started = time.perf_counter()
    while time.perf_counter() < deadline:
        for _ in range(1000):
            sock.send(frame)
        sent += 1000
    rate = sent / (time.perf_counter() - started)
    sock.close()
    return rate


@dataclass(frozen=True)
class Variant:
    """One way of running a step: the relay the run uses (builtin, or this script's, which
    has no broker monitor), the live view on a terminal or not, more scenario YAML, and
    environment (SIXNINES_CHUNK_ROWS switches streaming recording)."""

    builtin: bool = True
    tty: bool = True
    extra: str = ""
    env: dict[str, str] = field(default_factory=dict)
    analysis: bool = True  # analysed as users run it: the sidecar folds chunks as they close
    workload: str = ""  # more workload fields
    size: int | str = SIZE  # message_size as the scenario writes it (a distribution too)


AS_USERS_RUN_IT = "as users run it"
#: --ab: what each part `sixnines run` adds around the agents costs
SIDECARS = {AS_USERS_RUN_IT: Variant(), "no live view": Variant(tty=False),
            "no broker monitor": Variant(builtin=False),
            "loop CPUs shared": Variant(extra="loop_cpus: shared")}
#: --recording-ab: chunks streaming to disk while the run goes, against the whole run in
#: memory written after it (docs/design.md, "Recording in chunks")
RECORDING = {"streaming": Variant(env={"SIXNINES_CHUNK_ROWS": "524288"}),
             "in memory": Variant(env={"SIXNINES_CHUNK_ROWS": "0"})}
#: --analysis-ab: the analysis sidecar folding closed chunks while the run goes, against the
#: whole analysis after the run (orchestrator.run.sidecar)
ANALYSIS = {"sidecar": Variant(), "analysis after the run": Variant(env={"SIXNINES_FOLLOW": "0"})}
#: --keys-ab: messages without keys, against Zipf keys (written into the ring before the
#: start: the loop is the same)
KEYS = {"no keys": Variant(), "zipf keys": Variant(workload="keys: {count: 1000, zipf: 1.1}")}
#: --sizes-ab: one size against sizes drawn from a distribution of the same mean (each
#: message's header stamped on its own, frames of varying lengths through the relay)
SIZES = {f"{SIZE} B": Variant(), "32 B or 96 B (mean 64 B)": Variant(size="{32: 1, 96: 1}")}


def step(rate: float, seconds: int, work: Path, variant: Variant, address: str) -> dict:
    system = ("{name: tcp, driver: tcp, broker: builtin}" if variant.builtin
              else common.external_system("tcp", "tcp", address))
    return common.measure_step("rate", system, variant.size, rate, seconds, work,
                               tty=variant.tty,
                               extra=variant.extra, env=variant.env,
                               analysis=variant.analysis, workload=variant.workload)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rates", default="100k,250k,500k,750k,1M,1.25M")
    parser.add_argument("--seconds", type=int, default=3)
    parser.add_argument("--baseline-seconds", type=float, default=2.0,
                        help="how long the naive loop sends")
    parser.add_argument("--ab", action="store_true",
                        help="each rate also without the live view, without the monitor "
                        "and with loop CPUs shared")
    parser.add_argument("--recording-ab", action="store_true",
                        help="each rate with chunks streaming and with the run in memory")
    parser.add_argument("--analysis-ab", action="store_true",
                        help="each rate with the analysis sidecar and with the analysis "
                        "after the run")
    parser.add_argument("--keys-ab", action="store_true",
                        help="each rate without keys and with Zipf keys over 1,000")
    parser.add_argument("--sizes-ab", action="store_true",
                        help="each rate with 64 B messages and with sizes drawn from a "
                        "distribution of mean 64 B")
    args = common.arguments(parser, smoke={"rates": "10k", "seconds": 1,
                                           "baseline_seconds": 0.2})
    rates = common.parse_rates(args.rates)
    variants = (SIDECARS if args.ab else RECORDING if args.recording_ab
                else ANALYSIS if args.analysis_ab else KEYS if args.keys_ab
                else SIZES if args.sizes_ab
                else {AS_USERS_RUN_IT: SIDECARS[AS_USERS_RUN_IT]})
    relay, address = start_relay()
    try:
        baseline = naive_rate(address, args.baseline_seconds)
        print(f"baseline: naive one-send-per-message loop = {baseline:,.0f} msg/s")
        rows: dict[str, list[str]] = {name: [] for name in variants}
        best = dict.fromkeys(variants, 0.0)
        with tempfile.TemporaryDirectory() as tmp:
            for rate in rates:
                for k, (name, variant) in enumerate(variants.items()):
                    r = step(rate, args.seconds, Path(tmp) / f"{int(rate)}-{k}", variant,
                             address)
                    best[name] = max(best[name], r["achieved"]) if common.held(r) else best[name]
                    rows[name].append(common.ladder_row(rate, r, baseline, 8))
                    print(f"{name}: {rows[name][-1]}", file=sys.stderr)
        for name in variants:
            print(f"\n{name}\n{common.ladder_header('x naive', 8)}")
            print("\n".join(rows[name]))
            print(f"highest sustained (send-lag p99 <= {common.LAG_P99_LIMIT_US:.0f} us, no "
                  f"loss): {best[name]:,.0f} msg/s = {best[name] / baseline:.1f}x the naive loop")
    finally:
        relay.terminate()
        relay.wait(10)


if __name__ == "__main__":
    main()
