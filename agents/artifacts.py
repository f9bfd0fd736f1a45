"""Writing an agent's results after the run: messages.parquet, latency.hlog, checksums
(cpu.parquet: agents.cpu).

Runs once the measuring loop is over (never inside it), also after a failure, so whatever
was recorded reaches the disk.
"""

from __future__ import annotations

import hashlib
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from agents.hlog import write_hlog
from agents.schema import HLOG_FILE, MESSAGES, MESSAGES_FILE


def _column(values: np.ndarray | None, field: pa.Field, rows: int) -> pa.Array:
    if values is None:
        return pa.nulls(rows, type=field.type)
    if isinstance(values, np.ma.MaskedArray):
        return pa.array(values.data, type=field.type, mask=np.ma.getmaskarray(values))
    return pa.array(values, type=field.type)


def write_messages(path: Path, columns: dict[str, np.ndarray | None]) -> None:
    """One row per message; a column may be None (all null) or masked (null where masked)."""
    rows = len(columns["seq"])
    arrays = [_column(columns[field.name], field, rows) for field in MESSAGES]
    pq.write_table(pa.Table.from_arrays(arrays, schema=MESSAGES), path, compression="zstd")


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as data:
        while chunk := data.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest()


def write_all(out_dir: Path, columns: dict, series: dict, *, t0_ns: int, warmup_ns: int,
              label: str) -> tuple[dict, dict]:
    """Write both files; returns ({file: {sha256, bytes}}, out-of-range report per tag)."""
    out_dir.mkdir(parents=True, exist_ok=True)
    write_messages(out_dir / MESSAGES_FILE, columns)
    # the hlog's StartTime is the wall-clock instant of t0 on this host
    start_epoch_s = (time.time_ns() - (time.perf_counter_ns() - t0_ns)) / 1e9
    out_of_range = write_hlog(out_dir / HLOG_FILE, start_epoch_s=start_epoch_s, series=series,
                              warmup_ns=warmup_ns, comment=f"sixnines {label}")
    return described(out_dir, (MESSAGES_FILE, HLOG_FILE)), out_of_range


def described(out_dir: Path, names: tuple[str, ...]) -> dict:
    """{file: {sha256, bytes}} as `done` announces them, for the controller to verify."""
    return {name: {"sha256": sha256_of(out_dir / name), "bytes": (out_dir / name).stat().st_size}
            for name in names}
