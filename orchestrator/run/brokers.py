"""Providing the system under test for a run: start a builtin broker in its own process
(never inside the controller or an agent), start one from its recipe, or use an external
address as given (and leave it alone). Started brokers run on the placement's broker host,
through its launcher: they listen on that host's address, their data lives there.

A recipe broker that listens off loopback requires a credential made for the run: a fresh
secret from the controller reaches the broker host only through the launcher's stdin
channel (orchestrator.launchers.handoff) and the agents only through their control channel
(`Prepare.credential`); no file, argv, log or manifest holds it. On loopback nothing
changes: the broker takes anyone on this host, as before.

What sixnines started is one or more nodes (orchestrator.run.broker_nodes): one server, or
a cluster of the recipe's (`nodes: N`), each node its own process group, ports, data
directory and log; the run's address then names every node, comma separated."""

from __future__ import annotations

import json
import queue
import secrets
import time
from collections.abc import Collection
from dataclasses import asdict, dataclass, field
from pathlib import Path

from sixnines.drivers.base import Credential
from sixnines.formats.layout import BROKER_DIR, BROKER_DISK, BROKER_LOG, broker_log
from sixnines.orchestrator.launchers.base import Launcher, LaunchError, Process, shutdown_all
from sixnines.orchestrator.launchers.data_disks import DataDisk
from sixnines.orchestrator.run.broker_nodes import BrokerError, BrokerNode, recipe_node
from sixnines.orchestrator.scenario.faults import node_name
from sixnines.orchestrator.scenario.hosts import is_loopback
from sixnines.orchestrator.scenario.recipes import (
    Recipe,
    RecipeError,
    check_renders,
    load_recipe,
    nodes_of,
    not_installed,
    programs,
)

READY_TIMEOUT_S = 15.0


