"""Files a scenario names beside itself — a content sample, a file of sizes, a rate trace:
read whole, bounded, and only when they are regular files, so a scenario that names
/dev/zero, a FIFO or a huge file gets one clear problem instead of a hang or an
exhausted memory (`validate` reads them too)."""

from __future__ import annotations

import os
import stat
from pathlib import Path

from sixnines.orchestrator.scenario.problems import shown


def read_side_file(path: Path, limit: int, named: str | None = None, kind: str = "",
                   advice: str = "") -> bytes:
    """The file's bytes, at most `limit`; ValueError saying why not ("cannot read trace
    'x': …", "'x' is larger than 4 MiB (advice)"), naming it as `named` (default: its
    path) after `kind` ("trace ")."""
    name = kind + shown(named if named is not None else str(path))
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except (OSError, ValueError) as exc:  # ValueError: a NUL byte in the path
        raise ValueError(f"cannot read {name}: {getattr(exc, 'strerror', None) or exc}") \
            from None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise ValueError(f"cannot read {name}: not a regular file (a directory, device, "
                             "FIFO or socket)")
        with open(fd, "rb", closefd=False) as file:
            data = file.read(limit + 1)
    except OSError as exc:
        raise ValueError(f"cannot read {name}: {exc.strerror or exc}") from None
    finally:
        os.close(fd)
    if len(data) > limit:
        raise ValueError(f"{name} is larger than {limit >> 20} MiB{advice}")
    return data
