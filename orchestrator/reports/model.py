"""What a plot is, independent of how it is drawn.

The HTML page (svg.py) and the gnuplot files (gnuplot.py) render the same `Figure`, so the
interactive plot and the one a user regenerates with gnuplot cannot disagree on data or
axes.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal, TypeGuard

Scale = Literal["linear", "log", "nines"]
Style = Literal["line", "steps", "points", "markers"]  # points: joined; markers: alone

# Distinguishable on white and in print; a run keeps its colour across the page.
PALETTE = ("#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#17becf", "#8c564b",
           "#e377c2", "#7f7f7f", "#bcbd22")


def colour(index: int) -> str:
    return PALETTE[index % len(PALETTE)]


@dataclass(frozen=True)
class Axis:
    """`nines` is linear in −log10(1 − p) (the data already hold that) and is labelled in
    percent, so 90, 99, 99.9 … % are equally spaced."""

    label: str
    scale: Scale = "linear"


@dataclass(frozen=True)
class Line:
    """`steps`: a histogram; xs are the bin edges, ys the counts (one fewer than xs).
    Missing values (None / NaN) leave a gap."""

    name: str
    xs: Sequence[float | None]
    ys: Sequence[float | None]
    colour: str
    style: Style = "line"
    dashed: bool = False
    right: bool = False  # drawn against the figure's right-hand axis (`Figure.y2`)


@dataclass(frozen=True)
class Band:
    """A filled range between `lo` and `hi` (min … max over a window); shown as
    "<name> min–max", its edges as "<name> min" and "<name> max"."""

    name: str
    xs: Sequence[float | None]
    lo: Sequence[float | None]
    hi: Sequence[float | None]
    colour: str


@dataclass(frozen=True)
class Marker:
    """A vertical line at x (a latency mode, a hump)."""

    x: float
    label: str


@dataclass(frozen=True)
class Shade:
    """A stretch of x shaded and labelled (a fault's window)."""

    x0: float
    x1: float
    label: str


@dataclass(frozen=True)
class Figure:
    """`slug` names the .dat/.gp files and the HTML anchor, so it is made of safe characters
    only (see `slugify`). `zoomable`: markers (circles) of few-point plots would be
    distorted by the x-only zoom, and such plots have no peak to zoom into."""

    slug: str
    title: str
    x: Axis
    y: Axis
    lines: tuple[Line, ...] = ()
    bands: tuple[Band, ...] = ()
    markers: tuple[Marker, ...] = ()
    shades: tuple[Shade, ...] = ()
    zoomable: bool = True
    caption: str = ""
    y2: Axis | None = None  # a right-hand axis for the lines marked `right`
    extent: tuple[tuple[float, float], tuple[float, float]] = field(init=False)
    extent_y2: tuple[float, float] | None = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "extent", (_range(self, "x"), _range(self, "y")))
        object.__setattr__(self, "extent_y2", _range(self, "y2") if self.y2 else None)

    @property
    def series(self) -> tuple[Line | Band, ...]:
        """The bands, then the lines: the order the renderers draw and number them in."""
        return (*self.bands, *self.lines)


def finite(value: float | None, scale: Scale) -> TypeGuard[float]:
    """Whether a value can be drawn on an axis of `scale` (log axes cannot show ≤ 0)."""
    if value is None or not math.isfinite(value):
        return False
    return value > 0 if scale == "log" else True


def _values(figure: Figure, which: str) -> list[float]:
    scale = getattr(figure, which).scale
    values: list[float | None] = []
    for line in figure.lines:
        if which == "x" or line.right == (which == "y2"):
            values.extend(line.xs if which == "x" else line.ys)
    for band in figure.bands:
        values.extend(band.xs if which == "x" else [*band.lo, *band.hi])
    if which == "x":
        values.extend(marker.x for marker in figure.markers)
        values.extend(edge for shade in figure.shades for edge in (shade.x0, shade.x1))
    if which == "y2":
        values = [v for line in figure.lines if line.right for v in line.ys]
    return [v for v in values if finite(v, scale)]


def _range(figure: Figure, which: str) -> tuple[float, float]:
    """The axis range both renderers use, in data units. y: whole decades on a log axis,
    from 0 for non-negative data (counts, rates). x: the nines axis from 0 to a whole nine;
    otherwise the data's own span (a swept 64 B … 1 KB is not stretched to 10 B … 10 KB)
    with a small margin so end points stay inside the frame."""
    scale = getattr(figure, which).scale
    values = _values(figure, which)
    if not values:
        return (1.0, 10.0) if scale == "log" else (0.0, 1.0)
    lo, hi = min(values), max(values)
    if scale == "nines":
        return 0.0, max(1.0, math.ceil(hi))
    if scale == "log":
        lo_exp, hi_exp = math.log10(lo), math.log10(hi)
        if which != "x" or hi_exp == lo_exp:
            lo_exp, hi_exp = math.floor(lo_exp), max(math.ceil(hi_exp), math.floor(lo_exp) + 1)
            return 10.0 ** lo_exp, 10.0 ** hi_exp
        pad = 0.03 * (hi_exp - lo_exp)
        return 10.0 ** (lo_exp - pad), 10.0 ** (hi_exp + pad)
    if which != "x" and lo >= 0:
        return 0.0, hi * 1.05 or 1.0
    span = hi - lo or abs(hi) or 1.0
    pad = (0.05 if which != "x" else 0.02) * span
    return lo - pad, hi + pad


def slugify(text: str) -> str:
    """A file-name-safe form of user text (scenario and run names): [A-Za-z0-9._-] only, so
    it cannot climb out of the report directory or break a gnuplot string."""
    safe = "".join(c if c.isascii() and (c.isalnum() or c in "._-") else "_" for c in text)
    return safe.strip("._") or "plot"
