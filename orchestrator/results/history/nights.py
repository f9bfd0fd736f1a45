"""The nights under a history's roots: each results directory `runs` would list
(orchestrator.results.catalog), and what tells whether one changed since it was indexed.

The history reads a night's summary.json and each run's latency distribution
(`<run>/report/latency.hgrm`, or saturation_latency.hgrm in throughput mode). Two digests
cover those files:

- `file_status`: the sha256 of each file's inode, size, modification and change times
  (lstat, no byte read). Any write to a file, or a file replaced, moved in or removed,
  changes it — the change time is the kernel's and no tool sets it back — so a night whose
  status digest is as indexed is not read again. It costs a few system calls a file: a
  year of nights is checked in a fraction of a second.
- `checksum`: the sha256 of the files' names, sizes and bytes, computed when a night is
  read; a night whose status changed but whose checksum did not (copied with its times,
  touched) holds the same figures.

The manifests, read for the host and software facts, are in neither: a re-analysis
rewrites summary.json too. Every file is read through formats.run_files (inside the
night, a regular file, within a size bound): a results directory is untrusted input.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from sixnines.formats.hgrm import MAX_HGRM_BYTES
from sixnines.formats.layout import REPORT_DIR, SUMMARY_FILE, hgrm_file
from sixnines.formats.load import HEADLINE
from sixnines.formats.run_files import RefusedPath, file_under, read_bounded
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
    """The sha256 of the bytes the history reads of `night` (module docstring). A file
    that cannot be read counts as the reason it cannot, so a night whose damage changes
    is read again too."""
    digest = hashlib.sha256()
    for names, max_bytes in _files(night):
        try:
            data = read_bounded(file_under(night, *names), max_bytes)
        except FileNotFoundError:
            continue
        except (OSError, RefusedPath) as refused:
            data = b"\0refused " + str(refused).encode("utf-8", "replace")
        digest.update(f"\0{'/'.join(names)}\0{len(data)}\0".encode("utf-8", "replace"))
        digest.update(data)
    return digest.hexdigest()


def file_status(night: Path) -> str:
    """The sha256 of the status of the files the history reads of `night` (module
    docstring); nothing is opened."""
    parts = []  # hashed at once: the same digest as part by part, for less per file
    folder = f"{night}/"
    for names, _ in _files(night):
        status: tuple[int, ...] | int | None
        name = "/".join(names)
        try:
            found = os.lstat(folder + name)
            status = (found.st_ino, found.st_size, found.st_mtime_ns, found.st_ctime_ns)
        except FileNotFoundError:
            continue
        except OSError as error:
            status = error.errno
        parts.append(f"\0{name}\0{status}")
    return hashlib.sha256("".join(parts).encode("utf-8", "replace")).hexdigest()


def _files(night: Path) -> Iterator[tuple[tuple[str, ...], int]]:
    """The files the history reads of `night` (as names under it), with their bounds."""
    yield (SUMMARY_FILE,), MAX_RESULTS_SUMMARY_BYTES
    for run in _run_folders(night):
        for name in HGRM_FILES:
            yield (run, REPORT_DIR, name), MAX_HGRM_BYTES


def _run_folders(night: Path) -> list[str]:
    """The names of the folders a night holds but its report, in order (file_under checks
    each name before a file in it is read)."""
    try:
        with os.scandir(night) as entries:
            return sorted(entry.name for entry in entries
                          if entry.name != REPORT_DIR and entry.is_dir())
    except OSError:
        return []
