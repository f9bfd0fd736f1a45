"""What the tests of results directories from elsewhere share: canaries outside a run that
say whether anything opened them, and a run whose controller died with an agent's files
still on an SSH host of the test bed (what `sixnines collect` fetches).

A canary is watched with inotify (Linux, through ctypes): the kernel reports every open,
read, write, change and removal of a watched file, and of the files of a watched folder,
whoever does it (this process, `sixnines` in a subprocess, its Spark JVM). Looking at a
path without opening it (stat, readlink, resolving links) is no event: that is what a
check of where a path leads does.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import errno
import hashlib
import json
import os
import shutil
import struct
from pathlib import Path

from tests.faults.support import edit_manifest
from tests.integration.testbed import Testbed

IN_ACCESS, IN_MODIFY, IN_ATTRIB, IN_OPEN = 0x001, 0x002, 0x004, 0x020
IN_MOVED_FROM, IN_MOVED_TO, IN_CREATE, IN_DELETE = 0x040, 0x080, 0x100, 0x200
IN_DELETE_SELF, IN_MOVE_SELF, IN_NONBLOCK = 0x400, 0x800, os.O_NONBLOCK
TOUCHED = (IN_ACCESS | IN_MODIFY | IN_ATTRIB | IN_OPEN | IN_MOVED_FROM | IN_MOVED_TO
           | IN_CREATE | IN_DELETE | IN_DELETE_SELF | IN_MOVE_SELF)
EVENT = struct.Struct("iIII")

REMOTE_WORKDIR = Path("/var/tmp/sixnines")  # the SSH launcher's default; the bed shares it
REMOTE_AGENT = "consumer-0"


class Canaries:
    """Watches every file and folder under some folders (set up, then never touched by the
    test until `touched` is asked)."""

    def __init__(self, *folders: Path) -> None:
        libc = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)
        self._libc = libc
        self._fd = libc.inotify_init1(IN_NONBLOCK)
        assert self._fd >= 0, os.strerror(ctypes.get_errno())
        self._watched: dict[int, Path] = {}
        for folder in folders:
            for path in [folder, *folder.rglob("*")]:
                if not path.is_symlink():
                    self._watch(path)

    def _watch(self, path: Path) -> None:
        descriptor = self._libc.inotify_add_watch(self._fd, os.fsencode(path), TOUCHED)
        assert descriptor >= 0, f"{path}: {os.strerror(ctypes.get_errno())}"
        self._watched[descriptor] = path

    def touched(self) -> list[str]:
        """What happened to a watched path since the last call, one line each."""
        found = []
        while True:
            try:
                data = os.read(self._fd, 1 << 16)
            except BlockingIOError:
                return found
            offset = 0
            while offset < len(data):
                watch, mask, _, size = EVENT.unpack_from(data, offset)
                name = data[offset + EVENT.size: offset + EVENT.size + size].rstrip(b"\0")
                offset += EVENT.size + size
                path = self._watched.get(watch, Path("?")) / os.fsdecode(name)
                found.append(f"{path}: event {mask:#x}")

    def close(self) -> None:
        os.close(self._fd)


def fifo(path: Path) -> Path:
    """A FIFO at `path`: a reader that opens it waits for a writer that never comes."""
    os.mkfifo(path)
    return path


def nobody_reads(path: Path) -> bool:
    """Whether no process has the FIFO at `path` open for reading (one waiting in open()
    counts: opening its other end without waiting then succeeds)."""
    try:
        os.close(os.open(path, os.O_WRONLY | os.O_NONBLOCK))
    except OSError as error:
        return error.errno == errno.ENXIO
    return False


def sha256_hex(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def snapshot(*folders: Path) -> set[Path]:
    """Every path under the folders (links as links): what must still be there."""
    return {path for folder in folders for path in [folder, *folder.rglob("*")]}


def contact(bed: Testbed) -> dict:
    """How the manifest of a run on the bed's first host says to reach it."""
    host = bed.hosts[0]
    return {"kind": "ssh", "address": host.address, "port": 22, "user": host.user,
            "key": str(host.key), "known_hosts": str(host.known_hosts),
            "workdir": str(REMOTE_WORKDIR)}


def remote_folder(run_dir: Path, key: str, agent: str = REMOTE_AGENT) -> Path:
    """Where sixnines puts a remote agent's files of `run_dir` on the bed's hosts:
    `<workdir>/runs/<key>/<stamp>/<run id>/agents/<agent>` (key: the scenario part, one
    per test so parallel sessions never meet)."""
    return REMOTE_WORKDIR / "runs" / key / "stamp" / run_dir.name / "agents" / agent


def left_on_host(run_dir: Path, bed: Testbed, key: str, agent: str = REMOTE_AGENT) -> Path:
    """Make `run_dir` (a copy of a recorded run) what a controller killed mid-collection
    leaves: an agent's files (the consumer's, or the broker monitor's) still in its folder
    on the bed's first host, its manifest `running`, the agent's entry saying where they
    are. The remote folder."""
    remote = remote_folder(run_dir, key, agent)
    remote.mkdir(parents=True)
    for path in (run_dir / "agents" / agent).iterdir():
        if path.name != "agent.log":  # the controller's copy of its stderr stays here
            shutil.move(path, remote / path.name)

    def left(manifest: dict) -> None:
        entry = next(a for a in [*manifest["agents"], manifest["monitor"]] if a["id"] == agent)
        for field in ("artifacts", "t0_ns", "sent", "received", "status"):
            entry.pop(field, None)
        entry.update(host=bed.hosts[0].name, status="running", files_at={"dir": str(remote)})
        manifest.update(status="running", hosts={bed.hosts[0].name: {"contact": contact(bed)}})
    edit_manifest(run_dir, left)
    return remote


def manifest_of(run_dir: Path) -> dict:
    return json.loads((run_dir / "manifest.json").read_text())
