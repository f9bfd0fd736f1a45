"""Per-run plots from the per-message analysis (`series.json`): latency over the run,
sender and receiver throughput together, the latency histogram with its humps, and CPU
per message of sender, receiver and broker; for a run with faults, its timeline: latency
percentiles and receive rate per interval, each fault's window shaded and labelled and
its recovery marked.

A part of series.json that is absent or malformed drops that plot only; the page says what
is missing rather than failing the whole report.
"""

from __future__ import annotations

import math

import numpy as np
from pydantic import ValidationError

from sixnines.formats.shape import RateShape
from sixnines.formats.summary import FaultFigures
from sixnines.formats.vocabulary import Load, Metric
from sixnines.orchestrator.reports.inputs import RunInputs
from sixnines.orchestrator.reports.model import (
    Axis,
    Band,
    Figure,
    Line,
    Marker,
    Shade,
    slugify,
)
from sixnines.orchestrator.reports.ticks import number

LATENCY, MEAN, SERVICE = "#1f77b4", "#0b3c61", "#ff7f0e"
P50, P99, MAXIMUM = "#1f77b4", "#ff7f0e", "#d62728"
SENDER, RECEIVER, BROKER = "#2ca02c", "#9467bd", "#8c564b"


def _clean(values: list) -> list[float | None]:
    """Numbers as they are, anything else (null for an undefined window) as a gap."""
    return [v if isinstance(v, int | float) and not isinstance(v, bool) else None
            for v in values]


def _numbers(part: object, *keys: str) -> list[list[float | None]] | None:
    """The named lists of a series.json part, cut to a common length; None when any is
    missing."""
    if not isinstance(part, dict):
        return None
    columns = [column for key in keys if isinstance(column := part.get(key), list)]
    if len(columns) < len(keys):
        return None
    length = min(len(c) for c in columns)
    return [_clean(c[:length]) for c in columns]


def run_slugs(runs: list[RunInputs]) -> list[str]:
    """One file-safe, unique name per run (two run ids can slugify alike)."""
    seen: set[str] = set()
    out = []
    for index, run in enumerate(runs, start=1):
        slug = f"run-{slugify(run.run_id)}"
        if slug in seen:
            slug = f"{slug}-{index}"
        seen.add(slug)
        out.append(slug)
    return out


def _saturation(series: dict) -> bool:
    """A throughput-mode run (`rate: max`): its latency is saturation latency."""
    return series.get("load") == Load.SATURATION


SATURATION_CAPTION = ("Saturation latency (throughput mode, rate: max): receive − send with "
                      "the system taking messages as fast as it can; there is no schedule, "
                      "so this is not open-loop latency.")


def latency_over_run(series: dict, slug: str, run_id: str) -> Figure | None:
    if _saturation(series):
        return _saturation_over_run(series, slug, run_id)
    latency = _numbers(series.get(Metric.LATENCY), "n", "min_us", "mean_us", "max_us")
    if latency is None or not latency[0]:
        return None
    n, low, mean, high = latency
    lines = [Line("latency mean", n, mean, MEAN)]
    service = _numbers(series.get(Metric.SERVICE_TIME), "n", "mean_us")
    if service is not None and service[0]:
        service_n, service_mean = service
        lines.append(Line("service time mean", service_n, service_mean, SERVICE, dashed=True))
    return Figure(f"{slug}-latency", f"{run_id}: latency per message over the run",
                  Axis("message number (min / mean / max per stretch of the schedule)"),
                  Axis("latency (µs)", "log"),
                  lines=tuple(lines), bands=(Band("latency", n, low, high, LATENCY),),
                  caption="Latency from the intended send time (coordinated-omission free); "
                          "service time from the actual send.")


def _saturation_over_run(series: dict, slug: str, run_id: str) -> Figure | None:
    latency = _numbers(series.get(Metric.SATURATION_LATENCY), "n", "min_us", "mean_us", "max_us")
    if latency is None or not latency[0]:
        return None
    n, low, mean, high = latency
    return Figure(f"{slug}-latency", f"{run_id}: saturation latency per message over the run",
                  Axis("message number (min / mean / max per stretch of the run)"),
                  Axis("saturation latency (µs)", "log"),
                  lines=(Line("saturation latency mean", n, mean, MEAN),),
                  bands=(Band("saturation latency", n, low, high, LATENCY),),
                  caption=SATURATION_CAPTION)


