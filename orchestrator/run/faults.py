"""Faults on purpose, done on the measured run's clock: a thread of their own sleeps to each
fault's time (the measured start + `at`), does it, and sleeps to its undoing (`for`, or a
killed broker's `restart_after`). The supervision loop's tick (a quarter second) is far
coarser than the times asked for, so it only writes down what the thread did.

A run without faults has no `FaultTimeline` at all: no thread, nothing on any path.

A partition, a slow link, a stalled or full data disk is held by a process on its host
(launchers.held_faults), started and ready before the measured run (`arm`), so that at the
fault's time only a line goes to it; a host where it cannot be done (no firewall, no netem
for a delay) fails the run before it starts.

A fault on the broker holds every node of it; one on `broker-<n>` that node alone (a
broker of several: orchestrator.run.broker_nodes.BrokerNode).

Every fault is recorded as it goes (formats.manifest.FaultRecord): when it was issued, when
it was seen to take effect (the processes stopped, or dead and reaped; the holder's
answer), when it was undone and, for a broker, when it took connections again. `close`
undoes whatever is still done (a paused process is resumed, a disk thawed, before the run
stops them), whatever ends the run; a controller that dies outright leaves that to the
guard (launchers.guard), which resumes the groups it stops and stops the holders, which
undo.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

from sixnines.formats.errors import SixninesError
from sixnines.formats.manifest import FaultRecord
from sixnines.orchestrator.launchers import link_faults
from sixnines.orchestrator.launchers.base import Launcher, LaunchError, Process
from sixnines.orchestrator.launchers.held_faults import HeldFault
from sixnines.orchestrator.run.brokers import RunningBroker
from sixnines.orchestrator.scenario.faults import (
    BROKER,
    HELD,
    Fault,
    FaultAction,
    HostTarget,
    node_index,
    on_broker,
)

logger = logging.getLogger(__name__)

#: How long a signal may take to show (the process seen stopped, or dead and reaped).
EFFECT_TIMEOUT_S = 5.0
EFFECT_POLL_S = 0.001


def now_ns() -> int:
    """The controller's clock, the one `started_at_ns` is on."""
    return time.perf_counter_ns()


@dataclass(frozen=True)
class FaultStep:
    """One thing to do at `due_ns` (absolute): a fault, or its undoing."""

    due_ns: int
    index: int
    undo: bool


