"""Small filesystems that fill up on purpose (tmpfs, as root), for the full-disk tests."""

from __future__ import annotations

import contextlib
import errno
import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

FILLER = ".filler"
ATTEMPTS = 20


@contextlib.contextmanager
def small_disk(path: Path, size: str = "16M") -> Iterator[Path]:
    """A tmpfs of `size` mounted at `path` for the block (skips the test where mounting is
    not allowed); unmounted afterwards, whatever happened."""
    path.mkdir(parents=True, exist_ok=True)
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(path)],
                             capture_output=True, text=True, check=False)
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs (needs root): {mounted.stderr.strip()}")
    try:
        yield path
    finally:
        subprocess.run(["umount", "--lazy", str(path)], check=False)


def leave_free(disk: Path, free_bytes: int) -> None:
    """Fill `disk` until only about `free_bytes` are left (one filler file, resized). The
    run goes on writing meanwhile (chunks, logs), so a fill that finds less room than it
    measured tries again with what is left."""
    filler = disk / FILLER
    filler.unlink(missing_ok=True)
    for _ in range(ATTEMPTS):
        room = shutil.disk_usage(disk).free - free_bytes
        if room <= 0:
            return
        try:
            with open(filler, "ab") as out:
                os.posix_fallocate(out.fileno(), out.tell(), room)
            return
        except OSError as error:
            if error.errno != errno.ENOSPC:
                raise
    raise AssertionError(f"could not fill {disk}: the run keeps writing")


def free(disk: Path) -> int:
    return shutil.disk_usage(disk).free
