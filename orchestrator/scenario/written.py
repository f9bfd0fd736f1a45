"""How a value is written in a scenario file, as JSON Schema, where that is more than the
type it is stored as: a size, duration or rate is a number in its base unit or text with a
unit ("1KB", "500ms", "20k"), and any workload field one value or a list to sweep.

The models' own validation is the parsers' (units, fields); these only shape the schema an
editor checks a file against (docs/scenario.schema.json, scenario.json_schema), in
validation mode, so what a file may say is what the parsers read.
"""

from __future__ import annotations

from typing import Any

from pydantic import GetJsonSchemaHandler, WithJsonSchema
from pydantic.json_schema import CoreSchema

from sixnines.orchestrator.scenario import units

SECOND_NS = 1_000_000_000
SIZE_TEXT = "bytes with a unit: B, KB or KiB (1,024 B), MB or MiB, GB or GiB"
DURATION_TEXT = "with a unit: ns, us (µs), ms, s, m, h"
RATE_TEXT = "msg/s with k (1,000) or M (1,000,000), optionally followed by /s or msg/s"


def _text(pattern: str, description: str) -> dict[str, Any]:
    return {"type": "string", "pattern": pattern, "maxLength": units.MAX_TEXT,
            "description": description}


def _json(schema: dict[str, Any]) -> WithJsonSchema:
    return WithJsonSchema(schema, mode="validation")


def size(minimum: int, maximum: int,
         examples: tuple[Any, ...] = (64, "1KB", "4MiB")) -> WithJsonSchema:
    return _json({"anyOf": _size_forms(minimum, maximum), "examples": list(examples)})


def _size_forms(minimum: int, maximum: int) -> list[dict[str, Any]]:
    number = {"type": "integer", "minimum": minimum, "maximum": maximum,
              "description": "bytes"}
    return [number, _text(units.SIZE_PATTERN, SIZE_TEXT)]


def message_size(minimum: int, maximum: int) -> WithJsonSchema:
    """A size, or a distribution of sizes (orchestrator.scenario.sizes)."""
    forms = _size_forms(minimum, maximum)
    a_size = {"anyOf": forms}
    distribution = {
        "type": "object", "minProperties": 1,
        "description": "a distribution: {uniform: [LOW, HIGH]}, {lognormal: {median, p99}}, "
                       "weighted choices {SIZE: WEIGHT, ...} (or under weighted:), {file: PATH}",
        "properties": {
            "uniform": {"type": "array", "items": a_size, "minItems": 2, "maxItems": 2},
            "lognormal": {"type": "object", "required": ["median", "p99"],
                          "properties": {"median": a_size, "p99": a_size},
                          "additionalProperties": False},
            "weighted": {"type": "object", "additionalProperties": {"type": "number"}},
            "file": {"type": "string", "minLength": 1}},
        "additionalProperties": {"type": "number", "exclusiveMinimum": 0}}
    return _json({"anyOf": [*forms, distribution],
                  "examples": [64, "1KB", {"uniform": [64, "4KB"]},
                               {"64": 0.7, "1KB": 0.25, "64KB": 0.05}]})


def duration(maximum_ns: int, *, minimum_ns: int = 0, above: bool = False,
             examples: tuple[Any, ...] = ("10s", "500ms", "2m")) -> WithJsonSchema:
    """A duration from `minimum_ns` (excluded when `above`) to `maximum_ns`; a plain number
    is seconds."""
    low = "exclusiveMinimum" if above else "minimum"
    number = {"type": "number", low: minimum_ns / SECOND_NS, "maximum": maximum_ns / SECOND_NS,
              "description": "seconds"}
    return _json({"anyOf": [number, _text(units.DURATION_PATTERN, DURATION_TEXT)],
                  "examples": list(examples)})


def rate(minimum: float, maximum: float, *, or_max: bool) -> WithJsonSchema:
    """A rate in msg/s; with `or_max`, also `max` (as fast as the system takes)."""
    forms: list[dict[str, Any]] = [
        {"type": "number", "minimum": minimum, "maximum": maximum, "description": "msg/s"},
        _text(units.RATE_PATTERN, RATE_TEXT)]
    if or_max:
        forms.append({"type": "string", "pattern": r"^\s*[mM][aA][xX]\s*$",
                      "description": "max: throughput mode, no schedule"})
    return _json({"anyOf": forms, "examples": [2000, "20k", "1.5M", *(["max"] if or_max else [])]})


def share(minimum: float, maximum: float) -> WithJsonSchema:
    """A share written as a fraction (0.05) or a percentage ("5%")."""
    number = {"type": "number", "minimum": minimum, "maximum": maximum,
              "description": "a fraction"}
    percent = _text(r"^\s*[+-]?(\d(_?\d)*(\.(\d(_?\d)*)?)?|\.\d(_?\d)*)\s*%?\s*$",
                    "a percentage")
    return _json({"anyOf": [number, percent], "examples": ["5%", 0.05]})


def content() -> WithJsonSchema:
    """A message's fill: a kind, or a one-key mapping (orchestrator.scenario.content)."""
    kinds = {"type": "string", "pattern": r"^\s*(random|zeros|text)\s*$"}
    texts = {"type": "string", "pattern": r"^\s*(file|compressibility)\s*=.+$"}
    sample = {"type": "object", "properties": {"file": {"type": "string", "minLength": 1}},
              "required": ["file"], "additionalProperties": False}
    ratio = {"type": "object",
             "properties": {"compressibility": {"type": "number", "exclusiveMinimum": 0,
                                                "maximum": 1}},
             "required": ["compressibility"], "additionalProperties": False}
    return _json({"anyOf": [kinds, texts, sample, ratio],
                  "examples": ["random", "text", {"compressibility": 0.6},
                               {"file": "samples/orders.json"}]})


def keys(max_keys: int) -> WithJsonSchema:
    """Message keys: none, or a count with an optional Zipf exponent
    (orchestrator.scenario.keys)."""
    none = {"type": "string", "pattern": r"^\s*none\s*$"}
    texts = {"type": "string", "pattern": r"^\s*count\s*=.+$"}
    space = {"type": "object",
             "properties": {"count": {"type": "integer", "minimum": 1, "maximum": max_keys},
                            "zipf": {"type": "number", "exclusiveMinimum": 0}},
             "required": ["count"], "additionalProperties": False}
    return _json({"anyOf": [none, texts, space],
                  "examples": ["none", {"count": 100}, {"count": 1000, "zipf": 1.1}]})


def name(pattern: str, max_length: int) -> WithJsonSchema:
    return _json({"type": "string", "pattern": pattern, "maxLength": max_length})


class OneOrList:
    """A swept field: one value, or a non-empty list of values (each combination is a
    run)."""

    def __get_pydantic_json_schema__(self, core: CoreSchema,
                                     handler: GetJsonSchemaHandler) -> dict[str, Any]:
        listed = handler(core)
        if handler.mode != "validation":
            return listed
        item = listed["items"]
        return {"anyOf": [item, {"type": "array", "items": item, "minItems": 1}]}
