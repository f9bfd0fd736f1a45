"""What the integration tests share: real brokers started by hand, scenarios from text,
and runs driven in-process so a test knows the exact start instant."""

from __future__ import annotations

import io
import json
import subprocess
import sys
from contextlib import contextmanager
from pathlib import Path

from orchestrator.brokers import start_recipe
from orchestrator.launchers.local import LocalLauncher
from orchestrator.matrix import RunPoint, expand
from orchestrator.progress import ProgressView
from orchestrator.recipes import load_recipe
from orchestrator.runner import Run
from orchestrator.scenario import parse_scenario


@contextmanager
def external_broker(driver: str):
    """`sixnines broker DRIVER` as its own process; yields (process, address)."""
    process = subprocess.Popen(
        [sys.executable, "-m", "orchestrator", "broker", driver, "--bind", "127.0.0.1:0"],
        stdout=subprocess.PIPE, text=True,
    )
    try:
        address = json.loads(process.stdout.readline())["listening"]
        yield process, address
    finally:
        process.terminate()
        process.wait(10)


def points(text: str) -> list[RunPoint]:
    return expand(parse_scenario(text))


class RecordingView(ProgressView):
    """The progress view, quiet, remembering the start instant (controller clock, ns)."""

    def __init__(self) -> None:
        super().__init__(1, io.StringIO())
        self.at_ns: int | None = None

    def started(self, at_ns: int, span_ns: int) -> None:
        super().started(at_ns, span_ns)
        self.at_ns = at_ns


def execute(point: RunPoint, run_dir: Path, view: ProgressView | None = None) -> dict:
    return Run(point, run_dir, LocalLauncher(), view or RecordingView(), "test").execute()


@contextmanager
def recipe_server(name: str, work: Path):
    """A system under test started from its broker recipe (deploy/recipes/NAME.yaml), as a
    run would start it; yields the RunningBroker (its `.address` is what drivers connect
    to) and stops it afterwards."""
    broker = start_recipe("test", load_recipe(name), LocalLauncher(), work)
    try:
        yield broker
    finally:
        broker.stop(keep_data=False)
