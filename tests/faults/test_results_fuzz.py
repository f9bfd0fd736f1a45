"""Fuzzing a real results directory: one recorded run, copied many times, each copy changed
by a few seeded mutations — the manifest's ids, artifact names, sizes and checksums,
`files_at`, schema version, status, parameter types and nesting; chunk index lines; the
types of files and folders (FIFOs, links in and out of the run, folders in place of files,
files deleted, files added). Half the copies are runs whose controller died with the
consumer's files on an SSH host of the test bed, for `collect` to fetch.

For every copy, the checks before any analysis (in this process: the library), `sixnines
collect` (in this process for half, as a user runs it for all), and `sixnines report` (as a
user runs it, once over all copies) must each either analyse it as recorded, refuse it as
`corrupt` in one line per problem, or refuse with exit 2: never a traceback, never a read
of anything outside the runs (canaries outside, watched with inotify, among them a FIFO
that would hang a reader), never a removal of anything but what `collect` verified.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import random
import shutil
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from sixnines.formats.atomic import TEMP_SUFFIX
from sixnines.formats.manifest import SCHEMA_VERSION
from sixnines.orchestrator import cli
from sixnines.spark_jobs.run_report import check_run
from tests.faults.support import copy_run, edit_manifest, record, sixnines
from tests.faults.untrusted import (
    REMOTE_AGENT,
    REMOTE_WORKDIR,
    Canaries,
    contact,
    fifo,
    left_on_host,
    nobody_reads,
    remote_folder,
    sha256_hex,
    snapshot,
)
from tests.integration.testbed import Testbed, testbed

#: Manifests broken on purpose stay only while the module runs (its fixture removes them).
pytestmark = [pytest.mark.integration, pytest.mark.unchecked_results]

#: Another seed explores other copies: SIXNINES_FUZZ_SEED=N pytest tests/faults/test_results_fuzz.py
SEED = int(os.environ.get("SIXNINES_FUZZ_SEED", "20261127"))
COPIES = 48
HOSTILE_NAMES = ["../x", "../../../outside/copy-consumer", "/etc/hostname", "a/b", ".", "..",
                 "", "x" * 300, "ok\x00", "ok\n", "\x1b]0;title\x07", "\\..\\x", 7, None,
                 ["list"]]
RESULT_STATUSES = {"ok", "partial", "failed", "corrupt"}
COUNTS = ("sent", "received", "delivered", "lost", "unknown", "duplicated")


@dataclass(frozen=True)
class Place:
    """Where mutations may lead: folders outside the runs (watched), and the bed."""

    outside: Path
    victim: Path
    bed: Testbed
    key: str


def agent_files(run_dir: Path, place: Place) -> list[Path]:
    """The agents' regular files of a copy, here and on the host."""
    remote = remote_folder(run_dir, place.key)
    found = [*(run_dir / "agents").rglob("*"), *(remote.iterdir() if remote.is_dir() else [])]
    return sorted(path for path in found if path.is_file() and not path.is_symlink())


def entries(manifest: dict) -> list[dict]:
    return [*manifest["agents"], *([manifest["monitor"]] if manifest.get("monitor") else [])]


def deep(depth: int) -> str:
    return "[" * depth + "]" * depth


# --- mutations of the manifest as JSON (applied first, while it still parses) ---------------

def agent_id(m: dict, rng: random.Random, place: Place) -> str:
    entry = rng.choice(entries(m))
    entry["id"] = rng.choice([*HOSTILE_NAMES, *(e["id"] for e in entries(m))])
    return f"id {entry['id']!r}"


def artifact_name(m: dict, rng: random.Random, place: Place) -> str:
    artifacts = rng.choice(entries(m)).setdefault("artifacts", {})
    secret = place.outside / "secret.txt"
    name = rng.choice([*(n for n in HOSTILE_NAMES if isinstance(n, str)), str(secret)])
    artifacts[name] = {"sha256": sha256_hex(secret), "bytes": secret.stat().st_size,
                       "verified": True}
    return f"artifact {name!r}"


def artifact_record(m: dict, rng: random.Random, place: Place) -> str:
    artifacts = [a for e in entries(m) for a in (e.get("artifacts") or {}).values()]
    if not artifacts:
        return "no artifact to change"
    record_ = rng.choice(artifacts)
    field = rng.choice(["sha256", "bytes", "verified"])
    record_[field] = rng.choice(["0" * 64, "zz", -1, "x", None, 10**30, True, {"a": 1}])
    return f"artifact {field} {record_[field]!r}"


