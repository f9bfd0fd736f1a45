"""The scenario's JSON Schema (docs/scenario.schema.json) as an editor uses it, checked with
an independent validator (jsonschema): every example carries the editor line and passes it,
it takes every value the parsers take, and it refuses the usual mistakes as the loader does."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
import yaml
from jsonschema import Draft202012Validator
from pydantic import TypeAdapter, ValidationError

from sixnines.orchestrator.scenario.fields import NumericRate, Rate, RunTime, Size, Wait
from sixnines.orchestrator.scenario.model import ScenarioError, parse_scenario
from tests.result_schemas import DOCS

SCHEMA_PATH = DOCS / "scenario.schema.json"
SCHEMA = json.loads(SCHEMA_PATH.read_text(encoding="utf-8"))
EXAMPLES = sorted((DOCS.parent / "examples").glob("*.yaml"))
EDITOR_LINE = "# yaml-language-server: $schema="


def _validator(ref: str = "") -> Draft202012Validator:
    """The schema, or one of its parts (`ref`) alone."""
    return Draft202012Validator({"$defs": SCHEMA["$defs"], "$ref": ref} if ref else SCHEMA)


def test_the_schema_is_a_valid_draft_2020_12_schema():
    Draft202012Validator.check_schema(SCHEMA)


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.stem)
def test_every_example_names_the_schema_and_passes_it(path):
    first = path.read_text(encoding="utf-8").splitlines()[0]
    assert first.startswith(EDITOR_LINE), f"{path.name}: its first line is not {EDITOR_LINE}…"
    assert (path.parent / first.removeprefix(EDITOR_LINE)).resolve() == SCHEMA_PATH
    errors = [f"{'/'.join(map(str, e.absolute_path))}: {e.message}"
              for e in _validator().iter_errors(yaml.safe_load(path.read_text()))]
    assert errors == []


MINIMAL = """\
name: s
systems: [{name: t, driver: tcp}]
workload: {message_size: 1KB, rate: 20k, duration: 5s}
"""
KAFKA = """\
name: s
systems: [{name: k, driver: kafka, broker: {external: "127.0.0.1:9092"}, options: %s}]
workload: {message_size: 64, rate: 1000, duration: 1}
"""
#: scenario text → whether it is valid; the loader and the schema must agree on each
DOCUMENTS = {
    MINIMAL: True,
    MINIMAL.replace("rate: 20k", "rate: '20k msg/s'"): True,
    MINIMAL.replace("1KB", "[64, 1.5 KiB, 4MB]"): True,
    MINIMAL.replace("duration: 5s", "duration: [500ms, 2.5, 1m]"): True,
    MINIMAL.replace("rate: 20k, duration: 5s", "rate: max, messages: 1000"): True,
    MINIMAL.replace("rate: 20k", "rate: {search: max, objective: {p99: 1ms}, from: 1k, "
                    "to: 100k, precision: 5%}"): True,
    MINIMAL.replace("{name: t, driver: tcp}", "{name: t, driver: tcp, broker: builtin, "
                    "options: {nodelay: false}}"): True,
    "name: s\nsystems: [{name: t, driver: tcp}]\nworkload: {duration: 5s}\n"
    "cases: [{name: a, message_size: 64, rate: 1k}]\n": True,
    KAFKA % "{acks: all, linger_ms: 5, compression: zstd}": True,
    MINIMAL.replace("1KB", "1 banana"): False,
    MINIMAL.replace("1KB", "1e3"): False,
    MINIMAL.replace("rate: 20k", "rate: fast"): False,
    MINIMAL.replace("duration: 5s", "duration: 5 parsecs"): False,
    MINIMAL.replace("rate: 20k", "rat: 20k"): False,
    MINIMAL.replace("1KB", "16"): False,
    MINIMAL.replace("workload:", "workloads:"): False,
    MINIMAL.replace("{name: t, driver: tcp}", "{name: t, driver: tcp, broker: builtn}"): False,
    MINIMAL.replace("{name: t, driver: tcp}", "{name: t, driver: tcp, options: {nodely: 1}}"):
        False,
    KAFKA % "{acks: 2}": False,
    KAFKA % "{linger: 5}": False,
    "name: s\nsystems: [{name: t, driver: tcp}]\n": False,
}


@pytest.mark.parametrize("text", list(DOCUMENTS), ids=range(len(DOCUMENTS)))
def test_the_schema_and_the_loader_agree(text):
    try:
        parse_scenario(text)
        loads = True
    except ScenarioError:
        loads = False
    passes = _validator().is_valid(yaml.safe_load(text))
    assert (loads, passes) == (DOCUMENTS[text], DOCUMENTS[text])


#: values as a file may write them, some the parsers take and some not
WRITTEN = {
    "message_size": (Size, [64, 1024.0, "64", " 512B ", "1KB", "1kb", "1.5 KiB", "4MiB", "2GB",
                            "1gib", "+64", "1e3", "1 banana", "64 bytes", "KB", "", True]),
    "rate": (Rate, [2000, 0.5, "20k", "20K", "1.5M", "500/s", "20k msg/s", "2e3", "1E+3k",
                    " max ", "MAX", "20 kmsg", "1m", "fast", "", "1e999", False]),
    "duration": (RunTime, [10, 2.5, "10", "10s", "500ms", "250us", "250µs", "100ns", "2m",
                           "1h", "1H", "1.5 s", "10 sec", "1d", "", "s"]),
    "warmup": (Wait, [0, "0", "0s", "1s", "59m", "-1s"]),
}


@pytest.mark.parametrize("field", list(WRITTEN))
def test_the_schema_takes_every_value_the_parser_takes(field):
    kind, values = WRITTEN[field]
    validator = _validator(f"#/$defs/WorkloadSpec/properties/{field}")
    for value in values:
        try:
            TypeAdapter(kind).validate_python(value)
        except ValidationError:
            continue
        assert validator.is_valid(value), f"{field}: the parser takes {value!r}, the schema not"
        assert validator.is_valid([value, value])  # swept


def test_the_search_bounds_take_a_rate_but_not_max():
    validator = _validator("#/$defs/RateSearch/properties/from")
    assert TypeAdapter(NumericRate).validate_python("20k") == 20_000
    assert validator.is_valid("20k") and not validator.is_valid("max")


def test_sixnines_schema_scenario_prints_the_shipped_schema():
    done = subprocess.run([sys.executable, "-m", "sixnines", "schema", "scenario"],
                          capture_output=True, text=True, timeout=60, check=True)
    assert done.stdout == SCHEMA_PATH.read_text(encoding="utf-8")
