"""What is read of an agent that died: the chunks its own index lists, each checked
against its line, and nothing else in its folder (formats.chunks, formats.integrity)."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from sixnines.formats import integrity
from sixnines.formats.chunks import kept_chunks, read_index
from sixnines.formats.layout import CHUNK_INDEX, chunk_name
from sixnines.formats.manifest import AgentEntry, Manifest


def _chunk(folder: Path, number: int, data: bytes) -> dict:
    """A chunk file and the index line its agent would have written for it."""
    (folder / chunk_name(number)).write_bytes(data)
    return {"file": chunk_name(number), "rows": 1, "sha256": hashlib.sha256(data).hexdigest(),
            "bytes": len(data)}


def _index(folder: Path, lines: list[object], cut: str = "") -> None:
    text = "".join(json.dumps(line) + "\n" for line in lines)
    (folder / CHUNK_INDEX).write_text(text + cut)


def test_the_index_names_only_chunks_of_its_own_folder(tmp_path):
    good = _chunk(tmp_path, 1, b"one")
    _index(tmp_path, [good, {**good, "file": "../../etc/passwd"},
                      {**good, "file": "cpu.parquet"}, {**good, "sha256": 7}, ["not", "one"]],
           cut='{"file": "messages-000002.parq')  # the line a kill cut short
    assert read_index(tmp_path) == [good]


def test_a_dead_agent_s_chunks_are_those_its_index_lists_in_order(tmp_path):
    first, second = _chunk(tmp_path, 1, b"one"), _chunk(tmp_path, 2, b"two")
    _chunk(tmp_path, 3, b"renamed into place as it died")
    _index(tmp_path, [first, second])
    kept = kept_chunks(tmp_path)
    assert kept.listed == [(tmp_path / chunk_name(1), first), (tmp_path / chunk_name(2), second)]
    assert kept.unlisted == [tmp_path / chunk_name(3)]


def test_a_dead_agent_s_chunk_failing_its_index_line_is_damage_an_unlisted_one_unread(tmp_path):
    folder = tmp_path / "agents" / "consumer-1"
    folder.mkdir(parents=True)
    intact, changed = _chunk(folder, 1, b"one"), _chunk(folder, 2, b"two")
    (folder / chunk_name(2)).write_bytes(b"tw0")  # same size, other content
    (folder / chunk_name(3)).write_bytes(b"not parquet: never read, so never checked")
    _index(folder, [intact, changed])
    manifest = Manifest(agents=[AgentEntry(id="consumer-1", role="consumer", status="failed")])
    (problem,) = integrity.problems(tmp_path, manifest)
    assert problem.startswith(f"{folder / chunk_name(2)}: content does not match its sha256 "
                              "in its chunk index")