@dataclass
class RunningBroker:
    system: str
    kind: str  # builtin | recipe | external
    address: str  # what drivers connect to; a cluster's nodes, comma separated
    nodes: list[BrokerNode] = field(default_factory=list)  # what sixnines started (none: external)
    facts: dict = field(default_factory=dict)
    launcher: Launcher | None = None
    stop_commands: list[list[str]] = field(default_factory=list)
    stop_env: dict[str, str] = field(default_factory=dict)
    data: str | None = None  # its data directory on the broker host (its nodes' under it)
    disk: DataDisk | None = None  # that directory's own filesystem (`data_disk`)
    exit_tokens: list[int] = field(default_factory=list)  # stop commands the guard holds
    credential: Credential | None = field(default=None, repr=False)  # the run's login

    @property
    def process(self) -> Process | None:
        """The first node's process (the broker's, for a broker of one node)."""
        return self.nodes[0].process if self.nodes else None

    def credential_message(self) -> dict | None:
        """The credential as the agents' `Prepare` carries it (None: no login needed)."""
        return asdict(self.credential) if self.credential is not None else None

    def exited(self, skip: Collection[int] = ()) -> int | None:
        """Exit code of a node sixnines started that has died (but those in `skip`: down
        on purpose), else None."""
        codes = (node.exited() for node in self.nodes if node.index not in skip)
        return next((code for code in codes if code is not None), None)

    @property
    def restartable(self) -> bool:
        return bool(self.nodes) and all(node.launch is not None for node in self.nodes)

    def _chosen(self, indexes: Collection[int] | None) -> list[BrokerNode]:
        return [node for node in self.nodes if indexes is None or node.index in indexes]

    def kill(self, nodes: Collection[int] | None = None) -> None:
        """SIGKILL what we started (each node's whole process group; `nodes`: those only)
        and reap it: a fault on purpose, which `restart` undoes."""
        for node in self._chosen(nodes):
            if node.process is not None:
                node.process.kill()
                node.process.shutdown(grace_s=5.0)  # reaped; the guard forgets the group

    def restart(self, wipe: bool, nodes: Collection[int] | None = None) -> None:
        """Start it (`nodes`: those nodes) again at the same address, ready when this
        returns (BrokerError otherwise); `stop` then stops them. Every node is started
        before any is waited for: a cluster's nodes may need each other to be ready."""
        chosen = self._chosen(nodes)
        if not self.restartable:
            raise BrokerError(f"{self.system}: its {self.kind} broker cannot be started again")
        for node in chosen:
            assert node.launch is not None  # restartable
            node.launch(wipe)
        for node in chosen:
            node.await_ready()

    def stop(self, keep_data: bool) -> None:
        """Stop what we started (process groups first, then the recipe's own clean-up, for
        daemons the server leaves behind) and drop its data unless asked to keep it."""
        shutdown_all([node.process for node in self.nodes if node.process is not None])
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
                            data_disk=system.broker.data_disk, nodes=system.broker.nodes)
    broker = _start_builtin(system, launcher, run_dir / BROKER_LOG, f"{launcher.address}:0")
    node = broker.nodes[0]

    def launch(wipe: bool) -> None:  # in memory: nothing to keep or wipe; ready once up
        node.process = _start_builtin(system, launcher, run_dir / BROKER_LOG,
                                      broker.address).process

    node.launch = launch
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
        return RunningBroker(system.name, "builtin", address, [BrokerNode(0, process)],
                             facts, launcher)
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
                 data_disk: int | None = None, nodes: int = 1) -> RunningBroker:
    """Start a broker from its recipe on the launcher's host (`nodes` > 1: a cluster of that
    many, through the recipe's `cluster` section) and wait until it is ready; on any
    failure, whatever was started is stopped again and the error says what to look at.
    Its data lives in the run's `broker` directory on that host (a node's in `broker/<n>`),
    with `data_disk` on a filesystem of that many bytes of its own (launchers.data_disks;
    a broker of one node). Off loopback it requires the run's credential
    (`RunningBroker.credential`)."""
    host = launcher.address
    label = f"{system}: recipe {recipe.name} on {launcher.host}"
    try:
        check_renders(recipe)  # before anything is done on the host
    except RecipeError as exc:
        raise BrokerError(f"{label}: {exc}") from None
    credential = _credential(recipe, host, allow_unauthenticated, label)
    data = launcher.workdir(f"{key}/{BROKER_DIR}" if key else BROKER_DIR, run_dir / BROKER_DIR)
    ports = free_ports(launcher, host, len(recipe.all_ports if nodes > 1 else recipe.ports)
                       * nodes)
    try:
        members = nodes_of(recipe, nodes, host, data, ports)
    except RecipeError as exc:
        raise BrokerError(f"{label}: {exc}") from None
    native, first = recipe.native, members[0]
    env = first.fill(native.env)
    missing = missing_programs(launcher, programs(recipe, host=host, ports=first.ports,
                                                  data=first.data), env)
    if missing:
        raise BrokerError(f"{label}: {not_installed(missing, native.install)}")
    disk = _data_disk(launcher, run_dir, key, data, data_disk, label)
    auth = native.auth if credential is not None else None
    login = {"user": credential.username or ""} if credential is not None else {}
    broker = RunningBroker(
        system, "recipe", ",".join(member.fill(recipe.address) for member in members),
        launcher=launcher, data=data, disk=disk, credential=credential,
        stop_commands=[list(command) for command in dict.fromkeys(
            tuple(command) for member in members for command in member.fill(native.stop))],
        stop_env=env,
        facts={"recipe": recipe.name, "description": recipe.description, "note": recipe.note,
               "env": _redacted(native.env, env), "host": launcher.host,
               "auth": _auth_facts(credential, host), "config_files": sorted(native.files),
               **(disk.describe() if disk is not None else {})},
    )
    # daemons the broker leaves (epmd) are cleaned up even if the controller is killed
    broker.exit_tokens = [token for stop in broker.stop_commands
                          if (token := launcher.on_controller_exit(stop, env)) is not None]
    commands = []
    for member in members:
        command = member.fill(native.command) + member.cluster_args(recipe) + \
            (member.fill(auth.args, **login) if auth else [])
        stdin = None
        if auth is not None and auth.stdin is not None and credential is not None:
            stdin = member.fill(auth.stdin, **login, secret=credential.password)
        log_path = run_dir / broker_log(member.index if nodes > 1 else None)
        name = f"broker-{system}" + (f"-{member.index}" if nodes > 1 else "")
        broker.nodes.append(recipe_node(recipe, member, launcher, command, stdin, credential,
                                        login, name, label, log_path))
        commands.append(command)
    try:
        broker.restart(wipe=True)  # laid out, started, ready
    except BrokerError:
        broker.stop(keep_data=True)
        raise
    pids = [node.pid for node in broker.nodes]
    if nodes == 1:
        broker.facts |= {"command": commands[0], "ports": first.ports, "pid": pids[0]}
    else:
        broker.facts["nodes"] = [
            {"name": node_name(member.index), "command": command, "ports": member.ports,
             "pid": pid} for member, command, pid in zip(members, commands, pids, strict=True)]
    if native.version:
        done = launcher.run(first.fill(native.version), env, timeout_s=60)
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


def _redacted(template: dict[str, str], rendered: dict[str, str]) -> dict[str, str]:
    """The environment for the manifest: values taken from the controller's environment
    (`{env.NAME}`) may be secrets, so only where they came from is recorded."""
    return {name: "(from the environment)" if "{env." in template[name] else value
            for name, value in rendered.items()}


