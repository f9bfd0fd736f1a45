"""DataFrame building blocks of the run analysis: pure column expressions, no Python UDFs
(the delivery accounting built from them: spark_jobs.delivery).

Every function takes and returns DataFrames (or Columns) so each is testable on a tiny
frame and Spark can fuse them into few scans. Raw rows never reach the driver: latencies
leave Spark as HDR bucket counts (the same buckets as `formats.hdr`, so percentiles from
the raw data and from the agents' hlogs agree to the bucket), accounting as one row.

Runs. Every run of a scenario is analysed in one pass: rows carry `run_index` (the run's
position in the list analysed), every grouping, window and join key starts with it, and
what differs between runs (clocks, warm-up instants, dead agents) comes as small tables
keyed by it. So the number of Spark jobs does not grow with the number of runs: a
16-run scenario of small runs costs about what one run costs (docs/performance.md).

Clocks (docs/design.md rule 3): a latency subtracts the producer's timestamp from the
receiver's, and each is read on its own host's monotonic clock. `RunClocks` says, from the
manifest, which clock domain (one kernel boot) every agent is in; `with_clock_pairs` joins
that onto the rows as small broadcast tables, and only rows whose two ends share a domain
are timed as recorded. The others are left out, or, when the scenario asked for
`cross_host_latency`, moved onto the controller's clock by the measured offsets.
"""

from __future__ import annotations

import operator
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import reduce
from pathlib import Path
from urllib.parse import unquote, urlsplit

import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.pandas.types import from_arrow_schema

from sixnines.formats import hdr
from sixnines.formats.chunks import kept_chunks, message_files
from sixnines.formats.manifest import AgentEntry, Manifest
from sixnines.formats.records import MESSAGES, MESSAGES_FILE
from sixnines.formats.vocabulary import RECORDING, SENDERS, Role
from sixnines.spark_jobs.load import OPEN_LOOP, SATURATION

SCHEMA = from_arrow_schema(MESSAGES)
ROLES = RECORDING
METRICS = ("latency", "service_time", "send_lag")
DEFAULT_DOMAIN = ""  # a manifest without clock domains: every agent shares one clock
SAME_CLOCK, CROSS_CLOCK, EXCLUDED = "same_clock", "cross_clock", "excluded"
PAIRS = (SAME_CLOCK, CROSS_CLOCK, EXCLUDED)  # clock_pair values, also the summary field names

RUN = "run_index"  # the column saying which run of those analysed together a row is of

ClockRow = tuple[int, int, str, int | None, int | None]  # run, key, domain, offset, uncertainty


def _long(value: int) -> Column:
    return F.lit(value).cast("long")


def clipped(value: Column) -> Column:
    """Value limited to [0, hdr.HIGHEST], like `hdr.clip` (callers count what was cut)."""
    return F.least(F.greatest(value.cast("long"), _long(0)), _long(hdr.HIGHEST))


def _shift(name: str, value: Column, bits: Column) -> Column:
    """shiftleft/shiftright by a column amount (the Python helpers take only an int)."""
    return F.call_function(name, value, bits)


def bit_length(value: Column) -> Column:
    """Exact bit length of a positive long below 2**53.

    floor(log2) in floating point can land one off next to powers of two, so the guess is
    corrected with exact integer shifts rather than trusted.
    """
    guess = F.floor(F.log2(value.cast("double"))).cast("int")
    exact = (
        F.when(_shift("shiftleft", _long(1), guess) > value, guess - 1)
        .when(_shift("shiftleft", _long(1), guess + 1) <= value, guess + 1)
        .otherwise(guess)
    )
    return exact + 1


def bucket_index(value: Column) -> Column:
    """HDR counts-array index of a value, equal to `hdr.bucket_indices` (values clipped)."""
    v = clipped(value)
    bucket = bit_length(v.bitwiseOR(_long(hdr.SUB_BUCKET_MASK))) - (
        hdr.SUB_BUCKET_HALF_COUNT_MAGNITUDE + 1
    )
    sub_bucket = _shift("shiftright", v, bucket)
    first = F.shiftleft((bucket + 1).cast("long"), hdr.SUB_BUCKET_HALF_COUNT_MAGNITUDE)
    return (first + sub_bucket - hdr.SUB_BUCKET_HALF_COUNT).cast("int")


