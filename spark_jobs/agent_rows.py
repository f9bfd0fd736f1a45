"""One agent's record files as numpy columns: what every per-agent pass of the analysis
reads (spark_jobs.agent_pass), with the row kinds, the warm-up flag and the clock pairing
already decided.

An agent's files hold its streams whole and in order (its chunks in order, each written
in send or receive order), so everything about one agent is computed from them alone;
what crosses agents is small and comes as a `RunContext` from the manifest.

Row kinds (formats.records): a sent message is any producer row, or a requester's request
row (no receive time); a receipt is any consumer row, or a requester's reply row; a timed
receipt has its receive time.

Warm-up (docs/design.md rule 8): a receipt's flag is taken from its producer's
schedule, `intended < t0 + warmup` on the producer's clock (`RunContext.warmup_ends`),
because a receiver on another host flags against its own clock; receipts from producers
the manifest does not place keep their own flag.

Clocks (docs/design.md rule 3): a receipt is timed as recorded when its producer and its
receiver share a clock domain (a requester is its own receiver), moved onto the
controller's clock by the measured offsets when the scenario asked for
`cross_host_latency` and both offsets and bounds are known, and excluded otherwise.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from sixnines.formats.backlog import BacklogPlan
from sixnines.formats.chunks import recorded_chunks
from sixnines.formats.layout import MESSAGES_FILE
from sixnines.formats.manifest import KeyDraws, Manifest
from sixnines.formats.records import MESSAGES
from sixnines.formats.vocabulary import RECORDING, SENDERS, Load, Role
from sixnines.spark_jobs.grid import Grid

SAME_CLOCK, CROSS_CLOCK, EXCLUDED = 0, 1, 2  # clock pair codes, in the order of PAIRS
PAIRS = ("same_clock", "cross_clock", "excluded")  # also the summary field names
DEFAULT_DOMAIN = ""  # a manifest without clock domains: every agent shares one clock

#: An agent's clock: (domain, offset_ns to the controller's, bound_ns of that offset).
Clock = tuple[str, int | None, int | None]
T = TypeVar("T")

REPLY_ONLY = ("recv_ns", "consumer_id", "rx_index")


def message_paths(run_dir: Path, manifest: Manifest) -> dict[str, tuple[Role, list[Path]]]:
    """{agent_id: (role, its per-message files)} for the manifest's agents that left any:
    the chunks its index lists in order, or its messages.parquet (formats.chunks.
    recorded_chunks). An agent that died (it never reported) is read the same way, whatever
    its role: what it closed before it died (spark_jobs.delivery says what it means)."""
    found = {}
    for agent in manifest.agents:
        paths = recorded_chunks(run_dir, agent).paths
        if agent.role in RECORDING and paths:
            found[agent.id] = (agent.role, paths)
    return found


@dataclass(frozen=True)
class RunContext:
    """What an agent's pass needs to know of its run besides its own files.

    warmup_ends: producer id → the intended instant its warm-up ends (its clock);
    producers: producer id → its sender's clock; sole_domain: the domain every agent is
    in, None when they span several (a producer the manifest does not place then reads
    no known clock); dead_producer_ids: the ids of senders that died (what receivers got
    from them after their last chunk counts as sent, spark_jobs.delivery); per_connection:
    each consumer connection expects every message (runs before schema 5), so receipts
    are matched per connection, not per agent; grid: the intervals a run is counted in
    (spark_jobs.intervals; run_merge.interval_grid: faults, a rate shape or a backlog),
    None otherwise."""

    run_index: int
    load: Load = Load.OPEN_LOOP
    window: int = 100
    warmup_ends: dict[int, int] | None = None
    producers: dict[int, Clock] | None = None
    sole_domain: str | None = DEFAULT_DOMAIN
    cross_host: bool = False
    dead_producer_ids: frozenset[int] = frozenset()
    warmup_ns: int = 0
    per_connection: bool = False
    #: a shape of steps: each step's (start, end) in ns from the start instant
    steps: tuple[tuple[int, int], ...] = ()
    grid: Grid | None = None
    #: a backlog run: its plan (release and bound, from the start instant)
    backlog: BacklogPlan | None = None
    #: how the run's keys were drawn (None: messages carried none)
    key_draws: KeyDraws | None = None
    hottest_key: int | None = None  # the key drawn most: its latency apart
    #: producer id → the runs of seqs (first, count) the system acknowledged to it
    #: (spark_jobs.delivery.acknowledged)
    acknowledged: dict[int, tuple[tuple[int, int], ...]] | None = None


@dataclass(frozen=True)
class AgentFiles:
    """An agent whose records are analysed: who it is, its files in order, its hlog."""

    run: RunContext
    agent_index: int  # its position in the manifest
    agent_id: str
    role: str
    paths: tuple[str, ...]
    clock: Clock = (DEFAULT_DOMAIN, None, None)
    hlog: str | None = None  # its interval log, checked against its records
    died: bool = False
    started_ns: int | None = None  # its start instant on its clock (Manifest.t0_of)

    @property
    def rows_hint(self) -> int:
        """Its records, from the parquet footers: what a task of several agents is
        balanced by."""
        return sum(pq.ParquetFile(path).metadata.num_rows for path in self.paths)


@dataclass
class Rows:
    """An agent's records as columns (null receive fields filled: recv 0, consumer −1,
    rx_index −1, with `has_recv` saying which are real), its row kinds and, per timed
    receipt, the clock pairing (`pair`, `correction` ns to subtract from recv, `bound`
    ns, −1 where none)."""

    producer_id: np.ndarray
    seq: np.ndarray
    size: np.ndarray
    intended: np.ndarray
    sent: np.ndarray
    recv: np.ndarray
    consumer: np.ndarray
    rx_index: np.ndarray
    warmup: np.ndarray
    has_recv: np.ndarray
    sender: np.ndarray
    receipt: np.ndarray
    pair: np.ndarray
    correction: np.ndarray
    bound: np.ndarray

    @property
    def timed(self) -> np.ndarray:
        return self.receipt & self.has_recv

    @property
    def measured(self) -> np.ndarray:
        return ~self.warmup

    def __len__(self) -> int:
        return len(self.seq)


#: Rows an agent's pass holds at once (~0.1 GB of columns): an agent of any size is read
#: in batches of its files, in order, so one 100M-message stream fits a small worker. 1M
#: rows took less time than 4M (the 10M-message stream: 11.6 against 15.0 s, caches) and
#: no more than 256k (docs/performance.md).
BATCH_ROWS = 1 << 20


class NotRecords(ValueError):
    """A file whose columns are not those of formats.records."""


def _checked(path: str) -> pq.ParquetFile:
    """A record file, refused unless every column is there with its type: a file of
    another shape is never analysed as records, even one pyarrow could cast."""
    file = pq.ParquetFile(path)
    found = {field.name: field.type for field in file.schema_arrow}
    for wanted in MESSAGES:
        if found.get(wanted.name) != wanted.type:
            kind = "missing" if wanted.name not in found else f"{found[wanted.name]}"
            raise NotRecords(f"{path}: column {wanted.name} is {kind}, not {wanted.type}")
    return file


def _records(path: str, batch: pa.RecordBatch) -> pa.Table:
    table = pa.Table.from_batches([batch]).select(MESSAGES.names)
    for wanted in MESSAGES:
        if not wanted.nullable and table[wanted.name].null_count:
            raise NotRecords(f"{path}: column {wanted.name} has nulls")
    return table.cast(MESSAGES)


def _as_recorded_now(table: pa.Table) -> pa.Table:
    """A requester's whole-run messages.parquet (one row per request with its first
    reply's time, recorded before requesters wrote chunks) as its request rows and its
    reply rows."""
    requests = table
    for name in REPLY_ONLY:
        index = requests.schema.get_field_index(name)
        requests = requests.set_column(index, MESSAGES.field(name),
                                       pa.nulls(len(requests), MESSAGES.field(name).type))
    return pa.concat_tables([requests, table.filter(pc.is_valid(table["recv_ns"]))])


def _tables(agent: AgentFiles, batch_rows: int) -> Iterator[pa.Table]:
    """The agent's records in file order, about batch_rows at a time."""
    whole_run = agent.role == Role.REQUESTER and [
        p.rsplit("/", 1)[-1] for p in agent.paths] == [MESSAGES_FILE]
    pending: list[pa.Table] = []
    yielded = False
    for path in agent.paths:
        for batch in _checked(path).iter_batches(batch_size=batch_rows):
            table = _records(path, batch)
            pending.append(_as_recorded_now(table) if whole_run else table)
            if sum(map(len, pending)) >= batch_rows:
                yield pa.concat_tables(pending)
                pending, yielded = [], True
    if pending or not yielded:  # an agent without rows is one empty batch
        yield pa.concat_tables(pending) if pending else MESSAGES.empty_table()


