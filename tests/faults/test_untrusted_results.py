"""Results directories from elsewhere, edited as a hostile or unlucky user would: names
that lead out of the run, links and FIFOs in place of files, manifests that are no
manifests, and `sixnines collect` pointed at folders it must leave alone.

`report` must name each such thing in one line (the run `corrupt`) or analyse only what
the run's own index and manifest list; neither command may read, write or remove anything
outside the run (canaries outside are watched with inotify), nor hang on a FIFO, nor print
the checksum of a file that is not the run's. `collect` runs against a real SSH host of the
test bed (tests/integration/testbed.py), whose files it must only touch in the folder
sixnines made for the run's agent.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from sixnines.formats.manifest import SCHEMA_VERSION
from sixnines.formats.run_files import BASE_BYTES
from sixnines.orchestrator.launchers.base import LaunchError
from sixnines.orchestrator.launchers.ssh import SshLauncher
from sixnines.orchestrator.scenario.hosts import SshHost
from tests.faults.support import copy_run, edit_manifest, line_with, record, sixnines
from tests.faults.untrusted import (
    REMOTE_AGENT,
    Canaries,
    contact,
    fifo,
    left_on_host,
    manifest_of,
    nobody_reads,
    remote_folder,
    sha256_hex,
    snapshot,
)
from tests.integration.testbed import Testbed, testbed

#: Manifests broken on purpose stay only while the module runs (its fixtures remove them).
pytestmark = [pytest.mark.integration, pytest.mark.unchecked_results]

CONSUMER = f"agents/{REMOTE_AGENT}"
CHUNK = f"{CONSUMER}/messages-000001.parquet"
SECRET = "secret.txt"  # a file outside every run, its content and checksum never shown


@pytest.fixture(scope="module")
def recorded(tmp_path_factory) -> Path:
    return record(tmp_path_factory.mktemp("recorded") / "01-tcp")


def consumer(manifest: dict) -> dict:
    return next(agent for agent in manifest["agents"] if agent["id"] == REMOTE_AGENT)


def replace(run_dir: Path, relative: str, make: Callable[[Path], object]) -> None:
    path = run_dir / relative
    path.unlink()
    make(path)


def link_to(target: Path | str) -> Callable[[Path], object]:
    return lambda path: os.symlink(target, path)


# --- `sixnines report`: one results directory holding every case -------------------------

def id_leading_out(run_dir: Path, outside: Path) -> None:
    """The consumer's folder moved out of the run, its id pointing there with `../`."""
    shutil.move(run_dir / CONSUMER, outside / "moved-consumer")
    edit_manifest(run_dir, lambda m: consumer(m).update(id="../../../outside/moved-consumer"))


def artifact_by_absolute_path(run_dir: Path, outside: Path) -> None:
    def add(manifest: dict) -> None:
        consumer(manifest)["artifacts"]["/etc/hostname"] = {
            "sha256": "0" * 64, "bytes": Path("/etc/hostname").stat().st_size, "verified": True}
    edit_manifest(run_dir, add)


def artifact_linking_out(run_dir: Path, outside: Path) -> None:
    """The consumer's interval log a link to a file outside (its name is a plain one)."""
    replace(run_dir, f"{CONSUMER}/latency.hlog", link_to(outside / SECRET))


def extra_chunk(run_dir: Path, outside: Path) -> None:
    shutil.copy(run_dir / CHUNK, run_dir / CONSUMER / "messages-000009.parquet")


def folder_linking_out(run_dir: Path, outside: Path) -> None:
    shutil.move(run_dir / CONSUMER, outside / "linked-consumer")
    os.symlink(outside / "linked-consumer", run_dir / CONSUMER)


def agents_linking_out(run_dir: Path, outside: Path) -> None:
    shutil.move(run_dir / "agents", outside / "linked-agents")
    os.symlink(outside / "linked-agents", run_dir / "agents")


def chunk_fifo(run_dir: Path, outside: Path) -> None:
    replace(run_dir, CHUNK, fifo)


def chunk_to_dev_zero(run_dir: Path, outside: Path) -> None:
    replace(run_dir, CHUNK, link_to("/dev/zero"))


def dead_agent_index_linking_out(run_dir: Path, outside: Path) -> None:
    """A consumer that died: its index lists its chunk, which is a link to a copy
    outside."""
    shutil.move(run_dir / CHUNK, outside / "chunk.parquet")
    os.symlink(outside / "chunk.parquet", run_dir / CHUNK)
    edit_manifest(run_dir, lambda m: consumer(m).update(status="failed", artifacts={}))


