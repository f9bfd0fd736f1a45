"""The agents of one run: launched on their hosts and prepared, waited for until ready,
told when to start, shut down.

Receivers are launched before senders (they must be subscribed before anyone publishes).
A broker sixnines started gets a monitor (agents.monitor) launched beside it, handled like
an agent but outside the run's measuring agents: its troubles are notes
(`monitor_notes`), never the run's problems.
"""

from __future__ import annotations

import functools
import logging
import os
import time
from pathlib import Path

from sixnines.formats import protocol as p
from sixnines.formats.errors import SixninesError
from sixnines.formats.fill import Fill
from sixnines.formats.keys import NONE, period
from sixnines.formats.layout import AGENT_LOG, AGENTS_DIR
from sixnines.formats.manifest import KeyDraws
from sixnines.formats.sizes import Sizes
from sixnines.formats.vocabulary import MAX_RATE, Role
from sixnines.orchestrator.launchers.base import LaunchError, Process, shutdown_all
from sixnines.orchestrator.plan.agents import AgentPlan, plan_agents
from sixnines.orchestrator.plan.cpus import CpuPlacement
from sixnines.orchestrator.run.brokers import RunningBroker
from sixnines.orchestrator.run.channel import AgentHandle, ControlChannel
from sixnines.orchestrator.run.fleet import Fleet
from sixnines.orchestrator.run.progress import ProgressView
from sixnines.orchestrator.scenario.content import fill_of
from sixnines.orchestrator.scenario.hosts import Placement
from sixnines.orchestrator.scenario.matrix import RunPoint
from sixnines.orchestrator.scenario.sizes import SizeDistribution

logger = logging.getLogger(__name__)

#: How long agents may take to connect and be ready: a base, and more per connection of
#: the agent with the most. Clients are not alike: a Kafka producer and a consumer of 25
#: connections each (librdkafka clients) took ~150 s on a 2-core machine (2026-11-28).
READY_BASE_S = 60.0
READY_PER_CONNECTION_S = 6.0
#: Settings of the agents' recording read from the controller's environment and passed to
#: every agent wherever it runs: an agent on an SSH host or in a container must record as
#: one beside the controller does (agents.recording: SIXNINES_CHUNK_ROWS=0 turns streaming
#: off).
AGENT_ENVIRONMENT = ("SIXNINES_CHUNK_ROWS",)


def ready_timeout_s(connections: int) -> float:
    """How long agents whose largest has `connections` connections may take to be ready."""
    return READY_BASE_S + READY_PER_CONNECTION_S * connections


class RunFailure(SixninesError):
    pass


def agent_argv(python: str) -> list[str]:
    return [python, "-m", "sixnines.agents"]


def agent_environment() -> dict[str, str]:
    """The AGENT_ENVIRONMENT variables set here, for an agent to start with."""
    return {name: os.environ[name] for name in AGENT_ENVIRONMENT if name in os.environ}


