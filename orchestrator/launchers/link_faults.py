"""Network faults on an SSH host: a partition (every packet in or out of the host dropped
but its SSH traffic, by nftables or, on a host without `nft`, by iptables) or a slow link
(tc: tbf for a rate, netem for delay and loss), each held in place by a process on the host
(launchers.held_faults) from the run's start.

Why all but SSH: the controller reaches the host's agents, broker and guard over its SSH
connection; cutting it would end the run (the agents lose their control channel) and make
the guard take the fault away at once. Everything else (broker, agents, other hosts, the
controller's own connections to a broker there) is cut, in both directions, loopback
excepted.
"""

from __future__ import annotations

import secrets
from pathlib import Path
from typing import TYPE_CHECKING

from sixnines.orchestrator.launchers.base import Launcher, LaunchError
from sixnines.orchestrator.launchers.held_faults import Commands, HeldFault
from sixnines.orchestrator.launchers.shaping import (
    NETEM_PROBE,
    clear_command,
    interface_of,
    qdisc_commands,
)

if TYPE_CHECKING:  # paramiko: imported only where an SSH host is used
    from sixnines.orchestrator.launchers.ssh import SshLauncher

#: The firewalls a partition can use, in the order they are tried, each with the programs
#: it needs on the host.
FIREWALLS = {"nftables": ("nft",), "iptables": ("iptables", "ip6tables")}
#: Prints those of its arguments the host has as programs (as the holder finds them).
FOUND = ("import sys; from sixnines.orchestrator.launchers.fault_hold import found; "
         "print(' '.join(found(sys.argv[1:])))")


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


def iptables_partition_commands(chain: str, ssh_port: int, programs: tuple[str, ...]
                                ) -> tuple[Commands, Commands]:
    """The same partition with iptables (and ip6tables, among `programs`): a chain of our
    own per direction (`<chain>_in`, `<chain>_out`) accepting loopback and SSH and dropping
    the rest, jumped to first from INPUT and OUTPUT; its removal (jumps, rules, chains)."""
    apply: Commands = []
    undo: Commands = []
    for program in programs:
        run = [program, "-w", "5"]
        for hook, way, suffix in (("INPUT", "-i", "in"), ("OUTPUT", "-o", "out")):
            name = f"{chain}_{suffix}"
            apply += [[*run, "-N", name],
                      [*run, "-A", name, way, "lo", "-j", "ACCEPT"],
                      *([*run, "-A", name, "-p", "tcp", side, str(ssh_port), "-j", "ACCEPT"]
                        for side in ("--dport", "--sport")),
                      [*run, "-A", name, "-j", "DROP"],
                      [*run, "-I", hook, "1", "-j", name]]
            undo += [[*run, "-D", hook, "-j", name], [*run, "-F", name], [*run, "-X", name]]
    return apply, undo


def slow_link_commands(interface: str, rate: str | None, delay: str | None,
                       loss: str | None) -> tuple[Commands, Commands]:
    """The interface's root qdisc replaced (what the host sends is slowed); its removal."""
    return qdisc_commands(interface, rate, delay, loss), [clear_command(interface)]


def arm(launcher: Launcher, name: str, action: str, for_s: float, log_path: Path,
        rate: str | None = None, delay: str | None = None, loss: str | None = None
        ) -> HeldFault:
    """A holder for a `partition` or `slow-link` of `launcher`'s host, ready to apply.
    LaunchError where it cannot be done: no SSH host, no firewall, no interface, no netem
    for a delay."""
    from sixnines.orchestrator.launchers.ssh import SshLauncher  # paramiko: only when used

    if not isinstance(launcher, SshLauncher):
        raise LaunchError(f"host {launcher.host}: {action} is possible on SSH hosts only")
    if action == "partition":
        tool, commands = _partition(launcher)
        return HeldFault(launcher, name, commands, for_s, log_path, tool)
    found = launcher.run(["ip", "-o", "addr", "show"], timeout_s=30.0)
    interface = interface_of(launcher.address, found.output)
    if interface is None:
        raise LaunchError(f"{launcher.label}: no interface there holds "
                          f"{launcher.address}, so its link cannot be slowed")
    if (delay is not None or loss is not None) and not has_netem(launcher):
        raise LaunchError(
            f"netem is not available on {launcher.host}'s kernel: slow-link with delay "
            "or loss needs it; rate-only slow links use tbf")
    return HeldFault(launcher, name, slow_link_commands(interface, rate, delay, loss), for_s,
                     log_path, "tc")


def _partition(launcher: SshLauncher) -> tuple[str, tuple[Commands, Commands]]:
    """The first firewall the host has (nftables, else iptables), in words for the fault's
    record, and its commands. LaunchError when it has neither."""
    names = [program for programs in FIREWALLS.values() for program in programs]
    done = launcher.run([launcher.python, "-c", FOUND, *names], timeout_s=30.0)
    if done.code != 0:
        raise LaunchError(f"{launcher.label}: cannot look for nft or iptables there: "
                          f"{done.output.strip()[-300:]}")
    there = set(done.output.split())
    mark = secrets.token_hex(4)
    if "nft" in there:
        return "nftables", partition_commands(f"sixnines_{mark}", launcher.port)
    if "iptables" in there:
        programs = tuple(name for name in FIREWALLS["iptables"] if name in there)
        return (f"iptables (no nft on {launcher.host})",
                iptables_partition_commands(f"sixnines_{mark}", launcher.port, programs))
    raise LaunchError(f"host {launcher.host} has neither nft (Debian package nftables) nor "
                      "iptables (Debian package iptables): a partition needs one of them")


def has_netem(launcher: Launcher) -> bool:
    """Whether the host's kernel has netem, tried on a throwaway interface there."""
    return launcher.run(["sh", "-c", NETEM_PROBE], timeout_s=30.0).code == 0
