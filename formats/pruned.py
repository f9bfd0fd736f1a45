"""A run's mark that its raw per-message chunks were removed on purpose (`sixnines prune`):
which files, of which agent, how large, and when.

A pruned run keeps its analysis (report/, the hlogs, cpu.parquet, done.json, the manifest)
but can no longer be analysed again from its records. Readers use the mark to say so: the
analysis keeps the summary made before, and a file the manifest lists is "pruned", not
"deleted since the run". The mark is written before any file is removed, so a prune cut
short leaves a mark naming every file it meant to remove.

A results directory is untrusted input (formats.run_files): the mark is read with a size
bound, and one that is not what sixnines writes counts as no mark at all, so an edited
mark cannot excuse a damaged run's missing files beyond naming them pruned.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from sixnines.formats.atomic import write_atomically
from sixnines.formats.json_input import read_json
from sixnines.formats.layout import PRUNED_FILE
from sixnines.formats.run_files import (
    RefusedPath,
    agent_folders,
    json_bound,
    name_problem,
    run_file,
)

SCHEMA_VERSION = 1


@dataclass(frozen=True)
class PrunedFile:
    agent: str
    file: str
    bytes: int


@dataclass(frozen=True)
class Pruned:
    """When a run was pruned (ISO 8601, UTC) and the files removed."""

    when: str
    files: tuple[PrunedFile, ...]

    @property
    def bytes(self) -> int:
        return sum(entry.bytes for entry in self.files)

    def names(self) -> set[tuple[str, str]]:
        """(agent id, file name) of every file removed."""
        return {(entry.agent, entry.file) for entry in self.files}

    def note(self) -> str:
        """What a reader of the run is told."""
        return (f"raw records pruned on {self.when[:10]} (`sixnines prune`: "
                f"{len(self.files):,} chunk file(s)): the analysis made before is kept; it "
                "cannot be made again")


def now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def read_pruned(run_dir: Path) -> Pruned | None:
    """The run's mark, or None when it has none or one sixnines did not write."""
    try:
        body = read_json(run_file(run_dir, PRUNED_FILE), json_bound(agent_folders(run_dir)))
    except (RefusedPath, OSError, ValueError):
        return None
    if not isinstance(body, dict) or not isinstance(body.get("when"), str) or \
            not isinstance(body.get("files"), list):
        return None
    files = []
    for entry in body["files"]:
        if not isinstance(entry, dict):
            return None
        agent, name, size = entry.get("agent"), entry.get("file"), entry.get("bytes")
        if not isinstance(agent, str) or not isinstance(name, str) or name_problem(agent) or \
                name_problem(name) or not isinstance(size, int) or \
                isinstance(size, bool) or size < 0:
            return None
        files.append(PrunedFile(agent, name, size))
    return Pruned(body["when"], tuple(files))


def write_pruned(run_dir: Path, pruned: Pruned) -> None:
    """The mark, written whole (formats.atomic) in the run directory."""
    body = {"schema_version": SCHEMA_VERSION, "when": pruned.when,
            "files": [{"agent": e.agent, "file": e.file, "bytes": e.bytes}
                      for e in pruned.files]}
    write_atomically(run_file(run_dir, PRUNED_FILE), json.dumps(body, indent=1) + "\n")
