"""Fixtures the integration modules share across the test session."""

from __future__ import annotations

import pytest

from tests.integration.containers import podman_engine


@pytest.fixture(scope="session")
def docker_host():
    """The podman service's Docker API URL: started once for every container test of the
    session (test_container_run, test_containers), not once per module."""
    with podman_engine() as url:
        yield url
