"""`sixnines history` on the console (orchestrator/results/history/console.py), on real
recorded nights: nights slowed on purpose are what changed since the last night once the
new level has held 3 nights (exit 1), and in the last 30 days, and nothing else is; one
slowed night is no level; series with too few nights are named; a broken newest night
exits 3, whatever else changed."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.faults.support import control_characters, line_with
from tests.history_nights import history, night, recorded, slowed

pytestmark = pytest.mark.unchecked_results  # a garbled summary.json, on purpose


@pytest.fixture
def root(tmp_path_factory, tmp_path: Path) -> Path:
    """Six nights of one recorded run, the same figures each night."""
    source = recorded(tmp_path_factory)[0]
    for day in range(1, 7):
        night(source, tmp_path / "runs", day)
    return tmp_path / "runs"


def test_nothing_changed(root: Path):
    done = history(root)
    assert done.returncode == 0, done.stderr
    assert "since the last night: 0 series changed" in done.stderr
    assert "in the last 30 days: 0 series changed" in done.stderr
    assert "too few nights" not in done.stderr


def test_slowed_nights_are_the_change_since_the_last_night(root: Path, tmp_path_factory):
    source = recorded(tmp_path_factory)[0]
    slowed(night(source, root, 7), 3.0)
    done = history(root)
    assert done.returncode == 0, done.stderr  # one night: no level yet
    assert "since the last night: 0 series changed" in done.stderr
    for day in (8, 9):
        slowed(night(source, root, day), 3.0)
    done = history(root)
    assert done.returncode == 1, done.stderr  # three nights: a level
    since = done.stderr.split("since the last night")[1].split("in the last 30 days")[0]
    line = line_with(since, "✗", "nightly", "tcp message_size=64")
    assert "p50 +200%" in line and "receive_rate" not in line
    month = done.stderr.split("in the last 30 days")[1]
    assert "on 1 night(s)" in line_with(month, "tcp message_size=64")
    assert "20261107-020000" in line_with(month, "tcp message_size=64")
    assert not control_characters(done.stderr)
    night(source, root, 10)  # news once: the night after, it is the month's
    done = history(root)
    assert done.returncode == 0, done.stderr
    assert "since the last night: 0 series changed" in done.stderr
    assert "20261107-020000" in line_with(done.stderr.split("in the last 30 days")[1],
                                          "tcp message_size=64")


def test_too_few_nights_to_judge(tmp_path_factory, tmp_path: Path):
    root = tmp_path / "runs"
    source = recorded(tmp_path_factory)[0]
    night(source, root, 1)
    slowed(night(source, root, 2), 3.0)
    done = history(root)
    assert done.returncode == 0, done.stderr  # two nights: nothing judged
    few = done.stderr.split("too few nights to judge")[1]
    assert "nightly: tcp message_size=64" in few and "nightly: tcp message_size=128" in few


def test_a_broken_newest_night_exits_3(root: Path, tmp_path_factory):
    broken = night(recorded(tmp_path_factory)[0], root, 7)
    (broken / "summary.json").write_text('{"runs": [')
    done = history(root)
    assert done.returncode == 3, done.stderr
    assert "Traceback" not in done.stderr
    assert "corrupt" in line_with(done.stderr, str(broken / "summary.json"))
