"""summary.json: what the analysis found, the file users' own tools read.

Two files share these models:

- `<run-id>/report/summary.json`, one `RunSummary`, written by the analysis
  (spark_jobs.analyze) for each run it checked;
- `<results>/summary.json`, a `ResultsSummary` {schema_version, scenario, runs}, written by
  the controller (`sixnines run`, `sixnines report`): each run's summary, and one built
  from its manifest for a run the analysis never saw (failed, or its manifest unreadable).

docs/summary.schema.json is the JSON Schema of the results file, generated from these
models (`python -m sixnines.formats.schema`; a test fails while it is stale), with
`RunSummary` in its `$defs`. Field docstrings below are its descriptions: the meaning of
every figure lives here.

`schema_version` (SCHEMA_VERSION) is in every summary object. Bump it when the shape of a
summary changes in any way a reader can notice: a field added, removed or renamed, a type
or a unit changed, a field becoming nullable or optional, or a figure changing meaning
(tests/test_schema.py fails on a changed shape until the version is bumped and the new
shape's fingerprint recorded there), then regenerate the schemas with `python -m
sixnines.formats.schema docs`. Rewording a docstring needs no bump (only the regeneration).
Files written before the version existed have none; they read as version 1.
"""

from __future__ import annotations

from typing import Any, ClassVar

from pydantic import ConfigDict, Field

from sixnines.formats.document import Document
from sixnines.formats.durability import Durability
from sixnines.formats.manifest import FillRecord, Repeat, SizesRecord
from sixnines.formats.records import DEFAULT_THROUGHPUT_WINDOW
from sixnines.formats.vocabulary import Load

SCHEMA_VERSION = 7

#: The senders did not keep their schedule (docs/design.md rule 2) when their send-lag p99
#: exceeds this, or they sent under this share of the rate (formats.lag says whose doing
#: it was).
SATURATED_LAG_P99_US = 1000.0
SATURATED_RATE_SHARE = 0.95


class Figures(Document):
    """One metric's distribution: HdrHistogram percentiles (the highest equivalent value of
    the bucket, never above the exact max), the exact max and mean, the lower median and
    robust deviation, and the count behind them. Units are the metric's (µs for latencies,
    msg/s for throughput, CPU µs per message for CPU); every figure is null, with count 0,
    when nothing was measured."""

    p50: float | None = None
    """The median (HdrHistogram's value)."""
    p90: float | None = None
    p99: float | None = None
    p99_9: float | None = Field(None, alias="p99.9")
    p99_99: float | None = Field(None, alias="p99.99")
    p99_999: float | None = Field(None, alias="p99.999")
    p99_9999: float | None = Field(None, alias="p99.9999")
    """A percentile fewer than 1/(1 − p) samples support equals the max; the reports dim
    it."""
    max: float | None = None
    """The exact largest value."""
    mean: float | None = None
    """The exact mean."""
    lower_median: float | None = None
    """The ⌈n/2⌉-th smallest value, a real sample; exact while the median is below ~134 ms
    (HDR resolution beyond, see spark_jobs.distribution.robust_centre). Throughput: at 3
    significant digits."""
    robust_deviation: float | None = None
    """Mean |x − lower_median|: a spread a few stalls sway far less than a standard
    deviation; exact as lower_median is."""
    count: int = 0
    """How many values the figures rest on."""

    def figure(self, key: str) -> float | None:
        """A figure by its JSON key: p50 … p99.9999 (formats.hdr.PERCENTILE_KEYS), max,
        mean, lower_median or robust_deviation."""
        return getattr(self, _FIGURE_FIELDS[key])


#: Figures' field names by JSON key ("p99.9" → p99_9).
_FIGURE_FIELDS = {field.alias or name: name for name, field in Figures.model_fields.items()}


class Broker(Document):
    """The system under test's broker, as the run's manifest records it."""

    kind: str | None = None
    """builtin, recipe or external (not started by sixnines)."""
    recipe: str | None = None
    """The broker recipe's name (deploy/recipes/NAME.yaml), for kind recipe."""
    version: str | None = None
    """The version the recipe's version command printed."""
    note: str | None = None
    """What a reader should know about the broker (the recipe's note)."""