def newer_schema(run_dir: Path, outside: Path) -> None:
    edit_manifest(run_dir, lambda m: m.update(schema_version=999))


def empty_manifest(run_dir: Path, outside: Path) -> None:
    (run_dir / "manifest.json").write_text("{}")


def agent_twice(run_dir: Path, outside: Path) -> None:
    edit_manifest(run_dir, lambda m: m["agents"].append(dict(consumer(m))))


def rate_in_words(run_dir: Path, outside: Path) -> None:
    edit_manifest(run_dir, lambda m: m["params"].update(rate="lots"))


def manifest_too_big(run_dir: Path, outside: Path) -> None:
    edit_manifest(run_dir, lambda m: m["problems"].append("x" * (BASE_BYTES + (1 << 20))))


def manifest_nested(run_dir: Path, outside: Path) -> None:
    (run_dir / "manifest.json").write_text(
        '{"run_id": "x", "status": "ok", "agents": ' + "[" * 50_000 + "]" * 50_000 + "}")


def edit_done(run_dir: Path, change: Callable[[dict], None]) -> None:
    """A run whose controller died (`report` recovers it from the agents' done.json
    files), the consumer's done.json changed."""
    edit_manifest(run_dir, lambda m: m.update(status="running"))
    path = run_dir / CONSUMER / "done.json"
    done = json.loads(path.read_text())
    change(done)
    path.write_text(json.dumps(done))


def done_naming_out(run_dir: Path, outside: Path) -> None:
    """The consumer's done.json names a file outside by a path (with its real checksum)."""
    edit_done(run_dir, lambda done: done["artifacts"].update({
        f"../../../../outside/{SECRET}": {"sha256": sha256_hex(outside / SECRET),
                                          "bytes": (outside / SECRET).stat().st_size}}))


def done_claiming_its_entry(run_dir: Path, outside: Path) -> None:
    """Its `extra` claims what the controller records: the agent's id, host, and where its
    files are."""
    edit_done(run_dir, lambda done: done["extra"].update(
        id="../elsewhere", host="h9", files_at={"dir": str(outside)}))


def report_linking_out(run_dir: Path, outside: Path) -> None:
    """The run's report folder a link to a folder outside holding a summary.json (which an
    analysis clears and writes in its own), and the series.json and .hgrm the results'
    page and `compare` read of a run."""
    (outside / "report").mkdir()
    (outside / "report" / "summary.json").write_text('{"keep": "me"}\n')
    (outside / "report" / "series.json").write_text("{}\n")
    (outside / "report" / "latency.hgrm").write_text("       1.000 0.000000000000          1\n")
    os.symlink(outside / "report", run_dir / "report")


REPORT_CASES: dict[str, Callable[[Path, Path], None]] = {
    fn.__name__.replace("_", "-"): fn for fn in (
        id_leading_out, artifact_by_absolute_path, artifact_linking_out, extra_chunk,
        folder_linking_out, agents_linking_out, chunk_fifo, chunk_to_dev_zero,
        dead_agent_index_linking_out, newer_schema, empty_manifest, agent_twice,
        rate_in_words, manifest_too_big, manifest_nested, done_naming_out,
        done_claiming_its_entry, report_linking_out)}


@dataclass(frozen=True)
class Reported:
    results: Path
    outside: Path
    done: subprocess.CompletedProcess
    touched: list[str]
    vanished: set[Path]

    def summary(self, case: str) -> dict:
        return json.loads((self.results / case / "report" / "summary.json").read_text())

    def everything_printed(self) -> str:
        """stderr, the analysis log, and every summary written."""
        texts = [self.done.stderr, (self.results / "analysis.log").read_text()]
        texts += [path.read_text() for path in self.results.rglob("summary.json")]
        return "\n".join(texts)


@pytest.fixture(scope="module")
def reported(recorded, tmp_path_factory) -> Iterator[Reported]:
    """Every case a copy of the recorded run in one results directory, `sixnines report`
    run once over them, with canaries outside watched the while."""
    base = tmp_path_factory.mktemp("untrusted")
    results, outside = base / "results", base / "outside"
    outside.mkdir()
    (outside / SECRET).write_text("not the run's\n")
    for case, damage in REPORT_CASES.items():
        damage(copy_run(recorded, results / case), outside)
    fifo(outside / "canary.fifo")
    (outside / "log.txt").write_text("not the analysis log\n")
    os.symlink(outside / "log.txt", results / "analysis.log")
    (outside / "results-report").mkdir()  # the results' own report folder leading out
    (outside / "results-report" / "index.html").write_text("not the report\n")
    os.symlink(outside / "results-report", results / "report")
    before = snapshot(outside)
    canaries = Canaries(outside)
    try:
        done = sixnines("report", results)
        touched = canaries.touched()
    finally:
        canaries.close()
    assert nobody_reads(outside / "canary.fifo")
    yield Reported(results, outside, done, touched, before - snapshot(outside))
    shutil.rmtree(base)


