"""The scenario reference (docs/scenario.md) and the scenario's JSON Schema
(docs/scenario.schema.json), both generated from the models: every field with its type,
default, units, bounds, example and description, every driver's options, every broker
recipe shipped in deploy/recipes.

    python -m sixnines.orchestrator.scenario.reference [DIR]           write both (default: docs)
    python -m sixnines.orchestrator.scenario.reference --check [DIR]   exit 1 naming each stale one

tests/test_scenario_reference.py fails while a shipped file differs from what this generates.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from sixnines.orchestrator.scenario import units, written
from sixnines.orchestrator.scenario.json_schema import (
    COMMAND,
    builtin_recipes,
    own_driver_options,
    scenario_schema,
)
from sixnines.orchestrator.scenario.json_schema import FILE_NAME as SCHEMA_FILE
from sixnines.orchestrator.scenario.json_schema import text as schema_text
from sixnines.orchestrator.scenario.recipes import Recipe, load_recipe

REFERENCE_FILE = "scenario.md"
#: (heading, the schema's definition, what leads to it) in the order the page explains them
SECTIONS = (
    ("Top level", None, "The keys of the file itself."),
    ("`workload`", "WorkloadSpec", "What every run sends. Each field may be one value or a "
     "list: a list is swept, and every combination (times each system) is one run."),
    ("`cases`", "Case", "Named combinations instead of one product: each case sets some "
     "workload fields over the base `workload` (where no field is required); a field a case "
     "leaves out is the base's, else the default above."),
    ("`rate: {search: max, …}`", "RateSearch", "A capacity search: the highest rate that "
     "meets a latency objective."),
    ("`rate: {steps: […]}`", "Steps", "A rate shape of steps (docs/writing.md, \"Rate "
     "shapes\", has the rules at the end of the run)."),
    ("`steps[]`", "RateStep", "One step."),
    ("`rate: {ramp: …}`", "Ramp", "A rate shape going from one rate to another."),
    ("`ramp`", "RampSpan", "The ramp."),
    ("`rate: {base: …, bursts: …}`", "Bursts", "A rate shape of bursts over a base rate."),
    ("`bursts`", "Burst", "Each burst."),
    ("`rate: {trace: FILE}`", "Trace", "A rate shape replayed from a file."),
    ("`systems[]`", "System", "One system under test."),
    ("`broker`", "BrokerSpec", "Where a system runs: the word `builtin` (sixnines starts "
     "the driver's own broker: tcp and zmq), `{external: HOST:PORT}`, or `{recipe: NAME}` "
     "(see [Broker recipes](#broker-recipes))."),
    ("`hosts[]`: SSH host", "SshHost", "A machine reached over SSH."),
    ("`hosts[]`: container host", "ContainerHost", "A Docker API endpoint (a host with "
     "`docker:`)."),
    ("`link`", "LinkShaping", "Shaping of an SSH host's link while the scenario runs."),
    ("`placement`", "Placement", "Where the broker and the agents go."),
    ("`faults[]`", "Fault", "A fault on purpose at a time of the measured run (see "
     "[faults.md](faults.md#faults-on-purpose))."),
)
WRITTEN = {units.SIZE_PATTERN: ("size", written.SIZE_TEXT),
           units.DURATION_PATTERN: ("duration", written.DURATION_TEXT),
           units.RATE_PATTERN: ("rate", written.RATE_TEXT)}


def _code(value: Any) -> str:
    shown = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    return f"`{shown}`"


def _cell(text: str) -> str:
    return " ".join(text.split()).replace("|", "\\|")


def _number(value: float) -> str:
    return f"{value:,}" if isinstance(value, int) or not value.is_integer() else f"{value:,.0f}"


class _Page:
    """Renders fields of the schema as Markdown rows, resolving its references."""

    def __init__(self, schema: dict[str, Any]) -> None:
        self.defs = schema["$defs"]
        self.anchors = {name: _anchor(heading) for heading, name, _ in SECTIONS if name}
        self.anchors |= {options.__name__: _anchor(f"`{driver}`")
                         for driver, options in own_driver_options().items()}

    def resolve(self, node: dict[str, Any]) -> dict[str, Any]:
        name = node.get("$ref", "").removeprefix("#/$defs/")
        return self.defs[name] if name in self.defs and name not in self.anchors else node

    def alternatives(self, node: dict[str, Any]) -> list[dict[str, Any]]:
        node = self.resolve(node)
        forms = node.get("anyOf") or node.get("oneOf")
        if not forms:
            return [node]
        return [alt for form in forms for alt in self.alternatives(form)]

    def kind(self, node: dict[str, Any]) -> str:
        """The type in a word or two: `size`, `one-way` | `round-trip`, list of …"""
        node = self.resolve(node)
        name = node.get("$ref", "").removeprefix("#/$defs/")
        if name:
            return f"[{self.defs[name].get('title', name)}](#{self.anchors[name]})"
        forms = node.get("anyOf") or node.get("oneOf")
        if forms and _swept(forms):
            return f"{self.kind(forms[0])}, or a list (swept)"
        if forms:
            for pattern, (word, _) in WRITTEN.items():
                if any(form.get("pattern") == pattern for form in forms):
                    return word + (" or `max`" if len(forms) > 2 else "")
            shown = [self.kind(form) for form in forms if form.get("type") != "null"]
            return " or ".join(dict.fromkeys(shown))
        if "const" in node:
            return _code(node["const"])
        if "enum" in node:
            return " | ".join(_code(value) for value in node["enum"])
        if node.get("type") == "array":
            return f"list of {self.kind(node['items'])}"
        if "propertyNames" in node:
            keys = " | ".join(_code(key) for key in node["propertyNames"].get("enum", []))
            return f"mapping of {keys} to {self.kind(node['additionalProperties'])}"
        words = {"string": "text", "integer": "integer", "number": "number",
                 "boolean": "`true` | `false`", "object": "mapping"}
        return words.get(str(node.get("type")), "any")

    def units(self, node: dict[str, Any]) -> str:
        for alt in self.alternatives(node):
            if alt.get("pattern") in WRITTEN:
                plain = next(a.get("description") for a in self.alternatives(node)
                             if a.get("type") in ("number", "integer"))
                return f"{plain}; or text {alt['description']}"
        return ""

    def bounds(self, node: dict[str, Any]) -> str:
        found = []
        for alt in self.alternatives(node):
            seconds = alt.get("description") == "seconds"
            show = _seconds if seconds else _number
            low = [f"≥ {show(alt['minimum'])}"] if "minimum" in alt else []
            low += [f"> {show(alt['exclusiveMinimum'])}"] if "exclusiveMinimum" in alt else []
            high = [f"≤ {show(alt['maximum'])}"] if "maximum" in alt else []
            if low or high:
                found.append(", ".join(low + high))
            if "maxLength" in alt and alt.get("pattern") not in WRITTEN:
                found.append(f"≤ {alt['maxLength']:,} characters")
            if alt.get("minLength"):
                found.append("not empty")
            if "pattern" in alt and alt["pattern"] not in WRITTEN and \
                    not alt["pattern"].startswith(r"^\s*"):
                found.append(f"matches {_code(alt['pattern'])}")
        for key, text in (("minItems", "≥ {} items"), ("maxItems", "≤ {} items")):
            if key in node:
                found.append(text.format(f"{node[key]:,}"))
        return "; ".join(dict.fromkeys(found))

    def example(self, node: dict[str, Any]) -> str:
        """The first examples found in `node` or its alternatives, outermost first."""
        pending = [node]
        while pending:
            alt = self.resolve(pending.pop(0))
            if alt.get("examples"):
                return ", ".join(_code(value) for value in alt["examples"][:3])
            pending += alt.get("anyOf", []) + alt.get("oneOf", [])
        return ""

    def table(self, body: dict[str, Any]) -> list[str]:
        required = set(body.get("required", ()))
        rows = ["| field | type | default | units | bounds | example | description |",
                "|---|---|---|---|---|---|---|"]
        for name, field in body["properties"].items():
            default = "required" if name in required else (
                _code(field["default"]) if "default" in field else "")
            cells = [_code(name), self.kind(field), default, self.units(field),
                     self.bounds(field), self.example(field), field.get("description", "")]
            rows.append("| " + " | ".join(map(_cell, cells)) + " |")
        return rows


def _seconds(value: float) -> str:
    return units.format_duration(round(value * 1e9)) if value else "0"


def _swept(forms: list[dict[str, Any]]) -> bool:
    return len(forms) == 2 and forms[1].get("type") == "array" and forms[1]["items"] == forms[0]


def _anchor(heading: str) -> str:
    """GitHub's anchor of a Markdown heading."""
    kept = "".join(c for c in heading.lower() if c.isalnum() or c in " -_")
    return kept.replace(" ", "-")