def _column(table: pa.Table, name: str, fill: int | None = None) -> np.ndarray:
    column = table[name]
    if fill is not None:
        # pyarrow-stubs declare fill_null as coalesce (arguments of one type); pyarrow takes
        # a plain value to fill with
        column = pc.fill_null(column, fill)  # type: ignore[arg-type]
    return column.to_numpy().astype(np.int64, copy=False)


def batches(agent: AgentFiles) -> Iterator[Rows]:
    """The agent's records in file order (its streams' order), BATCH_ROWS at a time."""
    for table in _tables(agent, BATCH_ROWS):
        yield _rows(table, agent)


def read_rows(agent: AgentFiles) -> Rows:
    """All the agent's records at once (what the passes take a batch at a time)."""
    return _rows(pa.concat_tables(_tables(agent, 1 << 40)), agent)


def _rows(table: pa.Table, agent: AgentFiles) -> Rows:
    """Records classified, warm-up flagged by schedule, clock-paired."""
    has_recv = pc.is_valid(table["recv_ns"]).to_numpy(zero_copy_only=False)
    producer_id = _column(table, "producer_id")
    n = len(producer_id)
    if agent.role == Role.CONSUMER:
        sender, receipt = np.zeros(n, bool), np.ones(n, bool)
    elif agent.role == Role.REQUESTER:
        sender, receipt = ~has_recv, has_recv.copy()
    else:
        sender, receipt = np.full(n, agent.role in SENDERS), np.zeros(n, bool)
    rows = Rows(producer_id, _column(table, "seq"), _column(table, "size"),
                _column(table, "intended_ns"), _column(table, "sent_ns"),
                _column(table, "recv_ns", 0), _column(table, "consumer_id", -1),
                _column(table, "rx_index", -1),
                table["warmup"].to_numpy(zero_copy_only=False).copy(), has_recv, sender,
                receipt, np.full(n, EXCLUDED, np.int8), np.zeros(n, np.int64),
                np.full(n, -1, np.int64))
    _warmup_by_schedule(rows, agent.run)
    _pair_clocks(rows, agent)
    return rows


