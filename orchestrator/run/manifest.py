"""The run manifest (formats.manifest): what was run, where, with what, and how it went.
Written atomically so a reader never sees half a file, and rewritten as the run
progresses."""

from __future__ import annotations

import time
from collections.abc import Mapping
from pathlib import Path

from sixnines.agents.facts import host_facts, versions
from sixnines.formats.atomic import write_atomically
from sixnines.formats.integrity import sha256_of
from sixnines.formats.layout import MANIFEST_FILE
from sixnines.formats.manifest import (
    Artifact,
    BrokerRecord,
    Manifest,
    Sixnines,
    Workload,
)
from sixnines.formats.protocol import PROTOCOL_VERSION
from sixnines.formats.run_files import RefusedPath, agent_file

#: A run's status until its controller records the end (ok / partial / failed); still
#: there afterwards, it means the controller was killed (orchestrator.results.recovery).
RUNNING = "running"


def new_manifest(point, scenario: str, overrides: tuple[str, ...] = ()) -> Manifest:
    """The run's first manifest; `overrides` the fields the command line set over the
    scenario file (PATH=VALUE)."""
    system = point.system
    return Manifest(
        sixnines=Sixnines(version=versions().get("sixnines"), protocol=PROTOCOL_VERSION),
        scenario=scenario, run_id=point.run_id, system=system.name, driver=system.driver,
        driver_options=system.options.model_dump(mode="json"),
        broker=BrokerRecord(kind=system.broker.kind), params=point.params,
        swept=point.swept, workload=Workload.model_validate(point.params),
        **({"repeat": point.repeat} if point.repeat is not None else {}),
        **({"overrides": list(overrides)} if overrides else {}),
        controller={"host": host_facts(), "versions": versions()}, status=RUNNING,
        problems=[], agents=[], created_at=time.time())


def write_manifest(run_dir: Path, manifest: Manifest) -> Path:
    """Replace the manifest whole (formats.atomic), or raise WriteFailure naming it."""
    return write_atomically(run_dir / MANIFEST_FILE, manifest.text(allow_nan=True))


def verified_artifacts(run_dir: Path, agent_id: str, announced: Mapping[str, Artifact | dict]
                       ) -> tuple[dict[str, Artifact], list[str]]:
    """An agent's files as it announced them ({name: {sha256, bytes}}), each checked
    against its file in the run directory ("verified": reached through formats.run_files,
    so a name that is no plain name, or a file that is none, never verifies), and a
    problem for each that fails."""
    files, problems = {}, []
    for name, facts in announced.items():
        recorded = Artifact.model_validate(facts)
        try:
            path = agent_file(run_dir, agent_id, name)
            verified = path.is_file() and sha256_of(path) == recorded.sha256
            why = "is missing or does not match its checksum"
        except RefusedPath as refused:
            verified, why = False, f"is not used: {refused}"
        if not verified:
            problems.append(f"{agent_id}: {name} {why}")
        files[name] = recorded.model_copy(update={"verified": verified})
    return files, problems
