"""Writing closed chunks: each a parquet file of its own, a line in the fsynced index, and
the intervals it completes appended to latency.hlog (docs/design.md, "Files").

`ChunkWriter` is that work for one agent. When chunks stream it runs in the agent's writer
process (`serve`, forked by agents.recording.Recorder at the start), so encoding, hashing
and disk writes never take the GIL from the measuring loop; otherwise the agent runs it
itself after the loop, on the one whole-run chunk.

The writer process lives as long as its socket to the agent: an agent that dies (SIGKILL
included) closes it, and the writer finishes the chunks it was handed, closes the index and
the interval log, and exits — the kill costs only the chunks still open in the agent.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import json
import os
import shutil
import signal
import socket
import struct
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, NoReturn, Protocol, TypeVar

import numpy as np

from sixnines.agents.artifacts import encoded_messages
from sixnines.formats.atomic import WriteFailure, atomic_path
from sixnines.formats.chunks import append_entry
from sixnines.formats.hlog import IntervalLog
from sixnines.formats.layout import CHUNK_INDEX, HLOG_FILE, chunk_name
from sixnines.formats.records import MESSAGES
from sixnines.formats.vocabulary import Metric

NS = 1_000_000_000
HLOG_LATENESS_NS = 5 * NS  # an interval is written once records 5 s past its end are in
#: Left free on the agent's filesystem: chunks are the bulk of what an agent writes, and a
#: full disk must cost records, never the account of the run (done.json, the rest of the
#: interval log, the controller's manifest).
RESERVE_BYTES = 1 << 20
MAX_FAILURES = 20  # kept word for word; later ones are only counted

#: agent -> writer: (pool, buffer, rows, first row of the buffer in its stream); pool -1
#: ends the run. A buffer's memory descriptor rides along the first time it is handed.
HANDOFF = struct.Struct("<iiqq")
#: writer -> agent: (kind, buffer, first row, rows) — kind RECYCLED gives a buffer back
#: (a sender's refilled with its next piece), kind REPORT is followed by the writer's
#: report as JSON.
REPLY = struct.Struct("<ciqq")
RECYCLED, REPORT = b"R", b"F"


class Chunk(Protocol):
    id: int
    rows: int  # rows to write
    start: int  # the first row's index in its stream (a sender's seq, a receiver's rx_index)

    @property
    def pool(self) -> Pool[Any]: ...


#: The kind of chunk a pool holds: it refills only its own.
ChunkT = TypeVar("ChunkT", bound=Chunk)


class Pool(Protocol[ChunkT]):
    id: int

    def mirror(self, chunk_id: int, fd: int) -> ChunkT:
        """In the writer: the buffer `chunk_id` over the memory the agent shares as `fd`."""

    def refill(self, chunk: ChunkT) -> int:
        """In the writer, once `chunk` is on disk: make it ready for reuse; the rows it
        now holds (a sender's next piece of schedule)."""


Describe = Callable[[Chunk], tuple[dict, dict]]  # chunk -> (message columns, hlog series)


class ChunkWriter:
    """Closed chunks to files, the index and the interval log, for one agent.

    `describe` turns a chunk into its message columns and hlog series (the role knows
    what its rows mean)."""

    def __init__(self, out_dir: Path, describe: Describe, warmup_ns: int, label: str) -> None:
        self.out_dir = Path(out_dir)
        self.describe = describe
        self.warmup_ns = warmup_ns
        self.label = label
        self.failures: list[str] = []
        self.unwritten: list[str] = []  # the first chunk that could not be written
        self.unwritten_count = 0
        self.chunks = 0
        self.log: IntervalLog | None = None
        self.index = -1

    @staticmethod
    def warm() -> None:
        """Take every path a chunk takes once, before the agent is ready: the first parquet
        write in a process spends ~200 ms initialising pyarrow."""
        none = dict.fromkeys(MESSAGES.names)
        hashlib.sha256(encoded_messages(none | {"seq": np.zeros(1, np.int64)} | {
            name: np.zeros(1, MESSAGES.field(name).type.to_pandas_dtype())
            for name in ("producer_id", "size", "intended_ns", "sent_ns", "warmup")}))
        log = IntervalLog(os.devnull, start_epoch_s=0.0, warmup_ns=0)
        log.add({Metric.LATENCY: (np.zeros(1, np.int64), np.ones(1, np.int64))})
        log.close()

    def open(self, start_epoch_s: float) -> None:
        """Open the index and the interval log (whose StartTime is t0's wall-clock time)."""
        try:
            self.out_dir.mkdir(parents=True, exist_ok=True)
            self.index = os.open(self.out_dir / CHUNK_INDEX,
                                 os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
            self.log = IntervalLog(self.out_dir / HLOG_FILE, start_epoch_s=start_epoch_s,
                                   warmup_ns=self.warmup_ns, comment=f"sixnines {self.label}",
                                   lateness_ns=HLOG_LATENESS_NS)
        except OSError as exc:
            self._fail(str(WriteFailure.of(self.out_dir / CHUNK_INDEX, exc)))

    def write(self, chunk: Chunk) -> None:
        """One chunk to disk; a failure is kept as a problem, never raised (a bug here
        must not silently stop the recording either)."""
        try:
            self._write(chunk)
        except Exception as exc:
            self._fail(f"recording a chunk failed: {type(exc).__name__}: {exc}")

    def close(self) -> dict:
        """Close the log and the index; returns the report: out-of-range values per tag,
        problems, chunks written, and the first chunk that could not be (none: [])."""
        out_of_range: dict = {}
        if self.log is not None:
            try:
                out_of_range = self.log.close()
            except OSError as exc:
                self._fail(str(WriteFailure.of(self.out_dir / HLOG_FILE, exc)))
        if self.index >= 0:
            os.close(self.index)
            self.index = -1
        problems = list(self.failures)
        if self.unwritten:
            problems.append(self.unwritten[0] + (
                f"; {self.unwritten_count:,} chunks not written in all"
                if self.unwritten_count > 1 else ""))
        return {"out_of_range": out_of_range, "problems": problems, "chunks": self.chunks,
                "unwritten": self.unwritten[:1]}

    def _fail(self, problem: str) -> None:
        if len(self.failures) < MAX_FAILURES:
            self.failures.append(problem)

    def _write(self, chunk: Chunk) -> None:
        columns, series = self.describe(chunk)
        self.chunks += 1
        name = chunk_name(self.chunks)
        path = self.out_dir / name
        data = encoded_messages(columns)  # in memory: hashed and written in one piece each
        entry = {"file": name, "rows": chunk.rows,
                 "sha256": hashlib.sha256(data).hexdigest(), "bytes": data.size}
        try:
            if shutil.disk_usage(self.out_dir).free < data.size + RESERVE_BYTES:
                raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
            with atomic_path(path) as temp:
                temp.write_bytes(data)
            append_entry(self.index, entry)
        except OSError as exc:
            failure = WriteFailure.of(path, exc)
            self.unwritten_count += 1
            if not self.unwritten:
                self.unwritten.append(f"{failure} ({chunk.rows:,} records lost)")
            print(failure, file=sys.stderr)
            return
        if self.log is not None:
            try:
                self.log.add(series)
                self.log.sync()
            except OSError as exc:
                self._fail(str(WriteFailure.of(self.out_dir / HLOG_FILE, exc)))
                self.log = None


def start_epoch(t0_ns: int) -> float:
    """The wall-clock instant of t0 (a perf_counter reading) on this host."""
    return (time.time_ns() - (time.perf_counter_ns() - t0_ns)) / 1e9


def fork_writer(writer: ChunkWriter, pools: Sequence[Pool[Any]], t0_ns: int
                ) -> tuple[socket.socket, int]:
    """The writer process, forked now (its copies of the pools and of `writer` are the
    agent's as they are at this instant); returns the agent's end of their socket and the
    writer's pid. Fork before the agent's own threads start: the child must not inherit a
    lock another thread held (the channel's reader, already blocked on stdin, holds only
    stdin's, which the writer never uses)."""
    agent_end, writer_end = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    start_epoch_s = start_epoch(t0_ns)
    pid = os.fork()
    if pid == 0:
        agent_end.close()
        serve(writer_end, writer, pools, start_epoch_s)
    writer_end.close()
    return agent_end, pid


def serve(link: socket.socket, writer: ChunkWriter, pools: Sequence[Pool[Any]],
          start_epoch_s: float) -> NoReturn:
    """The writer process: chunks handed over `link` to disk, each buffer given back once
    written, until the agent says the run is over or is gone; then the report."""
    code = 0
    try:
        _detach(link.fileno())
        writer.open(start_epoch_s)
        mirrors: dict[int, Chunk] = {}
        while True:
            data, fds, _, _ = socket.recv_fds(link, HANDOFF.size, 1)
            if not data:
                break  # the agent is gone: what it handed over is written, then we end
            pool_id, chunk_id, rows, start = HANDOFF.unpack(data)
            if pool_id < 0:
                break
            pool = pools[pool_id]
            chunk = mirrors.get(chunk_id)
            if chunk is None:
                chunk = mirrors[chunk_id] = pool.mirror(chunk_id, fds[0])
            for fd in fds:
                os.close(fd)
            chunk.rows, chunk.start = rows, start
            writer.write(chunk)
            length = pool.refill(chunk)
            _tell(link, REPLY.pack(RECYCLED, chunk_id, chunk.start, length))
        report = json.dumps(writer.close()).encode()
        _tell(link, REPLY.pack(REPORT, -1, 0, len(report)) + report)
    except BaseException as exc:  # never let the child unwind into the agent's code
        print(f"the writer process failed: {type(exc).__name__}: {exc}", file=sys.stderr)
        code = 1
    finally:
        os._exit(code)


def _detach(keep: int) -> None:
    """Leave the agent's descriptors to the agent: the controller must see the agent's
    stdout end when the agent ends, and its broker connections close with it. stderr (the
    agent's log) stays, behind a writer of our own (another thread's lock may have been
    held at the fork)."""
    signal.signal(signal.SIGTERM, signal.SIG_IGN)  # we end when the agent does
    devnull = os.open(os.devnull, os.O_RDWR)
    os.dup2(devnull, 0)
    os.dup2(devnull, 1)
    os.closerange(3, keep)
    os.closerange(keep + 1, os.sysconf("SC_OPEN_MAX"))
    sys.stderr = open(2, "w", buffering=1, closefd=False)  # noqa: SIM115 (lives as we do)
    sys.stdout = sys.stderr


def _tell(link: socket.socket, data: bytes) -> None:
    """A reply, unless the agent is gone (then nobody waits for it)."""
    with contextlib.suppress(OSError):
        link.send(data)
