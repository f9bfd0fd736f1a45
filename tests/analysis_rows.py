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
from sixnines.spark_jobs import agent_rows, delivery, histograms, run_merge

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


def run_in(tmp_path: Path, rows: list[tuple], expected: delivery.Expected | None = None,
           agents: list[dict[str, Any]] | None = None, **manifest: Any) -> run_merge.AnalysedRun:
    """A run of these rows, written in a folder of its own under tmp_path (default
    manifest: the rows' agents by id, so agent_index is their sorted order)."""
    folder = tmp_path / f"run{len(list(tmp_path.iterdir()))}"
    folder.mkdir()
    return write_run(folder, rows, agents=agents, expected=expected, **manifest)


def tiny_rows() -> list[tuple]:
    """1 producer (id 1, seqs 0..4, seq 0 warm-up), 2 consumers, hand-picked mishaps."""
    rows = [("p", "producer", 1, s, 100 * s, 100 * s + 5, None, None, s == 0) for s in range(5)]
    # consumer a: seq 0 (warm-up), 1, 3, 2, 2 (dup, reordered), 4, plus unexpected (7, 1)
    for i, s in enumerate([0, 1, 3, 2, 2, 4]):
        rows.append(("a", "consumer", 1, s, 100 * s, 100 * s + 5, 100 * s + 50, i, s == 0))
    rows.append(("a", "consumer", 7, 1, 100, 105, 160, 6, False))
    # consumer b: seq 1, 2, 2 (dup, in order), 4; seq 3 lost
    for i, s in enumerate([1, 2, 2, 4]):
        rows.append(("b", "consumer", 1, s, 100 * s, 100 * s + 5, 100 * s + 20, i, False))
    return rows


def tiny_agents(clocks: dict[str, dict] | None = None) -> list[dict[str, Any]]:
    """The manifest entries of tiny_rows' agents, in their agent_index order (a, b, p),
    with these clocks."""
    agents: list[dict[str, Any]] = [
        {"id": "a", "role": "consumer"}, {"id": "b", "role": "consumer"},
        {"id": "p", "role": "producer", "first_id": 1}]
    for agent in agents:
        if clocks and agent["id"] in clocks:
            agent["clock"] = clocks[agent["id"]]
    return agents


def tiny_run(tmp_path: Path, clocks: dict[str, dict] | None = None, **manifest: Any
             ) -> run_merge.AnalysedRun:
    """A run of tiny_rows, its agents' clocks and manifest fields given."""
    return run_in(tmp_path, tiny_rows(), agents=tiny_agents(clocks), **manifest)


def rows_of(run: run_merge.AnalysedRun) -> dict[str, agent_rows.Rows]:
    """Each agent's rows as the passes read them (classified, clock-paired)."""
    return {agent.agent_id: agent_rows.read_rows(agent) for agent in run_merge.agent_files([run])}


def by_metric(run: run_merge.AnalysedRun) -> dict[str, list[int]]:
    """Each metric's measured values over all the run's agents, sorted."""
    found: dict[str, list[int]] = {}
    for rows in rows_of(run).values():
        for metric, values in histograms.metric_values(rows, run.load, rows.measured).items():
            found.setdefault(metric, []).extend(values.tolist())
    return {metric: sorted(values) for metric, values in found.items() if values}
