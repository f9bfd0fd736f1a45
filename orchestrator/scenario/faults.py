"""Faults on purpose: the scenario's `faults:` list, each a fault at a time of the measured
run on one target (the broker, one node of a broker of several, the broker's data disk,
an agent, a host's link), and the checks that tie it to the run.

A fault is checked here on its own (its action, its fields); `fault_problems` checks the
list against the scenario: the time inside every run's measured window, a target every run
has, an action its launcher can do (a disk fault, a broker with a disk of its own), no two
faults on one target at once. The run issues them (orchestrator.run.faults).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Annotated, Literal

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    PlainSerializer,
    model_validator,
)

from sixnines.formats.manifest import MAX_FAULTS
from sixnines.formats.vocabulary import Mode
from sixnines.orchestrator.scenario import units, written
from sixnines.orchestrator.scenario.fields import MAX_RUN_TIME_NS, Name
from sixnines.orchestrator.scenario.hosts import LOCAL, LinkDelay, LinkLoss, LinkRate
from sixnines.orchestrator.scenario.systems import DATA_DISKS_ON

BROKER = "broker"
#: An agent as the plan names it (orchestrator.plan.agents): role and number.
AGENT_ID = re.compile(r"(producer|consumer|requester|responder)-(\d{1,4})")
#: One node of a broker of several (`broker: {recipe: NAME, nodes: N}`), from 0.
NODE_ID = re.compile(rf"{BROKER}-(\d{{1,2}})")


def node_name(index: int) -> str:
    """A node of a broker of several, as a fault targets it and the run names it."""
    return f"{BROKER}-{index}"


def node_index(target: str) -> int | None:
    """The node a target names (None: not a node)."""
    found = NODE_ID.fullmatch(target)
    return int(found[1]) if found else None


def on_broker(target: str) -> bool:
    """Whether a target is the broker or one of its nodes."""
    return target == BROKER or node_index(target) is not None


class FaultAction(StrEnum):
    PAUSE = "pause"
    KILL = "kill"
    PARTITION = "partition"
    SLOW_LINK = "slow-link"
    DISK_STALL = "disk-stall"
    DISK_FULL = "disk-full"


#: Actions on a host's link, for a window (launchers.link_faults).
ON_LINKS = {FaultAction.PARTITION, FaultAction.SLOW_LINK}
#: Actions on the broker's data disk, for a window (launchers.data_disks).
ON_DISK = {FaultAction.DISK_STALL, FaultAction.DISK_FULL}
#: Actions held in place by a process on the host for their window (launchers.held_faults).
HELD = ON_LINKS | ON_DISK


def _fault_time(value: object) -> int:
    ns = units.parse_duration(value)
    if not 0 <= ns <= MAX_RUN_TIME_NS:
        raise ValueError(f"must be from 0 to {units.format_duration(MAX_RUN_TIME_NS)}")
    return ns


#: A time of the measured run, in ns (written back as "<n>ns", so a dump reloads the same).
FaultTime = Annotated[int, BeforeValidator(_fault_time),
                      PlainSerializer(lambda ns: f"{ns}ns", return_type=str),
                      written.duration(MAX_RUN_TIME_NS, examples=("20s", "500ms", 0))]


def _target(value: object) -> object:
    if isinstance(value, str) and not on_broker(value) and not AGENT_ID.fullmatch(value):
        raise ValueError(f"{value!r} is no target: broker, a node of a broker of several "
                         "(broker-0, broker-1, ...), an agent id (producer-0, consumer-1, "
                         "requester-0, responder-0) or {host: NAME}")
    return value


class HostTarget(BaseModel):
    """A host as the scenario names it (its link, its disk)."""

    model_config = ConfigDict(extra="forbid", frozen=True, use_attribute_docstrings=True)

    host: Name
    """The host's name (`local` or one of `hosts`)."""


