"""orchestrator.reports.history_page without a browser: report paths from untrusted data
become links only when relative and under the page's folder; nights of a system and case
are put on one timeline; nothing from the document can end the page's data script; the
page is written whole. The page in Chromium: tests/integration/test_history_page.py."""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime, timedelta

import pytest

from sixnines.orchestrator.reports.history_page import (
    page,
    report_href,
    sections,
    write_history_page,
)

START = datetime(2026, 1, 1, 2, tzinfo=UTC)


def night(index: int, value: float | None = 100.0, **extra) -> dict:
    return {"night": f"night-{index:03d}", "when": (START + timedelta(days=index)).isoformat(),
            "value": value, "low": None if value is None else value * 0.9,
            "high": None if value is None else value * 1.1, "status": "ok",
            "unsteady": False, "report": f"night-{index:03d}/report/index.html", **extra}


def series(figure: str, nights: list[dict], system: str = "redis", case: str = "",
           unit: str = "µs", changes: tuple[dict, ...] = ()) -> dict:
    return {"system": system, "case": case, "metric": "latency", "figure": figure,
            "unit": unit, "nights": nights, "changes": list(changes)}


@pytest.mark.parametrize("path", [
    "javascript:alert(1)", "JavaScript:alert(1)", " javascript:alert(1)",
    "data:text/html,<script>alert(1)</script>", "file:///etc/passwd", "http://example.com/x",
    "//example.com/x", "/etc/passwd", "../secret/index.html", "a/../../b.html", "a/..",
    "a\\..\\b.html", "a\nb", "", ".", "./", None, 3, ["a"]])
def test_a_report_path_not_under_the_page_is_no_link(path):
    assert report_href(path) is None


@pytest.mark.parametrize(("path", "href"), [
    ("night-001/report/index.html", "night-001/report/index.html"),
    ("./n/report/index.html", "n/report/index.html"),
    ("2026-11-27T02:00/report/index.html", "2026-11-27T02%3A00/report/index.html"),
    ('a"b<c>/x y#z?.html', "a%22b%3Cc%3E/x%20y%23z%3F.html"),
    ("%2e%2e/index.html", "%252e%252e/index.html")])
def test_a_relative_report_path_is_percent_encoded_segment_by_segment(path, href):
    assert report_href(path) == href


def test_the_nights_of_a_system_and_case_share_one_timeline():
    """Series with different nights line up by night; a change point's index, given in its
    own series' nights, lands on the timeline's night; a night's status is the worst of
    its series'; rates get a chart of their own, linear."""
    p99 = [night(i, 200.0 * (1.3 if i >= 3 else 1)) for i in range(6)]
    p50 = [night(i) for i in (0, 2, 4, 5)]
    p50[1] = night(2, None, status="failed", report=None)
    rate = [night(i, 1000.0, unsteady=i == 5) for i in (1, 3, 5)]
    change = {"index": 3, "before": 200, "after": 260, "relative": 0.3,
              "direction": "regression"}
    drawn = sections({"series": [series("p50", p50), series("p99", p99, changes=(change,)),
                                 series("send_rate", rate, unit="msg/s")]})
    (section,) = drawn
    assert section["night"] == [f"night-{i:03d}" for i in range(6)]
    assert section["status"] == ["ok", "ok", "failed", "ok", "ok", "ok"]
    assert section["report"][2] == "night-002/report/index.html"  # p99 gives it
    latency, throughput = section["charts"]
    assert (latency["log"], throughput["log"]) == (True, False)
    assert [line["name"] for line in latency["lines"]] == ["p50", "p99"]
    assert latency["lines"][0]["value"] == [100.0, None, None, None, 100.0, 100.0]
    assert latency["lines"][1]["changes"] == [{"at": 3, "relative": 0.3, "before": 200.0,
                                               "after": 260.0, "direction": "regression"}]
    assert throughput["lines"][0]["value"] == [None, 1000.0, None, 1000.0, None, 1000.0]
    assert throughput["lines"][0]["unsteady"] == [5]


def test_a_change_outside_its_series_is_left_out():
    nights = [night(i) for i in range(3)]
    bad = [{"index": index, "before": 1, "after": 2, "relative": 1, "direction": "regression"}
           for index in (-1, 3, "1", None)]
    (section,) = sections({"series": [series("p99", nights, changes=bad)]})
    assert section["charts"][0]["lines"][0]["changes"] == []


def test_nothing_from_the_document_ends_the_data_script_or_makes_markup():
    hostile = "</script><script>alert(1)</script><!--"
    document = {"title": hostile, "generated": hostile,
                "series": [series(hostile, [night(0, night=hostile)], system=hostile,
                                  case="\u2028")]}
    text = page(document)
    data = re.search(r'<script type="application/json" id="history-data">(.*?)</script>',
                     text, re.S)[1]
    assert "<" not in data and ">" not in data and "\u2028" not in data
    assert json.loads(data)[0]["system"] == hostile
    assert text.count("<script>") == 2  # uPlot and history.js, nothing else
    assert "&lt;/script&gt;" in text  # the title, escaped


def test_the_page_is_self_contained_and_written_whole(tmp_path):
    target = tmp_path / "history.html"
    write_history_page({"title": "t", "series": [series("p99", [night(0)])]}, target)
    text = target.read_text(encoding="utf-8")
    assert "uPlot" in text and "history-data" in text
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:)?//""", text)
    assert [p.name for p in tmp_path.iterdir()] == ["history.html"]  # no partial left
