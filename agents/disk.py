"""What an agent has written so far and what its filesystem has left, for the live view
(docs/design.md, "Recording in chunks"): the controller warns when a host will fill up before
the run ends.

Read by the progress thread once a second, so it must cost the loop next to nothing: the
chunk index is read from where the last reading stopped (an hour's index is ~500 KB,
parsed whole it would hold the GIL for milliseconds), plus one stat and one statvfs.
"""

from __future__ import annotations

import os
from pathlib import Path

from sixnines.formats.chunks import index_entry
from sixnines.formats.layout import CHUNK_INDEX, HLOG_FILE


class DiskGauge:
    def __init__(self, out_dir: Path) -> None:
        self.out_dir = Path(out_dir)
        self.offset = 0  # bytes of the index already counted
        self.chunk_bytes = 0

    def written(self) -> int:
        """Bytes of the chunks closed so far and of the interval log."""
        try:
            with open(self.out_dir / CHUNK_INDEX, "rb") as index:
                index.seek(self.offset)
                new = index.read()
        except OSError:
            new = b""
        complete = new[: new.rfind(b"\n") + 1]  # a line being appended is read next time
        self.offset += len(complete)
        for line in complete.splitlines():
            entry = index_entry(line)
            if entry is not None:
                self.chunk_bytes += entry["bytes"]
        try:
            hlog = os.stat(self.out_dir / HLOG_FILE).st_size
        except OSError:
            hlog = 0
        return self.chunk_bytes + hlog

    def free(self) -> int:
        """Bytes left for an unprivileged writer on the agent's filesystem (-1: unknown)."""
        try:
            stat = os.statvfs(self.out_dir)
        except OSError:
            return -1
        return stat.f_bavail * stat.f_frsize
