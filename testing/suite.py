"""The suite against the driver the command line names (see plugin.py):
`pytest --pyargs sixnines.testing.suite --sixnines-driver NAME`, or
`python -m sixnines.testing --driver NAME`."""

from __future__ import annotations

import pytest

from sixnines.testing.conformance import DriverConformance, Target


class TestDriver(DriverConformance):
    @pytest.fixture
    def target(self, sixnines_target: Target) -> Target:
        return sixnines_target
