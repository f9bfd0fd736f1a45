"""The console tables: each run's parameters, accounting, throughput (msg/s and MB/s) and
latency distribution as `sixnines run` and `sixnines report` print them, with its problems,
warnings and notes; then each repeated case's merged distribution, with how far its
repeats spread (orchestrator.results.overview prints what follows: the setups and the
side-by-side table)."""

from __future__ import annotations

from collections.abc import Sequence

from rich.console import Console
from rich.table import Table

from sixnines.formats.durability import labelled
from sixnines.formats.load import latency_of, saturation
from sixnines.formats.status import CORRUPT
from sixnines.formats.summary import (
    RATES_SPREAD,
    FaultFigures,
    FaultWindow,
    Figures,
    RepeatedCase,
    RunSummary,
    Spread,
)
from sixnines.formats.vocabulary import RECEIVER_TIMED, Metric
from sixnines.formats.wording import megabytes_text, params_text
from sixnines.orchestrator.results.store import FIGURE_KEYS
from sixnines.orchestrator.terminal import markup

METRICS = ((Metric.LATENCY.summary_field, "latency"),
           (Metric.SERVICE_TIME.summary_field, "service"),
           (Metric.SEND_LAG.summary_field, "send lag"))
#: a receiver's time − a producer's
CROSS_CLOCK_METRICS = tuple(metric.summary_field for metric in RECEIVER_TIMED)


def us_text(value: float | None) -> str:
    if value is None:
        return "-"
    return f"{value:,.1f}" if value < 10_000 else f"{value:,.0f}"


def supported(key: str, count: int) -> bool:
    """Whether `count` samples can tell percentile `key` from the max: at least one sample
    must lie above it (count × (1 − p) ≥ 1)."""
    if not key.startswith("p"):
        return True
    return count * (1 - float(key[1:]) / 100) >= 1


def _cell(figures: Figures, key: str) -> str:
    text = us_text(figures.figure(key))
    return text if supported(key, figures.count) else f"[dim]{text}[/]"


def _clock_bound_us(summary: RunSummary) -> float | None:
    """The clock bound of cross-host figures, µs; None when every figure is on one clock."""
    bound = summary.clock_bound_ns
    return None if bound is None else bound / 1000


def _clock_cells(field: str, bound: float | None) -> list[str]:
    """A metric row's "± clock" cell, present only when some figure was timed across hosts."""
    if bound is None:
        return []
    return [us_text(bound) if field in CROSS_CLOCK_METRICS else ""]


def _metrics(summary: RunSummary) -> tuple[tuple[str, str], ...]:
    """The (field, label) rows a run's table shows: its saturation latency alone in
    throughput mode (no schedule: no open-loop latency, service time or send lag)."""
    return (latency_of(summary),) if saturation(summary) else METRICS


def _captions(summary: RunSummary) -> list[str]:
    """Footnotes: dim percentiles, and what the ± clock column means (docs/design.md rule 3)."""
    captions = []
    if saturation(summary):
        captions.append("throughput mode (rate: max): saturation latency = receive − send "
                        "with the system flooded, not open-loop latency")
    if any(not supported(key, summary.figures(field).count)
           for field, _ in _metrics(summary) for key in FIGURE_KEYS):
        captions.append("dim: too few samples for that percentile (fewer than 1/(1-p))")
    bound = _clock_bound_us(summary)
    if bound is not None:
        cross = summary.latency_pairs.cross_clock
        captions.append(f"± clock: {cross:,} deliveries timed across hosts, both ends put on "
                        f"the controller's clock; figures may be off by up to {us_text(bound)} µs")
    return captions


STATUS_COLOUR: dict[str | None, str] = {"ok": "green", "partial": "yellow",
                                     CORRUPT: "bold red"}  # else red


def _status_text(summary: RunSummary) -> str:
    status = summary.status
    return f"[{STATUS_COLOUR.get(status, 'red')}]{markup(status)}[/]"


def _counts(summary: RunSummary) -> str:
    """The accounting line: every expected delivery is delivered, lost or unknown (the
    last only when receivers died: it is not loss)."""
    unknown = summary.unknown or 0
    broken = summary.lost_acknowledged or 0  # the system's promise broken: said in red
    return (f"sent {summary.sent or 0:,}  received {summary.received or 0:,}  "
            f"delivered {summary.delivered or 0:,}  lost {summary.lost or 0:,}  "
            + (f"[red]the broker acknowledged {broken:,} messages it never delivered[/]  "
               if broken else "")
            + (f"[yellow]unknown {unknown:,}[/]  " if unknown else "")
            + f"duplicated {summary.duplicated or 0:,}  "
            f"reordered {summary.reordered or 0:,}")


