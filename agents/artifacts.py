"""Writing an agent's results after the run: latency.hlog, messages.parquet, checksums
(cpu.parquet: agents.cpu), and done.json, the agent's own account of its run.

Runs once the measuring loop is over (never inside it), also after a failure, so whatever
was recorded reaches the disk. Each file is written whole or not at all (formats.atomic);
one that cannot be written (a full disk) is a problem naming it, and the others are still
written, the smallest and most telling first. done.json is the `done` message the agent
sends, kept beside the files: when the message does not arrive, or the controller is gone
before it does, the agent's results are found from it (formats.done reads it).
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from sixnines.formats import protocol as p
from sixnines.formats.atomic import WriteFailure, atomic_path, write_atomically
from sixnines.formats.hlog import write_hlog
from sixnines.formats.integrity import sha256_of
from sixnines.formats.layout import DONE_FILE, HLOG_FILE, MESSAGES_FILE
from sixnines.formats.records import MESSAGES

DELTA_COLUMNS = ("seq", "intended_ns", "sent_ns", "recv_ns", "rx_index")
DICTIONARY_COLUMNS = ("producer_id", "size", "consumer_id", "warmup")


def _column(values: np.ndarray | None, field: pa.Field, rows: int) -> pa.Array:
    if values is None:
        return pa.nulls(rows, type=field.type)
    if isinstance(values, np.ma.MaskedArray):
        return pa.array(values.data, type=field.type, mask=np.ma.getmaskarray(values))
    return pa.array(values, type=field.type)


def encoded_messages(columns: dict[str, np.ndarray | None]) -> pa.Buffer:
    """One row per message as parquet bytes; a column may be None (all null) or masked
    (null where masked). Timestamps and counters are delta-encoded, the few-valued columns
    dictionary-encoded, then zstd at its fastest level: 3.6 bytes a producer row and 6.1 a
    consumer row at ~40-50 ns each, where zstd alone took 7-12 bytes at 130-170 ns. No
    column statistics: nothing reads them, and they cost 5-7 ns a row."""
    seq = columns["seq"]
    assert seq is not None  # every row has its sequence number
    rows = len(seq)
    arrays = [_column(columns[field.name], field, rows) for field in MESSAGES]
    sink = pa.BufferOutputStream()
    pq.write_table(pa.Table.from_arrays(arrays, schema=MESSAGES), sink, compression="zstd",
                   compression_level=1,
                   # pyarrow takes the columns to encode so (its docs); its stubs say a bool
                   use_dictionary=list(DICTIONARY_COLUMNS),  # type: ignore[arg-type]
                   write_statistics=False,
                   column_encoding=dict.fromkeys(DELTA_COLUMNS, "DELTA_BINARY_PACKED"))
    return sink.getvalue()


def write_messages(path: Path, columns: dict[str, np.ndarray | None]) -> None:
    """messages.parquet (or a chunk of it) at `path`: see `encoded_messages`."""
    path.write_bytes(encoded_messages(columns))


def write_files(out_dir: Path, writers: dict[str, Callable[[Path], object]]
                ) -> tuple[dict, list[str]]:
    """Write each file whole, in order, by its writer (given the path to write to); returns
    ({file: {sha256, bytes}} of those written, a problem for each that could not be)."""
    files: dict[str, dict] = {}
    problems: list[str] = []
    for name, write in writers.items():
        path = out_dir / name
        try:
            out_dir.mkdir(parents=True, exist_ok=True)
            with atomic_path(path) as temp:
                write(temp)
        except OSError as exc:
            problems.append(str(WriteFailure.of(path, exc)))
            continue
        files |= described(out_dir, (name,))
    return files, problems


def write_all(out_dir: Path, columns: dict, series: dict, *, t0_ns: int, warmup_ns: int,
              label: str) -> tuple[dict, dict, list[str]]:
    """Write the interval log, then the messages; returns ({file: {sha256, bytes}}, the
    out-of-range report per tag, a problem per file that could not be written)."""
    # the hlog's StartTime is the wall-clock instant of t0 on this host
    start_epoch_s = (time.time_ns() - (time.perf_counter_ns() - t0_ns)) / 1e9
    out_of_range: dict = {}

    def hlog(path: Path) -> None:
        out_of_range.update(write_hlog(path, start_epoch_s=start_epoch_s, series=series,
                                       warmup_ns=warmup_ns, comment=f"sixnines {label}"))

    files, problems = write_files(out_dir, {
        HLOG_FILE: hlog, MESSAGES_FILE: lambda path: write_messages(path, columns)})
    return files, out_of_range, problems


def keep_done(out_dir: Path, done: p.Done) -> p.Done:
    """Keep `done` beside the files (done.json); if even that cannot be written, the
    message to send says so."""
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
        write_atomically(out_dir / DONE_FILE, p.encode(done) + "\n")
    except OSError as exc:
        failure = WriteFailure.of(out_dir / DONE_FILE, exc)
        return dataclasses.replace(done, status="partial",
                                   problems=[*done.problems, f"{done.agent_id}: {failure}"])
    return done


def described(out_dir: Path, names: tuple[str, ...]) -> dict:
    """{file: {sha256, bytes}} as `done` announces them, for the controller to verify."""
    return {name: {"sha256": sha256_of(out_dir / name), "bytes": (out_dir / name).stat().st_size}
            for name in names}
