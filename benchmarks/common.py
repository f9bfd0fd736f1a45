"""What the benchmarks share: `--smoke` (every script's arguments go through `arguments`);
for the rate benchmarks, a broker from its recipe, one real run per offered rate through
`sixnines run` itself (a subprocess, its live view on a pseudo-terminal as on a laptop,
unless asked otherwise) and the send-side figures read straight from the agents' parquet
files, so every script measures a step the same way, and as users get it.

Imported as `common`: the scripts run as files, with this folder first on sys.path."""

from __future__ import annotations

import argparse
import json
import os
import pty
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow.parquet as pq
import yaml

from sixnines.formats.chunks import message_files
from sixnines.formats.layout import AGENTS_DIR, MANIFEST_FILE
from sixnines.orchestrator.launchers.local import LocalLauncher
from sixnines.orchestrator.results.store import find_run_dirs
from sixnines.orchestrator.run.brokers import start_recipe
from sixnines.orchestrator.scenario.recipes import load_recipe
from sixnines.orchestrator.scenario.units import parse_rate

LAG_P99_LIMIT_US = 100.0  # a rate counts as held when send-lag p99 stays under this
SMOKE_HELP = ("tiny settings (rates, a second or less, few rounds, small data): the same path "
              "end to end in seconds, its figures meaningless; options given still win")


def arguments(parser: argparse.ArgumentParser, smoke: dict[str, object],
              argv: list[str] | None = None) -> argparse.Namespace:
    """The script's arguments, with `--smoke`: `smoke` replaces the defaults it names, so a
    smoke run takes the very path a measurement takes, only smaller (the test suite runs
    every script so: tests/integration/test_benchmarks.py)."""
    parser.add_argument("--smoke", action="store_true", help=SMOKE_HELP)
    args = parser.parse_args(argv)
    if args.smoke:
        parser.set_defaults(**smoke)
        args = parser.parse_args(argv)
    return args


@contextmanager
def directory(path: Path | None) -> Iterator[Path]:
    """`path` (made if missing), or a temporary directory removed afterwards when None
    (where a smoke run keeps what a measurement would cache)."""
    if path is not None:
        path.mkdir(parents=True, exist_ok=True)
        yield path
        return
    with tempfile.TemporaryDirectory(prefix="bench-") as made:
        yield Path(made)


def workload_option(parser: argparse.ArgumentParser) -> None:
    """`--workload FIELD=VALUE`, for the scripts that run a scenario file (see
    scenario_with); each is kept as (field, value)."""
    parser.add_argument("--workload", action="append", default=[], type=_field_value,
                        metavar="FIELD=VALUE",
                        help="replace a workload field of the scenario, e.g. duration=5s "
                        "(a YAML value; repeatable)")


def _field_value(text: str) -> tuple[str, object]:
    field, equals, value = text.partition("=")
    if not (field.strip() and equals):
        raise argparse.ArgumentTypeError(f"{text!r} is not FIELD=VALUE")
    return field.strip(), yaml.safe_load(value)


def scenario_with(scenario: Path, work: Path, changes: list[tuple[str, object]]) -> Path:
    """`scenario` itself, or a copy in `work` with the workload fields `changes` names
    replaced; relative paths in it still resolve from the working directory, as
    `sixnines run` resolves them."""
    if not changes:
        return scenario
    text = yaml.safe_load(scenario.read_text())
    text["workload"].update(changes)
    copy = work / scenario.name
    copy.write_text(yaml.safe_dump(text, sort_keys=False))
    return copy


def split_rates(text: str) -> list[str]:
    """`--rates 10k,1M` as the rate words given (for scenario text)."""
    return [rate.strip() for rate in text.split(",") if rate.strip()]


def parse_rates(text: str) -> list[float]:
    """`--rates 10k,1M` as msg/s."""
    return [parse_rate(rate) for rate in split_rates(text)]


def free_port() -> int:
    """A loopback TCP port nothing listens on at this moment."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def await_listening(port: int, server: subprocess.Popen, timeout_s: float = 10) -> None:
    """Return once `server`, started a moment ago, accepts connections on loopback `port`
    (a client started before would find nothing there); end the script if it exits or
    takes longer than `timeout_s`."""
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            if server.poll() is not None or time.monotonic() > deadline:
                raise SystemExit(f"{server.args} is not listening on port {port}") from None
            time.sleep(0.05)


@contextmanager
def recipe_broker(name: str, work: Path):
    """The broker of deploy/recipes/NAME.yaml, started as a run would start it; yields the
    RunningBroker (`.address`) and stops it afterwards."""
    broker = start_recipe("bench", load_recipe(name), LocalLauncher(), work)
    try:
        yield broker
    finally:
        broker.stop(keep_data=False)


def external_system(name: str, driver: str, address: str, options: str = "{}") -> str:
    """A scenario system (YAML flow mapping) whose broker already listens at `address`."""
    return (f'{{name: {name}, driver: {driver}, broker: {{external: "{address}"}}, '
            f"options: {options}}}")


def step_scenario(name: str, system: str, size: int | str, rate: float, seconds: int,
                  extra: str = "", workload: str = "") -> str:
    """Scenario text for one step: one system (a YAML flow mapping) at one open-loop rate,
    a second of warm-up, `seconds` measured, 5 s to drain; `extra`: more top-level YAML;
    `workload`: more workload fields (`keys: {count: 1000}`)."""
    more = f", {workload}" if workload else ""
    return f"""
