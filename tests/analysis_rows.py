"""Tiny runs written from hand-made rows for the analysis' unit tests: the per-agent passes
(spark_jobs.run_merge) read real record files, as they read any agent's, in this process
(run_merge.in_process: no Spark).

A row is (agent_id, role, producer_id, seq, intended_ns, sent_ns, recv_ns, rx_index,
warmup), optionally followed by consumer_id and size. Without a consumer_id, a consumer's
is its agent_index (one connection per consumer agent) and a requester's reply carries
its producer id; a sent row has none.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from sixnines.formats.layout import chunk_name
from sixnines.formats.manifest import SCHEMA_VERSION, Manifest
from sixnines.formats.records import MESSAGES
from sixnines.formats.vocabulary import Load, Role
from sixnines.spark_jobs import delivery, run_merge

COLUMNS = ("agent_id", "role", "producer_id", "seq", "intended_ns", "sent_ns", "recv_ns",
           "rx_index", "warmup", "consumer_id", "size")


def _agents(rows: Sequence[tuple]) -> list[dict[str, Any]]:
    """Manifest entries of the rows' agents, sorted by id (their agent_index order)."""
    roles: dict[str, str] = {}
    for row in rows:
        roles.setdefault(row[0], row[1])
    return [{"id": agent_id, "role": roles[agent_id]} for agent_id in sorted(roles)]


def _record(row: tuple, agent_index: int) -> dict[str, Any]:
    record = dict(zip(COLUMNS, row, strict=False))
    if "consumer_id" not in record:
        if record["role"] == Role.CONSUMER:
            record["consumer_id"] = agent_index
        elif record["recv_ns"] is not None:
            record["consumer_id"] = record["producer_id"]
        else:
            record["consumer_id"] = None
    record.setdefault("size", 100)
    return record


def write_run(folder: Path, rows: Sequence[tuple], agents: list[dict[str, Any]] | None = None,
              expected: delivery.Expected | None = None, load: str = Load.OPEN_LOOP,
              window: int = 100, chunk_rows: int | None = None, **manifest: Any
              ) -> run_merge.AnalysedRun:
    """A run of these rows: each agent's rows in chunk files under folder/agents/<id>/
    (one, or of `chunk_rows` rows each), in the rows' order; `agents`: the manifest's
    entries (default: the rows' agents, by id), whose order gives agent_index;
    `manifest`: further manifest fields."""
    entries = agents if agents is not None else _agents(rows)
    written = Manifest.model_validate({"schema_version": SCHEMA_VERSION, "agents": entries,
                                       **manifest})
    index = {entry["id"]: i for i, entry in enumerate(entries)}
    messages = {}
    for entry in entries:
        mine = [_record(row, index[entry["id"]]) for row in rows if row[0] == entry["id"]]
        if not mine:
            continue
        size = chunk_rows or len(mine)
        paths = []
        for number, start in enumerate(range(0, len(mine), size)):
            path = folder / "agents" / entry["id"] / chunk_name(number)
            path.parent.mkdir(parents=True, exist_ok=True)
            part = mine[start:start + size]
            pq.write_table(pa.table({field.name: [r.get(field.name) for r in part]
                                     for field in MESSAGES}, schema=MESSAGES), path)
            paths.append(path)
        messages[entry["id"]] = (Role(entry["role"]), paths)
    return run_merge.AnalysedRun(written, messages, window, load, expected or delivery.Expected())


def figures(*runs: run_merge.AnalysedRun) -> list[run_merge.RunFigures]:
    """The runs' figures, all analysed together, in this process."""
    return run_merge.figures(run_merge.in_process, list(runs))


def plain(value: Any) -> Any:
    """Figures as comparable plain values."""
    if dataclasses.is_dataclass(value):
        return {f.name: plain(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, dict):
        return {key: plain(item) for key, item in value.items()}
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, list | tuple):
        return [plain(item) for item in value]
    return value