#: The rows under a metric of a repeated case: the repeats' figures and their band.
SPREAD_ROWS = (("  repeats min", "min"), ("  median", "median"), ("  max", "max"))


def _band(spread: Spread | None) -> str:
    return "" if spread is None or spread.band_pct is None else \
        f" (band {spread.band_pct:.1f}%)"


def run_table(summary: RunSummary, case: RepeatedCase | None = None) -> Table:
    """One run: accounting and throughput in the title, the latency distribution below;
    figures timed across hosts carry their clock bound in a "± clock" column. For a
    repeated case (`summary` its merged run), the repeats it merged in the title, and
    under each metric the repeats' min, median and max and the band between them."""
    spread = case.spread if case is not None else {}
    rates = spread.get(RATES_SPREAD, {})
    line = "  ".join(f"{side} {getattr(summary, field) or 0:,.0f} msg/s "
                     f"{megabytes_text(summary.bytes_per_s(field))} MB/s"
                     f"{_band(rates.get(field))}"
                     for side, field in (("send", "send_rate"), ("receive", "receive_rate")))
    merged = "" if case is None else (f"  {len(case.merged_from)} of {len(case.runs)} repeats "
                                      f"merged: {markup(', '.join(case.merged_from))}")
    system = "" if summary.durability is None else \
        f"  {markup(labelled(summary.system, summary.durability))}"
    table = Table(title=f"{markup(summary.run_id)}{system}  {_status_text(summary)}{merged}\n"
                        f"[dim]{markup(params_text(summary.params))}[/]\n"
                        f"{_counts(summary)}\n{line}"
                        + ("" if summary.keys is None else f"\n{markup(summary.keys.line())}"),
                  title_justify="left")
    table.add_column("µs", justify="left")
    bound = _clock_bound_us(summary)
    for key in (*FIGURE_KEYS, *(["± clock"] if bound is not None else []), "count"):
        table.add_column(key, justify="right")
    for field, label in _metrics(summary):
        figures = summary.figures(field)
        table.add_row(label, *(_cell(figures, key) for key in FIGURE_KEYS),
                      *_clock_cells(field, bound), f"{figures.count:,}")
        by_key = spread.get(field, {})
        for row, statistic in SPREAD_ROWS if by_key else ():
            table.add_row(f"[dim]{row}[/]", *(
                us_text(getattr(by_key[key], statistic)) if key in by_key else "-"
                for key in FIGURE_KEYS), *_clock_cells(field, bound), "")
        if by_key:
            table.add_row("[dim]  band %[/]", *(
                "-" if by_key.get(key) is None or by_key[key].band_pct is None
                else f"{by_key[key].band_pct:.1f}" for key in FIGURE_KEYS),
                *_clock_cells(field, bound), "")
    captions = _captions(summary)
    if captions:
        table.caption = "\n".join(captions)
        table.caption_justify = "left"
    return table


#: The latency percentiles a step's row shows.
STEP_KEYS = ("p50", "p99", "p99.9", "max")


def steps_table(summary: RunSummary) -> Table | None:
    """A shape of steps: one row per step, its intended rate against the rates achieved
    and its messages' latency (None: the run has no steps)."""
    if not summary.steps:
        return None
    table = Table(title="per step: from and for in s, rates in msg/s, latency in µs",
                  title_justify="left")
    for column in ("step", "from", "for", "intended", "sent", "received", *STEP_KEYS,
                   "count"):
        table.add_column(column, justify="right")
    for number, step in enumerate(summary.steps, start=1):
        latency = step.latency_us
        table.add_row(str(number), f"{step.start_s:g}", f"{step.duration_s:g}",
                      f"{step.rate:,.0f}", f"{step.send_rate or 0:,.0f}",
                      f"{step.receive_rate or 0:,.0f}",
                      *(_cell(latency, key) for key in STEP_KEYS), f"{latency.count:,}")
    return table


FAULT_COLUMNS = ("fault", "at s", "action", "target", "p99 µs before", "during", "after",
                 "max in window", "recovered in", "backlog", "lost", "unknown")


