"""The JSON Schemas of the result files users' own tools read, generated from their models:
docs/summary.schema.json (summary.json, formats.summary) and docs/manifest.schema.json
(manifest.json, formats.manifest).

    python -m sixnines.formats.schema [DIR]           write both into DIR (default: docs)
    python -m sixnines.formats.schema --check [DIR]   exit 1 naming each stale file there

tests/test_schema.py fails while a shipped file differs from what its model generates.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from sixnines.formats import manifest, summary

DRAFT = "https://json-schema.org/draft/2020-12/schema"
COMMAND = "python -m sixnines.formats.schema docs"
#: file name → (model, its schema version, what the file is)
SCHEMAS: dict[str, tuple[type[BaseModel], int, str]] = {
    "summary.schema.json": (summary.ResultsSummary, summary.SCHEMA_VERSION,
                            "summary.json of a scenario's results; each of its runs, and "
                            "each run's report/summary.json, is a RunSummary ($defs)"),
    "manifest.schema.json": (manifest.Manifest, manifest.SCHEMA_VERSION,
                             "manifest.json of a run"),
}
#: keys that only explain: a change to them is no change of shape
PROSE = ("title", "description", "$comment")


def tidy(node: Any) -> Any:
    """Docstrings as one-line descriptions (their line breaks are the source's wrapping)."""
    if isinstance(node, dict):
        return {key: " ".join(value.split()) if key == "description" and isinstance(value, str)
                else tidy(value) for key, value in node.items()}
    if isinstance(node, list):
        return [tidy(value) for value in node]
    return node


def schema(name: str) -> dict[str, Any]:
    """The JSON Schema shipped as docs/`name`."""
    model, version, what = SCHEMAS[name]
    body = tidy(model.model_json_schema(mode="serialization"))
    return {"$schema": DRAFT, **body,
            "title": f"sixnines {what.split(' ', 1)[0]}, schema_version {version}",
            "$comment": f"The {what}. Generated from {model.__module__}.{model.__name__} "
                        f"by `{COMMAND}`; do not edit."}


def text(name: str) -> str:
    return json.dumps(schema(name), indent=2, ensure_ascii=False) + "\n"


def _shape(node: Any) -> Any:
    if isinstance(node, dict):
        return {key: _shape(value) for key, value in node.items() if key not in PROSE}
    if isinstance(node, list):
        return [_shape(value) for value in node]
    return node


def fingerprint(body: dict[str, Any]) -> str:
    """What a schema allows, without its prose: the same while only docstrings change."""
    canonical = json.dumps(_shape(body), sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()[:16]


def stale(directory: Path) -> list[str]:
    """The shipped schemas in `directory` that differ from their models' (or are missing)."""
    found = []
    for name in SCHEMAS:
        path = directory / name
        if not path.is_file() or path.read_text(encoding="utf-8") != text(name):
            found.append(str(path))
    return found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m sixnines.formats.schema",
                                     description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true",
                        help="write nothing; exit 1 when a schema there is stale")
    parser.add_argument("directory", nargs="?", type=Path, default=Path("docs"))
    args = parser.parse_args(argv)
    if args.check:
        for path in stale(args.directory):
            print(f"{path}: stale; regenerate with `{COMMAND}`", file=sys.stderr)
        return 1 if stale(args.directory) else 0
    for name in SCHEMAS:
        path = args.directory / name
        path.write_text(text(name), encoding="utf-8")
        print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
