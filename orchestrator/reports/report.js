"use strict";
// sixnines report: x-axis zoom (wheel; drag a range; double-click resets), a hover read-out
// and legend toggles for the charts svg.py draws. The plot area is a nested <svg>: zooming
// narrows its viewBox; the read-out maps path coordinates back to data through the chart's
// data-* axis attributes. Tick rules mirror orchestrator/reports/ticks.py.
(function () {
  const NS = "http://www.w3.org/2000/svg";

  function sig(v, digits) {
    return String(Number(v.toPrecision(digits)));
  }

  function number(v) {
    const m = Math.abs(v);
    for (const [factor, suffix] of [[1e9, "G"], [1e6, "M"], [1e3, "k"]]) {
      if (m >= factor) return sig(v / factor, 3) + suffix;
    }
    return sig(v, 3);
  }

  function precise(v) {
    return Math.abs(v) >= 1000 ? Math.round(v).toLocaleString("en-US") : sig(v, 4);
  }

  function percent(x, step) {
    const digits = Math.max(0, Math.ceil(x - 1e-9) - 2) +
      Math.max(0, Math.ceil(-Math.log10(step) - 1e-9) - 1);
    let text = (100 * (1 - Math.pow(10, -x))).toFixed(Math.min(digits, 9));
    if (text.includes(".")) text = text.replace(/0+$/, "").replace(/\.$/, "");
    return text + "%";
  }

  function linear(lo, hi) {
    const most = 8, span = hi - lo;
    if (span <= 0) return [lo];
    const base = Math.pow(10, Math.floor(Math.log10(span / most)));
    const step = base * [1, 2, 5, 10].find((m) => span / (base * m) <= most);
    const out = [];
    for (let k = Math.ceil(lo / step - 1e-9); k <= Math.floor(hi / step + 1e-9); k++) {
      out.push(Number((k * step).toPrecision(12)));
    }
    return out;
  }

  function logarithmic(lo, hi) {
    const a = Math.log10(lo), b = Math.log10(hi);
    const mantissas = b - a < 3 ? [1, 2, 5] : [1];
    const every = Math.max(1, Math.ceil((b - a) / 8));
    const out = [];
    for (let e = Math.floor(a); e <= Math.ceil(b); e++) {
      if (e % every !== 0) continue;
      for (const m of mantissas) {
        const t = m * Math.pow(10, e);
        if (t >= lo * (1 - 1e-9) && t <= hi * (1 + 1e-9)) out.push(t);
      }
    }
    return out.length >= 2 ? out : linear(lo, hi);
  }

  function ticks(scale, lo, hi) {
    if (scale === "log") return logarithmic(lo, hi).map((v) => [v, number(v)]);
    const values = linear(lo, hi);
    if (scale === "nines") {
      const step = values.length > 1 ? values[1] - values[0] : 1;
      return values.map((v) => [v, percent(v, step)]);
    }
    return values.map((v) => [v, number(v)]);
  }

  function add(parent, tag, attributes) {
    const element = document.createElementNS(NS, tag);
    for (const [key, value] of Object.entries(attributes)) element.setAttribute(key, value);
    parent.append(element);
    return element;
  }

  // Axis value (log10 of the data on a log axis) at area pixel u.
  function axisAt(c, u) {
    return c.x0 + (u / c.w) * (c.x1 - c.x0);
  }

  function drawTicks(c) {
    const a0 = axisAt(c, c.v0), a1 = axisAt(c, c.v1), log = c.xs === "log";
    c.xticks.replaceChildren();
    for (const [value, label] of ticks(c.xs, log ? 10 ** a0 : a0, log ? 10 ** a1 : a1)) {
      const x = c.left + (((log ? Math.log10(value) : value) - a0) / (a1 - a0)) * c.w;
      add(c.xticks, "line", { class: "grid", x1: x, x2: x, y1: c.top, y2: c.top + c.h });
      add(c.xticks, "text", {
        class: "tick", x: x, y: c.top + c.h + 16, "text-anchor": "middle",
      }).textContent = label;
    }
  }

  function view(c, v0, v1) {
    const span = Math.min(c.w, Math.max(c.w / 1000, v1 - v0));
    c.v0 = Math.min(Math.max(0, v0), c.w - span);
    c.v1 = c.v0 + span;
    c.area.setAttribute("viewBox", `${c.v0} 0 ${span} ${c.h}`);
    // text in the data area would stretch with the x zoom: shade labels show unzoomed only
    c.area.classList.toggle("zoomed", span < c.w);
    drawTicks(c);
  }

  function fraction(c, event) {
    const r = c.hit.getBoundingClientRect();
    return Math.min(1, Math.max(0, (event.clientX - r.left) / r.width));
  }

  function parse(c) {
    c.series = Array.from(c.area.querySelectorAll("path.s"), (path) => {
      const numbers = (path.getAttribute("d").match(/-?\d+(?:\.\d+)?/g) || []).map(Number);
      const xs = [], ys = [];
      for (let i = 0; i + 1 < numbers.length; i += 2) {
        xs.push(numbers[i]);
        ys.push(numbers[i + 1]);
      }
      return { path, xs, ys, name: path.dataset.name, colour: path.getAttribute("stroke"),
               right: path.dataset.r === "1" };
    });
  }

  function nearest(xs, u) {
    let lo = 0, hi = xs.length - 1;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (xs[mid] < u) lo = mid + 1; else hi = mid;
    }
    return lo > 0 && u - xs[lo - 1] < xs[lo] - u ? lo - 1 : lo;
  }

  function readout(c, u) {
    if (!c.series) parse(c);
    const a = axisAt(c, u);
    const at = c.xs === "nines" ? percent(a, 0.01) : precise(c.xs === "log" ? 10 ** a : a);
    const head = document.createElement("span");
    head.textContent = `${c.xlabel}: ${at}`;
    const items = [head];
    for (const s of c.series) {
      if (!s.xs.length || s.path.classList.contains("off")) continue;
      const i = nearest(s.xs, u);
      if (Math.abs(s.xs[i] - u) > 0.05 * (c.v1 - c.v0)) continue; // no point near here
      const [y0, y1, scale] = s.right ? [c.y20, c.y21, c.y2s] : [c.y0, c.y1, c.ys];
      const value = y0 + (1 - s.ys[i] / c.h) * (y1 - y0);
      const item = document.createElement("span");
      item.style.color = s.colour;
      item.textContent = `${s.name}: ${precise(scale === "log" ? 10 ** value : value)}`;
      items.push(item);
    }
    c.readout.replaceChildren(...items);
  }

  function setup(chart) {
    const d = chart.dataset, figure = chart.closest("figure");
    const c = {
      xs: d.xs, ys: d.ys, x0: +d.x0, x1: +d.x1, y0: +d.y0, y1: +d.y1,
      y2s: d.y2s, y20: +d.y20, y21: +d.y21,
      left: +d.left, top: +d.top, w: +d.w, h: +d.h, v0: 0, v1: +d.w,
      area: chart.querySelector(".area"), hit: chart.querySelector(".hit"),
      xticks: chart.querySelector(".xticks"), cursor: chart.querySelector(".cursor"),
      selection: chart.querySelector(".selection"), readout: figure.querySelector(".readout"),
      xlabel: chart.querySelector("text.label").textContent, series: null, drag: null,
    };
    const zoomable = d.zoom === "1";
    const x = (f) => c.left + f * c.w;
    c.hit.addEventListener("mousemove", (event) => {
      const f = fraction(c, event);
      c.cursor.setAttribute("x1", x(f));
      c.cursor.setAttribute("x2", x(f));
      c.cursor.setAttribute("visibility", "visible");
      if (c.drag !== null) {
        c.selection.setAttribute("x", x(Math.min(f, c.drag)));
        c.selection.setAttribute("width", Math.abs(f - c.drag) * c.w);
        c.selection.setAttribute("visibility", "visible");
      }
      readout(c, c.v0 + f * (c.v1 - c.v0));
    });
    c.hit.addEventListener("mouseleave", () => {
      c.cursor.setAttribute("visibility", "hidden");
      c.selection.setAttribute("visibility", "hidden");
      c.drag = null;
    });
    if (zoomable) {
      c.hit.addEventListener("wheel", (event) => {
        event.preventDefault();
        const f = fraction(c, event), at = c.v0 + f * (c.v1 - c.v0);
        const span = (c.v1 - c.v0) * (event.deltaY < 0 ? 0.8 : 1.25);
        view(c, at - f * span, at - f * span + span);
      }, { passive: false });
      c.hit.addEventListener("mousedown", (event) => {
        if (event.button !== 0) return;
        c.drag = fraction(c, event);
        event.preventDefault();
      });
      c.hit.addEventListener("mouseup", (event) => {
        if (c.drag === null) return;
        const f = fraction(c, event), lo = Math.min(f, c.drag), hi = Math.max(f, c.drag);
        const span = c.v1 - c.v0;
        c.drag = null;
        c.selection.setAttribute("visibility", "hidden");
        if (hi - lo > 0.01) view(c, c.v0 + lo * span, c.v0 + hi * span);
      });
      c.hit.addEventListener("dblclick", () => view(c, 0, c.w));
    }
    for (const key of figure.querySelectorAll(".legend .key")) {
      key.addEventListener("click", () => {
        const off = key.classList.toggle("off");
        for (const element of c.area.querySelectorAll(`[data-i="${key.dataset.i}"]`)) {
          element.classList.toggle("off", off);
        }
      });
    }
  }

  document.querySelectorAll("svg.chart").forEach(setup);
})();
