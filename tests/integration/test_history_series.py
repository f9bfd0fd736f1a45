"""`sixnines history --json` (orchestrator/results/history/series.py): the document the
history page reads, every series night by night with its band, status and report, and the
changes found in it, on real recorded nights."""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path

import pytest

from sixnines.formats.layout import HISTORY_DIR
from tests.history_nights import FIGURES, RUNS, history, night, recorded, slowed

SERIES_KEYS = {"scenario", "system", "case", "metric", "figure", "unit", "nights", "changes"}
NIGHT_KEYS = {"night", "when", "value", "low", "high", "status", "unsteady", "report"}


def test_the_series_document(tmp_path_factory, tmp_path: Path):
    root = tmp_path / "runs"
    source = recorded(tmp_path_factory)[0]
    for day in range(1, 4):
        night(source, root, day)
    for day in range(4, 7):
        slowed(night(source, root, day), 3.0)
    done = history(root, "--json")
    assert done.returncode == 1, done.stderr
    document = json.loads(done.stdout)
    assert set(document) == {"title", "generated", "series"}
    datetime.fromisoformat(document["generated"])
    series = document["series"]
    assert len(series) == RUNS * FIGURES
    assert all(set(one) == SERIES_KEYS for one in series)
    p50 = next(one for one in series if one["figure"] == "p50"
               and one["case"] == "message_size=64")
    assert (p50["system"], p50["metric"], p50["unit"]) == ("tcp", "latency", "µs")
    assert [one["night"] for one in p50["nights"]] == [f"202611{day:02d}-020000"
                                                         for day in range(1, 7)]
    first = p50["nights"][0]
    assert set(first) == NIGHT_KEYS
    assert first["low"] < first["value"] < first["high"] and first["status"] == "ok"
    assert (root / HISTORY_DIR / first["report"]).resolve() == \
        (root / "nightly" / "20261101-020000" / "report" / "index.html").resolve()
    (change,) = p50["changes"]
    assert (change["index"], change["direction"]) == (3, "regression")
    assert change["before"] == pytest.approx(first["value"])
    assert change["after"] == pytest.approx(p50["nights"][3]["value"])
    assert change["relative"] == pytest.approx(2.0)
    rates = [one for one in series if one["metric"] == "throughput"]
    assert {one["figure"] for one in rates} == {"send_rate", "receive_rate"}
    assert all(one["changes"] == [] and one["unit"] == "msg/s" for one in rates)
