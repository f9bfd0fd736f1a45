"""A backlog run's build and drain (summary.json `backlog`, spark_jobs.backlog_pass) as a
section of the run's HTML: the verdict in words, what was built, when the consumers went
and when the backlog was gone (or what was left at the bound), and the latency of the
backlog's messages apart from the live ones'. The run's timeline marks the same instants
(orchestrator.reports.timeline)."""

from __future__ import annotations

from html import escape

from sixnines.formats.summary import BacklogFigures, RunSummary
from sixnines.orchestrator.reports.table import count, percentile_cells, rate

LATENCY_KEYS = ("p50", "p90", "p99", "p99.9", "max")
HEAD = ("built messages", "built bytes", "released at s", "bound s", "drained at s",
        "drained in s", "drain msg/s", "send msg/s", "left at the bound")


def _seconds(value: float | None) -> str:
    return "–" if value is None else f"{value:,.3f}"


def _figures(backlog: BacklogFigures) -> str:
    cells = [count(backlog.built_messages), count(backlog.built_bytes),
             _seconds(backlog.released_at_s), f"{backlog.drain_within_s:g}",
             _seconds(backlog.drained_at_s), _seconds(backlog.drained_in_s),
             rate(backlog.drain_rate), rate(backlog.send_rate),
             "–" if backlog.drained else count(backlog.left_messages)]
    head = "".join(f"<th>{escape(h)}</th>" for h in HEAD)
    return (f'<div class="scroll"><table class="figures backlog"><thead><tr>{head}</tr>'
            f"</thead><tbody><tr>{''.join(f'<td>{cell}</td>' for cell in cells)}</tr>"
            "</tbody></table></div>")


def _latency(backlog: BacklogFigures) -> str:
    head = '<th class="text">latency µs</th>' + "".join(
        f"<th>{escape(h)}</th>" for h in (*LATENCY_KEYS, "count"))
    rows = "".join(f'<tr><td class="text">{name}</td>{percentile_cells(figures, LATENCY_KEYS)}'
                   f"<td>{count(figures.count)}</td></tr>"
                   for name, figures in (("backlog messages", backlog.backlog_latency_us),
                                         ("live messages", backlog.live_latency_us)))
    return (f'<div class="scroll"><table class="figures"><thead><tr>{head}</tr></thead>'
            f"<tbody>{rows}</tbody></table></div>")


def backlog_section(summary: RunSummary) -> str:
    """The section, or "" for a run that built no backlog."""
    backlog = summary.backlog
    if backlog is None:
        return ""
    verdict = "good" if backlog.drained else "bad"
    return (f'<div class="backlog"><h4>Backlog build and drain</h4>'
            f'<p class="{verdict}">{escape(backlog.verdict)}</p>{_figures(backlog)}'
            f"{_latency(backlog)}"
            '<p class="note">Times in seconds from the measured start. Built: sent before '
            "the consumers were released, none of it read; drained: when what each consumer "
            "still had to receive fell to 1% of that; drain msg/s: what each consumer "
            "received per second from the release until then (or until the bound), while "
            "the producers sent send msg/s. Backlog messages: intended before the release; "
            "live ones: intended once the backlog was gone. The run's own latency holds "
            "both (docs/results.md, <code>backlog</code>).</p></div>")
