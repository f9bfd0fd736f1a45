"""What the fault modules share: one small real run recorded per module, copies of it to
damage, and `sixnines` run as a user runs it."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

from tests.integration.support import execute, points

#: 1,000 messages over loopback through the builtin relay: a real run in ~5 s
SMALL_RUN = """
name: faults
systems: [{name: tcp, driver: tcp}]
workload: {message_size: 64, rate: 1000, duration: 1s, warmup: 0s}
"""


def record(run_dir: Path, scenario: str = SMALL_RUN) -> Path:
    """A real run of `scenario`'s first point into `run_dir`; it must have gone well."""
    manifest = execute(points(scenario)[0], run_dir)
    assert manifest["status"] == "ok", manifest["problems"]
    return run_dir


def copy_run(recorded: Path, dest: Path) -> Path:
    """A copy of a recorded run, without any analysis; its manifest's run id becomes the
    copy's directory name (one results directory may then hold several copies)."""
    shutil.copytree(recorded, dest, ignore=shutil.ignore_patterns("report"))
    edit_manifest(dest, lambda manifest: manifest.update(run_id=dest.name))
    return dest


def edit_manifest(run_dir: Path, change) -> dict:
    """Apply `change` (manifest → None) to the run's manifest.json and rewrite it."""
    path = run_dir / "manifest.json"
    manifest = json.loads(path.read_text())
    change(manifest)
    path.write_text(json.dumps(manifest, indent=2))
    return manifest


def sixnines(*args: str | Path, cwd: Path | None = None, env: dict[str, str] | None = None,
             limits: tuple[str, ...] = ()) -> subprocess.CompletedProcess:
    """The real CLI in its own process, as a user runs it; `env` adds to the environment,
    `limits` are prlimit options it starts under (`--nofile=64`)."""
    prefix = ["prlimit", *limits, "--"] if limits else []
    return subprocess.run([*prefix, sys.executable, "-m", "sixnines", *map(str, args)],
                          cwd=cwd, capture_output=True, text=True, timeout=600,
                          env={**os.environ, **(env or {})})


def analysed(directory: Path, scenario: str = SMALL_RUN) -> Path:
    """The results directory of `sixnines run` of `scenario` under `directory`, analysed
    (by the runs' sidecars: no Spark); the run must have gone well."""
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "scenario.yaml").write_text(scenario)
    done = sixnines("run", "scenario.yaml", "--output", "runs", cwd=directory)
    assert done.returncode == 0, done.stderr
    return directory / done.stdout.strip().splitlines()[-1]


def unsteady_steadiness(p99: float) -> dict:
    """A run summary's `steadiness` as the analysis writes it for a run whose own seconds
    disagreed on p99 (formats.summary.Steadiness): the upper quartile 3x the lower."""
    return {"windows": 8, "window_s": 1.0, "p99_low_us": p99 / 2, "p99_median_us": p99,
            "p99_high_us": p99 * 1.5, "p99_max_us": p99 * 2, "spread": 2.0, "unsteady": True}


def control_characters(text: str) -> list[str]:
    """The characters of `text` a terminal would act on (all but line breaks)."""
    return [char for char in text if not char.isprintable() and char != "\n"]


def failed_cleanly(done: subprocess.CompletedProcess) -> str:
    """stderr of a command that must have said what is wrong and exited 1, no traceback."""
    assert done.returncode == 1, done.stderr
    assert "Traceback" not in done.stderr, done.stderr
    return done.stderr


def refused(done: subprocess.CompletedProcess) -> str:
    """The one line of a command that must have refused its input: exit 2, nothing on
    stdout, no traceback, no control character."""
    assert done.returncode == 2, done.stdout + done.stderr
    assert done.stdout == "", done.stdout
    assert "Traceback" not in done.stderr, done.stderr
    assert not control_characters(done.stderr), done.stderr
    lines = done.stderr.splitlines()
    assert len(lines) == 1, done.stderr
    return lines[0]


def line_with(text: str, *parts: str) -> str:
    """The one line of `text` holding every part (a message must not be spread over
    several lines, nor lose its file name)."""
    lines = [line for line in text.splitlines() if all(part in line for part in parts)]
    assert lines, f"no line with {parts} in:\n{text}"
    return lines[0]
