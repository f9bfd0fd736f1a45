"""Broker recipes (orchestrator/scenario/recipes.py) and starting brokers from them
(orchestrator/run/brokers.py, broker_nodes.py), with throwaway recipes whose "server" is a few
lines of Python."""

from __future__ import annotations

import sys
import textwrap
from pathlib import Path

import pytest

from sixnines.orchestrator.launchers.local import LocalLauncher
from sixnines.orchestrator.run.broker_nodes import BrokerError
from sixnines.orchestrator.run.brokers import start_recipe
from sixnines.orchestrator.scenario import recipes
from sixnines.orchestrator.scenario.recipes import RecipeError, load_recipe, recipe_names, render

# a "server" that listens on the port it is given
SERVER = ("import socket, sys, time; s = socket.create_server(('127.0.0.1', int(sys.argv[1])));"
          " time.sleep(600)")


@pytest.fixture
def recipe_dir(tmp_path, monkeypatch):
    directory = tmp_path / "recipes"
    directory.mkdir()
    monkeypatch.setenv(recipes.PATH_VARIABLE, str(directory))
    recipes._load.cache_clear()
    return directory


def write(directory: Path, name: str, body: str) -> None:
    (directory / f"{name}.yaml").write_text(textwrap.dedent(body))


def recipe_text(name: str, command: str, ready: str = '{tcp: "{host}:{port.client}", timeout: 5s}',
                extra: str = "") -> str:
    return f"""
    name: {name}
    description: a test server
    drivers: [tcp]
    ports: [client]
    address: "{{host}}:{{port.client}}"
    native:
      command: {command}
      ready: {ready}
      version: ["{sys.executable}", -c, "print('toy 1.2.3')"]
    {extra}
    """


def test_every_builtin_recipe_is_valid():
    names = recipe_names()
    assert {"redis", "nats", "rabbitmq", "kafka", "kafka-noida"} <= set(names)
    for name in names:
        recipe = load_recipe(name)
        assert recipe.name == name and recipe.drivers and recipe.ports


def test_placeholders_are_filled_and_a_misspelt_one_is_named(tmp_path):
    filled = render(["{host}:{port.client}", {"dir": "{data}/x"}, "{{literal}}"],
                    host="127.0.0.1", ports={"client": 7000}, data=tmp_path)
    assert filled == ["127.0.0.1:7000", {"dir": f"{tmp_path}/x"}, "{literal}"]
    with pytest.raises(RecipeError, match=r"\{port\.cleint\}"):
        render("{port.cleint}", host="h", ports={"client": 1}, data=tmp_path)


def test_a_recipe_with_an_unknown_key_is_refused(recipe_dir):
    write(recipe_dir, "bad", recipe_text("bad", "[x]") + "colour: red\n")
    with pytest.raises(RecipeError, match="colour"):
        load_recipe("bad")


def test_an_unknown_recipe_lists_the_known_ones(recipe_dir):
    with pytest.raises(RecipeError, match=r"available: .*redis"):
        load_recipe("nosuch")


@pytest.mark.integration  # starts processes
def test_a_recipe_starts_reports_its_version_and_stops(recipe_dir, tmp_path, monkeypatch):
    command = f'["{sys.executable}", -c, "{SERVER}", "{{port.client}}"]'
    marker = tmp_path / "stopped"
    monkeypatch.setenv("TOY_SECRET", "hunter2")
    write(recipe_dir, "toy", recipe_text(
        "toy", command, extra=f"""  files: {{"conf.txt": "port={{port.client}}"}}
      env: {{TOY_PASSWORD: "{{env.TOY_SECRET}}", TOY_MODE: fast}}
      stop: [[touch, "{marker}"]]"""))
    broker = start_recipe("sys", load_recipe("toy"), LocalLauncher(), tmp_path / "run")
    try:
        port = broker.facts["ports"]["client"]
        assert broker.address == f"127.0.0.1:{port}"
        assert broker.facts["version"] == "toy 1.2.3"
        # a value from the controller's environment may be a secret: not in the manifest
        assert broker.facts["env"] == {"TOY_PASSWORD": "(from the environment)",
                                       "TOY_MODE": "fast"}
        assert "hunter2" not in repr(broker.describe())
        assert (tmp_path / "run/broker/conf.txt").read_text() == f"port={port}"
        assert broker.exited() is None
    finally:
        broker.stop(keep_data=False)
    assert broker.exited() is not None
    assert marker.exists()  # the recipe's own clean-up ran
    assert not (tmp_path / "run/broker").exists()


@pytest.mark.integration  # starts processes
def test_a_server_that_exits_at_once_is_reported_with_its_log(recipe_dir, tmp_path):
    crash = "import sys; print('no licence', file=sys.stderr); sys.exit(3)"
    command = f'["{sys.executable}", -c, "{crash}"]'
    write(recipe_dir, "dies", recipe_text("dies", command))
    with pytest.raises(BrokerError, match=r"exited \(code 3\).*broker.log"):
        start_recipe("sys", load_recipe("dies"), LocalLauncher(), tmp_path / "run")
    assert "no licence" in (tmp_path / "run/broker.log").read_text()
    assert (tmp_path / "run/broker").exists()  # kept for a look after a failure