def files_at(m: dict, rng: random.Random, place: Place) -> str:
    entry = rng.choice(entries(m))
    where = rng.choice([
        {"dir": str(place.victim)}, {"dir": "relative/x"}, {"dir": "/var/tmp/../etc"},
        {"dir": 5}, {"x": "y"}, {"dir": str(REMOTE_WORKDIR)}, {"dir": str(REMOTE_WORKDIR / "runs")},
        {"dir": str(remote_folder(Path(str(m.get("run_id"))), place.key).parent
                    / "producer-0")},
        {"dir": str(place.victim), "container": "0123456789ab"}])
    entry.update(files_at=where, host=place.bed.hosts[0].name)
    m.setdefault("hosts", {})[place.bed.hosts[0].name] = {"contact": contact(place.bed)}
    return f"files_at {where!r}"


def host_contact(m: dict, rng: random.Random, place: Place) -> str:
    hosts = m.setdefault("hosts", {})
    name = place.bed.hosts[0].name
    reach = dict(contact(place.bed))
    change = rng.choice(["no port", "port", "kind", "string", "workdir"])
    if change == "no port":
        reach.pop("port")
    elif change == "port":
        reach["port"] = "x"
    elif change == "kind":
        reach["kind"] = "evil"
    elif change == "workdir":
        reach["workdir"] = str(place.victim.parent)
    hosts[name] = {"contact": "ssh://nowhere" if change == "string" else reach}
    return f"contact {change}"


def schema_version(m: dict, rng: random.Random, place: Place) -> str:
    m["schema_version"] = rng.choice([999, 0, -1, "5", None, 5.5, SCHEMA_VERSION + 1, [5]])
    return f"schema_version {m['schema_version']!r}"


def status(m: dict, rng: random.Random, place: Place) -> str:
    value = rng.choice([None, "weird", 5, "running", "failed", "partial", "", "gone"])
    if value == "gone":
        m.pop("status")
    else:
        m["status"] = value
    return f"status {value!r}"


def agent_status(m: dict, rng: random.Random, place: Place) -> str:
    """An agent that died, its files now vouched for by its own index only."""
    entry = rng.choice(m["agents"])
    entry.update(status=rng.choice(["failed", "missing"]), artifacts={})
    return f"{entry['id']} died"


def params(m: dict, rng: random.Random, place: Place) -> str:
    key, value = rng.choice([("rate", "lots"), ("rate", -1), ("rate", float("nan")),
                             ("rate", "max"), ("producers", "x"), ("messages", -5),
                             ("duration_ns", "1s"), ("schedule", 5)])
    if rng.random() < 0.1:
        m["params"] = rng.choice([[], "x", 5])
        return f"params {m['params']!r}"
    m["params"][key] = value
    return f"params.{key} {value!r}"


def duplicate(m: dict, rng: random.Random, place: Place) -> str:
    entry = rng.choice(m["agents"])
    m["agents"].append(json.loads(json.dumps(entry)))
    return f"{entry['id']} twice"


def type_swap(m: dict, rng: random.Random, place: Place) -> str:
    key = rng.choice(sorted(m))
    m[key] = rng.choice([[], "x", 5, {"a": [1]}, None, True])
    return f"{key} = {m[key]!r}"


def drop_field(m: dict, rng: random.Random, place: Place) -> str:
    key = rng.choice(sorted(m))
    m.pop(key)
    return f"no {key}"


JSON_MUTATIONS = [agent_id, artifact_name, artifact_record, files_at, host_contact,
                  schema_version, status, agent_status, params, duplicate, type_swap,
                  drop_field]


# --- mutations of files and folders ------------------------------------------------------------

def replace_file(run_dir: Path, rng: random.Random, place: Place) -> str:
    path = rng.choice([*agent_files(run_dir, place), run_dir / "manifest.json"])
    how = rng.choice(["fifo", "secret", "dev-zero", "outside fifo", "dangling", "folder",
                      "deleted", "sibling"])
    path.unlink()
    if how == "fifo":
        fifo(path)
    elif how == "folder":
        path.mkdir()
    elif how != "deleted":
        target = {"secret": place.outside / "secret.txt", "dev-zero": Path("/dev/zero"),
                  "outside fifo": place.outside / "canary.fifo",
                  "dangling": place.outside / "nothing-here",
                  "sibling": path.parent / "latency.hlog"}[how]
        os.symlink(target, path)
    return f"{path.name} {how}"


def replace_folder(run_dir: Path, rng: random.Random, place: Place) -> str:
    folders = [p for p in (run_dir / "agents").iterdir() if p.is_dir() and not p.is_symlink()]
    folder = rng.choice([*folders, run_dir / "agents"])
    how = rng.choice(["link out", "deleted", "file"])
    shutil.rmtree(folder)
    if how == "link out":
        os.symlink(place.outside / "copy-agent", folder)
    elif how == "file":
        folder.write_text("not a folder\n")
    return f"{folder.name} {how}"


