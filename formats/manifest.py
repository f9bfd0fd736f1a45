"""manifest.json: what a run was, where it ran, with what, and how it went.

The controller writes it when the run starts and rewrites it as the run goes
(orchestrator.run.runner; status `running` until the end); `sixnines report` rewrites it once
more for a run whose controller died (orchestrator.results.recovery). The analysis and the
reports read it. docs/manifest.schema.json is its JSON Schema, generated from these models
(`python -m sixnines.formats.schema`).

Every field has the default an older manifest without it reads as (no
`throughput_window`: 100; no clock domain: every agent on one clock; no `first_id`: a
sender placing no producer ids), and keys no model names are kept when the manifest is
rewritten. A manifest that does not fit these models (an agent without an id, an
`artifacts` that is not a mapping, a count that is text, an agent listed twice, a rate
that is no number) was edited or damaged: formats.integrity refuses it, and the run is
`corrupt`. A results directory is untrusted input, so every name a manifest gives that
becomes a path is a plain name (formats.run_files: agent ids, artifact names), and where
files wait on another host (`files_at`) is a clean absolute path.

`schema_version` (SCHEMA_VERSION) says which shape a manifest has; bump it when a field is
added, removed, renamed or retyped, or changes meaning. Manifests written before it
existed have none and read as version 1; one written by a newer sixnines is not read
(`newer_schema`): its fields may mean what this one does not know.
"""

from __future__ import annotations

import math
from collections import Counter
from pathlib import PurePosixPath
from typing import Annotated, Any, ClassVar, Literal, cast

from pydantic import (
    BeforeValidator,
    ConfigDict,
    Field,
    field_validator,
    model_validator,
    with_config,
)
from typing_extensions import TypedDict

from sixnines.formats.backlog import BacklogPlan
from sixnines.formats.document import Document
from sixnines.formats.durability import Durability
from sixnines.formats.keys import MAX_KEYS, MAX_PERIOD, KeySpace
from sixnines.formats.protocol import DEFAULT_CPU_SAMPLE_NS
from sixnines.formats.records import DEFAULT_THROUGHPUT_WINDOW
from sixnines.formats.run_files import PATH_MAX, name_problem, plain_name, shown
from sixnines.formats.shape import RateShape
from sixnines.formats.vocabulary import MAX_PARALLEL, MAX_RATE, FanOut, Role

SCHEMA_VERSION = 9
#: The first schema whose one-way runs divide the load over connections (FanOut.CONSUMER).
DIVIDING_SCHEMA = 5
#: Statuses of an agent that sent no `done`: it died (or never started); what it left is
#: only what it had closed (formats.chunks.kept_chunks).
UNREPORTED = ("failed", "missing")


#: What every manifest has held since the first (`missing_fields`): a file without them
#: is no manifest, whatever the defaults a model built in code starts from.
READ_REQUIRED = ("run_id", "status", "agents")


def missing_fields(body: dict) -> list[str]:
    """The fields every manifest holds that `body`, read from a file, lacks."""
    return [name for name in READ_REQUIRED if body.get(name) is None]


def newer_schema(version: object) -> str | None:
    """Why a manifest of `version` is not read (None: this sixnines reads it)."""
    if isinstance(version, int) and version > SCHEMA_VERSION:
        return (f"written by a newer sixnines (schema {version}; this one reads up to "
                f"{SCHEMA_VERSION})")
    return None


def _plain(name: str) -> str:
    """A name a manifest gives that becomes a path (formats.run_files)."""
    return plain_name(name, "name")


PlainName = Annotated[str, BeforeValidator(_plain)]


def _rate(value: object) -> object:
    """Messages per second (a finite number above 0), "max", or none given."""
    if value is None or value == MAX_RATE:
        return value
    if isinstance(value, bool) or not isinstance(value, int | float) or \
            not math.isfinite(value) or value <= 0:
        raise ValueError(f'{shown(value)} is not a rate: messages per second above 0, or "max"')
    return value


