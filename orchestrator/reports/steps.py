"""A shape of steps' figures (summary.json `steps`, spark_jobs.steps_pass) as an HTML table
in the run's section: per step its intended rate against the rates sent and received
within it, and the latency and send lag of the messages intended within it, as the
console's step table says them."""

from __future__ import annotations

from html import escape

from sixnines.formats.summary import RunSummary, StepFigures
from sixnines.orchestrator.reports.table import count, micro, percentile_cells, rate
from sixnines.orchestrator.results.console_tables import STEP_KEYS

HEAD = ("step", "from s", "for s", "intended msg/s", "sent", "received", "send msg/s",
        "receive msg/s", *(f"latency {key} µs" if key == STEP_KEYS[0] else key
                           for key in STEP_KEYS), "count", "send lag p99 µs")


def _row(number: int, step: StepFigures) -> str:
    cells = [str(number), f"{step.start_s:g}", f"{step.duration_s:g}", rate(step.rate),
             count(step.sent), count(step.received), rate(step.send_rate),
             rate(step.receive_rate)]
    return ("<tr>" + "".join(f"<td>{cell}</td>" for cell in cells)
            + percentile_cells(step.latency_us, STEP_KEYS)
            + f"<td>{count(step.latency_us.count)}</td>"
            + f"<td>{micro(step.send_lag_us.p99)}</td></tr>")


def steps_table(summary: RunSummary) -> str:
    """The table, or "" for a run without steps."""
    if not summary.steps:
        return ""
    head = "".join(f"<th>{escape(h)}</th>" for h in HEAD)
    rows = "".join(_row(number, step) for number, step in enumerate(summary.steps, start=1))
    return (f'<div class="scroll"><table class="figures steps"><thead><tr>{head}</tr></thead>'
            f"<tbody>{rows}</tbody></table></div>"
            '<p class="note">Per step: from and for in seconds from the measured start; sent '
            "and received, and their rates, count what was timed within the step (a backlog "
            "built in one step shows in the next one's receive rate); latency and send lag "
            "are of the messages intended within it, whenever they went (docs/results.md, "
            "<code>steps</code>).</p>")
