"""The run matrix: every system × every combination of the swept workload fields.

Order is systems-major, then workload fields in declared order with the first field varying
slowest, so a run list reads like the scenario file. Run ids name each point by its swept
values as the user wrote them ("01-tcp-message_size=1KB") and double as directory names.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from orchestrator.scenario import WORKLOAD_FIELDS, Scenario, System, Workload

_UNSAFE = re.compile(r"[^A-Za-z0-9._=-]+")


@dataclass(frozen=True)
class RunPoint:
    """One run: a system and one resolved workload.

    `params` is `workload` as JSON (keys are `Workload` field names, enums as strings);
    `swept` maps the `Workload` field names that vary across the matrix to the value as
    written in the scenario (e.g. {"message_size": "1KB"}), for reports that group by them.
    """

    index: int
    run_id: str
    system: System
    workload: Workload
    params: dict[str, Any]
    swept: dict[str, str]


def safe_label(text: str) -> str:
    """`text` reduced to [A-Za-z0-9._=-] ("500 µs" -> "500us", "20k/s" -> "20k_s")."""
    text = text.replace("µ", "u").replace("μ", "u").replace(" ", "")
    return _UNSAFE.sub("_", text) or "_"


def expand(scenario: Scenario) -> list[RunPoint]:
    """Every run of the scenario, numbered from 1. The number is zero-padded to at least two
    digits (wider for 100+ runs) so run ids sort in run order."""
    points = scenario.workload.expand()
    width = max(2, len(str(len(scenario.systems) * len(points))))
    runs: list[RunPoint] = []
    for system in scenario.systems:
        for workload, labels in points:
            index = len(runs) + 1
            suffix = "".join(f"-{field}={safe_label(label)}" for field, label in labels.items())
            runs.append(
                RunPoint(
                    index=index,
                    run_id=f"{index:0{width}d}-{system.name}{suffix}",
                    system=system,
                    workload=workload,
                    params=workload.model_dump(mode="json"),
                    swept={WORKLOAD_FIELDS[field]: label for field, label in labels.items()},
                )
            )
    return runs
