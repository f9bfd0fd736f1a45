"""The run matrix: every system × every combination of the swept workload fields, or with
`cases:` every system × every case (× the combinations of fields swept within the case).

Order is systems-major, then cases in order, then workload fields in declared order with the
first field varying slowest, so a run list reads like the scenario file. With `repeat: N`
that whole list runs N times over (A B C A B C, never A A B B C C), so whatever drifts on
the machine over a night spreads over every case alike, and each run id ends in which
repeat it is ("04-tcp-message_size=1KB-repeat=2"). Run ids name each
point by its swept values as the user wrote them ("01-tcp-message_size=1KB"), an unnamed case
by its own fields too ("01-tcp-message_size=256-rate=3000"), a named case by its name and
what it sweeps ("01-tcp-large-rate=1000"); they double as directory names.

How many runs a scenario may expand to is bounded when it is loaded (scenario.MAX_RUNS),
before any point is made.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from sixnines.formats.layout import repeat_suffix
from sixnines.formats.manifest import Repeat
from sixnines.orchestrator.scenario.systems import System
from sixnines.orchestrator.scenario.workload import WORKLOAD_FIELDS, Case, WorkloadPoint

if TYPE_CHECKING:
    from sixnines.orchestrator.scenario.model import Scenario

_UNSAFE = re.compile(r"[^A-Za-z0-9._=-]+")

#: Longest run id: ids name directories, and a file name stops at 255 bytes. Longer ids
#: (many swept fields, long names) are cut and end in `CUT`; the manifest has the whole point.
MAX_RUN_ID = 128
CUT = "..."

#: The key of a named case in `RunPoint.swept`.
CASE_KEY = "case"


@dataclass(frozen=True)
class RunPoint:
    """One run: a system and one resolved workload.

    `params` is `workload` as JSON (keys are `Workload` field names, enums as strings);
    `swept` maps the `Workload` field names that vary across the matrix to the value as
    written in the scenario (e.g. {"message_size": "1KB"}), for reports that group by them:
    with cases, a case's own fields and the name of a named case (under `CASE_KEY`) too.
    `repeat` says which run of its case this is when the scenario repeats every case.
    """

    index: int
    run_id: str
    system: System
    workload: WorkloadPoint
    params: dict[str, Any]
    swept: dict[str, str]
    repeat: Repeat | None = None

    @property
    def seed(self) -> int:
        """The seed agents draw from (schedules, fills, keys): the workload's, else the
        run's number."""
        return self.workload.seed if self.workload.seed is not None else self.index


def safe_label(text: str) -> str:
    """`text` reduced to [A-Za-z0-9._=-] ("500 µs" -> "500us", "20k/s" -> "20k_s")."""
    text = text.replace("µ", "u").replace("μ", "u").replace(" ", "")
    return _UNSAFE.sub("_", text) or "_"


def expand(scenario: Scenario) -> list[RunPoint]:
    """Every run of the scenario, numbered from 1, every case once per repeat. The number
    is zero-padded to at least two digits (wider for 100+ runs) so run ids sort in run
    order."""
    points = [
        (workload, *_naming(case, labels))
        for case, spec in scenario.variants()
        for workload, labels in spec.expand()
    ]
    repeats = scenario.repeat
    width = max(2, len(str(len(scenario.systems) * len(points) * repeats)))
    runs: list[RunPoint] = []
    for number in range(1, repeats + 1):
        for system in scenario.systems:
            for workload, suffix, swept in points:
                index = len(runs) + 1
                repeat = Repeat(number=number, of=repeats, case=suffix.removeprefix("-")) \
                    if repeats > 1 else None
                tail = repeat_suffix(number) if repeat is not None else ""
                runs.append(
                    RunPoint(
                        index=index,
                        run_id=_cut(f"{index:0{width}d}-{system.name}{suffix}", tail),
                        system=system,
                        workload=workload,
                        params=workload.params(),
                        swept=swept,
                        repeat=repeat,
                    )
                )
    return runs


def _cut(run_id: str, tail: str = "") -> str:
    """`run_id` + `tail` within `MAX_RUN_ID` characters, `run_id` cut when needed (still
    unique: the index leads it; the tail, which repeat it is, stays)."""
    room = MAX_RUN_ID - len(tail)
    return (run_id if len(run_id) <= room else run_id[: room - len(CUT)] + CUT) + tail


def _naming(case: Case | None, labels: dict[str, str]) -> tuple[str, dict[str, str]]:
    """The run-id suffix and `RunPoint.swept` of a point whose swept YAML fields are
    `labels`, in `case` (its own fields count as swept; a name stands for them in the id)."""
    written = (case.labels() if case is not None else {}) | labels  # a point's own value wins
    fields = {field: written[field] for field in WORKLOAD_FIELDS if field in written}
    shown = labels if case is not None and case.name is not None else fields
    suffix = "".join(f"-{field}={safe_label(label)}" for field, label in shown.items())
    swept = {WORKLOAD_FIELDS[field]: label for field, label in fields.items()}
    if case is not None and case.name is not None:
        return f"-{case.name}{suffix}", {CASE_KEY: case.name, **swept}
    return suffix, swept
