"""What an agent really holds and writes per message, against `orchestrator.plan.footprint`.

Runs `sixnines run` (the product's own path) of the builtin tcp relay at 64 B for each
message count, watches every agent's peak resident memory (VmHWM) and reads the sizes of
the files it wrote. Prints, per role and count: peak MB, the bytes per message between the
smallest and each larger count (the slope, which is what the estimate's per-message figure
must cover), the bytes on disk per message, and measured / estimated memory. When chunks
stream, the agent's writer process is shown beside it (its peak counts again the shared
buffers it read, so agent + writer overstates what both hold). `--mode round-trip` measures
a requester (its requests and their replies) instead of a producer and a consumer.

    .venv/bin/python benchmarks/bench_footprint.py [--counts 200k,1M,4M] [--size 64]
        [--mode one-way|round-trip] [--seconds 4] [--smoke]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import common

from sixnines.formats.layout import MANIFEST_FILE
from sixnines.orchestrator.plan import footprint
from sixnines.orchestrator.scenario.matrix import expand
from sixnines.orchestrator.scenario.model import load_scenario
from sixnines.orchestrator.scenario.units import parse_rate
from tests.faults.processes import Sixnines


def measure(work: Path, messages: int, size: int, mode: str, seconds: int) -> dict[str, dict]:
    """One run of `messages` per side, sent over `seconds`: per role, its messages, peak
    bytes, file bytes and the estimate."""
    scenario = work / f"fp-{messages}.yaml"
    scenario.write_text(f"""
name: footprint
systems: [{{name: tcp, driver: tcp}}]
workload: {{mode: {mode}, message_size: {size}, rate: {messages // seconds},
           duration: {seconds}s, warmup: 0s, drain: 5s}}
""")
    needs = {n.plan.role: n for n in footprint.agent_needs(expand(load_scenario(scenario))[0])}
    controller = Sixnines("run", str(scenario), "--output", str(work / "out"),
                          "--no-analysis", cwd=work)
    peaks = controller.peak_memory("-m sixnines.agents")
    controller.finish()
    manifest = json.loads(sorted(work.glob(f"out/footprint/*/*/{MANIFEST_FILE}"))[-1].read_text())
    found = {}
    for agent in manifest["agents"]:
        count = max(agent["sent"], agent["received"])
        writers = [peak for pid, peak in peaks.items()
                   if controller.parent_of.get(pid) == agent["pid"]]
        found[agent["role"]] = {
            "messages": count, "peak": peaks.get(agent["pid"], 0), "writer": sum(writers),
            "disk": sum(f["bytes"] for f in agent["artifacts"].values()),
            "estimate": needs[agent["role"]].memory}
    return found


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--counts", default="200k,1M,4M")
    parser.add_argument("--size", type=int, default=64)
    parser.add_argument("--mode", choices=("one-way", "round-trip"), default="one-way")
    parser.add_argument("--seconds", type=int, default=4, help="how long each run sends")
    args = common.arguments(parser, smoke={"counts": "2k,4k", "seconds": 1})
    counts = [int(parse_rate(text)) for text in args.counts.split(",")]
    with tempfile.TemporaryDirectory(prefix="bench-footprint-") as work:
        results = [measure(Path(work), count, args.size, args.mode, args.seconds)
                   for count in counts]
    print(f"{'role':9} {'messages':>10} {'peak MB':>9} {'writer MB':>10} {'B/msg slope':>12} "
          f"{'disk B/msg':>11} {'both/estimate':>14}")
    for role in results[0]:
        first = results[0][role]
        for result in results:
            r = result[role]
            extra = r["messages"] - first["messages"]
            slope = f"{(r['peak'] - first['peak']) / extra:12.1f}" if extra else f"{'-':>12}"
            print(f"{role:9} {r['messages']:>10,} {r['peak'] / 2**20:9.1f} "
                  f"{r['writer'] / 2**20:10.1f} {slope} "
                  f"{r['disk'] / max(r['messages'], 1):11.2f} "
                  f"{(r['peak'] + r['writer']) / r['estimate']:14.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
