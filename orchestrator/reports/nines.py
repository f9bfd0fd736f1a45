"""The percentile-distribution plots: every run's latency on a "nines" axis, overlaid.

x = −log10(1 − p), so 90%, 99%, 99.9% … are equally spaced and the tail gets the room it
deserves. A curve stops where its sample count stops supporting percentiles (p beyond
1 − 1/count) and ends at the exact max, placed at 1 − 1/count, where the max sample sits.
Open-loop runs and throughput-mode runs (`rate: max`, saturation latency) are never drawn
on the same plot: their latencies mean different things (formats.load).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from sixnines.formats.hdr import PERCENTILE_KEYS, PERCENTILES
from sixnines.formats.layout import SERIES_FILE, hgrm_file
from sixnines.formats.load import saturation
from sixnines.formats.summary import RunSummary
from sixnines.formats.vocabulary import Load, Metric
from sixnines.orchestrator.reports.inputs import RunInputs
from sixnines.orchestrator.reports.model import Axis, Figure, Line, colour

#: The metrics plotted for each load.
METRICS = {Load.OPEN_LOOP: (Metric.LATENCY, Metric.SERVICE_TIME),
           Load.SATURATION: (Metric.SATURATION_LATENCY,)}


def _source(run: RunInputs, metric: Metric
            ) -> tuple[Sequence[float], Sequence[float | None], str]:
    """(percentiles as fractions, values µs, where from): the .hgrm file is the finest,
    then the per-message analysis, then the summary's seven percentiles (None where the
    summary has none)."""
    if metric in run.hgrm:
        dist = run.hgrm[metric]
        return dist.percentiles, dist.values, hgrm_file(metric)
    nines = (run.series or {}).get("nines") or {}
    ps, values = nines.get("p"), nines.get(metric.summary_field)
    if isinstance(ps, list) and isinstance(values, list) and len(ps) == len(values):
        return ps, values, SERIES_FILE
    figures = run.summary.figures(metric.summary_field)
    pairs = [(p / 100, figures.figure(k))
             for p, k in zip(PERCENTILES, PERCENTILE_KEYS, strict=True)]
    return [p for p, _ in pairs], [v for _, v in pairs], "summary"


def curve(run: RunInputs, metric: Metric) -> tuple[list[float], list[float], str] | None:
    """(nines, µs, source) for one run, or None when the run measured nothing."""
    figures = run.summary.figures(metric.summary_field)
    count, top_value = figures.count, figures.max
    if count <= 0 or top_value is None:
        return None
    top = math.log10(count)  # the max sample's place: p = 1 − 1/count
    percentiles, values, source = _source(run, metric)
    xs, ys = [], []
    for p, value in zip(percentiles, values, strict=False):
        if not isinstance(p, int | float) or not isinstance(value, int | float) or p >= 1:
            continue
        x = -math.log10(1 - p)
        if x <= top + 1e-9:
            xs.append(x)
            ys.append(min(value, top_value))  # buckets reach past the exact max
    xs.append(top)
    ys.append(top_value)
    return xs, ys, source


def legend_name(summary: RunSummary) -> str:
    """Run id, with the clock bound when figures were timed across hosts (rule 3)."""
    bound = summary.clock_bound_ns
    name = str(summary.run_id or "?")
    return name if bound is None else f"{name} (± {bound / 1000:,.1f} µs clock)"


def _figure(runs: list[tuple[int, RunInputs]], metric: Metric, load: Load) -> Figure | None:
    lines, fallbacks = [], []
    for index, run in runs:
        found = curve(run, metric)
        if found is None:
            continue
        xs, ys, source = found
        lines.append(Line(legend_name(run.summary), xs, ys, colour(index)))
        if source != hgrm_file(metric):
            fallbacks.append(f"{run.run_id} ({source})")
    if not lines:
        return None
    caption = ("Each curve ends at the run's max, placed at 1 − 1/count; log latency axis. "
               "Curves from each run's .hgrm file")
    caption += f"; from coarser data: {', '.join(fallbacks)}." if fallbacks else "."
    title = f"{metric.label.capitalize()} percentile distribution"
    if load == Load.SATURATION:
        title += " — throughput mode (rate: max), apart from open-loop runs"
    return Figure(f"nines-{metric}", title, Axis("percentile", "nines"),
                  Axis(f"{metric.label} (µs)", "log"), lines=tuple(lines), caption=caption)


def figures(runs: list[RunInputs]) -> list[Figure]:
    """Latency and service time of open-loop runs; saturation latency of throughput-mode
    runs, on a figure of its own."""
    groups: dict[Load, list[tuple[int, RunInputs]]] = {Load.OPEN_LOOP: [], Load.SATURATION: []}
    for index, run in enumerate(runs):
        load = Load.SATURATION if saturation(run.summary) else Load.OPEN_LOOP
        groups[load].append((index, run))
    out = []
    for load, members in groups.items():
        for metric in METRICS[load]:
            figure = _figure(members, metric, load) if members else None
            if figure is not None:
                out.append(figure)
    return out
