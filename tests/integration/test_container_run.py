"""A whole run in containers: the builtin broker and the agents each in their own container
on a Docker API endpoint (podman here), results collected, every container removed."""

from __future__ import annotations

import io
import json
import textwrap

import docker
import pytest
from rich.console import Console

from sixnines.orchestrator.controller import run_scenario
from sixnines.orchestrator.scenario.model import load_scenario
from tests.integration.containers import BASE_IMAGE

pytestmark = pytest.mark.integration


def test_broker_and_agents_in_containers(docker_host, tmp_path):
    path = tmp_path / "scenario.yaml"
    path.write_text(textwrap.dedent(f"""\
        name: pods
        systems: [{{name: tcp, driver: tcp}}]
        workload: {{message_size: 128, rate: 1000, duration: 2s, warmup: 0s}}
        hosts:
          - {{name: pods, docker: "{docker_host}", base_image: "{BASE_IMAGE}"}}
        placement: {{broker: pods, agents: [pods]}}
        output: {tmp_path / "runs"}
        """))
    console = Console(file=io.StringIO(), width=200)
    outcome = run_scenario(load_scenario(path), path, output=None, spark_master=None,
                           console=console)
    assert outcome.statuses == ["ok"], console.file.getvalue()
    (manifest_path,) = outcome.results_dir.glob("*/manifest.json")
    manifest = json.loads(manifest_path.read_text())
    assert manifest["broker"]["host"] == "pods"
    assert manifest["hosts"]["pods"]["build_id"]
    for agent in manifest["agents"]:
        assert agent["host"] == "pods"
        assert agent["sent"] == 2000 or agent["received"] == 2000
        for name, artifact in agent["artifacts"].items():
            assert artifact["verified"], name
            assert (manifest_path.parent / "agents" / agent["id"] / name).is_file()
    # the broker's CPU, sampled from a container sharing the broker container's PIDs
    monitor = manifest["monitor"]
    assert monitor["status"] == "ok", monitor["notes"]
    assert monitor["artifacts"]["cpu.parquet"]["verified"]
    client = docker.DockerClient(base_url=docker_host)
    try:
        assert client.containers.list(all=True, filters={"label": "sixnines=1"}) == []
    finally:
        client.close()
