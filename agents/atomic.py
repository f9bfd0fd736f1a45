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

TEMP_SUFFIX = ".partial"


class WriteFailure(OSError):
    """A result file that could not be written; `str()` names the file and the reason."""

    def __init__(self, path: Path, cause: OSError) -> None:
        super().__init__(cause.errno, f"cannot write {path}: {_reason(path, cause)}")
        self.path = path

    def __str__(self) -> str:
        return self.strerror


def _reason(path: Path, cause: OSError) -> str:
    reason = cause.strerror or str(cause)
    with contextlib.suppress(OSError):
        free = shutil.disk_usage(_existing_parent(path)).free
        reason += f" ({_bytes(free)} free on that filesystem)"
    return reason


def _existing_parent(path: Path) -> Path:
    for parent in (path, *path.parents):
        if parent.exists():
            return parent
    return Path.cwd()


def _bytes(count: int) -> str:
    if count < 1024:
        return f"{count} B"
    scaled, unit = next((count / 1024**k, u) for k, u in ((3, "GB"), (2, "MB"), (1, "KB"))
                        if count >= 1024**k)
    return f"{scaled:,.1f} {unit}"


@contextlib.contextmanager
def atomic_path(path: Path) -> Iterator[Path]:
    """A temporary path to write `path`'s content to (by any writer: pyarrow, open());
    renamed over `path` when the block ends without error, removed otherwise."""
    path = Path(path)
    temp = path.with_name(path.name + TEMP_SUFFIX)
    try:
        yield temp
        with open(temp, "rb+") as written:
            os.fsync(written.fileno())
        os.replace(temp, path)
    except OSError as exc:
        temp.unlink(missing_ok=True)
        raise exc if isinstance(exc, WriteFailure) else WriteFailure(path, exc) from exc
    except BaseException:
        temp.unlink(missing_ok=True)
        raise


def write_atomically(path: Path, content: str | bytes) -> Path:
    """Write `content` (text as UTF-8) to `path` whole, or raise `WriteFailure`."""
    data = content.encode("utf-8") if isinstance(content, str) else content
    with atomic_path(path) as temp:
        temp.write_bytes(data)
    return Path(path)
