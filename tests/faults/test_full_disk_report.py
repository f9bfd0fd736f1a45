"""`sixnines report` on a full disk (a small tmpfs filled up; root only).

The file that could not be written is named in one line with "No space left on device";
the command exits 1 without a traceback; no 0-byte, cut-short or temporary file is left;
a run whose report could not be written is reported as such and the others get theirs.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sixnines.formats.atomic import TEMP_SUFFIX
from tests.faults.disks import FILLER, leave_free, small_disk
from tests.faults.support import copy_run, failed_cleanly, line_with, record, sixnines

pytestmark = pytest.mark.integration

FULL = "No space left on device"
ROOM = 12 * 1024  # left on the disk: room for the smallest files, not for series.json
SIZE = "3M"


@pytest.fixture(scope="module")
def recorded(tmp_path_factory) -> Path:
    return record(tmp_path_factory.mktemp("recorded") / "01-tcp")


def whole(path: Path) -> bool:
    """Whether a result file is complete: by its kind's ending, or by parsing it."""
    text = path.read_text(encoding="utf-8")
    if path.suffix == ".json":
        return isinstance(json.loads(text), dict)
    ending = {".hgrm": " us\n", ".html": "</html>\n", ".csv": "\n", ".gp": "\n", ".dat": "\n"}
    return text.endswith(ending.get(path.suffix, ""))


def assert_no_partial_files(top: Path) -> None:
    """Every result file under `top` whole and not empty; no temporary file left."""
    results = [p for p in top.rglob("*") if p.is_file() and p.name != FILLER
               and p.suffix not in (".log", ".parquet", ".hlog", ".yaml")]
    assert not [p for p in results if p.name.endswith(TEMP_SUFFIX)]
    assert all(p.stat().st_size > 0 and whole(p) for p in results), results


def test_a_full_disk_leaves_no_partial_file_and_names_the_one_not_written(recorded,
                                                                            tmp_path):
    with small_disk(tmp_path / "disk", SIZE) as disk:
        results = disk / "results"
        copy_run(recorded, results / "01-tcp")
        leave_free(disk, ROOM)
        err = failed_cleanly(sixnines("report", results))
        line = line_with(err, "cannot write", FULL)
        assert str(results) in line
        line_with(err, "01-tcp", "analysis failed: cannot write", FULL)
        assert_no_partial_files(disk)
        assert not (results / "01-tcp" / "report" / "summary.json").exists()


def test_a_run_whose_report_cannot_be_written_does_not_cost_the_others(recorded, tmp_path):
    results = tmp_path / "results"
    copy_run(recorded, results / "01-full")
    copy_run(recorded, results / "02-room")
    with small_disk(results / "01-full" / "report", SIZE) as report:
        leave_free(report, ROOM)
        err = failed_cleanly(sixnines("report", results))
        line = line_with(err, f"cannot write {report}/", FULL)
        assert "Traceback" not in line
        assert_no_partial_files(report)
        assert [p.name for p in report.iterdir()] == [FILLER]  # all of its report or none
    runs = {run["run_id"]: run for run in
            json.loads((results / "summary.json").read_text())["runs"]}
    assert runs["01-full"]["status"] == "failed"
    assert any(f"cannot write {report}/" in p and FULL in p for p in runs["01-full"]["problems"])
    assert runs["02-room"]["status"] == "ok" and runs["02-room"]["latency_us"]["count"] == 1000
    assert (results / "02-room" / "report" / "latency.hgrm").is_file()
    assert_no_partial_files(results)
    assert "02-room" in (results / "report" / "index.html").read_text()
