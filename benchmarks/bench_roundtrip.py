"""Round-trip latency floor of the `tcp` driver next to `sockperf ping-pong`, one script.

Both sides run ping-pong (one 64-byte message in flight, the next sent on the reply) for
the same time with the same CPU placement: the echo server on CPU 0, the client on CPU 1
(`taskset`). sockperf: its own server and client, blocking and `--nonblocked`. sixnines:
its relay's echo and a requester with `schedule: closed`, `receive: blocking` and
`receive: busy-poll`. Figures are full round trips in µs; ratios are sixnines / sockperf.

    .venv/bin/python benchmarks/bench_roundtrip.py [--seconds 5] [--smoke]

Needs `sockperf` (Debian package) and two CPUs.
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import common
import numpy as np

SIZE = 64
SERVER_CPU, CLIENT_CPU = "0", "1"
KEYS = ("p50", "p99", "p99.9", "max")
SOCKPERF_LINE = re.compile(r"---> (?:percentile (\d+\.\d+)|<(MAX)> observation) = +([\d.]+)")


def sockperf(seconds: int, nonblocked: bool) -> dict:
    port = common.free_port()
    server = subprocess.Popen(["taskset", "-c", SERVER_CPU, "sockperf", "server", "--tcp",
                               "-i", "127.0.0.1", "-p", str(port)],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        common.await_listening(port, server)
        argv = ["taskset", "-c", CLIENT_CPU, "sockperf", "ping-pong", "--tcp", "-i",
                "127.0.0.1", "-p", str(port), "-m", str(SIZE), "-t", str(seconds),
                "--full-rtt", "--pre-warmup-wait", "1"]
        if nonblocked:
            argv.append("--nonblocked")
        done = subprocess.run(argv, capture_output=True, text=True, check=True)
    finally:
        server.terminate()
        server.wait(10)
    found = {}
    for pct, is_max, value in SOCKPERF_LINE.findall(done.stdout):
        key = "max" if is_max else f"p{float(pct):g}"
        found[key] = float(value)
    if not found.keys() >= set(KEYS):
        sys.exit(f"sockperf printed no {', '.join(KEYS)}:\n{done.stdout}{done.stderr}")
    return {key: found[key] for key in KEYS}


def sixnines(seconds: int, receive: str, work: Path) -> dict:
    relay = subprocess.Popen(["taskset", "-c", SERVER_CPU, sys.executable, "-m", "sixnines",
                              "broker", "tcp"], stdout=subprocess.PIPE, text=True)
    try:
        address = json.loads(relay.stdout.readline())["listening"]
        scenario = work / f"{receive}.yaml"
        scenario.write_text(f"""
name: {receive}
systems: [{{name: tcp, driver: tcp, broker: {{external: "{address}"}}}}]
workload: {{mode: round-trip, schedule: closed, receive: {receive}, message_size: {SIZE},
            rate: 200k, duration: {seconds}s, warmup: 1s}}
""")
        # the controller and the requester it starts inherit the client CPU
        done = subprocess.run(["taskset", "-c", CLIENT_CPU, sys.executable, "-m", "sixnines",
                               "run", str(scenario), "--output", str(work), "--no-analysis"],
                              capture_output=True, text=True, check=True)
    finally:
        relay.terminate()
        relay.wait(10)
    run_dir = next(Path(done.stdout.strip()).glob("01-*"))
    rows = common.agent_messages(run_dir, "requester")
    rows = rows[~rows.warmup & rows.recv_ns.notna()]
    rtt = (rows.recv_ns - rows.sent_ns).to_numpy() / 1000
    figures = {f"p{p:g}": float(np.percentile(rtt, p)) for p in (50, 99, 99.9)}
    return {**figures, "max": float(rtt.max()), "count": len(rtt)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=int, default=5)
    args = common.arguments(parser, smoke={"seconds": 1})
    if not shutil.which("sockperf"):
        sys.exit("sockperf is not installed (apt-get install sockperf)")
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for label, blocking in (("blocking", True), ("busy-poll", False)):
            reference = sockperf(args.seconds, nonblocked=not blocking)
            ours = sixnines(args.seconds, label, Path(tmp))
            rows.append((label, reference, ours))
    print(f"round trip, {SIZE} B over loopback TCP, server on CPU {SERVER_CPU}, "
          f"client on CPU {CLIENT_CPU}, µs")
    print(f"{'mode':<10} {'who':<9} " + " ".join(f"{k:>9}" for k in KEYS))
    for label, reference, ours in rows:
        sockperf_mode = "sockperf" + ("" if label == "blocking" else " nb")
        print(f"{label:<10} {sockperf_mode:<9} " + " ".join(f"{reference[k]:>9.1f}" for k in KEYS))
        print(f"{'':<10} {'sixnines':<9} " + " ".join(f"{ours[k]:>9.1f}" for k in KEYS))
        print(f"{'':<10} {'ratio':<9} " + " ".join(f"{ours[k] / reference[k]:>9.2f}" for k in KEYS))


if __name__ == "__main__":
    main()
