"""Streaming recording: records move to disk while the run goes, in chunks, so an agent's
memory is bounded by its buffers whatever the run's length (docs/design.md, "Files").

The loops (agents.streams) fill column buffers preallocated and touched before the start.
A full buffer — or, for a receiver, one open for `CHUNK_NS` — is a closed chunk: the loop
hands it to the agent's `Recorder` (one queue put) and goes on in the next free buffer of
its pool. The recorder's writer thread writes each chunk as its own parquet file
(formats.chunks: whole through formats.atomic, listed in the fsynced `chunks.jsonl`),
appends the intervals it completes to `latency.hlog`, and gives the buffer back: a
receiver's to its free list, a sender's refilled with the next piece of its schedule.
Parquet, zstd, hashing and numpy's large loops release the GIL; the thread holds it for
short Python steps between them (SWITCH_INTERVAL_S says how soon it gets it back).

When no buffer is free (the writer fell that far behind: a slow disk, a starved CPU) the
loop never waits: the pool grows by one buffer, allocated in the loop (a stall the send
lag shows) and kept, and the agent's log and manifest entry say so (`recording`).
Dropping records instead would turn a slow disk into messages the analysis counts as lost;
growing keeps every record and bounds memory by how far the writer lags, not the run.

`SIXNINES_CHUNK_ROWS` sets the largest chunk (rows); 0, the default, records the whole run
in one chunk written at the end (the in-memory path); 524288 streams about a second per chunk
at 500k msg/s. Streaming stays opt-in until it passes
the hot-path A/B (docs/performance.md, "Streaming recording"): on a quiet machine the
writer thread raised send-lag p99 at 1M msg/s from ~50-110 us to 2-4 ms.
"""

from __future__ import annotations

import errno
import hashlib
import math
import os
import queue
import shutil
import sys
import threading
import time
from collections import deque
from collections.abc import Callable
from pathlib import Path
from typing import Protocol

import numpy as np

from sixnines.agents.artifacts import described, encoded_messages
from sixnines.agents.schedule import NS, Pieces, touched
from sixnines.formats.atomic import WriteFailure, atomic_path
from sixnines.formats.chunks import CHUNK_INDEX, append_entry, chunk_name
from sixnines.formats.hlog import IntervalLog
from sixnines.formats.records import HLOG_FILE, MESSAGES

CHUNK_ROWS = int(os.environ.get("SIXNINES_CHUNK_ROWS", 0))
CHUNK_NS = NS  # a chunk is closed after about a second at most
POOL_BUFFERS = 4  # per pool when streaming: one filling, one being written, two ready
#: How long a thread waiting for the GIL waits before the busy loop must hand it over
#: (CPython's default is 5 ms): the writer takes it tens of times per chunk, and at 5 ms a
#: turn it fell behind 8 chunks a second. Each handover costs the loop the same either way.
SWITCH_INTERVAL_S = 0.0002
RECEIPT_ROWS = 1 << 14  # a receiver's buffers hold at least this many rows (bursts)
HLOG_LATENESS_NS = 5 * NS  # an interval is written once records 5 s past its end are in
NEVER = 1 << 62
#: Left free on the agent's filesystem: chunks are the bulk of what an agent writes, and a
#: full disk must cost records, never the account of the run (done.json, the rest of the
#: interval log, the controller's manifest).
RESERVE_BYTES = 1 << 20


def streaming() -> bool:
    """Whether records go to disk chunk by chunk while the run goes (SIXNINES_CHUNK_ROWS);
    read at each call so a test can switch it on by setting CHUNK_ROWS."""
    return CHUNK_ROWS > 0


def pool_buffers() -> int:
    """Buffers per pool: one holding the whole run unless chunks stream."""
    return POOL_BUFFERS if streaming() else 1