class Warmup(Document):
    """What happened during the warm-up, which no other figure includes."""

    sent: int = 0
    received: int = 0


class OutOfRange(Document):
    """Values clipped into the histogram's range (1 ns … 1 h): a problem line says so."""

    negative: int = 0
    """Below 0, counted as 0 (timestamps from different clocks?)."""
    too_large: int = 0
    """Above 1 h, counted as 1 h."""


class LatencyPairs(Document):
    """The measured deliveries by how their producer's and receiver's clocks pair up
    (docs/design.md rule 3, spark_jobs.agent_rows); same_clock + cross_clock
    = latency_us.count."""

    same_clock: int = 0
    """One clock domain (a requester is its own receiver): timed as recorded."""
    cross_clock: int = 0
    """Different domains, included only when the manifest says `cross_host_latency:
    true`, each end moved onto the controller's clock by its host's measured offset."""
    excluded: int = 0
    """Left out of latency and service time (a warning says how many and how to opt in);
    still in the accounting (received, lost, duplicated, reordered)."""


class BytesPerSecond(Document):
    """Each stream's message rate times its mean size, summed over the side's streams;
    null without such a stream."""

    sender: float | None = None
    receiver: float | None = None


class Throughput(Document):
    """Throughput per window of M consecutive messages of a stream (spark_jobs.series has
    the definitions): ST_n = M / (O_n − O_{n−M}) over every sender stream, RT_n likewise
    over every receiver stream, a message's time being its timestamp, or for k messages
    of one timestamp (one read, one batch sent) evenly since the timestamp before
    (schema 3; before, the timestamp itself, undefined where a window spanned 0 ns)."""

    window: int = DEFAULT_THROUGHPUT_WINDOW
    """M: the messages each figure is taken over (the scenario's `throughput_window`, 100
    by default; `sixnines report --window M` analyses again with another)."""
    sender_msg_s: Figures = Field(default_factory=Figures)
    """ST_n's figures in msg/s (percentiles and lower median at 3 significant digits)."""
    receiver_msg_s: Figures = Field(default_factory=Figures)
    """RT_n's figures in msg/s."""
    bytes_per_s: BytesPerSecond = Field(default_factory=BytesPerSecond)
    zero_span_windows: dict[str, int] = Field(default_factory=dict)
    """Windows left out per side (sender, receiver), so count = messages − M per stream −
    these: those holding a message of a stream's first timestamp but its last (no time
    before it)."""


class Humps(Document):
    """The distinct modes of the run's latency distribution (saturation latency in a
    saturation run; spark_jobs.distribution.humps gives the rule). count > 1 adds the
    warning "latency is multi-modal: modes at … µs"."""

    count: int
    modes_us: list[float]


class LoopTime(Document):
    """How a side's loop threads spent the measured intervals, by the kernel's account
    (/proc/<pid>/task/<tid>/schedstat, sampled with the CPU), seconds summed over the
    side's agents (since schema_version 5). A busy-waiting sender runs all the time it is
    not kept from it: waiting is the CPU another thread had (other work on the machine,
    or more busy loops than CPUs), blocked a call that did not return (a send the system
    did not take; for a blocking receiver, nothing to read)."""

    running_s: float
    """On a CPU."""
    waiting_s: float
    """Runnable, waiting for a CPU."""
    blocked_s: float
    """Neither: asleep in a call."""


class CpuSide(Document):
    """CPU used by one side's processes, attributed to the messages of each sample
    interval (spark_jobs.cpu has the definitions, agents.cpu the sampling)."""

    us_per_message: Figures
    """CPU µs per message: one value per measured sample interval of one process,
    Δcpu / Δmessages."""
    cores: float | None
    """CPU seconds per wall-clock second over the measured intervals, summed over the
    side's processes; null without a measured interval."""
    empty_intervals: int
    """Measured intervals without messages, left out of us_per_message."""
    loop: LoopTime | None = None
    """How the agents' loop threads spent the measured time; null for the broker, and
    unless every agent of the side has the kernel's account."""


