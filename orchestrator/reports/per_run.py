"""Per-run plots from the per-message analysis (`series.json`): latency over the run,
sender and receiver throughput together, the latency histogram with its humps, and CPU
per message of sender, receiver and broker; before them, for a run with faults, a rate
shape or a backlog, its timeline (orchestrator.reports.timeline).

A part of series.json that is absent or malformed drops that plot only; the page says what
is missing rather than failing the whole report.
"""

from __future__ import annotations

import math

from sixnines.formats.vocabulary import Load, Metric
from sixnines.orchestrator.reports import timeline
from sixnines.orchestrator.reports.inputs import RunInputs
from sixnines.orchestrator.reports.model import Axis, Band, Figure, Line, Marker, slugify
from sixnines.orchestrator.reports.series_parts import (
    BROKER,
    LATENCY,
    MEAN,
    RECEIVER,
    SENDER,
    SERVICE,
    clean,
    numbers,
)
from sixnines.orchestrator.reports.ticks import number


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
    latency = numbers(series.get(Metric.LATENCY), "n", "min_us", "mean_us", "max_us")
    if latency is None or not latency[0]:
        return None
    n, low, mean, high = latency
    lines = [Line("latency mean", n, mean, MEAN)]
    service = numbers(series.get(Metric.SERVICE_TIME), "n", "mean_us")
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
    latency = numbers(series.get(Metric.SATURATION_LATENCY), "n", "min_us", "mean_us", "max_us")
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
        found = numbers(series.get(key), "t_s", "msg_s")
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
                  lines=(Line(label, clean(edges), clean(counts), LATENCY,
                              style="steps"),),
                  markers=markers,
                  caption="Log-spaced bins; dashed lines mark the modes (humps) found by "
                          "the analysis. Empty bins leave gaps on the log count axis.")


def cpu_per_message(series: dict, slug: str, run_id: str) -> Figure | None:
    part = series.get("cpu")
    lines = []
    for name, shade in (("sender", SENDER), ("receiver", RECEIVER), ("broker", BROKER)):
        found = numbers(part.get(name) if isinstance(part, dict) else None,
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


def lacking(run: RunInputs, slug: str) -> int:
    """How many of the per-message plots its series.json lacks the data of (the timeline
    among them, for a run that has one: timeline.expected)."""
    wanted = timeline.expected(run.summary)
    if run.series is None:
        return len(BUILDERS) + int(wanted)
    missing = sum(build(run.series, slug, run.run_id) is None for build in BUILDERS)
    return missing + int(wanted and timeline.figure(run, slug) is None)


def figures(run: RunInputs, slug: str) -> list[Figure]:
    """The run's timeline first (a run with faults, a rate shape or a backlog: what the
    run is about), then its per-message plots; empty without series.json."""
    if run.series is None:
        return []
    found = [timeline.figure(run, slug),
             *(build(run.series, slug, run.run_id) for build in BUILDERS)]
    return [figure for figure in found if figure is not None]