def message_paths(run_dir: Path, manifest: Manifest) -> dict[str, tuple[Role, list[Path]]]:
    """{agent_id: (role, its per-message files)} for the manifest's agents that left any:
    its chunks in order, or its messages.parquet (formats.chunks). Of an agent that died
    (it never reported), only the chunks its index lists: whatever its role, what it closed
    before it died is read the same way (spark_jobs.delivery says what it means)."""
    found = {}
    for agent in manifest.agents:
        folder = Path(run_dir) / "agents" / agent.id
        paths = kept_chunks(folder).paths if agent.died else message_files(folder)
        if agent.role in ROLES and paths:
            found[agent.id] = (agent.role, paths)
    return found


def of_run(table: pa.Table, run_index: int) -> pa.Table:
    """The rows of one run of a result with a run_index column (what came back to the
    driver for all runs at once)."""
    return table.filter(pc.equal(table[RUN], run_index))


@dataclass(frozen=True)
class FileOwner:
    """Whose rows a file holds: the columns `load_runs` adds to them."""

    run_index: int
    agent_id: str
    agent_index: int
    role: str

    def columns(self) -> tuple[int, str, int, str]:
        return self.run_index, self.agent_id, self.agent_index, str(self.role)


OWNER_COLUMNS = ((RUN, "int"), ("agent_id", "string"), ("agent_index", "int"),
                 ("role", "string"))  # FileOwner.columns()
OWNER_SCHEMA = ", ".join(f"{name} {kind}" for name, kind in OWNER_COLUMNS)


def _tag(df: DataFrame, owner: FileOwner) -> DataFrame:
    """df's rows with their owner's columns."""
    return df.select("*", *(F.lit(value).cast(kind).alias(name) for (name, kind), value
                            in zip(OWNER_COLUMNS, owner.columns(), strict=True)))


def load_messages(spark: SparkSession, run_dir: Path, manifest: Manifest) -> DataFrame:
    """One run's rows (run_index 0): see `load_runs`."""
    return load_runs(spark, [(run_dir, manifest)])


def load_runs(spark: SparkSession, runs: Sequence[tuple[Path, Manifest]]) -> DataFrame:
    """All agents' message rows of every run, plus `run_index` (the run's position in
    `runs`), `agent_id`, `agent_index` and `role`.

    Agents without a file are skipped. Ids and roles come from the manifest, not from the
    file path, so nothing depends on how a file system encodes a directory name.
    `agent_index` (the agent's position in its manifest) is, with `run_index`, the key the
    shuffles use: an int hashes and moves much faster than a string. Every file is read
    by one scan (`_scan_tagged`).
    """
    owners: list[tuple[str, FileOwner]] = []  # (absolute path, whose rows it holds)
    frames = []
    for run_index, (run_dir, manifest) in enumerate(runs):
        ids = [agent.id for agent in manifest.agents]
        for agent_id, (role, paths) in message_paths(run_dir, manifest).items():
            owner = FileOwner(run_index, agent_id, ids.index(agent_id), role)
            if _whole_run_requester(role, paths):
                frames.append(_tag(_requests_and_replies(spark, paths[0]), owner))
            else:
                owners += [(os.path.abspath(path), owner) for path in paths]
    if owners:
        frames.append(_scan_tagged(spark, owners))
    if not frames:
        return _tag(spark.createDataFrame([], SCHEMA), FileOwner(-1, "", -1, ""))
    manifests = [manifest for _, manifest in runs]
    return _warmup_by_schedule(spark, reduce(DataFrame.unionByName, frames), manifests)


