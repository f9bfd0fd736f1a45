"""Broker recipes (orchestrator/scenario/recipes.py) and starting brokers from them
(orchestrator/run/brokers.py), with throwaway recipes whose "server" is a few lines of Python."""

from __future__ import annotations

import sys
import textwrap
from pathlib import Path

import pytest

from sixnines.orchestrator.launchers.local import LocalLauncher
from sixnines.orchestrator.run.brokers import BrokerError, start_recipe
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
