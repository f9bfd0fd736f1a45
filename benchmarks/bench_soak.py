"""A long run as a user starts it: does memory stay flat, is nothing lost, and does the send
lag of a long run match a short one's?

Runs `sixnines run` (the product's path, chunks streaming as by default) of the builtin tcp
relay, 64 B, one producer and one consumer at `--rate`, `--warmup` seconds of warm-up: first a
short run of `--short-seconds` (the baseline, same script, same sitting), then one of
`--minutes`. While each runs, every agent's and
writer's resident memory is sampled once a second. Send lag comes from the producer's own
interval log (latency.hlog, `send_lag`: what `sixnines report` reads), counts from the
manifest, bytes on disk from the agents' files; the steal time of the loop's CPU (the
hypervisor running something else on it) is shown, since it stalls the loop whatever
sixnines does.

    .venv/bin/python benchmarks/bench_soak.py [--rate 1M] [--minutes 10] [--short-seconds 10]
        [--warmup 5] [--smoke]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import common

from sixnines.agents.affinity import keep_off, restore
from sixnines.formats import hdr
from sixnines.formats.hlog import measured_counts, read_hlog
from sixnines.formats.layout import AGENTS_DIR, HLOG_FILE, MANIFEST_FILE
from sixnines.formats.vocabulary import Metric
from sixnines.orchestrator.scenario.units import parse_rate
from tests.faults.processes import command_line, descendants, parents

LIMIT_US = 100.0
MB = 1 << 20


def scenario(rate: float, seconds: int, warmup_s: int, output: Path) -> str:
    return f"""
name: soak
systems: [{{name: tcp, driver: tcp, broker: builtin}}]
workload: {{message_size: 64, rate: {rate}, duration: {seconds}s, warmup: {warmup_s}s,
           drain: 10s}}
output: {output}
"""


def rss_bytes(pid: int) -> int:
    try:
        found = re.search(r"VmRSS:\s+(\d+) kB", Path(f"/proc/{pid}/status").read_text())
    except OSError:
        return 0
    return int(found[1]) * 1024 if found else 0


def steal_ticks(cpu: int | None) -> int:
    """Clock ticks the hypervisor took from `cpu` (all CPUs: None) since boot."""
    name = "cpu" if cpu is None else f"cpu{cpu}"
    for line in Path("/proc/stat").read_text().splitlines():
        fields = line.split()
        if fields[0] == name:
            return int(fields[8])
    return 0


def run(work: Path, rate: float, seconds: int, warmup_s: int) -> dict:
    """One run: its manifest, its warm-up, per-process RSS series {pid: [(t, bytes)]} and parents,
    steal ticks per CPU."""
    work.mkdir(parents=True)
    (work / "s.yaml").write_text(scenario(rate, seconds, warmup_s, work / "out"))
    steal_before = {cpu: steal_ticks(cpu) for cpu in (0, 1, None)}
    with open(work / "stderr.txt", "w") as stderr:
        controller = subprocess.Popen(
            [sys.executable, "-m", "sixnines", "run", str(work / "s.yaml"), "--no-analysis"],
            cwd=work, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=stderr)
    # this script is not part of the run: off the CPU the placement gives the loop (the
    # highest), where its sampling would be the stalls it measures; the next run's controller
    # must again start on every CPU
    before = keep_off([os.getpid()], [max(os.sched_getaffinity(0))])
    series: dict[int, list[tuple[float, int]]] = {}
    parent_of: dict[int, int] = {}
    started = time.monotonic()
    while controller.poll() is None:
        for pid in descendants(controller.pid):
            if "-m sixnines.agents" in command_line(pid):
                series.setdefault(pid, []).append((time.monotonic() - started, rss_bytes(pid)))
                parent_of.setdefault(pid, parents().get(pid, 0))
        time.sleep(1)
    restore(before)
    if controller.wait() != 0:
        raise SystemExit(f"the run failed:\n{(work / 'stderr.txt').read_text()}")
    run_dir = next(work.glob(f"out/soak/*/*/{MANIFEST_FILE}")).parent
    steal = {cpu: steal_ticks(cpu) - before for cpu, before in steal_before.items()}
    return {"dir": run_dir, "manifest": json.loads((run_dir / MANIFEST_FILE).read_text()),
            "warmup_s": warmup_s,
            "rss": series, "parents": parent_of, "steal": steal}


def send_lag(run_dir: Path, warmup_s: int
             ) -> tuple[dict[str, float], list[tuple[float, float]]]:
    """Send-lag percentiles in µs after the warm-up, from the producer's interval log, and
    each interval's (start s, p99 µs)."""
    log = read_hlog(run_dir / AGENTS_DIR / "producer-0" / HLOG_FILE)
    counts = measured_counts(log, warmup_s)[Metric.SEND_LAG]
    values = hdr.percentile_values(counts, (50.0, 99.0, 99.9, 99.99))
    intervals = [(item.start_s, hdr.percentile_values(item.counts, (99.0,))[0] / 1000)
                 for item in log.intervals if item.tag == Metric.SEND_LAG]
    return dict(zip(("p50", "p99", "p99.9", "p99.99"), (v / 1000 for v in values),
                    strict=True)), intervals


