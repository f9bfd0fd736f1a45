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
import resource
import shutil
import socket
import stat
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.faults.support import SMALL_RUN, control_characters, line_with, sixnines

pytestmark = pytest.mark.integration

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"

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


# --- where the results go ----------------------------------------------------------------------


def unwritable_outputs(tmp_path: Path) -> dict[str, tuple[Path, str]]:
    (tmp_path / "a-file").write_text("")
    return {"dev-null": (Path("/dev/null"), "output /dev/null is not a directory"),
            "under-a-file": (tmp_path / "a-file" / "runs",
                             f"output {tmp_path / 'a-file' / 'runs'}: {tmp_path / 'a-file'} is "
                             "not a directory")}


@pytest.mark.parametrize("command", ["validate", "run"])
@pytest.mark.parametrize("case", ["dev-null", "under-a-file"])
def test_an_output_that_is_no_directory_is_refused_before_anything_starts(
        tmp_path: Path, command: str, case: str) -> None:
    output, words = unwritable_outputs(tmp_path)[case]
    file = scenario(tmp_path, f"{SMALL_RUN}output: {output}\n")
    done = sixnines(command, file, cwd=tmp_path)
    assert done.returncode == 2 and done.stdout == "", done.stderr
    assert "Traceback" not in done.stderr
    line_with(done.stderr, f"{file}: {words}; choose another `output` (or --output)")


@pytest.mark.parametrize("command", ["validate", "run"])
def test_a_read_only_output_is_refused_before_anything_starts(tmp_path: Path,
                                                              command: str) -> None:
    read_only = tmp_path / "read-only"
    read_only.mkdir()
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "ro,size=64M", "tmpfs",
                              str(read_only)], capture_output=True, text=True, check=False)
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs (needs root): {mounted.stderr.strip()}")
    try:
        file = scenario(tmp_path, f"{SMALL_RUN}output: {read_only / 'runs'}\n")
        done = sixnines(command, file, cwd=tmp_path)
    finally:
        subprocess.run(["umount", "--lazy", str(read_only)], check=False)
    assert done.returncode == 2 and done.stdout == "", done.stderr
    assert "Traceback" not in done.stderr
    line_with(done.stderr, f"{file}: output {read_only / 'runs'}: {read_only} is on a "
                           "read-only filesystem")


# --- open files --------------------------------------------------------------------------------

MANY_CONNECTIONS = SMALL_RUN.replace("warmup: 0s}", "warmup: 0s, connections: 50}")


@pytest.mark.parametrize("command", ["validate", "run"])
def test_an_open_file_limit_too_low_for_the_connections_is_named_with_the_need(
        tmp_path: Path, command: str) -> None:
    """50 connections under `ulimit -n 64`: 'Connection reset by peer' from a relay out of
    files, before; now refused before anything starts, with the number to raise it to."""
    file = scenario(tmp_path, MANY_CONNECTIONS)
    done = sixnines(command, file, cwd=tmp_path, limits=("--nofile=64:64",))
    assert done.returncode == 2 and done.stdout == "", done.stderr
    assert "Traceback" not in done.stderr
    line_with(done.stderr, f"{file}: run 01-tcp needs about 632 open files in one process",
              "50 connection(s)", "the open-file limit here is 64", "ulimit -n 632")
    assert not (tmp_path / "runs").exists()


def test_run_raises_a_low_soft_limit_to_the_hard_one(tmp_path: Path) -> None:
    """`ulimit -Sn 64` with room under the hard limit: the run raises it, and goes well."""
    hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
    if hard != resource.RLIM_INFINITY and hard < 1000:
        pytest.skip(f"the hard open-file limit here ({hard}) is below what the run needs")
    file = scenario(tmp_path, MANY_CONNECTIONS)
    done = sixnines("run", file, cwd=tmp_path, limits=(f"--nofile=64:{hard}",))
    assert done.returncode == 0, done.stderr


# --- broker recipes: what they need from this machine ------------------------------------------

TWO_SYSTEMS = """
name: two
systems:
  - {{name: first, driver: {driver}, broker: {{recipe: {recipe}}}}}
  - {{name: tcp, driver: tcp}}
workload: {{message_size: 64, rate: 1000, duration: 1s, warmup: 0s}}
"""


def without(program: str, directory: Path) -> str:
    """A PATH holding every program of this one's but `program`."""
    directory.mkdir()
    for folder in os.environ["PATH"].split(os.pathsep):
        with contextlib.suppress(OSError):
            for entry in os.scandir(folder):
                link = directory / entry.name
                if entry.name != program and not os.path.lexists(link):
                    link.symlink_to(entry.path)
    return str(directory)


def run_without_a_broker(tmp_path: Path, recipe: str, driver: str,
                         env: dict[str, str]) -> tuple[Path, str]:
    """`run` of the recipe's system beside tcp: the first fails, saying why; the other
    still runs; the results directory is printed. (results, the first run's problem)"""
    file = scenario(tmp_path, TWO_SYSTEMS.format(recipe=recipe, driver=driver))
    done = sixnines("run", file, "--output", tmp_path / "runs", cwd=tmp_path, env=env)
    assert done.returncode == 1 and "Traceback" not in done.stderr, done.stderr
    results = Path(done.stdout.strip())
    summary = json.loads((results / "summary.json").read_text())
    first, tcp = summary["runs"]
    manifest = json.loads((results / "01-first" / "manifest.json").read_text())
    assert (first["status"], manifest["status"], tcp["status"]) == ("failed", "failed", "ok")
    assert first["problems"] == manifest["problems"] and len(first["problems"]) == 1
    line_with(done.stderr, first["problems"][0])
    return results, first["problems"][0]