def _scan_tagged(spark: SparkSession, owners: list[tuple[str, FileOwner]]) -> DataFrame:
    """The rows of every file (`owners`: (absolute path, owner)) in one scan, each tagged
    with its owner by joining the file's name (input_file_name, as Spark spells it) onto
    a small table; a file owned twice (a run analysed twice) is read once, its rows
    tagged for each. A union of a scan per agent made every query plan as wide as the
    agents (hundreds in a scenario): seconds of planning per action and megabyte task
    binaries (docs/performance.md)."""
    df = spark.read.schema(SCHEMA).parquet(*dict.fromkeys(path for path, _ in owners))
    spelt = {_local_path(uri): uri for uri in df.inputFiles()}
    unknown = [path for path, _ in owners if path not in spelt]
    if unknown:  # never analyse a file as someone else's, nor drop one silently
        raise RuntimeError(f"Spark names these files otherwise: {unknown[:3]}")
    table = spark.createDataFrame(
        [(spelt[path], *owner.columns()) for path, owner in owners],
        f"_file string, {OWNER_SCHEMA}")
    return (df.withColumn("_file", F.input_file_name())
            .join(F.broadcast(table), "_file").drop("_file"))


def _local_path(uri: str) -> str:
    """A local file's path from the URI Spark gives it (percent-encoded)."""
    return unquote(urlsplit(uri).path)


def _whole_run_requester(role: Role, paths: list[Path]) -> bool:
    """A requester's whole-run messages.parquet (results recorded before requesters wrote
    chunks)."""
    return role == Role.REQUESTER and [path.name for path in paths] == [MESSAGES_FILE]


def _requests_and_replies(spark: SparkSession, path: Path) -> DataFrame:
    """A requester's whole-run messages.parquet holds a row per request with its first
    reply's time: read as the request rows and reply rows a requester writes now."""
    df = spark.read.schema(SCHEMA).parquet(str(path))
    reply_only = ("recv_ns", "consumer_id", "rx_index")
    requests = df.select(*[F.lit(None).cast(SCHEMA[name].dataType).alias(name)
                           if name in reply_only else name for name in df.columns])
    return requests.unionByName(df.filter(F.col("recv_ns").isNotNull()))


def _warmup_by_schedule(spark: SparkSession, df: DataFrame, manifests: Sequence[Manifest]
                        ) -> DataFrame:
    """The warm-up flag of each receipt, taken from its producer's schedule.

    A receiving agent flags warm-up against its own start instant, but the intended time
    was read on the producer's clock: across clocks the two differ by the offset (7 s
    apart, every message would be warm-up or none). The warm-up ends at one instant for
    all, `t0 + warmup` in each sender's own clock (its `t0_ns` in the manifest), so the
    flag is recomputed from that (a sender that died never reported its t0: the start
    instant it was sent stands in, Manifest.t0_of); receipts from a sender the manifest
    does not place keep the agent's flag (same clock in a one-host run).
    """
    ends = [(run_index, producer_id, t0 + manifest.workload.warmup_ns)
            for run_index, manifest in enumerate(manifests)
            for agent in manifest.agents
            if agent.role in SENDERS and (t0 := manifest.t0_of(agent)) is not None
            and agent.first_id is not None
            for producer_id in range(agent.first_id,
                                     agent.first_id + manifest.workload.connections)]
    if not ends:
        return df
    table = F.broadcast(spark.createDataFrame(
        ends, f"{RUN} int, producer_id int, warmup_end long"))
    by_schedule = F.col("intended_ns") < F.col("warmup_end")
    warmup = F.when(_is_receipt() & F.col("warmup_end").isNotNull(), by_schedule).otherwise(
        F.col("warmup"))
    joined = df.join(table, [RUN, "producer_id"], "left")
    return joined.select(*[warmup.alias("warmup") if name == "warmup" else F.col(name)
                           for name in df.columns])


def intended_before(df: DataFrame, limits: Mapping[tuple[int, str], int]) -> DataFrame:
    """The rows of the agents in `limits` ((run_index, agent_id) → an intended time)
    intended before theirs."""
    return df.filter(reduce(operator.or_, [
        (F.col(RUN) == run_index) & (F.col("agent_id") == agent_id)
        & (F.col("intended_ns") < _long(limit))
        for (run_index, agent_id), limit in limits.items()]))