Rate = Annotated[float | Literal["max"] | None, BeforeValidator(_rate)]
#: A run's status in its manifest (a summary's may also be corrupt: formats.status).
RunStatus = Literal["running", "ok", "partial", "failed"]
Count = Annotated[int, Field(ge=0)]
Sha256 = Annotated[str, Field(pattern="^[0-9a-f]{64}$")]


@with_config(ConfigDict(extra="allow"))
class Params(TypedDict, total=False):
    """The workload point as JSON (the scenario's Workload fields; sizes in bytes, times in
    ns). Those the analysis computes with are typed; any other key is kept as it is."""

    rate: Rate
    messages: Count | None
    duration_ns: Count | None
    producers: Count
    schedule: str


class Open(Document):
    """A part of the manifest: keys no model names (facts other parts add) are kept when
    it is rewritten, and the schema requires only what even the oldest manifest has."""

    model_config = ConfigDict(extra="allow", json_schema_serialization_defaults_required=False)


class Artifact(Open):
    """One file an agent wrote, as it announced it, and whether the copy the controller
    holds matched (formats.integrity checks it again before anything reads it)."""

    sha256: Sha256 | None = None
    """The agent's checksum of the file (absent: the manifest was edited)."""
    bytes: Count | None = None
    """Its size."""
    verified: bool | None = None
    """Whether the controller's copy matched when it collected it; false and absent is a
    file it never got (missing data), false and present one that changed on the way."""


class Clock(Open):
    """An agent's clock (docs/design.md rule 3): which monotonic clock it reads, and how
    it relates to the controller's, from the ping with the shortest round trip. Empty for
    an agent that never answered pings."""

    domain: str | None = None
    """Its clock domain (one kernel boot); agents in one domain share a clock. Absent
    (older manifests): every agent is in one domain."""
    estimated_offset_ns: int | None = None
    """This agent's own estimate of its clock minus the controller's."""
    uncertainty_ns: int | None = None
    """Half that ping's round trip."""
    pings: int | None = None
    offset_ns: int | None = None
    """The offset used for its whole domain (0 in the controller's own domain, else the
    domain's most certain estimate): what the start instant and cross-clock latency use."""
    domain_uncertainty_ns: int | None = None
    """The uncertainty of offset_ns (0 in the controller's domain)."""
    same_clock_as_controller: bool | None = None

    @property
    def bound_ns(self) -> int | None:
        """How far offset_ns may be off: its domain's estimate's uncertainty, or (older
        manifests without that) the agent's own."""
        return (self.domain_uncertainty_ns if self.domain_uncertainty_ns is not None
                else self.uncertainty_ns)


class AcknowledgedRun(Open):
    """Messages one sending connection sent that the system acknowledged: seqs
    [first_seq, first_seq + count) of `producer_id` (acks come in the order sent, so they
    are the first `count` it sent). One per connection, again after each reconnect."""

    producer_id: int
    first_seq: Count
    count: Count