def _per_producer(producer_id: np.ndarray, values: Mapping[int, T]
                  ) -> tuple[np.ndarray, list[T | None]]:
    """(index into the list, the list): each row's producer's value (None: none), by
    unique id (an agent hears from few producers, so Python runs once per producer, not
    per row)."""
    ids, inverse = np.unique(producer_id, return_inverse=True)
    return inverse, [values.get(int(pid)) for pid in ids]


def per_producer(producer_id: np.ndarray, values: Mapping[int, int]
                 ) -> tuple[np.ndarray, np.ndarray]:
    """(each row's producer's value, 0 where it has none; whether it has one)."""
    inverse, found = _per_producer(producer_id, values)
    placed = np.array([value is not None for value in found], bool)[inverse]
    value = np.array([0 if value is None else value for value in found], np.int64)[inverse]
    return value, placed


def acknowledged_rows(producer_id: np.ndarray, seq: np.ndarray,
                      acknowledged: Mapping[int, tuple[tuple[int, int], ...]]) -> np.ndarray:
    """Whether each message (its producer id and seq) is among those the system
    acknowledged (RunContext.acknowledged: a few runs of seqs per producer)."""
    found = np.zeros(len(seq), bool)
    for producer, runs in acknowledged.items():
        mine = producer_id == producer
        if runs and mine.any():
            first = np.array([start for start, _ in runs], np.int64)
            end = first + np.array([count for _, count in runs], np.int64)
            seqs = seq[mine][:, None]
            found[mine] = ((seqs >= first) & (seqs < end)).any(axis=1)
    return found


def _warmup_by_schedule(rows: Rows, run: RunContext) -> None:
    if not run.warmup_ends or not rows.receipt.any():
        return
    end, placed = per_producer(rows.producer_id, run.warmup_ends)
    by_schedule = rows.receipt & placed
    rows.warmup[by_schedule] = rows.intended[by_schedule] < end[by_schedule]


def _pairing(tx: Clock | None, rx: Clock, run: RunContext) -> tuple[int, int, int]:
    """(pair, correction, bound) of a receipt from a producer with clock `tx` (None: one
    the manifest does not place) at a receiver with clock `rx`."""
    domain = tx[0] if tx is not None else run.sole_domain
    if domain is not None and domain == rx[0]:
        return SAME_CLOCK, 0, -1
    tx_offset, tx_bound = (tx[1], tx[2]) if tx is not None else (None, None)
    rx_offset, rx_bound = rx[1], rx[2]
    if (run.cross_host and rx_offset is not None and tx_offset is not None
            and rx_bound is not None and tx_bound is not None):
        return CROSS_CLOCK, rx_offset - tx_offset, rx_bound + tx_bound
    return EXCLUDED, 0, -1


def _pair_clocks(rows: Rows, agent: AgentFiles) -> None:
    timed = rows.timed
    if agent.role == Role.REQUESTER:
        rows.pair[timed] = SAME_CLOCK
        return
    inverse, clocks = _per_producer(rows.producer_id, agent.run.producers or {})
    table = np.array([_pairing(tx, agent.clock, agent.run) for tx in clocks],
                     np.int64).reshape(-1, 3)
    rows.pair[timed] = table[inverse[timed], 0]
    rows.correction[timed] = table[inverse[timed], 1]
    rows.bound[timed] = table[inverse[timed], 2]


def groups(keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(unique keys, each row's group index)."""
    return np.unique(keys, return_inverse=True)


def segments(sorted_keys: np.ndarray) -> Sequence[tuple[int, int]]:
    """[start, end) of each run of equal keys in sorted keys."""
    if len(sorted_keys) == 0:
        return []
    cuts = np.flatnonzero(sorted_keys[1:] != sorted_keys[:-1]) + 1
    bounds = np.concatenate([[0], cuts, [len(sorted_keys)]])
    return list(zip(bounds[:-1].tolist(), bounds[1:].tolist(), strict=True))


def stream_order(streams: np.ndarray, order_by: np.ndarray) -> np.ndarray:
    """Row order by stream, then by `order_by` (each stream's rows are already nearly in
    that order in the files, which the sort exploits)."""
    return np.lexsort((order_by, streams))
