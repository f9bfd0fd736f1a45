"""Providing the system under test for a run: start a builtin broker in its own process
(never inside the controller or an agent), start one from its recipe, or use an external
address as given (and leave it alone). Started brokers run on the placement's broker host,
through its launcher: they listen on that host's address, their data lives there.

A recipe broker that listens off loopback requires a credential made for the run: a fresh
secret from the controller reaches the broker host only through the launcher's stdin
channel (orchestrator.launchers.handoff) and the agents only through their control channel
(`Prepare.credential`); no file, argv, log or manifest holds it. On loopback nothing
changes: the broker takes anyone on this host, as before."""

from __future__ import annotations

import contextlib
import json
import logging
import queue
import secrets
import shlex
import socket
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path

from sixnines.drivers.base import Credential
from sixnines.formats.errors import SixninesError
from sixnines.formats.layout import BROKER_DIR, BROKER_DISK, BROKER_LOG
from sixnines.orchestrator.launchers.base import (
    Completed,
    Launcher,
    LaunchError,
    LineLog,
    Process,
)
from sixnines.orchestrator.launchers.data_disks import DataDisk
from sixnines.orchestrator.launchers.handoff import handoff_argv, handoff_line
from sixnines.orchestrator.scenario.hosts import is_loopback
from sixnines.orchestrator.scenario.recipes import (
    Auth,
    Recipe,
    RecipeError,
    check_renders,
    load_recipe,
    not_installed,
    programs,
    render,
)

logger = logging.getLogger(__name__)

READY_TIMEOUT_S = 15.0


class BrokerError(SixninesError):
    pass


@dataclass
class RunningBroker:
    system: str
    kind: str  # builtin | recipe | external
    address: str
    process: Process | None = None
    facts: dict = field(default_factory=dict)
    launcher: Launcher | None = None
    stop_commands: list[list[str]] = field(default_factory=list)
    stop_env: dict[str, str] = field(default_factory=dict)
    data: str | None = None  # its data directory on the broker host
    disk: DataDisk | None = None  # that directory's own filesystem (`data_disk`)
    exit_tokens: list[int] = field(default_factory=list)  # stop commands the guard holds
    credential: Credential | None = field(default=None, repr=False)  # the run's login
    #: Starts it again where it was and waits until it is ready (True: its data wiped
    #: first): a broker killed on purpose comes back through this (`restart`).
    bring_up: Callable[[bool], None] | None = field(default=None, repr=False)

    def credential_message(self) -> dict | None:
        """The credential as the agents' `Prepare` carries it (None: no login needed)."""
        return asdict(self.credential) if self.credential is not None else None

    def exited(self) -> int | None:
        """Exit code if a broker sixnines started has died, else None."""
        return self.process.poll() if self.process is not None else None

    @property
    def restartable(self) -> bool:
        return self.bring_up is not None

    def kill(self) -> None:
        """SIGKILL what we started (its whole process group) and reap it: a fault on
        purpose, which `restart` undoes."""
        if self.process is not None:
            self.process.kill()
            self.process.shutdown(grace_s=5.0)  # reaped; the guard forgets the group

    def restart(self, wipe: bool) -> None:
        """Start it again at the same address, ready when this returns (BrokerError
        otherwise); `stop` then stops this one."""
        if self.bring_up is None:
            raise BrokerError(f"{self.system}: its {self.kind} broker cannot be started again")
        self.bring_up(wipe)

    def stop(self, keep_data: bool) -> None:
        """Stop what we started (process group first, then the recipe's own clean-up, for
        daemons the server leaves behind) and drop its data unless asked to keep it."""
        if self.process is not None:
            self.process.shutdown()
        launcher = self.launcher
        if launcher is None:  # not started by sixnines: nothing else of it is ours
            return
        for command in self.stop_commands:
            launcher.run(command, self.stop_env, timeout_s=30)
        for token in self.exit_tokens:
            launcher.cancel_on_exit(token)
        if self.disk is not None:
            self.disk.release(keep=keep_data)
        if self.data is not None and not keep_data:
            launcher.run(["rm", "-rf", self.data], timeout_s=60)

    def describe(self) -> dict:
        return {"system": self.system, "kind": self.kind, "address": self.address, **self.facts}


