"""A night's rows (orchestrator/results/history/rows.py) from a real recorded night: every
run's figures with the sampling band `compare` computes (from the run's .hgrm, or from the
summary's percentiles when the .hgrm is gone), its case, status and accounting, and where
and with what it ran, as the manifest records it."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from sixnines import __version__
from sixnines.formats.layout import REPORT_DIR, hgrm_file
from sixnines.formats.summary import Figures
from sixnines.orchestrator.results.compare import Tail
from tests.history_nights import (
    history,
    made_unsteady,
    night,
    recorded,
    recorded_repeated,
    store_rows,
)


@pytest.fixture
def rows(tmp_path_factory, tmp_path: Path) -> tuple[Path, list[dict]]:
    root = tmp_path / "runs"
    night(recorded(tmp_path_factory)[0], root, 1)
    assert history(root).returncode == 0
    return root, store_rows(root)


def test_every_run_and_figure_with_its_band_from_the_hgrm(rows):
    root, found = rows
    assert {(row["run_id"], row["case"]) for row in found} == {
        ("01-tcp-message_size=64", "message_size=64"),
        ("02-tcp-message_size=128", "message_size=128")}
    run = [row for row in found if row["run_id"] == "01-tcp-message_size=64"]
    assert [row["figure"] for row in run] == ["p50", "p90", "p99", "p99.9", "p99.99",
                                              "p99.999", "p99.9999", "max", "send_rate",
                                              "receive_rate"]
    summary = json.loads((root / "nightly" / "20261101-020000" / "summary.json").read_text())
    figures = Figures.model_validate(summary["runs"][0]["latency_us"])
    tail = Tail.from_hgrm(root / "nightly" / "20261101-020000" / "01-tcp-message_size=64"
                          / REPORT_DIR / hgrm_file("latency"))
    p99 = next(row for row in run if row["figure"] == "p99")
    down, up = tail.half_widths("p99")
    assert p99["value"] == figures.p99 and p99["band"] == "hgrm"
    assert p99["low"] == pytest.approx(figures.p99 * 2.718281828459045 ** -down)
    assert p99["high"] == pytest.approx(figures.p99 * 2.718281828459045 ** up)
    assert p99["samples"] == figures.count == 1000
    # 1,000 samples: fewer than 10 above p99.9, and none above the max: no band
    assert all(row["low"] is None for row in run if row["figure"] in ("p99.9", "max"))
    assert {row["unit"] for row in run} == {"µs", "msg/s"}
    assert all(row["status"] == "ok" and row["lost"] == 0 and row["sent"] == 1000
               for row in run)


def test_an_unsteady_run_is_kept_unsteady_and_shown_so(rows):
    """The run's steadiness verdict from summary.json: empty where the analysis measured
    none (a run too short for 4 windows), true where its windows disagreed, and the
    series' night says so to the page."""
    root, found = rows
    assert {row["unsteady"] for row in found} == {None}  # 1,000 messages: no windows
    made_unsteady(root / "nightly" / "20261101-020000")
    assert "1 changed" in history(root).stderr
    assert {row["unsteady"] for row in store_rows(root)} == {True}
    series = json.loads(history(root, "--json").stdout)["series"]
    assert all(night["unsteady"] for one in series for night in one["nights"])


def test_where_and_with_what_it_ran(rows):
    _, found = rows
    row = found[0]
    assert row["sixnines_version"] == __version__
    assert re.fullmatch("[0-9a-f]{12}", row["host_fingerprint"])
    assert row["hosts"]  # the controller's host name
    assert row["broker_kind"] == "builtin" and row["broker_version"] is None
    assert json.loads(row["driver_options"]) == {"nodelay": True}
    assert len({r["host_fingerprint"] for r in found}) == 1  # one machine
    assert row["scenario"] == "nightly" and row["load"] == "open-loop"


def test_without_its_hgrm_a_band_comes_from_the_summary(rows):
    root, _ = rows
    run = root / "nightly" / "20261101-020000" / "01-tcp-message_size=64"
    (run / REPORT_DIR / hgrm_file("latency")).unlink()
    assert "1 changed" in history(root).stderr
    again = {(row["run_id"], row["figure"]): row for row in store_rows(root)}
    p50 = again[("01-tcp-message_size=64", "p50")]
    assert p50["band"] == "summary" and p50["low"] < p50["value"] < p50["high"]
    assert again[("02-tcp-message_size=128", "p50")]["band"] == "hgrm"


def test_a_repeated_case_is_one_run_its_band_the_repeats_spread(tmp_path_factory,
                                                                 tmp_path: Path):
    """`repeat: 3`: a case's rows are its merged run (summary.json's repeats[].merged),
    not each repeat, so its series goes on as one; a figure's band is its repeats' lowest
    to highest, where it ran is its first repeat's manifest, and it is unsteady when a
    repeat was."""
    root = tmp_path / "runs"
    source = night(recorded_repeated(tmp_path_factory), root, 1)
    assert history(root).returncode == 0
    found = store_rows(root)
    assert {(row["run_id"], row["case"]) for row in found} == {
        ("tcp-message_size=64", "message_size=64"),
        ("tcp-message_size=128", "message_size=128")}
    summary = json.loads((source / "summary.json").read_text())
    case = next(case for case in summary["repeats"] if case["case"] == "message_size=64")
    assert len(case["runs"]) == 3
    by_figure = {row["figure"]: row for row in found if row["run_id"] == case["merged"]["run_id"]}
    p99, spread = by_figure["p99"], case["spread"]["latency_us"]["p99"]
    assert p99["value"] == case["merged"]["latency_us"]["p99"]
    assert p99["samples"] == case["merged"]["latency_us"]["count"] == 3000
    assert (p99["low"], p99["high"], p99["band"]) == (spread["min"], spread["max"], "repeats")
    rate = by_figure["receive_rate"]
    assert (rate["low"], rate["high"]) == (case["spread"]["rates"]["receive_rate"]["min"],
                                           case["spread"]["rates"]["receive_rate"]["max"])
    assert re.fullmatch("[0-9a-f]{12}", p99["host_fingerprint"])
    made_unsteady(source)  # its repeats: the merged case holds their messages
    assert "1 changed" in history(root).stderr
    assert {row["unsteady"] for row in store_rows(root)} == {True}
