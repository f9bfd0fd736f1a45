"""The HTML report in a real browser: headless Chromium (Debian package `chromium`) loads the
page written from synthetic results, with no console error and no network request; every
plot shows data in a screenshot; wheel, drag, double-click, hover and legend clicks work.
Chromium is driven over its DevTools pipe (tests/integration/chromium.py).
"""

from __future__ import annotations

import base64
import json

import pytest

from sixnines.orchestrator.reports import write_reports
from sixnines.orchestrator.reports.svg import AREA_W
from tests.integration.chromium import CHROMIUM, DevTools, ink
from tests.test_reports_html import parsed, synthetic_results

pytestmark = [
    pytest.mark.integration,
    pytest.mark.timeout(300),
    pytest.mark.skipif(CHROMIUM is None, reason="needs headless Chromium: apt-get install "
                                                "chromium (deploy/setup.sh --test)"),
]


@pytest.fixture(scope="module")
def browser(tmp_path_factory):
    """Chromium with the report page loaded; the module's tests share it, in order."""
    base = tmp_path_factory.mktemp("browser")
    results, summaries = synthetic_results(base)
    page = write_reports(results, parsed(summaries))
    devtools = DevTools(base / "profile", base / "chromium.log")
    try:
        devtools.page("Page.navigate", url=page.as_uri())
        devtools.wait_event("Page.loadEventFired")
        yield devtools, base
    finally:
        devtools.close()


def test_the_page_loads_without_errors_or_network(browser):
    devtools, _ = browser
    assert devtools.evaluate("document.querySelectorAll('svg.chart').length") >= 10
    assert devtools.errors() == []
    assert all(url.startswith(("file:", "data:", "about:")) for url in devtools.requests())


def test_every_plot_shows_data_in_a_screenshot(browser):
    devtools, base = browser
    shot = devtools.screenshot(base / "report.png")
    areas = devtools.evaluate("""Array.from(document.querySelectorAll('svg.chart'), c => {
        const r = c.querySelector('.hit').getBoundingClientRect();
        return {id: c.closest('figure').id, x: r.x + scrollX, y: r.y + scrollY,
                width: r.width, height: r.height}; })""")
    blank = []
    for area in areas:
        clip = {"x": area["x"] + 3, "y": area["y"] + 3, "width": area["width"] - 6,
                "height": area["height"] - 6, "scale": 0.5}
        data = devtools.page("Page.captureScreenshot", format="png", clip=clip,
                             captureBeyondViewport=True)["data"]
        share = ink(base64.b64decode(data))
        if share < 0.002:  # a blank area has none; one line across it ≈ 0.005
            blank.append((area["id"], share))
    assert not blank, f"plots without data on screen: {blank} (see {shot})"
    assert devtools.errors() == []


def _scroll_to(devtools: DevTools, selector: str) -> dict:
    """Bring a chart into the viewport; its data area's rectangle there."""
    return devtools.evaluate(f"""(() => {{
        const c = document.querySelector({json.dumps(selector)});
        c.scrollIntoView({{block: 'center'}});
        const r = c.querySelector('.hit').getBoundingClientRect();
        return {{x: r.x, y: r.y, width: r.width, height: r.height}}; }})()""")


def _state(devtools: DevTools, selector: str) -> dict:
    return devtools.evaluate(f"""(() => {{
        const c = document.querySelector({json.dumps(selector)});
        const f = c.closest('figure');
        return {{view: c.querySelector('.area').getAttribute('viewBox'),
                ticks: Array.from(c.querySelectorAll('.xticks text'), t => t.textContent),
                readout: f.querySelector('.readout').textContent,
                off: f.querySelectorAll('.area .off').length}}; }})()""")