class Cpu(Document):
    """CPU per message of the run: only intervals after the warm-up count."""

    sender: CpuSide | None
    """Producers and requesters (per message sent; a requester's per request, reply
    included); null without such agents' samples."""
    receiver: CpuSide | None
    """Consumers and responders (per message received); null without such samples."""
    broker: CpuSide | None
    """The broker's process tree sampled on its host by the monitor, per message received
    by all consumers in the interval (each fan-out delivery; in round trip, per request);
    null when sixnines did not start the broker or its monitor left no samples."""
    interval_ms: float
    """The sample interval (the scenario's `cpu_sample`)."""
    notes: list[str]
    """Why a side has no figures, and the monitor's troubles (which never make a run
    partial, but for its death mid-run: its samples stop there)."""


class Steadiness(Document):
    """How far the run's latency p99 moved within the run (since schema_version 6): the
    agents' interval logs (one histogram per second) added per second over the receivers,
    consecutive seconds pooled into windows of at least 2,000 latencies (20 above their
    p99), each window's p99 taken (spark_jobs.steadiness). Null when the run has fewer than
    4 such windows, no interval log, or only receivers on another clock than their
    producers (their logs hold uncorrected values)."""

    windows: int
    """How many windows were compared."""
    window_s: float
    """The mean length of a window, seconds."""
    p99_low_us: float
    """The lower quartile of the windows' p99."""
    p99_median_us: float
    p99_high_us: float
    """The upper quartile of the windows' p99."""
    p99_max_us: float
    """The highest window's p99."""
    spread: float
    """p99_high_us / p99_low_us − 1: how far the middle half of the run disagreed with
    itself."""
    unsteady: bool
    """spread > 1 (the upper quartile more than twice the lower): the run's figures stand
    for no steady state, and a history of nights gives the night half weight
    (docs/design.md, "Change points over nights")."""


class FaultWindow(Document):
    """The latency of the messages intended in one stretch of a fault's timeline, from the
    run's intervals (docs/design.md, "Faults: intervals, band and recovery"): percentiles
    at the upper edge of a coarse bin (2.2 % wide, never above the exact max), the exact
    max, µs."""

    from_s: float
    """Its start, seconds from the measured start (rounded down to an interval)."""
    to_s: float
    """Its end (exclusive), likewise."""
    count: int = 0
    """The timed messages intended in it."""
    p50_us: float | None = None
    p90_us: float | None = None
    p99_us: float | None = None
    p99_9_us: float | None = Field(None, alias="p99.9_us")
    max_us: float | None = None


class FaultDelivery(Document):
    """The accounting (docs/design.md rule 7) of the messages intended in the fault's
    window: each expected delivery counted once as delivered, lost or unknown; receipts
    again are duplicated, those below a later seq of their stream reordered."""

    sent: int
    delivered: int
    lost: int
    unknown: int
    duplicated: int
    reordered: int
    lost_acknowledged: int | None = None
    """Of `lost`: deliveries of messages the system had acknowledged to their producer
    (the run's `lost_acknowledged`), at least this many where receivers' misses in the
    window may be unknown. Absent: no producer recorded acknowledgements."""