def test_report_reads_writes_and_removes_nothing_outside_the_runs(reported):
    assert reported.done.returncode == 1, reported.done.stderr  # some runs are not ok
    assert "Traceback" not in reported.everything_printed()
    assert reported.touched == []
    assert reported.vanished == set()
    assert (reported.outside / "report" / "summary.json").read_text() == '{"keep": "me"}\n'
    assert (reported.outside / "log.txt").read_text() == "not the analysis log\n"
    assert not (reported.results / "analysis.log").is_symlink()
    assert (reported.outside / "results-report" / "index.html").read_text() == \
        "not the report\n"
    line_with(reported.done.stderr, f"{reported.results / 'report'}: a symbolic link to",
              "results-report", "outside the run directory")


def test_compare_reads_nothing_outside_the_results(reported):
    """A run of the results whose report folder leads out holds a latency.hgrm there:
    `compare` takes the run's figures from the summary alone."""
    canaries = Canaries(reported.outside)
    try:
        done = sixnines("compare", reported.results, reported.results)
        touched = canaries.touched()
    finally:
        canaries.close()
    assert done.returncode == 3, done.stderr  # the run leading out is corrupt: B is broken
    assert touched == []


def corrupt_with(reported: Reported, case: str, *parts: str) -> str:
    """The run's one problem line holding every part; the run is corrupt, with no figure."""
    summary = reported.summary(case)
    assert summary["status"] == "corrupt", summary
    assert "latency_us" not in summary and "sent" not in summary
    line = line_with("\n".join(summary["problems"]), *parts)
    assert line_with(reported.done.stderr, *parts)  # on the console too, on one line
    return line


@pytest.mark.parametrize(("case", "parts"), [
    ("id-leading-out", ("`agents[0].id`", "'../../../outside/moved-consumer'",
                        "not a plain name")),
    ("artifact-by-absolute-path", ("`agents[0].artifacts['/etc/hostname']`",
                                   "not a plain name")),
    ("artifact-linking-out", ("latency.hlog: a symbolic link to", SECRET, "(a regular file), "
                              "outside the run directory")),
    ("folder-linking-out", (f"{CONSUMER}: a symbolic link to", "linked-consumer",
                            "(a directory), outside the run directory")),
    ("agents-linking-out", ("/agents/", "leads outside the run directory")),
    ("chunk-fifo", ("messages-000001.parquet: a FIFO (named pipe), not a regular file",)),
    ("chunk-to-dev-zero", ("messages-000001.parquet: a symbolic link to '/dev/zero' "
                           "(a character device), outside the run directory",)),
    ("dead-agent-index-linking-out", ("messages-000001.parquet: a symbolic link to",
                                      "chunk.parquet", "outside the run directory")),
    ("newer-schema", (f"written by a newer sixnines (schema 999; this one reads up to "
                      f"{SCHEMA_VERSION})",)),
    ("empty-manifest", ("not a sixnines manifest (no run_id, status, agents)",)),
    ("agent-twice", (f"agent '{REMOTE_AGENT}' is listed more than once in `agents`",)),
    ("rate-in-words", ("`params.rate`: 'lots' is not a rate",)),
    ("manifest-too-big", ("manifest.json: larger than", "bytes, more than sixnines writes")),
    ("manifest-nested", ("manifest.json: nested more than 64 levels deep",)),
])
def test_what_leads_out_or_is_no_file_or_no_manifest_is_corrupt_in_one_line(reported, case,
                                                                            parts):
    corrupt_with(reported, case, *parts)


def test_no_checksum_of_a_file_outside_the_run_is_printed(reported):
    printed = reported.everything_printed()
    for path in (Path("/etc/hostname"), reported.outside / SECRET):
        assert sha256_hex(path)[:12] not in printed


def test_a_chunk_the_index_does_not_list_is_named_and_not_read(reported):
    summary = reported.summary("extra-chunk")
    assert summary["status"] == "ok", summary["problems"]
    assert (summary["sent"], summary["received"], summary["duplicated"]) == (1000, 1000, 0)
    line_with("\n".join(summary["problems"]), "messages-000009.parquet", "not analysed")


