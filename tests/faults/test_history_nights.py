"""Nights from elsewhere given to `sixnines history` (orchestrator/results/history/nights.py
and what reads them): a garbled summary, a FIFO or a link out in a file's place, a night
whose names are escape sequences and whose run ids lead out of it, a store folder that is
a link out of its root. Each unreadable night is one line, the others are indexed, nothing
outside a night is read, nothing outside the store is written, no name reaches the
terminal unescaped, and none becomes a live formula in the CSV."""

from __future__ import annotations

import csv
import json
import os
from pathlib import Path

import pytest

from sixnines.formats.layout import HISTORY_DIR, REPORT_DIR, SUMMARY_FILE, hgrm_file
from tests.faults.support import control_characters, line_with, refused, sixnines
from tests.history_nights import csv_path, history, night, recorded, store_rows

pytestmark = [pytest.mark.integration, pytest.mark.unchecked_results]

ESCAPES = "\x1b]0;owned\x07\x1b[2J"
FORMULA = '=HYPERLINK("http://example.com/x","open")'


@pytest.fixture
def root(tmp_path_factory, tmp_path: Path) -> Path:
    source = recorded(tmp_path_factory)[0]
    for day in (1, 2):
        night(source, tmp_path / "runs", day)
    return tmp_path / "runs"


@pytest.mark.parametrize("damage", ["garbled", "fifo", "link-out", "nan"])
def test_an_unreadable_night_is_one_line_and_the_others_are_indexed(root: Path, damage: str,
                                                                    tmp_path: Path):
    summary = root / "nightly" / "20261101-020000" / SUMMARY_FILE
    if damage == "garbled":
        summary.write_bytes(summary.read_bytes()[:100])
    elif damage == "nan":
        summary.write_text(summary.read_text().replace('"p50": ', '"p50": NaN, "x": ', 1))
    else:
        summary.unlink()
        if damage == "fifo":
            os.mkfifo(summary)
        else:
            (tmp_path / "secret.json").write_text(json.dumps({"runs": []}))
            summary.symlink_to(tmp_path / "secret.json")
    done = history(root)
    assert done.returncode == 0, done.stderr  # the newest night is whole
    assert "Traceback" not in done.stderr
    assert "corrupt" in line_with(done.stderr, str(summary))
    rows = store_rows(root)
    assert {row["night"] for row in rows if row["run_id"]} == {"20261102-020000"}
    (broken,) = [row for row in rows if row["run_id"] is None]
    assert broken["status"] == "corrupt" and str(summary) in broken["problem"]


def test_hostile_names_stay_inside_the_night_and_off_the_terminal(root: Path,
                                                                 tmp_path: Path):
    hostile = night(recorded_of(root), root, 3, name=f"20261103-020000{ESCAPES}")
    outside = tmp_path / "outside"
    (outside / REPORT_DIR).mkdir(parents=True)
    (outside / REPORT_DIR / hgrm_file("latency")).write_text("     1.0 1.0 1 \n")
    run = hostile / "01-tcp-message_size=64"
    summary = json.loads((hostile / SUMMARY_FILE).read_text())
    summary["runs"][0]["run_id"] = "../../../outside"
    summary["runs"][0]["system"] = FORMULA
    summary["runs"][1]["system"] = f"tcp{ESCAPES}"
    (hostile / SUMMARY_FILE).write_text(json.dumps(summary))
    second = hostile / "02-tcp-message_size=128"
    for child in second.iterdir():
        if child.name == REPORT_DIR:
            for file in child.iterdir():
                file.unlink()
            child.rmdir()
    (second / REPORT_DIR).symlink_to(outside / REPORT_DIR)  # a link out of the night
    done = history(root)
    assert done.returncode in (0, 1), done.stderr
    assert not control_characters(done.stderr)
    rows = [row for row in store_rows(root) if row["night"].startswith("20261103")]
    by_run = {row["run_id"]: row for row in rows if row["figure"] == "p50"}
    assert by_run["../../../outside"]["band"] == "summary"  # its .hgrm is not looked for
    assert by_run["../../../outside"]["host_fingerprint"] is None  # nor its manifest
    assert by_run["02-tcp-message_size=128"]["band"] == "summary"  # the link is not read
    assert by_run["../../../outside"]["system"] == FORMULA
    with open(csv_path(root), newline="", encoding="utf-8") as source:
        systems = {row["system"] for row in csv.DictReader(source)}
    assert f"'{FORMULA}" in systems and FORMULA not in systems  # shown, never evaluated
    assert run.is_dir()
    series = json.loads(history(root, "--json").stdout)["series"]  # JSON escapes them
    assert any(night["night"] == hostile.name for one in series for night in one["nights"])
    assert any(one["system"] == f"tcp{ESCAPES}" for one in series)


def recorded_of(root: Path) -> Path:
    """A night already under `root`, to copy."""
    return root / "nightly" / "20261101-020000"


def test_a_store_folder_leading_out_of_its_root_is_refused(root: Path, tmp_path: Path):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (root / HISTORY_DIR).symlink_to(elsewhere)
    assert "outside the run directory" in refused(history(root))
    assert list(elsewhere.iterdir()) == []


def test_a_name_like_a_stamp_naming_no_time_is_a_night_all_the_same(root: Path):
    """20261399-250000 has a stamp's shape and no date: the night's time is then its
    first run's start, as for any name without a stamp."""
    odd = night(recorded_of(root), root, 3, name="20261399-250000")
    for args in (("history", root), ("runs", root)):
        done = sixnines(*args)
        assert done.returncode == 0, done.stderr
        assert "Traceback" not in done.stderr
    assert odd.name in {row["night"] for row in store_rows(root) if row["run_id"]}
