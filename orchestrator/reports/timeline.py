"""A run's timeline plot: what series.json's `timeline` holds for a run with faults, a
rate shape or a backlog (spark_jobs.timeline), on one time axis from the measured start —
latency p50 / p99 / max of the messages intended in each interval (left, log), and the
receipts per second in it against the rate the schedule intended (right). Each fault's
window is shaded and labelled and its recovery marked; a backlog's hold, release and
drained instants are marked.

One plot for all three, so a step, a burst, a fault and a drain read the same way: where
the receive rate leaves the intended line, and what latency did meanwhile.
"""

from __future__ import annotations

import math

import numpy as np
from pydantic import ValidationError

from sixnines.formats.shape import RateShape
from sixnines.formats.summary import BacklogFigures, FaultFigures, RunSummary
from sixnines.orchestrator.reports.inputs import RunInputs
from sixnines.orchestrator.reports.model import Axis, Figure, Line, Marker, Shade
from sixnines.orchestrator.reports.series_parts import (
    INTENDED,
    MAXIMUM,
    P50,
    P99,
    RECEIVER,
    numbers,
)

#: Points of the intended rate's line across the run: enough that hovering anywhere finds
#: one near (the read-out names the points near the cursor only).
INTENDED_POINTS = 400
NS = 1e9


def expected(summary: RunSummary) -> bool:
    """Whether the analysis writes this run a timeline (spark_jobs.run_merge.interval_grid):
    it has faults, a rate shape or a backlog."""
    return bool(summary.faults) or summary.backlog is not None or "shape" in summary.params


def _param_s(params: dict, name: str) -> float | None:
    """A time parameter (ns, as the manifest's params keep it) in seconds; None when it
    is absent or not a whole number of ns ≥ 0 (summary.json is untrusted)."""
    value = params.get(name)
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        return None
    return value / NS


def _shape_line(given: object, warmup_s: float
                ) -> tuple[RateShape, list[float], list[float]] | None:
    """A shape (params.shape, checked as a RateShape, so its segments follow each other
    from 0 and the line has at most INTENDED_POINTS points more than segments) and its
    intended rate as a line over the measured time: seconds from the measured start (the
    warm-up's segment left out), msg/s, each segment from its start to its end."""
    try:
        shape = RateShape.model_validate(given)
    except ValidationError:
        return None
    step = shape.segments[-1].end_ns / NS / INTENDED_POINTS
    xs: list[float] = []
    ys: list[float] = []
    for segment in shape.segments:
        start, end = segment.start_ns / NS - warmup_s, segment.end_ns / NS - warmup_s
        if end <= 0:
            continue
        shares = np.linspace(0.0, 1.0, math.ceil((end - start) / step) + 1)
        xs += (start + shares * (end - start)).tolist()
        ys += (segment.rate + shares * (segment.to - segment.rate)).tolist()
    return shape, xs, ys


def intended(summary: RunSummary) -> tuple[str | None, list[float], list[float]] | None:
    """The rate the schedule intended over the measured time, as a line from the measured
    start: a shape's (with its label), else the constant `rate` over `duration`; None
    without a rate to draw (throughput mode, a summary without the parameters)."""
    params = summary.params
    warmup_s = _param_s(params, "warmup_ns") or 0.0
    if "shape" in params:
        found = _shape_line(params["shape"], warmup_s)
        return None if found is None else (found[0].label, found[1], found[2])
    rate, duration_s = params.get("rate"), _param_s(params, "duration_ns")
    if isinstance(rate, bool) or not isinstance(rate, int | float) or not rate > 0 \
            or not duration_s or not math.isfinite(rate):
        return None
    return None, [0.0, duration_s], [float(rate), float(rate)]


def fault_label(fault: FaultFigures) -> str:
    return f"fault {fault.index}: {fault.action} {fault.target}"


