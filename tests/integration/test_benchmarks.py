"""Every script in benchmarks/ runs end to end with `--smoke` (tiny rates, a second or less,
small data; the real brokers, Spark and test-bed hosts it needs), so each command
docs/performance.md publishes keeps working. One test per `benchmarks/bench_*.py`,
found on disk: a new script without `--smoke`, or without its lines below, fails.

What is checked is that the script exits 0 and prints its figures and ratios, never
their values: speed is measured by the benchmarks, not asserted by tests."""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
from contextlib import suppress
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"
SCRIPTS = sorted(BENCHMARKS.glob("bench_*.py"))
SMOKE_TIMEOUT_S = 240
VENV_BIN = str(Path(sys.executable).parent)

N = r"-?[\d,.]+"  # a figure as the scripts print it
#: the lines (regular expressions, one line each) a script's smoke run must print
FIGURES: dict[str, list[str]] = {
    "bench_analysis_scale": [
        rf"^embedded local\[\*\] +\d+ +{N} +{N} +{N} +1\.00 ",
        rf"^standalone, 2 workers x 1 core \S+ +2 +{N} +{N} +{N} +{N} ",
        r"^summaries identical"],
    "bench_change_points": [
        rf"^real runs: 2, {N} latencies each \(median\), p99 {N} to {N} µs; nights unsteady: "
        rf"{N}%$",
        *(rf"^{machine} +{key} +{N} +({N} +){{3}} +{N} +{N}$"
          for machine in ("steady", "one run", "as they came")
          for key in (r"p50", r"p90", r"p99", r"p99\.9", r"p99\.99"))],
    "bench_codecs": [rf"^{name} +\d+ ns/msg$" for name in (
        r"redis XREAD reply", r"nats MSG \(fast path\)", r"nats MSG \(general\)",
        r"amqp deliveries")],
    "bench_footprint": [rf"^{role} +{N} +{N} +{N} +(-|{N}) +{N} +{N}$"  # slope: - for the first
                        for role in ("producer", "consumer")],
    "bench_history_page": [rf"^uPlot \(the page\) +{N} +{N} +{N}  \[\[",
                           rf"^SVG \(svg\.py\) +{N} +{N} +{N}  \[\[",
                           rf"^SVG \(svg\.py\) / uPlot: size {N}x, first screen {N}x, "
                           rf"all drawn {N}x$",
                           r"^requests off the machine: 0 "],
    "bench_history": [rf"^synthetic year: \d+ nights x \d+ runs written in {N} s$",
                      *(rf"^1 +{step} +{N} s +{N} s +{N}" for step in (
                          "from nothing", "one new night", "nothing new")),
                      r"^from nothing within 30 s: \d of 1 tries",
                      r"^one new night within 2 s: \d of 1 tries"],
    "bench_histogram": [rf"^hdr\.counts_of +{N} +{N} s",
                        r"^speed-up \(hdrh / ours per value\) +\d+x",
                        rf"^write_hlog .* {N} s", rf"^read_hlog .* {N} s"],
    "bench_hosts_check": [
        rf"^sixnines hosts check \(paramiko, threads\) +2 +{N} +{N}$",
        rf"^(fabric ThreadingGroup, strict host keys +2 +{N} +{N}|fabric ThreadingGroup: "
        r"not installed .*)$"],
    "bench_kafka": [
        rf"^{client} +1000 +{N} +{N} +{N} +{N} +{N} +\d+ +ok$"
        for client in ("confluent", "kafka-python")] + [
        r"^highest rate with send-lag p99 <= 100 µs and no loss: .*; confluent / kafka-python = ",
        rf"^at 1000 msg/s asked: sent/s confluent / kafka-python = {N}x, recv/s = {N}x$"],
    "bench_latency": [rf"^{system} +ok +\d+( +{N} \( *{N}x\)){{5}}$" for system in (
        "tcp", "zmq", "redis", "nats", "rabbitmq", "kafka-noida")],
    "bench_long_run": [rf"^sidecar +{N} s +\({N}M records, {N}x sooner",
                       rf"^whole analysis after the run +{N} s +\({N}M records, 1\.0x sooner"],
    "bench_nats": [rf"^baseline: nats-py publish loop \(core\) = {N} msg/s$",
                   rf"^ +5,000( +{N}){{5}} +(yes|no) +{N}$",
                   rf"^highest sustained .*: {N} msg/s = {N}x nats-py's publish loop$"],
    "bench_orchestration": [rf"^local +{N} +\+0\.00 +{N} +\+0\.00$",
                            rf"^1 SSH host +{N} +\+?{N} +{N} +\+?{N}$",
                            rf"^3 SSH hosts +{N} +\+?{N} +{N} +\+?{N}$"],
    "bench_rabbitmq": [line for mode in (r"\[transient, no confirms\]", r"\[with confirms\]")
                       for line in (
        rf"^{mode} pika basic_publish loop \(256 B\): {N} msg/s$",
        rf"^{mode} sixnines at 1,000 msg/s: achieved {N} msg/s, .* run ok, (not )?held$",
        rf"^{mode} sixnines highest held .*: {N} msg/s = {N}x pika$")],
    "bench_recording": [rf"^baseline: perf_counter_ns\(\) call = {N} ns$",
                        # send, x clock, receive, x clock, varying sizes' send
                        *(rf"^ +{batch}( +{N}){{5}}$" for batch in (1, 4, 16, 64, 256, 1024))],
    "bench_redis": [rf"^redis-benchmark -c 1 -P 16 PUBLISH \(256 B\): {N} msg/s$",
                    rf"^sixnines at 10,000 msg/s: achieved {N} msg/s, .* run ok$",
                    rf"^sixnines \(.*\): {N} msg/s = {N}x redis-benchmark -P 16$"],
    "bench_roundtrip": [rf"^blocking +sockperf( +{N}){{4}}$",
                        rf"^busy-poll +sockperf nb( +{N}){{4}}$",
                        rf"^ +sixnines( +{N}){{4}}$", rf"^ +ratio( +{N}){{4}}$"],
    "bench_scenario_analysis": [
        rf"^quickstart: 2 runs measured in {N} s, analysed in {N} s: {N} of the measuring time$",
        rf"^ 1 run\(s\): +{N} s +\(1\.00× 1 run\(s\)\)$"],
    "bench_send_rate": [rf"^baseline: naive one-send-per-message loop = {N} msg/s$",
                        rf"^ +10,000( +{N}){{5}} +(yes|no) +{N}$",
                        rf"^highest sustained .*: {N} msg/s = {N}x the naive loop$"],
    "bench_series": [*(rf"^{step} \(one core\) +{N} +{N} +{N}$"
                       for step in ("read", "first pass", "second pass")),
                     rf"^analyze end to end \(\d+ cores\) +{N} +{N}$"],
    "bench_sidecar_latency": [rf"^  {variant} +p50 +{N} \({N}×\) +p99 +{N} \({N}×\) +p99\.9 "
                              for variant in (r"no sidecar \(baseline\)", r"end \(default\)",
                                              "live")],
    "bench_soak": [rf"^1 s run: status ok, sent {N}, received {N}, lost 0;",
                   rf"^{N} min run: status ok, sent {N}, received {N}, lost 0;",
                   rf"^send-lag p99, long / short: {N}$",
                   rf"^the long run in \d+ stretches of 1 s: p99 µs min {N}, median {N}, "]}