def _recipe_rows(recipes: list[Recipe]) -> list[str]:
    rows = ["| recipe | drivers | what it starts | off loopback | container image | "
            "how to install |", "|---|---|---|---|---|---|"]
    for recipe in recipes:
        loopback = ("a per-run credential" if recipe.native.auth is not None else
                    "refused unless `allow_unauthenticated: true`")
        what = recipe.description + (f" (note on its figures: {recipe.note})"
                                     if recipe.note else "") + (
            "; or a cluster of several (`nodes: N`)" if recipe.cluster else "")
        cells = [_code(recipe.name), ", ".join(recipe.drivers), what, loopback,
                 _code(recipe.container.image) if recipe.container else "",
                 recipe.native.install or ""]
        rows.append("| " + " | ".join(map(_cell, cells)) + " |")
    return rows


def reference() -> str:
    schema = scenario_schema()
    page = _Page(schema)
    out = ["# Scenario reference", "",
           f"<!-- Generated from the scenario models by `{COMMAND}`; do not edit. -->", "",
           "Every field of a scenario file, generated from the models `sixnines validate` "
           f"checks a file with. The same models give the JSON Schema [{SCHEMA_FILE}]"
           f"({SCHEMA_FILE}): an editor with a YAML language server (VS Code's YAML "
           "extension, for one) completes and checks a scenario whose first line names it:",
           "", "```yaml", f"# yaml-language-server: $schema=../docs/{SCHEMA_FILE}", "```", "",
           "(the path is relative to the scenario file; `sixnines schema scenario` prints "
           "the schema). What a schema cannot say — rules across fields, whether a recipe "
           "exists, what this machine can run — `sixnines validate FILE` checks.", "",
           "Values with units are written as a number in the base unit or as text:", "",
           "| kind | a number is | text |", "|---|---|---|",
           f"| size | bytes | {written.SIZE_TEXT}: `64`, `1KB`, `1.5 KiB`, `4MiB` |",
           f"| duration | seconds | {written.DURATION_TEXT}: `10s`, `500ms`, `250us`, `2m` |",
           f"| rate | msg/s | {written.RATE_TEXT}: `2000`, `20k`, `1.5M`, `500/s` |", ""]
    for heading, name, lead in SECTIONS:
        body = schema if name is None else schema["$defs"][name]
        if name == "BrokerSpec":
            body = body["anyOf"][1]
        if name is None:  # its shape depends on `cases:` (if/then/else)
            workload = body["properties"]["workload"] | {"$ref": "#/$defs/WorkloadSpec"}
            body = body | {"properties": body["properties"] | {"workload": workload}}
        out += [f"## {heading}", "", lead, "", *page.table(body), ""]
    out += ["## Driver options", "",
            "A system's `options:`, by its driver. Unknown keys are refused.", ""]
    for driver, options in own_driver_options().items():
        body = schema["$defs"][options.__name__]
        lead = body.get("description", "")
        out += [f"### `{driver}`", "", *([lead, ""] if lead else []), *page.table(body), ""]
    out += ["## Broker recipes", "",
            "What `broker: {recipe: NAME}` can name among the recipes shipped in "
            "deploy/recipes (a directory given with `--recipes DIR` or in "
            "`$SIXNINES_RECIPE_PATH` adds more, searched first). A recipe runs on the "
            "broker host; off loopback, sixnines makes the broker require a credential of "
            "the run's own where the recipe says how.", "",
            *_recipe_rows([load_recipe(name) for name in builtin_recipes()])]
    return "\n".join(out) + "\n"


#: file name → what it should hold
FILES = {REFERENCE_FILE: reference, SCHEMA_FILE: schema_text}


def stale(directory: Path) -> list[Path]:
    """The files in `directory` that differ from what the models generate (or are missing)."""
    return [directory / name for name, make in FILES.items()
            if not (directory / name).is_file()
            or (directory / name).read_text(encoding="utf-8") != make()]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m sixnines.orchestrator.scenario.reference",
                                     description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true",
                        help="write nothing; exit 1 when a file there is stale")
    parser.add_argument("directory", nargs="?", type=Path, default=Path("docs"), metavar="DIR")
    args = parser.parse_args(argv)
    if args.check:
        found = stale(args.directory)
        for path in found:
            print(f"{path}: stale; regenerate with `{COMMAND}`", file=sys.stderr)
        return 1 if found else 0
    for name, make in FILES.items():
        path = args.directory / name
        path.write_text(make(), encoding="utf-8")
        print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
