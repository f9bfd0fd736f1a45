"""Result files are written whole or not at all, and a failed write names its file.

Every file sixnines produces (agents' artifacts, manifests, summaries, reports) goes through
here: the content is written to a temporary file beside the target, flushed to disk, and
renamed over the target in one step, so a reader — or a later `sixnines report` — never
sees half a file. When the disk is full (or anything else fails), the temporary file is
removed and `WriteFailure` says which file could not be written and how much room was left.
"""

from __future__ import annotations

import contextlib
import os
import shutil
from collections.abc import Iterator
from pathlib import Path

from sixnines.formats.errors import SixninesError

TEMP_SUFFIX = ".partial"


class WriteFailure(SixninesError, OSError):
    """A result file that could not be written; `str()` names the file and the reason."""

    def __init__(self, path: Path, cause: OSError) -> None:
        super().__init__(cause.errno, f"cannot write {path}: {_reason(path, cause)}")
        self.path = path

    def __str__(self) -> str:
        return self.strerror or ""  # set by __init__

    @classmethod
    def of(cls, path: Path, exc: OSError) -> WriteFailure:
        """`exc` as the failure to write `path` (itself when it already is one)."""
        return exc if isinstance(exc, WriteFailure) else cls(path, exc)


def _reason(path: Path, cause: OSError) -> str:
    """The OS's reason in its own words (writers such as pyarrow wrap it in theirs), and
    the room left on the filesystem that refused."""
    reason = os.strerror(cause.errno) if cause.errno else (cause.strerror or str(cause))
    with contextlib.suppress(OSError):
        where = _existing_parent(path)
        free = shutil.disk_usage(where).free
        reason += f" ({human_bytes(free)} free on {_mount_point(where)})"
    return reason


def _existing_parent(path: Path) -> Path:
    for parent in (path, *path.parents):
        if parent.exists():
            return parent
    return Path.cwd()


def _mount_point(path: Path) -> Path:
    path = path.resolve()
    while not os.path.ismount(path):
        path = path.parent
    return path


def human_bytes(count: float) -> str:
    """1023 B, 1.5 KB, 2.0 MB, 3.1 GB, 4.2 TB (binary multiples)."""
    for unit, power in (("TB", 4), ("GB", 3), ("MB", 2), ("KB", 1)):
        if count >= 1024**power:
            return f"{count / 1024**power:,.1f} {unit}"
    return f"{int(count)} B"


@contextlib.contextmanager
def atomic_path(path: Path) -> Iterator[Path]:
    """A temporary path to write `path`'s content to (by any writer: pyarrow, open());
    renamed over `path` when the block ends without error, removed otherwise."""
    path = Path(path)
    temp = path.with_name(path.name + TEMP_SUFFIX)
    try:
        temp.unlink(missing_ok=True)  # a stale one, or a link put there: never written through
        yield temp
        with open(temp, "rb+") as written:
            os.fsync(written.fileno())
        os.replace(temp, path)
    except OSError as exc:
        temp.unlink(missing_ok=True)
        raise WriteFailure.of(path, exc) from exc
    except BaseException:
        temp.unlink(missing_ok=True)
        raise


def write_atomically(path: Path, content: str | bytes) -> Path:
    """Write `content` (text as UTF-8) to `path` whole, or raise `WriteFailure`."""
    data = content.encode("utf-8") if isinstance(content, str) else content
    with atomic_path(path) as temp:
        temp.write_bytes(data)
    return Path(path)
