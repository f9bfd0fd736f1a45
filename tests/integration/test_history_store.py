"""The history's store (orchestrator/results/history/store.py) through `sixnines history`
on real recorded nights: built from nothing, then kept up to date — a new night added, a
deleted one dropped, an edited one read again, a touched one found unchanged — written as
Parquet and as a CSV the csv module reads, rebuilt when asked or when it cannot be read."""

from __future__ import annotations

import csv
import os
import shutil
from pathlib import Path

import pytest

from sixnines.formats.layout import HISTORY_DIR, HISTORY_TABLE
from sixnines.orchestrator.results.history.rows import COLUMNS
from sixnines.orchestrator.results.history.store import BOOKKEEPING
from tests.faults.support import line_with, refused
from tests.history_nights import (
    FIGURES,
    RUNS,
    csv_path,
    history,
    night,
    recorded,
    slowed,
    store_rows,
)


@pytest.fixture
def root(tmp_path_factory, tmp_path: Path) -> Path:
    """Three nights under a root, copies of two recorded ones."""
    first, second = recorded(tmp_path_factory)
    for day, source in ((1, first), (2, second), (3, first)):
        night(source, tmp_path / "runs", day)
    return tmp_path / "runs"


def nights_in(rows: list[dict]) -> set[str]:
    return {row["night"] for row in rows}


def test_built_from_nothing_then_only_what_changed_is_read(root: Path, tmp_path_factory):
    done = history(root)
    assert done.returncode == 0, done.stderr
    assert "3 new" in done.stderr
    rows = store_rows(root)
    assert len(rows) == 3 * RUNS * FIGURES
    assert list(rows[0]) == COLUMNS.names
    store = root / HISTORY_DIR / HISTORY_TABLE
    written = store.stat().st_mtime_ns

    done = history(root)
    assert "nothing new" in done.stderr, done.stderr
    assert store.stat().st_mtime_ns == written  # nothing changed: nothing rewritten

    night(recorded(tmp_path_factory)[1], root, 4)
    assert "1 new" in history(root).stderr
    assert nights_in(store_rows(root)) == {f"202611{day:02d}-020000" for day in (1, 2, 3, 4)}

    shutil.rmtree(root / "nightly" / "20261102-020000")
    assert "1 removed" in history(root).stderr
    assert "20261102-020000" not in nights_in(store_rows(root))

    before = {(row["run_id"], row["figure"]): row["value"] for row in store_rows(root)
              if row["night"] == "20261103-020000"}
    slowed(root / "nightly" / "20261103-020000", 2.0)
    assert "1 changed" in history(root).stderr
    after = {(row["run_id"], row["figure"]): row["value"] for row in store_rows(root)
             if row["night"] == "20261103-020000"}
    assert after[("01-tcp-message_size=64", "p50")] == pytest.approx(
        2 * before[("01-tcp-message_size=64", "p50")])

    summary = root / "nightly" / "20261101-020000" / "summary.json"
    os.utime(summary)  # touched, not changed
    assert "1 read again, unchanged" in history(root).stderr


def test_the_csv_copy_opens_with_the_csv_module(root: Path):
    assert history(root).returncode == 0
    with open(csv_path(root), newline="", encoding="utf-8") as source:
        rows = list(csv.DictReader(source))
    assert len(rows) == 3 * RUNS * FIGURES
    assert list(rows[0]) == [name for name in COLUMNS.names if name not in BOOKKEEPING]
    p99 = next(row for row in rows if row["figure"] == "p99")
    assert float(p99["low"]) <= float(p99["value"]) <= float(p99["high"])
    assert p99["unit"] == "µs" and p99["case"] == "message_size=64"


def test_a_new_night_is_added_to_the_csv_as_a_rebuild_writes_it(root: Path, tmp_path_factory):
    assert history(root).returncode == 0
    night(recorded(tmp_path_factory)[1], root, 4)
    assert "1 new" in history(root).stderr
    appended = csv_path(root).read_bytes()
    assert history(root, "--rebuild").returncode == 0
    assert csv_path(root).read_bytes() == appended
    assert appended.count(b'"20261104-020000"') == RUNS * FIGURES  # its night column

    csv_path(root).write_bytes(appended[:len(appended) // 2])  # cut short by hand
    night(recorded(tmp_path_factory)[0], root, 5)
    assert "1 new" in history(root).stderr
    with open(csv_path(root), newline="", encoding="utf-8") as source:
        assert len(list(csv.DictReader(source))) == 5 * RUNS * FIGURES  # written whole


def test_rebuilt_when_asked_and_when_it_cannot_be_read(root: Path):
    assert history(root).returncode == 0
    done = history(root, "--rebuild")
    assert "rebuilt: asked (--rebuild)" in done.stderr and "3 new" in done.stderr
    (root / HISTORY_DIR / HISTORY_TABLE).write_bytes(b"not parquet")
    done = history(root)
    assert done.returncode == 0, done.stderr
    line = line_with(done.stderr, "rebuilt", HISTORY_TABLE)
    assert "could not be read" in line
    assert len(store_rows(root)) == 3 * RUNS * FIGURES


def test_a_store_elsewhere_and_several_roots(root: Path, tmp_path: Path, tmp_path_factory):
    other = tmp_path / "other"
    night(recorded(tmp_path_factory)[0], other, 9)
    store = tmp_path / "store"
    done = history(root, other, "--store", store)
    assert done.returncode == 0, done.stderr
    assert "4 new" in done.stderr
    assert (store / HISTORY_TABLE).is_file() and not (root / HISTORY_DIR).exists()
    assert "1 removed" in history(root, "--store", store).stderr  # the other root's night


def test_no_such_root_and_a_root_without_results(tmp_path: Path):
    assert "no such directory" in refused(history(tmp_path / "missing"))
    (tmp_path / "empty").mkdir()
    assert "no results directory" in refused(history(tmp_path / "empty"))