def measured(df: DataFrame) -> DataFrame:
    """Rows outside the warm-up: the only ones behind any figure."""
    return df.filter(~F.col("warmup"))


def _is_sender() -> Column:
    """A message sent: any producer row, or a requester's request row (its replies are
    rows of their own, with a receive time)."""
    return F.col("role").isin(*SENDERS) & F.col("recv_ns").isNull()


def _is_receipt() -> Column:
    """A received message: any consumer row, or a requester's reply row."""
    return (F.col("role") == Role.CONSUMER.value) | (
        (F.col("role") == Role.REQUESTER.value) & F.col("recv_ns").isNotNull()
    )


def _timed_receipt() -> Column:
    """A receipt with its receive time: the rows behind latency and service time."""
    return _is_receipt() & F.col("recv_ns").isNotNull()


def _clock_row(run_index: int, key: int, agent: AgentEntry) -> ClockRow:
    """An agent's clock. A missing or null domain is the shared default one. offset_ns is
    its domain's offset, taken from one agent's estimate, so what bounds it is that
    estimate's uncertainty (formats.manifest.Clock.bound_ns), not the agent's own ping."""
    clock = agent.clock
    return run_index, key, clock.domain or DEFAULT_DOMAIN, clock.offset_ns, clock.bound_ns


def _producer_rows(run_index: int, agents: list[AgentEntry], connections: int
                   ) -> list[ClockRow]:
    """One clock row per producer id: a sender's ids are [first_id, first_id + connections).

    Senders without first_id (older manifests) place no ids. Two senders claiming one id
    would double rows in the join, so that manifest is refused rather than miscounted.
    """
    owners: dict[int, str] = {}
    rows = []
    for agent in agents:
        if agent.role not in SENDERS or agent.first_id is None:
            continue
        for producer_id in range(agent.first_id, agent.first_id + connections):
            if producer_id in owners:
                raise ValueError(f"producer id {producer_id} claimed by agents "
                                 f"{owners[producer_id]} and {agent.id}")
            owners[producer_id] = agent.id
            rows.append(_clock_row(run_index, producer_id, agent))
    return rows


@dataclass(frozen=True)
class RunClocks:
    """Which clock every timestamp of the runs analysed together was read on, from their
    manifests.

    receivers: a ClockRow per agent with messages, keyed by (run_index, agent_index: its
    position in the manifest, as load_runs numbers them); producers: keyed by (run_index,
    producer id). offset_ns is the agent's host clock minus the controller's (±
    uncertainty_ns), None when not measured. cross_host: per run, whether the scenario
    asked for offset-corrected cross-clock latency.
    """

    receivers: tuple[ClockRow, ...]
    producers: tuple[ClockRow, ...]
    cross_host: tuple[bool, ...] = (False,)

    @classmethod
    def from_manifest(cls, manifest: Manifest) -> RunClocks:
        return cls.of_runs([manifest])

    @classmethod
    def of_runs(cls, manifests: Sequence[Manifest]) -> RunClocks:
        receivers, producers = [], []
        for run_index, manifest in enumerate(manifests):
            agents = manifest.agents
            receivers += [_clock_row(run_index, index, agent)
                          for index, agent in enumerate(agents) if agent.role in ROLES]
            producers += _producer_rows(run_index, agents, manifest.workload.connections)
        return cls(tuple(receivers), tuple(producers),
                   tuple(manifest.cross_host_latency for manifest in manifests))

    def sole_domain(self, run_index: int) -> str | None:
        """The domain every agent of a run is in, or None when it spans several.

        In a one-domain run any producer, even one the manifest does not place (an
        unexpected message), read the same clock as its receiver.
        """
        domains = {row[2] for row in self.receivers if row[0] == run_index}
        return domains.pop() if len(domains) == 1 else None

    def runs_table(self, spark: SparkSession) -> DataFrame:
        """(run_index, sole_domain, cross_host) of each run, to broadcast onto rows."""
        rows = [(run_index, self.sole_domain(run_index), cross)
                for run_index, cross in enumerate(self.cross_host)]
        return F.broadcast(spark.createDataFrame(
            rows, f"{RUN} int, sole_domain string, cross_host boolean"))