#: executables a script needs beyond the Python environment (deploy/setup.sh --test)
NEEDS: dict[str, tuple[str, ...]] = {
    "bench_history_page": ("chromium",),
    "bench_kafka": ("noida-db",), "bench_latency": ("redis-server", "noida-db",
                                                   "rabbitmq-server", "nats-server"),
    "bench_nats": ("nats-server",), "bench_orchestration": ("ip", "sshd", "ssh-keygen"),
    "bench_hosts_check": ("ip", "sshd", "ssh-keygen"),
    "bench_rabbitmq": ("rabbitmq-server",), "bench_redis": ("redis-server", "redis-benchmark"),
    "bench_roundtrip": ("sockperf", "taskset")}


def missing(script: str) -> list[str]:
    path = os.pathsep.join([VENV_BIN, os.environ.get("PATH", ""), "/usr/sbin", "/sbin"])
    return [tool for tool in NEEDS.get(script, ()) if shutil.which(tool, path=path) is None]


def smoke(script: Path, cwd: Path) -> subprocess.CompletedProcess[str]:
    """`python SCRIPT --smoke` in `cwd`, in a process group of its own, which is ended
    afterwards however the script ended (nothing it started outlives the test)."""
    env = {**os.environ, "SPARK_LOCAL_IP": "127.0.0.1",
           "PATH": os.pathsep.join([VENV_BIN, os.environ.get("PATH", "")])}
    process = subprocess.Popen([sys.executable, str(script), "--smoke"], cwd=cwd, env=env,
                               stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        stdout, stderr = process.communicate(timeout=SMOKE_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        stdout, stderr = process.communicate()
        pytest.fail(f"{script.name} --smoke took over {SMOKE_TIMEOUT_S} s:\n{stderr[-3000:]}")
    finally:
        with suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
    return subprocess.CompletedProcess(process.args, process.returncode, stdout, stderr)


def test_the_expected_lines_name_the_scripts_found():
    assert SCRIPTS, f"no bench_*.py in {BENCHMARKS}"
    assert sorted(FIGURES) == sorted(script.stem for script in SCRIPTS)


@pytest.mark.parametrize("script", SCRIPTS, ids=lambda path: path.stem)
def test_smoke_run_prints_its_figures(script: Path, tmp_path: Path):
    expected = FIGURES.get(script.stem)
    assert expected, (f"{script.name}: no lines to expect from its smoke run: add them to "
                      "FIGURES in tests/integration/test_benchmarks.py")
    if absent := missing(script.stem):
        pytest.skip(f"{script.name} needs {', '.join(absent)} (deploy/setup.sh --test)")
    if script.stem in ("bench_orchestration", "bench_hosts_check") and os.geteuid() != 0:
        pytest.skip("the test bed needs root")
    done = smoke(script, tmp_path)
    assert done.returncode == 0, (f"{script.name} --smoke exited {done.returncode}:\n"
                                  f"{done.stdout[-2000:]}\n{done.stderr[-3000:]}")
    unprinted = [line for line in expected if not re.search(line, done.stdout, re.MULTILINE)]
    assert not unprinted, (f"{script.name} --smoke did not print lines like {unprinted}; "
                           f"it printed:\n{done.stdout}")
