"""The capacity searches' part of the report: per search, latency against offered load
(p50, p99, p99.9 and p99.99 of every probe, passes and failures marked at the objective's
first percentile, each objective drawn as a dashed line) and a table of its probes."""

from __future__ import annotations

from html import escape

from sixnines.formats.summary import CapacityResult
from sixnines.orchestrator.capacity.verdict import VerdictKind
from sixnines.orchestrator.reports.model import Axis, Figure, Line, colour, slugify

PERCENTILES = ("p50", "p99", "p99.9", "p99.99")
#: Blue, purple, orange, cyan (model.PALETTE): the verdicts keep green, red and grey.
PERCENTILE_COLOURS = dict(zip(PERCENTILES, (colour(0), colour(3), colour(4), colour(5)),
                              strict=True))
VERDICT_COLOURS = {"pass": "#2ca02c", "fail": "#d62728", "generator-bound": "#7f7f7f"}


def figure(result: CapacityResult) -> Figure:
    """Latency (µs, log) against the offered rate (msg/s, log) of every probe, each
    percentile joined in rate order; each probe's verdict circled at the objective's
    first percentile."""
    probes = sorted(result.probes, key=lambda probe: probe.rate)
    rates = [probe.rate for probe in probes]
    lines = [Line(key, rates, [probe.latency_us.get(key) for probe in probes],
                  PERCENTILE_COLOURS[key], "points") for key in PERCENTILES]
    marked = next(iter(result.objective_us), "p99")
    for verdict, shade in VERDICT_COLOURS.items():
        mine = [probe for probe in probes if probe.verdict == verdict]
        if mine:
            lines.append(Line(f"{verdict} ({marked})", [p.rate for p in mine],
                              [p.latency_us.get(marked) for p in mine], shade, "markers"))
    span = ([rates[0], rates[-1]] if rates[0] < rates[-1] else [rates[0] / 1.25, rates[0] * 1.25]
            ) if rates else []
    lines += [Line(f"objective {key}", span, [limit] * len(span),
                   PERCENTILE_COLOURS.get(key, "#000000"), "line", dashed=True)
              for key, limit in result.objective_us.items()]
    return Figure(f"capacity-{slugify(result.point)}",
                  f"{result.system}: latency against offered load ({result.point})",
                  Axis("offered rate (msg/s)", "log"), Axis("latency (µs)", "log"),
                  tuple(lines), zoomable=False)


def table(result: CapacityResult) -> str:
    """Every probe in the order run: rate, verdict, figures and reasons."""
    head = "".join(f"<th>{escape(h)}</th>" for h in
                   ("run", "rate (msg/s)", "verdict", *(f"{k} (µs)" for k in PERCENTILES),
                    "sent (msg/s)", "why"))
    rows = []
    for probe in result.probes:
        figures = "".join(f"<td>{_number(probe.latency_us.get(key))}</td>"
                          for key in PERCENTILES)
        verdict = probe.verdict + (" (confirming)" if probe.confirming else "")
        rows.append(f"<tr><td>{escape(probe.run_id)}</td><td>{probe.rate:,.0f}</td>"
                    f'<td class="{"good" if probe.verdict == VerdictKind.PASS else "bad"}">'
                    f"{escape(verdict)}</td>{figures}<td>{_number(probe.send_rate, 0)}</td>"
                    f"<td>{escape('; '.join(probe.reasons))}</td></tr>")
    return f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table>"


def _number(value: float | None, digits: int = 1) -> str:
    return "–" if value is None else f"{value:,.{digits}f}"


def console_line(result: CapacityResult) -> str:
    return f"capacity {result.system} ({result.point}): {result.note}"
