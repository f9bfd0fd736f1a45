"""Checking N SSH hosts in parallel: sixnines' own paramiko code (`sixnines hosts check`'s
orchestrator.plan.hosts_check, a thread per host) against fabric's `ThreadingGroup` running
the same probe and the same three clock readings, with the same strict host-key checking
(each connection's client given the inventory's known_hosts and paramiko's RejectPolicy:
fabric's own default accepts any key). Also whether each accepts a host whose key is not in
known_hosts when left at its defaults.

The hosts are test-bed hosts (deploy/testbed), so the network is loopback-fast and the
figures are each side's own cost. Each side runs `--repeat` times; medians are printed.

    .venv/bin/python benchmarks/bench_hosts_check.py [--hosts 8] [--repeat 3] [--smoke]

fabric is not a dependency of sixnines: without it installed (`pip install fabric`), its
lines say so.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import common

from sixnines.orchestrator.plan.hosts_check import (
    CLOCK_READINGS,
    PROBE,
    Bundled,
    check_hosts,
    needs_of,
)
from sixnines.orchestrator.scenario.model import load_inventory
from tests.integration.testbed import testbed

WORKDIR = "/var/tmp/sixnines"


def ours(inventory: Path) -> float:
    hosts, needs, bundled = load_inventory(inventory), needs_of(None), Bundled.here()
    began = time.perf_counter()
    verdicts = check_hosts(hosts, needs, bundled)
    took = time.perf_counter() - began
    if not all(verdict.ok for verdict in verdicts):
        raise SystemExit("\n".join(verdict.line() for verdict in verdicts))
    return took


def fabric_group(bed, strict: bool):
    """A ThreadingGroup over the bed's hosts; `strict`: each client checks host keys
    against the bed's known_hosts and refuses unknown ones, as sixnines does."""
    import fabric
    import paramiko

    connections = []
    for host in bed.hosts:
        connection = fabric.Connection(host.address, user=host.user, connect_kwargs={
            "key_filename": str(host.key), "look_for_keys": False, "allow_agent": False})
        if strict:
            connection.client.load_host_keys(str(host.known_hosts))
            connection.client.set_missing_host_key_policy(paramiko.RejectPolicy())
        connections.append(connection)
    return fabric.ThreadingGroup.from_connections(connections)


def with_fabric(bed) -> float:
    ask = json.dumps({"programs": [], "address": "0.0.0.0", "ports": 1, "bundle_marker": ""})
    probe = shlex.join(["python3", "-c", PROBE, WORKDIR, ask])
    group = fabric_group(bed, strict=True)
    began = time.perf_counter()
    results = group.run(probe, hide=True, warn=True)
    for _ in range(CLOCK_READINGS):
        group.run("date +%s%N", hide=True, warn=True)
    took = time.perf_counter() - began
    group.close()
    if any(result.exited != 0 for result in results.values()) or results.failed:
        raise SystemExit(f"fabric: {results.failed or results}")
    return took


def fabric_accepts_unknown_keys(bed) -> bool:
    """Whether a ThreadingGroup left at its defaults runs a command on a host whose key
    nobody put in a known_hosts file."""
    group = fabric_group(bed, strict=False)
    try:
        return not group.run("true", hide=True, warn=True).failed
    finally:
        group.close()


def median_line(name: str, seconds: list[float], hosts: int) -> str:
    middle = statistics.median(seconds)
    return f"{name:<40} {hosts:>5} {middle:>8.2f} {1e3 * middle / hosts:>10.0f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hosts", type=int, default=8)
    parser.add_argument("--repeat", type=int, default=3)
    args = common.arguments(parser, smoke={"hosts": 2, "repeat": 1})
    try:
        import fabric  # noqa: F401 (only whether it is there)
    except ImportError:
        fabric_here = False
    else:
        fabric_here = True
    with testbed(args.hosts) as bed:
        ours_s = [ours(bed.inventory) for _ in range(args.repeat)]
        fabric_s = [with_fabric(bed) for _ in range(args.repeat)] if fabric_here else []
        unknown = fabric_accepts_unknown_keys(bed) if fabric_here else None
    print(f"checking {args.hosts} test-bed hosts, median of {args.repeat} (load average "
          f"{os.getloadavg()[0]:.1f} on {os.cpu_count()} cores)")
    print(f"{'how':<40} {'hosts':>5} {'seconds':>8} {'ms/host':>10}")
    print(median_line("sixnines hosts check (paramiko, threads)", ours_s, args.hosts))
    if not fabric_here:
        print("fabric ThreadingGroup: not installed (pip install fabric)")
        return
    print(median_line("fabric ThreadingGroup, strict host keys", fabric_s, args.hosts))
    print(f"fabric / sixnines: {statistics.median(fabric_s) / statistics.median(ours_s):.2f}")
    print(f"fabric at its defaults runs on a host whose key is in no known_hosts: "
          f"{'yes' if unknown else 'no'}")


if __name__ == "__main__":
    main()