class FaultTimeline:
    """The faults of one run, made ready by `arm`, done in time by a thread of their own
    (`start`), undone by `close`. `records` are the manifest's; `changed` is set whenever
    one of them is."""

    def __init__(self, faults: tuple[Fault, ...], broker: RunningBroker | None,
                 agents: Mapping[str, Process], problems: list[str]) -> None:
        self.faults = faults
        self.broker = broker
        self.agents = agents
        self.problems = problems
        self.records = [FaultRecord(index=index, action=fault.action.value,
                                    target=fault.target_name, at_ns=fault.at,
                                    for_ns=None if fault.end_ns is None
                                    else fault.end_ns - fault.at)
                        for index, fault in enumerate(faults)]
        self.steps: list[FaultStep] = []
        self.holders: dict[int, HeldFault] = {}  # fault index -> the holder on its host
        self.changed = threading.Event()
        self.paused: dict[int, list[Process]] = {}  # fault index -> the processes it stopped
        #: The broker's nodes killed on purpose and not yet back: their exit is not the
        #: run's failure.
        self.down: set[int] = set()
        self._closing = threading.Event()
        self._thread = threading.Thread(target=self._keep_time, name="faults", daemon=True)

    def arm(self, launchers: Mapping[str, Launcher], log_path: Path) -> None:
        """A holder ready on each host a link fault targets, and beside the broker's data
        disk for each disk fault (LaunchError: one cannot be, and none is left)."""
        try:
            for index, fault in enumerate(self.faults):
                if fault.action not in HELD:
                    continue
                assert fault.for_ is not None  # a held fault has its window
                name, for_s = f"fault-{index}", fault.for_ / 1e9
                if isinstance(fault.target, HostTarget):
                    self.holders[index] = link_faults.arm(
                        launchers[fault.target.host], name, fault.action.value, for_s,
                        log_path, fault.rate, fault.delay, fault.loss)
                elif self.broker is None or self.broker.disk is None:
                    raise LaunchError(f"faults[{index}]: {fault.action} needs the broker's "
                                      "data disk, and this broker has none")
                else:
                    self.holders[index] = self.broker.disk.arm(fault.action.value, name,
                                                               for_s, log_path)
        except BaseException:
            self._close_holders()
            raise

    def start(self, measured_start_ns: int) -> None:
        """Each fault at `measured_start_ns` + its `at`, and undone at its end."""
        self.steps = sorted(
            [FaultStep(measured_start_ns + fault.at, index, False)
             for index, fault in enumerate(self.faults)]
            + [FaultStep(measured_start_ns + fault.end_ns, index, True)
               for index, fault in enumerate(self.faults) if fault.end_ns is not None],
            key=lambda step: (step.due_ns, step.undo is False))  # an end before a start
        self._thread.start()

    def close(self) -> None:
        """Stop the timeline (a restart under way is finished first) and undo what is still
        done: every paused process resumed. Faults not reached stay so."""
        self._closing.set()
        if self._thread.ident is not None:  # started
            self._thread.join()
        for index in list(self.paused):
            self._resume(index, "resumed as the run ended")
        for index in [index for index, holder in self.holders.items() if holder.held]:
            try:
                self._take_away(index, "undone as the run ended")
            except SixninesError as exc:  # its holder's deadline or the guard is left
                self.problems.append(f"faults[{index}] was not undone: {exc}")
        self._close_holders()
        for index, fault in enumerate(self.faults):
            record = self.records[index]
            if fault.restart_after is not None and record.issued_ns is not None \
                    and record.undone_ns is None:
                record.note = "the run ended before the broker was started again"
        self.changed.set()

    # -- the thread --------------------------------------------------------------------------
    def _keep_time(self) -> None:
        """Each step at its time, whole, until the steps are done or the run closes."""
        for step in self.steps:
            if self._closing.wait(max(0, step.due_ns - now_ns()) / 1e9):
                return
            try:
                (self._undo if step.undo else self._issue)(step.index)
            except (SixninesError, OSError) as exc:  # recorded: the run goes on
                self._failed(step.index, f"{type(exc).__name__}: {exc}")
            self.changed.set()

    def _issue(self, index: int) -> None:
        fault, record = self.faults[index], self.records[index]
        if fault.action in HELD:
            logger.info("fault %d: %s %s", index, fault.action, fault.target_name)
            holder = self.holders[index]
            record.tool = holder.tool
            record.issued_ns = now_ns()
            holder.apply()
            record.effective_ns = now_ns()
            record.outcome = "done"
            return
        processes = self._processes(fault.target_name)
        if not processes or any(process is None or process.poll() is not None
                                for process in processes):
            self._failed(index, f"{fault.target_name} was not running")
            return
        held = [process for process in processes if process is not None]
        logger.info("fault %d: %s %s", index, fault.action, fault.target_name)
        if fault.action == FaultAction.PAUSE:
            record.issued_ns = now_ns()
            for process in held:
                process.suspend()
            self.paused[index] = held
            record.effective_ns = _seen(lambda: all(process.suspended() is not False
                                                    for process in held))
        elif on_broker(fault.target_name):
            assert self.broker is not None
            nodes = self._nodes(fault.target_name)
            self.down.update(nodes)
            record.issued_ns = now_ns()
            self.broker.kill(nodes)
            record.effective_ns = now_ns()  # `kill` returns once they are reaped
        else:
            record.issued_ns = now_ns()
            held[0].kill()
            record.effective_ns = _seen(lambda: held[0].poll() is not None)
        record.outcome = "done"

    def _nodes(self, target: str) -> list[int]:
        """The broker's nodes a target holds: every one (broker), or the one it names."""
        index = node_index(target)
        if target == BROKER:
            return [node.index for node in self.broker.nodes] if self.broker else []
        return [] if index is None else [index]

    def _processes(self, target: str) -> list[Process | None]:
        """The processes a target holds (none: it names nothing the run started)."""
        if not on_broker(target):
            return [self.agents.get(target)]
        nodes = self.broker.nodes if self.broker is not None else []
        chosen = self._nodes(target)
        return [node.process for node in nodes if node.index in chosen]

    def _undo(self, index: int) -> None:
        fault, record = self.faults[index], self.records[index]
        if record.issued_ns is None or record.outcome == "failed":
            return
        if fault.action == FaultAction.PAUSE:
            self._resume(index)
            return
        if fault.action in HELD:
            self._take_away(index)
            return
        assert self.broker is not None and fault.restart_after is not None
        nodes = self._nodes(fault.target_name)
        record.undone_ns = now_ns()
        try:
            self.broker.restart(wipe=fault.data == "wipe", nodes=nodes)
            record.restarted_ns = now_ns()
            pids = [str(node.pid) for node in self.broker.nodes
                    if node.index in nodes and node.pid is not None]
            record.note = (f"started again as process{'es' if len(pids) > 1 else ''} "
                           f"{', '.join(pids)}") if pids else None
        except SixninesError as exc:
            self._failed(index, f"the broker did not come back: {exc}")
        finally:
            self.down.difference_update(nodes)  # back, or its exit is the run's failure now

    def _resume(self, index: int, note: str | None = None) -> None:
        for process in self.paused.pop(index):
            process.resume()
        record = self.records[index]
        record.undone_ns = now_ns()
        if note is not None:
            record.note = note

    def _take_away(self, index: int, note: str | None = None) -> None:
        """A fault held on a host undone (recorded once it is gone)."""
        self.holders[index].undo()
        record = self.records[index]
        record.undone_ns = now_ns()
        if note is not None:
            record.note = note

    def _close_holders(self) -> None:
        """Every holder stopped: a fault still in place is taken away on the way."""
        for holder in self.holders.values():
            holder.close()

    def _failed(self, index: int, why: str) -> None:
        record = self.records[index]
        record.outcome, record.note = "failed", why
        self.problems.append(f"faults[{index}] ({record.action} {record.target}) failed: {why}")


def _seen(done: Callable[[], bool]) -> int | None:
    """When `done` first held, polled every millisecond (None: not within the timeout)."""
    deadline = time.monotonic() + EFFECT_TIMEOUT_S
    while time.monotonic() < deadline:
        if done():
            return now_ns()
        time.sleep(EFFECT_POLL_S)
    return None
