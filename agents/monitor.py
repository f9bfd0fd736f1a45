"""The monitor role: the broker's CPU time, sampled on the broker's host.

Started by the controller like an agent (`python -m sixnines.agents`, role `monitor`, the same
control channel and clock pings), beside a broker sixnines started; `target_pid` names the
broker's process group there (and `node_pids` those of its other nodes, whose time adds
up: a broker of several is one system). It samples `cpu.ProcessTree` from `start` until `finish` or
`stop` and announces cpu.parquet in `done`; meanwhile it rewrites cpu.parquet whole
(formats.atomic) about every half second (agents.cpu.CpuSampler `keep`), so a monitor
killed mid-run leaves its samples up to about then (docs/design.md, "When an agent
dies"). It has no loop to protect, so its main thread just answers the channel. A broker
that dies ends neither the sampling nor the monitor: its CPU time stays where it was (a
dead broker uses none) and the end is reported; a broker started again on purpose is
followed (`follow`, for the node it names), its time counted on from the previous one's
and kept off the loops' CPUs as the first was. A sample reads only the broker tree's stat
files; every tenth rescans all of /proc for new members (see `ProcessTree`: scanning every time
disturbed the broker it measures).
"""

from __future__ import annotations

import contextlib
import functools
import os
import signal
import threading
from pathlib import Path

from sixnines.agents.affinity import keep_off
from sixnines.agents.artifacts import keep_done, write_files
from sixnines.agents.cpu import CpuSampler, ProcessTree, Samples, tree_members, write_cpu
from sixnines.agents.facts import host_facts, versions
from sixnines.agents.streams import clock
from sixnines.formats import protocol as p
from sixnines.formats.atomic import atomic_path
from sixnines.formats.layout import CPU_FILE


class MonitorTerminated(Exception):
    """SIGTERM, which asks the monitor to stop as a `stop` does: a guard sends it when the
    controller is gone, and the samples taken so far are still written."""


def _raise_terminated(signum: int, frame: object) -> None:
    raise MonitorTerminated


class FollowedTree:
    """CPU time of the broker's process tree across its restarts: one started again counts
    on from where the previous one stopped; while none runs the time stays put."""

    def __init__(self, pid: int) -> None:
        self._tree: ProcessTree | None = ProcessTree(pid)
        self._before = 0  # the previous brokers' time
        self._last = 0
        self._lock = threading.Lock()  # the sampler reads while the channel follows
        self.gone: str | None = None  # why the last one is not sampled any more

    def cpu_ns(self) -> int:
        with self._lock:
            if self._tree is not None:
                try:
                    self._last = self._before + self._tree.cpu_ns()
                except ProcessLookupError as exc:
                    self._tree, self.gone = None, str(exc)
            return self._last

    def follow(self, pid: int) -> None:
        tree = ProcessTree(pid)
        with self._lock:
            self._tree, self._before, self.gone = tree, self._last, None


class FollowedNodes:
    """The CPU time of every node of the broker (`FollowedTree` each), added up."""

    def __init__(self, pids: list[int]) -> None:
        self.trees = [FollowedTree(pid) for pid in pids]

    def cpu_ns(self) -> int:
        return sum(tree.cpu_ns() for tree in self.trees)

    def follow(self, node: int, pid: int) -> None:
        self.trees[node].follow(pid)

    @property
    def gone(self) -> str | None:
        """Why a node is not sampled any more (the first of them, named when there are
        several)."""
        several = len(self.trees) > 1
        return next((f"node {index}: {tree.gone}" if several else tree.gone
                     for index, tree in enumerate(self.trees) if tree.gone), None)


def serve_monitor(channel: p.Channel, spec: p.Prepare) -> int:
    pids = [spec.target_pid, *spec.node_pids]
    try:
        nodes = FollowedNodes(pids)
    except (OSError, ValueError) as exc:
        groups = ", ".join(map(str, pids))
        channel.send(p.Failed(agent_id=spec.agent_id, error=f"cannot read the CPU time of "
                              f"process group{'s' if len(pids) > 1 else ''} {groups}: {exc}"))
        return 1
    kept = Path(spec.out_dir) / CPU_FILE
    # the first parquet write in a process spends ~200 ms starting pyarrow: paid before
    # `ready`, so the sampler paces its writes by what one really costs (CpuSampler keep)
    _keep(kept, [])
    channel.send(p.Ready(protocol=p.PROTOCOL_VERSION, agent_id=spec.agent_id, pid=os.getpid(),
                         host=host_facts(), versions=versions()))
    sampler: CpuSampler | None = None
    at_ns = 0
    keep_off_cpus: list = []
    signal.signal(signal.SIGTERM, _raise_terminated)
    try:
        while True:
            try:
                message = channel.receive()
            except p.ProtocolError:
                message = None
            if isinstance(message, p.Ping):
                channel.send(p.Pong(t_ns=message.t_ns, agent_ns=clock()))
            elif isinstance(message, p.Start) and sampler is None:
                at_ns, keep_off_cpus = message.at_ns, message.keep_off
                with contextlib.suppress(OSError):  # a broker gone: the sampler says so
                    keep_off([os.getpid(), *(member for pid in pids
                                             for member in tree_members(pid))],
                             message.keep_off)
                sampler = CpuSampler(nodes.cpu_ns, lambda: None, spec.cpu_sample_ns,
                                     keep=functools.partial(_keep, kept))
                sampler.start()
            elif isinstance(message, p.Follow) and 0 <= message.node < len(nodes.trees):
                with contextlib.suppress(OSError):  # gone again: said at the end
                    nodes.follow(message.node, message.target_pid)
                    keep_off(tree_members(message.target_pid), keep_off_cpus)
            elif message is None or isinstance(message, p.Finish | p.Stop):
                break
    except MonitorTerminated:
        message = p.Stop(reason="terminated (SIGTERM)")
    signal.signal(signal.SIGTERM, signal.SIG_IGN)  # asked once; the samples are written now
    if sampler is None:
        return 0
    samples = sampler.finish()
    problems = [f"{spec.agent_id}: sampling ended early: {sampler.error}"] if sampler.error \
        else []
    if nodes.gone:
        problems.append(f"{spec.agent_id}: the broker ended before the run did ({nodes.gone}); "
                        "its CPU time stays where it was from then on")
    if not isinstance(message, p.Finish):
        problems.append(f"{spec.agent_id}: stopped early ("
                        f"{message.reason if message else 'control channel closed'})")
    out_dir = Path(spec.out_dir)
    files, unwritten = write_files(out_dir, {CPU_FILE: lambda path: write_cpu(path, samples)})
    problems += [f"{spec.agent_id}: {problem}" for problem in unwritten]
    done = p.Done(agent_id=spec.agent_id, status="partial" if problems else "ok", sent=0,
                  received=0, t0_ns=at_ns, artifacts=files, problems=problems)
    channel.send(keep_done(out_dir, done))
    return 0


def _keep(path: Path, samples: Samples) -> None:
    """The samples so far on disk, whole; a failure here is left to the last write, which
    reports it."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with atomic_path(path) as temp:
            write_cpu(temp, samples)
    except OSError:
        pass
