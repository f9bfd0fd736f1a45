"""`sixnines prune`: the raw per-message chunks of older nights removed, everything else of
them kept, so a nightly root grows by summaries and hlogs rather than by every message.

A night is a results directory (orchestrator.results.catalog); the newest `keep` of each
scenario keep their raw chunks. In an older night, each analysed run loses exactly the
chunk files its agents' chunk indexes list (formats.chunks: plain names of the chunk
pattern), each reached through formats.run_files, so a results directory from elsewhere
whose index was edited, or whose chunk is a link leading out, cannot have anything else
removed. The summary, report, hlogs, CPU samples, done.json and manifest stay; the run is
marked (formats.pruned) before a file goes, and later analyses keep its summary and say
that its raw records were pruned.

A run not analysed yet, still running, or whose manifest cannot be read is left alone, and
said so: its chunks are all there is of it.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

from sixnines.formats.chunks import read_index
from sixnines.formats.integrity import Damaged, read_manifest
from sixnines.formats.layout import REPORT_DIR, SUMMARY_FILE
from sixnines.formats.pruned import Pruned, PrunedFile, now, read_pruned, write_pruned
from sixnines.formats.run_files import (
    RefusedPath,
    agent_file,
    agent_folder,
    file_under,
    json_bound,
    report_folder,
)
from sixnines.orchestrator.results.catalog import catalog
from sixnines.orchestrator.results.store import RunsRefused, find_run_dirs


@dataclass
class NightPruned:
    """What pruning did to one night: bytes reclaimed, files removed, and what was left
    alone and why (one line each)."""

    path: Path
    reclaimed: int = 0
    files: int = 0
    left_alone: list[str] = field(default_factory=list)
    failed: list[str] = field(default_factory=list)


def nights_to_prune(root: Path, keep: int) -> tuple[list[Path], list[Path]]:
    """(kept, to prune): per scenario, its newest `keep` nights keep their raw chunks."""
    by_scenario: dict[str, list[Path]] = defaultdict(list)
    for entry in catalog(root):  # newest first
        by_scenario[entry.scenario].append(entry.path)
    kept = [path for paths in by_scenario.values() for path in paths[:keep]]
    older = [path for paths in by_scenario.values() for path in paths[keep:]]
    return kept, older


def prune_night(night: Path) -> NightPruned:
    done = NightPruned(night)
    try:
        run_dirs = find_run_dirs(night)
    except RunsRefused as refused:
        done.left_alone.append(str(refused))
        return done
    for run_dir in run_dirs:
        _prune_run(run_dir, done)
    return done


def _prune_run(run_dir: Path, done: NightPruned) -> None:
    if not _analysed(run_dir):
        done.left_alone.append(f"{run_dir}: not analysed: its raw records are all there is "
                               f"of it (`sixnines report {run_dir}` first)")
        return
    try:
        manifest = read_manifest(run_dir)
    except Damaged as damaged:
        done.left_alone.append(f"{damaged.problems[0]}: left alone")
        return
    chunks = []
    for entry in manifest.agents:
        try:
            folder = agent_folder(run_dir, entry.id)
            listed = read_index(folder, json_bound([folder]))
            chunks += [(entry.id, agent_file(run_dir, entry.id, line["file"]))
                       for line in listed]
        except RefusedPath as refused:
            done.left_alone.append(f"{refused}: left alone")
    present = [(agent, path, path.lstat().st_size) for agent, path in chunks if path.is_file()]
    if not present:
        return
    before = read_pruned(run_dir)
    files = {(e.agent, e.file): e for e in (before.files if before else ())}
    files.update({(agent, path.name): PrunedFile(agent, path.name, size)
                  for agent, path, size in present})
    # marked before anything goes (formats.pruned)
    write_pruned(run_dir, Pruned(now(), tuple(files.values())))
    for _, path, size in present:
        try:
            path.unlink()
        except OSError as error:
            done.failed.append(f"{path}: cannot be removed ({error.strerror or error})")
            continue
        done.reclaimed += size
        done.files += 1


def _analysed(run_dir: Path) -> bool:
    """Whether the run's analysis is on disk (its report's summary.json)."""
    try:
        report_folder(run_dir)
        return file_under(run_dir, REPORT_DIR, SUMMARY_FILE).is_file()
    except RefusedPath:
        return False


def prune(root: Path, keep: int) -> tuple[list[Path], list[NightPruned]]:
    """Every night under `root` but the newest `keep` of each scenario, pruned: (the nights
    kept whole, what pruning did to each older one)."""
    kept, older = nights_to_prune(root, keep)
    return kept, [prune_night(night) for night in older]
