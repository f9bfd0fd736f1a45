"""Runs whose controller died: brought to what their files show, so they can be analysed.

A controller killed outright (SIGKILL, its machine gone) never records a run's end: the
manifest it wrote as the run went still says `running`. Its agents stopped on their own
when their control channel closed (or were stopped by the guard), writing their files and
done.json, their own account of the run (agents.artifacts). `recover` fills each agent's
entry from that account, checks every file against the checksum the agent computed, marks
the run partial (failed when no agent left data) and says so in its problems, so
`sixnines report` analyses what there is instead of refusing the directory.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import TypeVar

from sixnines.agents.artifacts import read_done
from sixnines.formats.chunks import kept_chunks
from sixnines.formats.integrity import Damaged, read_manifest
from sixnines.formats.manifest import AgentEntry
from sixnines.formats.records import DONE_FILE
from sixnines.orchestrator.manifest import RUNNING, verified_artifacts, write_manifest

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
    of an agent that wrote no done.json (formats.chunks.kept_chunks)."""
    return len(kept_chunks(run_dir / "agents" / entry.id).listed)


def recovered_entry(run_dir: Path, entry: Entry) -> tuple[Entry, list[str]]:
    """`entry` filled from the agent's done.json, and the problems to record."""
    out_dir = run_dir / "agents" / entry.id
    done = read_done(out_dir)
    if done is None or done.agent_id != entry.id:
        why = "left no results (stopped before it could write them)"
        if chunks := closed_chunks(run_dir, entry):
            why = (f"wrote no account of its run ({DONE_FILE}); the {chunks:,} chunks its "
                   f"index lists are analysed")
        if entry.files_at is not None:
            why = (f"its files were not fetched from {entry.files_at['dir']} there; "
                   "`sixnines collect` fetches them")
        return entry.model_copy(update={"status": "missing"}), [
            f"{entry.id} on host {entry.host}: {why}"]
    artifacts, unverified = verified_artifacts(entry.id, out_dir, done.artifacts)
    recovered = type(entry).model_validate({
        **entry.as_json(), "status": done.status, "t0_ns": done.t0_ns, "sent": done.sent,
        "received": done.received, **done.extra,
        "artifacts": {name: a.as_json() for name, a in artifacts.items()}})
    return recovered, [*done.problems, *unverified]
