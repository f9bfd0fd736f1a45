"""The one way a name read from a run directory becomes a path (the names sixnines gives
its files are in formats.layout).

A results directory is untrusted input: people copy them between machines, attach them to
tickets and download colleagues' nightly results, and its manifest, an agent's done.json
or chunk index can be edited to name anything. So every agent id and file name read from
one must be a plain name (`name_problem`: no path separator, not `.` or `..`, no control
character, bounded length), and the path it makes under the run directory is checked,
symbolic links resolved, to stay inside the run directory and to be what it should be
(`agent_folder`, `agent_file`): a FIFO would hang a reader, a link to /dev/zero never end,
and a link to /etc/hostname would put another file's content, or its checksum, into the
figures and messages. A path refused says what it is, in one line (`RefusedPath`).

JSON files of a run are read with a size bound (formats.json_input) that grows with what
the run holds (`json_bound`): a manifest or an index lists each file once, so it cannot
be much longer than the files there call for, however long the run was.
"""

from __future__ import annotations

import os
import stat
import unicodedata
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import BinaryIO

from sixnines.formats.layout import AGENTS_DIR, REPORT_DIR

#: The longest name a Linux file system takes; sixnines' ids and file names are far shorter.
MAX_NAME = 255
#: The longest path Linux takes (a link's target is shown whole up to it).
PATH_MAX = 4096
#: What a JSON file of a run may hold besides what its folders call for (problems, notes).
BASE_BYTES = 4 << 20
#: Per folder a JSON file describes: a manifest's agent entry with its host facts,
#: versions and clock is ~3 KB.
BYTES_PER_FOLDER = 16 << 10
#: Per file in those folders: an artifact entry or an index line is ~200 bytes with the
#: longest sha256 and name sixnines writes; a name may reach MAX_NAME.
BYTES_PER_FILE = 1 << 10


class RefusedPath(ValueError):
    """A name or path of a run directory that is not used: the message is one line naming
    it and saying why. A ValueError, so a model's validator reports it as any bad value."""


def name_problem(name: object) -> str | None:
    """Why `name` is not a plain name a run directory may use (None: it is one)."""
    if not isinstance(name, str):
        return "not text"
    if name in ("", ".", ".."):
        return "not a name"
    if len(name) > MAX_NAME:
        return f"longer than {MAX_NAME} characters"
    if "/" in name or "\\" in name:
        return "holds a path separator"
    if any(unicodedata.category(char) == "Cc" for char in name):
        return "holds a control character"
    return None


def plain_name(name: str, what: str) -> str:
    """`name` itself, or RefusedPath saying why it is not a plain name (`what` it is: an
    agent id, a file name)."""
    problem = name_problem(name)
    if problem is not None:
        raise RefusedPath(f"{what} {shown(name)} {problem}: not a plain name")
    return name


def shown(value: object, limit: int = 80) -> str:
    """A value from a file for a message: quoted, control characters escaped, cut short
    past `limit` characters."""
    text = repr(value)
    return text if len(text) <= limit else f"{text[:limit - 3]}…"


def agent_folder(run_dir: Path, agent_id: str) -> Path:
    """`run_dir`/agents/`agent_id`, checked (see the module docstring); absent is fine (the
    caller knows what a missing folder means), anything but a directory is refused."""
    folder = Path(run_dir) / AGENTS_DIR / plain_name(agent_id, "agent id")
    _check(run_dir, folder, stat.S_ISDIR, "a directory")
    return folder


def agent_file(run_dir: Path, agent_id: str, name: str) -> Path:
    """The agent's file `name`, checked as `agent_folder` is; anything but a regular file
    (a FIFO, a device, a directory) is refused."""
    path = agent_folder(run_dir, agent_id) / plain_name(name, "file name")
    _check(run_dir, path, stat.S_ISREG, "a regular file")
    return path


def report_folder(run_dir: Path) -> Path:
    """`run_dir`/report, where its analysis writes and clears its files, checked as
    `agent_folder` is: a link leading out would have them written, or removed, elsewhere."""
    folder = Path(run_dir) / REPORT_DIR
    _check(run_dir, folder, stat.S_ISDIR, "a directory")
    return folder