def _fault_marks(faults: list[FaultFigures]) -> tuple[list[Shade], list[Marker], str]:
    """Each fault's window shaded (from when it took effect to its end; a fault without an
    end, a thin stretch at its start) and its recovery marked, and what they mean."""
    if not faults:
        return [], [], ""
    shades, markers = [], []
    for fault in faults:
        if fault.effective_s is None:
            continue
        end = fault.end_s if fault.end_s is not None else fault.effective_s
        shades.append(Shade(fault.effective_s, end, fault_label(fault)))
        if fault.recovered_s is not None:
            markers.append(Marker(end + fault.recovered_s,
                                  f"{fault.index}: recovered +{fault.recovered_s * 1000:,.0f} ms"))
    never = [str(fault.index) for fault in faults if fault.recovered is False]
    caption = ("Shaded: each fault's window, from when it took effect to its end; dashed: "
               "where latency was back inside its pre-fault band (docs/design.md)"
               + (f"; never recovered: fault {', '.join(never)}" if never else "") + ".")
    return shades, markers, caption


def _backlog_marks(backlog: BacklogFigures | None, warmup_s: float) -> tuple[list[Marker], str]:
    """A backlog's instants: consumers held from the start instant (the warm-up's start),
    released, and the backlog gone — or, not gone, the end of the bound."""
    if backlog is None:
        return [], ""
    released = backlog.released_at_s
    markers = [Marker(-warmup_s, "consumers held"), Marker(released, f"released {released:g} s")]
    if backlog.drained_at_s is not None:
        markers.append(Marker(backlog.drained_at_s,
                              f"drained +{backlog.drained_at_s - released:.3g} s"))
    else:
        markers.append(Marker(released + backlog.drain_within_s,
                              f"bound {backlog.drain_within_s:g} s: not drained"))
    return markers, (f"Dashed: consumers held from the start instant, released at "
                     f"{released:g} s, then the backlog gone (or the end of the bound it was "
                     f"not gone by): {backlog.verdict}.")


def _width(seconds: list[float | None]) -> str:
    """'per 10 ms interval' from the points' spacing (intervals pooled on long runs)."""
    if len(seconds) > 1 and seconds[0] is not None and seconds[1] is not None \
            and seconds[1] > seconds[0]:
        return f"per {(seconds[1] - seconds[0]) * 1000:g} ms interval"
    return "per interval"


def figure(run: RunInputs, slug: str) -> Figure | None:
    """The run's timeline plot; None when its series.json holds no timeline."""
    found = numbers((run.series or {}).get("timeline"), "t_s", "p50_us", "p99_us", "max_us",
                    "received_msg_s")
    if found is None or not found[0]:
        return None
    seconds, p50, p99, highest, received = found
    summary = run.summary
    lines = [Line("p50", seconds, p50, P50), Line("p99", seconds, p99, P99),
             Line("max", seconds, highest, MAXIMUM, dashed=True),
             Line("received msg/s", seconds, received, RECEIVER, right=True)]
    scheduled = intended(summary)
    if scheduled is not None:
        lines.append(Line("intended msg/s", scheduled[1], scheduled[2], INTENDED, right=True))
    shades, fault_markers, fault_caption = _fault_marks(summary.faults or [])
    backlog_markers, backlog_caption = _backlog_marks(
        summary.backlog, _param_s(summary.params, "warmup_ns") or 0.0)
    what = [text for text in (scheduled[0] if scheduled else None,
                              "faults" if summary.faults else None,
                              "backlog" if summary.backlog is not None else None) if text]
    per = _width(seconds)
    caption = " ".join(part for part in (
        f"Left: latency of the messages intended in each interval ({per}), from their "
        "intended send time. Right: receipts per second in each interval "
        "(by receive time)" + (" against the rate the schedule intended" if scheduled else "")
        + ".", fault_caption, backlog_caption) if part)
    return Figure(f"{slug}-timeline",
                  f"{run.run_id}: latency and receive rate {per}"
                  + (f" ({'; '.join(what)})" if what else ""),
                  Axis("time from the measured start (s)"), Axis("latency (µs)", "log"),
                  lines=tuple(lines), markers=(*fault_markers, *backlog_markers),
                  shades=tuple(shades), y2=Axis("messages/s"), caption=caption)
