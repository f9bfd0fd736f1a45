"""What the machine and its surroundings lack or break, met with one line each, never a
traceback: an output directory that cannot hold results, a broker program that is not
installed, a recipe's environment variable that is not set, an open-file limit too low for
the connections, a `--bind` that cannot be, a server that never answers or answers
garbage, an analysis that dies.
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import stat
import subprocess
import sys
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


# --- sixnines broker --bind ------------------------------------------------------------------

BAD_BINDS = {
    "port-99999": ("127.0.0.1:99999", "'127.0.0.1:99999': the port must be a number from 0 to "
                   "65535"),
    "garbage": ("garbage", "'garbage' is not HOST:PORT"),
    "negative-port": ("127.0.0.1:-1", "the port must be a number from 0 to 65535"),
    "not-ipv4": ("999.1.1.1:80", "'999.1.1.1' is not an IPv4 address"),
    "not-this-host": ("192.0.2.1:7000", "cannot listen on 192.0.2.1:7000: Cannot assign "
                      "requested address"),
}


@pytest.mark.parametrize("driver", ["tcp", "zmq"])
@pytest.mark.parametrize(("bind", "words"), BAD_BINDS.values(), ids=BAD_BINDS.keys())
def test_a_bind_that_cannot_be_is_bad_input_in_one_line(driver: str, bind: str,
                                                         words: str) -> None:
    done = sixnines("broker", driver, "--bind", bind)
    assert done.returncode == 2 and done.stdout == "", done.stderr
    assert done.stderr.startswith("sixnines broker: ") and words in done.stderr, done.stderr
    assert len(done.stderr.splitlines()) == 1, done.stderr


def test_a_bind_on_a_port_in_use_is_bad_input_in_one_line() -> None:
    with socket.create_server(("127.0.0.1", 0)) as taken:
        port = taken.getsockname()[1]
        done = sixnines("broker", "tcp", "--bind", f"127.0.0.1:{port}")
    assert done.returncode == 2 and done.stdout == "", done.stderr
    assert done.stderr.startswith(f"sixnines broker: cannot listen on 127.0.0.1:{port}: "
                                  "Address already in use"), done.stderr


def test_a_relay_out_of_files_says_so_in_one_line() -> None:
    """More connections than its open-file limit allows: it stops, saying which limit."""
    broker = subprocess.Popen(["prlimit", "--nofile=16", "--", sys.executable, "-m",
                               "sixnines", "broker", "tcp"], stdin=subprocess.DEVNULL,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        host, port = json.loads(broker.stdout.readline())["listening"].rsplit(":", 1)
        with contextlib.ExitStack() as connections:
            for _ in range(20):
                with contextlib.suppress(OSError):
                    connections.enter_context(socket.create_connection((host, int(port)), 5))
            code = broker.wait(30)
        stderr = broker.stderr.read()
    finally:
        broker.kill()
        broker.wait()
    assert code == 1, stderr
    assert stderr == (f"sixnines broker tcp at {host}:{port}: stopped: Too many open files: a "
                      "connection takes a file and the open-file limit (ulimit -n) is 16\n")
