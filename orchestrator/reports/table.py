"""The summary table and each run's figures table and warnings, as HTML.

Same rules as the console tables (orchestrator/results/console_tables.py): every
percentile to 99.9999% and the max with the sample count behind them; a percentile the
count cannot support is dimmed; cross-host figures carry their clock bound. Every string
from data is escaped.
"""

from __future__ import annotations

from html import escape

from sixnines.formats.durability import labelled
from sixnines.formats.hdr import PERCENTILE_KEYS
from sixnines.formats.load import latency_of, saturation
from sixnines.formats.status import FAILED, ORDER
from sixnines.formats.summary import Figures, RunSummary
from sixnines.formats.vocabulary import Metric
from sixnines.formats.wording import megabytes_text, params_text
from sixnines.orchestrator.reports.inputs import RunInputs
from sixnines.orchestrator.reports.per_run import humps_text
from sixnines.orchestrator.results.console_tables import supported

FIGURE_KEYS = (*PERCENTILE_KEYS, "max")
RATES = ("send_rate", "receive_rate")
METRICS = tuple((metric.summary_field, metric.label)
                for metric in (Metric.LATENCY, Metric.SERVICE_TIME, Metric.SEND_LAG))
TEXT_COLUMNS = ("run", "system", "parameters", "status", "µs")
DIM_TITLE = "too few samples for this percentile (fewer than 1/(1−p))"
#: The summary table's percentiles: the deepest two are in each run's own table.
SUMMARY_KEYS = (*PERCENTILE_KEYS[:5], "max")
#: what spark_jobs.series.humps_warnings says of a multi-modal distribution
HUMPS_WARNING = "is multi-modal"


def micro(value: object) -> str:
    if not isinstance(value, int | float):
        return "–"
    return f"{value:,.1f}" if value < 10_000 else f"{value:,.0f}"


def count(value: object) -> str:
    return f"{value:,}" if isinstance(value, int) else "–"


def _count(summary: RunSummary, field: str) -> str:
    """The count behind a metric's figures; "–" when the run has none (not analysed)."""
    figures = summary.metric(field)
    return count(None if figures is None else figures.count)


def rate(value: object) -> str:
    return f"{value:,.0f}" if isinstance(value, int | float) else "–"


def percentile_cells(figures: Figures, keys: tuple[str, ...] = FIGURE_KEYS) -> str:
    cells = []
    for key in keys:
        value = micro(figures.figure(key))
        if supported(key, figures.count):
            cells.append(f"<td>{value}</td>")
        else:
            cells.append(f'<td class="dim" title="{DIM_TITLE}">{value}</td>')
    return "".join(cells)


def _status(summary: RunSummary) -> str:
    status = str(summary.status or FAILED)
    css = status if status in ORDER else FAILED
    return f'<span class="status-{css}">{escape(status)}</span>'


def clock_bound_us(summary: RunSummary) -> float | None:
    bound = summary.clock_bound_ns
    return None if bound is None else bound / 1000


def notes(run: RunInputs) -> list[tuple[str, str]]:
    """(css class, escaped text) of everything a reader must know before trusting the
    figures: problems, warnings (generator saturated …), losses, clock bound, broker note,
    multi-modal latency. Facts that ask nothing of the reader (summary `notes`) are the
    run's details instead (`details`)."""
    s = run.summary
    out = [("bad", escape(str(p))) for p in s.problems]
    out += [("warn", escape(str(w))) for w in s.warnings]
    for key, css, found in (("lost", "bad", s.lost), ("duplicated", "warn", s.duplicated),
                            ("reordered", "warn", s.reordered),
                            ("unexpected", "warn", s.unexpected)):
        if found:
            out.append((css, f"{found:,} messages {key}"))
    if s.unknown:
        out.append(("bad", f"{s.unknown:,} deliveries unknown: expected at consumers that "
                           "died, after their last kept records (not lost)"))
    bound = clock_bound_us(s)
    if bound is not None:
        out.append(("warn", f"{count(s.latency_pairs.cross_clock)} deliveries timed across "
                            f"hosts: latency and service time may be off by up to "
                            f"{micro(bound)} µs"))
    if s.hlog_agrees is False:
        out.append(("warn", "the agents' interval logs disagree with the raw timestamps"))
    if saturation(s):
        out.append(("note", "throughput mode: latency here is saturation latency"))
    note = s.broker.note
    if note:
        out.append(("note", escape(f"broker: {note}")))
    humps = (run.series or {}).get("humps")
    said = any(HUMPS_WARNING in str(warning) for warning in s.warnings)
    if isinstance(humps, dict) and isinstance(humps.get("count"), int) and humps["count"] > 1 \
            and not said:
        out.append(("warn", escape(f"multi-modal latency: {humps_text(run.series)}")))
    return out


def details(summary: RunSummary) -> str:
    """A run's facts, folded in its section: how its figures were made (summary `notes`:
    windows left out, checks that did not apply) and its CPU placement. Nothing there asks
    the reader to act, so nothing there is coloured."""
    facts = [*summary.notes, *(f"CPU placement: {note}" for note in summary.cpu_placement)]
    if not facts:
        return ""
    items = "".join(f"<li>{escape(str(fact))}</li>" for fact in facts)
    return (f'<details class="facts"><summary>notes ({len(facts)})</summary>'
            f'<ul class="note">{items}</ul></details>')


def notes_list(run: RunInputs) -> str:
    items = "".join(f'<li class="{css}">{text}</li>' for css, text in notes(run))
    return f'<ul class="notes">{items}</ul>' if items else ""


