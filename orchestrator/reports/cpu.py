"""A run's CPU figures (summary.json `cpu`, spark_jobs.cpu) as a small HTML table beside
its latency figures: CPU µs per message for sender, receiver and broker, the cores each
used, how the agents' loops spent their time (on a CPU, waiting for one, blocked in a
call: what says whose doing a send lag was, formats.lag), and the notes (why the broker
has no figures, the monitor's troubles)."""

from __future__ import annotations

from html import escape

from sixnines.formats.summary import CpuSide, Figures, RunSummary
from sixnines.orchestrator.reports.table import DIM_TITLE, count, micro
from sixnines.orchestrator.results.console_tables import supported

SIDES = ("sender", "receiver", "broker")
FIGURES = ("lower_median", "mean", "robust_deviation", "p90", "p99", "max")
HEAD = ("CPU µs per message", "median", "mean", "robust dev.", "p90", "p99", "max",
        "intervals", "cores", "empty intervals", "loops ran s", "waited s", "blocked s")
LOOP = ("running_s", "waiting_s", "blocked_s")


def _cell(figures: Figures, key: str) -> str:
    if key.startswith("p") and not supported(key, figures.count):
        return f'<td class="dim" title="{DIM_TITLE}">{micro(figures.figure(key))}</td>'
    return f"<td>{micro(figures.figure(key))}</td>"


def _row(side: str, figures: CpuSide | None) -> str:
    if figures is None:
        return (f'<tr><td class="text">{side}</td>'
                f'<td colspan="{len(HEAD) - 1}" class="text">no samples</td></tr>')
    per_message, cores = figures.us_per_message, figures.cores
    return (f'<tr><td class="text">{side}</td>'
            + "".join(_cell(per_message, key) for key in FIGURES)
            + f"<td>{count(per_message.count)}</td>"
            + f"<td>{'–' if cores is None else f'{cores:.3f}'}</td>"
            + f"<td>{count(figures.empty_intervals)}</td>"
            + "".join(f"<td>{'–' if loop is None else f'{getattr(loop, key):,.2f}'}</td>"
                      for loop in (figures.loop,) for key in LOOP)
            + "</tr>")


def cpu_table(summary: RunSummary) -> str:
    """The table, or "" for a summary without CPU figures (older analyses)."""
    usage = summary.cpu
    if usage is None:
        return ""
    head = "".join(f'<th class="text">{escape(h)}</th>' if i == 0 else f"<th>{escape(h)}</th>"
                   for i, h in enumerate(HEAD))
    rows = "".join(_row(side, getattr(usage, side)) for side in SIDES)
    notes = "".join(f"<li>{escape(str(note))}</li>" for note in usage.notes)
    return (f'<div class="scroll"><table class="figures"><thead><tr>{head}</tr></thead>'
            f"<tbody>{rows}</tbody></table></div>"
            + (f'<ul class="note">{notes}</ul>' if notes else ""))
