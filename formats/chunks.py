"""An agent's per-message records as chunk files, and the index that vouches for them.

Producers, consumers and requesters move their records to disk while the run goes
(agents.recording): each closed chunk is one whole parquet file (`messages-000001.parquet`,
…, the `formats.records.MESSAGES` schema, written through formats.atomic), and one JSON
line in `chunks.jsonl` — `{file, rows, sha256, bytes}`, appended and fsynced after the file
is in place. A chunk named in the index is trustworthy even when the agent was SIGKILLed
right after: the index is the agent's account of what it closed. A line cut short by the
kill names nothing and is ignored. Results recorded before chunks have one
`messages.parquet` per agent instead; readers take both (`message_files`).

An agent that died sent no `done`, so no checksum of the controller's vouches for its
files: its index does. `kept_chunks` is what the analysis reads of any such agent, whatever
its role — the chunks the index lists, each to be checked against its line — and names the
chunk files it does not list (renamed into place as the agent died, before their line was
written), which are never read.

A results directory is untrusted input (formats.run_files), so what the analysis reads of
any agent of one is `recorded_chunks`: only the chunks its index lists — and, for an agent
that reported, that its manifest entry lists with their checksums too — each reached
through formats.run_files; a chunk file copied in beside them is named, never read.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from fnmatch import fnmatchcase
from pathlib import Path

from sixnines.formats.layout import CHUNK_GLOB, CHUNK_INDEX, MESSAGES_FILE
from sixnines.formats.manifest import AgentEntry
from sixnines.formats.run_files import (
    RefusedPath,
    agent_file,
    agent_folder,
    json_bound,
    open_regular,
)


def message_files(folder: Path) -> list[Path]:
    """An agent's per-message files in `folder`: the chunks its index lists in order, or
    the whole-run messages.parquet of results recorded before chunks (empty when it left
    neither)."""
    whole = folder / MESSAGES_FILE
    chunks = [folder / entry["file"] for entry in read_index(folder)]
    return chunks or ([whole] if whole.is_file() else [])


def append_entry(index: int, entry: dict) -> None:
    """Append one line to the open index file descriptor and make it durable (a single
    write: a kill leaves the line whole or absent, at worst cut short at the end)."""
    os.write(index, (json.dumps(entry, separators=(",", ":")) + "\n").encode("ascii"))
    os.fsync(index)


def read_index(folder: Path, max_bytes: int | None = None) -> list[dict]:
    """The chunks the index in `folder` lists (empty without one); a last line cut short
    by a kill is left out. With `max_bytes` (an index in a results directory), one larger,
    or anything but a regular file, is RefusedPath."""
    try:
        with open_regular(folder / CHUNK_INDEX) as index:
            data = index.read() if max_bytes is None else index.read(max_bytes + 1)
    except RefusedPath:
        if max_bytes is not None:
            raise
        return []
    except OSError:
        return []
    if max_bytes is not None and len(data) > max_bytes:
        raise RefusedPath(f"{folder / CHUNK_INDEX}: larger than {max_bytes:,} bytes, more "
                          "than its agent writes for the files there; not read")
    return [entry for line in data.splitlines() if (entry := index_entry(line)) is not None]


def index_entry(line: str | bytes) -> dict | None:
    """One line of the index as its entry; None for a line that names no chunk (cut short,
    or not one of the agent's: see `_is_entry`)."""
    try:
        entry = json.loads(line)
    except (ValueError, RecursionError):  # cut short, or no line an agent writes (`[[[[…`)
        return None
    return entry if _is_entry(entry) else None


def _is_entry(entry: object) -> bool:
    """An index line of the agent's: a chunk's own name (never a path, so an edited index
    cannot point elsewhere), its row count, sha256 (64 hex digits) and size."""
    if not isinstance(entry, dict):
        return False
    name, rows, sha256, size = (entry.get(key) for key in ("file", "rows", "sha256", "bytes"))
    return (isinstance(name, str) and "/" not in name and fnmatchcase(name, CHUNK_GLOB)
            and isinstance(sha256, str) and len(sha256) == 64
            and all(char in "0123456789abcdef" for char in sha256)
            and all(isinstance(n, int) and not isinstance(n, bool) and n >= 0
                    for n in (rows, size)))


@dataclass(frozen=True)
class KeptChunks:
    """What a dead agent's folder holds of its records: the chunks its index lists, in
    closing order, each with its index line ({file, rows, sha256, bytes}) to be checked
    against, and the chunk files the index does not list (ignored)."""

    listed: list[tuple[Path, dict]]
    unlisted: list[Path]

    @property
    def paths(self) -> list[Path]:
        return [path for path, _ in self.listed]


def kept_chunks(folder: Path) -> KeptChunks:
    """The chunks an agent that died left in `folder` (see the module docstring)."""
    listed = [(folder / entry["file"], entry) for entry in read_index(folder)]
    return KeptChunks(listed, _unlisted(folder, listed))


def _unlisted(folder: Path, listed: list[tuple[Path, dict]]) -> list[Path]:
    names = {path.name for path, _ in listed}
    return [path for path in sorted(folder.glob(CHUNK_GLOB)) if path.name not in names]


def index_of(run_dir: Path, agent_id: str) -> list[dict]:
    """The chunks an agent's index in a results directory lists (`read_index`), read
    through formats.run_files and within the size its folder calls for: RefusedPath when
    the index or the folder is not what it should be."""
    folder = agent_folder(run_dir, agent_id)
    agent_file(run_dir, agent_id, CHUNK_INDEX)  # inside the run, and a file if there
    return read_index(folder, json_bound([folder]))


def recorded_chunks(run_dir: Path, entry: AgentEntry) -> KeptChunks:
    """What is read of an agent's records in a results directory (see the module
    docstring): the chunks its index lists, of an agent that reported only those its
    manifest entry lists as well; else, for results recorded before chunks, its
    messages.parquet (with an empty index line). RefusedPath when its folder, its
    index or a chunk is not what it should be."""
    folder = agent_folder(run_dir, entry.id)
    lines = index_of(run_dir, entry.id)
    vouched = entry.died or not entry.artifacts
    listed = [(agent_file(run_dir, entry.id, line["file"]), line) for line in lines
              if vouched or _arrived(entry, line["file"])]
    whole = agent_file(run_dir, entry.id, MESSAGES_FILE)
    if not lines and not entry.died and whole.is_file() and \
            (vouched or _arrived(entry, MESSAGES_FILE)):
        listed = [(whole, {})]
    return KeptChunks(listed, _unlisted(folder, listed))


def _arrived(entry: AgentEntry, name: str) -> bool:
    """Whether a reported agent's manifest entry lists the file as one the controller got
    and verified (`verified: false` is a file it never got, or one that changed on the way
    and refuses the run: formats.integrity)."""
    recorded = entry.artifacts.get(name)
    return recorded is not None and recorded.verified is not False