def index_line(run_dir: Path, rng: random.Random, place: Place) -> str:
    indexes = [p for p in agent_files(run_dir, place) if p.name == "chunks.jsonl"]
    if not indexes:
        return "no index to change"
    index = rng.choice(indexes)
    line = json.loads(index.read_text().splitlines()[0])
    key, value = rng.choice([
        ("file", "../../../outside/copy-agent/messages-000001.parquet"),
        ("file", "/etc/hostname"), ("file", "messages-000002.parquet"),
        ("file", "latency.hlog"), ("rows", "x"), ("sha256", "0" * 64), ("bytes", 1),
        ("bytes", -1)])
    extra = rng.choice([json.dumps({**line, key: value}), "garbage", deep(10_000),
                        json.dumps(line)[:20], json.dumps(line)])
    index.write_text(index.read_text() + extra + "\n")
    return f"index + {extra[:40]!r}"


def extra_file(run_dir: Path, rng: random.Random, place: Place) -> str:
    folder = run_dir / "agents" / rng.choice(["consumer-0", "producer-0"])
    name = rng.choice(["messages-000009.parquet", "messages-000001.parquet.partial",
                       "notes.txt"])
    if not folder.is_dir() or folder.is_symlink() or os.path.lexists(folder / name):
        return "no folder for an extra file"
    source = place.outside / "copy-agent" / "messages-000001.parquet"
    if name == "messages-000009.parquet":
        shutil.copy(source, folder / name)
    else:
        os.symlink(source if rng.random() < 0.5 else place.outside / "canary.fifo",
                   folder / name)
    return f"extra {name}"


def report_link(run_dir: Path, rng: random.Random, place: Place) -> str:
    (run_dir / "report").unlink(missing_ok=True)
    os.symlink(place.outside / "report", run_dir / "report")
    return "report folder leads out"


def nested_manifest(run_dir: Path, rng: random.Random, place: Place) -> str:
    path = run_dir / "manifest.json"
    if path.is_symlink() or not path.is_file():
        return "manifest no file to nest"
    text = path.read_text()
    depth = rng.choice([65, 1000, 100_000])
    if '"params": {' in text:
        path.write_text(text.replace('"params": {', f'"params": {{"deep": {deep(depth)}, ', 1))
    else:
        path.write_text(deep(depth))
    return f"nested {depth}"


FILE_MUTATIONS = [replace_file, replace_folder, index_line, extra_file, report_link,
                  nested_manifest]


# --- the copies, and what became of them -----------------------------------------------------

@dataclass
class Copy:
    run_dir: Path
    remote: bool
    mutations: list[str]
    before: set[Path]


@dataclass
class Fuzzed:
    results: Path
    place: Place
    copies: list[Copy]
    checked: dict[Path, list[str] | Exception]
    collected_here: dict[Path, tuple[int | Exception, str]]
    collect_all: object
    report: object
    touched: list[str]
    vanished: set[Path]


def mutate(run_dir: Path, rng: random.Random, place: Place) -> list[str]:
    """One to three mutations, those of the manifest's JSON first (the others may leave no
    JSON to edit)."""
    json_count = rng.choice([0, 1, 1, 2])
    chosen = [*rng.sample(JSON_MUTATIONS, json_count),
              *rng.sample(FILE_MUTATIONS, rng.choice([1, 1, 2]) if json_count < 2 else 0)]
    done = []
    for mutation in chosen:
        if mutation in JSON_MUTATIONS:  # skipped where an earlier one left nothing to change
            with contextlib.suppress(KeyError, TypeError, AttributeError, IndexError):
                edit_manifest(run_dir, lambda m: done.append(mutation(m, rng, place)))  # noqa: B023
        else:
            done.append(mutation(run_dir, rng, place))
    return done


def outside_of_runs(base: Path, recorded: Path) -> Path:
    """Folders outside every run: a secret, a FIFO, a copy of an agent's folder, a report
    folder with a summary — what links and names in the copies lead to."""
    outside = base / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("not the run's\n")
    fifo(outside / "canary.fifo")
    shutil.copytree(recorded / "agents" / REMOTE_AGENT, outside / "copy-agent")
    shutil.copytree(recorded / "agents" / REMOTE_AGENT, outside / "copy-consumer")
    (outside / "report").mkdir()
    (outside / "report" / "summary.json").write_text('{"keep": "me"}\n')
    victim = base / "victim"
    (victim / "sub").mkdir(parents=True)
    (victim / "notes.txt").write_text("keep me\n")
    return outside


