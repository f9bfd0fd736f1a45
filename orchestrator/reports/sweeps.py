"""Parametrised plots: how latency and throughput change across a swept parameter (message
size above all), one curve per system and setting of the other swept parameters.

A parameter counts as swept when the runs hold more than one numeric value of it; a
categorical one (schedule, receive mode, `rate: max`) has no axis to plot along.
"""

from __future__ import annotations

from collections import defaultdict

from orchestrator.reports.model import Axis, Figure, Line, Scale, colour, slugify

AXIS_LABELS = {"message_size": "message size (bytes)", "rate": "scheduled rate (msg/s)"}


def _numeric(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def swept(summaries: list[dict]) -> list[str]:
    """Parameters with more than one value across the runs, in scenario order."""
    values: dict[str, list] = defaultdict(list)
    for summary in summaries:
        for key, value in (summary.get("params") or {}).items():
            values[key].append(value)
    return [key for key, seen in values.items()
            if len({repr(v) for v in seen}) > 1]


def _measured(summary: dict) -> bool:
    return summary.get("status") != "failed" and bool((summary.get("latency_us") or {})
                                                      .get("count"))


def _groups(summaries: list[dict], param: str) -> dict[str, list[dict]]:
    """Runs by curve name (system and the other parameters that vary among the plotted
    runs), sorted along `param`."""
    plotted = [s for s in summaries
               if _measured(s) and _numeric((s.get("params") or {}).get(param))]
    others = [key for key in swept(plotted) if key != param]
    groups: dict[str, list[dict]] = defaultdict(list)
    for summary in plotted:
        params = summary["params"]
        name = ", ".join([str(summary.get("system", "?")),
                          *(f"{k}={params.get(k)}" for k in others)])
        groups[name].append(summary)
    return {name: sorted(runs, key=lambda s: s["params"][param])
            for name, runs in groups.items() if len({s["params"][param] for s in runs}) > 1}


def _x_scale(groups: dict[str, list[dict]], param: str) -> Scale:
    """Log when the values are positive and span a decade or more (1 B … 64 KB)."""
    values = [s["params"][param] for runs in groups.values() for s in runs]
    return "log" if min(values) > 0 and max(values) >= 10 * min(values) else "linear"


def _lines(groups: dict[str, list[dict]], param: str, figures: tuple) -> tuple[Line, ...]:
    """`figures`: (suffix, dashed, value of a run) per curve of each group."""
    lines = []
    for index, (name, runs) in enumerate(groups.items()):
        xs = [s["params"][param] for s in runs]
        for suffix, dashed, value in figures:
            lines.append(Line(f"{name} {suffix}", xs, [value(s) for s in runs], colour(index),
                              style="points", dashed=dashed))
    return tuple(lines)


def _p(key: str):
    return lambda s: (s.get("latency_us") or {}).get(key)


def _bytes(rate_key: str):
    def per_second(summary: dict) -> float | None:
        rate, size = summary.get(rate_key), (summary.get("params") or {}).get("message_size")
        return rate * size if _numeric(rate) and _numeric(size) else None
    return per_second


def figures_for(summaries: list[dict], param: str) -> list[Figure]:
    groups = _groups(summaries, param)
    if not groups:
        return []
    label = AXIS_LABELS.get(param, param)
    scale = _x_scale(groups, param)
    slug = f"sweep-{slugify(param)}"
    latency = _lines(groups, param, (("p50", False, _p("p50")), ("p99", True, _p("p99"))))
    rates = _lines(groups, param, (("received", False, lambda s: s.get("receive_rate")),
                                   ("sent", True, lambda s: s.get("send_rate"))))
    out = [
        Figure(f"{slug}-latency-log", f"Latency (p50, p99) vs {label}, log axes",
               Axis(label, scale), Axis("latency (µs)", "log"), lines=latency, zoomable=False),
        Figure(f"{slug}-latency-linear", f"Latency (p50, p99) vs {label}, linear axes",
               Axis(label), Axis("latency (µs)"), lines=latency, zoomable=False),
        Figure(f"{slug}-throughput", f"Throughput (messages/s) vs {label}",
               Axis(label, scale), Axis("messages/s"), lines=rates, zoomable=False,
               caption="Solid: at the receivers; dashed: at the senders."),
    ]
    volume = _lines(groups, param, (("received", False, _bytes("receive_rate")),
                                    ("sent", True, _bytes("send_rate"))))
    if any(y is not None for line in volume for y in line.ys):
        out.append(Figure(f"{slug}-bytes", f"Throughput (bytes/s) vs {label}",
                          Axis(label, scale), Axis("bytes/s"), lines=volume, zoomable=False,
                          caption="Message size × messages/s; solid: received, dashed: sent."))
    return out


def figures(summaries: list[dict]) -> dict[str, list[Figure]]:
    """Per swept numeric parameter, its plots (none for a categorical parameter)."""
    out = {}
    for param in swept(summaries):
        found = figures_for(summaries, param)
        if found:
            out[param] = found
    return out
