"""The nights under a history's roots: each results directory `runs` would list
(orchestrator.results.catalog), with a checksum of the files the history reads from it.

A night's checksum is the sha256 of its summary.json and of each run's latency
distribution (`<run>/report/latency.hgrm`, or saturation_latency.hgrm in throughput
mode), each file's name and size going in before its bytes: any edit to one of them — a
re-analysis, a file cut short or replaced — changes it, so the store re-reads exactly the
nights whose figures can have changed. The manifests, read for the host and software
facts, are not in it: a re-analysis rewrites summary.json too. Every file is reached
through formats.run_files (inside the night, a regular file, within a size bound): a
results directory is untrusted input.
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass
from pathlib import Path

from sixnines.formats.hgrm import MAX_HGRM_BYTES
from sixnines.formats.layout import REPORT_DIR, SUMMARY_FILE, hgrm_file
from sixnines.formats.load import HEADLINE
from sixnines.formats.run_files import RefusedPath, file_under, name_problem, read_bounded
from sixnines.orchestrator.results.catalog import find_results_dirs
from sixnines.orchestrator.results.summaries import MAX_RESULTS_SUMMARY_BYTES

#: The distributions whose bands the history keeps: each load's headline latency.
HGRM_FILES = tuple(hgrm_file(metric) for metric in HEADLINE.values())


@dataclass(frozen=True)
class NightDir:
    """A results directory found under a root."""
    root: Path  # the root it was found under, absolute
    path: Path  # the directory itself, under `root`

    @property
    def name(self) -> str:
        """The night's id: its directory's name (a stamp, as `sixnines run` names it)."""
        return self.path.name

    @property
    def relative(self) -> str:
        """Where it is under its root ("." for a root that is itself a night)."""
        return self.path.relative_to(self.root).as_posix()


def find_nights(roots: list[Path]) -> list[NightDir]:
    """Every results directory under `roots` (absolute), each once even when roots nest."""
    found: dict[Path, NightDir] = {}
    for root in roots:
        for path in find_results_dirs(root):
            found.setdefault(path.resolve(), NightDir(root, path))
    return sorted(found.values(), key=lambda night: (str(night.root), night.relative))


def checksum(night: Path) -> str:
    """The sha256 of what the history reads of `night` (module docstring). A file that
    cannot be read counts as the reason it cannot, so a night whose damage changes is
    read again too."""
    digest = hashlib.sha256()
    _add(digest, night, (SUMMARY_FILE,), MAX_RESULTS_SUMMARY_BYTES)
    for run in _run_folders(night):
        for name in HGRM_FILES:
            _add(digest, night, (run, REPORT_DIR, name), MAX_HGRM_BYTES)
    return digest.hexdigest()


def _run_folders(night: Path) -> list[str]:
    """The names of the folders a night holds (its runs, its report), in order."""
    try:
        with os.scandir(night) as entries:
            return sorted(entry.name for entry in entries
                          if entry.name != REPORT_DIR and name_problem(entry.name) is None
                          and entry.is_dir())
    except OSError:
        return []


def _add(digest, night: Path, names: tuple[str, ...], max_bytes: int) -> None:
    try:
        data = read_bounded(file_under(night, *names), max_bytes)
    except FileNotFoundError:
        return
    except (OSError, RefusedPath) as refused:
        data = b"\0refused " + str(refused).encode("utf-8", "replace")
    digest.update(f"\0{'/'.join(names)}\0{len(data)}\0".encode("utf-8", "replace"))
    digest.update(data)
