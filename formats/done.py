"""An agent's done.json read back: the `done` message it sent (formats.protocol), which it
keeps beside its files (agents.artifacts) for when the message never reached the
controller — the controller reads it then, and a recovery when the controller died
(orchestrator.results.recovery).

It is read as any file of a results directory is (formats.run_files): only when it is a
regular file inside the run, within a size bound that grows with the agent's files, and
checked to be a `done` before anything in it is used.
"""

from __future__ import annotations

from pathlib import Path

from pydantic import TypeAdapter, ValidationError

from sixnines.formats import protocol as p
from sixnines.formats.document import first_error
from sixnines.formats.json_input import read_json
from sixnines.formats.layout import DONE_FILE
from sixnines.formats.run_files import agent_file, json_bound

DONE = TypeAdapter(p.Done)


def done_file(run_dir: Path, agent_id: str) -> Path:
    """The agent's done.json in `run_dir`, checked (formats.run_files.agent_file:
    RefusedPath when it or its folder is not what it should be)."""
    return agent_file(run_dir, agent_id, DONE_FILE)


def read_done(path: Path) -> p.Done | None:
    """The `done` an agent kept at `path` (`done_file`), None when there is none;
    RefusedPath, OSError or ValueError when it cannot be one."""
    if not path.exists():
        return None
    body = read_json(path, json_bound([path.parent]))
    if not isinstance(body, dict) or body.get("type") != p.Done.TYPE:
        raise ValueError("not an agent's `done`")
    try:
        return DONE.validate_python({key: value for key, value in body.items()
                                     if key != "type"})
    except ValidationError as error:
        raise ValueError(first_error(error)) from None


def kept_done(run_dir: Path, agent_id: str) -> p.Done | None:
    """The `done` the agent kept in `run_dir`, None when it kept none that can be read
    (for the controller, which then has the agent's message or its failure to go by)."""
    try:
        return read_done(done_file(run_dir, agent_id))
    except (OSError, ValueError):  # RefusedPath and RefusedJson are ValueErrors
        return None
