"""The history page in a real browser, as the run report is tested
(tests/integration/test_html_browser.py, Chromium over tests/integration/chromium.py): a
synthetic series document written by `write_history_page` loads with no console error and
no request leaving the page (every one blocked and counted); every chart shows data in a
screenshot; every night with a figure is drawn where its value is; the change point, the
nights of a bad status and the unsteady night are marked; a hover shows a night's figures
and its report link, a click keeps them; a hostile report path or night name is text.
"""

from __future__ import annotations

import base64
import math
from datetime import UTC, datetime, timedelta

import pytest

from sixnines.orchestrator.reports.history_page import write_history_page
from tests.integration.chromium import CHROMIUM, DevTools, history_page_loaded, ink

pytestmark = [
    pytest.mark.integration,
    pytest.mark.timeout(300),
    pytest.mark.skipif(CHROMIUM is None, reason="needs headless Chromium: apt-get install "
                                                "chromium (deploy/setup.sh --test)"),
]

NIGHTS = 40
STEP_AT, FAILED_AT, PARTIAL_AT, UNSTEADY_AT = 25, 7, 12, 15
HOSTILE_REPORTS = {30: "javascript:alert(1)", 31: "../../../etc/passwd", 32: "/etc/passwd",
                   33: "file:///etc/passwd"}
HOSTILE_NIGHT = 34  # its name is markup
FIGURES = (("p50", 100.0), ("p99", 400.0), ("p99.9", 1500.0), ("p99.99", 4000.0),
           ("max", 12000.0), ("send_rate", 10000.0), ("receive_rate", 5000.0))
START = datetime(2026, 1, 1, 2, tzinfo=UTC)


def night_name(index: int) -> str:
    return '<img src="x" onerror="alert(1)">' if index == HOSTILE_NIGHT else f"night-{index:03d}"


def synthetic_document() -> dict:
    """Two systems (one with a case, one without), seven figures each, a night apart; p99
    of redis steps up 30 % at STEP_AT (the history's detector would report it: the change is
    given); one night failed (no figures), one partial, one unsteady p99; a few hostile
    report paths."""
    document = {"title": "nightly", "generated": "2026-11-27T03:00:00+00:00", "series": []}
    for system, case in (("redis", "message_size=1024"), ("nats", "")):
        for figure, base in FIGURES:
            nights = []
            for i in range(NIGHTS):
                step = 1.3 if figure == "p99" and system == "redis" and i >= STEP_AT else 1.0
                value = None if i == FAILED_AT else base * step * (1 + 0.02 * math.sin(i))
                nights.append({
                    "night": night_name(i), "when": (START + timedelta(days=i)).isoformat(),
                    "value": value, "low": value and value * 0.95,
                    "high": value and value * 1.05,
                    "status": {FAILED_AT: "failed", PARTIAL_AT: "partial"}.get(i, "ok"),
                    "unsteady": figure == "p99" and i == UNSTEADY_AT,
                    "report": HOSTILE_REPORTS.get(i, f"night-{i:03d}/report/index.html")})
            changes = [{"index": STEP_AT, "before": base, "after": base * 1.3, "relative": 0.3,
                        "direction": "regression"}] if step > 1 else []
            document["series"].append({
                "system": system, "case": case, "metric": "latency", "figure": figure,
                "unit": "msg/s" if figure.endswith("rate") else "µs", "nights": nights,
                "changes": changes})
    return document


@pytest.fixture(scope="module")
def browser(tmp_path_factory):
    """Chromium with the history page loaded, every request off the machine blocked; the
    module's tests share it, in order."""
    base = tmp_path_factory.mktemp("history")
    page = base / "history.html"
    write_history_page(synthetic_document(), page)
    with history_page_loaded(page, base) as devtools:
        yield devtools, base, page


def _chart(devtools: DevTools, section: int, chart: int, expression: str):
    """`expression` evaluated with `u` the uPlot chart and `box` its overlay's rectangle."""
    return devtools.evaluate(f"""(() => {{
        const u = window.historyCharts[{section}].charts[{chart}];
        u.root.scrollIntoView({{block: 'center'}});
        const box = u.over.getBoundingClientRect();
        return {expression}; }})()""")


def test_the_page_loads_without_errors_or_requests(browser):
    devtools, _, page = browser
    assert devtools.evaluate("window.historyCharts.map(s => s.charts.length)") == [2, 2]
    assert devtools.evaluate("document.querySelectorAll('img, iframe, object').length") == 0
    assert devtools.errors() == []
    assert devtools.requests() == [page.as_uri()]