def test_a_done_json_naming_files_outside_is_not_taken(reported):
    summary = reported.summary("done-naming-out")
    line_with("\n".join(summary["problems"]), f"{REMOTE_AGENT}/done.json: not an agent's "
              "account (`artifacts[", "not a plain name")
    assert summary["status"] == "partial"
    assert consumer(manifest_of(reported.results / "done-naming-out"))["status"] == "missing"


def test_a_done_json_does_not_say_who_its_agent_is_or_where_its_files_are(reported):
    summary = reported.summary("done-claiming-its-entry")
    assert summary["status"] == "partial" and summary["received"] == 1000, summary["problems"]
    entry = consumer(manifest_of(reported.results / "done-claiming-its-entry"))
    assert entry["host"] == "local" and entry.get("files_at") is None


def test_a_report_folder_leading_out_is_neither_cleared_nor_written(reported):
    line = line_with(reported.done.stderr, "report-linking-out", "analysis failed",
                     "report: a symbolic link to", "outside the run directory")
    assert "Traceback" not in line


# --- `sixnines collect` against a real SSH host --------------------------------------------

@pytest.fixture(scope="module")
def bed() -> Iterator[Testbed]:
    with testbed(1) as made:
        yield made


@pytest.fixture
def key() -> Iterator[str]:
    """This test's scenario folder on the hosts (their work directory is shared)."""
    name = f"untrusted-{uuid.uuid4().hex[:8]}"
    yield name
    shutil.rmtree(Path("/var/tmp/sixnines/runs") / name, ignore_errors=True)


def precious(folder: Path) -> Path:
    """A folder of someone's files (none of them sixnines'), with a subfolder."""
    (folder / "sub").mkdir(parents=True)
    (folder / "notes.txt").write_text("keep me\n")
    (folder / "sub" / "more.txt").write_text("me too\n")
    return folder


def collected(run_dir: Path) -> subprocess.CompletedProcess:
    done = sixnines("collect", run_dir)
    assert "Traceback" not in done.stderr, done.stderr
    return done


def test_an_id_leading_out_copies_and_removes_nothing(recorded, bed, key, tmp_path):
    run_dir = copy_run(recorded, tmp_path / "results" / "01-tcp")
    left_on_host(run_dir, bed, key)
    victim = precious(tmp_path / "victim")
    edit_manifest(run_dir, lambda m: consumer(m).update(
        id="../../../../escaped", files_at={"dir": str(victim)}))
    before = snapshot(tmp_path)
    done = collected(run_dir)
    assert done.returncode == 1
    line_with(done.stderr, "`agents[0].id`", "not a plain name")
    assert snapshot(tmp_path) == before  # nothing copied anywhere, nothing removed


@pytest.mark.parametrize("where", ["someone's folder", "under the workdir, not the agent's",
                                   "the agent's, without its account"])
def test_a_folder_sixnines_did_not_make_for_the_agent_is_left_alone(recorded, bed, key,
                                                                     tmp_path, where):
    run_dir = copy_run(recorded, tmp_path / "results" / "01-tcp")
    remote = left_on_host(run_dir, bed, key)
    victim = {"someone's folder": tmp_path / "victim",
              "under the workdir, not the agent's": remote.parent.parent / "elsewhere",
              "the agent's, without its account": remote}[where]
    if victim == remote:
        shutil.rmtree(remote)
    precious(victim)
    edit_manifest(run_dir, lambda m: consumer(m).update(files_at={"dir": str(victim)}))
    before = snapshot(victim)
    done = collected(run_dir)
    assert done.returncode == 1
    line_with(done.stderr, f"{REMOTE_AGENT}: {victim} on host h1 is not the folder sixnines "
                           f"makes for agent {REMOTE_AGENT}", "left alone, nothing fetched")
    assert snapshot(victim) == before
    assert not (run_dir / CONSUMER / "notes.txt").exists()


@pytest.mark.parametrize(("agent", "left"), [
    ("monitor", "its samples"), ("monitor", "a chunk by that name"),
    (REMOTE_AGENT, "the monitor's samples")])
