"""Agent processes that follow a script instead of running a role, for the controller's side
of a run's agents (orchestrator.run: the control channel, the stop order, the manifest as
the run keeps it, the collection of their files): real processes on this machine, started
by the local launcher as agents are, that read the controller's messages on their stdin and
answer on their stdout in the control protocol, each message they get noted in a log the
test reads, so it sees in what order each agent was told what.

A script says what an agent does when told a message type (`stop`, `finish`): `done`
(report, with the files it names written and announced, then exit), `kept` (write its
done.json and exit without a word, as an agent whose report was lost), `exit` (exit
without a word, as one that died); and what it says at once (`says`: raw lines)."""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sixnines.formats.layout import AGENT_LOG, AGENTS_DIR
from sixnines.formats.protocol import DEFAULT_CPU_SAMPLE_NS
from sixnines.formats.records import DEFAULT_THROUGHPUT_WINDOW
from sixnines.formats.vocabulary import Role
from sixnines.orchestrator.launchers.base import shutdown_all
from sixnines.orchestrator.plan.agents import AgentPlan
from sixnines.orchestrator.run.agents import Agents
from sixnines.orchestrator.run.channel import AgentHandle
from sixnines.orchestrator.run.fleet import Fleet
from sixnines.orchestrator.run.manifest import new_manifest
from sixnines.orchestrator.run.record import RunRecord
from sixnines.orchestrator.scenario.hosts import LOCAL, Placement
from tests.integration.support import RecordingView, points

SCENARIO = """
name: scripted
systems: [{name: tcp, driver: tcp}]
workload: {message_size: 64, rate: 1000, duration: 1s, warmup: 0s, drain: 1s}
"""

#: The agent: the standard library only, so it starts in a few tens of milliseconds.
AGENT = r"""
import hashlib, json, os, sys
script = json.loads(sys.argv[1])
def note(text):
    with open(script["log"], "a") as log:
        log.write(f"{script['agent_id']} {text}\n")
for line in script.get("says", []):
    print(line, flush=True)
for line in sys.stdin:
    message = json.loads(line)
    kind = message["type"]
    note(f"{kind} {message['expected']}" if kind == "finish" else kind)
    action = script["on"].get(kind)
    if action is None:
        continue
    if action == "exit":
        sys.exit(3)
    artifacts = {}
    for name, content in script.get("files", {}).items():
        data = content.encode()
        with open(os.path.join(script["out_dir"], name), "wb") as file:
            file.write(data)
        artifacts[name] = {"sha256": hashlib.sha256(data).hexdigest(), "bytes": len(data)}
    done = json.dumps({"type": "done", "agent_id": script["agent_id"], "status": "ok",
                       "sent": script.get("sent", 0), "received": script.get("received", 0),
                       "t0_ns": 1, "artifacts": artifacts, "problems": [], "extra": {}})
    if action == "kept":
        with open(os.path.join(script["out_dir"], "done.json"), "w") as file:
            file.write(done + "\n")
    else:
        print(done, flush=True)
    sys.exit(0)
"""


@dataclass(frozen=True)
class Script:
    """What one scripted agent does (see the module doc)."""

    role: str
    on: dict[str, str]
    sent: int = 0
    received: int = 0
    files: dict[str, str] | None = None
    says: tuple[str, ...] = ()


@dataclass
class Scripted:
    """A run's agents played by scripts, its record (the manifest as the run keeps it,
    whose problems the agents' are), and the log of what each agent was told."""

    agents: Agents
    record: RunRecord
    log: Path

    def told(self) -> list[str]:
        """`<agent> <message>` for every message an agent got, in the order they got them."""
        return self.log.read_text().splitlines() if self.log.exists() else []

    def until_finished(self, agents: list[AgentHandle] | None = None
                       ) -> list[tuple[str, str | None]]:
        """(agent id, message type or None) of everything the channel gave until every one
        of `agents` (default: all) finished, within a minute."""
        waited = self.agents.all() if agents is None else agents
        deadline = time.monotonic() + 60
        found = []
        while not all(agent.finished for agent in waited):
            message, agent = self.agents.channel.next(deadline)
            assert agent is not None, "no agent finished within a minute"
            found.append((agent.plan.agent_id, message.TYPE if message else None))
        return found


@contextmanager
def scripted(tmp_path: Path, scripts: dict[str, Script]) -> Iterator[Scripted]:
    """The agents of a run in `tmp_path` / run, each started as its script says (the one of
    role monitor as the run's monitor); every process stopped at the end."""
    point = points(SCENARIO)[0]
    run_dir = tmp_path / "run"
    fleet, placement = Fleet.local(), Placement()
    launcher = fleet[LOCAL]
    record = RunRecord(run_dir, new_manifest(point, "scripted").model_copy(update=dict(
        placement=placement.model_dump(mode="json"), cross_host_latency=False, hosts={},
        cpu_sample_ns=DEFAULT_CPU_SAMPLE_NS, throughput_window=DEFAULT_THROUGHPUT_WINDOW)))
    agents = Agents(point, run_dir, f"scripted/stamp/{point.run_id}", fleet, placement,
                    RecordingView(), DEFAULT_CPU_SAMPLE_NS, record.problems)
    log = tmp_path / "told.log"
    try:
        for agent_id, script in scripts.items():
            out_dir = run_dir / AGENTS_DIR / agent_id
            out_dir.mkdir(parents=True)
            plan = AgentPlan(agent_id=agent_id, role=script.role, rate=0.0, phase_ns=0,
                             first_id=0, sends=script.sent, expected=0)
            spec: dict[str, Any] = {"agent_id": agent_id, "log": str(log),
                                    "out_dir": str(out_dir), "on": script.on,
                                    "sent": script.sent, "received": script.received,
                                    "files": script.files or {}, "says": list(script.says)}
            process = launcher.start([sys.executable, "-c", AGENT, json.dumps(spec)],
                                     agent_id, out_dir / AGENT_LOG, agents.channel.inbox)
            agents.by_id[agent_id] = AgentHandle(plan, launcher, process, out_dir,
                                                 str(out_dir))
            if script.role == Role.MONITOR:
                agents.monitor = agents.by_id[agent_id]
        yield Scripted(agents, record, log)
    finally:
        shutdown_all([agent.process for agent in agents.all()], grace_s=2.0)