class Fault(BaseModel):
    """One fault: what is done, to what, when (from the start of the measured run, after
    the warm-up), and for how long."""

    model_config = ConfigDict(extra="forbid", frozen=True, use_attribute_docstrings=True,
                              populate_by_name=True, serialize_by_alias=True)

    at: FaultTime
    """When, from the start of the measured run (after the warm-up)."""
    action: FaultAction
    """pause (SIGSTOP, SIGCONT after `for`), kill (SIGKILL; the broker is started again
    after `restart_after`), partition (a host's traffic dropped, SSH excepted), slow-link
    (a host's outgoing traffic slowed: `rate`, `delay`, `loss`), disk-stall (every write
    to the broker's data disk blocks for `for`: fsfreeze), disk-full (that disk filled to
    its last block for `for`); the disk faults need the broker's `data_disk`."""
    target: Annotated[str | HostTarget, BeforeValidator(_target)]
    """broker (every node of it), one node of a broker of several (broker-0, broker-1,
    ...), an agent id (producer-0, consumer-1, ...) or {host: NAME}."""
    for_: FaultTime | None = Field(default=None, alias="for")
    """How long a pause, a partition, a slow link or a disk fault lasts (required for
    them)."""
    restart_after: FaultTime | None = None
    """A killed broker (or node) is started again this long after the kill, at the same
    address, through its recipe or as the builtin broker. Required to kill the broker; a
    node killed without it stays down (the others go on)."""
    data: Literal["keep", "wipe"] = "keep"
    """What a restarted broker finds of its data: kept, or wiped before it starts."""
    rate: LinkRate | None = None
    """A slow link's bandwidth, as tc writes it (tbf; k, m, g: powers of 1000)."""
    delay: LinkDelay | None = None
    """Delay a slow link adds to every packet the host sends (netem: the host's kernel
    must have it)."""
    loss: LinkLoss | None = None
    """Share of the packets the host sends that a slow link drops (netem, as `delay`)."""

    @model_validator(mode="after")
    def _fields_fit_the_action(self) -> Fault:
        target = self.target_name
        if self.action in ON_LINKS:
            self._fits_a_link()
            return self
        if self.rate is not None or self.delay is not None or self.loss is not None:
            raise ValueError("`rate`, `delay` and `loss` go with slow-link")
        if self.action in ON_DISK and target != BROKER:
            raise ValueError(f"{self.action} targets the broker's data disk: target: broker")
        if self.action != FaultAction.KILL and self.for_ is None:
            raise ValueError(f"a {self.action} needs `for` (how long it lasts)")
        if self.action != FaultAction.KILL and self.restart_after is not None:
            raise ValueError(f"`restart_after` goes with kill, not {self.action}")
        if self.action == FaultAction.KILL and self.for_ is not None:
            raise ValueError("a kill has no `for`: the broker comes back after "
                             "`restart_after`, an agent not at all")
        if self.action == FaultAction.KILL and target == BROKER and self.restart_after is None:
            raise ValueError("killing the broker needs `restart_after`: without it the run "
                             "cannot go on")
        if self.restart_after is not None and not on_broker(target):
            raise ValueError("only the broker or one of its nodes is started again "
                             "(`restart_after`); a killed agent stays dead")
        if self.data == "wipe" and self.restart_after is None:
            raise ValueError("`data: wipe` goes with a broker kill and `restart_after`")
        if isinstance(self.target, HostTarget):
            raise ValueError(f"{self.action} targets the broker or an agent; a host's link "
                             "is cut by partition, slowed by slow-link")
        return self

    def _fits_a_link(self) -> None:
        if not isinstance(self.target, HostTarget):
            raise ValueError(f"{self.action} targets a host's link: target: {{host: NAME}}")
        if self.for_ is None:
            raise ValueError(f"a {self.action} needs `for` (how long it lasts)")
        if self.restart_after is not None or self.data != "keep":
            raise ValueError("`restart_after` and `data` go with a broker kill")
        slows = self.rate is not None or self.delay is not None or self.loss is not None
        if self.action == FaultAction.PARTITION and slows:
            raise ValueError("a partition drops everything: `rate`, `delay` and `loss` go "
                             "with slow-link")
        if self.action == FaultAction.SLOW_LINK and not slows:
            raise ValueError("a slow-link needs `rate`, `delay` or `loss`")

    @property
    def target_name(self) -> str:
        """The target as the manifest names it: broker, consumer-0, host:h2."""
        return self.target if isinstance(self.target, str) else f"host:{self.target.host}"

    @property
    def end_ns(self) -> int | None:
        """When it is over (for the broker, back up), on the measured run's clock; None:
        never (a killed agent, or node not started again)."""
        length = self.for_ if self.for_ is not None else self.restart_after
        return None if length is None else self.at + length