def _p99(window: FaultWindow | None) -> str:
    return us_text(window.p99_us if window is not None else None)


def _recovery_text(fault: FaultFigures) -> str:
    if fault.recovered is None:
        return "-"
    if not fault.recovered or fault.recovered_s is None:
        return "[red]never[/]"
    return f"{fault.recovered_s * 1000:,.0f} ms"


def _count_text(value: int | None, style: str) -> str:
    if value is None:
        return "-"
    return f"[{style}]{value:,}[/]" if value else "0"


def fault_table(summary: RunSummary) -> Table | None:
    """What each fault of the run cost (summary.json `faults`, docs/results.md): p99 of the
    messages intended before, during and after it, the largest latency in its window, how
    long latency took to come back inside the pre-fault band, the backlog it built and what
    its window lost or left unknown. None without faults."""
    if not summary.faults:
        return None
    table = Table(title=f"{markup(summary.run_id)}  faults", title_justify="left")
    for column in FAULT_COLUMNS:
        table.add_column(column, justify="left" if column in ("action", "target") else "right")
    for fault in summary.faults:
        counted = fault.delivery
        table.add_row(
            str(fault.index), f"{fault.at_s:g}",
            markup(fault.action), markup(fault.target), _p99(fault.before), _p99(fault.during),
            _p99(fault.after), us_text(fault.max_in_window_us), _recovery_text(fault),
            f"{fault.backlog:,}" if fault.backlog is not None else "-",
            _count_text(counted.lost if counted else None, "red"),
            _count_text(counted.unknown if counted else None, "yellow"))
    notes = [f"fault {fault.index}: {fault.note}" for fault in summary.faults if fault.note]
    table.caption = "\n".join([
        "at: when it was planned (s from the measured start); recovered in: from its end "
        "until per-interval latency is back inside the pre-fault band (docs/design.md)",
        *map(markup, notes)])
    table.caption_justify = "left"
    return table


def backlog_table(summary: RunSummary) -> Table | None:
    """A backlog run: what was built, when the consumers went and the backlog was gone
    (or its verdict), and the latency of the backlog's messages against the live ones'
    (None: the run built no backlog)."""
    backlog = summary.backlog
    if backlog is None:
        return None
    table = Table(title=(f"backlog: {backlog.built_messages:,} messages "
                         f"({backlog.built_bytes:,} B) built, consumers released at "
                         f"{backlog.released_at_s:g} s (bound {backlog.drain_within_s:g} s): "
                         f"{backlog.verdict}"), title_justify="left")
    for column in ("latency µs", *STEP_KEYS, "count"):
        table.add_column(column, justify="right")
    for name, figures in (("backlog messages", backlog.backlog_latency_us),
                          ("live messages", backlog.live_latency_us)):
        table.add_row(name, *(_cell(figures, key) for key in STEP_KEYS), f"{figures.count:,}")
    return table


def print_tables(summaries: list[RunSummary], console: Console,
                 cases: Sequence[RepeatedCase] = ()) -> None:
    """Each run's table, then its problems (red), warnings (yellow: what to act on before
    trusting the figures) and notes (dim: facts that ask nothing). A run without figures
    (corrupt: its files fail their checks; or never analysed: nothing recorded, or its
    analysis failed) gets a line saying so instead of a table of zeros; its problems say
    why. Then each repeated case the same way, its repeats merged."""
    shown = [*((summary, None) for summary in summaries),
             *((case.merged, case) for case in cases)]
    for summary, case in shown:
        if summary.status == CORRUPT and case is None:
            console.print(f"{markup(summary.run_id)}  {_status_text(summary)}: its "
                          "files fail their checks, no figures")
        elif summary.sent is None:
            console.print(f"{markup(summary.run_id)}  {_status_text(summary)}: no figures")
        else:
            console.print(run_table(summary, case))
            for extra in (steps_table(summary), backlog_table(summary),
                          fault_table(summary) if case is None else None):
                if extra is not None:
                    console.print(extra)
        for style, mark, lines in (("red", "!", summary.problems),
                                   ("yellow", "!", summary.warnings),
                                   ("dim", "·", summary.notes)):
            for line in lines:
                console.print(f"  [{style}]{mark} {markup(line)}[/]", soft_wrap=True,
                              highlight=False)
        note = summary.broker.note
        if note:
            console.print(f"  note: {markup(note)}", soft_wrap=True)
