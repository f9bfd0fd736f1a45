"""What the machine and its surroundings lack or break, met with one line each, never a
traceback: an output directory that cannot hold results, a broker program that is not
installed, a recipe's environment variable that is not set, an open-file limit too low for
the connections, a `--bind` that cannot be, a server that never answers or answers
garbage, an analysis that dies.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from tests.faults.support import SMALL_RUN, line_with, sixnines

pytestmark = pytest.mark.integration

NO_JAVA = """#!/bin/sh
echo "this java refuses to start" >&2
exit 3
"""


def scenario(directory: Path, text: str = SMALL_RUN, name: str = "scenario.yaml") -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    (directory / name).write_text(text)
    return directory / name


def refusing_java(directory: Path) -> Path:
    """A JAVA_HOME whose java exits at once: Spark cannot start."""
    java = directory / "bin" / "java"
    java.parent.mkdir(parents=True)
    java.write_text(NO_JAVA)
    java.chmod(java.stat().st_mode | stat.S_IXUSR)
    return directory


def test_a_failed_analysis_shows_no_figures_and_how_to_analyse_again(tmp_path: Path) -> None:
    """Its summary has no counts: the console says so instead of `sent 0 received 0`."""
    file = scenario(tmp_path)
    done = sixnines("run", file, "--output", tmp_path / "runs", cwd=tmp_path,
                   env={"SIXNINES_FOLLOW": "0", "JAVA_HOME": str(refusing_java(tmp_path / "jvm"))})
    assert done.returncode == 1 and "Traceback" not in done.stderr, done.stderr
    results = Path(done.stdout.strip())
    assert "01-tcp  failed: no figures" in done.stderr.splitlines()
    assert "sent 0" not in done.stderr and "µs" not in done.stderr
    line_with(done.stderr, "analysis failed", f"`sixnines report {results / '01-tcp'}`")
    assert os.path.isdir(results / "01-tcp")
