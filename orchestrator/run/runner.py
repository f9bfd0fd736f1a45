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
import time
from dataclasses import dataclass, field
from pathlib import Path

from sixnines.agents.affinity import restore
from sixnines.agents.schedule import NS
from sixnines.formats import protocol as p
from sixnines.formats.controller_lock import holding
from sixnines.formats.layout import FAULTS_LOG
from sixnines.formats.manifest import PER_RUN, BrokerRecord, RunStatus
from sixnines.formats.records import DEFAULT_THROUGHPUT_WINDOW
from sixnines.formats.vocabulary import LoopCpus
from sixnines.orchestrator.launchers.base import LaunchError
from sixnines.orchestrator.plan.cpus import CpuPlacement
from sixnines.orchestrator.run import sidecar
from sixnines.orchestrator.run.agents import Agents, RunFailure
from sixnines.orchestrator.run.broker_nodes import BrokerError
from sixnines.orchestrator.run.brokers import RunningBroker, provide_broker
from sixnines.orchestrator.run.channel import SUPERVISE_TICK_S
from sixnines.orchestrator.run.clocks import sync_clocks
from sixnines.orchestrator.run.collection import collect
from sixnines.orchestrator.run.cpus import announce_placement, keep_controller_off, loop_placement
from sixnines.orchestrator.run.fleet import Fleet
from sixnines.orchestrator.run.interrupts import describe, held
from sixnines.orchestrator.run.manifest import new_manifest
from sixnines.orchestrator.run.progress import ProgressView
from sixnines.orchestrator.run.record import RunRecord
from sixnines.orchestrator.run.resources import RunResources
from sixnines.orchestrator.run.run_faults import RunFaults
from sixnines.orchestrator.run.stop_order import StopOrder
from sixnines.orchestrator.scenario.faults import Fault
from sixnines.orchestrator.scenario.hosts import Placement
from sixnines.orchestrator.scenario.matrix import RunPoint
from sixnines.orchestrator.scenario.model import Scenario

logger = logging.getLogger(__name__)

START_DELAY_S = 0.5  # from the start message to the first scheduled send
OVERRUN_S = 15.0  # past the planned end, agents are told to stop


@dataclass(frozen=True)
class RunSettings:
    """What a scenario sets for every one of its runs, besides the workload point."""

    scenario: str
    placement: Placement = field(default_factory=Placement)
    cpu_sample_ns: int = p.DEFAULT_CPU_SAMPLE_NS
    throughput_window: int = DEFAULT_THROUGHPUT_WINDOW  # recorded for the analysis
    loop_cpus: LoopCpus = LoopCpus.DEDICATED
    follow: str | None = None  # the analysis sidecar's mode (orchestrator.run.sidecar.mode)
    overrides: tuple[str, ...] = ()  # fields set over the file (PATH=VALUE), recorded
    scenario_dir: Path = Path()  # the scenario file's folder: `content` files are found there
    faults: tuple[Fault, ...] = ()  # faults on purpose (orchestrator.run.faults)

    @classmethod
    def of(cls, scenario: Scenario, analysed: bool = False,
           overrides: tuple[str, ...] = (), scenario_dir: Path = Path()) -> RunSettings:
        return cls(scenario.name, scenario.placement, scenario.cpu_sample,
                   scenario.throughput_window, scenario.loop_cpus,
                   sidecar.mode() if analysed else None, overrides, scenario_dir,
                   scenario.faults)


