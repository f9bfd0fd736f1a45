"""A Docker API endpoint for the container tests: the private podman service of
deploy/containers/podman-service.sh with the base image of base-image.sh, both cached in
$SIXNINES_PODMAN_DIR (default /var/tmp/sixnines-podman) across test sessions.

First time on a machine: debootstrap + import ~80 s, then the first agent image build; later
sessions find both (a source change only rebuilds the top layers of the agent image).
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import IO

import docker
import pytest

from sixnines.orchestrator.launchers.bundle import PROJECT_ROOT, build_id
from sixnines.orchestrator.launchers.container import AGENT_REPOSITORY

SCRIPTS = PROJECT_ROOT / "deploy" / "containers"
BASE_IMAGE = "sixnines-base:bookworm"
STALE_AFTER_S = 24 * 3600


def _script(name: str, *args: str, timeout_s: float) -> str:
    done = subprocess.run([str(SCRIPTS / name), *args], capture_output=True, text=True,
                          timeout=timeout_s, check=False, stdin=subprocess.DEVNULL)
    if done.returncode != 0:
        pytest.fail(f"{name} {' '.join(args)} failed ({done.returncode}):\n{done.stderr}")
    return done.stdout


def _answers(url: str) -> bool:
    try:
        with contextlib.closing(docker.DockerClient(base_url=url, timeout=5)) as client:
            return client.ping()
    except Exception:  # any transport error means: not serving
        return False


def _needs() -> str | None:
    """Why the podman service cannot run here (None: it can)."""
    if os.geteuid() != 0:
        return "the podman service runs rootful: needs root"
    missing = [tool for tool in ("podman", "runc", "debootstrap") if shutil.which(tool) is None]
    return f"missing {', '.join(missing)} (deploy/setup.sh --test)" if missing else None


def prune_stale_agent_images(url: str) -> None:
    """Agent images of other builds, older than a day: every source change gives a new
    build id, so they would pile up. Recent ones stay: a concurrent session of another
    checkout may be about to use them."""
    current = f"{AGENT_REPOSITORY}:{build_id()}"
    now = datetime.now(UTC)
    with contextlib.closing(docker.DockerClient(base_url=url)) as client:
        for image in client.images.list(name=AGENT_REPOSITORY):
            created = datetime.fromisoformat(image.attrs["Created"][:19]).replace(tzinfo=UTC)
            if (now - created).total_seconds() > STALE_AFTER_S and not any(
                    tag.endswith(current) for tag in image.tags):
                with contextlib.suppress(docker.errors.APIError):  # in use by a container
                    client.images.remove(image.id)


@contextmanager
def podman_engine() -> Iterator[str]:
    """The DOCKER_HOST URL of a running podman service that has the base image.

    Test sessions on this machine may overlap: each holds a shared lock on the service for
    its lifetime, and the last one out stops the service if a test session started it (one
    a user started stays up)."""
    reason = _needs()
    if reason:
        pytest.skip(reason)
    directory = Path(os.environ.get("SIXNINES_PODMAN_DIR", "/var/tmp/sixnines-podman"))
    directory.mkdir(parents=True, exist_ok=True)
    url = f"unix://{directory}/podman.sock"
    marker = directory / "started-by-tests"
    with open(directory / "sessions.lock", "a") as sessions:
        fcntl.flock(sessions, fcntl.LOCK_SH)
        if not _answers(url):
            marker.touch()
        output = _script("podman-service.sh", "start", "--dir", str(directory), timeout_s=60)
        assert output.strip() == f"DOCKER_HOST={url}", output
        try:
            _script("base-image.sh", "--dir", str(directory), timeout_s=900)
            prune_stale_agent_images(url)
            yield url
        finally:
            _stop_if_last(sessions, marker, directory)


def _stop_if_last(sessions: IO, marker: Path, directory: Path) -> None:
    try:
        fcntl.flock(sessions, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:  # another session still uses the service
        return
    if marker.exists():
        _script("podman-service.sh", "stop", "--dir", str(directory), timeout_s=60)
        marker.unlink()
