"""The live view while runs proceed: per agent, what it has sent and received so far, and
per host the disk written and left, with a warning when a host will run out before the
run ends (at the rate its agents have been writing).

On a terminal it is a live-updating table (rich); elsewhere (CI logs, pipes) one plain
line per event, so logs stay readable. Everything goes to stderr: stdout carries only the
results path, for scripts.
"""

from __future__ import annotations

import time
from collections.abc import Sequence

from rich.live import Live
from rich.table import Table

from sixnines.formats.atomic import human_bytes
from sixnines.formats.vocabulary import Role
from sixnines.orchestrator.plan.agents import AgentPlan
from sixnines.orchestrator.scenario.matrix import RunPoint
from sixnines.orchestrator.terminal import console_for, markup, printable

REDRAWS_PER_S = 1


class ProgressView:
    def __init__(self, total_runs: int, stream=None) -> None:
        self.console = console_for(stream)
        self.total_runs = total_runs
        self.live: Live | None = None
        self.point: RunPoint | None = None
        self.rows: dict[str, dict] = {}
        self.started_mono = 0.0
        self.span_s = 0.0
        self.warned: set[str] = set()  # hosts warned about in this run

    # -- events from the runner -----------------------------------------------------------
    def begin_run(self, point: RunPoint, plans: Sequence[AgentPlan]) -> None:
        self.point = point
        self.rows = {plan.agent_id: {"role": plan.role, "host": plan.host, "sent": 0,
                                     "received": 0, "state": "starting",
                                     "planned": plan.sends, "written": 0, "free": -1}
                     for plan in plans}
        self.started_mono = 0.0
        self.warned = set()
        self.console.print(f"[bold]run {point.index}/{self.total_runs}[/] {point.run_id}")
        if self.console.is_terminal:
            # drawn once a second by rich's own thread, never on an event: on a 2-core
            # machine a redraw per progress message (and 4 a second) cost the send loop's
            # tail 3x (docs/performance.md, "The product's own path")
            self.live = Live(get_renderable=self._table, console=self.console,
                             refresh_per_second=REDRAWS_PER_S, transient=True)
            self.live.start()

    def warn(self, text: str) -> None:
        """A warning about the run as it starts, on a line of its own (not wrapped)."""
        self.console.print(f"  ! {text}", style="yellow", markup=False, highlight=False,
                           soft_wrap=True)

    def started(self, at_ns: int, span_ns: int) -> None:
        self.started_mono = time.monotonic()
        self.span_s = span_ns / 1e9
        for row in self.rows.values():
            row["state"] = "running"

    def progress(self, agent_id: str, sent: int, received: int, disk_written: int = 0,
                 disk_free: int = -1) -> None:
        row = self.rows.get(agent_id)
        if row is not None:
            row["sent"], row["received"] = sent, received
            row["written"], row["free"] = disk_written, disk_free
            self._warn_of_full_disks()

    def disks(self) -> dict[str, tuple[int, int]]:
        """Per host: (bytes its agents have written, bytes left; -1 unknown). Agents on one
        host are taken to share a filesystem: the least any of them reports is left."""
        hosts: dict[str, tuple[int, int]] = {}
        for row in self.rows.values():
            written, free = hosts.get(row["host"], (0, -1))
            if row["free"] >= 0:
                free = row["free"] if free < 0 else min(free, row["free"])
            hosts[row["host"]] = (written + row["written"], free)
        return hosts

    def _warn_of_full_disks(self) -> None:
        elapsed = time.monotonic() - self.started_mono if self.started_mono else 0.0
        for host, (written, free) in self.disks().items():
            left_s = seconds_until_full(written, free, elapsed, self.span_s)
            if left_s is not None and host not in self.warned:
                self.warned.add(host)
                self.console.print(
                    f"  [red]warning:[/] {host} will run out of disk in about {left_s:.0f} s, "
                    f"before the run ends ({human_bytes(written)} written in {elapsed:.0f} s, "
                    f"{human_bytes(free)} left)")

    def agent_state(self, agent_id: str, state: str) -> None:
        row = self.rows.get(agent_id)
        if row is not None:
            row["state"] = state
            if self.live is None and state != "ok":
                self.console.print(f"  {agent_id} on {row['host']}: {markup(state)}")

    def end_run(self, point: RunPoint, status: str, problems: list[str]) -> None:
        if self.live is not None:
            self.live.stop()
            self.live = None
        colour = {"ok": "green", "partial": "yellow"}.get(status, "red")
        self.console.print(f"  [{colour}]{status}[/]")
        for problem in problems:  # not wrapped: problems hold paths to copy
            self.console.print(f"  - {printable(problem)}", style=colour, markup=False,
                               highlight=False, soft_wrap=True)

    # -- rendering ----------------------------------------------------------------------------

    def _table(self) -> Table:
        elapsed = time.monotonic() - self.started_mono if self.started_mono else 0.0
        point = self.point
        assert point is not None  # drawn only while a run goes
        title = f"{point.run_id}  {min(elapsed, self.span_s):5.1f}/{self.span_s:.1f} s"
        table = Table(title=title, title_justify="left", expand=False)
        for column in ("agent", "role", "host", "sent", "received", "state"):
            table.add_column(column, justify="right" if column in ("sent", "received") else "left")
        for agent_id, row in self.rows.items():
            sent = f"{row['sent']:,}/{row['planned']:,}" if row["planned"] else "-"
            received = f"{row['received']:,}" if row["role"] != Role.PRODUCER else "-"
            table.add_row(agent_id, row["role"], row["host"], sent, received, markup(row["state"]))
        table.caption = "disk: " + "; ".join(
            f"{host} {human_bytes(written)} written, {human_bytes(free) if free >= 0 else '?'} left"
            for host, (written, free) in self.disks().items())
        table.caption_justify = "left"
        return table


def seconds_until_full(written: int, free: int, elapsed_s: float, span_s: float) -> float | None:
    """When a host writing at its rate so far fills its disk, if that is before the run's
    end; None otherwise (or before a second of the run has told the rate)."""
    if free < 0 or elapsed_s < 1.0 or written <= 0:
        return None
    left_s = free / (written / elapsed_s)
    return left_s if left_s < span_s - elapsed_s else None

