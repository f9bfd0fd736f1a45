"""The JSON Schema of the scenario file, generated from its models: what editors complete
and check a scenario against (docs/scenario.schema.json; `sixnines schema scenario`).

It takes what `load_scenario` reads as written (scenario.written: "1KB", "500ms", one
value or a list) and gives defaults as a file would write them. A file with `cases:` has
a base `workload` with no field required; each system's `options` are its driver's, for
sixnines' own drivers (whose options live in drivers/<name>/options.py, importable without
the system's client library). What the schema cannot say (cross-field rules, whether a
recipe exists, what a machine can run) `sixnines validate` checks.
"""

from __future__ import annotations

import importlib
import inspect
import json
from typing import Any

from pydantic import BaseModel
from pydantic.json_schema import (
    GenerateJsonSchema,
    JsonSchemaValue,
    core_schema,
    models_json_schema,
)

from sixnines.drivers import registry
from sixnines.drivers.base import DriverOptions
from sixnines.formats.schema import DRAFT, tidy
from sixnines.orchestrator.scenario import units
from sixnines.orchestrator.scenario.model import CaseScenario, Scenario
from sixnines.orchestrator.scenario.recipes import BUILTIN_DIR

COMMAND = "python -m sixnines.orchestrator.scenario.reference docs"
FILE_NAME = "scenario.schema.json"


def own_driver_options() -> dict[str, type[DriverOptions]]:
    """Driver name → its options model, for the drivers sixnines ships (a driver installed
    apart documents its own)."""
    found = {}
    for name, entry in sorted(registry.available().items()):
        if entry.dist is None or entry.dist.name != registry.PROJECT:
            continue
        module = importlib.import_module(f"{entry.module.rpartition('.')[0]}.options")
        (options,) = [cls for _, cls in inspect.getmembers(module, inspect.isclass)
                      if issubclass(cls, DriverOptions) and cls.__module__ == module.__name__]
        found[name] = options
    return found


def builtin_recipes() -> list[str]:
    """The recipes shipped in deploy/recipes (a site's own directories vary by machine)."""
    return sorted(path.stem for path in BUILTIN_DIR.glob("*.yaml"))


class _AsWritten(GenerateJsonSchema):
    """Defaults as a file writes them: a swept field's one value, a duration with its
    unit (the models keep nanoseconds), none for a field that must be given."""

    def default_schema(self, schema: core_schema.WithDefaultSchema) -> JsonSchemaValue:
        json_schema = super().default_schema(schema)
        if "default" not in json_schema:
            return json_schema
        default = self.get_default_value(schema)
        if isinstance(default, tuple):
            if len(default) != 1:  # () in a base workload: given by the cases
                del json_schema["default"]
                return json_schema
            default = default[0]
        if isinstance(default, int) and _takes(json_schema, units.DURATION_PATTERN):
            default = units.format_duration(default)
        json_schema["default"] = self.encode_default(default)
        return json_schema


def _takes(node: Any, pattern: str) -> bool:
    """Whether a schema somewhere takes text of `pattern`."""
    if isinstance(node, dict):
        return node.get("pattern") == pattern or any(_takes(v, pattern) for v in node.values())
    return isinstance(node, list) and any(_takes(v, pattern) for v in node)


def _ref(model: type[BaseModel]) -> dict[str, str]:
    return {"$ref": f"#/$defs/{model.__name__}"}


def scenario_schema() -> dict[str, Any]:
    """The schema of a scenario file (with or without `cases:`)."""
    options = own_driver_options()
    models: list[type[BaseModel]] = [Scenario, CaseScenario, *options.values()]
    _, body = models_json_schema([(model, "validation") for model in models],
                                 schema_generator=_AsWritten)
    defs = tidy(body["$defs"])
    top = defs.pop(CaseScenario.__name__)
    plain = defs.pop(Scenario.__name__)
    for base in ("WorkloadBase", "Case"):  # fields they redeclare keep their meaning
        for name, field in defs[base]["properties"].items():
            if name in defs["WorkloadSpec"]["properties"]:
                field.setdefault("description",
                                 defs["WorkloadSpec"]["properties"][name]["description"])
    for field in defs["Case"]["properties"].values():
        field.pop("default", None)  # a case's field defaults to the base workload's
    system = defs["System"]
    system["properties"]["driver"]["examples"] = list(options)
    system["properties"]["options"] = {"type": "object",
                                       "description": system["properties"]["options"]
                                       ["description"]}
    system["allOf"] = [{"if": {"properties": {"driver": {"const": name}}, "required": ["driver"]},
                        "then": {"properties": {"options": _ref(model)}}}
                       for name, model in options.items()]
    broker = defs["BrokerSpec"]["anyOf"][1]["properties"]
    broker["recipe"]["examples"] = builtin_recipes()
    workload = plain["properties"]["workload"]
    top["properties"]["workload"] = {
        "description": f"{workload['description']} With `cases:`, the fields every case "
                       "starts from (none required)."}
    top |= {"required": [name for name in top["required"] if name != "cases"],
            "if": {"required": ["cases"]},
            "then": {"properties": {"workload": top["properties"]["workload"] | {
                "$ref": "#/$defs/WorkloadBase"}}},
            "else": {"properties": {"workload": workload}, "required": ["workload"]}}
    return {"$schema": DRAFT, **top, "title": "sixnines scenario",
            "description": "A sixnines scenario file: the systems to measure and the workload "
                           "to run on them (docs/scenario.md).",
            "$comment": f"Generated from {Scenario.__module__} and the drivers' options by "
                        f"`{COMMAND}`; do not edit.", "$defs": _used(defs, top)}


def _used(defs: dict[str, Any], top: dict[str, Any]) -> dict[str, Any]:
    """`defs` without the definitions nothing refers to any more."""
    found: set[str] = set()
    pending = [top]
    while pending:
        node = pending.pop()
        if isinstance(node, dict):
            name = node.get("$ref", "").removeprefix("#/$defs/")
            if name in defs and name not in found:
                found.add(name)
                pending.append(defs[name])
            pending.extend(node.values())
        elif isinstance(node, list):
            pending.extend(node)
    return {name: body for name, body in defs.items() if name in found}


def text() -> str:
    return json.dumps(scenario_schema(), indent=2, ensure_ascii=False) + "\n"
