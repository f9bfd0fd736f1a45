"""The history page for a synthetic year: page size and time to drawn in headless Chromium,
the page as the product writes it (uPlot, `write_history_page`) against the same charts
drawn by the run report's own SVG code (orchestrator/reports/svg.py with report.js) and,
given its file, ECharts.

Time to drawn: from the navigation's start until two animation frames after the load
event (script run, layout and the first paint done), in a fresh tab each try, the median
of `--tries`. The series are systems × cases of eight figures each (p50 … max, send and
receive rates), so `--series 40` is five systems × cases; one step change, a failed night
a month, unsteady nights.

    npm pack echarts@6.1.0 && tar -xzf echarts-6.1.0.tgz   # optional, for --echarts
    .venv/bin/python benchmarks/bench_history_page.py [--nights 365] [--series 40] \\
        [--tries 3] [--echarts package/dist/echarts.common.min.js] [--smoke]
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
import tempfile
from datetime import UTC, datetime, timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import common

from sixnines.formats.layout import PAGE_FILE, REPORT_DIR
from sixnines.orchestrator.reports import history_page, html, svg
from sixnines.orchestrator.reports.model import Axis, Band, Figure, Line, Marker
from tests.integration.chromium import CHROMIUM, DevTools

FIGURES = (("p50", 80.0), ("p99", 300.0), ("p99.9", 900.0), ("p99.99", 2500.0),
           ("p99.999", 6000.0), ("max", 15000.0), ("send_rate", 10000.0),
           ("receive_rate", 9990.0))
START = datetime(2025, 11, 27, 2, tzinfo=UTC)
DAY_S = 86400.0
#: two animation frames after the load event: the page's script ran, laid out and painted
FIRST_SCREEN = ("new Promise(done => requestAnimationFrame(() => requestAnimationFrame("
                "() => done(performance.now()))))")
#: painted after the history page drew its last chart (it draws the first screen, then the
#: rest a section per task); null from the other pages, which draw everything at once
ALL_DRAWN = """new Promise(done => (function wait() {
    const main = document.getElementById('history');
    if (!main) done(null);
    else if (!main.dataset.drawn) setTimeout(wait, 20);
    else requestAnimationFrame(() => requestAnimationFrame(() => done(performance.now())));
    })())"""


def synthetic_year(nights: int, series: int) -> dict:
    """A series document as the history writes it: `series` series, `nights` nights."""
    document = {"title": f"synthetic: {nights} nights", "generated": START.isoformat(),
                "series": []}
    for n in range(series):
        group, (figure, base) = divmod(n, len(FIGURES))[0], FIGURES[n % len(FIGURES)]
        step_at = nights * 2 // 3
        values = []
        for i in range(nights):
            level = base * (1.25 if figure == "p99" and i >= step_at else 1.0)
            values.append(None if i % 30 == 17 else level * (1 + 0.05 * math.sin(i * 1.7 + n)))
        document["series"].append({
            "system": f"system-{group // 2}", "case": f"message_size={256 << group % 2}",
            "metric": "latency", "figure": figure,
            "unit": "msg/s" if figure.endswith("rate") else "µs",
            "nights": [{"night": f"{(START + timedelta(days=i)):%Y-%m-%dT%H-%M}",
                        "when": (START + timedelta(days=i)).isoformat(), "value": value,
                        "low": value and value * 0.93, "high": value and value * 1.07,
                        "status": "failed" if value is None else "ok",
                        "unsteady": i % 45 == 4,
                        "report": f"night-{i:03d}/{REPORT_DIR}/{PAGE_FILE}"}
                       for i, value in enumerate(values)],
            "changes": [{"index": step_at, "before": base, "after": base * 1.25,
                         "relative": 0.25, "direction": "regression"}]
            if figure == "p99" else []})
    return document


def uplot_page(document: dict) -> str:
    return history_page.page(document)


def _svg_figure(section: dict, chart: dict, slug: str) -> Figure:
    days = [x / DAY_S for x in section["x"]]
    lines = chart["lines"]
    return Figure(
        slug=slug, title=f"{section['system']} {section['case']}: {chart['title']}",
        x=Axis("days since 1970"), y=Axis(chart["unit"], "log" if chart["log"] else "linear"),
        lines=tuple(Line(line["name"], days, line["value"], line["colour"], "points")
                    for line in lines),
        bands=tuple(Band(line["name"], days, line["low"], line["high"], line["colour"])
                    for line in lines),
        markers=tuple(Marker(days[change["at"]], f"{line['name']} {change['relative']:+.0%}")
                      for line in lines for change in line["changes"]))


def svg_page(document: dict) -> str:
    """The same charts as the run report draws its figures (svg.py, report.js)."""
    figures = [svg.render(_svg_figure(section, chart, f"s{n}-{m}"))
               for n, section in enumerate(history_page.sections(document))
               for m, chart in enumerate(section["charts"])]
    return (f'<!DOCTYPE html><html><head><meta charset="utf-8"><style>'
            f'{html.asset("report.css")}</style></head><body>{"".join(figures)}'
            f'<script>{html.asset("report.js")}</script></body></html>\n')


ECHARTS_SCRIPT = """
for (const section of JSON.parse(document.getElementById('data').textContent)) {
  for (const chart of section.charts) {
    const box = document.createElement('div');
    box.style.cssText = 'width: 1000px; height: 300px';
    document.body.append(box);
    const at = (values) => section.x.map((x, i) => [x * 1000, values[i]]);
    const series = chart.lines.flatMap((line) => [
      {type: 'line', name: line.name + ' low', stack: line.name, symbol: 'none',
       lineStyle: {opacity: 0}, data: at(line.low)},
      {type: 'line', name: line.name + ' band', stack: line.name, symbol: 'none',
       lineStyle: {opacity: 0}, areaStyle: {color: line.colour, opacity: 0.18},
       data: at(line.high.map((h, i) => h === null ? null : h - line.low[i]))},
      {type: 'line', name: line.name, symbolSize: 4, color: line.colour, data: at(line.value),
       markLine: {symbol: 'none', data: line.changes.map((c) => ({xAxis: section.x[c.at] * 1000,
         label: {formatter: line.name + ' ' + Math.round(100 * c.relative) + '%'}}))}}]);
    echarts.init(box).setOption({
      animation: false, title: {text: section.system + ' ' + chart.title},
      tooltip: {trigger: 'axis'}, dataZoom: [{type: 'inside'}], xAxis: {type: 'time'},
      yAxis: {type: chart.log ? 'log' : 'value', scale: true}, series});
  }
}
"""


def echarts_page(document: dict, library: Path) -> str:
    data = history_page.json_for_script(history_page.sections(document))
    return (f'<!DOCTYPE html><html><head><meta charset="utf-8"></head><body>'
            f'<script type="application/json" id="data">{data}</script>'
            f'<script>{library.read_text(encoding="utf-8")}</script>'
            f"<script>{ECHARTS_SCRIPT}</script></body></html>\n")


def time_to_drawn(devtools: DevTools, page: Path) -> tuple[float, float]:
    """Milliseconds from navigating to `page` until its first screen and all of it are
    drawn; a script error or a request leaving the machine (blocked) fails."""
    devtools.events.clear()
    devtools.page("Page.navigate", url=page.as_uri())
    devtools.wait_event("Page.loadEventFired")
    first = devtools.evaluate(FIRST_SCREEN)
    drawn = devtools.evaluate(ALL_DRAWN) or first
    off_machine = [url for url in devtools.requests() if not url.startswith("file:")]
    if errors := devtools.errors() or off_machine:
        raise RuntimeError(f"{page.name}: {errors}")
    return first, drawn


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nights", type=int, default=365)
    parser.add_argument("--series", type=int, default=40, help="series (8 per system × case)")
    parser.add_argument("--tries", type=int, default=3, help="page loads per page, median")
    parser.add_argument("--echarts", type=Path, help="echarts.common.min.js from its npm "
                                                     "package, to measure it too")
    args = common.arguments(parser, {"nights": 20, "series": 16, "tries": 1}, argv)
    if CHROMIUM is None:
        print("needs headless Chromium: apt-get install chromium", file=sys.stderr)
        return 2
    document = synthetic_year(args.nights, args.series)
    pages = {"uPlot (the page)": uplot_page(document), "SVG (svg.py)": svg_page(document)}
    if args.echarts:
        pages["ECharts"] = echarts_page(document, args.echarts)
    print(f"{args.nights} nights × {args.series} series, median of {args.tries} load(s) in "
          f"headless Chromium")
    print(f"{'page':<18} {'KB':>8} {'first screen ms':>16} {'all drawn ms':>13}  "
          "tries (first, all)")
    with tempfile.TemporaryDirectory(prefix="bench-history-") as work:
        paths = {name: Path(work) / f"page-{n}.html" for n, name in enumerate(pages)}
        for name, path in paths.items():
            path.write_text(pages[name], encoding="utf-8")
        times: dict[str, list[tuple[float, float]]] = {name: [] for name in pages}
        devtools = DevTools(Path(work) / "profile", Path(work) / "chromium.log")
        try:
            devtools.block_network()
            for path in paths.values():  # a first load warms the browser for every page
                time_to_drawn(devtools, path)
            for _ in range(args.tries):  # interleaved, so a slow moment hits every page
                for name, path in paths.items():
                    times[name].append(time_to_drawn(devtools, path))
        finally:
            devtools.close()
        figures = {name: (path.stat().st_size / 1024,
                          statistics.median(first for first, _ in times[name]),
                          statistics.median(drawn for _, drawn in times[name]))
                   for name, path in paths.items()}
    for name, (size, first, drawn) in figures.items():
        tries = [[round(first), round(drawn)] for first, drawn in times[name]]
        print(f"{name:<18} {size:>8,.0f} {first:>16,.0f} {drawn:>13,.0f}  {json.dumps(tries)}")
    base = figures["uPlot (the page)"]
    for name, (size, first, drawn) in figures.items():
        if not name.startswith("uPlot"):
            print(f"{name} / uPlot: size {size / base[0]:.2f}x, first screen "
                  f"{first / base[1]:.2f}x, all drawn {drawn / base[2]:.2f}x")
    print("requests off the machine: 0 (every page opens with the network blocked)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
