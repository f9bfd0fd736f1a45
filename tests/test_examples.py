"""Every scenario in examples/ is valid: users start from these files."""

from __future__ import annotations

from pathlib import Path

import pytest

from sixnines.orchestrator.scenario.matrix import expand
from sixnines.orchestrator.scenario.model import load_scenario

EXAMPLES = sorted((Path(__file__).parent.parent / "examples").glob("*.yaml"))


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.stem)
def test_example_is_valid(path):
    assert expand(load_scenario(path))


def test_there_are_examples():
    names = {"quickstart", "classic", "classic-one-way", "size-sweep", "brokerless-vs-brokered",
             "size-latency", "size-throughput", "streams", "commit-log", "soak"}
    assert names <= {p.stem for p in EXAMPLES}


def test_the_classic_configurations_are_round_trips_with_a_one_way_variant():
    """classic.yaml measures the seed configurations as they were measured (round trips);
    its one-way twin runs the very same cases."""
    folder = EXAMPLES[0].parent
    round_trip, one_way = (expand(load_scenario(folder / f"{name}.yaml"))
                           for name in ("classic", "classic-one-way"))
    assert {point.workload.mode for point in round_trip} == {"round-trip"}
    assert {point.workload.mode for point in one_way} == {"one-way"}

    def cases(points):
        return [(p.system.name, p.workload.message_size, p.workload.rate,
                 p.workload.connections) for p in points]

    assert cases(round_trip) == cases(one_way)
    assert len(round_trip) == 4 * 5