class Agents:
    """Every agent of a run by id (the monitor among them while it lives), their control
    channel, and where their troubles are recorded."""

    def __init__(self, point: RunPoint, run_dir: Path, key: str, fleet: Fleet,
                 placement: Placement, view: ProgressView, cpu_sample_ns: int,
                 problems: list[str], scenario_dir: Path = Path()) -> None:
        self.point = point
        self.scenario_dir = scenario_dir  # where a sample file of `content` is found
        self.run_dir = run_dir
        self.key = key  # <scenario>/<stamp>/<run-id>
        self.fleet = fleet
        self.placement = placement
        self.view = view
        self.cpu_sample_ns = cpu_sample_ns
        self.by_id: dict[str, AgentHandle] = {}
        self.channel = ControlChannel(self.by_id, view)
        self.monitor: AgentHandle | None = None  # samples the broker's CPU (agents.monitor)
        self.monitor_notes: list[str] = []  # its troubles: never the run's problems
        self.problems = problems  # the run's (its manifest's)

    @functools.cached_property
    def fill(self) -> Fill:
        """What senders' messages carry (a sample file read once, for every agent)."""
        try:
            return fill_of(self.point.workload.content, self.scenario_dir)
        except ValueError as exc:
            raise RunFailure(f"content: {exc}") from None

    @functools.cached_property
    def sizes(self) -> Sizes | None:
        """The distribution message sizes are drawn from (None: one size), a file of sizes
        read once, for every agent."""
        written = self.point.workload.message_size
        if not isinstance(written, SizeDistribution):
            return None
        try:
            return written.sizes(self.scenario_dir)
        except ValueError as exc:
            raise RunFailure(f"message_size: {exc}") from None

    @property
    def run_seed(self) -> int:
        """The seed agents draw fills, sizes and Poisson gaps from: the workload's, else
        the point's index (the same on every run of the scenario)."""
        seed = self.point.workload.seed
        return seed if seed is not None else self.point.index

    @property
    def largest_size(self) -> int:
        """Every message's size, or the largest a distribution draws."""
        sizes = self.sizes
        if sizes is not None:
            return sizes.largest
        written = self.point.workload.message_size
        assert isinstance(written, int)  # one size when not a distribution
        return written

    @property
    def key_draws(self) -> KeyDraws | None:
        """How the senders draw the run's keys (None: messages carry none): each connection
        cycles through a period of keys that follows the largest size (formats.keys), as
        every sender computes it from its `prepare`."""
        keys = self.point.workload.keys
        if keys == NONE:
            return None
        return KeyDraws(space=keys, seed=self.run_seed, period=period(self.largest_size))

    @property
    def run_id(self) -> str:
        return self.point.run_id

    def all(self) -> list[AgentHandle]:
        return list(self.by_id.values())

    def measuring(self) -> list[AgentHandle]:
        """The agents that send or receive: every one but the monitor."""
        return [a for a in self.by_id.values() if a is not self.monitor]

    def senders(self) -> list[AgentHandle]:
        return [a for a in self.by_id.values() if a.plan.sends_messages]

    def problems_of(self, agent: AgentHandle) -> list[str]:
        """Where an agent's troubles are recorded: the monitor's never fail the run."""
        return self.monitor_notes if agent is self.monitor else self.problems

    # -- launching -------------------------------------------------------------------------
    def launch(self, broker: RunningBroker) -> None:
        """The run's measuring agents, each launched, prepared and ready."""
        driver = self.point.system.driver_class()
        plans = plan_agents(self.point.workload, driver.needs_responder, self.placement.agents)
        self.view.begin_run(self.point, plans)
        # receivers first: they must be subscribed before anyone publishes
        for group in ([a for a in plans if not a.sends_messages],
                      [a for a in plans if a.sends_messages]):
            for plan in group:
                self._launch(plan, broker)
            self._await_ready([self.by_id[a.agent_id] for a in group])

    def launch_monitor(self, broker: RunningBroker) -> None:
        """The broker's CPU sampler, on the broker's host, when sixnines started the broker.
        Whatever fails here is a note: the run goes on without broker CPU."""
        if broker.process is None:
            return
        plan = AgentPlan(agent_id=Role.MONITOR, role=Role.MONITOR, rate=0.0, phase_ns=0,
                         first_id=0, sends=0, expected=0, host=self.placement.broker)
        try:
            self.monitor = self._launch(plan, broker, beside=broker.process)
            self._await_ready([self.monitor])
        except (LaunchError, RunFailure) as exc:
            self.monitor_notes.append(f"broker CPU monitor: {exc}")
            if self.monitor is not None:
                self.by_id.pop(Role.MONITOR)
                self.monitor.process.shutdown()
                self.monitor = None

    def _launch(self, plan: AgentPlan, broker: RunningBroker, beside: Process | None = None
                ) -> AgentHandle:
        """Start an agent and send it `prepare`; a monitor starts `beside` the broker."""
        out_dir = self.run_dir / AGENTS_DIR / plan.agent_id
        out_dir.mkdir(parents=True, exist_ok=True)
        launcher = self.fleet[plan.host]
        remote_dir = launcher.workdir(f"{self.key}/{AGENTS_DIR}/{plan.agent_id}", out_dir)
        argv, log = agent_argv(launcher.python), out_dir / AGENT_LOG
        target_pid, node_pids = 0, []
        inbox = self.channel.inbox
        if beside is None:
            process = launcher.start(argv, plan.agent_id, log, inbox, agent_environment())
        else:
            process, target_pid = launcher.start_beside(beside, argv, plan.agent_id, log, inbox)
            node_pids = [node.pid for node in broker.nodes[1:]]
        agent = AgentHandle(plan, launcher, process, out_dir, remote_dir)
        self.by_id[plan.agent_id] = agent
        logger.info("%s: %s (%s) started on %s", self.run_id, plan.agent_id, plan.role,
                    plan.host)
        w = self.point.workload
        shape = w.shape if plan.sends_messages else None
        options = self.point.system.checked_options
        agent.send(p.Prepare(
            protocol=p.PROTOCOL_VERSION, run_id=self.run_id, agent_id=plan.agent_id,
            role=plan.role, driver=self.point.system.driver, address=broker.address,
            driver_options=options.model_dump(mode="json"),
            message_size=self.largest_size, rate=plan.rate,
            schedule=MAX_RATE if w.saturation else str(w.schedule),
            messages=plan.sends if w.saturation else 0,
            duration_ns=w.duration_ns, warmup_ns=w.warmup_ns, connections=plan.connections,
            first_id=plan.first_id, phase_ns=plan.phase_ns, receive=str(w.receive),
            drain_ns=w.drain_ns, seed=self.run_seed,
            expected=plan.expected, out_dir=remote_dir, cpu_sample_ns=self.cpu_sample_ns,
            target_pid=target_pid, node_pids=node_pids,
            credential=None if beside else broker.credential_message(),
            shape=None if shape is None else shape.as_json(),
            lanes=w.producers * plan.connections, keys=w.keys,
            hold_ns=(w.release_ns or 0) if plan.role == Role.CONSUMER else 0,
            **({"content": self.fill.to_message()} if plan.sends_messages else {}),
            reconnect_ns=self.point.system.reconnect,
            sizes=None if self.sizes is None else self.sizes.to_message(),
        ))
        return agent

    def _await_ready(self, group: list[AgentHandle]) -> None:
        timeout_s = ready_timeout_s(max((a.plan.connections for a in group), default=1))
        deadline = time.monotonic() + timeout_s
        while any(a.ready is None for a in group):
            message, agent = self.channel.next(deadline)
            if agent is None:
                waiting = ", ".join(a.plan.agent_id for a in group if a.ready is None)
                raise RunFailure(f"agents not ready within {timeout_s:.0f} s: {waiting}")
            if isinstance(message, p.Ready):
                if message.protocol != p.PROTOCOL_VERSION:
                    raise RunFailure(f"{agent.plan.agent_id} speaks control protocol "
                                     f"{message.protocol}, the controller {p.PROTOCOL_VERSION}")
                agent.ready = message
            if agent.failure is not None and (agent in group or agent is not self.monitor):
                raise RunFailure(f"{agent.plan.agent_id} could not start: {agent.failure}")

    # -- starting and ending ---------------------------------------------------------------
    def start(self, at_ns: int, cpus: CpuPlacement) -> None:
        """`start` at `at_ns` on the controller's clock, to every agent with a clock (all but
        a monitor that died), each on its own clock, with its loop's CPU."""
        for agent in self.by_id.values():
            if agent.clock is not None:
                kernel = agent.ready_message.host.get("kernel_id", "")
                offset_ns = agent.clock.offset_ns
                assert offset_ns is not None  # clocks.settle_domains set it
                agent.send(p.Start(at_ns=at_ns + offset_ns,
                                   loop_cpu=cpus.loop_cpu.get(agent.plan.agent_id, -1),
                                   keep_off=cpus.avoided_by(kernel)))

    def shut_down(self) -> None:
        """Every agent process stopped (launchers.base.shutdown_all)."""
        shutdown_all([agent.process for agent in self.by_id.values()])