class AgentEntry(Open):
    """One agent of the run as the controller saw it: its plan, its process, its clock,
    and, once it reported (`done`), its status, start instant and files."""

    id: PlainName
    """The agent's id, also its directory under agents/ ("producer-0")."""
    role: Role | None = None
    host: str | None = None
    """The placement's name of the host it ran on."""
    first_id: int | None = None
    """A sender's first producer id: its connections are first_id, first_id + 1, …"""
    connections: Annotated[int, Field(ge=1, le=MAX_PARALLEL)] | None = None
    """Its connections (absent: the workload's)."""
    rate: float | None = None
    """Its share of the scheduled rate, msg/s."""
    planned_sends: int | None = None
    loop_cpu: int | None = None
    """The CPU its loop had to itself (None: it shared the CPUs)."""
    clock: Clock = Field(default_factory=Clock)
    sent: int = 0
    """Messages it said it sent (progress or done)."""
    received: int = 0
    exit_code: int | None = None
    pid: int | None = None
    host_facts: dict[str, Any] = Field(default_factory=dict)
    versions: dict[str, Any] = Field(default_factory=dict)
    status: str | None = None
    """ok or partial (it reported), failed, missing (no report when the run ended),
    running (while the run goes)."""
    t0_ns: int | None = None
    """The start instant on its own clock: where its schedule began."""
    artifacts: dict[PlainName, Artifact] = Field(default_factory=dict)
    """Its files by name (latency.hlog, cpu.parquet, and messages.parquet or its chunks
    messages-NNNNNN.parquet with chunks.jsonl)."""
    out_of_range: dict[str, Any] | None = None
    """Values its interval log clipped, per tag."""
    duplicate_replies: int | None = None
    """A requester's replies received twice (older manifests: the analysis now counts them,
    in the run's `duplicated`)."""
    unexpected_replies: int | None = None
    """A requester's replies to no request it sent (older manifests: the analysis now
    counts them, in the run's `unexpected`)."""
    cut_short: str | None = None
    """Why its records fall short of what it did, when the agent itself is the cause: a
    receiver stopped early (an interrupt, the controller gone, the run overran) or failing
    on its own; any agent whose writer process is gone or could not write chunks. A
    receiver's misses after its last kept receipt are then `unknown`, and what receivers
    got from a sender beyond its records counts as sent (docs/design.md, "The end of a
    receiver's records"). Absent: its records are whole, or the system broke it off (a
    driver error)."""
    drain_ended_ns: int | None = None
    """A receiver whose drain ran out before every message expected had arrived: the
    instant it stopped listening (its clock); its drain began `workload.drain_ns` before."""
    fill_ratios: dict[str, float] | None = None
    """A sender's: its first connection's ring of messages, the fills after the headers
    compressed as one batch, compressed / original size by codec (gzip; zstd and lz4 where
    installed). Absent: it sends nothing, or a manifest before schema 9."""
    acknowledged: list[AcknowledgedRun] | None = None
    """A producer's messages the system acknowledged (RabbitMQ publisher confirms, NATS
    JetStream publish acks), as its connections counted them: the analysis'
    `lost_acknowledged`. Absent: the system acknowledges nothing or not per connection."""
    files_at: dict[str, str] | None = None
    """Where its files are on another host while they are there (the controller died
    before it fetched them, or they failed their check): `dir`, and `container` (its id)
    on a container host; how to reach the host is in `hosts[host].contact`. What
    `sixnines collect` fetches them from. Absent: they are in agents/<id>/ here."""

    @field_validator("files_at")
    @classmethod
    def _where(cls, files_at: dict[str, str] | None) -> dict[str, str] | None:
        """`dir`: a clean absolute path (nothing to resolve, no control character);
        `container`: an engine's hex id."""
        if files_at is None:
            return None
        if unknown := set(files_at) - {"dir", "container"}:
            raise ValueError(f"unknown key {shown(sorted(unknown)[0])}")
        folder = files_at.get("dir")
        if folder is None:
            raise ValueError("no `dir`")
        parts = folder.split("/")
        if len(folder) > PATH_MAX or not folder.startswith("/") or \
                str(PurePosixPath(folder)) != folder or \
                any(part in (".", "..") or name_problem(part) for part in parts[1:]):
            raise ValueError(f"`dir` {shown(folder)} is not a clean absolute path")
        container = files_at.get("container")
        if container is not None and not (
                0 < len(container) <= 64 and all(c in "0123456789abcdef" for c in container)):
            raise ValueError(f"`container` {shown(container)} is not a container id")
        return files_at

    @property
    def died(self) -> bool:
        """It sent no `done` (killed, its host gone): no file of it is announced."""
        return self.status in UNREPORTED

    @property
    def ended_early(self) -> bool:
        """Its records end before the run did: it died, or it cut them short."""
        return self.died or self.cut_short is not None


