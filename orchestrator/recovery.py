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

from sixnines.agents.artifacts import read_done
from sixnines.orchestrator.manifest import (
    RUNNING,
    read_manifest,
    verified_artifacts,
    write_manifest,
)

CONTROLLER_DIED = ("the controller stopped before the run ended (killed, or its machine "
                   "went down); `sixnines report` recovered the run from the files its "
                   "agents wrote")


def recover(run_dir: Path) -> bool:
    """Recover `run_dir` if its controller died (see the module docstring); True if it
    did. The manifest is rewritten whole, so this is done once."""
    try:
        manifest = read_manifest(run_dir)
    except (OSError, ValueError):  # unreadable: the analysis refuses it, naming the file
        return False
    if not isinstance(manifest, dict) or manifest.get("status") != RUNNING:
        return False
    problems = manifest.setdefault("problems", [])
    problems.append(CONTROLLER_DIED)
    for entry in manifest.get("agents", []):
        problems += _recover_agent(run_dir, entry)
    monitor = manifest.get("monitor")
    if monitor and "id" in monitor:
        monitor.setdefault("notes", []).extend(_recover_agent(run_dir, monitor))
    recorded = any(entry.get("artifacts") for entry in manifest.get("agents", []))
    manifest["status"] = "partial" if recorded else "failed"
    manifest["recovered_at"] = time.time()
    write_manifest(run_dir, manifest)
    return True


def _recover_agent(run_dir: Path, entry: dict) -> list[str]:
    """Fill `entry` from the agent's done.json; the problems to record."""
    out_dir = run_dir / "agents" / entry["id"]
    done = read_done(out_dir)
    if done is None or done.agent_id != entry["id"]:
        entry["status"] = "missing"
        return [f"{entry['id']} on host {entry.get('host')}: left no results (stopped before "
                "it could write them)"]
    entry.update(status=done.status, t0_ns=done.t0_ns, sent=done.sent,
                 received=done.received, **done.extra)
    entry["artifacts"], unverified = verified_artifacts(entry["id"], out_dir, done.artifacts)
    return [*done.problems, *unverified]
