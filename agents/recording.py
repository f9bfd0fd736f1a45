"""Streaming recording: records move to disk while the run goes, in chunks, so an agent's
memory is bounded by its buffers whatever the run's length (docs/design.md, "Files").

The loops (agents.streams) fill column buffers preallocated and touched before the start.
A full buffer — or, for a receiver, one open for `CHUNK_NS` — is a closed chunk: the loop
hands it to the agent's `Recorder` (one small message on a socket) and goes on in the next
free buffer of its pool. The buffers are shared memory; the recorder's writer process
(agents.chunk_writer) writes each chunk as its own file and gives the buffer back: a
receiver's to its free list, a sender's refilled with the next piece of its schedule (the
writer owns the schedules from the fork on). A process, not a thread: a writer thread took
the GIL from the loop tens of times per chunk, and send-lag p99 at 1M msg/s went from
~0.1 ms to 2-4 ms (docs/performance.md, "Streaming recording").

When a receiver has no free buffer (the writer fell that far behind: a slow disk, a
starved CPU) its pool grows by one, allocated in the loop (a stall the receive times show)
and kept; a sender with no piece ready waits for the writer to make one (a stall its send
lag shows). Either way the agent's log and manifest entry say so (`recording.behind`).
Dropping records instead would turn a slow disk into messages the analysis counts as lost.

`SIXNINES_CHUNK_ROWS` sets the largest chunk (rows, DEFAULT_CHUNK_ROWS by default); 0
records the whole run in one chunk written after the loop (the in-memory path, kept for
the A/B and for hosts where a writer process cannot run).
"""

from __future__ import annotations

import json
import math
import mmap
import os
import socket
import sys
from collections import deque
from collections.abc import Callable
from pathlib import Path

import numpy as np

from sixnines.agents.artifacts import described
from sixnines.agents.chunk_writer import (
    HANDOFF,
    RECYCLED,
    REPLY,
    ChunkWriter,
    Describe,
    fork_writer,
    start_epoch,
)
from sixnines.agents.schedule import NS, Pieces, touched
from sixnines.formats.chunks import read_index
from sixnines.formats.layout import CHUNK_INDEX, HLOG_FILE

DEFAULT_CHUNK_ROWS = 1 << 19  # ~0.2 s at 3M msg/s: four buffers stay within ~140 MB
CHUNK_ROWS = int(os.environ.get("SIXNINES_CHUNK_ROWS", DEFAULT_CHUNK_ROWS))
CHUNK_NS = NS  # a chunk is closed after about a second at most
POOL_BUFFERS = 4  # per pool when streaming: one filling, one being written, two ready
RECEIPT_ROWS = 1 << 14  # a receiver's buffers hold at least this many rows (bursts)
NEVER = 1 << 62
CACHE_LINE = 64


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