def test_every_chart_shows_data_in_a_screenshot(browser):
    devtools, base, _ = browser
    shot = devtools.screenshot(base / "history.png")
    areas = devtools.evaluate("""window.historyCharts.flatMap(s => s.charts.map(u => {
        const r = u.over.getBoundingClientRect();
        return {x: r.x + scrollX, y: r.y + scrollY, width: r.width, height: r.height}; }))""")
    assert len(areas) == 4
    for area in areas:
        data = devtools.page("Page.captureScreenshot", format="png", captureBeyondViewport=True,
                             clip={**area, "scale": 0.5})["data"]
        assert ink(base64.b64decode(data)) > 0.01, f"a chart without data: {area} ({shot})"


#: per line of a chart: how many nights have a pixel of the line's colour where the night's
#: value is (within 3 px), read from the chart's canvas
DRAWN = """u.series.slice(1).map((s, i) => [s, i + 1]).filter(([s]) => s.width > 0)
    .map(([s, i]) => {
        const colour = typeof s.stroke === 'function' ? s.stroke(u, i) : s.stroke;
        const rgb = [1, 3, 5].map(k => parseInt(colour.slice(k, k + 2), 16));
        const ctx = u.ctx, r = Math.round(3 * devicePixelRatio);
        let drawn = 0;
        u.data[i].forEach((v, at) => {
            if (v === null) return;
            const x = Math.round(u.valToPos(u.data[0][at], 'x', true));
            const y = Math.round(u.valToPos(v, 'y', true));
            const px = ctx.getImageData(x - r, y - r, 2 * r + 1, 2 * r + 1).data;
            for (let p = 0; p < px.length; p += 4) {
                if (Math.abs(px[p] - rgb[0]) + Math.abs(px[p + 1] - rgb[1]) +
                    Math.abs(px[p + 2] - rgb[2]) < 90) { drawn++; return; }
            }
        });
        return [s.label, drawn]; })"""


def test_every_night_with_a_figure_is_drawn_where_its_value_is(browser):
    devtools, _, _ = browser
    for section in (0, 1):
        latency = dict(_chart(devtools, section, 0, DRAWN))
        throughput = dict(_chart(devtools, section, 1, DRAWN))
        expected = NIGHTS - 1  # the failed night has no figures
        assert latency == {name: expected for name, _ in FIGURES[:5]}
        assert throughput == {"send_rate": expected, "receive_rate": expected}


def test_the_change_point_is_marked_with_its_size_at_its_night(browser):
    devtools, _, _ = browser
    found = _chart(devtools, 0, 0, f"""Array.from(u.over.querySelectorAll('.change'), m => ({{
        text: m.textContent, night: m.dataset.night,
        regression: m.classList.contains('regression'), left: parseFloat(m.style.left),
        expected: u.valToPos(u.data[0][{STEP_AT}], 'x')}}))""")
    assert len(found) == 1
    (mark,) = found
    assert (mark["text"], mark["night"], mark["regression"]) == (
        "p99 +30%", night_name(STEP_AT), True)
    assert mark["left"] == pytest.approx(mark["expected"], abs=0.5)
    for section, chart in ((0, 1), (1, 0), (1, 1)):  # no change there
        assert _chart(devtools, section, chart, "u.over.querySelectorAll('.change').length") == 0


def test_bad_nights_and_the_unsteady_night_are_marked(browser):
    devtools, _, _ = browser
    for section in (0, 1):
        for chart in (0, 1):
            marks = _chart(devtools, section, chart, """Array.from(
                u.over.querySelectorAll('.bad'), m => [m.dataset.night, m.dataset.status])""")
            assert sorted(marks) == [[night_name(FAILED_AT), "failed"],
                                     [night_name(PARTIAL_AT), "partial"]]
    ring = _chart(devtools, 0, 0, f"""(() => {{  // the orange ring 4 px from the p99 point
        const x = u.valToPos(u.data[0][{UNSTEADY_AT}], 'x', true);
        const y = u.valToPos(u.data[4][{UNSTEADY_AT}], 'y', true), r = 4 * devicePixelRatio;
        return [[x, y - r], [x, y + r], [x - r, y], [x + r, y]].map(([px, py]) => Array.from(
            u.ctx.getImageData(Math.round(px) - 1, Math.round(py) - 1, 3, 3).data)); }})()""")
    orange = [any(abs(px[k] - 0xE0) + abs(px[k + 1] - 0x8A) + abs(px[k + 2]) < 90
                  for k in range(0, len(px), 4)) for px in ring]
    assert sum(orange) >= 3, ring


