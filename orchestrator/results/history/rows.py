"""A night's rows in the history: one per run and figure, with the run's status and
accounting, the sampling band of each percentile as `compare` computes it, and where and
with what the run ran.

A figure is a latency percentile p50 … p99.9999 or the max (of the latency the run's load
measures: open-loop latency, or saturation latency in throughput mode), or a rate
(send_rate, receive_rate). Its band (`low` … `high`) is how far sampling alone could have
moved it (orchestrator.results.compare, rule 2), from the run's .hgrm when it holds the
run's samples, else from the summary's percentiles (`band` says which); percentiles with
fewer than compare's MIN_TAIL_SAMPLES samples above them, the max and the rates have none.
A run's `case` is the values of the parameters swept in its night ("message_size=1024"),
which with scenario, system and metric names its series across nights; `unsteady` is its
summary's steadiness verdict (its own windows' p99 disagreed), empty when not measured.

A night whose scenario repeats its cases (`repeat: N`) has one run per case, as `compare`
takes it: the case's repeats merged (summary.json's repeats[].merged: their histograms
added), its band per figure the repeats' lowest to highest (`band` "repeats": the
run-to-run noise measured, sampling's included) where two or more had the figure, its
manifest facts its first repeat's, unsteady when any repeat was.

A night that cannot be read (its summary.json refused, or missing: not analysed) is one
row with its `status` (corrupt, not analysed) and `problem`, and no run; its scenario is
then its folder's (runs/<scenario>/<stamp>/), as `sixnines runs` takes it.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
from collections.abc import Iterable
from datetime import datetime
from pathlib import Path
from typing import Any

import pyarrow as pa

from sixnines.formats.layout import MANIFEST_FILE, SUMMARY_FILE
from sixnines.formats.load import latency_of, run_load
from sixnines.formats.manifest import Manifest
from sixnines.formats.run_files import RefusedPath, file_under
from sixnines.formats.status import CORRUPT
from sixnines.formats.summary import RATES_SPREAD, Figures, RunSummary, Spread
from sixnines.orchestrator.results.catalog import recorded_when
from sixnines.orchestrator.results.compare import (
    MIN_TAIL_SAMPLES,
    RATES,
    REPEATS,
    Spreads,
    Tail,
    compared_runs,
    hgrm_tails,
    run_tail,
    swept_keys,
    tail_samples,
)
from sixnines.orchestrator.results.history.nights import NightDir, checksum
from sixnines.orchestrator.results.store import FIGURE_KEYS, manifest_or_problem
from sixnines.orchestrator.results.summaries import SummaryRefused, read_results_summary

NOT_ANALYSED = "not analysed"
THROUGHPUT = "throughput"
LATENCY_UNIT, RATE_UNIT = "µs", "msg/s"
#: What identifies a host's machine and software in the fingerprint (not its boot or its
#: process's CPUs, which change from night to night on one machine).
HOST_FACTS = ("hostname", "kernel", "python", "cpu_count", "cpu_model")

#: The store's columns, in order.
COLUMN_TYPES: list[tuple[str, pa.DataType]] = [
    ("root", pa.string()),  # the root the night was found under, absolute
    ("path", pa.string()),  # the night's directory under it
    ("night", pa.string()),  # its id: the directory's name
    ("when", pa.timestamp("ms")),  # when it was recorded (its stamp; local time)
    ("checksum", pa.string()),  # of its summary.json and .hgrm files (nights.checksum)
    ("file_status", pa.string()),  # of those files' status (nights.file_status)
    ("scenario", pa.string()),
    ("run_id", pa.string()),
    ("system", pa.string()),
    ("case", pa.string()),
    ("load", pa.string()),  # open-loop | saturation
    ("metric", pa.string()),  # latency | saturation_latency | throughput
    ("figure", pa.string()),  # p50 … p99.9999, max, send_rate, receive_rate
    ("unit", pa.string()),
    ("value", pa.float64()),
    ("low", pa.float64()),  # the sampling band, absolute
    ("high", pa.float64()),
    ("band", pa.string()),  # hgrm | summary | repeats: what the band was read off
    ("samples", pa.int64()),  # the values the latency figures rest on
    ("status", pa.string()),  # the run's (ok, partial, failed, corrupt), or the night's
    ("unsteady", pa.bool_()),  # the run's steadiness: its windows' p99 disagreed (empty:
    #                            not measured; formats.summary.Steadiness)
    ("problem", pa.string()),  # why a night or a run has no figures
    ("sent", pa.int64()),
    ("received", pa.int64()),
    ("lost", pa.int64()),
    ("unknown", pa.int64()),
    ("duplicated", pa.int64()),
    ("warnings", pa.int64()),
    ("sixnines_version", pa.string()),
    ("host_fingerprint", pa.string()),  # sha256 (12 hex) of the hosts' HOST_FACTS
    ("hosts", pa.string()),  # their host names
    ("broker_kind", pa.string()),
    ("broker_recipe", pa.string()),
    ("broker_version", pa.string()),
    ("broker_note", pa.string()),
    ("driver_options", pa.string()),  # JSON: the client's settings (acks, persistent, …)
    ("durability", pa.string()),  # its label (formats.durability); empty: not recorded
]
COLUMNS = pa.schema(COLUMN_TYPES)
Rows = dict[str, list[Any]]


def empty_rows() -> Rows:
    return {name: [] for name in COLUMNS.names}


def night_rows(night: NightDir, file_status: str) -> Rows:
    """Every row of `night` (whose files' status digest is `file_status`); a night that
    cannot be read is one row saying why."""
    rows = empty_rows()
    base = {"root": str(night.root), "path": night.relative, "night": night.name,
            "checksum": checksum(night.path), "file_status": file_status}
    unread = {**base, "when": _when(night.path, []), "scenario": night.path.parent.name}
    if not os.path.lexists(night.path / SUMMARY_FILE):
        _add(rows, unread, status=NOT_ANALYSED,
             problem=f"{night.path}: no {SUMMARY_FILE}: run `sixnines report {night.path}`")
        return rows
    try:
        summary = read_results_summary(file_under(night.path, SUMMARY_FILE))
    except (RefusedPath, SummaryRefused) as refused:
        _add(rows, unread, status=CORRUPT, problem=str(refused))
        return rows
    runs = compared_runs(summary)
    cases = {case.merged.run_id: case for case in summary.repeats}
    repeats = [[one for one in summary.runs if one.run_id in cases[run.run_id].runs]
               if run.run_id in cases else [] for run in runs]
    manifests = [_manifest(night.path, (of_case or [run])[0].run_id)
                 for run, of_case in zip(runs, repeats, strict=True)]
    when = _when(night.path, [m for m in manifests if m is not None])
    swept = swept_keys(runs)
    tails = hgrm_tails(night.path, runs, in_run_folders=True)
    for run, of_case, manifest in zip(runs, repeats, manifests, strict=True):
        facts = {**base, "when": when, "scenario": summary.scenario,
                 **_run_facts(run, swept), "unsteady": _unsteady(of_case or [run]),
                 **_manifest_facts(manifest)}
        spread = cases[run.run_id].spread if run.run_id in cases else {}
        _add_run(rows, facts, run, run_tail(run, tails), spread)
    return rows


def _unsteady(runs: list[RunSummary]) -> bool | None:
    """Whether a run — or any repeat of a case: its merged figures hold every repeat's
    messages — was unsteady; None when no steadiness was measured."""
    measured = [run.steadiness.unsteady for run in runs if run.steadiness is not None]
    return any(measured) if measured else None


def _manifest(night: Path, run_id: str | None) -> Manifest | None:
    """The run's manifest, when its folder (named by the summary: untrusted) is inside
    the night and it can be read."""
    try:
        file_under(night, run_id or "", MANIFEST_FILE)
    except RefusedPath:
        return None
    return manifest_or_problem(night / (run_id or ""))[0]


def _run_facts(run: RunSummary, swept: list[str]) -> dict[str, Any]:
    return {"run_id": run.run_id, "system": run.system, "load": str(run_load(run)),
            "case": " ".join(f"{name}={_text(run.params.get(name))}" for name in swept),
            "status": run.status, "problem": run.problems[0] if run.problems else None,
            **{name: getattr(run, name) for name in
               ("sent", "received", "lost", "unknown", "duplicated")},
            "warnings": len(run.warnings), "broker_kind": run.broker.kind,
            "broker_recipe": run.broker.recipe, "broker_version": run.broker.version,
            "broker_note": run.broker.note,
            "durability": run.durability.label if run.durability is not None else None}


def _text(value: Any) -> str:
    """A parameter's value as a case names it: 1024, 1000 (not 1000.0), fixed."""
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return value if isinstance(value, str) else json.dumps(value, sort_keys=True)


def _manifest_facts(manifest: Manifest | None) -> dict[str, Any]:
    """What the run's manifest says of where and with what it ran (nothing without one)."""
    if manifest is None:
        return {}
    hosts = {"controller": manifest.controller.get("host")}
    hosts.update({f"{agent.host}": agent.host_facts for agent in manifest.agents})
    facts = {name: {key: value.get(key) for key in HOST_FACTS}
             for name, value in hosts.items() if isinstance(value, dict)}
    canonical = json.dumps([facts, manifest.broker.host], sort_keys=True, default=str)
    names = sorted({str(value["hostname"]) for value in facts.values() if value["hostname"]})
    return {"sixnines_version": manifest.sixnines.version,
            "host_fingerprint": hashlib.sha256(canonical.encode()).hexdigest()[:12],
            "hosts": ",".join(names),
            "driver_options": json.dumps(manifest.driver_options, sort_keys=True, default=str)}


def _add_run(rows: Rows, facts: dict[str, Any], run: RunSummary, tail: Tail,
             spread: Spreads) -> None:
    """The run's latency figures with their bands, then its rates; `spread`: a repeated
    case's, whose repeat-to-repeat band is a figure's band where it has one."""
    field, _ = latency_of(run)
    figures = run.metric(field) or Figures()
    metric = field.removesuffix("_us")
    for key in FIGURE_KEYS:
        value = figures.figure(key)
        low = high = band = None
        if value is not None and value > 0 and \
                tail_samples(key, figures.count) >= MIN_TAIL_SAMPLES:
            down, up = tail.half_widths(key)
            low, high = value * math.exp(-down), value * math.exp(up)
            band = "summary" if tail.coarse else "hgrm"
        _add(rows, facts, metric=metric, figure=key, unit=LATENCY_UNIT, value=value,
             samples=figures.count,
             **_repeats_band(spread.get(field, {}).get(key), low=low, high=high, band=band))
    for key in RATES:
        _add(rows, facts, metric=THROUGHPUT, figure=key, unit=RATE_UNIT,
             value=getattr(run, key), **_repeats_band(spread.get(RATES_SPREAD, {}).get(key)))


def _repeats_band(spread: Spread | None, **sampling: Any) -> dict[str, Any]:
    """The band of a figure: from the lowest to the highest of its repeats (the run-to-run
    noise measured, which holds their sampling noise too) when at least two repeats had
    it, else the `sampling` band given (low, high, band), if any."""
    if spread is None or spread.repeats < 2:
        return sampling
    return {"low": spread.min, "high": spread.max, "band": REPEATS}


def _add(rows: Rows, *facts: dict[str, Any], **more: Any) -> None:
    """One row: the columns given, the others empty."""
    given = {key: value for part in (*facts, more) for key, value in part.items()}
    for name, column in rows.items():
        column.append(given.get(name))


def table_of(parts: Iterable[Rows]) -> pa.Table:
    """The rows of several nights as one table of the store's columns."""
    merged = empty_rows()
    for rows in parts:
        for name, column in rows.items():
            merged[name].extend(column)
    return pa.Table.from_pydict(merged, schema=COLUMNS)


def _when(night: Path, manifests: list[Manifest]) -> datetime:
    """When the night was recorded (orchestrator.results.catalog), to the second."""
    return recorded_when(night, manifests).replace(microsecond=0)