def file_under(root: Path, *names: str) -> Path:
    """`root`/names[0]/…/names[-1], each a plain name, checked to stay inside `root`
    (links resolved) and to be a regular file where it exists: a results directory's file
    named by a run id it lists (`<run-id>/report/latency.hgrm`), where the run's own folder
    could be a link leading out."""
    path = Path(root).joinpath(*(plain_name(name, "name") for name in names))
    _check(root, path, stat.S_ISREG, "a regular file")
    return path


def read_bounded(path: Path, max_bytes: int) -> bytes:
    """The bytes of the regular file `path` (opened as `open_regular` does: a FIFO never
    hangs the reader); RefusedPath when it holds more than `max_bytes`, more than
    sixnines writes there."""
    with open_regular(path) as source:
        data = source.read(max_bytes + 1)
    if len(data) > max_bytes:
        raise RefusedPath(f"{path}: larger than {max_bytes:,} bytes, more than sixnines "
                          "writes there; not read")
    return data


def run_file(run_dir: Path, name: str) -> Path:
    """A file of the run directory itself (its manifest), checked as `agent_file` is."""
    path = Path(run_dir) / plain_name(name, "file name")
    _check(run_dir, path, stat.S_ISREG, "a regular file")
    return path


def open_regular(path: Path) -> BinaryIO:
    """`path` opened for reading if it is a regular file, else RefusedPath saying what it
    is (OSError when it cannot be opened): opened without waiting, a FIFO put in a file's
    place cannot hang the reader."""
    descriptor = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    source = open(descriptor, "rb")  # noqa: SIM115 (the caller closes it)
    mode = os.fstat(descriptor).st_mode
    if not stat.S_ISREG(mode):
        source.close()
        raise RefusedPath(f"{path}: {kind(mode)}, not a regular file; not read")
    return source


def _check(run_dir: Path, path: Path, is_expected: Callable[[int], bool], expected: str
           ) -> None:
    try:
        root, target = Path(run_dir).resolve(), path.resolve()
    except (OSError, RuntimeError) as error:  # a loop of links (RuntimeError before 3.13)
        raise RefusedPath(f"{path}: its symbolic links cannot be followed ({error})") from None
    if not target.is_relative_to(root):
        raise RefusedPath(f"{path}: {_leading_out(path, target)}; not read")
    try:
        mode = target.stat().st_mode
    except FileNotFoundError:
        return
    except OSError as error:
        raise RefusedPath(f"{path}: cannot be examined ({error.strerror})") from None
    if not is_expected(mode):
        raise RefusedPath(f"{path}: {kind(mode)}, not {expected}; not read")


def _leading_out(path: Path, target: Path) -> str:
    """How `path` leads out of its run directory: a link of its own (to what: its target is
    only looked at, never opened), or one of its folders'."""
    try:
        what = f" ({kind(target.stat().st_mode)})"
    except OSError:
        what = ""
    if path.is_symlink():
        link = shown(os.readlink(path), PATH_MAX)
        return f"a symbolic link to {link}{what}, outside the run directory"
    return f"leads outside the run directory, to {shown(str(target), PATH_MAX)}{what}"


def kind(mode: int) -> str:
    """What a file of this mode is, in words."""
    for test, words in ((stat.S_ISREG, "a regular file"), (stat.S_ISDIR, "a directory"),
                        (stat.S_ISFIFO, "a FIFO (named pipe)"),
                        (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
                        (stat.S_ISSOCK, "a socket")):
        if test(mode):
            return words
    return "not a regular file"


def json_bound(folders: Iterable[Path]) -> int:
    """The most bytes a JSON file describing the files in `folders` may hold (see the
    module docstring); folders absent count none."""
    bound = BASE_BYTES
    for folder in folders:
        try:
            with os.scandir(folder) as entries:
                bound += BYTES_PER_FOLDER + BYTES_PER_FILE * sum(1 for _ in entries)
        except OSError:
            continue
    return bound


def agent_folders(run_dir: Path) -> list[Path]:
    """The agents' folders a run directory holds (real directories inside it, links
    left out): what its manifest can describe."""
    agents = Path(run_dir) / AGENTS_DIR
    try:
        _check(run_dir, agents, stat.S_ISDIR, "a directory")
        with os.scandir(agents) as entries:
            return [Path(entry.path) for entry in entries
                    if entry.is_dir(follow_symlinks=False)]
    except (RefusedPath, OSError):
        return []