class SizesRecord(Open):
    """The distribution the run's message sizes were drawn from (workload `message_size`
    as one) and what was drawn: each sending connection draws a ring of sizes from its
    seed before the run and its messages cycle through it (formats.sizes)."""

    distribution: dict[str, Any]
    """The distribution in numbers (formats.sizes.Sizes: uniform low/high, lognormal
    median/p99, or choices values/weights; a file's sizes are choices of equal weight)."""
    histogram: dict[str, int]
    """How many of the drawn sizes fall in each power-of-two bin: "2^k" counts sizes in
    [2^k, 2^(k+1)) bytes, over every sending connection's ring."""
    drawn: int
    """Sizes drawn in all (rings × slots)."""
    mean: float
    """The mean drawn size, bytes."""
    smallest: int
    largest: int
    """The smallest and largest size drawn."""


class FillRecord(Open):
    """What the run's messages carried after their header (workload `content`) and how
    well it compressed, as the first sender measured it on its ring (formats.fill)."""

    content: str = "random"
    """The workload's `content`, as the scenario's reference writes it."""
    ratios: dict[str, float] = Field(default_factory=dict)
    """Compressed / original size of the fills by codec: gzip, zstd, lz4."""
    target: float | None = None
    """With `compressibility`: the ratio asked for; None otherwise."""
    tolerance: float | None = None
    """With `compressibility`: how far from `target` each codec's ratio may be."""
    measured_by: str | None = None
    """The agent whose ring was measured."""

    @property
    def off_target(self) -> list[str]:
        """The codecs whose ratio is further from the target than the tolerance."""
        if self.target is None or self.tolerance is None:
            return []
        return [codec for codec, ratio in self.ratios.items()
                if abs(ratio - self.target) > self.tolerance]

    def describe(self) -> str:
        """In words: "content compressibility=0.6: gzip 0.601, zstd 0.597, lz4 0.605"."""
        measured = ", ".join(f"{codec} {ratio:.3f}" for codec, ratio in self.ratios.items())
        off = self.off_target
        return (f"content {self.content}: compressed/original {measured or 'not measured'}"
                + (f" (off its target ±{self.tolerance:g}: {', '.join(off)})" if off else ""))


class MonitorEntry(AgentEntry):
    """The broker's CPU monitor (agents.monitor), outside `agents`: its troubles are notes,
    never the run's problems. Only a status and notes when it could not start."""

    # A monitor that could not start has no id, where every agent has one: a model's field
    # narrows, never widens, in a subclass, so mypy refuses it. Whatever takes the monitor
    # for an agent checks its id first (as formats.integrity._entries does).
    id: PlainName | None = None  # type: ignore[assignment]
    notes: list[str] = Field(default_factory=list)


class BrokerRecord(Open):
    """The broker as the run provided it (orchestrator.run.brokers), with the facts its start
    gathered."""

    system: str | None = None
    kind: str | None = None
    """builtin, recipe or external (not started by sixnines: no CPU monitor)."""
    address: str | None = None
    """What clients connected to (a broker of several nodes: each node's, comma separated)."""
    host: str | None = None
    recipe: str | None = None
    version: str | None = None
    note: str | None = None
    nodes: list[BrokerNodeRecord] | None = None
    """A broker of several nodes: each node as it was first started (None: one node, or a
    manifest before schema_version 9)."""


class BrokerNodeRecord(Open):
    """One node of a broker of several, as it was first started (a node started again by
    a fault has another pid: the fault's note gives it)."""

    name: str
    """As faults target it: broker-0, broker-1, ..."""
    pid: int | None = None
    ports: dict[str, int] = Field(default_factory=dict)
    command: list[str] = Field(default_factory=list)