class Run:
    """One run's lifecycle: prepare (broker, monitor, agents, clocks, sidecar), start,
    supervise, wind down (stop, collect, record). Its collaborators: the agents
    (orchestrator.run.agents) and their control channel (channel), their clocks (clocks),
    CPU placement (cpus), stop order (stop_order), the collection of their files
    (collection), its faults on purpose (run_faults) and the manifest (record)."""

    def __init__(self, point: RunPoint, run_dir: Path, fleet: Fleet, view: ProgressView,
                 settings: RunSettings) -> None:
        self.point = point
        self.run_dir = run_dir
        self.key = "/".join(run_dir.parts[-3:])  # <scenario>/<stamp>/<run-id>
        self.fleet = fleet
        self.placement = settings.placement
        self.view = view
        self.resources = RunResources.of(point, settings.scenario)
        first = new_manifest(point, settings.scenario, settings.overrides)
        own = self.resources.record  # the run's own names, said apart from the options
        resources = {} if own is None else {
            "resources": own,
            "driver_options": first.driver_options | dict.fromkeys(own.named, PER_RUN)}
        self.record = RunRecord(run_dir, first.model_copy(
            update=dict(placement=self.placement.model_dump(mode="json"),
                        cross_host_latency=self.placement.cross_host_latency,
                        hosts=fleet.facts, cpu_sample_ns=settings.cpu_sample_ns,
                        throughput_window=settings.throughput_window, **resources)))
        self.manifest = self.record.manifest
        self.problems = self.record.problems
        self.agents = Agents(self.resources.point, run_dir, self.key, fleet, self.placement,
                             view, settings.cpu_sample_ns, self.problems,
                             settings.scenario_dir)
        self.stopping = StopOrder(self.agents)
        self.broker: RunningBroker | None = None
        self.loop_cpus = settings.loop_cpus
        self.cpus = CpuPlacement()
        self.controller_cpus: dict[int, set[int]] = {}  # its threads' sets before the run
        self.stop_reason = ""  # why the agents were told to stop early, if they were
        self.follow = settings.follow
        self.sidecar: sidecar.AnalysisSidecar | None = None
        self.analysed: Path | None = None  # its summary.json, when its sidecar wrote it
        self.planned_faults = settings.faults
        self.faults: RunFaults | None = None  # only when the scenario has faults

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
            with held(on_repeat=self.stopping.hurry) as later:
                try:
                    self._wind_down()
                except BaseException:  # a full disk: the run's analysis is not its to give
                    self._stop_sidecar()
                    raise
        stopped_by = interruption or later.first
        if stopped_by is not None:
            self._stop_sidecar()
            raise stopped_by
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
        self.agents.launch_monitor(self.broker)
        self.agents.launch(self.broker)
        self._record_durability(self.broker)
        sync_clocks(self.agents)
        self._start_sidecar()
        self.faults = RunFaults.arm(self.planned_faults, self.agents, self.broker,
                                    self.fleet, self.problems, self.run_dir / FAULTS_LOG)
        self._start()
        self._start_faults()
        self._record()
        self._supervise()

    def _record_durability(self, broker: RunningBroker) -> None:
        """The durability the run is measured with, its broker asked once the agents have
        set up the topics, streams and queues they use (drivers.base.Driver.durability):
        the run's own, as its agents were given them."""
        driver = self.resources.point.system.driver_at(broker.address, broker.credential)
        self.manifest.durability = driver.durability()
        logger.info("%s: durability %s", self.point.run_id, self.manifest.durability.label)

    def _wind_down(self) -> None:
        """Stop, collect and record whatever happened; the broker is stopped last, and
        also when recording fails (a full disk)."""
        try:
            if self.faults is not None:
                self.faults.close()
            self.stopping.stop(self.stop_reason or "the run ended")
            self.agents.shut_down()
            self._remove_resources()
            collect(self.agents)
        finally:
            try:
                self._finalise()
            finally:
                restore(self.controller_cpus)
                if self.broker is not None:
                    self.broker.stop(keep_data=self.manifest.status != "ok")

    def _remove_resources(self) -> None:
        """The run's own topics, streams and queues deleted once no agent uses them (a note
        in the manifest when that fails: orchestrator.run.resources)."""
        record = self.resources.record
        if self.broker is None or record is None or record.kept:
            return
        if self.stopping.hurried:  # an interrupt repeated: no waiting on a broker's answer
            self.resources.leave("the end was hurried by a repeated interrupt")
        else:
            self.resources.remove(self.broker.address, self.broker.credential,
                                  lambda: self.agents.largest_size)
        self.manifest.resources = record

    def _start_sidecar(self) -> None:
        """The run's analysis sidecar, when its agents' chunks are here (orchestrator
        .sidecar says when); started before the CPU placement, which keeps it off the
        loops' CPUs."""
        agents = self.agents.all()
        if not self.follow or any(agent.remote for agent in agents):
            return
        records = sum(agent.plan.sends + agent.plan.expected for agent in agents)
        if self.follow == sidecar.LIVE or records <= sidecar.END_RECORDS:
            self.sidecar = sidecar.AnalysisSidecar(self.run_dir, self.follow == sidecar.LIVE)

    def _stop_sidecar(self) -> None:
        if self.sidecar is not None:
            self.sidecar.stop()

    def _start(self) -> None:
        self._place_cpus()
        at = time.perf_counter_ns() + int(START_DELAY_S * NS)
        self.agents.start(at, self.cpus)
        w = self.point.workload
        self.manifest.started_at_ns = at
        logger.info("%s: agents start in %.1f s", self.point.run_id, START_DELAY_S)
        self.view.started(at, w.warmup_ns + w.duration_ns)

    def _start_faults(self) -> None:
        """The faults' own thread, on the measured run's clock."""
        if self.faults is None:
            return
        assert self.manifest.started_at_ns is not None  # set by `_start`
        self.manifest.faults = self.faults.start(
            self.manifest.started_at_ns + self.point.workload.warmup_ns)

    def _place_cpus(self) -> None:
        """The CPU placement, when each busy loop gets a CPU of its own (orchestrator.run
        .cpus): in the manifest, and the controller kept off those CPUs until the run is
        over."""
        if self.loop_cpus != LoopCpus.DEDICATED:
            return
        self.cpus = loop_placement(self.agents)
        self.manifest.cpu_placement = self.cpus.notes
        announce_placement(self.agents, self.cpus)
        self.controller_cpus = keep_controller_off(self.agents, self.cpus)

    def _supervise(self) -> None:
        w = self.point.workload
        planned_end = time.monotonic() + START_DELAY_S + (w.warmup_ns + w.duration_ns) / NS
        deadline = planned_end + w.drain_ns / NS + OVERRUN_S
        while not all(a.finished for a in self.agents.measuring()):
            message, agent = self.agents.channel.next(time.monotonic() + SUPERVISE_TICK_S)
            if isinstance(message, p.Progress) and agent is not None:
                agent.sent, agent.received = message.sent, message.received
                self.view.progress(agent.plan.agent_id, message.sent, message.received,
                                   message.disk_written, message.disk_free)
            self._check_broker()
            if self.faults is not None and self.faults.changed():
                self._record()
            if not self.stopping.finish_sent and all(a.finished
                                                     for a in self.agents.senders()):
                self.stopping.finish_consumers()
            if time.monotonic() > deadline:
                self.problems.append(f"run overran its planned end by {OVERRUN_S:.0f} s")
                self.stopping.stop("overran the planned end")
                return
        self.stopping.finish_monitor()

    def _check_broker(self) -> None:
        # nodes killed on purpose come back, or their fault says they did not
        down = self.faults.down if self.faults is not None else set()
        code = self.broker.exited(skip=down) if self.broker else None
        if code is not None and not self.manifest.broker_exit:
            self.manifest.broker_exit = code
            self.problems.append(f"{self.point.system.name}: the broker exited (code {code}) "
                                 "during the run")

    def _record(self) -> None:
        self.record.write(self.agents, self.cpus)

    @property
    def status(self) -> RunStatus:
        """The concluded run's status (ok, partial or failed)."""
        status = self.manifest.status
        assert status is not None, "read once the run is concluded"
        return status

    def _finalise(self) -> None:
        self.record.conclude(self.agents, self.cpus)
        self.view.end_run(self.point, self.status, self.problems)
        self.record.write(self.agents, self.cpus, final=True)