def test_zoom_hover_and_legend_work(browser):
    devtools, _ = browser
    chart = "#fig-run-01-tcp-message_size_64-latency svg.chart"
    box = _scroll_to(devtools, chart)
    y = box["y"] + box["height"] / 2
    at = lambda share: box["x"] + share * box["width"]  # noqa: E731
    before = _state(devtools, chart)
    assert before["view"].split()[2] == str(AREA_W)

    devtools.mouse("mouseMoved", at(0.5), y)
    hovered = _state(devtools, chart)["readout"]
    assert "message number" in hovered and "latency mean:" in hovered

    devtools.mouse("mouseWheel", at(0.5), y, deltaX=0, deltaY=-300)
    wheeled = _state(devtools, chart)
    assert float(wheeled["view"].split()[2]) < AREA_W and wheeled["ticks"] != before["ticks"]

    devtools.mouse("mousePressed", at(0.3), y, button="left", buttons=1, clickCount=1)
    devtools.mouse("mouseMoved", at(0.45), y, button="left", buttons=1)
    devtools.mouse("mouseMoved", at(0.6), y, button="left", buttons=1)
    devtools.mouse("mouseReleased", at(0.6), y, button="left", buttons=0, clickCount=1)
    dragged = _state(devtools, chart)
    assert float(dragged["view"].split()[2]) == pytest.approx(
        0.3 * float(wheeled["view"].split()[2]), rel=0.05)

    for clicks in (1, 2):  # a double click resets the zoom
        devtools.mouse("mousePressed", at(0.5), y, button="left", buttons=1, clickCount=clicks)
        devtools.mouse("mouseReleased", at(0.5), y, button="left", buttons=0, clickCount=clicks)
    assert _state(devtools, chart)["view"] == before["view"]

    key = devtools.evaluate(f"""(() => {{
        const k = document.querySelector({json.dumps(chart)}).closest('figure')
            .querySelector('.legend .key');
        const r = k.getBoundingClientRect(); return {{x: r.x + 5, y: r.y + r.height / 2}}; }})()""")
    devtools.mouse("mousePressed", key["x"], key["y"], button="left", buttons=1, clickCount=1)
    devtools.mouse("mouseReleased", key["x"], key["y"], button="left", buttons=0, clickCount=1)
    assert _state(devtools, chart)["off"] == 3  # the band and its two edges hidden
    assert devtools.errors() == []


def test_a_shaped_run_reads_rates_off_its_timeline_s_right_hand_axis(browser):
    """The timeline: latency on the left axis, the received and intended rates on the
    right; hovering reads each line off its own axis (the synthetic p99 is 150 µs there,
    the intended rate 1,000 msg/s and the received 2,000)."""
    devtools, _ = browser
    chart = "#fig-run-03-zmq-message_size_64-timeline svg.chart"
    box = _scroll_to(devtools, chart)
    devtools.mouse("mouseMoved", box["x"] + 0.25 * box["width"], box["y"] + box["height"] / 2)
    items = devtools.evaluate(f"""Array.from(document.querySelector({json.dumps(chart)})
        .closest('figure').querySelectorAll('.readout span'), s => s.textContent)""")
    read = dict(item.split(": ", 1) for item in items[1:])
    number = lambda text: float(text.replace(",", "").replace("k", "e3"))  # noqa: E731
    assert number(read["intended msg/s"]) == pytest.approx(1000, rel=0.02), items
    assert number(read["received msg/s"]) == pytest.approx(2000, rel=0.02), items
    assert number(read["p99"]) == pytest.approx(150, rel=0.02), items
    assert devtools.errors() == []


def test_every_chart_takes_hover_and_wheel_without_errors(browser):
    devtools, _ = browser
    ids = devtools.evaluate("Array.from(document.querySelectorAll('figure.plot'), f => f.id)")
    for ident in ids:
        chart = f"#{ident} svg.chart"
        box = _scroll_to(devtools, chart)
        x, y = box["x"] + box["width"] * 0.7, box["y"] + box["height"] / 2
        devtools.mouse("mouseMoved", x, y)
        devtools.mouse("mouseWheel", x, y, deltaX=0, deltaY=-200)
        devtools.mouse("mouseMoved", x - 20, y)
        readout = _state(devtools, chart)["readout"]
        assert readout, f"{ident}: no hover read-out"
        if ident.startswith("fig-nines"):
            assert readout.startswith("percentile: ") and "%" in readout
    assert devtools.errors() == []