def receipt_rows(expected: int, span_ns: int, held_ns: int = 0) -> int:
    """A receiver's buffer for `expected` deliveries over `span_ns` (every connection's):
    about a second's worth, at least RECEIPT_ROWS for bursts after a stall; the whole
    run's with 5 % and 1024 to spare when chunks are off (beyond it: overflow). A consumer
    held for `held_ns` while a backlog builds gets buffers that hold the backlog between
    them: it comes at once when the consumer goes."""
    held = expected * min(held_ns, span_ns) // max(span_ns, 1)
    return chunk_rows(int(expected * 1.05) + 1024, expected * NS / max(span_ns, 1),
                      max(RECEIPT_ROWS, -(-held // POOL_BUFFERS)))


class Columns:
    """A buffer's columns, `capacity` rows each: in memory of its own shared with the writer
    process (a memfd, handed over once) when chunks stream, plain arrays otherwise."""

    def __init__(self, capacity: int, dtypes: tuple[type, ...], shared: bool,
                 fd: int = -1) -> None:
        self.fd = -1
        if not shared or capacity == 0:
            self.arrays = [touched(capacity, dtype) for dtype in dtypes]
            return
        sizes = [_aligned(capacity * np.dtype(dtype).itemsize) for dtype in dtypes]
        total = max(sum(sizes), 1)
        if fd < 0:  # the agent's side: new memory, touched now (not in the loop)
            fd = os.memfd_create("sixnines-chunk", os.MFD_CLOEXEC)
            os.ftruncate(fd, total)
            self.fd = fd
        memory = mmap.mmap(fd, total)
        self.arrays, at = [], 0
        for dtype, size in zip(dtypes, sizes, strict=True):
            self.arrays.append(np.frombuffer(memory, dtype, capacity, at))
            at += size
        if self.fd >= 0:
            for array in self.arrays:
                array.fill(0)


def _aligned(size: int) -> int:
    """`size` rounded up to a cache line, so each column after it starts aligned: an int64
    column after an odd number of int32 rows was unaligned, and the loop's scalar writes
    through a memoryview refuse unaligned items ("unsupported format =q")."""
    return -(-size // CACHE_LINE) * CACHE_LINE


class Piece:
    """One buffer of a sender's schedule: intended times filled ahead, send times stamped
    by the loop; rows `start` .. `start + length` of its stream."""

    def __init__(self, pool: PiecePool, capacity: int, fd: int = -1,
                 chunk_id: int | None = None) -> None:
        self.pool = pool
        self.columns = Columns(capacity, (np.int64, np.int64), pool.shared, fd)
        self.intended, self.sent = self.columns.arrays
        self.intended_at = self.intended.data  # scalar access without numpy overhead
        self.sent_at = self.sent.data
        if chunk_id is None:
            chunk_id = pool.recorder.track(self) if pool.recorder is not None else -1
        self.id = chunk_id
        self.start = 0
        self.length = 0  # filled from the schedule
        self.rows = 0  # sent, when handed over


class PiecePool:
    """A sender's schedule in buffers reused in turn (one holding the whole schedule when
    no recorder writes it: a stream on its own, as tests and benchmarks drive one).

    Until the writer process is forked the agent fills pieces; from then on the writer
    does (its copy of the schedule is the one that goes on) and the agent takes them as
    they come back (`returned`)."""

    def __init__(self, schedule: Pieces, rows: int, producer_id: int,
                 recorder: Recorder | None) -> None:
        self.schedule = schedule
        self.rows = rows
        self.producer_id = producer_id
        self.recorder = recorder
        self.shared = recorder is not None and streaming()
        self.id = recorder.register(self) if recorder is not None else -1
        self.t0 = 0
        self.pieces = [Piece(self, rows) for _ in range(pool_buffers() if recorder else 1)]
        self.ready = deque(piece for piece in self.pieces if self.refill(piece))
        self.behind = 0  # times the loop waited for the writer to make a piece

    @property
    def count(self) -> int:
        return self.schedule.count

    def first(self) -> Piece:
        return self.ready.popleft() if self.ready else self._end(0)

    def arm(self, t0: int) -> None:
        """Make the filled pieces absolute; later ones are made so (before the start)."""
        self.t0 = t0
        for piece in self.pieces:
            piece.intended[: piece.length] += t0

    def turn(self, piece: Piece, rows: int) -> Piece | None:
        """Hand a sent piece to the recorder and return the next (an empty one when the
        schedule is done); None when nothing records pieces (keep the whole one)."""
        recorder = self.recorder
        if recorder is None:
            return None
        self.close(piece, rows)
        end = piece.start + piece.length
        if end >= self.count:
            return self._end(end)
        if not self.ready:  # only when streaming: otherwise one piece holds the schedule
            recorder.collect()
            if not self.ready:
                self.behind += 1
                while not self.ready:
                    recorder.collect(wait=True)
        return self.ready.popleft()

    def close(self, piece: Piece, rows: int) -> None:
        """Hand over what was sent of `piece` (at the end, or when it is done)."""
        if self.recorder is not None and rows:
            piece.rows = rows
            self.recorder.put(piece)

    def returned(self, piece: Piece, start: int, length: int) -> None:
        """The writer gave `piece` back, filled with rows `start` .. `start + length`."""
        piece.start, piece.length, piece.rows = start, length, 0
        if length:
            self.ready.append(piece)

    def mirror(self, chunk_id: int, fd: int) -> Piece:
        return Piece(self, self.rows, fd, chunk_id)

    def refill(self, piece: Piece) -> int:
        """Fill `piece` with the schedule's next rows; how many (0: the schedule is done)."""
        n = self.schedule.fill(piece.intended)
        piece.start, piece.length, piece.rows = self.schedule.made - n, n, 0
        if n:
            piece.intended[:n] += self.t0
        return n

    def _end(self, at: int) -> Piece:
        """An empty piece past the schedule's end (the stream has nothing left to send)."""
        piece = Piece(self, 0, chunk_id=-1)
        piece.start = at
        return piece


RECEIPT_DTYPES = (np.int32, np.int64, np.int64, np.int64, np.int64, np.int32)


class Receipts:
    """One buffer of a receiver's columns; its rows are receipts `start` .. of the agent."""

    def __init__(self, pool: ReceiptPool, capacity: int, fd: int = -1,
                 chunk_id: int | None = None) -> None:
        self.pool = pool
        self.capacity = capacity
        self.columns = Columns(capacity, RECEIPT_DTYPES, pool.shared, fd)
        (self.producer_id, self.seq, self.intended, self.sent, self.recv,
         self.consumer_id) = self.columns.arrays
        self.views = [column.data for column in self.columns.arrays]
        if chunk_id is None:
            chunk_id = pool.recorder.track(self) if pool.recorder is not None else -1
        self.id = chunk_id
        self.start = 0
        self.rows = 0


class ReceiptPool:
    """A receiver's column buffers, reused in turn (one for the whole run when nothing
    records chunks: then arrivals beyond it are counted as overflow)."""

    def __init__(self, capacity: int, recorder: Recorder | None) -> None:
        self.capacity = capacity
        self.recorder = recorder
        self.shared = recorder is not None and streaming()
        self.id = recorder.register(self) if recorder is not None else -1
        buffers = pool_buffers() if recorder else 1
        self.free = deque(Receipts(self, capacity) for _ in range(buffers))
        self.behind = 0  # buffers added because none was free

    def first(self) -> Receipts:
        return self.free.popleft()

    def turn(self, box: Receipts, rows: int) -> Receipts | None:
        """Hand a closed buffer to the recorder and return a free one (None: nothing
        records chunks)."""
        if self.recorder is None:
            return None
        self.close(box, rows)
        if not self.free and self.shared:
            self.recorder.collect()
        try:
            return self.free.popleft()
        except IndexError:
            self.behind += 1
            return Receipts(self, self.capacity)

    def close(self, box: Receipts, rows: int) -> None:
        if self.recorder is not None and rows:
            box.rows = rows
            self.recorder.put(box)

    def returned(self, box: Receipts, start: int, length: int) -> None:
        self.free.append(box)

    def mirror(self, chunk_id: int, fd: int) -> Receipts:
        return Receipts(self, self.capacity, fd, chunk_id)

    def refill(self, box: Receipts) -> int:
        return 0


class WriterGone(RuntimeError):
    """The writer process ended during the run: nothing more can be recorded."""


class Recorder:
    """An agent's recording: closed chunks to the writer process when they stream (or kept
    and written after the loop), and the account of it for the agent's results.

    `describe` turns a chunk into its message columns and hlog series (the role knows
    what its rows mean); `behind` says how often the pools had no buffer ready."""

    def __init__(self, out_dir: Path, describe: Describe, warmup_ns: int, label: str,
                 behind: Callable[[], int]) -> None:
        self.out_dir = Path(out_dir)
        self.writer = ChunkWriter(self.out_dir, describe, warmup_ns, label)
        self.behind = behind
        self.pools: list[PiecePool | ReceiptPool] = []
        self.buffers: list[Piece | Receipts] = []
        self.kept: list[Piece | Receipts] = []  # the in-memory path's chunks
        self.link: socket.socket | None = None
        self.pid = 0
        self.problems: list[str] = []
        self.report: dict = {}
        if streaming():
            ChunkWriter.warm()  # inherited by the writer process

    def register(self, pool: PiecePool | ReceiptPool) -> int:
        """A pool whose buffers this records (before `start`: the writer takes copies)."""
        if self.link is not None:
            raise RuntimeError("a pool registered after the recorder started")
        self.pools.append(pool)
        return len(self.pools) - 1

    def track(self, buffer: Piece | Receipts) -> int:
        self.buffers.append(buffer)
        return len(self.buffers) - 1

    def start(self, t0_ns: int) -> None:
        """Start recording from t0: fork the writer process when chunks stream (call it
        before any other thread of the agent starts)."""
        if streaming():
            self.link, self.pid = fork_writer(self.writer, self.pools, t0_ns)
        else:
            self.writer.open(start_epoch(t0_ns))

    def put(self, chunk: Piece | Receipts) -> None:
        """A closed chunk: to the writer now when chunks stream, after the loop otherwise."""
        if self.link is None:
            self.kept.append(chunk)
            return
        fds = [chunk.columns.fd] if chunk.columns.fd >= 0 else []
        try:
            socket.send_fds(self.link, [HANDOFF.pack(chunk.pool.id, chunk.id, chunk.rows,
                                                     chunk.start)], fds)
        except OSError as exc:
            self._gone(exc)
            return
        if fds:  # the writer has it now
            os.close(chunk.columns.fd)
            chunk.columns.fd = -1

    def collect(self, wait: bool = False) -> None:
        """Take back the buffers the writer has written (without waiting, or at least one)."""
        flags = 0 if wait else socket.MSG_DONTWAIT
        link = self.link
        assert link is not None  # only a recording whose chunks stream collects
        while True:
            try:
                data = link.recv(REPLY.size, flags)
            except BlockingIOError:
                return
            except OSError as exc:
                data = b""
                self._gone(exc)
            if not data:
                raise WriterGone("the writer process ended during the run; records from "
                                 "then on are not kept")
            _, chunk_id, start, length = REPLY.unpack(data)
            buffer = self.buffers[chunk_id]
            buffer.pool.returned(buffer, start, length)
            if wait:
                return

    def finish(self) -> tuple[dict, dict, list[str]]:
        """After the loop (its last chunks handed over): everything written, the log
        closed; returns ({file: {sha256, bytes}}, out-of-range per tag, problems)."""
        if self.link is None:
            for chunk in self.kept:
                self.writer.write(chunk)
            self.report = self.writer.close()
        else:
            self.report = self._end_writer()
        if self.behind():
            print(f"warning: the writer fell behind {self.behind()} time(s) during the run "
                  "(buffers added or waited for in the measuring loop)", file=sys.stderr)
        files = {entry["file"]: {"sha256": entry["sha256"], "bytes": entry["bytes"]}
                 for entry in read_index(self.out_dir)}
        kept = [name for name in (HLOG_FILE, CHUNK_INDEX) if (self.out_dir / name).is_file()]
        return (files | described(self.out_dir, tuple(kept)),
                self.report.get("out_of_range", {}),
                self.problems + self.report.get("problems", []))

    def lost(self) -> str | None:
        """Why records the loop made are not on disk (after `finish`): the writer process
        gone, or chunks it could not write; None when every one is there."""
        gone = self.problems or self.report.get("unwritten")
        return gone[0] if gone else None

    def summary(self) -> dict:
        """For the agent's manifest entry: chunks written, times the writer was behind."""
        return {"chunks": self.report.get("chunks", 0), "behind": self.behind()}

    def _end_writer(self) -> dict:
        """Tell the writer the run is over and wait for its report (buffers it still gives
        back are ignored)."""
        link = self.link
        assert link is not None  # `finish` asks it when chunks stream
        link.setblocking(True)
        report: dict = {}
        try:
            link.send(HANDOFF.pack(-1, -1, 0, 0))
            while data := link.recv(1 << 20):
                if data[:1] != RECYCLED:
                    report = json.loads(data[REPLY.size:])
                    break
        except OSError as exc:
            self._gone(exc)
        link.close()
        _, status = os.waitpid(self.pid, 0)
        if not report:
            self.problems.append(f"the writer process ended without its report "
                                 f"({_exit_status(status)}): chunks it had not written "
                                 "are lost")
        return report

    def _gone(self, exc: OSError) -> None:
        if not self.problems:
            self.problems.append(f"the writer process is gone ({exc}): chunks from then "
                                 "on are not written")


def _exit_status(status: int) -> str:
    if os.WIFSIGNALED(status):
        return f"killed by signal {os.WTERMSIG(status)}"
    return f"exit code {os.waitstatus_to_exitcode(status)}"