def broker_argv(python: str, driver: str, bind: str) -> list[str]:
    return [python, "-m", "sixnines", "broker", driver, "--bind", bind, "--exit-on-eof"]


def provide_broker(system, launcher: Launcher, run_dir: Path, key: str) -> RunningBroker:
    """The broker of `system`, started and ready unless it is external. `key` names the
    run's files on the broker host (see `Launcher.workdir`)."""
    kind = system.broker.kind
    if kind == "external":
        return RunningBroker(system.name, "external", system.broker.external)
    if kind == "recipe":
        try:
            recipe = load_recipe(system.broker.recipe)
        except RecipeError as exc:
            raise BrokerError(f"{system.name}: {exc}") from None
        return start_recipe(system.name, recipe, launcher, run_dir, key,
                            allow_unauthenticated=system.broker.allow_unauthenticated,
                            data_disk=system.broker.data_disk)
    broker = _start_builtin(system, launcher, run_dir / BROKER_LOG, f"{launcher.address}:0")

    def bring_up(wipe: bool) -> None:  # in memory: nothing to keep or wipe
        again = _start_builtin(system, launcher, run_dir / BROKER_LOG, broker.address)
        broker.process = again.process

    broker.bring_up = bring_up
    return broker


def _start_builtin(system, launcher: Launcher, log_path: Path, bind: str) -> RunningBroker:
    """The driver's own broker listening at `bind` (port 0: any free one), ready."""
    lines: queue.Queue = queue.Queue()
    argv = broker_argv(launcher.python, system.driver, bind)
    process = launcher.start(argv, f"broker-{system.name}", log_path, lines)
    deadline = time.monotonic() + READY_TIMEOUT_S
    while time.monotonic() < deadline:
        try:
            _, line = lines.get(timeout=0.1)
        except queue.Empty:
            continue
        if line is None:
            process.shutdown()
            raise BrokerError(f"{system.name}: the builtin {system.driver} broker exited before "
                              f"it was ready (code {process.poll()}); see {log_path}")
        try:
            address = json.loads(line)["listening"]
        except (ValueError, KeyError, TypeError):
            continue
        facts = {"pid": getattr(process, "pid", None), "command": argv,
                 "host": launcher.host}
        return RunningBroker(system.name, "builtin", address, process, facts, launcher)
    process.shutdown()
    raise BrokerError(f"{system.name}: the builtin {system.driver} broker was not ready within "
                      f"{READY_TIMEOUT_S:.0f} s; see {log_path}")


#: Prints ports nobody listens on right now on the host (the server binds them a moment
#: later): argv[1] the address, argv[2] how many.
FREE_PORTS = """\
import socket, sys
probes = []
for _ in range(int(sys.argv[2])):
    probe = socket.socket(socket.AF_INET6 if ":" in sys.argv[1] else socket.AF_INET)
    probe.bind((sys.argv[1], 0))
    probes.append(probe)
print(" ".join(str(probe.getsockname()[1]) for probe in probes))
"""


def free_ports(launcher: Launcher, address: str, count: int) -> list[int]:
    """`count` distinct free ports on the launcher's host, found there."""
    done = launcher.run([launcher.python, "-c", FREE_PORTS, address, str(count)], timeout_s=60)
    try:
        ports = [int(port) for port in done.output.split()]
    except ValueError:
        ports = []
    if done.code != 0 or len(ports) != count:
        raise BrokerError(f"cannot find free ports on {launcher.host} ({address}): "
                          f"{done.output.strip()[-300:]}")
    return ports


