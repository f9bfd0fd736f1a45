"""`sixnines prune` on real recorded nights: the older nights lose exactly their indexed raw
chunks (the space reclaimed printed), the newest keep them; `report` and `compare` still
work on a pruned night, and say it was pruned rather than that files were deleted since
the run; a results directory whose chunk is a link leading out has nothing outside removed;
a night never analysed is left whole."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from sixnines.formats.integrity import problems, read_manifest
from sixnines.formats.layout import CHUNK_INDEX, PRUNED_FILE
from tests.faults.support import analysed, copy_run, line_with, refused, sixnines

pytestmark = pytest.mark.integration

OLD, OLDER = "20261101-020000", "20261102-020000"


@pytest.fixture(scope="module")
def night(tmp_path_factory) -> Path:
    """One real night, recorded and analysed by `sixnines run`."""
    return analysed(tmp_path_factory.mktemp("recorded"))


@pytest.fixture
def root(tmp_path: Path, night: Path) -> Path:
    """Three nights of one scenario: the recorded one (newest) and two copies dated
    earlier."""
    nights = tmp_path / "runs" / "faults"
    shutil.copytree(night, nights / night.name)
    for stamp in (OLD, OLDER):
        shutil.copytree(night, nights / stamp)
    return tmp_path / "runs"


def chunks(night: Path) -> dict[Path, int]:
    return {path.relative_to(night): path.stat().st_size
            for path in night.glob("*/agents/*/messages-*.parquet")}


def kept_files(night: Path) -> set[Path]:
    return {path.relative_to(night) for path in night.rglob("*")
            if path.is_file() and not path.name.startswith("messages-")}


def test_older_nights_lose_only_their_raw_chunks(root: Path, night: Path) -> None:
    nights = root / "faults"
    newest = nights / night.name
    before = {stamp: chunks(nights / stamp) for stamp in (OLD, OLDER)}
    assert all(before.values())
    others = kept_files(nights / OLD)
    done = sixnines("prune", root, "--keep-raw", "1")
    assert done.returncode == 0, done.stderr
    reclaimed = sum(sum(sizes.values()) for sizes in before.values())
    line_with(done.stdout, "reclaimed", f"({reclaimed:,} bytes) in 2 night(s)")
    for stamp, sizes in before.items():
        line_with(done.stdout, str(nights / stamp), f"{len(sizes)} chunk file(s) removed")
        assert not chunks(nights / stamp)
        assert kept_files(nights / stamp) == others | {Path("01-tcp") / PRUNED_FILE}
    assert chunks(newest) == chunks(night)  # the newest night whole
    again = sixnines("prune", root, "--keep-raw", "1")
    line_with(again.stdout, "reclaimed 0 B (0 bytes) in 2 night(s)")


def test_a_pruned_night_still_reports_and_compares(root: Path, night: Path) -> None:
    nights = root / "faults"
    old = nights / OLD
    figures = json.loads((old / "summary.json").read_text())["runs"][0]["latency_us"]
    assert sixnines("prune", root, "--keep-raw", "1").returncode == 0
    done = sixnines("report", old)
    assert done.returncode == 0, done.stderr
    line_with(done.stderr, "01-tcp: raw records pruned on ", "the analysis made before is kept")
    assert "deleted since the run" not in done.stderr
    (run,) = json.loads((old / "summary.json").read_text())["runs"]
    assert run["status"] == "ok" and run["latency_us"] == figures
    assert any("raw records pruned" in note for note in run["notes"])
    assert (old / "report" / "index.html").is_file()
    compared = sixnines("compare", nights / night.name, old)
    assert compared.returncode == 0, compared.stdout + compared.stderr


def test_the_analysis_names_pruned_files_as_pruned(root: Path) -> None:
    run_dir = root / "faults" / OLD / "01-tcp"
    shutil.rmtree(root / "faults" / OLDER)
    assert sixnines("prune", root, "--keep-raw", "1").returncode == 0
    found = problems(run_dir, read_manifest(run_dir))
    assert found and all("raw records pruned on" in line for line in found), found
    assert not any("deleted since the run" in line for line in found)


def test_a_chunk_leading_out_is_left_alone(root: Path, tmp_path: Path) -> None:
    victim = tmp_path / "victim.parquet"
    victim.write_bytes(b"not sixnines'")
    folder = root / "faults" / OLD / "01-tcp" / "agents" / "consumer-0"
    chunk = folder / "messages-000001.parquet"
    chunk.unlink()
    chunk.symlink_to(victim)
    done = sixnines("prune", root, "--keep-raw", "1")
    assert done.returncode == 0, done.stderr
    line_with(done.stderr, str(chunk), "outside the run directory", "left alone")
    assert victim.read_bytes() == b"not sixnines'"
    assert chunk.is_symlink()
    assert not chunks(root / "faults" / OLDER)  # the other night pruned as usual


def test_a_night_not_analysed_is_left_whole(tmp_path: Path, night: Path) -> None:
    nights = tmp_path / "runs" / "faults"
    newest = nights / night.name
    shutil.copytree(night, newest)
    unanalysed = nights / OLD
    unanalysed.mkdir()
    copy_run(night / "01-tcp", unanalysed / "01-tcp")  # no report: never analysed
    (unanalysed / "01-tcp" / "agents" / "consumer-0" / CHUNK_INDEX).stat()
    before = chunks(unanalysed)
    done = sixnines("prune", tmp_path / "runs", "--keep-raw", "1")
    assert done.returncode == 0, done.stderr
    line_with(done.stderr, "01-tcp: not analysed")
    assert chunks(unanalysed) == before


def test_bad_arguments(tmp_path: Path) -> None:
    assert "no such directory" in refused(sixnines("prune", tmp_path / "none", "--keep-raw",
                                                   "1"))
    assert sixnines("prune", tmp_path, "--keep-raw", "-1").returncode == 2