class FaultFigures(Document):
    """What one fault cost (since schema_version 7; docs/results.md, "Faults"). Times are
    seconds from the measured start; a fault that never took effect has only its identity,
    outcome and note."""

    index: int
    """Its position in the scenario's `faults:` list."""
    action: str
    target: str
    outcome: str
    """done, failed or not reached (as the run recorded it)."""
    at_s: float
    """When it was planned."""
    effective_s: float | None = None
    """When it took effect."""
    end_s: float | None = None
    """When it was undone (or the broker accepted connections again after a restart);
    null for a fault without an end (a kill without restart)."""
    interval_ms: float | None = None
    """The width of the intervals the figures below are taken over."""
    before: FaultWindow | None = None
    """The measured time before it: at most 10 s, from the measured start or the end of
    the fault before."""
    during: FaultWindow | None = None
    """From when it took effect to its end (to the next fault or the end of the measured
    time for a fault without an end)."""
    after: FaultWindow | None = None
    """From its end to the next fault or the end of the measured time."""
    max_in_window_us: float | None = None
    """The largest latency of the messages intended in its window (`during`)."""
    band_us: float | None = None
    """The pre-fault band: per-interval max latency within it is back to normal."""
    recovered: bool | None = None
    """Whether per-interval latency came back inside the band and stayed (null: no
    pre-fault window to take a band from)."""
    recovered_s: float | None = None
    """From its end (from when it took effect, for one without an end) to the start of
    the first run of intervals back inside the band; null when it never recovered."""
    rate_before_msg_s: float | None = None
    """The mean receive rate over the pre-fault window."""
    dip_msg_s: float | None = None
    """The lowest receive rate of an interval from when it took effect to the next fault
    or the end of the run (the drain included)."""
    dip_at_s: float | None = None
    """The start of that interval."""
    backlog: int | None = None
    """The most messages expected by their intended time and not yet received, above the
    level of the pre-fault window, from when it took effect on."""
    drained_s: float | None = None
    """From its end (or when it took effect) to the end of the interval where the backlog
    came back to its pre-fault level (plus what the window lost, which never arrives);
    null when it never did."""
    delivery: FaultDelivery | None = None
    note: str | None = None
    """Why figures are missing, and what to know of them."""


class Versioned(Document):
    """A summary object: built by a writer, it carries SCHEMA_VERSION; read from a file
    without schema_version (written before it existed), it reads as version 1
    (`model_validate` does not go through `__init__`)."""

    ALWAYS_WRITTEN: ClassVar[tuple[str, ...]] = ("schema_version",)

    schema_version: int = 1

    def __init__(self, **data: Any) -> None:
        super().__init__(**{"schema_version": SCHEMA_VERSION, **data})

    # pydantic then validates files without calling __init__ (its own marker for that, an
    # attribute of the function, which mypy does not know functions to have)
    __init__.__pydantic_base_init__ = True  # type: ignore[attr-defined]


#: The fields every run summary holds, analysed or not.
_ALWAYS = ("schema_version", "run_id", "system", "params", "status", "problems")
#: Not in summaries written before the field was (the analysis writes it, null or not).
_SOMETIMES = ("repeat", "durability", "steps", "fill", "faults", "backlog", "keys",
              "sizes", "lost_acknowledged")


def _run_schema(schema: dict[str, Any], model: type[RunSummary]) -> None:
    """What every run summary holds, and that an analysed one (with `sent`) holds every
    field: the analysis writes them all."""
    schema["required"] = list(_ALWAYS)
    schema["if"] = {"required": ["sent"]}
    schema["then"] = {"required": [name for name in model.model_fields
                                   if name not in (*_ALWAYS, *_SOMETIMES)]}


class StepFigures(Document):
    """One step of a run whose rate is a shape of steps (formats.shape), measured time
    only: its messages are those intended within it (spark_jobs.steps_pass)."""

    rate: float
    """The step's intended rate, msg/s over all senders."""
    start_s: float
    """Where it starts, seconds from the measured start."""
    duration_s: float
    sent: int
    """Sends whose send time fell within the step."""
    received: int
    """Receipts whose receive time fell within it (each receiver's, summed)."""
    send_rate: float | None = None
    """sent over the step's length, msg/s."""
    receive_rate: float | None = None
    """received over the step's length, msg/s."""
    latency_us: Figures = Field(default_factory=Figures)
    """recv − intended of the messages intended within the step, µs."""
    send_lag_us: Figures = Field(default_factory=Figures)
    """sent − intended of the messages intended within the step, µs."""