def test_a_fault_s_label_shows_unzoomed_only(browser):
    """Text in the data area stretches with the x zoom: a fault's label is hidden while
    zoomed, its shade (and the label on hover) stays."""
    devtools, _ = browser
    chart = "#fig-run-03-zmq-message_size_64-timeline svg.chart"
    shown = f"""getComputedStyle(document.querySelector(
        {json.dumps(chart + " .shade-label")})).display"""
    box = _scroll_to(devtools, chart)
    x, y = box["x"] + box["width"] * 0.45, box["y"] + box["height"] / 2

    def reset() -> None:  # a double click (an earlier test left it zoomed)
        for clicks in (1, 2):
            devtools.mouse("mousePressed", x, y, button="left", buttons=1, clickCount=clicks)
            devtools.mouse("mouseReleased", x, y, button="left", buttons=0, clickCount=clicks)

    reset()
    assert devtools.evaluate(shown) != "none"
    devtools.mouse("mouseWheel", x, y, deltaX=0, deltaY=-300)
    assert devtools.evaluate(shown) == "none"
    reset()
    assert devtools.evaluate(shown) != "none"
    assert devtools.errors() == []


def test_the_summary_table_fits_a_1400_px_page(browser):
    """Every column of the summary table, the send rate included, is on the page at
    1400 px: no scroll bar hides any of it."""
    devtools, _ = browser
    devtools.page("Emulation.setDeviceMetricsOverride", width=1400, height=900,
                  deviceScaleFactor=1, mobile=False)
    try:
        found = devtools.evaluate("""(() => {
            const tables = Array.from(document.querySelectorAll('#summary .scroll'));
            const send = Array.from(document.querySelectorAll('#summary th'))
                .filter(th => th.textContent === 'send msg/s');
            return {overflow: tables.map(t => t.scrollWidth - t.clientWidth),
                    send: send.map(th => th.getBoundingClientRect().right),
                    page: document.documentElement.clientWidth}; })()""")
    finally:
        devtools.page("Emulation.setDeviceMetricsOverride", width=1200, height=900,
                      deviceScaleFactor=1, mobile=False)
    assert found["overflow"] and all(extra <= 0 for extra in found["overflow"]), found
    assert found["send"] and all(right <= found["page"] for right in found["send"]), found
    assert devtools.errors() == []


def test_the_setup_shows_what_each_system_ran_with(browser):
    """The Setup section, as the browser renders it: a column per system, each fact
    visible (laid out, not hidden) and on the page at 1200 px."""
    devtools, _ = browser
    found = devtools.evaluate("""(() => {
        const section = document.querySelector('#setup');
        const rect = section.getBoundingClientRect();
        const rows = Array.from(section.querySelectorAll('tbody tr'), tr =>
            [tr.dataset.fact, ...Array.from(tr.querySelectorAll('td'), td => td.innerText)]);
        const cells = Array.from(section.querySelectorAll('td'), td => td.getBoundingClientRect());
        return {systems: Array.from(section.querySelectorAll('thead th'), th => th.innerText),
                rows: Object.fromEntries(rows.map(([fact, ...texts]) => [fact, texts])),
                shown: rect.height > 0 && cells.every(r => r.width > 0 && r.height > 0),
                nav: Array.from(document.querySelectorAll('nav a'), a => a.innerText)}; })()""")
    assert found["shown"], found
    assert found["systems"][1:3] == ["tcp", "zmq"]
    rows = found["rows"]
    assert rows["broker"][0] == "builtin (sixnines' own, for tcp) on local"
    assert rows["driver"][:2] == ["tcp: nodelay true", "zmq: hwm 1000"]
    assert rows["machines"][0] == "local: Test CPU 9000, 48 CPUs, kernel 6.1.0-test, 64 GB"
    assert rows["placement"][0] == "broker on local; local: producer-0, consumer-0"
    assert rows["CPU placement"][0].startswith("host local: producer-0 on CPU 1")
    assert rows["sixnines"][0] == "9.9.9 (Python 3.11.7)"
    assert "Setup" in found["nav"]
    assert devtools.errors() == []