def _clock_table(spark: SparkSession, key: str, side: str, rows: tuple[ClockRow, ...]
                 ) -> DataFrame:
    schema = (f"{RUN} int, {key} int, {side}_domain string, {side}_offset long, "
              f"{side}_uncertainty long")
    return F.broadcast(spark.createDataFrame(list(rows), schema))


def with_clock_pairs(df: DataFrame, clocks: RunClocks) -> DataFrame:
    """df plus clock_pair (one of PAIRS), clock_correction and clock_bound, both in ns.

    same_clock: producer and receiver share a domain (a requester is its own receiver), so
    the timestamps subtract as recorded (correction 0: the figures of a one-host run).
    cross_clock: different domains, used because the scenario asked for it and both
    offsets are known. Each end moves onto the controller's clock (t − offset), so
    recv − intended loses correction = receiver offset − producer offset; clock_bound is
    the two uncertainties added. excluded: anything else, e.g. a producer without a clock.
    """
    spark = df.sparkSession
    joined = df.join(
        _clock_table(spark, "agent_index", "rx", clocks.receivers), [RUN, "agent_index"], "left"
    ).join(_clock_table(spark, "producer_id", "tx", clocks.producers), [RUN, "producer_id"],
           "left").join(clocks.runs_table(spark), RUN, "left")
    producer_domain = F.coalesce(F.col("tx_domain"), F.col("sole_domain"))
    same = (F.col("role") == Role.REQUESTER.value) | F.coalesce(
        producer_domain == F.col("rx_domain"), F.lit(False)
    )
    correction = F.col("rx_offset") - F.col("tx_offset")
    bound = F.col("rx_uncertainty") + F.col("tx_uncertainty")
    cross = (~same & F.coalesce(F.col("cross_host"), F.lit(False)) & correction.isNotNull()
             & bound.isNotNull())
    return joined.select(
        *df.columns,
        F.when(same, SAME_CLOCK).when(cross, CROSS_CLOCK).otherwise(EXCLUDED).alias("clock_pair"),
        F.when(cross, correction).otherwise(_long(0)).alias("clock_correction"),
        F.when(cross, bound).alias("clock_bound"),
    )


def timed_receipts(df: DataFrame, clocks: RunClocks) -> DataFrame:
    """Receipts with receive times, each with its clock pair (see with_clock_pairs)."""
    return with_clock_pairs(df.filter(_timed_receipt()), clocks)


def metric_values(df: DataFrame, clocks: RunClocks, load: str | Mapping[int, str] = OPEN_LOOP
                  ) -> DataFrame:
    """Long frame (run_index, agent_id, metric, value ns): one row per metric a message has.

    Open loop: latency = recv − intended and service_time = recv − sent for received
    messages whose two ends can be put on one clock (see with_clock_pairs); send_lag =
    sent − intended for every sent message (lost ones too), one agent's clock by
    construction. Saturation (spark_jobs.load): saturation_latency = recv − sent for the
    same receipts, and nothing else (there is no schedule). `load`: every run's, or each
    run's (run_index → load) when they differ. A union of filtered
    projections: it stays in whole-stage codegen, unlike a generator (explode/stack), and
    measured ~20 % faster than one.
    """
    timed = timed_receipts(df, clocks).filter(F.col("clock_pair") != EXCLUDED)
    recv, sent, intended = F.col("recv_ns"), F.col("sent_ns"), F.col("intended_ns")
    on_one_clock = recv - F.col("clock_correction")
    definitions = {
        OPEN_LOOP: (("latency", timed, on_one_clock - intended),
                    ("service_time", timed, on_one_clock - sent),
                    ("send_lag", df.filter(_is_sender()), sent - intended)),
        SATURATION: (("saturation_latency", timed, on_one_clock - sent),),
    }
    loads = {load: None} if isinstance(load, str) else _runs_by_load(load)
    parts = [rows.filter(_in_runs(runs))
             .select(RUN, "agent_id", F.lit(metric).alias("metric"), value.alias("value"))
             for kind, runs in loads.items() for metric, rows, value in definitions[kind]]
    return reduce(DataFrame.unionByName, parts)