class BacklogFigures(Document):
    """A backlog's build and drain, measured from the records (summary `backlog`). Times
    are seconds from the measured start (after the warm-up); rates msg/s."""

    built_messages: int
    """Messages sent before the release (warm-up included: consumers read none of them)."""
    built_bytes: int
    released_at_s: float
    """When the consumers started reading."""
    drain_within_s: float
    """The bound: how long after the release the drain was watched."""
    drained: bool
    """Whether the backlog was gone within the bound."""
    drained_at_s: float | None = None
    """When it was gone (to the millisecond): what each consumer still had to receive of
    what was sent fell to formats.backlog.DRAINED_SHARE of the backlog built. Null: not
    within the bound."""
    drained_in_s: float | None = None
    """drained_at_s − released_at_s."""
    drain_rate: float | None = None
    """What each consumer received per second from the release until the backlog was gone
    (or until the bound)."""
    send_rate: float | None = None
    """What the producers sent per second over the same stretch."""
    left_messages: int | None = None
    """Not drained: what each consumer still had to receive at the bound."""
    verdict: str
    """The outcome in words ("drained 2,000 messages in 1.4 s at 2,430 msg/s while
    producers sent 1,000 msg/s", or "consumers at X msg/s cannot catch up with Y msg/s")."""
    backlog_latency_us: Figures = Field(default_factory=Figures)
    """recv − intended of the messages intended before the release (measured time), µs."""
    live_latency_us: Figures = Field(default_factory=Figures)
    """recv − intended of the messages intended after the backlog was gone (measured
    time), µs; none when it never was."""


class KeysSummary(Document):
    """The run's message keys (workload `keys`, since schema 7)."""

    count: int
    """How many keys the workload draws from."""
    distribution: str
    """uniform, or zipf(S)."""
    hottest_share: float
    """The most drawn key's share of the keys the senders drew (a fraction)."""
    reordered: int
    """Deliveries received after a later message of the same producer and key: the order
    a keyed system promises (Kafka: per partition, so per key). `reordered` counts per
    producer, which a key spread over partitions does not promise."""
    hottest_us: Figures | None = None
    """The headline latency (µs) of the hottest key's deliveries (null: none measured)."""
    others_us: Figures | None = None
    """The same of every other key's deliveries: against `hottest_us`, the hot key's cost."""

    def line(self) -> str:
        """One line for the console and the report."""
        skew = "" if self.hottest_us is None or self.others_us is None else (
            f"; p99 hottest {self.hottest_us.p99:,.1f} µs, others {self.others_us.p99:,.1f} µs")
        return (f"keys {self.count:,} {self.distribution}: hottest {self.hottest_share:.1%} "
                f"of messages; reordered within a key {self.reordered:,}{skew}")