def new_secret() -> str:
    """A per-run password: 256 random bits, URL-safe (no quoting in any config syntax)."""
    return secrets.token_urlsafe(32)


def _credential(recipe: Recipe, host: str, allow_unauthenticated: bool,
                label: str) -> Credential | None:
    """The run's credential for a broker listening on `host`: a fresh one off loopback,
    None on loopback. A recipe that cannot require one is refused off loopback unless the
    scenario accepts an open broker there."""
    if is_loopback(host):
        return None
    auth = recipe.native.auth
    if auth is not None:
        return Credential(auth.user, new_secret())
    if allow_unauthenticated:
        return None
    raise BrokerError(
        f"{label}: the recipe has no auth section, so its broker would take anyone who "
        f"reaches {host}; place the broker on loopback, give the recipe an auth section, or "
        "accept an open broker with `allow_unauthenticated: true` in the system's broker")


def _auth_facts(credential: Credential | None, host: str) -> dict:
    """What the manifest says about logging in: never the secret."""
    if credential is not None:
        return {"credential": "per-run (the secret is not recorded)",
                "user": credential.username}
    why = "loopback" if is_loopback(host) else "allow_unauthenticated"
    return {"credential": None, "why": why}


def start_recipe(system: str, recipe: Recipe, launcher: Launcher, run_dir: Path,
                 key: str | None = None, allow_unauthenticated: bool = False,
                 data_disk: int | None = None) -> RunningBroker:
    """Start a broker from its recipe on the launcher's host and wait until it is ready; on
    any failure, whatever was started is stopped again and the error says what to look
    at. Its data lives in the run's `broker` directory on that host, with `data_disk` on
    a filesystem of that many bytes of its own (launchers.data_disks). Off loopback it
    requires the run's credential (`RunningBroker.credential`)."""
    host = launcher.address
    label = f"{system}: recipe {recipe.name} on {launcher.host}"
    try:
        check_renders(recipe)  # before anything is done on the host
    except RecipeError as exc:
        raise BrokerError(f"{label}: {exc}") from None
    credential = _credential(recipe, host, allow_unauthenticated, label)
    data = launcher.workdir(f"{key}/{BROKER_DIR}" if key else BROKER_DIR, run_dir / BROKER_DIR)
    log_path = run_dir / BROKER_LOG
    ports = dict(zip(recipe.ports, free_ports(launcher, host, len(recipe.ports)), strict=True))

    def fill(value, **extra: str):
        return render(value, host=host, ports=ports, data=data, **extra)

    native = recipe.native
    env = fill(native.env)
    missing = missing_programs(launcher, programs(recipe, host=host, ports=ports, data=data),
                               env)
    if missing:
        raise BrokerError(f"{label}: {not_installed(missing, native.install)}")

    def lay_out() -> None:
        """Its data directory with the recipe's files, prepared."""
        launcher.run(["mkdir", "-p", data], timeout_s=60)
        for name, content in fill(native.files).items():
            launcher.write_file(f"{data}/{name}", content)
        for command in fill(native.prepare):
            done = launcher.run(command, env, timeout_s=120)
            if done.code != 0:
                raise BrokerError(f"{label}: {shlex.join(command)} failed (exit {done.code}): "
                                  f"{done.output.strip()[-500:]}")

    disk = _data_disk(launcher, run_dir, key, data, data_disk, label)
    try:
        lay_out()
    except BaseException:
        if disk is not None:
            disk.release(keep=True)
        raise
    auth = native.auth if credential is not None else None
    login = {"user": credential.username or ""} if credential is not None else {}
    command = fill(native.command) + (fill(auth.args, **login) if auth else [])
    broker = RunningBroker(
        system, "recipe", fill(recipe.address), launcher=launcher, data=data, disk=disk,
        stop_commands=fill(native.stop), stop_env=env, credential=credential,
        facts={"recipe": recipe.name, "description": recipe.description, "note": recipe.note,
               "command": command, "env": _redacted(native.env, env), "ports": ports,
               "host": launcher.host, "auth": _auth_facts(credential, host),
               "config_files": sorted(native.files),
               **(disk.describe() if disk is not None else {})},
    )
    # daemons the broker leaves (epmd) are cleaned up even if the controller is killed
    broker.exit_tokens = [token for stop in broker.stop_commands
                          if (token := launcher.on_controller_exit(stop, env)) is not None]
    stdin = None
    if auth is not None and auth.stdin is not None and credential is not None:
        stdin = fill(auth.stdin, **login, secret=credential.password)

    def bring_up(wipe: bool) -> None:
        if wipe:
            launcher.run(["rm", "-rf", data], timeout_s=60)
            lay_out()
        broker.process = _launch(launcher, command, stdin, f"broker-{system}", log_path, env,
                                 LineLog(log_path))
        logger.info("%s: waiting for it to be ready (%s)", label, shlex.join(command))
        _await_ready(broker, fill(native.ready.tcp), fill(native.ready.command), env,
                     native.ready.timeout / 1e9, label, log_path)
        if auth is not None:
            _set_up(broker, auth, fill, login, env, label, log_path)

    try:
        bring_up(wipe=False)
    except BrokerError:
        broker.stop(keep_data=True)
        raise
    broker.facts["pid"] = getattr(broker.process, "pid", None)
    broker.bring_up = bring_up
    if native.version:
        done = launcher.run(fill(native.version), env, timeout_s=60)
        broker.facts["version"] = done.output.strip().splitlines()[0] if done.output else None
    return broker