def throughput(series: dict, slug: str, run_id: str) -> Figure | None:
    lines = []
    for key, name, shade in (("sender_throughput", "sender", SENDER),
                             ("receiver_throughput", "receiver", RECEIVER)):
        found = _numbers(series.get(key), "t_s", "msg_s")
        if found is not None and found[0]:
            seconds, rates = found
            lines.append(Line(name, seconds, rates, shade))
    if not lines:
        return None
    window = series.get("window")
    over = f"over windows of {window} messages" if isinstance(window, int) else "windowed"
    return Figure(f"{slug}-throughput", f"{run_id}: sender and receiver throughput",
                  Axis("time (s)"), Axis("messages/s"), lines=tuple(lines),
                  caption=f"Throughput {over}, measured at each end separately.")


def _modes(series: dict) -> list[float]:
    humps = series.get("humps")
    modes = humps.get("modes_us") if isinstance(humps, dict) else None
    if not isinstance(modes, list):
        return []
    return [m for m in modes if isinstance(m, int | float) and math.isfinite(m) and m > 0]


def humps_text(series: dict | None) -> str | None:
    """'2 humps: modes at 80 µs, 1.3k µs', or None without a humps measure."""
    humps = (series or {}).get("humps")
    if not isinstance(humps, dict) or not isinstance(humps.get("count"), int):
        return None
    count, modes = humps["count"], _modes(series or {})
    text = f"{count} hump{'s' if count != 1 else ''}"
    return f"{text}: modes at {', '.join(f'{number(m)} µs' for m in modes)}" if modes else text


def histogram(series: dict, slug: str, run_id: str) -> Figure | None:
    part = series.get("histogram")
    edges = part.get("edges_us") if isinstance(part, dict) else None
    counts = part.get("counts") if isinstance(part, dict) else None
    if not (isinstance(edges, list) and isinstance(counts, list)) or not counts \
            or len(edges) != len(counts) + 1:
        return None
    markers = tuple(Marker(m, f"mode {number(m)} µs") for m in _modes(series))
    humps = humps_text(series)
    label = "saturation latency" if _saturation(series) else "latency"
    return Figure(f"{slug}-histogram", f"{run_id}: {label} distribution"
                  + (f" ({humps})" if humps else ""),
                  Axis(f"{label} (µs)", "log"), Axis("messages per bin", "log"),
                  lines=(Line(label, _clean(edges), _clean(counts), LATENCY,
                              style="steps"),),
                  markers=markers,
                  caption="Log-spaced bins; dashed lines mark the modes (humps) found by "
                          "the analysis. Empty bins leave gaps on the log count axis.")


def cpu_per_message(series: dict, slug: str, run_id: str) -> Figure | None:
    part = series.get("cpu")
    lines = []
    for name, shade in (("sender", SENDER), ("receiver", RECEIVER), ("broker", BROKER)):
        found = _numbers(part.get(name) if isinstance(part, dict) else None,
                         "t_s", "us_per_message")
        if found is not None and found[0]:
            seconds, per_message = found
            lines.append(Line(name, seconds, per_message, shade))
    if not lines:
        return None
    return Figure(f"{slug}-cpu", f"{run_id}: CPU per message over the run",
                  Axis("time (s)"), Axis("CPU µs per message", "log"), lines=tuple(lines),
                  caption="CPU time per sample interval over the messages of that interval "
                          "(the broker's over all consumers' deliveries). A busy-waiting "
                          "sender uses a core whatever the rate.")


BUILDERS = (latency_over_run, throughput, histogram, cpu_per_message)
INTENDED = "#222222"


#: Points of the intended rate's line across the run: enough that hovering anywhere finds
#: one near (the read-out names the points near the cursor only).
INTENDED_POINTS = 400


def _intended(given: object) -> tuple[RateShape, list[float], list[float]] | None:
    """A shape (params.shape, as summary.json holds it: checked as a RateShape, so its
    segments follow each other from 0 and the line has at most INTENDED_POINTS points
    more than segments) and its intended rate as a line: seconds since the start instant,
    msg/s, each segment from its start to its end."""
    try:
        shape = RateShape.model_validate(given)
    except ValidationError:
        return None
    spans = [(s.start_ns / 1e9, s.end_ns / 1e9, s.rate, s.to) for s in shape.segments]
    step = spans[-1][1] / INTENDED_POINTS
    xs: list[float] = []
    ys: list[float] = []
    for start, end, rate, to in spans:
        points = math.ceil((end - start) / step)
        shares = np.linspace(0.0, 1.0, points + 1)
        xs += (start + shares * (end - start)).tolist()
        ys += (rate + shares * (to - rate)).tolist()
    return shape, xs, ys


