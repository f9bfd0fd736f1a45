"""One run, start to finish: broker, agents, start barrier, supervision, teardown,
collection, manifest.

The broker and each agent run on the host the placement gives them, through that host's
launcher; the agents' files are fetched to the controller and verified against the
checksums the agents announced. Whatever goes wrong — a broker that dies, an agent or a
host that fails, Ctrl-C or SIGTERM (once or repeatedly), a full disk — every process this
run started is stopped, the data gathered so far stays on disk, and the manifest says what
happened (status ok / partial / failed, with the problems in words, naming the host).
The manifest is written when the run starts and rewritten as it goes (status `running`
until the end), so a controller that is killed outright leaves a record `sixnines report`
can recover the run from (orchestrator.results.recovery).

A broker sixnines started gets a monitor (agents.monitor) on its host, handled like an
agent (clock pings, start, files fetched and verified) but outside `agents` in the
manifest: its troubles are notes (`monitor.notes`), never the run's problems, but for one:
a monitor that dies once running leaves the run partial (its samples stop there).
"""

from __future__ import annotations

import logging
import os
import queue
import time
from dataclasses import dataclass, field
from pathlib import Path

from sixnines.agents.affinity import busy_loop, keep_off, restore
from sixnines.agents.cpu import descendants
from sixnines.agents.facts import clock_domain, kernel_id
from sixnines.agents.schedule import NS
from sixnines.formats import protocol as p
from sixnines.formats.chunks import kept_chunks
from sixnines.formats.controller_lock import holding
from sixnines.formats.done import kept_done
from sixnines.formats.errors import SixninesError
from sixnines.formats.integrity import sha256_of
from sixnines.formats.lag import FEWER_LOOPS, LagCause, crowded
from sixnines.formats.layout import AGENT_LOG, AGENTS_DIR, DONE_FILE
from sixnines.formats.manifest import AgentEntry, Artifact, BrokerRecord, Clock, MonitorEntry
from sixnines.formats.records import DEFAULT_THROUGHPUT_WINDOW
from sixnines.formats.vocabulary import MAX_RATE, LoopCpus, Role
from sixnines.orchestrator.launchers.base import Launcher, LaunchError, Process, shutdown_all
from sixnines.orchestrator.plan.agents import AgentPlan, plan_agents
from sixnines.orchestrator.plan.cpus import CpuPlacement, Seat, place_loops
from sixnines.orchestrator.run import sidecar
from sixnines.orchestrator.run.brokers import BrokerError, RunningBroker, provide_broker
from sixnines.orchestrator.run.fleet import Fleet
from sixnines.orchestrator.run.interrupts import describe, held
from sixnines.orchestrator.run.manifest import (
    RUNNING,
    new_manifest,
    verified_artifacts,
    write_manifest,
)
from sixnines.orchestrator.scenario.hosts import Placement

logger = logging.getLogger(__name__)

READY_TIMEOUT_S = 60.0
START_DELAY_S = 0.5  # from the start message to the first scheduled send
PINGS = 7
SUPERVISE_TICK_S = 0.25
OVERRUN_S = 15.0  # past the planned end, agents are told to stop
STOP_GRACE_S = 15.0  # after a stop, how long agents get to write their data
#: Settings of the agents' recording read from the controller's environment and passed to
#: every agent wherever it runs: an agent on an SSH host or in a container must record as
#: one beside the controller does (agents.recording: SIXNINES_CHUNK_ROWS=0 turns streaming
#: off).
AGENT_ENVIRONMENT = ("SIXNINES_CHUNK_ROWS",)


class RunFailure(SixninesError):
    pass


@dataclass
class AgentHandle:
    """The controller's view of one agent process."""

    plan: AgentPlan
    launcher: Launcher
    process: Process
    out_dir: Path  # on the controller
    remote_dir: str  # where the agent writes, on its host
    ready: p.Ready | None = None
    done: p.Done | None = None
    failure: str | None = None
    clock: Clock | None = None  # None until it answered the clock pings
    artifacts: dict[str, Artifact] = field(default_factory=dict)  # as announced, verified
    collected: bool = False  # its remote files are here, verified, and gone from its host
    sent: int = 0
    received: int = 0

    @property
    def finished(self) -> bool:
        return self.done is not None or self.failure is not None

    @property
    def remote(self) -> bool:
        """Whether it writes its files elsewhere than where the controller keeps them."""
        return self.remote_dir != str(self.out_dir)

    def send(self, message: p.Message) -> bool:
        return self.process.write_line(p.encode(message))