def _data_disk(launcher: Launcher, run_dir: Path, key: str | None, data: str,
               size: int | None, label: str) -> DataDisk | None:
    """The data directory's own filesystem, made and mounted before anything is laid out
    there (None: the system asks for none)."""
    if size is None:
        return None
    image = launcher.workdir(f"{key}/{BROKER_DISK}" if key else BROKER_DISK,
                             run_dir / BROKER_DISK)
    try:
        return DataDisk.make(launcher, image, data, size)
    except LaunchError as exc:
        raise BrokerError(f"{label}: {exc}") from None


#: Prints those of its arguments that are not programs found on PATH (or, written as a
#: path, executable files).
MISSING_PROGRAMS = """\
import os, shutil, sys
print(" ".join(p for p in sys.argv[1:]
               if not (os.access(p, os.X_OK) if "/" in p else shutil.which(p))))
"""


def missing_programs(launcher: Launcher, names: list[str], env: dict) -> list[str]:
    """Those of `names` the launcher's host cannot run (looked up there, with `env`)."""
    done = launcher.run([launcher.python, "-c", MISSING_PROGRAMS, *names], env, timeout_s=60)
    return done.output.split() if done.code == 0 else []


def _set_up(broker: RunningBroker, auth: Auth, fill, login: dict, env: dict, label: str,
            log_path: Path) -> None:
    """The recipe's auth steps on a ready broker (e.g. add the run's user)."""
    launcher, credential = broker.launcher, broker.credential
    assert launcher is not None and credential is not None  # a recipe's, with its login
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


def _redacted(template: dict[str, str], rendered: dict[str, str]) -> dict[str, str]:
    """The environment for the manifest: values taken from the controller's environment
    (`{env.NAME}`) may be secrets, so only where they came from is recorded."""
    return {name: "(from the environment)" if "{env." in template[name] else value
            for name, value in rendered.items()}


def _await_ready(broker: RunningBroker, tcp: str | None, command: list[str] | None,
                 env: dict, timeout_s: float, label: str, log_path: Path) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        code = broker.exited()
        if code is not None:
            raise BrokerError(f"{label}: the broker exited (code {code}) before it was ready; "
                              f"see {log_path}")
        if tcp is not None and _connects(tcp):
            return
        if (command is not None and broker.launcher is not None
                and broker.launcher.run(command, env, timeout_s=30).code == 0):
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
