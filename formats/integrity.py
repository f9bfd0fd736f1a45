"""A run directory's files checked before anything is read from them: a file damaged or
edited since the run is named, one line each, and never feeds a figure.

Plain Python (streamed sha256, pyarrow), run before Spark opens a file:

- every file the manifest lists for an agent or the broker monitor
  (`artifacts[name] = {sha256, bytes, verified}`) must still have its size and checksum;
  one the controller already found not matching when it collected it (`verified: false`)
  is not trusted either, and one listed but gone was deleted since the run. A file the
  controller never got (`verified: false` and absent) is missing data, not damage.
- a parquet file the analysis reads (messages.parquet or a chunk of messages, cpu.parquet)
  but no checksum covers (an older manifest, a
  controller that died before collecting) is decoded whole, so a damaged one is named
  here rather than deep inside a Spark job. hlogs are parsed whole before Spark starts
  anyway (formats.hlog.read_hlog names a damaged line).
- an agent that died announced nothing: each chunk its own index lists (formats.chunks.
  recorded_chunks) must have the size and sha256 of its index line, as a listed file must
  match the manifest. Chunk files the index does not list are never read, so never
  checked (the analysis names them).
- the manifest itself must parse within its size bound and fit its model
  (formats.manifest), and be of a schema this sixnines reads.
- a listed file that `sixnines prune` removed (formats.pruned: the run's mark names it) is
  said to be pruned, not deleted since the run: the run is still not analysed again.
- every name the manifest or an index gives is a plain name, and the file it names stays
  inside the run directory and is a regular file (formats.run_files): one leading out, a
  FIFO or a device is named for what it is. So no file outside the run is read, and no
  checksum of one is ever printed.

A run with any such problem is `corrupt` (formats.status) and refused whole: a
damaged consumer file left out would turn its deliveries into lost or unknown ones, a
damaged producer file every receipt into an unexpected one; figures of another
experiment than the one run, however plausible.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
from pydantic import ValidationError

from sixnines.formats.chunks import recorded_chunks
from sixnines.formats.document import first_error
from sixnines.formats.errors import SixninesError
from sixnines.formats.json_input import RefusedJson, read_json
from sixnines.formats.layout import CPU_FILE, MANIFEST_FILE
from sixnines.formats.manifest import (
    AgentEntry,
    Artifact,
    Manifest,
    missing_fields,
    newer_schema,
)
from sixnines.formats.pruned import Pruned, read_pruned
from sixnines.formats.run_files import (
    RefusedPath,
    agent_file,
    agent_folder,
    agent_folders,
    json_bound,
    open_regular,
    run_file,
)


def sha256_of(path: Path) -> str:
    """The file's sha256, read in 1 MiB pieces (artifacts reach gigabytes); RefusedPath
    for anything but a regular file."""
    digest = hashlib.sha256()
    with open_regular(path) as data:
        while chunk := data.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest()


class Damaged(SixninesError):
    """Files of a run that fail their checks; `problems`: one line per file, naming it."""

    def __init__(self, problems: list[str]) -> None:
        super().__init__("; ".join(problems))
        self.problems = problems


def first_line(text: str) -> str:
    """The first line of an error message (Java and C++ errors run on for pages)."""
    return text.strip().splitlines()[0] if text.strip() else ""


def unreadable(path: Path, error: Exception) -> str:
    """One line on a JSON file that cannot be used, naming it."""
    if isinstance(error, OSError):
        return f"{path}: cannot be read ({error.strerror or error})"
    if isinstance(error, RefusedJson):  # too big or too deep is not what sixnines writes
        garbled = str(error).startswith("not valid JSON")
        return f"{path}: {first_line(str(error))}{': cut short or edited' if garbled else ''}"
    return f"{path}: not valid JSON ({first_line(str(error))}): cut short or edited"


def read_manifest(run_dir: Path) -> Manifest:
    """The run's manifest, or Damaged naming it and what is wrong (not a file, too big, not
    JSON, written by a newer sixnines, or not a manifest: formats.manifest says what one
    holds)."""
    path = Path(run_dir) / MANIFEST_FILE
    try:
        body = read_json(run_file(run_dir, MANIFEST_FILE), json_bound(agent_folders(run_dir)))
    except RefusedPath as error:
        raise Damaged([str(error)]) from error
    except (OSError, ValueError) as error:
        raise Damaged([unreadable(path, error)]) from error
    if isinstance(body, dict) and (newer := newer_schema(body.get("schema_version"))):
        raise Damaged([f"{path}: {newer}; not read"])
    try:
        if isinstance(body, dict) and (missing := missing_fields(body)):
            raise Damaged([f"{path}: not a sixnines manifest (no {', '.join(missing)}): "
                           "edited or damaged"])
        return Manifest.model_validate(body)
    except ValidationError as error:
        why = "not a JSON object" if not isinstance(body, dict) else first_error(error)
        raise Damaged([f"{path}: not a sixnines manifest ({why}): edited or damaged"]) from error


def _entries(manifest: Manifest) -> Iterator[AgentEntry]:
    """The manifest entries whose files the analysis reads: every agent, and the broker
    monitor when it ran (its cpu.parquet)."""
    yield from manifest.agents
    if manifest.monitor is not None and manifest.monitor.id is not None:
        yield manifest.monitor


def problems(run_dir: Path, manifest: Manifest) -> list[str]:
    """One line per file of the run that fails its check (the module docstring lists
    them); empty when every file may be read."""
    found: list[str | None] = []
    pruned = read_pruned(run_dir)
    for entry in _entries(manifest):
        try:
            agent_folder(run_dir, entry.id)
        except RefusedPath as refused:  # one line for the agent, none per file in its folder
            found.append(str(refused))
            continue
        found += [_refused_or(_artifact_problem, run_dir, entry.id, name, recorded, pruned)
                  for name, recorded in entry.artifacts.items()]
        found.append(_refused_or(_records_problem, run_dir, entry, pruned))
    return list(dict.fromkeys(problem for problem in found if problem))  # each file once


def _refused_or(check: Callable[..., str | None], *args: Any) -> str | None:
    """What `check(*args)` finds, or why a path it checks is refused (formats.run_files)."""
    try:
        return check(*args)
    except RefusedPath as refused:
        return str(refused)


def _artifact_problem(run_dir: Path, agent_id: str, name: str, recorded: Artifact,
                      pruned: Pruned | None) -> str | None:
    path = agent_file(run_dir, agent_id, name)
    return _pruned(path, agent_id, pruned) or against_record(path, recorded)


def _pruned(path: Path, agent_id: str, pruned: Pruned | None) -> str | None:
    """Why a listed file is gone when the run's prune mark names it (None otherwise)."""
    if pruned is None or path.exists() or (agent_id, path.name) not in pruned.names():
        return None
    return f"{path}: {pruned.note()}"