class RunSummary(Versioned):
    """One run's figures. The analysis writes every field; a run it never analysed
    (failed: nothing recorded; its manifest unreadable: corrupt) has only schema_version,
    run_id, system, params, status and problems, and a run whose files fail their checks
    (corrupt: not analysed, formats.integrity) adds load, broker and warnings.

    Counts and figures exclude the warm-up (the warm-up is excluded by time: messages
    intended before t0 + warmup). A throughput-mode run (load `saturation`, `rate: max`)
    measures only `saturation_latency_us`; its other latency metrics stay empty (count 0),
    as `saturation_latency_us` does in an open-loop run."""

    model_config = ConfigDict(json_schema_extra=_run_schema)

    schema_version: int = 1
    """The shape of this object (formats.summary.SCHEMA_VERSION when it was written; 1
    when absent)."""
    run_id: str | None = None
    """The run's directory name: its number, system and swept values
    ("01-tcp-message_size=64")."""
    system: str | None = None
    """The system under test's name in the scenario."""
    params: dict[str, Any] = Field(default_factory=dict)
    """The workload point the run ran, as its manifest records it: the scenario's workload
    fields (mode, message_size in bytes, rate in msg/s or "max", messages, schedule,
    duration_ns, warmup_ns, producers, consumers, connections, receive, drain_ns,
    seed)."""
    repeat: Repeat | None = None
    """Which repeat of its case the run is, as its manifest records it (scenario `repeat`
    above 1, since schema_version 6); null when each case ran once."""
    load: Load | None = None
    """open-loop: senders on a schedule, latency measured from each message's intended
    send time. saturation: throughput mode (`rate: max`: no schedule, a message count sent
    as fast as the system takes); its headline is throughput (send_rate, receive_rate,
    throughput, density_us) and its only latency saturation_latency_us."""
    broker: Broker = Field(default_factory=Broker)
    durability: Durability | None = None
    """The durability the run was measured with, as its manifest records it (since
    schema_version 7; null for runs recorded without it): tables show its label next to
    the system's name, and `compare` does not judge runs whose labels differ."""
    fill: FillRecord | None = None
    """What messages carried after their header (workload `content`) and its measured
    compressed/original ratio by codec, as the manifest records it (since schema 7)."""
    keys: KeysSummary | None = None
    """The message keys and the per-key order (since schema 7; absent: messages carried no
    key)."""
    sizes: SizesRecord | None = None
    """The distribution message sizes were drawn from and the sizes drawn, as the
    manifest records them (since schema 7; null: every message had one size)."""
    status: str | None = None
    """ok (every agent finished, every message accounted for), partial (figures exist;
    something is missing or doubtful: an agent died, deliveries of unknown fate, hlogs
    disagreeing with the raw records), failed (nothing to analyse), corrupt (a file of the
    run fails its checks: no figure at all). Another word (`running`) is a manifest's that
    no controller finished; it ranks as failed (formats.status)."""
    problems: list[str] = Field(default_factory=list)
    """What went wrong, one line each: the run's own problems (from its manifest), then
    the analysis's (files failing their checks, agents without data, hlog disagreements,
    values out of range)."""
    notes: list[str] = Field(default_factory=list)
    """Facts about how the figures were made that ask nothing of the reader, one line
    each: windows left out of the throughput figures, hlog checks that did not apply
    (since schema_version 5; before, among the problems)."""
    sent: int | None = None
    """Messages (requests in round trip) sent after the warm-up."""
    received: int | None = None
    """Deliveries received after the warm-up (each fan-out delivery counts; replies in
    round trip), duplicates and unexpected ones included. Since schema_version 4 a
    consumer's connections divide its deliveries (docs/design.md, "Connections divide
    the load"); before, each of its connections received every message."""
    delivered: int | None = None
    """Expected deliveries that arrived, each once (since schema_version 2). Every
    delivery expected — each message sent, at each consumer (fan-out; at each consumer
    connection before schema_version 4), or each request's reply — is delivered, lost or
    unknown: the three add up to it."""
    lost: int | None = None
    """Expected deliveries the evidence says the system lost: missing at a receiver that
    reported; at a consumer that died (docs/design.md, "When an agent dies"), missing
    though sent so long before its last kept receipt that arriving after it would have
    taken longer than any delivery from that producer did. A dead consumer is not broker
    loss: its other misses are unknown."""
    lost_acknowledged: int | None = None
    """Of `lost`: expected deliveries of messages the system had acknowledged to their
    producer (RabbitMQ publisher confirms, NATS JetStream publish acks) that a consumer
    whose records are whole never got — the system broke its promise (docs/faults.md).
    Absent: no producer recorded acknowledgements (the system gives none, or not per
    connection)."""
    unknown: int | None = None
    """Expected deliveries of unknown fate: at consumers that died, the misses that may
    have arrived after their last closed chunk (schema_version 1: every delivery expected
    at a consumer that left no data; still so for one that closed no chunk). Not lost:
    nothing says whether they arrived; a problem line names each such agent, and the run
    is at least partial."""
    duplicated: int | None = None
    """Deliveries received more than once (each extra copy)."""
    reordered: int | None = None
    """Deliveries received after a later message of the same producer."""
    unexpected: int | None = None
    """Received messages matching no sent message."""
    warmup: Warmup = Field(default_factory=Warmup)
    send_rate: float | None = None
    """Messages per second measured at the senders (each agent's rate, summed)."""
    receive_rate: float | None = None
    """Deliveries per second measured at the receivers, apart from the senders'."""
    latency_us: Figures | None = None
    """recv − intended, µs: what a user of the system sees, free of coordinated
    omission. This and the other latency metrics are absent (null when read) only in a
    run that was not analysed."""
    service_time_us: Figures | None = None
    """recv − sent, µs."""
    send_lag_us: Figures | None = None
    """sent − intended, µs: the generator's own delay."""
    saturation_latency_us: Figures | None = None
    """recv − sent under saturation (throughput mode), µs: never compared with open-loop
    latency."""
    out_of_range: dict[str, OutOfRange] = Field(default_factory=dict)
    """Per metric (latency, service_time, send_lag, saturation_latency)."""
    latency_pairs: LatencyPairs = Field(default_factory=LatencyPairs)
    clock_bound_ns: int | None = None
    """How far any cross-clock latency or service time may be off: the largest producer +
    receiver offset uncertainty among the cross_clock deliveries; null when none."""
    hlog_agrees: bool | None = None
    """Whether the agents' interval logs reduce to the same HDR bucket counts as the raw
    records, compared on the hlog tags holding what the analysis computed (a receiver with
    cross_clock or excluded deliveries logged them raw, so its latency and service_time
    tags are not compared, and a problem line says so); null when nothing was compared.
    false makes the run at least partial."""
    throughput: Throughput | None = None
    density_us: float | None = None
    """The mean interval between consecutive receipts of a receiver stream, over all of
    them; null without a stream of two receipts."""
    humps: Humps | None = None
    steadiness: Steadiness | None = None
    steps: list[StepFigures] | None = None
    """Per step, when the rate is a shape of steps (absent otherwise; since
    schema_version 7)."""
    faults: list[FaultFigures] | None = None
    """Per fault of the scenario, in its order, what it cost (since schema_version 7);
    null without faults."""
    backlog: BacklogFigures | None = None
    """The backlog's build and drain, when the workload builds one (absent otherwise;
    since schema_version 7)."""
    behind_s: float | None = None
    """How long the senders were more than SATURATED_LAG_P99_US behind their schedule,
    seconds summed over the sending agents: the messages sent that late, over each
    agent's share of send_rate (a loop stalled for G s leaves rate × (G − 1 ms) messages
    that late; one falling behind sends them at its own rate). Weighed against
    cpu.sender.loop to say whose doing a lag was (formats.lag). Null without a schedule
    (throughput mode) or sends (since schema_version 5)."""
    cpu: Cpu | None = None
    cpu_placement: list[str] = Field(default_factory=list)
    """What the CPU placement did on each kernel with a busy loop, as the manifest records
    it (docs/design.md, "CPU placement"); a kernel whose loops had no CPU of their own
    says "N busy loop(s) on M CPU(s): no CPU of their own" (since schema_version 5)."""
    warnings: list[str] = Field(default_factory=list)
    """What to act on before trusting the figures, one line each. When the senders did
    not keep their schedule (send-lag p99 over 1 ms, or under 95% of the scheduled rate
    sent), one line names whose doing it was (formats.lag): "system pushed back" (their
    loops blocked in send calls: the system did not take the messages), "CPUs
    oversubscribed" (more busy loops than CPUs: the placement, never the system),
    "machine busy" (their loops waited for a CPU other work had), "generator saturated"
    (their loops ran and still fell behind). Also: a placement without a CPU per busy
    loop, deliveries left out of latency for their clocks, multi-modal latency, "time cap
    reached" (throughput mode: `duration` ended sending early)."""

    def metric(self, field: str) -> Figures | None:
        """A latency field by its name (latency_us … saturation_latency_us, as
        formats.load names the latency of each load); None when the run has none."""
        return getattr(self, field)

    def figures(self, field: str) -> Figures:
        """The figures of a latency field, empty (count 0) when the run has none."""
        return self.metric(field) or Figures()

    def bytes_per_s(self, rate_field: str) -> float | None:
        """A rate (send_rate or receive_rate) in bytes a second: the messages times their
        size (params message_size); None without either. Sizes drawn from a distribution
        take the analysis' own figure, each stream's rate times its messages' mean size
        (`throughput.bytes_per_s`). What the outputs show beside msg/s; not a field of
        the file, so readers compute it the same way."""
        if self.sizes is not None:
            if self.throughput is None:
                return None
            side = "sender" if rate_field == "send_rate" else "receiver"
            return getattr(self.throughput.bytes_per_s, side)
        rate, size = getattr(self, rate_field), self.params.get("message_size")
        if rate is None or isinstance(size, bool) or not isinstance(size, int | float):
            return None
        return rate * size


