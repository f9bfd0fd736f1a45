"use strict";
// sixnines history page: draws the sections history_page.py embeds as JSON with uPlot
// (vendor/uplot/). Per section (a system and case) one chart per metric; each figure a
// line with its band; change points, nights of a bad status and unsteady nights marked.
// Hover a night for its figures (the charts of a section share the cursor), click to keep
// them. Every string from the data reaches the page as a text node; a report link only
// from the href history_page.py already checked.
(function () {
  const HEIGHT = 300;
  const compact = new Intl.NumberFormat("en-US", {notation: "compact", maximumSignificantDigits: 3});
  const precise = new Intl.NumberFormat("en-US", {maximumSignificantDigits: 4});
  const sections = JSON.parse(document.getElementById("history-data").textContent);
  const root = document.getElementById("history");
  window.historyCharts = [];

  function element(tag, className, text) {
    const made = document.createElement(tag);
    if (className) made.className = className;
    if (text !== undefined) made.textContent = text;
    return made;
  }

  function day(seconds) {
    return new Date(seconds * 1000).toISOString().replace("T", " ").slice(0, 16) + " UTC";
  }

  // A log axis labels 1, 2 and 5 of each decade only; its other grid lines stay bare.
  function labels(log) {
    return (self, splits) => splits.map((v) => {
      const mantissa = Math.round(v / Math.pow(10, Math.floor(Math.log10(v) + 1e-9)));
      return !log || [1, 2, 5].includes(mantissa) ? compact.format(v) : "";
    });
  }

  // A key per figure; a click hides or shows its line and band.
  function legend(u, chart) {
    const keys = element("div", "legend");
    chart.lines.forEach((line, n) => {
      const key = element("button", "key");
      key.type = "button";
      const swatch = element("i");
      swatch.style.background = line.colour;
      key.append(swatch, line.name);
      key.addEventListener("click", () => {
        const show = !u.series[1 + 3 * n].show;
        for (const i of [1, 2, 3]) u.setSeries(i + 3 * n, {show});
        key.classList.toggle("off", !show);
      });
      keys.append(key);
    });
    return keys;
  }

  function size(relative) {
    return (relative >= 0 ? "+" : "") + precise.format(100 * relative) + "%";
  }

  function figure(value, unit) {
    return value === null ? "–" : precise.format(value) + " " + unit;
  }

  // One row per figure of every chart of the section at night `at`.
  function readout(section, at, kept) {
    const box = section.readout;
    box.replaceChildren();
    const head = element("p", "night");
    head.append(element("b", "", section.night[at]), " · " + day(section.x[at]) + " · ");
    const status = section.status[at];
    head.append(element("span", "status-" + status.replace(/[^a-z]/g, ""), status), " · ");
    const href = section.report[at];
    if (typeof href === "string") {
      const link = element("a", "report", "report");
      link.href = href;
      head.append(link);
    } else {
      head.append(element("span", "note", "no report"));
    }
    if (kept) head.append(element("span", "note", " · kept: click the chart to let go"));
    const table = element("table", "figures");
    for (const chart of section.charts) {
      for (const line of chart.lines) {
        const row = element("tr");
        row.append(element("th", "text", line.name),
                   element("td", "", figure(line.value[at], chart.unit)),
                   element("td", "dim", line.low[at] === null ? "" :
                     "band " + figure(line.low[at], chart.unit) + " – " +
                     figure(line.high[at], chart.unit)),
                   element("td", "warn", line.unsteady.includes(at) ? "unsteady" : ""));
        table.append(row);
      }
    }
    box.append(head, table);
  }

  // Where night x is across the plot (CSS px), or null outside it (zoomed away).
  function place(u, x, width) {
    const left = u.valToPos(x, "x");
    return left >= 0 && left <= width ? left : null;
  }

  // Change points and bad nights as elements over the plot (the test and a reader can
  // find them), unsteady nights as rings on the canvas; redone after every redraw (zoom).
  function marks(u, section, chart) {
    const width = u.bbox.width / uPlot.pxRatio;  // the plot's, without a layout
    u.marks.replaceChildren();
    section.status.forEach((status, at) => {
      const left = status === "ok" ? null : place(u, section.x[at], width);
      if (left === null) return;
      const mark = element("div", "bad", "");
      mark.style.left = left + "px";
      mark.dataset.night = section.night[at];
      mark.dataset.status = status;
      u.marks.append(mark);
    });
    for (const line of chart.lines) {
      for (const change of line.changes) {
        const left = place(u, section.x[change.at], width);
        if (left === null) continue;
        const mark = element("div", "change " + (change.direction === "improvement" ?
          "improvement" : "regression"));
        mark.style.left = left + "px";
        mark.dataset.night = section.night[change.at];
        mark.append(element("span", "", line.name + " " + size(change.relative)));
        u.marks.append(mark);
      }
    }
    const ctx = u.ctx, ring = 4 * devicePixelRatio;
    ctx.save();
    ctx.lineWidth = 1.5 * devicePixelRatio;
    ctx.strokeStyle = "#e08a00";
    chart.lines.forEach((line, n) => {
      if (!u.series[1 + 3 * n].show) return;
      for (const at of line.unsteady) {
        const value = u.data[1 + 3 * n][at];
        if (value === null) continue;
        ctx.beginPath();
        ctx.arc(u.valToPos(section.x[at], "x", true), u.valToPos(value, "y", true), ring,
                0, 2 * Math.PI);
        ctx.stroke();
      }
    });
    ctx.restore();
  }

  function draw(section, chart, key, width) {
    const positive = (values) => chart.log ? values.map((v) => (v > 0 ? v : null)) : values;
    const data = [section.x], series = [{}], bands = [];
    chart.lines.forEach((line, n) => {
      data.push(positive(line.value), positive(line.low), positive(line.high));
      series.push({label: line.name, stroke: line.colour, width: 1.5},
                  {label: line.name + " low", stroke: line.colour, width: 0,
                   points: {show: false}},
                  {label: line.name + " high", stroke: line.colour, width: 0,
                   points: {show: false}});
      bands.push({series: [3 + 3 * n, 2 + 3 * n], fill: line.colour + "2e"});
    });
    const box = element("figure", "history-chart");
    box.append(element("figcaption", "", chart.title));
    section.box.append(box);
    const u = new uPlot({
      width, height: HEIGHT, series, bands,
      legend: {show: false},
      scales: {x: {time: true}, y: chart.log ? {distr: 3, log: 10} : {}},
      axes: [{}, {size: 64, values: labels(chart.log)}],
      tzDate: (seconds) => uPlot.tzDate(new Date(seconds * 1000), "Etc/UTC"),
      cursor: {sync: {key}, drag: {x: true, y: false}},
      hooks: {
        draw: [(self) => marks(self, section, chart)],
        setCursor: [(self) => {
          const at = self.cursor.idx;
          if (section.kept === null && at !== null && at !== undefined) {
            readout(section, at, false);
          }
        }],
      },
    }, data, box);
    box.append(legend(u, chart));
    u.marks = element("div", "marks");
    u.over.append(u.marks);
    u.over.addEventListener("click", () => {
      const at = u.cursor.idx;
      section.kept = section.kept === at || at === null ? null : at;
      if (at !== null) readout(section, at, section.kept !== null);
    });
    marks(u, section, chart);
    return u;
  }

  // A section's charts, its read-out showing the last night.
  function fill(n) {
    const section = sections[n], width = Math.min(1000, root.clientWidth || 1000);
    window.historyCharts[n].charts = section.charts.map((chart) =>
      draw(section, chart, "s" + n, width));
    section.box.append(section.readout);
    if (section.night.length) readout(section, section.night.length - 1, false);
    section.box.style.minHeight = "";
  }

  sections.forEach((section, n) => {
    const box = element("section", "history-section");
    box.id = "series-" + n;
    box.append(element("h2", "", section.system + (section.case ? " · " + section.case : "")));
    if (section.untimed) {
      box.append(element("p", "warn", section.untimed + " night(s) without a readable date " +
                                      "are not shown."));
    }
    box.style.minHeight = (section.charts.length * (HEIGHT + 90) + 200) + "px";
    root.append(box);
    section.box = box;
    section.readout = element("div", "readout");
    section.kept = null;  // the night a click keeps in the read-out (the charts share it)
    window.historyCharts.push({section: box.id, charts: []});
  });
  // The first screen is drawn before the page first shows; the rest one section per task,
  // so a long history neither holds the first paint back nor freezes the page meanwhile.
  // `data-drawn` on the page's <main>: when the last chart was drawn (ms since navigation).
  let next = 0;
  while (next < sections.length && sections[next].box.getBoundingClientRect().top < innerHeight) {
    fill(next++);
  }
  function rest() {
    if (next === sections.length) {
      root.dataset.drawn = String(performance.now());
      return;
    }
    fill(next++);
    setTimeout(rest, 0);
  }
  setTimeout(rest, 0);
})();