def agent_argv(python: str) -> list[str]:
    return [python, "-m", "sixnines.agents"]


def agent_environment() -> dict[str, str]:
    """The AGENT_ENVIRONMENT variables set here, for an agent to start with."""
    return {name: os.environ[name] for name in AGENT_ENVIRONMENT if name in os.environ}


@dataclass(frozen=True)
class RunSettings:
    """What a scenario sets for every one of its runs, besides the workload point."""

    scenario: str
    placement: Placement = field(default_factory=Placement)
    cpu_sample_ns: int = p.DEFAULT_CPU_SAMPLE_NS
    throughput_window: int = DEFAULT_THROUGHPUT_WINDOW  # recorded for the analysis
    loop_cpus: LoopCpus = LoopCpus.DEDICATED
    follow: str | None = None  # the analysis sidecar's mode (orchestrator.run.sidecar.mode)

    @classmethod
    def of(cls, scenario, analysed: bool = False) -> RunSettings:
        return cls(scenario.name, scenario.placement, scenario.cpu_sample,
                   scenario.throughput_window, scenario.loop_cpus,
                   sidecar.mode() if analysed else None)


class Run:
    def __init__(self, point, run_dir: Path, fleet: Fleet, view, settings: RunSettings
                 ) -> None:
        self.point = point
        self.run_dir = run_dir
        self.key = "/".join(run_dir.parts[-3:])  # <scenario>/<stamp>/<run-id>
        self.fleet = fleet
        self.placement = settings.placement
        self.view = view
        self.inbox: queue.Queue = queue.Queue()
        self.agents: dict[str, AgentHandle] = {}
        self.broker: RunningBroker | None = None
        self.cpu_sample_ns = settings.cpu_sample_ns
        self.loop_cpus = settings.loop_cpus
        self.cpus = CpuPlacement()
        self.controller_cpus: dict[int, set[int]] = {}  # its threads' sets before the run
        self.monitor: AgentHandle | None = None  # samples the broker's CPU (agents.monitor)
        self.monitor_notes: list[str] = []  # its troubles: never the run's problems
        self.manifest = new_manifest(point, settings.scenario).model_copy(update=dict(
            placement=self.placement.model_dump(mode="json"),
            cross_host_latency=self.placement.cross_host_latency, hosts=fleet.facts,
            cpu_sample_ns=self.cpu_sample_ns, throughput_window=settings.throughput_window))
        self.problems: list[str] = self.manifest.problems
        self.stop_reason = ""  # why the agents were told to stop early, if they were
        self.hurry = False  # a repeated interrupt: wait no longer than needed
        self.finish_sent = False  # the receivers were told how much was sent
        self.follow = settings.follow
        self.sidecar: sidecar.AnalysisSidecar | None = None
        self.analysed: Path | None = None  # its summary.json, when its sidecar wrote it

    # -- lifecycle -----------------------------------------------------------------------
    def execute(self) -> dict:
        """Run and return the manifest as written, its JSON object (`self.manifest` is the
        model; on disk from the start, rewritten as the run goes).
        An interrupt (Ctrl-C, SIGTERM) winds the run down like any failure and is then
        raised again, so the caller stops the scenario; interrupts during the wind-down
        only hurry it (orchestrator.run.interrupts). The run directory is locked meanwhile
        (formats.controller_lock): no other command takes the run for one whose controller
        died."""
        self.run_dir.mkdir(parents=True, exist_ok=True)
        with holding(self.run_dir):
            return self._execute()

    def _execute(self) -> dict:
        self._record()
        interruption: KeyboardInterrupt | None = None
        try:
            self._measure()
        except KeyboardInterrupt as exc:
            interruption = exc
            self.stop_reason = describe(exc)
            self.problems.append(self.stop_reason)
        except (BrokerError, LaunchError, RunFailure) as exc:
            self.stop_reason = str(exc)
            self.problems.append(self.stop_reason)
        finally:
            with held(on_repeat=self._hurry) as later:
                try:
                    self._wind_down()
                except BaseException:  # a full disk: the run's analysis is not its to give
                    self._stop_sidecar()
                    raise
        if interruption is not None or later.first is not None:
            self._stop_sidecar()
            raise interruption or later.first
        if self.sidecar is not None:
            self.analysed = self.sidecar.finish()
        return self.manifest.as_json()

    def _measure(self) -> None:
        logger.info("%s: starting (%s)", self.point.run_id, self.run_dir)
        self.broker = provide_broker(self.point.system, self.fleet[self.placement.broker],
                                     self.run_dir, self.key)
        logger.info("%s: broker (%s) at %s", self.point.run_id, self.broker.kind,
                 self.broker.address)
        self.manifest.broker = BrokerRecord.model_validate(self.broker.describe())
        self._record()
        self._start_monitor()
        self._start_agents()
        self._sync_clocks()
        self._start_sidecar()
        self._start()
        self._record()
        self._supervise()

    def _wind_down(self) -> None:
        """Stop, collect and record whatever happened; the broker is stopped last, and
        also when recording fails (a full disk)."""
        try:
            self._stop_agents(self.stop_reason or "the run ended")
            self._teardown()
            self._collect()
        finally:
            try:
                self._finalise()
            finally:
                restore(self.controller_cpus)
                if self.broker is not None:
                    self.broker.stop(keep_data=self.manifest.status != "ok")

    def _start_sidecar(self) -> None:
        """The run's analysis sidecar, when its agents' chunks are here (orchestrator
        .sidecar says when); started before the CPU placement, which keeps it off the
        loops' CPUs."""
        if not self.follow or any(agent.remote for agent in self.agents.values()):
            return
        records = sum(agent.plan.sends + agent.plan.expected for agent in self.agents.values())
        if self.follow == sidecar.LIVE or records <= sidecar.END_RECORDS:
            self.sidecar = sidecar.AnalysisSidecar(self.run_dir, self.follow == sidecar.LIVE)

    def _stop_sidecar(self) -> None:
        if self.sidecar is not None:
            self.sidecar.stop()

    def _hurry(self) -> None:
        """Another interrupt while winding down: stop waiting for agents to report (their
        files are still collected from disk)."""
        self.hurry = True

    def _start_agents(self) -> None:
        driver = self.point.system.driver_class()
        plans = plan_agents(self.point.workload, driver.needs_responder, self.placement.agents)
        self.view.begin_run(self.point, plans)
        # receivers first: they must be subscribed before anyone publishes
        for group in ([a for a in plans if not a.sends_messages],
                      [a for a in plans if a.sends_messages]):
            for plan in group:
                self._launch(plan)
            self._await_ready([self.agents[a.agent_id] for a in group])

    def _launch(self, plan: AgentPlan, beside: Process | None = None) -> AgentHandle:
        """Start an agent and send it `prepare`; a monitor starts `beside` the broker."""
        out_dir = self.run_dir / AGENTS_DIR / plan.agent_id
        out_dir.mkdir(parents=True, exist_ok=True)
        launcher = self.fleet[plan.host]
        remote_dir = launcher.workdir(f"{self.key}/{AGENTS_DIR}/{plan.agent_id}", out_dir)
        argv, log = agent_argv(launcher.python), out_dir / AGENT_LOG
        target_pid = 0
        if beside is None:
            process = launcher.start(argv, plan.agent_id, log, self.inbox, agent_environment())
        else:
            process, target_pid = launcher.start_beside(beside, argv, plan.agent_id, log,
                                                        self.inbox)
        agent = AgentHandle(plan, launcher, process, out_dir, remote_dir)
        self.agents[plan.agent_id] = agent
        logger.info("%s: %s (%s) started on %s", self.point.run_id, plan.agent_id, plan.role,
                 plan.host)
        w = self.point.workload
        agent.send(p.Prepare(
            protocol=p.PROTOCOL_VERSION, run_id=self.point.run_id, agent_id=plan.agent_id,
            role=plan.role, driver=self.point.system.driver, address=self.broker.address,
            driver_options=self.point.system.options.model_dump(mode="json"),
            message_size=w.message_size, rate=plan.rate,
            schedule=MAX_RATE if w.saturation else str(w.schedule),
            messages=plan.sends if w.saturation else 0,
            duration_ns=w.duration_ns, warmup_ns=w.warmup_ns, connections=plan.connections,
            first_id=plan.first_id, phase_ns=plan.phase_ns, receive=str(w.receive),
            drain_ns=w.drain_ns, seed=w.seed if w.seed is not None else self.point.index,
            expected=plan.expected, out_dir=remote_dir, cpu_sample_ns=self.cpu_sample_ns,
            target_pid=target_pid, credential=None if beside else self.broker.credential_message(),
        ))
        return agent

    def _start_monitor(self) -> None:
        """The broker's CPU sampler, on the broker's host, when sixnines started the broker.
        Whatever fails here is a note: the run goes on without broker CPU."""
        if self.broker.process is None:
            return
        plan = AgentPlan(agent_id=Role.MONITOR, role=Role.MONITOR, rate=0.0, phase_ns=0,
                         first_id=0, sends=0, expected=0, host=self.placement.broker)
        try:
            self.monitor = self._launch(plan, beside=self.broker.process)
            self._await_ready([self.monitor])
        except (LaunchError, RunFailure) as exc:
            self.monitor_notes.append(f"broker CPU monitor: {exc}")
            if self.monitor is not None:
                self.agents.pop(Role.MONITOR)
                self.monitor.process.shutdown()
                self.monitor = None

    def _await_ready(self, group: list[AgentHandle]) -> None:
        deadline = time.monotonic() + READY_TIMEOUT_S
        while any(a.ready is None for a in group):
            message, agent = self._next(deadline)
            if agent is None:
                waiting = ", ".join(a.plan.agent_id for a in group if a.ready is None)
                raise RunFailure(f"agents not ready within {READY_TIMEOUT_S:.0f} s: {waiting}")
            if isinstance(message, p.Ready):
                if message.protocol != p.PROTOCOL_VERSION:
                    raise RunFailure(f"{agent.plan.agent_id} speaks control protocol "
                                     f"{message.protocol}, the controller {p.PROTOCOL_VERSION}")
                agent.ready = message
            if agent.failure is not None and (agent in group or agent is not self.monitor):
                raise RunFailure(f"{agent.plan.agent_id} could not start: {agent.failure}")

    def _sync_clocks(self) -> None:
        """Estimate each agent's clock offset from ours: the ping with the shortest round
        trip, uncertainty half that round trip (NTP's reasoning). The estimates are kept as
        evidence; the offset used to start agents is one per clock domain (agents on one
        kernel share a monotonic clock and must agree on t0 to the nanosecond): exactly 0
        in the controller's own domain, else the domain's most certain estimate. A monitor
        that died or does not answer is left without a clock (and out of the run)."""
        for agent in self.agents.values():
            if agent is self.monitor and agent.finished:
                continue
            best = None
            for _ in range(PINGS):
                sent = time.perf_counter_ns()
                agent.send(p.Ping(t_ns=sent))
                message, source = self._next(time.monotonic() + 10)
                back = time.perf_counter_ns()
                if source is agent and isinstance(message, p.Pong) and message.t_ns == sent:
                    rtt = back - sent
                    if best is None or rtt < best[0]:
                        best = (rtt, message.agent_ns - (sent + back) // 2)
            if best is None and agent is self.monitor:
                agent.failure = "did not answer clock pings"
                continue
            if best is None:
                raise RunFailure(f"{agent.plan.agent_id} did not answer clock pings")
            agent.clock = Clock(domain=agent.ready.host.get("clock_domain"),
                                estimated_offset_ns=best[1], uncertainty_ns=best[0] // 2,
                                pings=PINGS)
        ours = clock_domain()
        clocked = [a for a in self.agents.values() if a.clock is not None]
        for agent in clocked:
            domain = agent.clock.domain
            same_clock = domain == ours
            best = min((a.clock for a in clocked if a.clock.domain == domain),
                       key=lambda clock: clock.uncertainty_ns)
            agent.clock.offset_ns = 0 if same_clock else best.estimated_offset_ns
            agent.clock.domain_uncertainty_ns = 0 if same_clock else best.uncertainty_ns
            agent.clock.same_clock_as_controller = same_clock

    def _start(self) -> None:
        self._place_cpus()
        at = time.perf_counter_ns() + int(START_DELAY_S * NS)
        for agent in self.agents.values():
            if agent.clock is not None:  # all but a monitor that died
                kernel = agent.ready.host.get("kernel_id", "")
                agent.send(p.Start(at_ns=at + agent.clock.offset_ns,
                                   loop_cpu=self.cpus.loop_cpu.get(agent.plan.agent_id, -1),
                                   keep_off=self.cpus.avoided_by(kernel)))
        w = self.point.workload
        self.manifest.started_at_ns = at
        logger.info("%s: agents start in %.1f s", self.point.run_id, START_DELAY_S)
        self.view.started(at, w.warmup_ns + w.duration_ns)

    def _supervise(self) -> None:
        w = self.point.workload
        planned_end = time.monotonic() + START_DELAY_S + (w.warmup_ns + w.duration_ns) / NS
        deadline = planned_end + w.drain_ns / NS + OVERRUN_S
        while not all(a.finished for a in self._measuring()):
            message, agent = self._next(time.monotonic() + SUPERVISE_TICK_S)
            if isinstance(message, p.Progress):
                agent.sent, agent.received = message.sent, message.received
                self.view.progress(agent.plan.agent_id, message.sent, message.received,
                                   message.disk_written, message.disk_free)
            self._check_broker()
            if not self.finish_sent and all(a.finished for a in self._senders()):
                self._finish_consumers()
            if time.monotonic() > deadline:
                self.problems.append(f"run overran its planned end by {OVERRUN_S:.0f} s")
                self._stop_agents("overran the planned end")
                return
        self._finish_monitor()

    def _place_cpus(self) -> None:
        """Decide the CPU placement (orchestrator.plan.cpus). On its own kernel the controller
        keeps itself and what it started there (guards, SSH clients, a broker) off the
        loops' CPUs until the run is over; the agents place themselves."""
        if self.loop_cpus != LoopCpus.DEDICATED:
            return
        w = self.point.workload
        self.cpus = place_loops([
            Seat(agent.plan.agent_id, agent.plan.host, agent.ready.host.get("kernel_id", ""),
                 frozenset(agent.ready.host.get("cpus", ())),
                 agent is not self.monitor and busy_loop(agent.plan.role, str(w.receive)))
            for agent in self.agents.values() if agent.clock is not None])
        self.manifest.cpu_placement = self.cpus.notes
        for note in self.cpus.notes:
            logger.info("%s: CPU placement: %s", self.point.run_id, note)
        for crowded_kernel in crowded(self.cpus.notes):
            self.view.warn(f"{LagCause.PLACEMENT}: {crowded_kernel}: expect send-lag tails "
                           f"from the placement, not the system: {FEWER_LOOPS}")
        looping = {agent.ready.pid for agent in self.agents.values()
                   if agent.plan.agent_id in self.cpus.loop_cpu}
        ours = [os.getpid(), *(pid for pid in descendants(os.getpid()) if pid not in looping)]
        self.controller_cpus = keep_off(ours, self.cpus.avoided_by(kernel_id()))

    def _measuring(self) -> list[AgentHandle]:
        """The agents that send or receive: every one but the monitor."""
        return [a for a in self.agents.values() if a is not self.monitor]

    def _finish_monitor(self) -> None:
        """The run is over: the monitor takes its last sample and reports."""
        if self.monitor is None or self.monitor.finished:
            return
        self.monitor.send(p.Finish(expected=0))
        deadline = time.monotonic() + STOP_GRACE_S
        while not self.monitor.finished:
            _, source = self._next(deadline)
            if source is None:
                self.monitor_notes.append(f"broker CPU monitor: no report within "
                                          f"{STOP_GRACE_S:.0f} s of the run's end")
                return

    def _senders(self) -> list[AgentHandle]:
        return [a for a in self.agents.values() if a.plan.sends_messages]

    def _finish_consumers(self) -> None:
        """Tell the receiving agents how much was sent, so they stop once it has arrived."""
        self.finish_sent = True
        sent = sum(a.done.sent for a in self._senders() if a.done is not None)
        for agent in self._measuring():
            if not agent.plan.sends_messages and not agent.finished:
                agent.send(p.Finish(expected=sent))

    def _check_broker(self) -> None:
        code = self.broker.exited() if self.broker else None
        if code is not None and not self.manifest.broker_exit:
            self.manifest.broker_exit = code
            self.problems.append(f"{self.point.system.name}: the broker exited (code {code}) "
                                 "during the run")

    def _stop_agents(self, reason: str) -> None:
        """Stop what still runs, senders first, and wait for each to write its data (until
        a repeated interrupt hurries us: `_collect` still finds what they wrote). Once the
        senders have reported, the receivers hear out what was sent: `finish` with its
        count, so they stop when it has arrived or their drain has passed, as at a normal
        end — a receiver stopped at once would miss what was still on its way, which is
        not the system's loss. They are stopped instead when that count is not known (a
        sender did not report), when they were told to finish before (the run overran, or
        was interrupted during their drain) or when we are hurried; what they miss after
        their last receipt is then `unknown` (docs/design.md, "The end of a receiver's
        records"). The monitor goes last."""
        senders = self._senders()
        self._await_end(self._told_to_stop(senders, reason), STOP_GRACE_S)
        receivers = [a for a in self._measuring() if not a.plan.sends_messages]
        if self.finish_sent or self.hurry or any(a.done is None for a in senders):
            self._told_to_stop(receivers, reason)
        else:
            self._finish_consumers()
        self._await_end(receivers, self.point.workload.drain_ns / NS + STOP_GRACE_S)
        if self.monitor is not None:
            self._await_end(self._told_to_stop([self.monitor], reason), STOP_GRACE_S)

    def _told_to_stop(self, group: list[AgentHandle], reason: str) -> list[AgentHandle]:
        """`group`, each agent still running told to stop."""
        for agent in group:
            if not agent.finished:
                logger.info("%s: stopping %s (%s)", self.point.run_id, agent.plan.agent_id, reason)
                agent.send(p.Stop(reason=reason))
        return group

    def _await_end(self, group: list[AgentHandle], seconds: float) -> None:
        """Until every agent of `group` has finished, `seconds` have passed, or we are
        hurried."""
        deadline = time.monotonic() + seconds
        while not self.hurry and not all(a.finished for a in group):
            _, source = self._next(min(deadline, time.monotonic() + SUPERVISE_TICK_S))
            if source is None and time.monotonic() >= deadline:
                break

    def _teardown(self) -> None:
        shutdown_all([agent.process for agent in self.agents.values()])

    def _collect(self) -> None:
        """Fetch the files of every agent that announced them from its host and check them
        against their checksums; a remote copy is removed only once all of it is here. An
        agent whose `done` never arrived (it finished after we stopped listening) is taken
        from the done.json it kept beside its files; one that died has its directory
        fetched all the same, for the chunks it closed, which their index vouches for
        (docs/design.md, "When an agent dies")."""
        for agent in self.agents.values():
            remote = agent.remote
            if agent.done is None and not remote:
                self._done_from_disk(agent)
            fetched = remote and agent.ready is not None and self._fetch(agent)  # it ran
            if agent.done is not None:
                agent.artifacts = self._verified(agent)
            if fetched and self._all_here(agent):
                agent.launcher.run(["rm", "-rf", agent.remote_dir], timeout_s=60)
                agent.collected = True

    @staticmethod
    def _all_here(agent: AgentHandle) -> bool:
        """Whether the controller's copy of an agent's files is whole: every file it
        announced verified, or, for one that died, every chunk its index lists matching."""
        if agent.done is not None:
            return all(a.verified for a in agent.artifacts.values())
        return all(path.is_file() and sha256_of(path) == line["sha256"]
                   for path, line in kept_chunks(agent.out_dir).listed)

    def _fetch(self, agent: AgentHandle) -> bool:
        """Copy the agent's directory from its host; False, with a problem line, when that
        failed (a host gone)."""
        try:
            agent.process.fetch(agent.remote_dir, agent.out_dir)
        except Exception as exc:
            self._problems_of(agent).append(
                f"{agent.plan.agent_id}: could not fetch its files from host "
                f"{agent.plan.host}: {exc}")
            return False
        return True

    def _done_from_disk(self, agent: AgentHandle) -> None:
        done = kept_done(self.run_dir, agent.plan.agent_id)
        if done is not None and done.agent_id == agent.plan.agent_id:
            logger.info("%s: %s's results taken from its %s", self.point.run_id,
                     agent.plan.agent_id, DONE_FILE)
            agent.done, agent.failure = done, None
            agent.sent, agent.received = done.sent, done.received
            self.view.agent_state(agent.plan.agent_id, done.status)

    # -- messages --------------------------------------------------------------------------
    def _next(self, deadline: float) -> tuple[p.Message | None, AgentHandle | None]:
        """The next message from any agent before `deadline`, with its sender. Ends of output
        and undecodable lines become agent failures here; (None, None) on timeout."""
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return None, None
            try:
                process, line = self.inbox.get(timeout=remaining)
            except queue.Empty:
                return None, None
            agent = self.agents.get(process.name)
            if agent is None:
                continue
            if line is None:
                if not agent.finished:
                    code = process.wait(2.0)
                    agent.failure = (f"exited (code {code}) without reporting its results; "
                                     f"see {agent.out_dir / AGENT_LOG}")
                    self.view.agent_state(agent.plan.agent_id, "failed")
                return None, agent
            try:
                message = p.decode(line)
            except p.ProtocolError as exc:
                agent.failure = str(exc)
                return None, agent
            if isinstance(message, p.Done):
                agent.done = message
                agent.sent, agent.received = message.sent, message.received
                self.view.agent_state(agent.plan.agent_id, message.status)
            elif isinstance(message, p.Failed):
                agent.failure = message.error
                self.view.agent_state(agent.plan.agent_id, "failed")
            return message, agent

    # -- the record ------------------------------------------------------------------------
    def _record(self, final: bool = False) -> None:
        """Write the manifest as things stand: agents not yet finished are `running` (or,
        once the run is over, `missing`)."""
        self.manifest.agents = [AgentEntry(**self._entry(agent, final))
                                for agent in self._measuring()]
        monitor = self._entry(self.monitor, final) if self.monitor else {"status": "failed"}
        self.manifest.monitor = (MonitorEntry(**monitor, notes=self.monitor_notes)
                                 if self.monitor or self.monitor_notes else None)
        write_manifest(self.run_dir, self.manifest)

    def _finalise(self) -> None:
        for agent in self.agents.values():
            problems = self._problems_of(agent)
            if agent.done is not None:
                problems.extend(agent.done.problems)
            elif agent.failure:
                problems.append(f"{agent.plan.agent_id} on host {agent.plan.host}: "
                                f"{agent.failure}")
                if agent is self.monitor and agent.clock is not None:
                    self.problems.append(f"the broker CPU monitor died during the run ("
                                         f"{agent.failure}): broker CPU covers the run up "
                                         "to its last kept sample")
        statuses = {self._entry(agent, final=True)["status"] for agent in self._measuring()}
        if not any(agent.done is not None or kept_chunks(agent.out_dir).listed
                   for agent in self._measuring()):
            self.manifest.status = "failed"  # nothing recorded (what died keeps its chunks)
        elif self.problems or statuses != {"ok"}:
            self.manifest.status = "partial"
        else:
            self.manifest.status = "ok"
        self.manifest.ended_at = time.time()
        logger.info("%s: %s", self.point.run_id, self.manifest.status)
        self.view.end_run(self.point, self.manifest.status, self.problems)
        self._record(final=True)

    def _entry(self, agent: AgentHandle, final: bool) -> dict:
        """The fields of an agent's manifest entry (formats.manifest.AgentEntry; its
        problems: `_finalise`)."""
        plan, ready, done = agent.plan, agent.ready, agent.done
        return dict(
            id=plan.agent_id, role=plan.role, host=plan.host, first_id=plan.first_id,
            connections=plan.connections, rate=plan.rate, planned_sends=plan.sends,
            loop_cpu=self.cpus.loop_cpu.get(plan.agent_id),
            clock=agent.clock or Clock(), sent=agent.sent, received=agent.received,
            exit_code=agent.process.poll(),
            files_at=agent.process.files_at(agent.remote_dir)
            if agent.remote and not agent.collected else None,
            **({} if ready is None else dict(pid=ready.pid, host_facts=ready.host,
                                             versions=ready.versions)),
            **(dict(status=done.status, t0_ns=done.t0_ns, artifacts=agent.artifacts,
                    **done.extra) if done is not None else
               dict(status="failed" if agent.failure else "missing" if final else RUNNING)))

    def _problems_of(self, agent: AgentHandle) -> list[str]:
        """Where an agent's troubles are recorded: the monitor's never fail the run."""
        return self.monitor_notes if agent is self.monitor else self.problems

    def _verified(self, agent: AgentHandle) -> dict[str, Artifact]:
        """Artifacts as announced, each checked against the file on disk."""
        files, problems = verified_artifacts(self.run_dir, agent.plan.agent_id,
                                             agent.done.artifacts)
        self._problems_of(agent).extend(problems)
        return files