class KeyDraws(Open):
    """The run's message keys as the senders drew them (formats.keys): the key of the
    message (producer id, seq) is `keys_of(space, seed, producer id, period)[seq %
    period]`, which the analysis derives again."""

    space: str
    """The key space: count=N (uniform) or count=N,zipf=S."""
    seed: int
    """The seed the keys were drawn from (the run's)."""
    period: Annotated[int, Field(ge=1, le=MAX_PERIOD)]
    """Keys each sending connection drew and cycles through."""

    @field_validator("space")
    @classmethod
    def _space(cls, text: str) -> str:
        """A key space the analysis can draw again: N keys (1 to MAX_KEYS; the analysis
        holds N probabilities) and a finite exponent."""
        try:
            space = KeySpace.of(text)
        except (ValueError, KeyError):
            space = None
        if space is None or not 1 <= space.count <= MAX_KEYS or \
                (space.zipf is not None and not math.isfinite(space.zipf)):
            raise ValueError(f"{shown(text)} is not a key space: count=N (1 to {MAX_KEYS}), "
                             "with ,zipf=S or not")
        return text


class Workload(Open):
    """The workload point (the scenario's Workload fields; sizes in bytes, times in ns)."""

    ALWAYS_WRITTEN: ClassVar[tuple[str, ...]] = ("fan_out",)

    warmup_ns: int = 0
    duration_ns: int | None = None
    """The measured stretch after the warm-up (None: a run of `messages` at rate max)."""
    drain_ns: int | None = None
    rate: Rate = None
    """Messages per second over all senders, or "max" (formats.vocabulary.MAX_RATE)."""
    connections: Annotated[int, Field(ge=1, le=MAX_PARALLEL)] = 1
    """Connections per agent."""
    fan_out: FanOut = FanOut.CONSUMER
    """Who receives every one-way message: each consumer once, over one of its
    connections; or each consumer connection (runs recorded before schema 5 read so)."""
    shape: RateShape | None = None
    """A shaped rate's segments (then `rate` is its mean over the measured time); absent:
    the rate was one number (since schema_version 9)."""
    backlog: BacklogPlan | None = None
    """The backlog the run builds and drains; absent: none (since schema_version 9)."""
    key_draws: KeyDraws | None = None
    """How the message keys were drawn (absent: messages carried none; since
    schema_version 9)."""


#: Most faults in one scenario, and in a manifest: each is a thread wake-up and a record
#: while the run goes, and the analysis looks at every other fault for each.
MAX_FAULTS = 100


#: What `driver_options` says for an option named for each run (`Resources.named` gives
#: the name): the same in every run of a system, so their setups read alike.
PER_RUN = "(per run)"


class Resources(Open):
    """What the run used on the broker under names of its own (docs/design.md, "Every run
    its own topic"): the driver options the scenario left out, named for this run
    (`driver_options` says PER_RUN for them), and what became of them (since
    schema_version 9; absent when the driver uses nothing on a broker)."""

    named: dict[str, str] = Field(default_factory=dict)
    """Driver option -> the run's name for it (a topic, stream, queue, subject)."""
    kept: bool = False
    """Left on the broker at the end, as the system's `keep_resources` asked."""
    removed: list[str] = Field(default_factory=list)
    """What was deleted from the broker at the end (topics, streams, keys, exchanges,
    queues)."""
    notes: list[str] = Field(default_factory=list)
    """What could not be deleted, and why: it is still on the broker. Never the run's
    problems (its measurements are whole)."""