def _params(summary: RunSummary, keys: list[str]) -> str:
    """The swept parameters in words; every one in the cell's tooltip."""
    params = summary.params
    return (f'<td class="text" title="{escape(params_text(params))}">'
            f"{escape(params_text(params, keys))}</td>")


def _header(head: list[str]) -> str:
    """Column titles; the text columns (run, system, parameters, status, metric) align left
    like their cells."""
    cells = "".join(f'<th class="text">{escape(h)}</th>' if h in TEXT_COLUMNS
                    else f"<th>{escape(h)}</th>" for h in head)
    return f"<thead><tr>{cells}</tr></thead>"


CAPTIONS = {
    "latency": "Latency in µs from the intended send time.",
    "saturation latency": "Throughput mode (rate: max): saturation latency in µs, receive − "
                          "send with the system flooded; not comparable with open-loop "
                          "latency. Read the rates first.",
}


def summary_table(runs: list[RunInputs], anchors: list[str], swept: list[str]) -> str:
    """All runs, one row each: one table for open-loop runs (latency) and one for
    throughput-mode runs (saturation latency), never mixed. `anchors`: each run's section
    id on the page."""
    groups: dict[tuple[str, str], list[tuple[RunInputs, str]]] = {}
    for run, anchor in zip(runs, anchors, strict=True):
        groups.setdefault(latency_of(run.summary), []).append((run, anchor))
    return "".join(_load_table(members, field, label, swept)
                   for (field, label), members in groups.items())


def _load_table(members: list[tuple[RunInputs, str]], field: str, label: str,
                swept: list[str]) -> str:
    """The runs of one load, their `field` figures under `label` p50 … p99.99 and max,
    the rates and what was lost; the rest (p99.999 on, the counts) is in each run's
    section, so the table fits the page."""
    bounds = any(clock_bound_us(r.summary) is not None for r, _ in members)
    head = ["run", "system", *(["parameters"] if swept else []), "status",
            *(f"{label} {k}" if k == "p50" else k for k in SUMMARY_KEYS),
            *(["± clock"] if bounds else []), "count", "send msg/s", "send MB/s", "recv msg/s",
            "recv MB/s", "lost", "unknown"]
    rows = []
    for run, anchor in members:
        s, figures = run.summary, run.summary.figures(field)
        bound = clock_bound_us(s)
        cells = [f'<td class="text"><a href="#{anchor}">{escape(run.run_id)}</a></td>',
                 f'<td class="text">{escape(labelled(s.system, s.durability))}</td>',
                 *([_params(s, swept)] if swept else []),
                 f'<td class="text">{_status(s)}</td>',
                 percentile_cells(figures, SUMMARY_KEYS),
                 *([f"<td>{'' if bound is None else micro(bound)}</td>"] if bounds else []),
                 f"<td>{_count(s, field)}</td>",
                 *(f"<td>{rate(getattr(s, field))}</td>"
                   f"<td>{megabytes_text(s.bytes_per_s(field))}</td>" for field in RATES),
                 *(f'<td class="{"bad" if n else ""}">{count(n)}</td>'
                   for n in (s.lost, s.unknown))]
        rows.append(f"<tr>{''.join(cells)}</tr>")
        listed = notes_list(run)
        if listed:
            rows.append(f'<tr class="notes"><td colspan="{len(head)}">{listed}</td></tr>')
    return (f'<div class="scroll"><table class="figures">{_header(head)}'
            f'<tbody>{"".join(rows)}</tbody></table></div>'
            f'<p class="caption">{CAPTIONS[label]} Dimmed: too few '
            "samples for that percentile (fewer than 1/(1−p)). Rates are measured at the "
            "senders and at the receivers separately; MB/s is msg/s times the message size "
            "(sizes that vary: each stream's msg/s times its messages' mean size) "
            "(1 MB = 1,048,576 bytes). Each run's section has p99.999 and "
            "beyond, and every count."
            + (" ± clock: the bound of figures timed across hosts (µs)." if bounds else "")
            + "</p>")


def counts_line(summary: RunSummary) -> str:
    """A run's accounting, as the console's table title says it."""
    if summary.sent is None:
        return ""
    found = [("sent", summary.sent), ("received", summary.received),
             ("delivered", summary.delivered), ("lost", summary.lost),
             ("unknown", summary.unknown), ("duplicated", summary.duplicated),
             ("reordered", summary.reordered)]
    return ('<p class="counts">' + " · ".join(f"{name} {count(value)}" for name, value in found
                                              if value or name != "unknown")
            + "".join(f" · {side} {rate(getattr(summary, field))} msg/s, "
                      f"{megabytes_text(summary.bytes_per_s(field))} MB/s"
                      for side, field in zip(("send", "receive"), RATES, strict=True))
            + "</p>")


def metrics_table(summary: RunSummary) -> str:
    """One run: latency, service time and send lag (a throughput-mode run: its saturation
    latency alone), every percentile and the count."""
    bound = clock_bound_us(summary)
    head = ["µs", *FIGURE_KEYS, "mean", *(["± clock"] if bound is not None else []), "count"]
    rows = []
    for key, label in (latency_of(summary),) if saturation(summary) else METRICS:
        figures = summary.figures(key)
        clock = [] if bound is None else \
            [micro(bound) if key != Metric.SEND_LAG.summary_field else ""]
        rows.append(f'<tr><td class="text">{label}</td>{percentile_cells(figures)}'
                    f"<td>{micro(figures.mean)}</td>"
                    + "".join(f"<td>{c}</td>" for c in clock)
                    + f"<td>{_count(summary, key)}</td></tr>")
    return (f'<div class="scroll"><table class="figures">{_header(head)}'
            f'<tbody>{"".join(rows)}</tbody></table></div>')
