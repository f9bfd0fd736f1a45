"""Parametrised plots: how latency, throughput and density change across a swept parameter
(message size above all), one curve per system and setting of the other swept parameters.

A parameter counts as swept when the runs hold more than one numeric value of it; a
categorical one (schedule, receive mode, `rate: max`) has no axis to plot along.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Collection
from typing import TypeGuard

from sixnines.formats.durability import labelled
from sixnines.formats.load import latency_of
from sixnines.formats.summary import RunSummary
from sixnines.formats.vocabulary import Mode
from sixnines.orchestrator.reports.model import Axis, Figure, Line, Scale, colour, slugify
from sixnines.orchestrator.results.overview import swept

AXIS_LABELS = {"message_size": "message size (bytes)", "rate": "scheduled rate (msg/s)",
               "connections": "connections per agent"}


def _numeric(value: object) -> TypeGuard[float]:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _measured(summary: RunSummary) -> bool:
    """Not failed, and the run's own latency (open-loop or saturation) was timed."""
    field, _ = latency_of(summary)
    return summary.status != "failed" and bool(summary.figures(field).count)


def _groups(summaries: list[RunSummary], param: str) -> dict[str, list[RunSummary]]:
    """Runs by curve name (system and the other parameters that vary among the plotted
    runs), sorted along `param`."""
    plotted = [s for s in summaries if _measured(s) and _numeric(s.params.get(param))]
    others = [key for key in swept(plotted) if key != param]
    groups: dict[str, list[RunSummary]] = defaultdict(list)
    for summary in plotted:
        params = summary.params
        name = ", ".join([labelled(summary.system, summary.durability),
                          *(f"{k}={params.get(k)}" for k in others)])
        groups[name].append(summary)
    return {name: sorted(runs, key=lambda s: s.params[param])
            for name, runs in groups.items() if len({s.params[param] for s in runs}) > 1}


def _span_scale(values: list) -> Scale:
    """Log when the values are positive and span a decade or more (1 B … 64 KB)."""
    values = [v for v in values if _numeric(v)]
    return ("log" if values and min(values) > 0 and max(values) >= 10 * min(values)
            else "linear")


def _x_scale(groups: dict[str, list[RunSummary]], param: str) -> Scale:
    return _span_scale([s.params[param] for s in _plotted(groups)])


def _lines(groups: dict[str, list[RunSummary]], param: str, figures: tuple,
           names: Collection[str] | None = None) -> tuple[Line, ...]:
    """`figures`: (suffix, dashed, value of a run) per curve of each group (of those in
    `names`, when given; a group keeps its colour either way); an empty suffix names the
    curve by its group alone."""
    lines = []
    for index, (name, runs) in enumerate(groups.items()):
        if names is not None and name not in names:
            continue
        xs = [s.params[param] for s in runs]
        for suffix, dashed, value in figures:
            lines.append(Line(f"{name} {suffix}".rstrip(), xs, [value(s) for s in runs],
                              colour(index), style="points", dashed=dashed))
    return tuple(lines)


def _ys(lines: tuple[Line, ...]) -> list:
    return [y for line in lines for y in line.ys if y is not None]


def _plotted(groups: dict[str, list[RunSummary]]) -> list[RunSummary]:
    return [s for runs in groups.values() for s in runs]


def _by_latency(groups: dict[str, list[RunSummary]]) -> dict[tuple[str, str], list[str]]:
    """Curve names by the latency their runs measured, (summary field, label) as in
    formats.load: open-loop and saturation latency never share a plot. The runs of one
    curve share a load (a rate that differs names the curve)."""
    out: dict[tuple[str, str], list[str]] = defaultdict(list)
    for name, runs in groups.items():
        out[latency_of(runs[0])].append(name)
    return out


def _p(field: str, key: str):
    return lambda s: s.figures(field).figure(key)