Faults = Annotated[tuple[Fault, ...], Field(max_length=MAX_FAULTS)]


@dataclass(frozen=True)
class RunShape:
    """What a fault is checked against in one run: its measured length, its agents, where
    its broker is, and what that broker is (a recipe's, with a data disk or not)."""

    duration_ns: int
    agents: dict[str, str]  # agent id -> its host
    broker_host: str
    broker_kind: str  # builtin | recipe | external
    system: str
    recipe: str | None = None
    data_disk: bool = False
    broker_nodes: int = 1


#: Host kinds the run can pause a process on (a container's own init is signalled,
#: which does not stop the process it forwards to).
PAUSES_ON = ("local", "ssh")
#: Host kinds a broker can be started again on (a container broker's data lives in the
#: container it was made with).
RESTARTS_ON = ("local", "ssh")


def agent_ids(producers: int, consumers: int, mode: Mode, needs_responder: bool) -> list[str]:
    """The agents' ids a run has, as orchestrator.plan.agents names them."""
    if mode == Mode.ROUND_TRIP:
        return [*(["responder-0"] if needs_responder else []),
                *(f"requester-{k}" for k in range(producers))]
    return [*(f"consumer-{k}" for k in range(consumers)),
            *(f"producer-{k}" for k in range(producers))]


def fault_problems(faults: Sequence[Fault], runs: Iterable[RunShape],
                   host_kinds: dict[str, str], shaped_hosts: frozenset[str] = frozenset()
                   ) -> list[tuple[int, str, str]]:
    """Each fault's problems with the runs it would be issued in: (index, field, message),
    each once. `host_kinds`: host name -> local | ssh | container; `shaped_hosts`: those
    whose link the scenario shapes (`link:`) for the whole run."""
    found: dict[tuple[int, str, str], None] = {}
    shapes = list(runs)
    for index, fault in enumerate(faults):
        for field, message in _link_problems(fault, host_kinds, shaped_hosts):
            found[(index, field, message)] = None
        for shape in shapes:
            for field, message in _against_run(fault, shape, host_kinds):
                found[(index, field, message)] = None
    for index, message in _overlaps(faults):
        found[(index, "at", message)] = None
    return list(found)


def _against_run(fault: Fault, shape: RunShape, host_kinds: dict[str, str]
                 ) -> list[tuple[str, str]]:
    problems: list[tuple[str, str]] = []
    end = fault.end_ns if fault.end_ns is not None else fault.at
    if end > shape.duration_ns:
        what = "its end" if fault.end_ns is not None else "it"
        problems.append(("at", f"{what} ({units.format_duration(end)}) falls after the "
                         f"measured run ({units.format_duration(shape.duration_ns)})"))
    target = fault.target_name
    if isinstance(fault.target, HostTarget):
        return problems
    if fault.action in ON_DISK:
        return [*problems, *_disk_problems(fault.action, shape, host_kinds)]
    if on_broker(target):
        if shape.broker_kind == "external":
            return [*problems, ("target", f"system {shape.system!r} has an external broker: "
                                "sixnines did not start it, so cannot pause or kill it")]
        wrong_node = _node_problem(target, shape)
        if wrong_node:
            return [*problems, ("target", wrong_node)]
        host = shape.broker_host
    elif target in shape.agents:
        host = shape.agents[target]
    else:
        known = ", ".join(shape.agents)
        return [*problems, ("target", f"no agent {target!r} in the runs of system "
                            f"{shape.system!r} (they have {known})")]
    kind = host_kinds.get(host, LOCAL)
    if fault.action == FaultAction.PAUSE and kind not in PAUSES_ON:
        problems.append(("action", f"cannot pause {target} on host {host!r} ({kind}): a "
                         "pause is possible on local and SSH hosts"))
    if fault.restart_after is not None and kind not in RESTARTS_ON:
        problems.append(("restart_after", f"cannot start the broker again on host {host!r} "
                         f"({kind}): a restart is possible on local and SSH hosts"))
    return problems


