"""A `Figure` as a gnuplot data file and script, for users who redraw or restyle plots.

`<slug>.dat` holds every point (the page decimates long series, these files do not), one
block per series; `<slug>.gp` plots it on the page's axes and ranges, the page's caption
in its opening comment (what the plot shows; a backlog's verdict in words). `gnuplot <slug>.gp`
writes `<slug>.png` beside the script from any working directory (the script finds its
own directory through ARG0).
"""

from __future__ import annotations

import math
import textwrap
from collections.abc import Iterable, Sequence
from pathlib import Path

from sixnines.formats.atomic import write_atomically
from sixnines.orchestrator.reports.model import Axis, Band, Figure, Line
from sixnines.orchestrator.reports.ticks import ticks


def _quote(text: str) -> str:
    """A gnuplot single-quoted string: only '' is special there; newlines would end the
    command, so user text loses its control characters."""
    clean = "".join(c if c.isprintable() else " " for c in text)
    return "'" + clean.replace("'", "''") + "'"


def _comment(text: str) -> str:
    return "".join(c if c.isprintable() else " " for c in text)


def _number(value: float | None) -> str | None:
    if value is None or not math.isfinite(value):
        return None
    return f"{value:.10g}"


def _rows(columns: Sequence[Sequence[float | None]]) -> Iterable[str]:
    """Data rows; a missing value ends the line there (one blank line: a gap in gnuplot,
    two would start a new block)."""
    gap = True
    for values in zip(*columns, strict=False):
        cells = [cell for value in values if (cell := _number(value)) is not None]
        if len(cells) < len(values):
            if not gap:
                yield ""
            gap = True
            continue
        yield " ".join(cells)
        gap = False


def _columns(series: Line | Band) -> tuple[str, Sequence[Sequence[float | None]]]:
    if isinstance(series, Band):
        return "x lo hi", (series.xs, series.lo, series.hi)
    if series.style == "steps":  # gnuplot `steps` holds each y until the next x
        return "edge count", (series.xs, [*series.ys, series.ys[-1] if series.ys else None])
    return "x y", (series.xs, series.ys)


def data_file(figure: Figure) -> str:
    lines = [f"# sixnines: {_comment(figure.title)}",
             f"# x: {_comment(figure.x.label)}   y: {_comment(figure.y.label)}"]
    if figure.x.scale == "nines":
        lines.append("# x is the percentile as nines: -log10(1 - p) (1 = 90%, 3 = 99.9%)")
    for index, series in enumerate(figure.series):
        header, columns = _columns(series)
        if index:
            lines += ["", ""]
        lines += [f"# block {index}: {_comment(series.name)}", f"# {header}", *_rows(columns)]
    return "\n".join(lines) + "\n"


def _axis_commands(axis: Axis, name: str, extent: tuple[float, float]) -> list[str]:
    lo, hi = extent
    commands = [f"set {name}label {_quote(axis.label)}", f"set {name}range [{lo:.10g}:{hi:.10g}]"]
    if axis.scale == "log":
        commands.append(f"set logscale {name} 10")
    elif axis.scale == "nines":  # tic labels are format strings: a literal % is %%
        labels = ", ".join(f"{_quote(label.replace('%', '%%'))} {value:.10g}"
                           for value, label in ticks("nines", lo, hi))
        commands.append(f"set {name}tics ({labels})")
    return commands


def _plot_clause(index: int, series: Line | Band, source: str) -> str:
    colour = f"lc rgb '{series.colour}'"
    if isinstance(series, Band):
        return (f"{source} index {index} using 1:2:3 with filledcurves "
                f"fs transparent solid 0.2 noborder {colour} "
                f"title {_quote(f'{series.name} min–max')}")
    title = f"title {_quote(series.name)}"
    dash = " dt 2" if series.dashed else ""
    how = {"line": "lines", "steps": "steps", "points": "linespoints pt 7 ps 0.8",
           "markers": "points pt 6 ps 1.6"}[series.style]
    axes = " axes x1y2" if series.right else ""
    return f"{source} index {index} using 1:2{axes} with {how} lw 2{dash} {colour} {title}"


def script(figure: Figure) -> str:
    name = f"{figure.slug}.gp"
    lines = [
        f"# sixnines: {_comment(figure.title)}",
        f"# gnuplot {name}   writes {figure.slug}.png beside this script",
        *(f"# {line}" for line in textwrap.wrap(_comment(figure.caption), 88,
                                                 break_on_hyphens=False)),
        "reset  # scripts may run one after another in one gnuplot: gnuplot *.gp",
        f"here = ARG0[1:strlen(ARG0) - strlen('{name}')]",
        "set encoding utf8",
        "set terminal pngcairo size 1200,650 noenhanced font 'sans,10'",
        f"set output here.'{figure.slug}.png'",
        f"set title {_quote(figure.title)}",
        "set grid",
        "set key outside right top",
        *_axis_commands(figure.x, "x", figure.extent[0]),
        *_axis_commands(figure.y, "y", figure.extent[1]),
    ]
    if figure.y2 is not None and figure.extent_y2 is not None:
        lines += [*_axis_commands(figure.y2, "y2", figure.extent_y2), "set y2tics",
                  "set ytics nomirror"]
    for number, marker in enumerate(figure.markers, start=1):
        lines += [f"set arrow {number} from {marker.x:.10g}, graph 0 to {marker.x:.10g}, "
                  "graph 1 nohead dt 2 lc rgb '#555555'",
                  f"set label {number} {_quote(marker.label)} at {marker.x:.10g}, "
                  f"graph {0.96 - 0.04 * ((number - 1) % 2):.2f} offset 0.5,0"]  # staggered
    for number, shade in enumerate(figure.shades, start=len(figure.markers) + 1):
        lines += [f"set object {number} rect from {shade.x0:.10g}, graph 0 to "
                  f"{shade.x1:.10g}, graph 1 fc rgb '#d62728' fs transparent solid 0.12 "
                  "noborder behind",
                  f"set label {number} {_quote(shade.label)} at {shade.x0:.10g}, graph 0.9 "
                  "offset 0.5,0 tc rgb '#aa1111'"]
    clauses = [_plot_clause(i, s, f"here.'{figure.slug}.dat'" if i == 0 else "''")
               for i, s in enumerate(figure.series)]
    lines.append("plot " + ", \\\n     ".join(clauses))
    return "\n".join(lines) + "\n"


def write(figure: Figure, directory: Path) -> tuple[Path, Path]:
    """Write `<slug>.dat` and `<slug>.gp` into `directory`, each whole or not at all;
    return both paths."""
    return (write_atomically(directory / f"{figure.slug}.dat", data_file(figure)),
            write_atomically(directory / f"{figure.slug}.gp", script(figure)))
