"""The run manifest: what was run, where, with what, and how it went. Written atomically so a
reader never sees half a file, and rewritten as the run progresses."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

from agents.facts import host_facts, versions
from agents.protocol import PROTOCOL_VERSION

MANIFEST_FILE = "manifest.json"


def new_manifest(point, scenario: str) -> dict:
    system = point.system
    return {
        "sixnines": {"version": versions().get("sixnines"), "protocol": PROTOCOL_VERSION},
        "scenario": scenario,
        "run_id": point.run_id,
        "system": system.name,
        "driver": system.driver,
        "driver_options": system.options.model_dump(mode="json"),
        "broker": {"kind": system.broker.kind},
        "params": point.params,
        "swept": point.swept,
        "workload": point.params,
        "controller": {"host": host_facts(), "versions": versions()},
        "status": "running",
        "problems": [],
        "agents": [],
        "created_at": time.time(),
    }


def write_manifest(run_dir: Path, manifest: dict) -> Path:
    path = run_dir / MANIFEST_FILE
    partial = path.with_suffix(".json.tmp")
    partial.write_text(json.dumps(manifest, indent=2, sort_keys=False) + "\n", encoding="utf-8")
    os.replace(partial, path)
    return path


def read_manifest(run_dir: Path) -> dict:
    return json.loads((run_dir / MANIFEST_FILE).read_text(encoding="utf-8"))