def _disk_problems(action: FaultAction, shape: RunShape, host_kinds: dict[str, str]
                   ) -> list[tuple[str, str]]:
    """A disk fault freezes or fills a filesystem holding the broker's data and nothing
    else: only a recipe's broker with a `data_disk` has one."""
    if shape.broker_kind != "recipe":
        return [("target", f"{action} needs the broker's data on a filesystem of its own, "
                 f"which only a recipe's broker has (`data_disk`): system {shape.system!r} "
                 f"has a{'n' if shape.broker_kind == 'external' else ''} "
                 f"{shape.broker_kind} broker")]
    if not shape.data_disk:
        return [("target", f"{action} needs the broker's data on a filesystem of its own: "
                 f"add `data_disk: SIZE` to system {shape.system!r}'s broker (e.g. broker: "
                 f"{{recipe: {shape.recipe}, data_disk: 256MB}})")]
    host = shape.broker_host
    kind = host_kinds.get(host, LOCAL)
    if kind not in DATA_DISKS_ON:
        return [("action", f"cannot {action} the broker's disk on host {host!r} ({kind}): "
                 "a data disk is made on local and SSH hosts")]
    return []


def _node_problem(target: str, shape: RunShape) -> str | None:
    """Why a node target does not fit the run's broker (None: it does, or is no node)."""
    index = node_index(target)
    if index is None:
        return None
    if shape.broker_nodes == 1:
        return (f"system {shape.system!r} has a broker of one node: target it as broker "
                f"({target} names a node of a broker of several, `nodes: N`)")
    if index >= shape.broker_nodes:
        return (f"no node {target!r} in the broker of system {shape.system!r}: its "
                f"{shape.broker_nodes} nodes are {node_name(0)} to "
                f"{node_name(shape.broker_nodes - 1)}")
    return None


def _link_problems(fault: Fault, host_kinds: dict[str, str], shaped_hosts: frozenset[str]
                   ) -> list[tuple[str, str]]:
    """A host's link is cut or slowed only on an SSH host: the controller's own machine
    would cut itself off, a container's network is the engine's."""
    if not isinstance(fault.target, HostTarget):
        return []
    host = fault.target.host
    kind = host_kinds.get(host, LOCAL if host == LOCAL else None)
    if kind is None:
        return [("target", f"no host {host!r} in `hosts` (they are "
                 f"{', '.join(host_kinds) or 'none'})")]
    if kind != "ssh":
        return [("target", f"cannot {fault.action} host {host!r} ({kind}): a host's link is "
                 "cut or slowed on SSH hosts only")]
    if fault.action == FaultAction.SLOW_LINK and host in shaped_hosts:
        return [("target", f"host {host!r} has its link shaped for the whole run (`link:`); "
                 "a slow-link there would replace that shaping")]
    return []


def _one_target(a: str, b: str) -> bool:
    """Whether two targets hold a process in common: the same, or the broker and a node."""
    return a == b or (BROKER in (a, b) and on_broker(a) and on_broker(b))


def _overlaps(faults: Sequence[Fault]) -> list[tuple[int, str]]:
    """Faults on a target another fault holds meanwhile (a killed agent, from then on)."""
    never = MAX_RUN_TIME_NS * 2
    problems = []
    for index, fault in enumerate(faults):
        end = fault.end_ns if fault.end_ns is not None else never
        for earlier_index, earlier in enumerate(faults[:index]):
            earlier_end = earlier.end_ns if earlier.end_ns is not None else never
            if _one_target(earlier.target_name, fault.target_name) and \
                    fault.at <= earlier_end and earlier.at <= end:
                held = dict.fromkeys([earlier.target_name, fault.target_name])
                problems.append((index, f"overlaps faults[{earlier_index}] on "
                                 f"{' and '.join(held)} (one target, one fault at a time; "
                                 "a killed agent, or node not started again, stays dead)"))
    return problems