def test_only_a_monitor_s_folder_is_known_by_its_cpu_samples(recorded, bed, key, tmp_path,
                                                             agent, left):
    """A monitor killed mid-run leaves only the cpu.parquet it keeps rewriting (no done.json,
    no chunk index): `collect` takes a folder so left for the monitor's when that file holds
    CPU samples, and fetches it; not when it holds anything else, nor for another agent,
    whose account stays its done.json or chunk index."""
    run_dir = copy_run(recorded, tmp_path / "results" / "01-tcp")
    samples = (run_dir / "agents" / "monitor" / "cpu.parquet").read_bytes()
    chunk = (run_dir / CHUNK).read_bytes()
    remote = left_on_host(run_dir, bed, key, agent)
    for path in remote.iterdir():
        path.unlink()
    (remote / "cpu.parquet").write_bytes(chunk if left == "a chunk by that name" else samples)
    before = snapshot(remote)
    done = collected(run_dir)
    if left == "its samples":
        assert done.returncode == 0, done.stderr
        assert not remote.exists()  # removed once the same byte for byte here
        assert (run_dir / "agents" / "monitor" / "cpu.parquet").read_bytes() == samples
        return
    assert done.returncode == 1
    marker = "cpu.parquet" if agent == "monitor" else "chunks.jsonl"
    line_with(done.stderr, f"{agent}: {remote} on host h1 is not the folder sixnines makes "
                           f"for agent {agent}", f"(with its done.json or {marker})",
              "left alone, nothing fetched")
    assert snapshot(remote) == before
    assert not (run_dir / "agents" / agent / "cpu.parquet").exists()


def test_only_the_verified_files_are_removed_from_the_agent_s_folder(recorded, bed, key,
                                                                      tmp_path):
    run_dir = copy_run(recorded, tmp_path / "results" / "01-tcp")
    remote = left_on_host(run_dir, bed, key)
    (remote / "notes.txt").write_text("not the agent's\n")
    (remote / "sub").mkdir()
    os.symlink(tmp_path / "elsewhere", remote / "link.parquet")
    done = collected(run_dir)
    assert done.returncode == 0, done.stderr
    line_with(done.stderr, f"{REMOTE_AGENT}: left in {remote} on host h1, not verified "
                           "here: link.parquet, notes.txt, sub")
    assert sorted(path.name for path in remote.iterdir()) == ["link.parquet", "notes.txt",
                                                              "sub"]
    here = run_dir / CONSUMER
    assert (here / "notes.txt").is_file() and not (here / "link.parquet").exists()
    assert not (here / "sub").exists()
    entry = consumer(manifest_of(run_dir))
    assert entry.get("files_at") is None and all(a["verified"]
                                                  for a in entry["artifacts"].values())


@pytest.mark.parametrize("trap", ["folder", "temp file"])
def test_collect_writes_nothing_through_a_link_in_the_run(recorded, bed, key, tmp_path, trap):
    run_dir = copy_run(recorded, tmp_path / "results" / "01-tcp")
    remote = left_on_host(run_dir, bed, key)
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "done.json").write_text("mine\n")
    if trap == "folder":
        shutil.rmtree(run_dir / CONSUMER)
        os.symlink(outside, run_dir / CONSUMER)
    else:
        os.symlink(outside / "done.json", run_dir / CONSUMER / "done.json.partial")
    canaries = Canaries(outside)
    done = collected(run_dir)
    touched = canaries.touched()
    canaries.close()
    assert touched == []
    assert (outside / "done.json").read_text() == "mine\n"
    if trap == "folder":
        assert done.returncode == 1
        line_with(done.stderr, f"{CONSUMER}: a symbolic link to", "outside the run directory")
        assert (remote / "done.json").is_file()  # nothing fetched, so nothing removed
    else:
        assert done.returncode == 0, done.stderr
        assert not (run_dir / CONSUMER / "done.json.partial").exists()


def test_the_ssh_launcher_removes_nothing_outside_its_workdir(bed, tmp_path):
    victim = precious(tmp_path / "victim")
    details = contact(bed)
    launcher = SshLauncher(SshHost(name="h1", address=details["address"], user="root",
                                   key=details["key"], known_hosts=details["known_hosts"]))
    try:
        launcher.connect()
        for folder in (str(victim), "/var/tmp/sixnines/runs/../../../" + str(victim)[1:]):
            with pytest.raises(LaunchError, match="is not a folder under its work directory"):
                launcher.discard_left_files({"dir": folder}, ["notes.txt"])
    finally:
        launcher.close()
    assert (victim / "notes.txt").is_file()


def test_a_whole_collect_then_report_analyses_what_the_host_held(recorded, bed, key,
                                                                 tmp_path):
    run_dir = copy_run(recorded, tmp_path / "results" / "01-tcp")
    remote = left_on_host(run_dir, bed, key)
    assert remote == remote_folder(run_dir, key)
    done = collected(run_dir)
    assert done.returncode == 0, done.stderr
    assert not remote.exists()
    report = sixnines("report", run_dir)
    summary = json.loads((run_dir / "report" / "summary.json").read_text())
    assert (summary["sent"], summary["received"], summary["lost"]) == (1000, 1000, 0), \
        report.stderr
    assert summary["status"] == "partial"  # its controller died

