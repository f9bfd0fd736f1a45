"""Runs whose controller died: brought to what their files show, so they can be analysed.

A controller killed outright (SIGKILL, its machine gone) never records a run's end: the
manifest it wrote as the run went still says `running`. Its agents stopped on their own
when their control channel closed (or were stopped by the guard), writing their files and
done.json, their own account of the run (agents.artifacts). `recover` fills each agent's
entry from that account, checks every file against the checksum the agent computed, marks
the run partial (failed when no agent left data) and says so in its problems, so
`sixnines report` analyses what there is instead of refusing the directory.

A done.json is read as any file of a results directory is (formats.done): within a size
bound, only when it is a regular file inside the run, and what it claims is checked
against the manifest's model (plain file names, counts that are numbers) before any file
it names is looked at; one that fails is named, and its agent counts as having left none.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import TypeVar

from pydantic import ValidationError

from sixnines.formats.chunks import index_of
from sixnines.formats.document import first_error
from sixnines.formats.done import done_file, read_done
from sixnines.formats.integrity import Damaged, read_manifest
from sixnines.formats.layout import CPU_FILE, DONE_FILE
from sixnines.formats.manifest import AgentEntry, MonitorEntry
from sixnines.formats.run_files import RefusedPath, agent_file
from sixnines.orchestrator.run.manifest import RUNNING, verified_artifacts, write_manifest

#: What a done.json's `extra` may fill of its agent's entry; any other field of the entry is
#: the controller's to record (an agent's id, host or `files_at` never come from its file).
DONE_FILLS = {"out_of_range", "duplicate_replies", "unexpected_replies", "cut_short",
              "drain_ended_ns"}
CONTROLLER_DIED = ("the controller stopped before the run ended (killed, or its machine "
                   "went down); the run was recovered from the files its agents wrote")


def recover(run_dir: Path) -> bool:
    """Recover `run_dir` if its controller died (see the module docstring); True if it
    did. The manifest is rewritten whole, so this is done once."""
    try:
        manifest = read_manifest(run_dir)
    except Damaged:  # unreadable: the analysis refuses it, naming the file
        return False
    if manifest.status != RUNNING:
        return False
    problems = [*manifest.problems, CONTROLLER_DIED]
    agents = []
    for entry in manifest.agents:
        recovered, found = recovered_entry(run_dir, entry)
        agents.append(recovered)
        problems += found
    if manifest.monitor is not None and manifest.monitor.id is not None:
        monitor, notes = recovered_entry(run_dir, manifest.monitor)
        manifest.monitor = monitor.model_copy(update={"notes": [*monitor.notes, *notes]})
    recorded = any(entry.artifacts or closed_chunks(run_dir, entry) for entry in agents)
    manifest.agents, manifest.problems = agents, problems
    manifest.status = "partial" if recorded else "failed"
    manifest.recovered_at = time.time()
    write_manifest(run_dir, manifest)
    return True


Entry = TypeVar("Entry", bound=AgentEntry)


def closed_chunks(run_dir: Path, entry: AgentEntry) -> int:
    """How many chunks the index of an agent's folder here lists: what the analysis reads
    of an agent that wrote no done.json (formats.chunks.recorded_chunks); none when its
    folder or index is not what it should be (the analysis names it)."""
    try:
        return len(index_of(run_dir, entry.id))
    except RefusedPath:
        return 0


def _kept_samples(run_dir: Path, entry: AgentEntry) -> bool:
    """Whether the broker monitor's folder here holds the CPU samples it rewrites as it
    goes (agents.monitor): what the analysis reads of a monitor that wrote no done.json."""
    try:
        return isinstance(entry, MonitorEntry) and agent_file(run_dir, str(entry.id),
                                                              CPU_FILE).is_file()
    except RefusedPath:
        return False


def recovered_entry(run_dir: Path, entry: Entry) -> tuple[Entry, list[str]]:
    """`entry` filled from the agent's done.json, and the problems to record."""
    try:
        path = done_file(run_dir, entry.id)
        done = read_done(path)
    except RefusedPath as refused:
        return _missing(entry, str(refused))
    except (OSError, ValueError) as error:
        return _missing(entry, f"{path}: not read ({error})")
    if done is None or done.agent_id != entry.id:
        if chunks := closed_chunks(run_dir, entry):
            return _missing(entry, f"wrote no account of its run ({DONE_FILE}); the "
                                   f"{chunks:,} chunks its index lists are analysed")
        if _kept_samples(run_dir, entry):
            return _missing(entry, f"wrote no account of its run ({DONE_FILE}); the samples "
                                   f"its {CPU_FILE} kept up to then are analysed")
        if entry.files_at is not None:
            return _missing(entry, f"its files were not fetched from {entry.files_at['dir']} "
                                   "there; `sixnines collect` fetches them")
        return _missing(entry, "left no results (stopped before it could write them)")
    extra = {key: value for key, value in done.extra.items()
             if key in DONE_FILLS or key not in AgentEntry.model_fields}
    try:
        claimed = type(entry).model_validate({
            **entry.as_json(), "status": done.status, "t0_ns": done.t0_ns, "sent": done.sent,
            "received": done.received, **extra, "artifacts": done.artifacts})
    except ValidationError as error:
        return _missing(entry, f"{path}: not an agent's account ({first_error(error)}): "
                               "edited or damaged")
    artifacts, unverified = verified_artifacts(run_dir, entry.id, claimed.artifacts)
    problems = [problem for problem in done.problems if isinstance(problem, str)]
    return claimed.model_copy(update={"artifacts": artifacts}), [*problems, *unverified]


def _missing(entry: Entry, why: str) -> tuple[Entry, list[str]]:
    return entry.model_copy(update={"status": "missing"}), [
        f"{entry.id} on host {entry.host}: {why}"]