def chunk_rows(count: int, per_second: float | None, least: int = 1) -> int:
    """Rows per buffer for `count` records coming at `per_second` (None: unknown): about
    a second's worth but at least `least`, at most CHUNK_ROWS; the whole run when
    CHUNK_ROWS is 0."""
    if not streaming():
        return max(count, 1)
    second = CHUNK_ROWS if per_second is None else math.ceil(per_second * CHUNK_NS / NS)
    return max(1, min(count, CHUNK_ROWS, max(least, second)))


def producer_rows(sends: int, rate: float | None) -> int:
    """A schedule piece of one connection sending `sends` at `rate` (None: `rate: max`):
    a piece is sent in about a second, which closes its chunk without a clock reading."""
    return chunk_rows(sends, rate)


def receipt_rows(expected: int, span_ns: int) -> int:
    """A receiver's buffer for `expected` deliveries over `span_ns` (every connection's):
    about a second's worth, at least RECEIPT_ROWS for bursts after a stall; the whole
    run's with 5 % and 1024 to spare when chunks are off (beyond it: overflow)."""
    return chunk_rows(int(expected * 1.05) + 1024, expected * NS / max(span_ns, 1),
                      RECEIPT_ROWS)


class Chunk(Protocol):
    rows: int  # rows to write
    pool: Pool


class Pool(Protocol):
    def recycle(self, chunk: Chunk) -> None: ...


Describe = Callable[[Chunk], tuple[dict, dict]]  # chunk -> (message columns, hlog series)


class Piece:
    """One buffer of a sender's schedule: intended times filled ahead, send times stamped
    by the loop; rows `base` .. `base + length` of its stream."""

    def __init__(self, pool: PiecePool, capacity: int) -> None:
        self.pool = pool
        self.intended = touched(capacity)
        self.sent = touched(capacity)
        self.intended_at = memoryview(self.intended)  # scalar access without numpy overhead
        self.sent_at = memoryview(self.sent)
        self.base = 0
        self.length = 0  # filled from the schedule
        self.rows = 0  # sent, when handed over


class PiecePool:
    """A sender's schedule in buffers reused in turn (one holding the whole schedule when
    nothing records it piecewise: a requester, whose replies join its requests)."""

    def __init__(self, schedule: Pieces, rows: int, producer_id: int,
                 recorder: Recorder | None) -> None:
        self.schedule = schedule
        self.rows = rows
        self.producer_id = producer_id
        self.recorder = recorder
        self.t0 = 0
        self.lock = threading.Lock()  # the schedule is made in order by one thread at a time
        self.pieces = [Piece(self, rows) for _ in range(pool_buffers() if recorder else 1)]
        self.ready = deque(piece for piece in self.pieces if self._fill(piece))
        self.grown = 0

    @property
    def count(self) -> int:
        return self.schedule.count

    def first(self) -> Piece:
        return self.ready.popleft() if self.ready else self._end()

    def arm(self, t0: int) -> None:
        """Make the filled pieces absolute; later ones are made so (before the start)."""
        with self.lock:
            self.t0 = t0
            for piece in self.pieces:
                piece.intended[: piece.length] += t0

    def turn(self, piece: Piece, rows: int) -> Piece | None:
        """Hand a sent piece to the recorder and return the next (an empty one when the
        schedule is done); None when nothing records pieces (keep the whole one)."""
        if self.recorder is None:
            return None
        self.close(piece, rows)
        try:
            return self.ready.popleft()
        except IndexError:
            return self._grow()

    def close(self, piece: Piece, rows: int) -> None:
        """Hand over what was sent of `piece` (at the end, or when it is done)."""
        if self.recorder is not None and rows:
            piece.rows = rows
            self.recorder.put(piece)

    def recycle(self, chunk: Chunk) -> None:
        """The writer's part once a piece is on disk: fill it with the next piece."""
        with self.lock:
            if self._fill(chunk):
                self.ready.append(chunk)

    def _grow(self) -> Piece:
        with self.lock:
            if self.ready:  # filled meanwhile
                return self.ready.popleft()
            piece = Piece(self, self.rows)
            if not self._fill(piece):
                return self._end()
            self.pieces.append(piece)
            self.grown += 1
            return piece

    def _end(self) -> Piece:
        """An empty piece past the schedule's end (the stream has nothing left to send)."""
        piece = Piece(self, 0)
        piece.base = self.schedule.made
        return piece

    def _fill(self, piece: Piece) -> bool:
        n = self.schedule.fill(piece.intended)
        if n:
            piece.intended[:n] += self.t0
            piece.base, piece.length, piece.rows = self.schedule.made - n, n, 0
        return n > 0