def _records_problem(run_dir: Path, entry: AgentEntry, pruned: Pruned | None) -> str | None:
    """The first problem of the records an entry's agent left (formats.chunks.
    recorded_chunks): a dead agent's chunks against its index, and every parquet file
    read that no checksum covers decoded whole."""
    records = recorded_chunks(run_dir, entry)
    found = []
    if entry.died:
        found += [_pruned(path, entry.id, pruned) or against_record(
            path, Artifact(sha256=line["sha256"], bytes=line["bytes"]), INDEX)
            for path, line in records.listed]
    for path in [agent_file(run_dir, entry.id, CPU_FILE), *records.paths]:
        if path.name not in entry.artifacts and path.is_file():
            found.append(_undecodable(path))
    return next((problem for problem in found if problem), None)


MANIFEST_RECORD = "the manifest"
INDEX = "its chunk index"


def against_record(path: Path, recorded: Artifact, source: str = MANIFEST_RECORD
                    ) -> str | None:
    """Whether a listed file is still the one its agent wrote (None: it is); `source` is
    what lists it: the manifest, or a dead agent's chunk index."""
    if recorded.sha256 is None:
        return f"{path}: its manifest entry has no sha256 (the manifest was edited)"
    if recorded.verified is False:
        return None if not path.exists() else (
            f"{path}: did not match its checksum when the controller collected it "
            "(verified: false in the manifest)")
    if not path.exists():
        return f"{path}: missing, though {source} lists it: deleted since the run"
    size, expected = path.stat().st_size, recorded.bytes
    if expected is not None and size != expected:
        return (f"{path}: {size:,} bytes where {source} records {expected:,}: cut short "
                "or changed since the run")
    try:
        digest = sha256_of(path)
    except OSError as error:
        return f"{path}: cannot be read ({error.strerror or error})"
    if digest != recorded.sha256:
        return (f"{path}: content does not match its sha256 in {source} ({digest[:12]}… "
                f"where {recorded.sha256[:12]}… was recorded): changed since the run")
    return None


def _undecodable(path: Path) -> str | None:
    """Whether a parquet file without a checksum decodes whole (None: it does), read one
    batch at a time so memory stays bounded."""
    try:
        for _ in pq.ParquetFile(path).iter_batches():
            pass
    except (OSError, ValueError, pa.ArrowException) as error:
        return f"{path}: unreadable parquet ({first_line(str(error))}); no checksum recorded"
    return None
