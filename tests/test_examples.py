"""Every scenario in examples/ is valid: users start from these files."""

from __future__ import annotations

from pathlib import Path

import pytest

from sixnines.orchestrator.matrix import expand
from sixnines.orchestrator.scenario import load_scenario

EXAMPLES = sorted((Path(__file__).parent.parent / "examples").glob("*.yaml"))


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.stem)
def test_example_is_valid(path):
    assert expand(load_scenario(path))


def test_there_are_examples():
    names = {"quickstart", "classic", "size-sweep", "brokerless-vs-brokered",
             "size-latency", "size-throughput", "streams", "commit-log", "soak"}
    assert names <= {p.stem for p in EXAMPLES}
