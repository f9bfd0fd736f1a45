"""The agent process (`sixnines agent`): one role, driven over stdin/stdout JSON lines.

Five threads, each with one job: the main thread runs the role's loop; a reader thread
turns `finish`/`stop` (and end of input: the controller has gone) into flags on `Control`;
a progress thread reports counters once a second; a sampler thread records CPU time
(agents.cpu). When chunks stream, producers and consumers also have a writer process,
forked when the role is armed (before the other threads start), that puts closed chunks on
disk while the run goes (agents.recording). Whatever happens in the loop, the data
recorded so far is written and announced in `done`, marked partial when incomplete. The
`monitor` role (agents.monitor) runs no loop and is served apart.
"""

from __future__ import annotations

import contextlib
import io
import os
import signal
import sys
import threading
import time
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import TextIO

from sixnines.agents.affinity import keep_off, pin_python_threads
from sixnines.agents.artifacts import keep_done, write_files
from sixnines.agents.cpu import CpuSampler, LoopAccount, write_cpu
from sixnines.agents.disk import DiskGauge
from sixnines.agents.facts import host_facts, versions
from sixnines.agents.monitor import serve_monitor
from sixnines.agents.roles import (
    AgentRole,
    Consumer,
    Control,
    Producer,
    Requester,
    ResponderRole,
)
from sixnines.agents.streams import clock
from sixnines.drivers import registry
from sixnines.drivers.base import Credential, DriverError
from sixnines.formats import protocol as p
from sixnines.formats.keys import KeySpace
from sixnines.formats.layout import CPU_FILE
from sixnines.formats.vocabulary import SENDERS, Role

RECEIVERS = (Role.CONSUMER, Role.REQUESTER)  # whose records are what reached them
ROLES: dict[str, type[AgentRole]] = {
    Role.PRODUCER: Producer, Role.CONSUMER: Consumer, Role.REQUESTER: Requester,
    Role.RESPONDER: ResponderRole,
}
PROGRESS_INTERVAL_S = 1.0


def build_role(spec: p.Prepare) -> AgentRole:
    driver_cls = registry.load(spec.driver)
    credential = Credential(**spec.credential) if spec.credential else None
    driver = driver_cls(spec.address, driver_cls.Options(**spec.driver_options),
                        credential=credential)
    driver.keys = KeySpace.parse(spec.keys)
    driver.sizes_vary = spec.sizes is not None
    return ROLES[spec.role](spec, driver)


def _listen(channel: p.Channel, control: Control, drain_ns: int) -> None:
    while True:
        try:
            message = channel.receive()
        except p.ProtocolError as exc:
            control.stop(str(exc))
            return
        if message is None:
            control.stop("control channel closed")
            return
        if isinstance(message, p.Finish):
            control.finish(message.expected, drain_ns)
        elif isinstance(message, p.Stop):
            control.stop(message.reason)
            return


def _report_progress(channel: p.Channel, role: AgentRole, agent_id: str,
                     done: threading.Event) -> None:
    gauge = DiskGauge(Path(role.spec.out_dir))
    while not done.wait(PROGRESS_INTERVAL_S):
        if not channel.send(p.Progress(agent_id=agent_id, sent=role.sent,
                                       received=role.received, disk_written=gauge.written(),
                                       disk_free=gauge.free())):
            return


def serve(channel: p.Channel) -> int:
    first = channel.receive()
    if not isinstance(first, p.Prepare):
        channel.send(p.Failed(agent_id="?", error=f"expected prepare, got {first!r}"))
        return 2
    spec = first
    if spec.protocol != p.PROTOCOL_VERSION:
        channel.send(p.Failed(agent_id=spec.agent_id, error=(
            f"protocol version {spec.protocol} from the controller, this agent speaks "
            f"{p.PROTOCOL_VERSION}: install the same sixnines version on both sides")))
        return 2
    if spec.role == Role.MONITOR:
        return serve_monitor(channel, spec)
    try:
        role = build_role(spec)
    except (DriverError, LookupError, ValueError, OSError) as exc:
        channel.send(p.Failed(agent_id=spec.agent_id, error=str(exc)))
        return 1
    channel.send(p.Ready(protocol=p.PROTOCOL_VERSION, agent_id=spec.agent_id, pid=os.getpid(),
                         host=host_facts(), versions=versions()))
    start = _await_start(channel)
    if start is None:
        role.close()
        return 0
    return _run(channel, spec, role, start)


def _await_start(channel: p.Channel) -> p.Start | None:
    while True:
        message = channel.receive()
        if isinstance(message, p.Ping):
            channel.send(p.Pong(t_ns=message.t_ns, agent_ns=clock()))
        elif isinstance(message, p.Start):
            return message
        elif message is None or isinstance(message, p.Stop):
            return None