class FaultRecord(Open):
    """A fault on purpose (the scenario's `faults:`, in order) as the run did it
    (orchestrator.run.faults). Absolute times are ns on the controller's clock
    (`started_at_ns`'s); the measured run starts at started_at_ns + workload.warmup_ns."""

    ALWAYS_WRITTEN: ClassVar[tuple[str, ...]] = (
        "for_ns", "issued_ns", "effective_ns", "undone_ns", "restarted_ns", "outcome", "note")

    index: int
    """Its position in the scenario's `faults:`."""
    action: str
    """pause, kill, partition, slow-link, disk-stall or disk-full."""
    target: str
    """broker, an agent id (consumer-0) or host:NAME."""
    at_ns: int
    """When it was planned, from the start of the measured run."""
    for_ns: int | None = None
    """How long it was planned to last (`for`, a kill's `restart_after`); None: no end (a
    killed agent)."""
    issued_ns: int | None = None
    """When the controller sent the signal, or the line to the fault's holder on its host
    (None: it did not)."""
    effective_ns: int | None = None
    """When it was seen to take effect: the process stopped, or dead and reaped; the
    holder's answer that the fault is in place (rules, qdisc, disk frozen or full)."""
    undone_ns: int | None = None
    """When it was undone: resumed (SIGCONT sent), the broker started again, or the
    holder's answer that the fault is gone."""
    restarted_ns: int | None = None
    """When a broker killed on purpose accepted connections again."""
    outcome: Literal["done", "failed", "not reached"] = "not reached"
    """done; failed (the note says why); not reached (the run ended first)."""
    note: str | None = None
    tool: str | None = None
    """What did a fault held on a host: nftables, or iptables (with the reason: no nft
    there), tc, FIFREEZE (fsfreeze), fallocate. Absent for signals."""


class Sixnines(Open):
    version: str | None = None
    protocol: int | None = None
    """The control protocol version (formats.protocol)."""


#: What the controller writes from the start (its first write, before any agent starts).
_WRITTEN = ("schema_version", "sixnines", "scenario", "run_id", "system", "driver",
            "driver_options", "broker", "params", "swept", "workload", "controller", "status",
            "problems", "agents", "created_at", "placement", "cross_host_latency", "hosts",
            "cpu_sample_ns", "throughput_window", "monitor")


class Repeat(Document):
    """Which run of its case this is, when the scenario runs every case several times
    (`repeat: N`, since schema_version 7; absent when each case ran once)."""

    number: Annotated[int, Field(strict=True, ge=1)]
    """From 1: the repeats of a case run in this order, each after every other case's run
    of the same number."""
    of: Annotated[int, Field(strict=True, ge=2)]
    """N, how many times every case of the scenario runs."""
    case: str
    """What the repeats of one case share beside their system: the swept values as the
    run ids say them ("message_size=64", a named case's name first; "" when nothing is
    swept)."""


