"""A run's faults (summary.json `faults`, spark_jobs.faults) as an HTML table beside its
figures: what each cost, as the console's fault table says it, with the window's full
accounting."""

from __future__ import annotations

from html import escape

from sixnines.formats.summary import FaultFigures, FaultWindow, RunSummary
from sixnines.orchestrator.reports.table import count, micro

HEAD = ("fault", "at s", "action", "target", "outcome", "p99 µs before", "during", "after",
        "max in window µs", "recovered in", "receive dip msg/s", "backlog", "drained in",
        "sent", "lost", "unknown", "duplicated", "reordered")
LABELS = (2, 3, 4)  # the columns of words: left, and never broken (an agent id is one word)


def _p99(window: FaultWindow | None) -> str:
    return micro(window.p99_us if window is not None else None)


def _seconds(value: float | None) -> str:
    return "–" if value is None else f"{value * 1000:,.0f} ms"


def _recovery(fault: FaultFigures) -> str:
    if fault.recovered is False:
        return '<span class="bad">never</span>'
    return _seconds(fault.recovered_s)


def _row(fault: FaultFigures) -> str:
    accounted = fault.delivery
    counts = ([count(getattr(accounted, name)) for name in
               ("sent", "lost", "unknown", "duplicated", "reordered")]
              if accounted is not None else ["–"] * 5)
    cells = [str(fault.index), f"{fault.at_s:g}", escape(fault.action), escape(fault.target),
             escape(fault.outcome), _p99(fault.before), _p99(fault.during), _p99(fault.after),
             micro(fault.max_in_window_us), _recovery(fault),
             "–" if fault.dip_msg_s is None else f"{fault.dip_msg_s:,.0f}",
             "–" if fault.backlog is None else count(fault.backlog),
             _seconds(fault.drained_s), *counts]
    return "<tr>" + "".join(f'<td class="label">{cell}</td>' if i in LABELS
                            else f"<td>{cell}</td>" for i, cell in enumerate(cells)) + "</tr>"


def fault_table(summary: RunSummary) -> str:
    """The table, or "" for a run without faults."""
    if not summary.faults:
        return ""
    head = "".join(f'<th class="label">{escape(h)}</th>' if i in LABELS
                   else f"<th>{escape(h)}</th>" for i, h in enumerate(HEAD))
    rows = "".join(_row(fault) for fault in summary.faults)
    notes = "".join(f"<li>fault {fault.index}: {escape(fault.note)}</li>"
                    for fault in summary.faults if fault.note)
    return (f'<div class="scroll"><table class="figures"><thead><tr>{head}</tr></thead>'
            f"<tbody>{rows}</tbody></table></div>"
            '<p class="note">Per fault: latency of the messages intended before, during and '
            "after it; recovered in: from its end until per-interval latency is back inside "
            "the pre-fault band; the accounting of the messages intended in its window "
            "(docs/results.md, \"Faults\").</p>"
            + (f'<ul class="note">{notes}</ul>' if notes else ""))