def _runs_by_load(loads: Mapping[int, str]) -> dict[str, list[int]]:
    by_load: dict[str, list[int]] = {}
    for run_index, load in loads.items():
        by_load.setdefault(load, []).append(run_index)
    return by_load


def _in_runs(runs: list[int] | None) -> Column:
    """Rows of these runs (None: of every run)."""
    return F.lit(True) if runs is None else F.col(RUN).isin(*runs)


def clock_pair_counts(df: DataFrame, clocks: RunClocks) -> DataFrame:
    """Per receiving agent: (run_index, agent_id, same_clock, cross_clock, excluded,
    clock_bound_ns).

    Counts of its timed receipts by clock pair, and the widest bound among the cross-clock
    ones used (null when none). df as for metric_values, so same_clock + cross_clock is
    exactly the latency count.
    """
    pair = F.col("clock_pair")
    return timed_receipts(df, clocks).groupBy(RUN, "agent_id").agg(
        *(F.count(F.when(pair == name, 1)).alias(name) for name in PAIRS),
        F.max("clock_bound").alias("clock_bound_ns"),
    )


def bucket_counts(values: DataFrame, keys: tuple[str, ...] = ("metric",)) -> DataFrame:
    """(keys…, bucket, count, sum, max, negative, too_large) per HDR bucket, in one pass.

    sum and max are of the raw (unclipped) values so the mean and max stay exact; the
    clipped-away values are counted rather than silently folded into the edge buckets.
    """
    value = F.col("value")
    return values.groupBy(*keys, bucket_index(value).alias("bucket")).agg(
        F.count(F.lit(1)).alias("count"),
        F.sum(value.cast("double")).alias("sum"),
        F.max(value).alias("max"),
        F.count(F.when(value < 0, 1)).alias("negative"),
        F.count(F.when(value > hdr.HIGHEST, 1)).alias("too_large"),
    )


def _receiver() -> Column:
    """One receiving connection: an agent may hold several (each gets every message)."""
    return F.col("agent_index").cast("long") * (1 << 32) + F.col("consumer_id").cast("long")


def _rate(n: Column, first: Column, last: Column) -> Column:
    span = last - first
    return F.when((n > 1) & (span > 0), (n - 1) / span.cast("double") * 1e9)


def agent_rates(df: DataFrame) -> DataFrame:
    """Per agent (run_index, agent_id, role, send_rate, receive_rate) in msg/s over its own
    clock.

    Agents on different hosts have unrelated monotonic clocks, so a rate is only ever
    taken between two timestamps of one agent; the run's rate is the sum over agents.
    """
    sending = _is_sender()
    receiving = _timed_receipt()
    sent_ns = F.when(sending, F.col("sent_ns"))
    recv_ns = F.when(receiving, F.col("recv_ns"))
    per_agent = df.groupBy(RUN, "agent_index", "agent_id", "role").agg(
        F.count(sent_ns).alias("n_sent"),
        F.min(sent_ns).alias("first_sent"),
        F.max(sent_ns).alias("last_sent"),
        F.count(recv_ns).alias("n_recv"),
        F.min(recv_ns).alias("first_recv"),
        F.max(recv_ns).alias("last_recv"),
    )
    return per_agent.select(
        RUN,
        "agent_id",
        "role",
        _rate(F.col("n_sent"), F.col("first_sent"), F.col("last_sent")).alias("send_rate"),
        _rate(F.col("n_recv"), F.col("first_recv"), F.col("last_recv")).alias("receive_rate"),
    )


def rates(df: DataFrame) -> DataFrame:
    """One row per run (run_index, send_rate, receive_rate): sums of the per-agent rates of
    measured rows."""
    return agent_rates(measured(df)).groupBy(RUN).agg(
        F.sum("send_rate").alias("send_rate"), F.sum("receive_rate").alias("receive_rate")
    )
