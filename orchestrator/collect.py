"""`sixnines collect DIR`: the files agents left on other hosts, fetched after their
controller died before it could fetch them.

A controller fetches each remote agent's files when its run ends. Killed first, it leaves
them where the agents wrote them: in the run directory on an SSH host, in an exited
container. The manifest it kept writing says where (`files_at` of each agent) and how to
reach each host (`hosts[name].contact`: address, port, user, key and known_hosts files, or
the Docker API URL; never a secret). `collect` fetches what is not here yet, brings the run
to what its files show (orchestrator.recovery: each file checked against the sha256 its
agent announced; a file that fails is marked unverified, so the analysis never reads it as
good), checks chunks no done.json lists against their index, and then removes the remote
copies that arrived whole. Run after `report` recovered the run without them, it fills in
the agents it fetches the same way. A host it cannot reach is named with the reason, its files left
in place for a later try. `sixnines report DIR` then analyses the run.

A separate command, not part of `report`: the analysis must run anywhere the results are
(a copy, a Spark cluster's shared disk) without contacting the hosts, and reaching them
needs their keys and network, which a user grants by running `collect` where they are.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from sixnines.formats.chunks import read_index
from sixnines.formats.integrity import Damaged, read_manifest, sha256_of
from sixnines.formats.manifest import AgentEntry, Manifest
from sixnines.orchestrator.fleet import launcher_from_contact
from sixnines.orchestrator.launchers.base import Launcher, LaunchError
from sixnines.orchestrator.manifest import write_manifest
from sixnines.orchestrator.recovery import recover, recovered_entry


@dataclass
class Collected:
    """What collecting one run found, in words for the user."""

    run_dir: Path
    fetched: list[str] = field(default_factory=list)  # agent ids
    problems: list[str] = field(default_factory=list)
    recovered: bool = False

    @property
    def complete(self) -> bool:
        return not self.problems


def collect(run_dir: Path) -> Collected:
    """Fetch, verify and record the remote files of the run in `run_dir` (see the module
    docstring)."""
    collected = Collected(run_dir)
    try:
        manifest = read_manifest(run_dir)
    except Damaged as exc:
        collected.problems.append(str(exc))
        return collected
    by_host: dict[str, list[AgentEntry]] = defaultdict(list)
    for entry in _remote_entries(manifest):
        by_host[entry.host].append(entry)
    launchers: dict[str, Launcher] = {}
    fetched: list[AgentEntry] = []
    try:
        for host, entries in by_host.items():
            fetched += _fetch_from(host, manifest, entries, run_dir, collected, launchers)
        collected.recovered = recover(run_dir)
        if not collected.recovered:
            _refill(run_dir, fetched)
        manifest = read_manifest(run_dir)
        collected.problems += [problem for entry in _remote_entries(manifest)
                               for problem in _unchecked_chunks(run_dir, entry)]
        _discard_safe_copies(run_dir, manifest, fetched, launchers, collected)
    finally:
        for launcher in launchers.values():
            launcher.close()
    return collected


def unfetched_hosts(run_dir: Path) -> list[str]:
    """The hosts still holding files of the run that are not here (`collect` fetches
    them); empty for an unreadable manifest, which the analysis reports."""
    try:
        manifest = read_manifest(run_dir)
    except Damaged:
        return []
    return sorted({entry.host for entry in _remote_entries(manifest)})


def _remote_entries(manifest: Manifest) -> Iterator[AgentEntry]:
    """The agents (and the broker monitor) whose files are still on another host."""
    monitor = [manifest.monitor] if manifest.monitor and manifest.monitor.id else []
    for entry in [*manifest.agents, *monitor]:
        if entry.files_at is not None and entry.host is not None:
            yield entry


def _out_dir(run_dir: Path, entry: AgentEntry) -> Path:
    return run_dir / "agents" / entry.id


def _whole(run_dir: Path, entry: AgentEntry) -> bool:
    """Whether every file of the agent here passed its check: those its done.json lists,
    or, without one (it was killed), the chunks its index lists."""
    return all(a.verified for a in entry.artifacts.values()) and \
        not _unchecked_chunks(run_dir, entry)


def _fetch_from(host: str, manifest: Manifest, entries: list[AgentEntry], run_dir: Path,
                collected: Collected, launchers: dict[str, Launcher]) -> list[AgentEntry]:
    """Fetch each entry's directory from `host` (its launcher kept in `launchers`); the
    entries fetched."""
    contact = manifest.hosts.get(host, {}).get("contact")
    if not contact:
        collected.problems.append(
            f"host {host}: the manifest does not say how to reach it (written by an older "
            f"sixnines); the files of {', '.join(e.id for e in entries)} stay there")
        return []
    done = []
    try:
        launcher = launchers[host] = launcher_from_contact(host, contact)
        launcher.connect()
        for entry in entries:
            try:
                launcher.fetch_files(entry.files_at, _out_dir(run_dir, entry))
            except LaunchError as exc:
                collected.problems.append(f"{entry.id}: {exc}")
                continue
            done.append(entry)
            collected.fetched.append(entry.id)
    except LaunchError as exc:
        collected.problems.append(f"host {host} unreachable, the files of "
                                  f"{', '.join(e.id for e in entries)} stay there: {exc}")
    return done


def _refill(run_dir: Path, fetched: list[AgentEntry]) -> None:
    """A run already brought to its end (its controller recorded it, or `report` recovered
    it) before these files arrived: their entries are filled from the agents' done.json,
    each file checked against its checksum, as a recovery does."""
    if not fetched:
        return
    manifest = read_manifest(run_dir)
    ids = {entry.id for entry in fetched}
    problems = []
    for index, entry in enumerate(manifest.agents):
        if entry.id in ids:
            manifest.agents[index], found = recovered_entry(run_dir, entry)
            problems += found
    monitor = manifest.monitor
    if monitor is not None and monitor.id in ids:
        manifest.monitor, _ = recovered_entry(run_dir, monitor)
    manifest.problems = [*manifest.problems, *(p for p in problems
                                               if p not in manifest.problems)]
    if manifest.status == "failed" and any(entry.artifacts for entry in manifest.agents):
        manifest.status = "partial"
    write_manifest(run_dir, manifest)


def _unchecked_chunks(run_dir: Path, entry: AgentEntry) -> list[str]:
    """Chunks of an agent that left no done.json (killed), checked against its chunk
    index: one problem per chunk that does not match."""
    folder = _out_dir(run_dir, entry)
    if entry.artifacts or not folder.is_dir():
        return []
    problems = []
    for chunk in read_index(folder):
        path = folder / chunk["file"]
        if not path.is_file() or sha256_of(path) != chunk["sha256"]:
            problems.append(f"{entry.id}: {chunk['file']} is missing or does not match its "
                            "checksum in chunks.jsonl")
    return problems


def _discard_safe_copies(run_dir: Path, manifest: Manifest, fetched: list[AgentEntry],
                         launchers: dict[str, Launcher], collected: Collected) -> None:
    """Remove the remote copies of the files that arrived whole (`_whole`), and record
    that those are here only; the others stay for another try."""
    now = {entry.id: entry for entry in _remote_entries(manifest)}
    for entry in fetched:
        if not _whole(run_dir, now[entry.id]):
            continue
        try:
            launchers[entry.host].discard_files(entry.files_at)
        except LaunchError as exc:
            collected.problems.append(f"{entry.id}: its files are here, but removing the "
                                      f"remote copy failed: {exc}")
            continue
        now[entry.id].files_at = None
    write_manifest(run_dir, manifest)
