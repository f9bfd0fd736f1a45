"""Network faults on an SSH host: a partition (nftables drops every packet in or out of the
host but its SSH traffic) or a slow link (tc: tbf for a rate, netem for delay and loss),
each held in place by a process on the host (launchers.link_hold) from the run's start.

Why all but SSH: the controller reaches the host's agents, broker and guard over its SSH
connection; cutting it would end the run (the agents lose their control channel) and make
the guard take the fault away at once. Everything else (broker, agents, other hosts, the
controller's own connections to a broker there) is cut, in both directions, loopback
excepted. The holder is registered with the host's guard like any process, so it takes
the fault away when the fault's window ends, when the run ends, and when the controller
dies; its own deadline bounds it should all of these fail.
"""

from __future__ import annotations

import contextlib
import json
import queue
import secrets
import time
from pathlib import Path

from sixnines.orchestrator.launchers.base import EOF_LINE, Launcher, LaunchError
from sixnines.orchestrator.launchers.link_hold import HELD, READY, UNDONE
from sixnines.orchestrator.launchers.shaping import (
    NETEM_PROBE,
    clear_command,
    interface_of,
    qdisc_commands,
)

MODULE = "sixnines.orchestrator.launchers.link_hold"
#: The holder undoes at the latest this long after the fault's planned end.
DEADLINE_MARGIN_S = 10.0
ANSWER_TIMEOUT_S = 30.0
DRAIN_TIMEOUT_S = 5.0  # a stopped holder's output ends in milliseconds

Commands = list[list[str]]


def partition_commands(table: str, ssh_port: int) -> tuple[Commands, Commands]:
    """nftables table `table` dropping all traffic in and out but loopback and SSH (both
    directions of `ssh_port`, where the controller's connection is); its removal."""
    chains = [f"add chain inet {table} {hook} {{ type filter hook {hook} priority -10; "
              f"policy drop; }}; add rule inet {table} {hook} {way} lo accept; "
              f"add rule inet {table} {hook} tcp dport {ssh_port} accept; "
              f"add rule inet {table} {hook} tcp sport {ssh_port} accept"
              for hook, way in (("input", "iif"), ("output", "oif"))]
    ruleset = "; ".join([f"add table inet {table}", *chains])
    return [["nft", ruleset]], [["nft", "delete", "table", "inet", table]]


def slow_link_commands(interface: str, rate: str | None, delay: str | None,
                       loss: str | None) -> tuple[Commands, Commands]:
    """The interface's root qdisc replaced (what the host sends is slowed); its removal."""
    return qdisc_commands(interface, rate, delay, loss), [clear_command(interface)]


class HeldLinkFault:
    """The controller's end of one holder: started (and ready) at once, `apply` and `undo`
    at the fault's times, `close` whatever happened before."""

    def __init__(self, launcher: Launcher, name: str, commands: tuple[Commands, Commands],
                 deadline_s: float, log_path: Path) -> None:
        apply, undo = commands
        self.launcher = launcher
        self.label = f"{name} on host {launcher.host}"
        self.process = launcher.start(
            [launcher.python, "-m", MODULE, "--deadline", f"{deadline_s:.3f}",
             json.dumps(apply), json.dumps(undo)], name, log_path)
        self.held = False
        self._output_ended = False
        self._guarded: list[int] = []
        try:
            self._expect(READY)
            # the host's guard undoes it too, after stopping what the controller left: a
            # holder killed before it could undo (its SIGKILL after the grace) leaves no
            # rule or qdisc behind (removing what is gone already fails harmlessly)
            self._guarded = [token for command in undo
                             if (token := launcher.on_controller_exit(command)) is not None]
        except LaunchError:
            self.close()
            raise

    def apply(self) -> None:
        """Put the fault in place; returns once it is (LaunchError: it is not)."""
        if not self.process.write_line("go"):
            raise LaunchError(f"{self.label}: its holder is gone")
        self._expect(HELD)
        self.held = True

    def undo(self) -> None:
        """Take the fault away; returns once it is gone (LaunchError: removal failed). The
        holder exits then; `close` waits for that."""
        if not self.process.write_line("undo"):
            raise LaunchError(f"{self.label}: its holder is gone")
        self._expect(UNDONE)
        self.held = False

    def close(self) -> None:
        """The holder stopped, undoing what it still holds (it also undoes on its input's
        end or the guard's signal, should the answer not come)."""
        if self.held:
            with contextlib.suppress(LaunchError):
                self.undo()
        self.process.shutdown()
        self._drain()
        for token in self._guarded:
            self.launcher.cancel_on_exit(token)
        self._guarded = []

    def _drain(self) -> None:
        """Its output read to the end: a line left queued holds the process (a cycle),
        and paramiko's files complain when the garbage collector meets them late."""
        deadline = time.monotonic() + DRAIN_TIMEOUT_S
        with contextlib.suppress(queue.Empty):
            while not self._output_ended:
                self._next_line(deadline)

    def _expect(self, answer: str) -> None:
        deadline = time.monotonic() + ANSWER_TIMEOUT_S
        while True:
            try:
                line = self._next_line(deadline)
            except queue.Empty:
                raise LaunchError(f"{self.label}: no {answer!r} from its holder within "
                                  f"{ANSWER_TIMEOUT_S:.0f} s") from None
            if line == answer:
                return
            if line is EOF_LINE or line.startswith("failed"):
                why = "its holder ended" if line is EOF_LINE else line.removeprefix("failed ")
                raise LaunchError(f"{self.label}: {why}")

    def _next_line(self, deadline: float) -> str | None:
        """The holder's next line (EOF_LINE at the end of its output); queue.Empty when
        none came by `deadline`."""
        _, line = self.process.lines.get(timeout=max(0.0, deadline - time.monotonic()))
        self._output_ended = self._output_ended or line is EOF_LINE
        return line


def arm(launcher: Launcher, name: str, action: str, for_s: float, log_path: Path,
        rate: str | None = None, delay: str | None = None, loss: str | None = None
        ) -> HeldLinkFault:
    """A holder for a `partition` or `slow-link` of `launcher`'s host, ready to apply.
    LaunchError where it cannot be done: no SSH host, no interface, no netem for a delay."""
    from sixnines.orchestrator.launchers.ssh import SshLauncher  # paramiko: only when used

    if not isinstance(launcher, SshLauncher):
        raise LaunchError(f"host {launcher.host}: {action} is possible on SSH hosts only")
    if action == "partition":
        commands = partition_commands(f"sixnines_{secrets.token_hex(4)}", launcher.port)
    else:
        found = launcher.run(["ip", "-o", "addr", "show"], timeout_s=30.0)
        interface = interface_of(launcher.address, found.output)
        if interface is None:
            raise LaunchError(f"{launcher.label}: no interface there holds "
                              f"{launcher.address}, so its link cannot be slowed")
        if (delay is not None or loss is not None) and not has_netem(launcher):
            raise LaunchError(
                f"netem is not available on {launcher.host}'s kernel: slow-link with delay "
                "or loss needs it; rate-only slow links use tbf")
        commands = slow_link_commands(interface, rate, delay, loss)
    return HeldLinkFault(launcher, name, commands, for_s + DEADLINE_MARGIN_S, log_path)


def has_netem(launcher: Launcher) -> bool:
    """Whether the host's kernel has netem, tried on a throwaway interface there."""
    return launcher.run(["sh", "-c", NETEM_PROBE], timeout_s=30.0).code == 0