def _hover(devtools: DevTools, at: int, click: bool = False) -> dict:
    """Move the mouse onto night `at` of redis' latency chart (optionally click); the
    section's read-out then."""
    point = _chart(devtools, 0, 0, f"""({{x: box.x + u.valToPos(u.data[0][{at}], 'x'),
                                          y: box.y + box.height / 2}})""")
    devtools.mouse("mouseMoved", point["x"], point["y"])
    if click:
        devtools.mouse("mousePressed", point["x"], point["y"], button="left", buttons=1,
                       clickCount=1)
        devtools.mouse("mouseReleased", point["x"], point["y"], button="left", buttons=0,
                       clickCount=1)
    return devtools.evaluate("""(() => {
        const r = document.querySelector('#series-0 .readout');
        return {text: r.textContent, night: r.querySelector('.night b').textContent,
                links: Array.from(r.querySelectorAll('a'), a => a.getAttribute('href')),
                rows: Object.fromEntries(Array.from(r.querySelectorAll('tr'), tr => [
                    tr.cells[0].textContent, Array.from(tr.cells).slice(1).map(
                        c => c.textContent)]))}; })()""")


def test_a_hover_shows_the_nights_figures_and_report_and_a_click_keeps_them(browser):
    devtools, _, _ = browser
    shown = _hover(devtools, STEP_AT)
    assert shown["night"] == night_name(STEP_AT)
    assert shown["links"] == [f"night-{STEP_AT:03d}/report/index.html"]
    value = 400.0 * 1.3 * (1 + 0.02 * math.sin(STEP_AT))
    assert shown["rows"]["p99"][0] == f"{float(f'{value:.4g}'):g} µs"
    assert shown["rows"]["p99"][1].startswith("band ")
    assert set(shown["rows"]) == {name for name, _ in FIGURES}
    assert _hover(devtools, UNSTEADY_AT)["rows"]["p99"][2] == "unsteady"
    assert "failed" in _hover(devtools, FAILED_AT)["text"]

    kept = _hover(devtools, STEP_AT, click=True)
    assert kept["night"] == night_name(STEP_AT) and "kept" in kept["text"]
    assert _hover(devtools, STEP_AT + 3)["night"] == night_name(STEP_AT)
    _hover(devtools, STEP_AT, click=True)  # let go
    assert _hover(devtools, STEP_AT + 3)["night"] == night_name(STEP_AT + 3)
    assert devtools.errors() == []


def test_a_drag_zooms_the_nights_and_the_marks_follow(browser):
    devtools, _, _ = browser
    state = """({min: u.scales.x.min, max: u.scales.x.max,
                 changes: u.over.querySelectorAll('.change').length,
                 bad: Array.from(u.over.querySelectorAll('.bad'), m => m.dataset.night)})"""
    before = _chart(devtools, 0, 0, state)
    box = _chart(devtools, 0, 0, "({x: box.x, y: box.y, width: box.width, height: box.height})")
    y, at = box["y"] + box["height"] / 2, lambda share: box["x"] + share * box["width"]
    devtools.mouse("mousePressed", at(0.05), y, button="left", buttons=1, clickCount=1)
    devtools.mouse("mouseMoved", at(0.3), y, button="left", buttons=1)
    devtools.mouse("mouseMoved", at(0.5), y, button="left", buttons=1)
    devtools.mouse("mouseReleased", at(0.5), y, button="left", buttons=0, clickCount=1)
    zoomed = _chart(devtools, 0, 0, state)
    assert "kept" not in _hover(devtools, 10)["text"]  # a drag keeps no night
    assert before["min"] < zoomed["min"] < zoomed["max"] < before["max"]
    # nights 0 … about 20 stay: the failed and partial nights, not the change at night 25
    assert (zoomed["changes"], zoomed["bad"]) == (0, [night_name(FAILED_AT),
                                                     night_name(PARTIAL_AT)])
    for clicks in (1, 2):  # a double click resets the zoom
        devtools.mouse("mousePressed", at(0.5), y, button="left", buttons=1, clickCount=clicks)
        devtools.mouse("mouseReleased", at(0.5), y, button="left", buttons=0, clickCount=clicks)
    assert _chart(devtools, 0, 0, state) == before
    assert "kept" not in _hover(devtools, STEP_AT)["text"]  # a double click keeps nothing
    assert devtools.errors() == []


def test_a_hostile_report_path_or_night_name_is_text(browser):
    devtools, _, page = browser
    for at in HOSTILE_REPORTS:
        shown = _hover(devtools, at)
        assert shown["night"] == night_name(at)
        assert shown["links"] == [] and "no report" in shown["text"]
    shown = _hover(devtools, HOSTILE_NIGHT)
    assert shown["night"] == night_name(HOSTILE_NIGHT)  # shown as text, not made an element
    assert devtools.evaluate("document.querySelectorAll('img').length") == 0
    assert devtools.errors() == []
    assert devtools.requests() == [page.as_uri()]
