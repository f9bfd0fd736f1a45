"""An agent's per-message records as chunk files, and the index that vouches for them.

Producers and consumers move their records to disk while the run goes (agents.recording):
each closed chunk is one whole parquet file (`messages-000001.parquet`, …, the
`formats.records.MESSAGES` schema, written through formats.atomic), and one JSON line in
`chunks.jsonl` — `{file, rows, sha256, bytes}`, appended and fsynced after the file is in
place. A chunk named in the index is trustworthy even when the agent was SIGKILLed right
after: the index is the agent's account of what it closed. A line cut short by the kill
names nothing and is ignored. Requesters (and the whole-run path) still write one
`messages.parquet` at the end; readers take both (`message_files`).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from sixnines.formats.records import MESSAGES_FILE

CHUNK_INDEX = "chunks.jsonl"
CHUNK_GLOB = "messages-[0-9]*.parquet"


def chunk_name(number: int) -> str:
    """The file of the agent's `number`-th chunk (from 1): names sort in closing order."""
    return f"messages-{number:06d}.parquet"


def message_files(folder: Path) -> list[Path]:
    """An agent's per-message files in `folder`: its chunks in order, or the whole-run
    messages.parquet (empty when it left neither)."""
    whole = folder / MESSAGES_FILE
    return sorted(folder.glob(CHUNK_GLOB)) + ([whole] if whole.is_file() else [])


def append_entry(index: int, entry: dict) -> None:
    """Append one line to the open index file descriptor and make it durable (a single
    write: a kill leaves the line whole or absent, at worst cut short at the end)."""
    os.write(index, (json.dumps(entry, separators=(",", ":")) + "\n").encode("ascii"))
    os.fsync(index)


def read_index(folder: Path) -> list[dict]:
    """The chunks the index in `folder` lists (empty without one); a last line cut short
    by a kill is left out."""
    try:
        text = (folder / CHUNK_INDEX).read_text(encoding="ascii")
    except (OSError, UnicodeDecodeError):
        return []
    return [entry for line in text.splitlines() if (entry := index_entry(line)) is not None]


def index_entry(line: str | bytes) -> dict | None:
    """One line of the index as its entry; None for a line that names no chunk (cut short)."""
    try:
        entry = json.loads(line)
    except ValueError:
        return None
    if isinstance(entry, dict) and {"file", "rows", "sha256", "bytes"} <= entry.keys():
        return entry
    return None