def window_p99s(run_dir: Path, warmup_s: int, seconds: float) -> np.ndarray:
    """Send-lag p99 (µs) of each consecutive stretch of `seconds` after the warm-up, from the
    producer's interval log: what a run of that length would have measured at that moment
    of the long one, so the long/short ratio can be read against their spread."""
    log = read_hlog(run_dir / AGENTS_DIR / "producer-0" / HLOG_FILE)
    windows: dict[int, np.ndarray] = {}
    for item in log.intervals:
        if item.tag == Metric.SEND_LAG and item.start_s >= warmup_s:
            key = int((item.start_s - warmup_s) // seconds)
            windows[key] = windows.get(key, 0) + item.counts
    return np.array([hdr.percentile_values(counts, (99.0,))[0] / 1000
                     for _, counts in sorted(windows.items())])


def report(name: str, result: dict) -> dict[str, float]:
    manifest = result["manifest"]
    agents = {a["id"]: a for a in manifest["agents"]}
    sent, received = agents["producer-0"]["sent"], agents["consumer-0"]["received"]
    disk = sum(f["bytes"] for a in agents.values() for f in a["artifacts"].values())
    lag, intervals = send_lag(result["dir"], result["warmup_s"])
    slow = [(start, p99) for start, p99 in intervals if p99 > LIMIT_US]
    print(f"\n{name}: status {manifest['status']}, sent {sent:,}, received {received:,}, "
          f"lost {sent - received:,}; disk {disk / MB:,.0f} MiB = {disk / max(sent, 1):.2f} "
          "B/message (both agents' files)")
    print("  send lag µs: " + ", ".join(f"{k} {v:,.1f}" for k, v in lag.items()))
    worst = ", ".join(f"{start:.0f} s: {p99:,.0f}" for start, p99 in
                      sorted(slow, key=lambda item: -item[1])[:8])
    print(f"  intervals with send-lag p99 > {LIMIT_US:.0f} µs: {len(slow)} of "
          f"{len(intervals)}" + (f"; worst (start, p99 µs): {worst}" if slow else ""))
    print(f"  steal (hypervisor) during the run: {result['steal']} ticks of 10 ms "
          f"(loop on CPU {agents['producer-0'].get('loop_cpu')})")
    names = {a["pid"]: a["id"] for a in [*agents.values(), manifest.get("monitor") or {}]
             if a.get("pid")}
    for pid, samples in sorted(result["rss"].items()):
        parent = result["parents"].get(pid)
        name = names.get(pid) or (f"{names[parent]}'s writer" if parent in names else str(pid))
        times, values = np.array([t for t, _ in samples]), np.array([v for _, v in samples])
        late = values[times >= times[-1] / 2] if len(values) else values
        early = values[(times >= 15) & (times < 60)]
        print(f"  {name}: RSS peak {values.max() / MB:,.0f} MiB; 15-60 s "
              f"{early.max() / MB if len(early) else 0:,.0f} MiB; second half max "
              f"{late.max() / MB if len(late) else 0:,.0f} MiB")
    return lag


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rate", default="1M")
    parser.add_argument("--minutes", type=float, default=10)
    parser.add_argument("--short-seconds", type=int, default=10,
                        help="the short run's measured seconds, and the stretches the long "
                        "run is cut into")
    parser.add_argument("--warmup", type=int, default=5, help="seconds of warm-up, each run")
    parser.add_argument("--keep", type=Path, help="keep the runs here (default: deleted)")
    args = common.arguments(parser, smoke={"rate": "10k", "minutes": 1 / 60,
                                           "short_seconds": 1, "warmup": 1})
    rate = parse_rate(args.rate)
    with tempfile.TemporaryDirectory() as tmp:
        if args.keep:
            tmp = args.keep
        short = report(f"{args.short_seconds} s run",
                       run(Path(tmp) / "short", rate, args.short_seconds, args.warmup))
        long_run = run(Path(tmp) / "long", rate, int(args.minutes * 60), args.warmup)
        long = report(f"{args.minutes:g} min run", long_run)
        windows = window_p99s(long_run["dir"], args.warmup, args.short_seconds)
    near = np.count_nonzero(np.abs(windows / short["p99"] - 1) <= 0.1)
    print(f"\nsend-lag p99, long / short: {long['p99'] / short['p99']:.2f}")
    print(f"the long run in {len(windows)} stretches of {args.short_seconds} s: p99 µs min "
          f"{windows.min():,.1f}, median {np.median(windows):,.1f}, max {windows.max():,.1f}; "
          f"{near} within 10 % of the {args.short_seconds} s run's")


if __name__ == "__main__":
    main()