name: {name}
systems: [{system}]
workload: {{message_size: {size}, rate: {rate}, duration: {seconds}s, warmup: 1s, drain: 5s{more}}}
{extra}
"""


def measure_step(name: str, system: str, size: int | str, rate: float, seconds: int,
                 run_dir: Path, stop_on_failure: bool = False, tty: bool = True,
                 extra: str = "", env: dict[str, str] | None = None,
                 analysis: bool = False, workload: str = "") -> dict:
    """One step run (see step_scenario) in `run_dir` and measured: rate, run status and
    send_figures. `stop_on_failure`: end the script, naming the run's problems, when the
    run failed outright (it leaves no figures to read). `env`: set for the run;
    `analysis`: the run analysed as users run it (its sidecar going while it runs)."""
    run = sixnines_run(step_scenario(name, system, size, rate, seconds, extra, workload),
                       run_dir, tty, env, analysis)
    manifest = json.loads((run / MANIFEST_FILE).read_text())
    if stop_on_failure and manifest["status"] == "failed":
        raise SystemExit(f"the run at {rate:,.0f} msg/s failed: {manifest['problems']}")
    return {"rate": rate, "status": manifest["status"], **send_figures(run)}


def sixnines_run(scenario: str, work: Path, tty: bool = True,
                 env: dict[str, str] | None = None, analysis: bool = False) -> Path:
    """`sixnines run` of `scenario` in a process of its own, as a user starts it: with
    `tty` its stderr is a pseudo-terminal, so the live view renders (and costs) as on a
    laptop; otherwise a pipe (as in CI: one plain line per event). `env` is added to this
    process's environment; without `analysis`, `--no-analysis`. Returns the run
    directory."""
    environment = {**os.environ, **(env or {})}
    work.mkdir(parents=True, exist_ok=True)
    (work / "bench.yaml").write_text(scenario)
    argv = [sys.executable, "-m", "sixnines", "run", str(work / "bench.yaml"),
            "--output", str(work / "out"), *([] if analysis else ["--no-analysis"])]
    if not tty:
        done = subprocess.run(argv, stdin=subprocess.DEVNULL, capture_output=True, text=True,
                              timeout=600, env=environment)
        return _run_dir(done.stdout, done.stderr)
    leader, follower = pty.openpty()
    screen: list[bytes] = []
    reader = threading.Thread(target=_read_all, args=(leader, screen), daemon=True)
    reader.start()
    try:
        done = subprocess.run(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                              stderr=follower, text=True, timeout=600, env=environment)
    finally:
        os.close(follower)
        reader.join(10)
        os.close(leader)
    return _run_dir(done.stdout, b"".join(screen).decode(errors="replace"))


def _read_all(fd: int, into: list[bytes]) -> None:
    """Keep a terminal's output drained (a full pseudo-terminal would block the writer)."""
    while True:
        try:
            data = os.read(fd, 1 << 16)
        except OSError:  # EIO: the other end is closed
            return
        if not data:
            return
        into.append(data)


def _run_dir(stdout: str, stderr: str) -> Path:
    lines = stdout.strip().splitlines()
    if not lines:
        raise SystemExit(f"sixnines run printed no results directory:\n{stderr[-2000:]}")
    return find_run_dirs(Path(lines[-1]))[0]


def agent_messages(run_dir: Path, role: str, columns: list[str] | None = None):
    """The message rows of the run's first `role` agent (producer, consumer): all its
    chunks, or its messages.parquet; None where it wrote none."""
    found = sorted((run_dir / AGENTS_DIR).glob(f"{role}-*"))
    paths = message_files(found[0]) if found else []
    return pq.read_table(paths, columns=columns).to_pandas() if paths else None


def send_figures(run_dir: Path) -> dict:
    """What one producer achieved over the measured window: its send rate, send lag
    (sent - intended) p50/p99/p99.9 in µs, and the messages the consumer never got."""
    sent: pd.DataFrame = agent_messages(run_dir, "producer")
    received = agent_messages(run_dir, "consumer", columns=["seq"])
    got = 0 if received is None else len(received)  # a consumer that recorded nothing
    measured = sent[~sent.warmup]
    lag_us = (measured.sent_ns - measured.intended_ns).to_numpy() / 1000
    span_s = (measured.sent_ns.max() - measured.sent_ns.min()) / 1e9
    return {
        "achieved": (len(measured) - 1) / span_s,
        "lag_p50": float(np.percentile(lag_us, 50)), "lag_p99": float(np.percentile(lag_us, 99)),
        "lag_p999": float(np.percentile(lag_us, 99.9)), "lost": len(sent) - got,
    }


def held(figures: dict) -> bool:
    """Whether a step held its rate: send-lag p99 within the limit and nothing lost."""
    return figures["lag_p99"] <= LAG_P99_LIMIT_US and figures["lost"] == 0


def ladder_header(ratio: str, width: int) -> str:
    """The heading of a rate-ladder table whose last column is `ratio` (x the baseline)."""
    return (f"{'target':>10} {'achieved':>10} {'lag p50':>8} {'p99':>8} {'p99.9':>8} "
            f"{'lost':>6} {'ok':>3} {ratio:>{width}}")


def ladder_row(rate: float, figures: dict, baseline: float, width: int) -> str:
    """One step of a rate-ladder table (see ladder_header)."""
    return (f"{rate:>10,.0f} {figures['achieved']:>10,.0f} {figures['lag_p50']:>8.1f} "
            f"{figures['lag_p99']:>8.1f} {figures['lag_p999']:>8.1f} {figures['lost']:>6} "
            f"{'yes' if held(figures) else 'no':>3} "
            f"{figures['achieved'] / baseline:>{width}.2f}")
