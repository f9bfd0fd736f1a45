"""`sixnines history --junit FILE --html FILE` (orchestrator/results/history/checks.py and
the page), on real recorded nights: a test case per series of the newest night, failed
with the evidence where a change for the worse is news, skipped where too few nights; the
newest night's own soundness a case of its own (an unsteady night exits 3); the page
written beside, its reports relative to it; a file with nowhere to go refused."""

from __future__ import annotations

import json
import re
from pathlib import Path
from xml.etree import ElementTree

import pytest

from tests.faults.support import line_with, refused
from tests.history_nights import RUNS, history, made_unsteady, night, recorded, slowed
from tests.test_junit import junit_cases

P50_64 = ("nightly.tcp.message_size=64", "latency p50")


@pytest.fixture
def root(tmp_path_factory, tmp_path: Path) -> Path:
    """Three nights of one recorded run, then three of it three times slower."""
    source = recorded(tmp_path_factory)[0]
    for day in range(1, 4):
        night(source, tmp_path / "runs", day)
    for day in range(4, 7):
        slowed(night(source, tmp_path / "runs", day), 3.0)
    return tmp_path / "runs"


def test_a_change_for_the_worse_fails_its_case_with_the_evidence(root: Path):
    junit, page = root / "junit.xml", root / "history.html"
    done = history(root, "--junit", junit, "--html", page)
    assert done.returncode == 1, done.stderr
    cases = junit_cases(junit)
    assert P50_64 in cases["failure"] and ("history", "newest nights usable") in cases["passed"]
    assert ("nightly.tcp.message_size=64", "throughput receive_rate") in cases["passed"]
    assert len(cases["passed"] + cases["failure"]) == 1 + RUNS * 10  # every series judged
    failure = next(case for case in ElementTree.parse(junit).iter("testcase")
                   if (case.get("classname"), case.get("name")) == P50_64)[0]
    message = failure.get("message")
    assert "changed for the worse from night 20261104-020000 on" in message
    assert re.search(r"before, .* after \(\+200\.0%\), beyond the nights' sampling bands "
                     r"\(before [\d,.]+–[\d,.]+ µs, after [\d,.]+–[\d,.]+ µs\)", message)
    assert "report of the newest night: " in failure.text
    drawn = json.loads(re.search(r'id="history-data">(.*?)</script>', page.read_text(),
                                 re.S).group(1))
    section = next(one for one in drawn if one["case"] == "message_size=64")
    p50 = next(line for chart in section["charts"] for line in chart["lines"]
               if line["name"] == "p50")
    assert [(change["at"], change["direction"]) for change in p50["changes"]] == \
        [(3, "regression")]
    assert section["report"][0] == "nightly/20261101-020000/report/index.html"  # the page's


def test_too_few_nights_are_skipped(tmp_path_factory, tmp_path: Path):
    root = tmp_path / "runs"
    for day in (1, 2):
        night(recorded(tmp_path_factory)[0], root, day)
    assert history(root, "--junit", tmp_path / "junit.xml").returncode == 0
    cases = junit_cases(tmp_path / "junit.xml")
    assert len(cases["skipped"]) == RUNS * 10 and cases["failure"] == []
    skipped = next(case for case in ElementTree.parse(tmp_path / "junit.xml").iter("skipped"))
    assert skipped.get("message").startswith("2 recent night(s) with the figure")


def test_an_unsteady_newest_night_exits_3(root: Path, tmp_path_factory):
    made_unsteady(night(recorded(tmp_path_factory)[0], root, 7))
    done = history(root, "--junit", root / "junit.xml")
    assert done.returncode == 3, done.stderr
    line = line_with(done.stderr, "the newest night cannot be judged")
    assert "20261107-020000: 01-tcp-message_size=64 unsteady" in line
    assert ("history", "newest nights usable") in junit_cases(root / "junit.xml")["failure"]


def test_a_file_with_nowhere_to_go_is_refused(root: Path, tmp_path: Path):
    for option in ("--junit", "--html"):
        line = refused(history(root, option, tmp_path / "nowhere" / "file"))
        assert f"{option}: no directory" in line
