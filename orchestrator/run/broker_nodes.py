"""The server processes of a broker sixnines started from a recipe, one per node (a broker
of several nodes is a cluster): how a node's data directory is laid out, how it is started
(its standard input, which may hold the run's secret, handed over the launcher's control
channel: orchestrator.launchers.handoff), when it is ready (a TCP connect, a command, or an
HTTP GET made on the broker host) and how the run's login is set up on it. A node keeps
how to start it again, so a fault on purpose can kill it and bring it back
(orchestrator.run.faults)."""

from __future__ import annotations

import contextlib
import logging
import queue
import shlex
import socket
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from sixnines.drivers.base import Credential
from sixnines.formats.errors import SixninesError
from sixnines.orchestrator.launchers.base import Completed, Launcher, LineLog, Process
from sixnines.orchestrator.launchers.handoff import handoff_argv, handoff_line
from sixnines.orchestrator.scenario.faults import node_name
from sixnines.orchestrator.scenario.recipes import Auth, Native, Node, ReadyCheck, Recipe

logger = logging.getLogger(__name__)


class BrokerError(SixninesError):
    """A broker that could not be started, or was not ready in time: says why, and where
    to look."""


@dataclass
class BrokerNode:
    """One server process of a broker sixnines started: the broker itself, or one node of a
    cluster (`broker-<index>` as faults name it)."""

    index: int
    process: Process | None = None
    #: Starts its process again where it was (True: its data wiped first), without waiting
    #: for it; `await_ready` then waits (BrokerError when it is not ready in time).
    launch: Callable[[bool], None] | None = field(default=None, repr=False)
    await_ready: Callable[[], None] = field(default=lambda: None, repr=False)

    @property
    def pid(self) -> int | None:
        return getattr(self.process, "pid", None)

    def exited(self) -> int | None:
        """Exit code if its process has died, else None."""
        return self.process.poll() if self.process is not None else None


def recipe_node(recipe: Recipe, member: Node, launcher: Launcher, command: list[str],
                stdin: str | None, credential: Credential | None, login: dict, name: str,
                label: str, log_path: Path) -> BrokerNode:
    """A node of the recipe's broker on the launcher's host, started as `command` (with
    `stdin`) under the process name `name`: how it is laid out and started (`launch`)
    and when it is ready (`await_ready`: the native form's check, then, in a cluster, the
    cluster's, then the run's login set up when there is one)."""
    native = recipe.native
    env = member.fill(native.env)
    node = BrokerNode(member.index)
    where = label if member.peers is None else f"{label}, {node_name(member.index)}"

    def launch(wipe: bool) -> None:
        if wipe:
            launcher.run(["rm", "-rf", member.data], timeout_s=60)
            _lay_out(launcher, native, member, env, where)
        node.process = _launch(launcher, command, stdin, name, log_path, env,
                               LineLog(log_path))
        logger.info("%s: waiting for it to be ready (%s)", where, shlex.join(command))

    def await_ready() -> None:
        checks = [native.ready, *([recipe.cluster.ready] if recipe.cluster and
                                  recipe.cluster.ready and member.peers is not None else [])]
        for check in checks:
            _await_ready(node, launcher, check, member.fill, env, where, log_path)
        if native.auth is not None and credential is not None:
            _set_up(launcher, credential, native.auth, member.fill, login, env, where,
                    log_path)

    node.launch, node.await_ready = launch, await_ready
    return node


def _lay_out(launcher: Launcher, native: Native, member: Node, env: dict, label: str) -> None:
    """A node's data directory with the recipe's files, prepared."""
    launcher.run(["mkdir", "-p", member.data], timeout_s=60)
    for name, content in member.fill(native.files).items():
        launcher.write_file(f"{member.data}/{name}", content)
    for command in member.fill(native.prepare):
        done = launcher.run(command, env, timeout_s=120)
        if done.code != 0:
            raise BrokerError(f"{label}: {shlex.join(command)} failed (exit {done.code}): "
                              f"{done.output.strip()[-500:]}")


def _set_up(launcher: Launcher, credential: Credential, auth: Auth, fill, login: dict,
            env: dict, label: str, log_path: Path) -> None:
    """The recipe's auth steps on a ready broker (e.g. add the run's user)."""
    for step in auth.setup:
        command = fill(step.command, **login)
        if step.stdin is None:
            done = launcher.run(command, env, timeout_s=120)
        else:
            text = fill(step.stdin, **login, secret=credential.password)
            done = run_with_input(launcher, command, text, env, log_path, 120.0)
        if done.code != 0:
            raise BrokerError(f"{label}: {shlex.join(command)} failed (exit {done.code}): "
                              f"{done.output.strip()[-500:]}; see {log_path}")


def _launch(launcher: Launcher, argv: list[str], stdin: str | None, name: str,
            log_path: Path, env: dict, inbox: queue.Queue | None = None) -> Process:
    """`argv` started on the launcher's host; `stdin`, when given, handed over as its
    standard input through the launcher's control channel (orchestrator.launchers.handoff)."""
    if stdin is None:
        return launcher.start(argv, name, log_path, inbox, env)
    process = launcher.start(handoff_argv(launcher.python, argv), name, log_path, inbox, env)
    process.write_line(handoff_line(stdin))
    return process


def run_with_input(launcher: Launcher, argv: list[str], text: str, env: dict,
                   log_path: Path, timeout_s: float) -> Completed:
    """`argv` run to completion on the launcher's host with `text` as its standard input,
    handed over the launcher's control channel (`Launcher.run` gives no input); its stdout
    is the output, its stderr goes to `log_path`."""
    lines: queue.Queue = queue.Queue()
    process = _launch(launcher, argv, text, "setup", log_path, env, lines)
    code = process.wait(timeout_s)
    if code is None:
        process.shutdown()
    output = []
    with contextlib.suppress(queue.Empty):
        while (line := lines.get(timeout=5.0)[1]) is not None:
            output.append(line)
    return Completed(argv, code, "\n".join(output))


#: Exits 0 when an HTTP GET of the URL in argv[1] answers 200 (run on the broker host).
HTTP_OK = """\
import sys, urllib.request
try:
    with urllib.request.urlopen(sys.argv[1], timeout=2) as answer:
        sys.exit(0 if answer.status == 200 else 1)
except Exception:
    sys.exit(1)
"""


def _await_ready(node: BrokerNode, launcher: Launcher, check: ReadyCheck, fill, env: dict,
                 label: str, log_path: Path) -> None:
    """Until `check` passes on the node just started (BrokerError when it dies first or
    the check's timeout passes)."""
    tcp, command, http = fill(check.tcp), fill(check.command), fill(check.http)
    timeout_s = check.timeout / 1e9
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        code = node.exited()
        if code is not None:
            raise BrokerError(f"{label}: the broker exited (code {code}) before it was ready; "
                              f"see {log_path}")
        if tcp is not None and _connects(tcp):
            return
        if command is not None and launcher.run(command, env, timeout_s=30).code == 0:
            return
        if http is not None and \
                launcher.run([launcher.python, "-c", HTTP_OK, http], timeout_s=30).code == 0:
            return
        time.sleep(0.1)
    raise BrokerError(f"{label}: not ready within {timeout_s:.0f} s; see {log_path}")


def _connects(address: str) -> bool:
    host, _, port = address.rpartition(":")
    try:
        with socket.create_connection((host.strip("[]"), int(port)), timeout=1):
            return True
    except OSError:
        return False