def _run(channel: p.Channel, spec: p.Prepare, role: AgentRole, start: p.Start) -> int:
    control = Control()
    at_ns = start.at_ns
    signal.signal(signal.SIGTERM, lambda *_: control.stop("terminated (SIGTERM)"))
    role.arm(at_ns)  # before any thread starts: arming may fork the recorder's writer
    keep_off([os.getpid(), *role.helpers()], start.keep_off)  # native threads, the writer
    if start.loop_cpu >= 0:
        pin_python_threads(start.loop_cpu)  # threads started below inherit it
    threading.Thread(target=_listen, args=(channel, control, spec.drain_ns), daemon=True).start()
    finished = threading.Event()
    threading.Thread(target=_report_progress, args=(channel, role, spec.agent_id, finished),
                     daemon=True).start()
    sampler = CpuSampler(time.process_time_ns, _message_count(role), spec.cpu_sample_ns,
                         loop=LoopAccount(threading.get_native_id()))  # the loop's thread
    sampler.start()
    problems = []
    broke = None  # the agent's own failure: its records end there, not the system's doing
    try:
        role.run(control)
    except DriverError as exc:
        problems.append(f"{spec.agent_id}: {exc}")
    except Exception as exc:  # the data recorded so far is still written below
        broke = f"{type(exc).__name__}: {exc}"
        problems.append(f"{spec.agent_id}: {broke}")
        traceback.print_exc(file=sys.stderr)
    ending = _ending(role, control, broke)
    finished.set()
    samples = sampler.finish()
    if control.stopping:
        problems.append(f"{spec.agent_id}: stopped early ({control.stop_reason})")
    overflow = role.overflow
    if overflow:
        problems.append(f"{spec.agent_id}: {overflow} messages beyond the expected count "
                        "were not recorded")
    with contextlib.suppress(OSError, DriverError):
        role.close()
    out_dir = Path(spec.out_dir)
    files, out_of_range, unwritten = role.results()
    cpu_files, cpu_unwritten = write_files(out_dir, {CPU_FILE: lambda path: write_cpu(path,
                                                                                   samples)})
    problems += [f"{spec.agent_id}: {problem}" for problem in (*unwritten, *cpu_unwritten)]
    extra = {"out_of_range": out_of_range, **role.extra(), **ending}
    if (lost := role.records_lost()) and "cut_short" not in extra:
        extra["cut_short"] = lost
    done = p.Done(agent_id=spec.agent_id, status="partial" if problems else "ok",
                  sent=role.sent, received=role.received, t0_ns=at_ns,
                  artifacts=files | cpu_files, problems=problems, extra=extra)
    channel.send(keep_done(out_dir, done))
    return 0


def _ending(role: AgentRole, control: Control, broke: str | None) -> dict[str, object]:
    """How a receiver's listening ended, for the analysis (docs/design.md, "The end of a
    receiver's records"): `cut_short` when the agent itself ended it early (stopped, or a
    failure of its own), `drain_ended_ns` when its drain ran out before every message
    expected had arrived (the instant it ended; the drain began `drain_ns` before). A
    sender's records hold all it sent, however early it stopped."""
    if role.spec.role not in RECEIVERS or role.reconnects.gave_up:
        return {}  # a connection lost for good ends its records as the system's doing
    if control.stopping or broke:
        return {"cut_short": f"stopped early ({control.stop_reason})" if control.stopping
                else broke}
    if control.finishing and role.received < control.expected:
        return {"drain_ended_ns": control.deadline_ns}
    return {}


def _message_count(role: AgentRole) -> Callable[[], int]:
    """The running count an agent's CPU time is attributed to: a sender's messages sent
    (a requester's requests), a receiver's messages received (a responder's relayed)."""
    if role.spec.role in SENDERS:
        return lambda: role.sent
    return lambda: role.received


class Unbreakable(io.TextIOBase):
    """A diagnostic stream whose writes never fail. An agent's stderr is often a pipe to
    its controller (an SSH channel); once the controller is dead, a warning written there
    would raise in the middle of writing the data, and cost it."""

    def __init__(self, stream: TextIO) -> None:
        self._stream = stream

    def write(self, text: str) -> int:
        with contextlib.suppress(OSError, ValueError):
            self._stream.write(text)
            self._stream.flush()
        return len(text)


def main() -> int:
    """Entry point: the real stdout carries the channel; stray prints go to stderr."""
    channel = p.Channel(sys.stdin, sys.stdout)
    sys.stderr = Unbreakable(sys.stderr)
    sys.stdout = sys.stderr
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the controller decides when we stop
    return serve(channel)