class Manifest(Open):
    """A run's manifest.json. The controller's first write holds every field but
    started_at_ns (once the agents start), broker_exit (a broker that exited during the
    run), ended_at (the end recorded) and recovered_at."""

    model_config = ConfigDict(json_schema_extra={"required": list(_WRITTEN)})
    ALWAYS_WRITTEN: ClassVar[tuple[str, ...]] = ("schema_version",)

    schema_version: Annotated[int, Field(ge=1)] = SCHEMA_VERSION
    """The shape of this manifest (formats.manifest.SCHEMA_VERSION when it was written)."""
    sixnines: Sixnines = Field(default_factory=Sixnines)
    scenario: str | None = None
    run_id: str | None = None
    system: str | None = None
    """The system under test's name in the scenario."""
    driver: str | None = None
    driver_options: dict[str, Any] = Field(default_factory=dict)
    broker: BrokerRecord = Field(default_factory=BrokerRecord)
    durability: Durability | None = None
    """The durability the run was measured with, asked for and read back from the broker
    once the agents had set up (formats.durability); absent until then, and in runs
    recorded before schema_version 9."""
    resources: Resources | None = None
    """The broker resources named for this run, and whether they were deleted at its end."""
    params: Params = Field(default_factory=Params)
    """The workload point as JSON (summary.json copies it)."""

    @field_validator("params", mode="wrap")
    @classmethod
    def _in_written_order(cls, params: Any, check: Any) -> Params:
        """Its typed keys checked, every key kept where it was (summary.csv's columns
        follow it)."""
        checked = check(params)
        return cast(Params, {key: checked[key] for key in params})
    swept: dict[str, Any] = Field(default_factory=dict)
    """The swept fields of the point, as the scenario wrote them."""
    repeat: Repeat | None = None
    """Which repeat of its case the run is; absent when each case runs once."""
    overrides: list[str] | None = None
    """The scenario's fields set over its file on the command line, as PATH=VALUE in the
    order given (`--set workload.rate=20k`; a short flag such as `--rate 20k` as the field
    it sets): the run is the file with these. Absent when none were (since
    schema_version 8)."""
    workload: Workload = Field(default_factory=Workload)
    controller: dict[str, Any] = Field(default_factory=dict)
    """The controller's host facts and versions."""
    status: RunStatus | None = None
    """running while the run goes, then ok, partial or failed (formats.status)."""
    problems: list[str] = Field(default_factory=list)
    agents: list[AgentEntry] = Field(default_factory=list)
    """Every agent that sends or receives, in the controller's order (the analysis keys
    agents by their position here)."""
    created_at: float | None = None
    """Unix time the run started."""
    placement: dict[str, Any] = Field(default_factory=dict)
    cross_host_latency: bool = False
    """Whether latencies across clock domains are put on the controller's clock by the
    measured offsets (else left out)."""
    hosts: dict[str, Any] = Field(default_factory=dict)
    """Each remote host's facts."""
    cpu_sample_ns: int = DEFAULT_CPU_SAMPLE_NS
    throughput_window: int = DEFAULT_THROUGHPUT_WINDOW
    """M, the messages a stream's throughput is taken over by default (100 for manifests
    without it)."""
    monitor: MonitorEntry | None = None
    fill: FillRecord | None = None
    """What messages carried after their header and how it compressed (since schema 9;
    absent: not measured, or an older manifest)."""
    sizes: SizesRecord | None = None
    """Message sizes drawn from a distribution (since schema 9; absent: every message had
    `params.message_size` bytes)."""
    cpu_placement: list[str] = Field(default_factory=list)
    """What the CPU placement did on each host with a busy loop (docs/design.md, "CPU
    placement"); empty: none was asked for, or no loop spins."""
    started_at_ns: int | None = None
    """The start instant on the controller's clock."""
    broker_exit: int | None = None
    """The broker's exit code when it exited during the run."""
    faults: Annotated[list[FaultRecord], Field(max_length=MAX_FAULTS)] | None = None
    """The faults on purpose, one per scenario entry in order, written as the run does
    them; None: the scenario has none (since schema_version 9)."""
    ended_at: float | None = None
    recovered_at: float | None = None
    """When `sixnines report` (or `collect`) recovered a run whose controller died."""

    @model_validator(mode="before")
    @classmethod
    def _older_fan_out(cls, data: Any) -> Any:
        """Before schema 5 every consumer connection received every message: an older
        manifest says nothing of it, so it is read as it was recorded."""
        version = data.get("schema_version", 1) if isinstance(data, dict) else None
        if not isinstance(version, int) or version >= DIVIDING_SCHEMA:
            return data
        workload = data.get("workload")
        if isinstance(workload, dict) and "fan_out" not in workload:
            return {**data, "workload": {**workload, "fan_out": FanOut.CONNECTION}}
        return data

    @field_validator("schema_version")
    @classmethod
    def _known_schema(cls, version: int) -> int:
        if problem := newer_schema(version):
            raise ValueError(problem)
        return version

    @model_validator(mode="after")
    def _one_entry_each(self) -> Manifest:
        """Each agent once: an entry twice would count its records twice."""
        ids = Counter(agent.id for agent in self.agents)
        if self.monitor is not None and self.monitor.id is not None:
            ids[self.monitor.id] += 1
        if twice := next((i for i, count in ids.items() if count > 1), None):
            raise ValueError(f"agent {shown(twice)} is listed more than once in `agents`")
        return self

    def t0_of(self, agent: AgentEntry) -> int | None:
        """An agent's start instant on its own clock: the one it reported, else (it died
        before reporting) the start instant the controller sent it, moved onto its clock
        by its domain's offset; None when neither is known."""
        if agent.t0_ns is not None:
            return agent.t0_ns
        if self.started_at_ns is None or agent.clock.offset_ns is None:
            return None
        return self.started_at_ns + agent.clock.offset_ns