def test_a_recipe_needing_an_unset_environment_variable(tmp_path: Path, monkeypatch) -> None:
    """`{recipe: kafka}` without KAFKA_HOME passed validate; run stopped the scenario at the
    first run with `unknown placeholder`, exit 1, no results directory, `problems: []`."""
    monkeypatch.delenv("KAFKA_HOME", raising=False)
    file = scenario(tmp_path, TWO_SYSTEMS.format(recipe="kafka", driver="kafka"), "v.yaml")
    checked = sixnines("validate", file)
    assert checked.returncode == 2, checked.stderr
    line_with(checked.stderr, f"{file}: systems[0] (first): recipe kafka needs the environment "
                              "variable KAFKA_HOME ({env.KAFKA_HOME}), which is not set here")
    _, problem = run_without_a_broker(tmp_path, "kafka", "kafka", {})
    assert problem == ("first: recipe kafka on local: needs the environment variable "
                       "KAFKA_HOME ({env.KAFKA_HOME}), which is not set here")


@pytest.mark.skipif(shutil.which("redis-server") is None, reason="redis-server not installed")
def test_a_recipe_whose_program_is_not_installed(tmp_path: Path) -> None:
    """examples/capacity.yaml on a machine without redis-server (the README's first
    command installs none): a FileNotFoundError traceback from the launcher, before."""
    path = without("redis-server", tmp_path / "bin")
    checked = sixnines("validate", EXAMPLES / "capacity.yaml", env={"PATH": path})
    assert checked.returncode == 2 and "Traceback" not in checked.stderr, checked.stderr
    line_with(checked.stderr, f"{EXAMPLES / 'capacity.yaml'}: systems[1] (redis): recipe "
                              "redis: redis-server not installed", "apt-get install redis-server",
              "deploy/setup.sh --test")
    _, problem = run_without_a_broker(tmp_path, "redis", "redis", {"PATH": path})
    assert problem.startswith("first: recipe redis on local: redis-server not installed "
                              "(not on PATH, or not executable): apt-get install redis-server")


# --- a server that is not the system: silent, or answering garbage ----------------------------

GARBAGE = b"HTTP/1.1 400 Bad Request\r\n\x1b]0;owned\x07\x1b[31m\r\n\r\n" + bytes(range(256)) * 8


#: What each driver says of a server that never answers.
SILENCE = {"rabbitmq": "no AMQP handshake within 10 s", "nats": "no answer within 5",
           "redis": "no answer within", "kafka": "no metadata within",
           "zmq": "no welcome message within", "tcp": "cannot connect (timed out)"}


@contextlib.contextmanager
def impostor(answer: bytes | None) -> Iterator[int]:
    """A TCP server on loopback that accepts every connection and never answers
    (`answer` None) or sends `answer` and reads on; yields its port."""
    listener = socket.create_server(("127.0.0.1", 0))
    listener.settimeout(0.2)
    held: list[socket.socket] = []
    stop = threading.Event()

    def serve() -> None:
        while not stop.is_set():
            with contextlib.suppress(TimeoutError):
                peer, _ = listener.accept()
                held.append(peer)
                if answer is not None:
                    with contextlib.suppress(OSError):
                        peer.sendall(answer)

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield listener.getsockname()[1]
    finally:
        stop.set()
        thread.join()
        for sock in [listener, *held]:
            sock.close()


@pytest.mark.parametrize("answer", [None, GARBAGE], ids=["never-answers", "answers-garbage"])
@pytest.mark.parametrize("driver", ["rabbitmq", "nats", "redis", "kafka", "zmq", "tcp"])
def test_a_server_that_is_not_the_system_is_one_line_naming_its_address(
        tmp_path: Path, driver: str, answer: bytes | None) -> None:
    """RabbitMQ's agent died after 12 s with AMQPConnectorStackTimeout as a traceback in
    its log, and the console said only "exited (code 1) without reporting its results"."""
    with impostor(answer) as port:
        file = scenario(tmp_path, SMALL_RUN.replace(
            "driver: tcp}", f"driver: {driver}, broker: {{external: '127.0.0.1:{port}'}}}}"))
        done = sixnines("run", file, "--output", tmp_path / "runs", cwd=tmp_path)
    assert done.returncode == 1 and "Traceback" not in done.stderr, done.stderr
    assert not control_characters(done.stderr), done.stderr
    line = line_with(done.stderr, "consumer-0 could not start: ", f"127.0.0.1:{port}")
    assert "exited (code" not in line, line
    if answer is None:
        assert SILENCE[driver] in line, line
    results = Path(done.stdout.strip())
    for log in (results / "01-tcp" / "agents").glob("*/agent.log"):
        assert "Traceback" not in log.read_text(errors="replace"), log
