"""The container launcher against a real Docker API (podman's, see containers.py): an agent
in a container speaks the control protocol over the attach stream, files come back from an
exited container, nothing is left behind, and an unreachable engine is named."""

from __future__ import annotations

import contextlib
import hashlib
import io
import tarfile
import uuid
from pathlib import Path

import docker
import pytest

from sixnines.formats import protocol as p
from sixnines.orchestrator.launchers.base import LaunchError, Process
from sixnines.orchestrator.launchers.bundle import build_id
from sixnines.orchestrator.launchers.container import ContainerLauncher, untar
from tests.integration.containers import BASE_IMAGE
from tests.integration.support import external_broker

# the first session on a machine builds the base image and the agent image (~2-3 min)
pytestmark = [pytest.mark.integration, pytest.mark.timeout(900)]


@pytest.fixture
def launcher(docker_host):
    launcher = ContainerLauncher("box", docker_host, base_image=BASE_IMAGE)
    launcher.prepare()
    yield launcher
    launcher.close()


def next_line(process: Process, log: Path, timeout_s: float = 30) -> str:
    _, line = process.lines.get(timeout=timeout_s)
    assert line is not None, f"output ended (exit {process.poll()}); log: {log.read_text()}"
    return line


def consumer_prepare(address: str, out_dir: str) -> p.Prepare:
    return p.Prepare(
        protocol=p.PROTOCOL_VERSION, run_id="r-1", agent_id="consumer-0", role="consumer",
        driver="tcp", address=address, driver_options={}, message_size=64, rate=100.0,
        schedule="fixed", duration_ns=10**9, warmup_ns=0, connections=1, first_id=0,
        phase_ns=0, receive="blocking", drain_ns=10**9, seed=1, expected=100,
        out_dir=out_dir)


def test_prepare_finds_the_agent_image_of_this_checkout(launcher):
    facts = launcher.prepare()
    assert facts["build_id"] == build_id()
    assert facts["image"].endswith(f"sixnines-agent:{build_id()}")


def test_an_agent_in_a_container_speaks_over_the_attach_stream(launcher, tmp_path):
    """Host networking: the agent in the container reaches a broker on the host's
    loopback; its answers are JSON lines demultiplexed from the attach stream."""
    log = tmp_path / "agent.log"
    with external_broker("tcp") as (_, address):
        agent = launcher.start([launcher.python, "-m", "sixnines.agents"], "consumer-0", log)
        out_dir = launcher.workdir("scenario/stamp/r-1/agents/consumer-0", tmp_path)
        assert agent.write_line(p.encode(consumer_prepare(address, out_dir)))
        ready = p.decode(next_line(agent, log))
        assert isinstance(ready, p.Ready), ready
        assert ready.agent_id == "consumer-0"
        assert agent.write_line(p.encode(p.Ping(t_ns=12345)))
        pong = p.decode(next_line(agent, log))
        assert isinstance(pong, p.Pong) and pong.t_ns == 12345
        assert agent.write_line(p.encode(p.Stop(reason="test over")))
        assert agent.wait(15) == 0
        _, end = agent.lines.get(timeout=10)
        assert end is None


WRITER = """\
import hashlib, os, pathlib, sys
out = pathlib.Path(sys.argv[1])
(out / "sub").mkdir(parents=True)
data = os.urandom(3_000_000)
(out / "sub" / "data.bin").write_bytes(data)
(out / "note.txt").write_text("hello\\n")
print("to the log", file=sys.stderr)
print(hashlib.sha256(data).hexdigest())
"""


def test_fetch_copies_what_an_exited_container_wrote(launcher, tmp_path):
    workdir = launcher.workdir("scenario/stamp/r-1/agents/writer", tmp_path)
    log = tmp_path / "writer.log"
    process = launcher.start([launcher.python, "-c", WRITER, workdir], "writer", log)
    digest = next_line(process, log)
    assert process.wait(30) == 0
    process.fetch(workdir, tmp_path / "fetched")
    fetched = tmp_path / "fetched"
    assert hashlib.sha256((fetched / "sub" / "data.bin").read_bytes()).hexdigest() == digest
    assert (fetched / "note.txt").read_text() == "hello\n"
    assert log.read_text() == "to the log\n"


def test_files_written_to_the_host_reach_later_containers(launcher):
    launcher.write_file("/etc/sixnines/test/broker.conf", "port = 1234\n")
    done = launcher.run(["cat", "/etc/sixnines/test/broker.conf"], timeout_s=30)
    assert (done.code, done.output) == (0, "port = 1234\n")


def test_close_removes_every_container_it_started(launcher, docker_host, tmp_path):
    """A running one, an exited one and one whose command does not exist."""
    name = f"leftover-{uuid.uuid4().hex[:8]}"
    running = launcher.start(["sleep", "600"], name, tmp_path / "a.log")
    exited = launcher.start(["true"], name, tmp_path / "b.log")
    failed = launcher.start(["no-such-command"], name, tmp_path / "c.log")
    assert exited.wait(30) == 0
    assert failed.wait(30) not in (None, 0)
    assert running.poll() is None
    launcher.close()
    with contextlib.closing(docker.DockerClient(base_url=docker_host)) as client:
        left = client.containers.list(
            all=True, filters={"label": ["sixnines=1", f"sixnines.name={name}"]})
    assert left == []


@pytest.mark.parametrize("url", ["unix:///nonexistent/docker.sock", "tcp://127.0.0.1:9"])
def test_an_unreachable_engine_is_named(url):
    launcher = ContainerLauncher("nowhere", url)
    with pytest.raises(LaunchError, match="nowhere") as caught:
        launcher.prepare()
    assert url in str(caught.value)


def test_untar_keeps_members_inside_the_target(tmp_path):
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as archive:
        for name in ("dir/ok.txt", "dir/../../escape.txt"):
            info = tarfile.TarInfo(name)
            info.size = 2
            archive.addfile(info, io.BytesIO(b"hi"))
    buffer.seek(0)
    with pytest.raises(LaunchError, match="escape"):
        untar(buffer, tmp_path / "out")
    assert (tmp_path / "out" / "ok.txt").read_text() == "hi"
    assert not (tmp_path / "escape.txt").exists()
