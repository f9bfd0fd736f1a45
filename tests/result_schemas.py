"""The shipped JSON Schemas (docs/*.schema.json) as validators, and the check that every
summary.json and manifest.json a test leaves under pytest's temporary directories follows
them (tests/conftest.py runs it after each test).

A file is checked when it says it is a sixnines result: a JSON object with
`schema_version`, which every summary and manifest sixnines writes carries. Files a test
writes by hand in an older shape (no schema_version), or damages on purpose (not JSON),
are left alone; a test that writes a deliberately invalid one with a schema_version is
marked `unchecked_results`.
"""

from __future__ import annotations

import functools
import json
import os
from pathlib import Path
from stat import S_ISREG
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from jsonschema import Draft202012Validator

DOCS = Path(__file__).resolve().parents[1] / "docs"
SUMMARY, MANIFEST = "summary.schema.json", "manifest.schema.json"


@functools.cache
def shipped(name: str) -> dict[str, Any]:
    return json.loads((DOCS / name).read_text(encoding="utf-8"))


@functools.cache
def validator(name: str, definition: str | None = None) -> Draft202012Validator:
    """The shipped schema `name`, or its $defs entry `definition` (RunSummary: each run's
    report/summary.json). jsonschema is imported here, by the first test that leaves a
    result (it is in the `test` extra)."""
    from jsonschema import Draft202012Validator

    schema = shipped(name)
    if definition is not None:
        schema = {"$schema": schema["$schema"], "$defs": schema["$defs"],
                  "$ref": f"#/$defs/{definition}"}
    Draft202012Validator.check_schema(schema)
    return Draft202012Validator(schema)


def violations(document: Any, name: str, definition: str | None = None) -> list[str]:
    """Where `document` breaks the schema, one line each (path: message)."""
    return [f"{'/'.join(map(str, error.absolute_path)) or '(top)'}: {error.message}"
            for error in validator(name, definition).iter_errors(document)]


def _schema_of(path: Path) -> tuple[str, str | None]:
    if path.name == "manifest.json":
        return MANIFEST, None
    return (SUMMARY, "RunSummary") if path.parent.name == "report" else (SUMMARY, None)


_checked: dict[Path, tuple[int, int]] = {}  # path → (mtime_ns, size) when it passed


def unchecked_problems(base: Path) -> list[str]:
    """Every summary.json and manifest.json under `base` written or changed since the last
    call, checked against its shipped schema: one line per file that breaks it."""
    problems = []
    for folder, _, names in os.walk(base):
        for name in {"summary.json", "manifest.json"}.intersection(names):
            path = Path(folder) / name
            try:
                stat = path.stat()
                if _checked.get(path) == (stat.st_mtime_ns, stat.st_size) or \
                        not S_ISREG(stat.st_mode):  # a FIFO put there on purpose: not read
                    continue
                document = json.loads(path.read_text(encoding="utf-8"))
            except (OSError, ValueError, RecursionError):
                continue  # gone, or damaged on purpose (nested past any reader): no result
            if not isinstance(document, dict) or "schema_version" not in document:
                continue
            found = violations(document, *_schema_of(path))
            if found:
                problems.append(f"{path}: {'; '.join(found[:5])}")
            else:
                _checked[path] = (stat.st_mtime_ns, stat.st_size)
    return problems