@pytest.mark.integration  # starts processes
def test_a_server_never_ready_times_out_and_is_stopped(recipe_dir, tmp_path):
    command = f'["{sys.executable}", -c, "import time; time.sleep(600)"]'
    write(recipe_dir, "mute", recipe_text("mute", command,
                                          ready='{tcp: "{host}:{port.client}", timeout: 1s}'))
    with pytest.raises(BrokerError, match="not ready within 1 s"):
        start_recipe("sys", load_recipe("mute"), LocalLauncher(), tmp_path / "run")


@pytest.mark.integration  # starts processes
def test_a_failing_prepare_step_stops_the_start(recipe_dir, tmp_path):
    command = f'["{sys.executable}", -c, "{SERVER}", "{{port.client}}"]'
    write(recipe_dir, "unprepared", recipe_text(
        "unprepared", command, extra='  prepare: [[sh, -c, "echo cannot format >&2; exit 1"]]'))
    with pytest.raises(BrokerError, match="cannot format"):
        start_recipe("sys", load_recipe("unprepared"), LocalLauncher(), tmp_path / "run")


def test_each_node_of_a_cluster_has_its_ports_data_and_peers():
    recipe = load_recipe("nats")
    nodes = recipes.nodes_of(recipe, 3, "127.0.0.1", "/d", list(range(100, 109)))
    assert [node.ports for node in nodes] == [
        {"client": 100, "monitor": 101, "route": 102},
        {"client": 103, "monitor": 104, "route": 105},
        {"client": 106, "monitor": 107, "route": 108}]
    assert [node.data for node in nodes] == ["/d/0", "/d/1", "/d/2"]
    args = nodes[1].cluster_args(recipe)
    assert args[args.index("-n") + 1] == "node-1"
    assert args[args.index("--routes") + 1] == "nats://127.0.0.1:102,nats://127.0.0.1:108"
    [alone] = recipes.nodes_of(recipe, 1, "127.0.0.1", "/d", [100, 101])
    assert alone.data == "/d" and alone.cluster_args(recipe) == []


def test_a_recipe_without_a_cluster_section_starts_one_node():
    with pytest.raises(RecipeError, match="recipe 'redis' starts a broker of one node"):
        recipes.nodes_of(load_recipe("redis"), 3, "127.0.0.1", "/d", list(range(3)))


def test_a_cluster_section_is_checked(recipe_dir):
    cluster = '    cluster: {ports: [client], args: [x], peer: "{host}"}\n'
    write(recipe_dir, "twice", recipe_text("twice", "[x]").rstrip(" ") + cluster)
    with pytest.raises(RecipeError, match=r"cluster\.ports repeats a port name"):
        load_recipe("twice")
    write(recipe_dir, "early", recipe_text("early", '[x, "{node}"]'))
    with pytest.raises(RecipeError, match=r"unknown placeholder \{node\}"):
        recipes.check_renders(load_recipe("early"))


#: a node that serves HTTP on its port and writes its arguments to its data directory
NODE = ("import http.server, pathlib, sys; pathlib.Path(sys.argv[2], 'argv').write_text("
        "' '.join(sys.argv[3:])); http.server.HTTPServer(('127.0.0.1', int(sys.argv[1])), "
        "http.server.SimpleHTTPRequestHandler).serve_forever()")


@pytest.mark.integration  # starts processes
def test_a_cluster_starts_each_node_and_starts_one_again_alone(recipe_dir, tmp_path):
    command = f'["{sys.executable}", -c, "{NODE}", "{{port.client}}", "{{data}}"]'
    write(recipe_dir, "toys", recipe_text("toys", command) + textwrap.indent(textwrap.dedent("""
        cluster:
          ports: [route]
          args: [--node, "{node}", --peers, "{peers}"]
          peer: "{host}:{port.route}"
          ready: {http: "http://127.0.0.1:{port.client}/", timeout: 10s}
        """), "    "))
    broker = start_recipe("sys", load_recipe("toys"), LocalLauncher(), tmp_path / "run",
                          nodes=3)
    try:
        nodes = broker.facts["nodes"]
        assert [node["name"] for node in nodes] == ["broker-0", "broker-1", "broker-2"]
        assert broker.address == ",".join(f"127.0.0.1:{node['ports']['client']}"
                                          for node in nodes)
        routes = [f"127.0.0.1:{node['ports']['route']}" for node in nodes]
        for index in range(3):
            argv = (tmp_path / f"run/broker/{index}/argv").read_text()
            peers = ",".join(route for k, route in enumerate(routes) if k != index)
            assert argv == f"--node {index} --peers {peers}"
        pids = [node.pid for node in broker.nodes]
        broker.kill([1])
        assert broker.exited() is not None and broker.exited(skip=[1]) is None
        broker.restart(wipe=False, nodes=[1])  # at its ports again, ready
        assert broker.exited() is None
        assert [node.pid == pid for node, pid in zip(broker.nodes, pids, strict=True)] == [
            True, False, True]
        assert (tmp_path / "run/broker-1.log").exists()
    finally:
        broker.stop(keep_data=False)
    assert all(node.exited() is not None for node in broker.nodes)
    assert not (tmp_path / "run/broker").exists()
