"""`sixnines collect DIR`: the files agents left on other hosts, fetched after their
controller died before it could fetch them.

A controller fetches each remote agent's files when its run ends. Killed first, it leaves
them where the agents wrote them: in the run directory on an SSH host, in an exited
container. The manifest it kept writing says where (`files_at` of each agent) and how to
reach each host (`hosts[name].contact`: address, port, user, key and known_hosts files, or
the Docker API URL; never a secret). `collect` fetches what is not here yet, brings the run
to what its files show (orchestrator.results.recovery: each file checked against the sha256 its
agent announced; a file that fails is marked unverified, so the analysis never reads it as
good), checks chunks no done.json lists against their index, and then removes the remote
copies that arrived whole. Run after `report` recovered the run without them, it fills in
the agents it fetches the same way. A host it cannot reach is named with the reason, its files left
in place for a later try. `sixnines report DIR` then analyses the run.

A results directory is untrusted input (formats.run_files), and `collect` acts on other
machines, so it reaches only what a run of sixnines leaves: a folder `files_at` names is
fetched only when it is the one sixnines would have made for this run's agent
(`<workdir>/…/<run id>/agents/<agent id>` on that host, `_made_for`) and holds that agent's
done.json or chunk index (the broker monitor, which keeps no index, its cpu.parquet of CPU
samples: all a monitor killed mid-run leaves); only its regular files are copied, each into
the agent's folder of this run directory; and only the files whose copy here was verified
(against a checksum, or byte for byte) are removed there, never the folder with anything
else in it.

A separate command, not part of `report`: the analysis must run anywhere the results are
(a copy, a Spark cluster's shared disk) without contacting the hosts, and reaching them
needs their keys and network, which a user grants by running `collect` where they are.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

import pyarrow as pa
import pyarrow.parquet as pq

from sixnines.formats.atomic import WriteFailure
from sixnines.formats.chunks import recorded_chunks
from sixnines.formats.integrity import INDEX, Damaged, against_record, read_manifest
from sixnines.formats.layout import AGENTS_DIR, CHUNK_INDEX, CPU_FILE, DONE_FILE
from sixnines.formats.manifest import AgentEntry, Artifact, Manifest, MonitorEntry
from sixnines.formats.records import CPU
from sixnines.formats.run_files import RefusedPath, agent_file, agent_folder
from sixnines.orchestrator.launchers.base import Launcher, LaunchError
from sixnines.orchestrator.results.recovery import recover, recovered_entry
from sixnines.orchestrator.run.fleet import launcher_from_contact
from sixnines.orchestrator.run.manifest import write_manifest

#: The most a done.json, chunks.jsonl or monitor's cpu.parquet read on a host to tell whose
#: folder it is may hold (a day of one-second chunks is ~12 MB of index; a monitor's
#: samples, ~11 bytes each, reach it after 17 hours at the shortest `cpu_sample`, 10 ms).
MARKER_BYTES = 64 << 20


@dataclass
class Collected:
    """What collecting one run found, in words for the user."""

    run_dir: Path
    fetched: list[str] = field(default_factory=list)  # agent ids
    problems: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # files left on a host on purpose
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
    by_host: dict[str, list[RemoteFiles]] = defaultdict(list)
    for remote in _remote_files(manifest):
        by_host[remote.host].append(remote)
    launchers: dict[str, Launcher] = {}
    fetched: dict[str, list[str]] = {}
    try:
        for host, entries in by_host.items():
            fetched |= _fetch_from(host, manifest, entries, run_dir, collected, launchers)
        collected.recovered = recover(run_dir)
        if not collected.recovered:
            _refill(run_dir, fetched)
        manifest = read_manifest(run_dir)
        collected.problems += [problem for remote in _remote_files(manifest)
                               for problem in _unchecked_chunks(run_dir, remote.entry)]
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
    return sorted({remote.host for remote in _remote_files(manifest)})


@dataclass(frozen=True)
class RemoteFiles:
    """An agent (or the broker monitor) whose files are still on another host: the host
    and the folder there (`files_at`), both present in its manifest entry."""

    entry: AgentEntry
    host: str
    where: dict[str, str]


def _remote_files(manifest: Manifest) -> Iterator[RemoteFiles]:
    """The agents (and the broker monitor) whose files are still on another host."""
    monitor = [manifest.monitor] if manifest.monitor and manifest.monitor.id else []
    for entry in [*manifest.agents, *monitor]:
        if entry.files_at is not None and entry.host is not None:
            yield RemoteFiles(entry, entry.host, entry.files_at)


def _fetch_from(host: str, manifest: Manifest, remotes: list[RemoteFiles], run_dir: Path,
                collected: Collected, launchers: dict[str, Launcher]) -> dict[str, list[str]]:
    """Fetch each agent's files from `host` (its launcher kept in `launchers`): the names
    fetched, by agent id."""
    record = manifest.hosts.get(host)
    contact = record.get("contact") if isinstance(record, dict) else None
    if not isinstance(contact, dict) or not contact:
        collected.problems.append(
            f"host {host}: the manifest does not say how to reach it (written by an older "
            f"sixnines); the files of {', '.join(r.entry.id for r in remotes)} stay there")
        return {}
    run_id = manifest.run_id
    assert run_id is not None, "read_manifest refuses a manifest without its run_id"
    done = {}
    try:
        launcher = launchers[host] = launcher_from_contact(host, contact)
        launcher.connect()
        for remote in remotes:
            try:
                done[remote.entry.id] = _fetch(launcher, run_dir, run_id, remote)
            except (LaunchError, RefusedPath, WriteFailure) as exc:
                collected.problems.append(f"{remote.entry.id}: {exc}")
                continue
            collected.fetched.append(remote.entry.id)
    except LaunchError as exc:
        collected.problems.append(f"host {host} unreachable, the files of "
                                  f"{', '.join(r.entry.id for r in remotes)} stay there: {exc}")
    return done


def _fetch(launcher: Launcher, run_dir: Path, run_id: str, remote: RemoteFiles) -> list[str]:
    """The files of the agent's folder on its host, copied into its folder here, if that
    folder is the one sixnines made for it; their names."""
    entry, where = remote.entry, remote.where
    folder = agent_folder(run_dir, entry.id)
    if not _made_for(launcher, where["dir"], run_id, entry.id, folder) or \
            not _holds_its_account(launcher, where, entry):
        raise LaunchError(f"{where['dir']} on host {remote.host} is not the folder sixnines "
                          f"makes for agent {entry.id} of run {run_id} (with its {DONE_FILE} "
                          f"or {_marker(entry)}): left alone, nothing fetched")
    folder.mkdir(parents=True, exist_ok=True)
    return launcher.fetch_left_files(where, folder)


def _made_for(launcher: Launcher, remote: str, run_id: str, agent_id: str, folder: Path
              ) -> bool:
    """Whether `remote` is the folder the launcher gives an agent of a run (runner:
    `<scenario>/<stamp>/<run id>/agents/<agent id>` under its work directory)."""
    parts = PurePosixPath(remote).parts
    if len(parts) < 6 or parts[-3:] != (run_id, AGENTS_DIR, agent_id):
        return False
    return launcher.workdir("/".join(parts[-5:]), folder) == remote


def _marker(entry: AgentEntry) -> str:
    """What an agent killed before it wrote its done.json leaves of its own: its chunk
    index, or, the broker monitor (which records no chunks), its CPU samples."""
    return CPU_FILE if isinstance(entry, MonitorEntry) else CHUNK_INDEX


def _holds_its_account(launcher: Launcher, where: dict[str, str], entry: AgentEntry) -> bool:
    """Whether the folder holds the agent's done.json (naming it), or, an agent killed
    before it wrote one, its `_marker`: a chunk index, or a parquet file of CPU samples
    (formats.records.CPU)."""
    done = launcher.read_left_file(where, DONE_FILE, MARKER_BYTES)
    if done is None:
        marker = launcher.read_left_file(where, _marker(entry), MARKER_BYTES)
        return marker is not None and (_marker(entry) != CPU_FILE or _cpu_samples(marker))
    try:
        account = json.loads(done)
    except ValueError:
        return False
    return isinstance(account, dict) and account.get("agent_id") == entry.id


def _cpu_samples(data: bytes) -> bool:
    """Whether `data` is a parquet file of CPU samples, as a monitor writes."""
    try:
        return pq.read_schema(pa.BufferReader(data)).equals(CPU)
    except (pa.ArrowException, OSError):
        return False


def _refill(run_dir: Path, fetched: dict[str, list[str]]) -> None:
    """A run already brought to its end (its controller recorded it, or `report` recovered
    it) before these files arrived: their entries are filled from the agents' done.json,
    each file checked against its checksum, as a recovery does."""
    if not fetched:
        return
    manifest = read_manifest(run_dir)
    problems = []
    for index, entry in enumerate(manifest.agents):
        if entry.id in fetched:
            manifest.agents[index], found = recovered_entry(run_dir, entry)
            problems += found
    monitor = manifest.monitor
    if monitor is not None and monitor.id in fetched:
        manifest.monitor, _ = recovered_entry(run_dir, monitor)
    manifest.problems = [*manifest.problems, *(p for p in problems
                                               if p not in manifest.problems)]
    if manifest.status == "failed" and any(entry.artifacts for entry in manifest.agents):
        manifest.status = "partial"
    write_manifest(run_dir, manifest)


def _unchecked_chunks(run_dir: Path, entry: AgentEntry) -> list[str]:
    """Chunks of an agent that left no done.json (killed), checked against its chunk
    index: one problem per chunk that does not match."""
    if entry.artifacts:
        return []
    try:
        listed = recorded_chunks(run_dir, entry).listed
    except RefusedPath as refused:
        return [f"{entry.id}: {refused}"]
    return [f"{entry.id}: {path.name} is missing or does not match its checksum in "
            f"{CHUNK_INDEX}" for path, line in listed if not _matches(path, line)]


def _matches(path: Path, line: dict) -> bool:
    return against_record(path, Artifact(sha256=line["sha256"], bytes=line["bytes"]),
                          INDEX) is None


def _verified_here(run_dir: Path, entry: AgentEntry, launcher: Launcher,
                   where: dict[str, str], fetched: list[str]) -> list[str]:
    """The fetched files whose copy here is verified: against the checksum its done.json
    gave, or, of an agent killed before writing one, its index line; the files no checksum
    covers (done.json, a killed agent's `_marker`) byte for byte."""
    verified = {name for name, artifact in entry.artifacts.items() if artifact.verified}
    if not entry.artifacts:
        verified |= {path.name for path, line in recorded_chunks(run_dir, entry).listed
                     if _matches(path, line)}
    for name in {DONE_FILE, CHUNK_INDEX, _marker(entry)} - verified:
        local = agent_file(run_dir, entry.id, name)
        if local.is_file() and launcher.read_left_file(where, name, MARKER_BYTES) == \
                local.read_bytes():
            verified.add(name)
    return sorted(verified & set(fetched))


def _discard_safe_copies(run_dir: Path, manifest: Manifest, fetched: dict[str, list[str]],
                         launchers: dict[str, Launcher], collected: Collected) -> None:
    """Remove the remote copies of the files that arrived whole and verified, and record
    that those are here only; the others stay for another try."""
    for remote in _remote_files(manifest):
        entry, where = remote.entry, remote.where
        if entry.id not in fetched or _unchecked_chunks(run_dir, entry) or \
                not all(a.verified for a in entry.artifacts.values()):
            continue
        launcher = launchers[remote.host]
        try:
            verified = _verified_here(run_dir, entry, launcher, where, fetched[entry.id])
            left = launcher.discard_left_files(where, verified)
        except (LaunchError, RefusedPath) as exc:
            collected.problems.append(f"{entry.id}: its files are here, but removing the "
                                      f"remote copy failed: {exc}")
            continue
        if left:
            collected.notes.append(f"{entry.id}: left in {where['dir']} on host "
                                   f"{remote.host}, not verified here: {', '.join(left)}")
        entry.files_at = None
    write_manifest(run_dir, manifest)