def in_process(argv: list[str]) -> tuple[int | Exception, str]:
    """The CLI in this process: its exit code (or what escaped it) and what it said."""
    err = io.StringIO()
    try:
        with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
            return cli.main(argv), err.getvalue()
    except Exception as error:  # what escapes is the finding
        return error, err.getvalue()


@pytest.fixture(scope="module")
def fuzzed(tmp_path_factory) -> Iterator[Fuzzed]:
    base = tmp_path_factory.mktemp("fuzz")
    recorded = record(base / "recorded" / "01-tcp")
    key = f"fuzz-{uuid.uuid4().hex[:8]}"
    with testbed(1) as bed:
        place = Place(outside_of_runs(base, recorded), base / "victim", bed, key)
        rng = random.Random(SEED)
        results, copies = base / "results", []
        for number in range(COPIES):
            run_dir = copy_run(recorded, results / f"{number:02d}-tcp")
            remote = number % 2 == 1
            if remote:
                left_on_host(run_dir, bed, key)
            mutations = mutate(run_dir, rng, place)
            copies.append(Copy(run_dir, remote, mutations, snapshot(run_dir)))
        watched_before = snapshot(place.outside, place.victim)
        canaries = Canaries(place.outside, place.victim)
        try:
            checked = {}
            for copy in copies:
                try:
                    checked[copy.run_dir] = check_run(copy.run_dir).damaged
                except Exception as error:  # what escapes is the finding
                    checked[copy.run_dir] = error
            collected_here = {copy.run_dir: in_process(["collect", str(copy.run_dir)])
                              for copy in copies[: COPIES // 2]}
            collect_all = sixnines("collect", results)
            report = sixnines("report", results)
            touched = canaries.touched()
        finally:
            canaries.close()
        assert nobody_reads(place.outside / "canary.fifo")
        yield Fuzzed(results, place, copies, checked, collected_here, collect_all, report,
                     touched, watched_before - snapshot(place.outside, place.victim))
    shutil.rmtree(base, ignore_errors=True)
    shutil.rmtree(REMOTE_WORKDIR / "runs" / key, ignore_errors=True)


def described(copy: Copy) -> str:
    return f"{copy.run_dir.name} ({'remote' if copy.remote else 'local'}): {copy.mutations}"


def test_nothing_outside_the_runs_is_read_written_or_removed(fuzzed):
    assert fuzzed.touched == []
    assert fuzzed.vanished == set()
    assert (fuzzed.place.outside / "report" / "summary.json").read_text() == '{"keep": "me"}\n'


def test_the_checks_name_each_problem_in_one_line(fuzzed):
    for copy in fuzzed.copies:
        found = fuzzed.checked[copy.run_dir]
        assert not isinstance(found, Exception), (described(copy), found)
        assert all("\n" not in line and line for line in found), described(copy)


def test_collect_says_what_it_did_without_a_traceback(fuzzed):
    for run_dir, (code, err) in fuzzed.collected_here.items():
        copy = next(c for c in fuzzed.copies if c.run_dir == run_dir)
        assert code in (0, 1, 2), (described(copy), code, err)
    done = fuzzed.collect_all
    assert done.returncode in (0, 1), done.stderr
    assert "Traceback" not in done.stderr, done.stderr


def test_report_analyses_or_refuses_each_copy_in_one_line(fuzzed):
    done = fuzzed.report
    assert done.returncode in (0, 1), done.stderr
    assert "Traceback" not in done.stderr + (fuzzed.results / "analysis.log").read_text()
    summaries = json.loads((fuzzed.results / "summary.json").read_text())["runs"]
    runs = [copy for copy in fuzzed.copies  # a folder without a manifest is no run
            if os.path.lexists(copy.run_dir / "manifest.json")]
    for copy, summary in zip(runs, summaries, strict=True):  # each, in order
        assert summary["status"] in RESULT_STATUSES, described(copy)
        assert all("\n" not in line for line in summary["problems"]), described(copy)
        if summary["status"] == "corrupt":
            assert summary["problems"], described(copy)
        if summary["status"] == "ok":  # then it is the run as recorded
            assert [summary[name] for name in COUNTS] == [1000, 1000, 1000, 0, 0, 0], \
                (described(copy), summary["problems"])


def test_nothing_in_a_run_is_removed(fuzzed):
    """(But a link put where sixnines writes a temporary file: formats.atomic.)"""
    for copy in fuzzed.copies:
        gone = {path for path in copy.before
                if not os.path.lexists(path) and not path.name.endswith(TEMP_SUFFIX)}
        assert gone == set(), (described(copy), sorted(map(str, gone)))