class CapacityProbe(Document):
    """One run of a capacity search and its verdict (docs/design.md, "Capacity search")."""

    run_id: str
    rate: float
    """The rate it was scheduled at, msg/s in total."""
    confirming: bool
    """Whether it ran again at a rate already probed: to confirm a rate that passed, or a
    failure or generator-bound probe before the search ended on it."""
    verdict: str
    """pass, fail, or generator-bound (the producers could not keep the rate: no verdict
    on the system)."""
    reasons: list[str]
    """Why it failed or was generator-bound."""
    status: str | None
    send_rate: float | None
    receive_rate: float | None
    latency_us: dict[str, float | None]
    """p50, p99, p99.9, p99.99 of its latency (recv − intended), µs."""


class CapacityResult(Document):
    """What a capacity search found for one system and workload point."""

    system: str
    point: str
    """The search's run id (its probes' ids add `-probeNN-rate=R`)."""
    finding: str
    """confirmed (the capacity, confirmed by runs that passed), at-least (`to` passed and
    was confirmed), below (`from` failed, twice), generator-bound (the producers could not
    keep a rate, twice: the search stopped), budget (runs or time ran out first)."""
    capacity_msg_s: float | None
    """The highest rate that passed (confirmed only when finding is confirmed or
    at-least); null when none did."""
    note: str
    """The finding in one line, as the console prints it."""
    objective_us: dict[str, float]
    """Percentile → the most its latency may be, µs."""
    precision: float
    probes: list[CapacityProbe]
    """Every probe in the order run."""


