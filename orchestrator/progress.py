"""The live view while runs proceed: per agent, what it has sent and received so far.

On a terminal it is a live-updating table (rich); elsewhere (CI logs, pipes) one plain
line per event, so logs stay readable. Everything goes to stderr: stdout carries only the
results path, for scripts.
"""

from __future__ import annotations

import sys
import time

from rich.console import Console
from rich.live import Live
from rich.table import Table


class ProgressView:
    def __init__(self, total_runs: int, stream=None) -> None:
        self.console = Console(file=stream or sys.stderr)
        self.total_runs = total_runs
        self.live: Live | None = None
        self.point = None
        self.rows: dict[str, dict] = {}
        self.started_mono = 0.0
        self.span_s = 0.0

    # -- events from the runner -----------------------------------------------------------
    def begin_run(self, point, plans) -> None:
        self.point = point
        self.rows = {plan.agent_id: {"role": plan.role, "host": plan.host, "sent": 0,
                                     "received": 0, "state": "starting",
                                     "planned": plan.sends}
                     for plan in plans}
        self.started_mono = 0.0
        self.console.print(f"[bold]run {point.index}/{self.total_runs}[/] {point.run_id}")
        if self.console.is_terminal:
            self.live = Live(self._table(), console=self.console, refresh_per_second=4,
                             transient=True)
            self.live.start()

    def started(self, at_ns: int, span_ns: int) -> None:
        self.started_mono = time.monotonic()
        self.span_s = span_ns / 1e9
        for row in self.rows.values():
            row["state"] = "running"
        self._refresh()

    def progress(self, agent_id: str, sent: int, received: int) -> None:
        row = self.rows.get(agent_id)
        if row is not None:
            row["sent"], row["received"] = sent, received
            self._refresh()

    def agent_state(self, agent_id: str, state: str) -> None:
        row = self.rows.get(agent_id)
        if row is not None:
            row["state"] = state
            self._refresh()
            if self.live is None and state != "ok":
                self.console.print(f"  {agent_id} on {row['host']}: {state}")

    def end_run(self, point, status: str, problems: list[str]) -> None:
        if self.live is not None:
            self.live.stop()
            self.live = None
        colour = {"ok": "green", "partial": "yellow"}.get(status, "red")
        self.console.print(f"  [{colour}]{status}[/]")
        for problem in problems:  # not wrapped: problems hold paths to copy
            self.console.print(f"  - {problem}", style=colour, markup=False, highlight=False,
                               soft_wrap=True)

    # -- rendering ----------------------------------------------------------------------------
    def _refresh(self) -> None:
        if self.live is not None:
            self.live.update(self._table())

    def _table(self) -> Table:
        elapsed = time.monotonic() - self.started_mono if self.started_mono else 0.0
        title = f"{self.point.run_id}  {min(elapsed, self.span_s):5.1f}/{self.span_s:.1f} s"
        table = Table(title=title, title_justify="left", expand=False)
        for column in ("agent", "role", "host", "sent", "received", "state"):
            table.add_column(column, justify="right" if column in ("sent", "received") else "left")
        for agent_id, row in self.rows.items():
            sent = f"{row['sent']:,}/{row['planned']:,}" if row["planned"] else "-"
            received = f"{row['received']:,}" if row["role"] != "producer" else "-"
            table.add_row(agent_id, row["role"], row["host"], sent, received, row["state"])
        return table