def against_shape(run: RunInputs, slug: str) -> Figure | None:
    """A shaped run: the intended rate, the rates achieved at both ends and latency, on
    one time axis (latency on the right)."""
    intended = _intended(run.summary.params.get("shape"))
    series = run.series or {}
    if intended is None:
        return None
    shape, xs, ys = intended
    lines = [Line("intended rate", xs, ys, INTENDED)]
    for key, name, shade in (("sender_throughput", "sent", SENDER),
                             ("receiver_throughput", "received", RECEIVER)):
        found = _numbers(series.get(key), "t_s", "msg_s")
        if found is not None and found[0]:
            lines.append(Line(f"{name} msg/s", found[0], found[1], shade))
    latency = _numbers(series.get(Metric.LATENCY), "t_s", "mean_us")
    if latency is not None and latency[0]:
        lines.append(Line("latency mean (µs)", latency[0], latency[1], MEAN, right=True))
    return Figure(f"{slug}-shape", f"{run.run_id}: {shape.label}",
                  Axis("time since the start (s; the measured time follows the warm-up)"),
                  Axis("messages/s"), lines=tuple(lines), y2=Axis("latency (µs)", "log"),
                  caption="The rate the shape intends against the rates sent and received "
                          "(windowed) and the latency of the messages intended at each "
                          "time, from their intended send time.")


def fault_label(fault: FaultFigures) -> str:
    return f"fault {fault.index}: {fault.action} {fault.target}"


def _fault_marks(faults: list[FaultFigures]) -> tuple[tuple[Shade, ...], tuple[Marker, ...]]:
    """Each fault's window shaded (from when it took effect to its end; a fault without an
    end, a thin stretch at its start) and its recovery marked."""
    shades, markers = [], []
    for fault in faults:
        if fault.effective_s is None:
            continue
        end = fault.end_s if fault.end_s is not None else fault.effective_s
        shades.append(Shade(fault.effective_s, end, fault_label(fault)))
        if fault.recovered_s is not None:
            markers.append(Marker(end + fault.recovered_s,
                                  f"{fault.index}: recovered +{fault.recovered_s * 1000:,.0f} ms"))
    return tuple(shades), tuple(markers)


def _marks_caption(faults: list[FaultFigures]) -> str:
    never = [str(fault.index) for fault in faults if fault.recovered is False]
    return ("Shaded: each fault's window, from when it took effect to its end; dashed: "
            "where latency was back inside its pre-fault band (docs/design.md)"
            + (f"; never recovered: fault {', '.join(never)}" if never else "") + ".")


def fault_timeline(series: dict, faults: list[FaultFigures], slug: str, run_id: str
                   ) -> list[Figure]:
    """The timeline of a run with faults: latency percentiles per interval, and receive
    rate per interval, on one time axis (seconds from the measured start)."""
    found = _numbers(series.get("timeline"), "t_s", "p50_us", "p99_us", "max_us",
                     "received_msg_s")
    if found is None or not found[0]:
        return []
    seconds, p50, p99, highest, received = found
    shades, markers = _fault_marks(faults)
    caption = _marks_caption(faults)
    width = faults[0].interval_ms if faults and faults[0].interval_ms else None
    per = f"per {width:g} ms interval" if width else "per interval"
    return [
        Figure(f"{slug}-timeline-latency", f"{run_id}: latency through the faults",
               Axis("time from the measured start (s)"), Axis("latency (µs)", "log"),
               lines=(Line("p50", seconds, p50, P50), Line("p99", seconds, p99, P99),
                      Line("max", seconds, highest, MAXIMUM, dashed=True)),
               markers=markers, shades=shades,
               caption=f"Latency of the messages intended in each interval ({per}, by "
                       f"intended send time). {caption}"),
        Figure(f"{slug}-timeline-rate", f"{run_id}: receive rate through the faults",
               Axis("time from the measured start (s)"), Axis("messages/s"),
               lines=(Line("received", seconds, received, RECEIVER),),
               markers=markers, shades=shades,
               caption=f"Receipts {per}, by receive time. {caption}"),
    ]


def lacking(run: RunInputs, slug: str) -> int:
    """How many of the per-message plots its series.json lacks the data of."""
    if run.series is None:
        return len(BUILDERS)
    return sum(build(run.series, slug, run.run_id) is None for build in BUILDERS)


def figures(run: RunInputs, slug: str) -> list[Figure]:
    """The run's per-message plots (a shaped run's against its shape first), then its fault
    timeline; empty without series.json."""
    if run.series is None:
        return []
    found = [against_shape(run, slug),
             *(build(run.series, slug, run.run_id) for build in BUILDERS)]
    faults = run.summary.faults or []
    timeline = fault_timeline(run.series, faults, slug, run.run_id) if faults else []
    return [*(figure for figure in found if figure is not None), *timeline]