class Spread(Document):
    """How one figure of a case varied from repeat to repeat: what the merged figure cannot
    show, the run-to-run noise of the machine and the system (since schema_version 6)."""

    repeats: int
    """How many repeats had the figure."""
    min: float
    median: float
    """The lower median of the repeats' figures (a repeat's own figure, never an average
    of two)."""
    max: float
    band_pct: float | None
    """The repeat-to-repeat band: how far apart the repeats' figures lay, 100 × (max / min
    − 1); `sixnines compare` takes it as the figure's run-to-run noise. Null when min is 0."""


#: The key of the rates (send_rate, receive_rate) in `RepeatedCase.spread`.
RATES_SPREAD = "rates"


class RepeatedCase(Document):
    """One case run several times (scenario `repeat`): its repeats merged into one
    distribution, and how far they spread (since schema_version 6)."""

    system: str | None
    case: str
    """The swept values the repeats share, as their run ids say them ("message_size=64";
    "" when nothing is swept)."""
    runs: list[str]
    """The repeats' run ids, in the order they ran."""
    merged_from: list[str]
    """The repeats whose distributions are merged: those analysed, with their
    histograms (report/histograms.json) at hand."""
    merged: RunSummary
    """The case as one run: run_id is system and case, status the worst repeat's, problems
    name each repeat that was not ok; the counts are the repeats' summed, the rates their
    mean; each latency metric's figures come from the repeats' HDR buckets added together
    (rule 5: histograms add, percentiles are never averaged), so the count is the
    repeats' counts summed (lower_median and robust_deviation to within the median's HDR
    bucket, < 0.1 %: the merge has no raw values). What the merge does not make (cpu,
    throughput windows, humps, warnings, …) is null or empty; notes name a repeat left out
    of the merge, and why."""
    spread: dict[str, dict[str, Spread]]
    """Per latency metric the load measures (latency_us, service_time_us, send_lag_us, or
    saturation_latency_us), each figure p50 … p99.9999 and max; and under `rates`,
    send_rate and receive_rate."""


class ResultsSummary(Versioned):
    """A scenario's results (`<results>/summary.json`): every run's summary, in run
    order, and what each capacity search found."""

    ALWAYS_WRITTEN: ClassVar[tuple[str, ...]] = ("schema_version", "capacity", "repeats")

    schema_version: int = 1
    """The shape of this file (formats.summary.SCHEMA_VERSION when it was written; 1 when
    absent)."""
    scenario: str | None
    """The scenario's name."""
    runs: list[RunSummary]
    capacity: list[CapacityResult] = Field(default_factory=list)
    """One per capacity search (`rate: {search: max, …}`), in run order (since
    schema_version 4)."""
    repeats: list[RepeatedCase] = Field(default_factory=list)
    """One per case when the scenario repeats its cases (`repeat` above 1), in the order
    the cases first ran (since schema_version 6)."""
