"""Where a scenario's values were read in a unit the file left to be guessed (`duration: 5`
is 5 s, `1KB` is 1,024 B, `20k` is 20,000 msg/s): `sixnines validate` lists each with its
line, so that a value read otherwise than its writer meant is seen before a run.

Only fields written in units are looked at, each where the scenario has it: the scenario's
own `cpu_sample`, the fields of `workload` and of every case, and those of a capacity search
(`rate: {search: …}`), of a rate shape (`rate: {steps: …}`) or of a backlog.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from sixnines.orchestrator.scenario import units
from sixnines.orchestrator.scenario.problems import format_path
from sixnines.orchestrator.scenario.yaml_source import YamlDocument, YamlPath

Reader = Callable[[object], str | None]
#: Field → how its values are read, by where the field is.
SCENARIO_FIELDS: dict[str, Reader] = {"cpu_sample": units.duration_reading}
WORKLOAD_FIELDS: dict[str, Reader] = {
    "message_size": units.size_reading, "rate": units.rate_reading,
    "duration": units.duration_reading, "warmup": units.duration_reading,
    "drain": units.duration_reading}
SEARCH_FIELDS: dict[str, Reader] = {
    "from": units.rate_reading, "to": units.rate_reading, "max_time": units.duration_reading}

#: A backlog's fields (its build may be bytes or a time; a count has its word).
BACKLOG_FIELDS: dict[str, Reader] = {
    "build": lambda value: units.size_reading(value) or units.duration_reading(value),
    "drain_within": units.duration_reading}
#: A rate shape's fields: a step's or a burst's, and a ramp's.
STEP_FIELDS: dict[str, Reader] = {
    "rate": units.rate_reading, "for": units.duration_reading, "every": units.duration_reading}
RAMP_FIELDS: dict[str, Reader] = {
    "from": units.rate_reading, "to": units.rate_reading, "over": units.duration_reading}


@dataclass(frozen=True)
class Reading:
    """A value as written at `path`, and how it was read."""

    path: YamlPath
    written: object
    read_as: str

    def render(self, doc: YamlDocument, file: str) -> str:
        """`FILE:LINE: PATH: WRITTEN → READ AS`, or the flag that gave it instead of the
        file's line."""
        where = doc.given_at(self.path) or f"{file}:{doc.line_of(self.path)}"
        return f"{where}: {format_path(self.path)}: {self.written} → {self.read_as}"


def readings(doc: YamlDocument) -> list[Reading]:
    """Every value of a valid scenario document whose unit was guessed, in file order (those
    given on the command line last)."""
    data = doc.data
    found = _fields(data, (), SCENARIO_FIELDS)
    cases = data.get("cases")
    workloads = [("workload",), *(("cases", index) for index in
                                  range(len(cases) if isinstance(cases, list) else 0))]
    for where in workloads:
        workload = _at(data, where)
        found += _fields(workload, where, WORKLOAD_FIELDS)
        for path, rate in _values(workload, where, "rate"):
            if isinstance(rate, dict) and "objective" in rate:  # a capacity search
                objective = rate["objective"]
                found += _fields(rate, path, SEARCH_FIELDS)
                found += _fields(objective, (*path, "objective"),
                                 dict.fromkeys(objective, units.duration_reading))
            elif isinstance(rate, dict):  # a shape
                found += _shape_readings(rate, path)
        for path, backlog in _values(workload, where, "backlog"):
            found += _fields(backlog, path, BACKLOG_FIELDS)
    return sorted(found, key=lambda reading: (doc.given_at(reading.path) is not None,
                                              doc.line_of(reading.path) or 0))


def _shape_readings(shape: dict, path: YamlPath) -> list[Reading]:
    """A rate shape's values: its steps', its ramp's, its base's and bursts'."""
    found = _fields(shape, path, {"base": units.rate_reading})
    steps = shape.get("steps")
    for index, step in enumerate(steps if isinstance(steps, list) else []):
        found += _fields(step, (*path, "steps", index), STEP_FIELDS)
    found += _fields(shape.get("ramp"), (*path, "ramp"), RAMP_FIELDS)
    found += _fields(shape.get("bursts"), (*path, "bursts"), STEP_FIELDS)
    return found


def _at(data: Any, path: YamlPath) -> Any:
    for part in path:
        data = data[part]
    return data


def _values(mapping: Any, where: YamlPath, name: str) -> list[tuple[YamlPath, Any]]:
    """The values of field `name` of `mapping` with their paths: one, or each of a sweep."""
    if not isinstance(mapping, dict) or name not in mapping:
        return []
    value = mapping[name]
    if isinstance(value, list):
        return [((*where, name, index), item) for index, item in enumerate(value)]
    return [((*where, name), value)]


def _fields(mapping: Any, where: YamlPath, fields: dict[Any, Reader]) -> list[Reading]:
    found = []
    for name, read in fields.items():
        for path, value in _values(mapping, where, name):
            if (read_as := read(value)) is not None:
                found.append(Reading(path, str(value).strip(), read_as))
    return found