def _latency_figures(groups: dict[str, list[RunSummary]], param: str, label: str,
                     scale: Scale,
                     slug: str) -> list[Figure]:
    """p50 and p99 on log and on linear axes, per kind of latency; the axis says "round
    trip" when every curve is one, so nobody reads it as one-way latency."""
    out = []
    for (field, kind), names in _by_latency(groups).items():
        if all(s.params.get("mode") == Mode.ROUND_TRIP for n in names for s in groups[n]):
            kind = f"round-trip {kind}"
        lines = _lines(groups, param, (("p50", False, _p(field, "p50")),
                                       ("p99", True, _p(field, "p99"))), names)
        base, title = f"{slug}-{field.removesuffix('_us')}", f"{kind.capitalize()} (p50, p99)"
        out += [Figure(f"{base}-log", f"{title} vs {label}, log axes", Axis(label, scale),
                       Axis(f"{kind} (µs)", "log"), lines=lines, zoomable=False),
                Figure(f"{base}-linear", f"{title} vs {label}, linear axes", Axis(label),
                       Axis(f"{kind} (µs)"), lines=lines, zoomable=False)]
    return out


def _measured_bytes(summary: RunSummary, side: str) -> float | None:
    """The analysis's bytes/s at `side` (sender or receiver): each stream's rate times its
    mean size, summed."""
    throughput = summary.throughput
    return None if throughput is None else getattr(throughput.bytes_per_s, side)


def _bytes(side: str, rate: Callable[[RunSummary], float | None]):
    """Bytes/s at `side` as measured, else (summaries from before the per-message
    analysis) the run's message `rate` times the swept message size."""
    def per_second(summary: RunSummary) -> float | None:
        measured = _measured_bytes(summary, side)
        if measured is not None:
            return measured
        messages, size = rate(summary), summary.params.get("message_size")
        return messages * size if _numeric(messages) and _numeric(size) else None
    return per_second


def _bytes_caption(groups: dict[str, list[RunSummary]]) -> str:
    how = ("As measured by the analysis" if all(
        _measured_bytes(s, side) is not None
        for s in _plotted(groups) for side in ("sender", "receiver"))
        else "As measured where the analysis gave it, else message size × messages/s")
    return f"{how}; solid: received, dashed: sent."


def _density(summary: RunSummary) -> float | None:
    return summary.density_us


def _received(summary: RunSummary) -> float | None:
    return summary.receive_rate


def _sent(summary: RunSummary) -> float | None:
    return summary.send_rate


def figures_for(summaries: list[RunSummary], param: str) -> list[Figure]:
    groups = _groups(summaries, param)
    if not groups:
        return []
    label = AXIS_LABELS.get(param, param)
    scale = _x_scale(groups, param)
    slug = f"sweep-{slugify(param)}"
    rates = _lines(groups, param, (("received", False, _received), ("sent", True, _sent)))
    out = [
        *_latency_figures(groups, param, label, scale, slug),
        Figure(f"{slug}-throughput", f"Throughput (messages/s) vs {label}",
               Axis(label, scale), Axis("messages/s"), lines=rates, zoomable=False,
               caption="Solid: at the receivers; dashed: at the senders."),
    ]
    volume = _lines(groups, param, (("received", False, _bytes("receiver", _received)),
                                    ("sent", True, _bytes("sender", _sent))))
    if _ys(volume):
        out.append(Figure(f"{slug}-bytes", f"Throughput (bytes/s) vs {label}",
                          Axis(label, scale), Axis("bytes/s"), lines=volume, zoomable=False,
                          caption=_bytes_caption(groups)))
    density = _lines(groups, param, (("", False, _density),))
    if _ys(density):
        out.append(Figure(f"{slug}-density", f"Density (mean interval between receipts) vs "
                          f"{label}", Axis(label, scale),
                          Axis("interval (µs)", _span_scale(_ys(density))), lines=density,
                          zoomable=False, caption="The mean time between consecutive "
                          "messages at a receiver stream: the inverse of its throughput."))
    return out


def figures(summaries: list[RunSummary]) -> dict[str, list[Figure]]:
    """Per swept numeric parameter, its plots (none for a categorical parameter)."""
    out = {}
    for param in swept(summaries):
        found = figures_for(summaries, param)
        if found:
            out[param] = found
    return out