class Receipts:
    """One buffer of a receiver's columns; its rows are receipts `first` .. of the agent."""

    def __init__(self, pool: ReceiptPool, capacity: int) -> None:
        self.pool = pool
        self.capacity = capacity
        self.producer_id = touched(capacity, np.int32)
        self.seq = touched(capacity)
        self.intended = touched(capacity)
        self.sent = touched(capacity)
        self.recv = touched(capacity)
        self.consumer_id = touched(capacity, np.int32)
        self.views = [memoryview(column) for column in (
            self.producer_id, self.seq, self.intended, self.sent, self.recv, self.consumer_id)]
        self.first = 0
        self.rows = 0


class ReceiptPool:
    """A receiver's column buffers, reused in turn (one for the whole run when nothing
    records chunks: then arrivals beyond it are counted as overflow)."""

    def __init__(self, capacity: int, recorder: Recorder | None) -> None:
        self.capacity = capacity
        self.recorder = recorder
        buffers = pool_buffers() if recorder else 1
        self.free = deque(Receipts(self, capacity) for _ in range(buffers))
        self.grown = 0

    def first(self) -> Receipts:
        return self.free.popleft()

    def turn(self, box: Receipts, rows: int) -> Receipts | None:
        """Hand a closed buffer to the recorder and return a free one (None: nothing
        records chunks)."""
        if self.recorder is None:
            return None
        self.close(box, rows)
        try:
            return self.free.popleft()
        except IndexError:
            self.grown += 1
            return Receipts(self, self.capacity)

    def close(self, box: Receipts, rows: int) -> None:
        if self.recorder is not None and rows:
            box.rows = rows
            self.recorder.put(box)

    def recycle(self, chunk: Chunk) -> None:
        self.free.append(chunk)


