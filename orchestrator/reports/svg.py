"""A `Figure` as an inline SVG chart (with its HTML legend), drawn here in Python.

The data area is a nested <svg> whose viewBox report.js narrows to zoom the x axis, so a
zoom needs no re-plotting: strokes keep their width (non-scaling-stroke) and the hover
read-out maps path coordinates back to data through the axis attributes on the chart.
Every string from data goes through `html.escape`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from html import escape

import numpy as np

from sixnines.orchestrator.reports.model import Band, Figure, Line, Scale, Shade, finite
from sixnines.orchestrator.reports.ticks import ticks

WIDTH, HEIGHT = 900, 360
LEFT, RIGHT, TOP, BOTTOM = 70, 34, 10, 46
AREA_W, AREA_H = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM
#: The right margin of a figure with a right-hand axis (its ticks and label).
RIGHT_AXIS = 76
# Points per path: a 10M-message run must not make a 100 MB page. Decimation keeps each
# bucket's min and max, so peaks survive; the .dat files hold every point.
MAX_POINTS = 4000


def _axis(scale: Scale, value: float) -> float:
    return math.log10(value) if scale == "log" else value


class _Map:
    """Data value → pixel along one axis of the data area."""

    def __init__(self, scale: Scale, lo: float, hi: float, size: float, flip: bool):
        self.scale, self.size, self.flip = scale, size, flip
        self.a0, self.a1 = _axis(scale, lo), _axis(scale, hi)

    def __call__(self, value: float) -> float:
        share = (_axis(self.scale, value) - self.a0) / ((self.a1 - self.a0) or 1.0)
        return self.size * (1 - share if self.flip else share)


def _drawable(values: Sequence[float | None], scale: Scale) -> np.ndarray:
    """Floats with NaN wherever the axis cannot show the value (missing, or ≤ 0 on log)."""
    return np.array([v if finite(v, scale) else np.nan for v in values], dtype=float)


def _decimate(xs: np.ndarray, ys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """At most MAX_POINTS points: each bucket's lowest and highest point, in order."""
    if len(xs) <= MAX_POINTS:
        return xs, ys
    keep_x, keep_y = [], []
    for bucket in np.array_split(np.arange(len(xs)), MAX_POINTS // 2):
        segment = ys[bucket]
        if np.isnan(segment).all():
            keep_x.append(xs[bucket[0]])
            keep_y.append(np.nan)
            continue
        for index in sorted({int(np.nanargmin(segment)), int(np.nanargmax(segment))}):
            keep_x.append(xs[bucket[index]])
            keep_y.append(segment[index])
    return np.array(keep_x), np.array(keep_y)


def _path(xs: np.ndarray, ys: np.ndarray, mx: _Map, my: _Map) -> str:
    """SVG path data; a missing point starts a new sub-path (a gap)."""
    parts, pen_down = [], False
    for x, y in zip(xs, ys, strict=True):
        if math.isnan(x) or math.isnan(y):
            pen_down = False
            continue
        parts.append(f"{'L' if pen_down else 'M'}{mx(x):.2f} {my(y):.2f}")
        pen_down = True
    return "".join(parts)


def _steps(line: Line) -> tuple[list[float | None], list[float | None]]:
    """Histogram bins as a staircase: each count held from its left edge to its right."""
    xs: list[float | None] = []
    ys: list[float | None] = []
    for left, right, count in zip(line.xs[:-1], line.xs[1:], line.ys, strict=False):
        xs += [left, right]
        ys += [count, count]
    return xs, ys


def _line(index: int, line: Line, fig: Figure, mx: _Map, my: _Map) -> str:
    xs, ys = _steps(line) if line.style == "steps" else (line.xs, line.ys)
    y_axis = fig.y2 if line.right and fig.y2 is not None else fig.y
    x, y = _decimate(_drawable(xs, fig.x.scale), _drawable(ys, y_axis.scale))
    dash = ' stroke-dasharray="7 4"' if line.dashed else ""
    stroke = "none" if line.style == "markers" else line.colour
    right = ' data-r="1"' if line.right else ""
    out = [f'<path class="s" data-i="{index}" data-name="{escape(line.name)}"{right} '
           f'd="{_path(x, y, mx, my)}" stroke="{stroke}"{dash}/>']
    if line.style in ("points", "markers"):
        out += [f'<circle data-i="{index}" cx="{mx(px):.2f}" cy="{my(py):.2f}" r="3.5" '
                f'fill="{line.colour}"/>'
                for px, py in zip(x, y, strict=True) if not (math.isnan(px) or math.isnan(py))]
    return "".join(out)


def _band(index: int, band: Band, fig: Figure, mx: _Map, my: _Map) -> str:
    """The filled range, plus its two edges as named paths so the read-out shows them."""
    xs = _drawable(band.xs, fig.x.scale)
    lo, hi = _drawable(band.lo, fig.y.scale), _drawable(band.hi, fig.y.scale)
    if len(xs) > MAX_POINTS:  # each bucket's lowest low and highest high
        buckets = np.array_split(np.arange(len(xs)), MAX_POINTS)
        xs = np.array([xs[b[0]] for b in buckets])
        lo = np.array([np.nan if np.isnan(lo[b]).all() else np.nanmin(lo[b]) for b in buckets])
        hi = np.array([np.nan if np.isnan(hi[b]).all() else np.nanmax(hi[b]) for b in buckets])
    fills = []
    valid = ~(np.isnan(xs) | np.isnan(lo) | np.isnan(hi))
    for run in np.split(np.arange(len(xs)), np.flatnonzero(np.diff(valid.astype(int))) + 1):
        if len(run) and valid[run[0]]:
            top = _path(xs[run], hi[run], mx, my)
            bottom = _path(xs[run][::-1], lo[run][::-1], mx, my).replace("M", "L", 1)
            fills.append(f"{top}{bottom}Z")
    name = escape(band.name)
    return (f'<path class="band" data-i="{index}" d="{"".join(fills)}" fill="{band.colour}"/>'
            f'<path class="s edge" data-i="{index}" data-name="{name} max" '
            f'd="{_path(xs, hi, mx, my)}" stroke="{band.colour}"/>'
            f'<path class="s edge" data-i="{index}" data-name="{name} min" '
            f'd="{_path(xs, lo, mx, my)}" stroke="{band.colour}"/>')


def _x_ticks(fig: Figure, mx: _Map) -> str:
    (lo, hi), out = fig.extent[0], []
    for value, label in ticks(fig.x.scale, lo, hi):
        x = LEFT + mx(value)
        out.append(f'<line class="grid" x1="{x:.2f}" x2="{x:.2f}" y1="{TOP}" '
                   f'y2="{TOP + AREA_H}"/><text class="tick" x="{x:.2f}" '
                   f'y="{TOP + AREA_H + 16}" text-anchor="middle">{escape(label)}</text>')
    return "".join(out)


def _y_ticks(fig: Figure, my: _Map) -> str:
    (lo, hi), out = fig.extent[1], []
    for value, label in ticks(fig.y.scale, lo, hi):
        y = TOP + my(value)
        out.append(f'<line class="grid" x1="{LEFT}" x2="{LEFT + _area_w(fig)}" y1="{y:.2f}" '
                   f'y2="{y:.2f}"/><text class="tick" x="{LEFT - 6}" y="{y + 4:.2f}" '
                   f'text-anchor="end">{escape(label)}</text>')
    return "".join(out)


def _right_axis(fig: Figure, my2: _Map) -> str:
    """The right-hand axis' ticks (no grid: the left axis has it) and label."""
    if fig.y2 is None or fig.extent_y2 is None:
        return ""
    edge, (lo, hi) = LEFT + _area_w(fig), fig.extent_y2
    out = [f'<text class="tick" x="{edge + 6}" y="{TOP + my2(value) + 4:.2f}" '
           f'text-anchor="start">{escape(label)}</text>'
           for value, label in ticks(fig.y2.scale, lo, hi)]
    out.append(f'<text class="label" transform="translate({WIDTH - 8} {TOP + AREA_H / 2}) '
               f'rotate(90)" text-anchor="middle">{escape(fig.y2.label)}</text>')
    return "".join(out)


def _area_w(fig: Figure) -> int:
    """The data area's width: narrower beside a right-hand axis."""
    return WIDTH - LEFT - (RIGHT_AXIS if fig.y2 is not None else RIGHT)


def _legend(fig: Figure) -> str:
    keys = [(i, f"{b.name} min–max", b.colour) for i, b in enumerate(fig.bands)]
    keys += [(len(fig.bands) + i, line.name,
              f"repeating-linear-gradient(90deg, {line.colour} 0 6px, transparent 6px 9px)"
              if line.dashed else line.colour) for i, line in enumerate(fig.lines)]
    items = "".join(f'<button type="button" class="key" data-i="{i}">'
                    f'<i style="background:{paint}"></i>{escape(name)}</button>'
                    for i, name, paint in keys)
    return f'<div class="legend">{items}</div>'


def _axis_attributes(fig: Figure) -> str:
    """What report.js needs to map pixels back to data and to redraw the x ticks."""
    (x0, x1), (y0, y1) = fig.extent
    return (f'data-xs="{fig.x.scale}" data-x0="{_axis(fig.x.scale, x0):.17g}" '
            f'data-x1="{_axis(fig.x.scale, x1):.17g}" data-ys="{fig.y.scale}" '
            f'data-y0="{_axis(fig.y.scale, y0):.17g}" data-y1="{_axis(fig.y.scale, y1):.17g}" '
            f'data-left="{LEFT}" data-top="{TOP}" data-w="{_area_w(fig)}" data-h="{AREA_H}" '
            f'data-zoom="{"1" if fig.zoomable else "0"}"{_right_attributes(fig)}')


def _right_attributes(fig: Figure) -> str:
    """The right-hand axis' scale and range, for the read-out of its lines."""
    if fig.y2 is None or fig.extent_y2 is None:
        return ""
    lo, hi = fig.extent_y2
    return (f' data-y2s="{fig.y2.scale}" data-y20="{_axis(fig.y2.scale, lo):.17g}" '
            f'data-y21="{_axis(fig.y2.scale, hi):.17g}"')


def _shade(shade: Shade, mx: _Map) -> str:
    """A shaded stretch of the data area, its label at the top (and on hover)."""
    x0, x1 = mx(shade.x0), mx(shade.x1)
    label = escape(shade.label)
    return (f'<rect class="shade" x="{x0:.2f}" y="0" width="{max(x1 - x0, 1.0):.2f}" '
            f'height="{AREA_H}"><title>{label}</title></rect>'
            f'<text class="shade-label" x="{x0 + 3:.2f}" y="12">{label}</text>')


def render(fig: Figure) -> str:
    """The figure as an HTML fragment: title, chart, legend, caption, hover read-out."""
    (x0, x1), (y0, y1) = fig.extent
    area_w = _area_w(fig)
    mx = _Map(fig.x.scale, x0, x1, area_w, flip=False)
    my = _Map(fig.y.scale, y0, y1, AREA_H, flip=True)
    my2 = my if fig.y2 is None or fig.extent_y2 is None else \
        _Map(fig.y2.scale, *fig.extent_y2, AREA_H, flip=True)
    series = [_band(i, b, fig, mx, my) for i, b in enumerate(fig.bands)]
    series += [_line(len(fig.bands) + i, line, fig, mx, my2 if line.right else my)
               for i, line in enumerate(fig.lines)]
    markers = [f'<line class="marker" x1="{mx(m.x):.2f}" x2="{mx(m.x):.2f}" y1="0" '
               f'y2="{AREA_H}"><title>{escape(m.label)}</title></line>'
               for m in fig.markers if finite(m.x, fig.x.scale)]
    shades = [_shade(shade, mx) for shade in fig.shades
              if finite(shade.x0, fig.x.scale) and finite(shade.x1, fig.x.scale)]
    hint = ("wheel: zoom · drag: zoom to a range · double-click: reset"
            if fig.zoomable else "")
    caption = " ".join(part for part in (escape(fig.caption), hint) if part)
    return (
        f'<figure class="plot" id="fig-{fig.slug}"><figcaption>{escape(fig.title)}'
        f'</figcaption><svg class="chart" viewBox="0 0 {WIDTH} {HEIGHT}" '
        f'role="img" aria-label="{escape(fig.title)}" {_axis_attributes(fig)}>'
        f'<g class="yticks">{_y_ticks(fig, my)}{_right_axis(fig, my2)}</g>'
        f'<g class="xticks">{_x_ticks(fig, mx)}</g>'
        f'<svg class="area" x="{LEFT}" y="{TOP}" width="{area_w}" height="{AREA_H}" '
        f'viewBox="0 0 {area_w} {AREA_H}" preserveAspectRatio="none">'
        f'{"".join(shades)}{"".join(series)}{"".join(markers)}</svg>'
        f'<rect class="frame" x="{LEFT}" y="{TOP}" width="{area_w}" height="{AREA_H}"/>'
        f'<text class="label" x="{LEFT + area_w / 2}" y="{HEIGHT - 6}" '
        f'text-anchor="middle">{escape(fig.x.label)}</text>'
        f'<text class="label" transform="translate(14 {TOP + AREA_H / 2}) rotate(-90)" '
        f'text-anchor="middle">{escape(fig.y.label)}</text>'
        f'<line class="cursor" y1="{TOP}" y2="{TOP + AREA_H}" visibility="hidden"/>'
        f'<rect class="selection" y="{TOP}" height="{AREA_H}" width="0" visibility="hidden"/>'
        f'<rect class="hit" x="{LEFT}" y="{TOP}" width="{area_w}" height="{AREA_H}"/>'
        f'</svg>{_legend(fig)}'
        f'<p class="caption">{caption}</p><div class="readout"></div></figure>'
    )