class Recorder:
    """An agent's writer thread: closed chunks to files, the index and the interval log.

    `describe` turns a chunk into its message columns and hlog series (the role knows
    what its rows mean); `grown` reports how many buffers the pools had to add."""

    def __init__(self, out_dir: Path, describe: Describe, warmup_ns: int, label: str,
                 grown: Callable[[], int]) -> None:
        self.out_dir = Path(out_dir)
        self.describe = describe
        self.warmup_ns = warmup_ns
        self.label = label
        self.grown = grown
        self.queue: queue.SimpleQueue[Chunk | None] = queue.SimpleQueue()
        self.thread = threading.Thread(target=self._work, name="recorder", daemon=True)
        self.files: dict[str, dict] = {}
        self.failures: list[str] = []
        self.unwritten: list[str] = []  # one line per chunk that could not be written
        self.chunks = 0
        self.log: IntervalLog | None = None
        self.index = -1
        self._warm()

    @staticmethod
    def _warm() -> None:
        """Take every path a chunk takes once, before `ready`: the first parquet write in a
        process spends ~200 ms initialising pyarrow, which in the writer thread stalled
        the loop ~90 ms just after the first chunk closed."""
        none = dict.fromkeys(MESSAGES.names)
        hashlib.sha256(encoded_messages(none | {"seq": np.zeros(1, np.int64)} | {
            name: np.zeros(1, MESSAGES.field(name).type.to_pandas_dtype())
            for name in ("producer_id", "size", "intended_ns", "sent_ns", "warmup")}))
        log = IntervalLog(os.devnull, start_epoch_s=0.0, warmup_ns=0)
        log.add({"latency": (np.zeros(1, np.int64), np.ones(1, np.int64))})
        log.close()

    def start(self, t0_ns: int) -> None:
        """Open the index and the interval log (stamped from t0) and start writing."""
        # the hlog's StartTime is the wall-clock instant of t0 on this host
        start_epoch_s = (time.time_ns() - (time.perf_counter_ns() - t0_ns)) / 1e9
        try:
            self.out_dir.mkdir(parents=True, exist_ok=True)
            self.index = os.open(self.out_dir / CHUNK_INDEX,
                                 os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
            self.log = IntervalLog(self.out_dir / HLOG_FILE, start_epoch_s=start_epoch_s,
                                   warmup_ns=self.warmup_ns, comment=f"sixnines {self.label}",
                                   lateness_ns=HLOG_LATENESS_NS)
        except OSError as exc:
            self.failures.append(str(WriteFailure.of(self.out_dir / CHUNK_INDEX, exc)))
        if streaming():  # only a streaming writer needs the GIL promptly
            sys.setswitchinterval(SWITCH_INTERVAL_S)
        self.thread.start()

    def put(self, chunk: Chunk) -> None:
        self.queue.put(chunk)

    def finish(self) -> tuple[dict, dict, list[str]]:
        """After the loop (its last chunks handed over): write what is queued, close the
        log; returns ({file: {sha256, bytes}}, out-of-range per tag, problems)."""
        self.queue.put(None)
        self.thread.join()
        out_of_range: dict = {}
        if self.log is not None:
            try:
                out_of_range = self.log.close()
            except OSError as exc:
                self.failures.append(str(WriteFailure.of(self.out_dir / HLOG_FILE, exc)))
        if self.index >= 0:
            os.close(self.index)
        kept = [name for name in (HLOG_FILE, CHUNK_INDEX) if (self.out_dir / name).is_file()]
        if self.grown():
            print(f"warning: the writer fell behind; {self.grown()} buffer(s) were added during "
                  "the run (allocated in the measuring loop)", file=sys.stderr)
        problems = list(self.failures)
        if self.unwritten:
            problems.append(f"{self.unwritten[0]}" + (
                f"; {len(self.unwritten):,} chunks not written in all" if len(self.unwritten) > 1
                else ""))
        return self.files | described(self.out_dir, tuple(kept)), out_of_range, problems

    def summary(self) -> dict:
        """For the agent's manifest entry: chunks written, buffers added during the run."""
        return {"chunks": self.chunks, "grown_buffers": self.grown()}

    def _work(self) -> None:
        while (chunk := self.queue.get()) is not None:
            try:
                self._write(chunk)
            except Exception as exc:  # a bug here must not silently stop the recording
                self.failures.append(f"recording a chunk failed: {type(exc).__name__}: {exc}")
            chunk.pool.recycle(chunk)

    def _write(self, chunk: Chunk) -> None:
        columns, series = self.describe(chunk)
        self.chunks += 1
        name = chunk_name(self.chunks)
        path = self.out_dir / name
        data = encoded_messages(columns)  # in memory: hashed and written in one piece each
        facts = {name: {"sha256": hashlib.sha256(data).hexdigest(), "bytes": data.size}}
        try:
            if shutil.disk_usage(self.out_dir).free < data.size + RESERVE_BYTES:
                raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
            with atomic_path(path) as temp:
                temp.write_bytes(data)
            append_entry(self.index, {"file": name, "rows": chunk.rows, **facts[name]})
        except OSError as exc:
            failure = WriteFailure.of(path, exc)
            self.unwritten.append(f"{failure} ({chunk.rows:,} records lost)")
            print(failure, file=sys.stderr)
            return
        self.files |= facts
        if self.log is not None:
            try:
                self.log.add(series)
                self.log.sync()
            except OSError as exc:
                self.failures.append(str(WriteFailure.of(self.out_dir / HLOG_FILE, exc)))
                self.log = None

