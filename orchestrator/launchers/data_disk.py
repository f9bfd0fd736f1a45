"""A broker's data directory on a filesystem of its own, on the broker's host: an ext4 made
in a file for the run and loop-mounted at the data directory (`make`), frozen and thawed
(`freeze`, `thaw`: a disk-stall), filled to the last block and emptied again (`fill`,
`unfill`: a disk-full), unmounted and removed at the end (`release`).

Safety is the point: freezing or filling the filesystem that holds the data directory would,
without a disk of its own, freeze or fill the host's root filesystem (and everything else
on it). So every step but `make` first checks that the directory is the root of a mount
whose device is a loop device backed by the run's own file (`ours`); when it is not (not
mounted, or something else mounted there), nothing is frozen or filled, and `thaw`,
`unfill` and `release` do nothing to it. Releasing thaws first: a frozen filesystem
unmounted stays frozen, its loop device held, until it is mounted again and thawed.

Only the standard library here (and `mkfs.ext4`, `mount`, `umount`): it runs on any host
with the bundle, from the fault's holder (launchers.fault_hold) and the host's guard.

    python -m sixnines.orchestrator.launchers.data_disk make IMAGE DIR BYTES
    python -m sixnines.orchestrator.launchers.data_disk {freeze,thaw,fill,unfill} IMAGE DIR
    python -m sixnines.orchestrator.launchers.data_disk release IMAGE DIR [--keep]
"""

from __future__ import annotations

import argparse
import contextlib
import errno
import fcntl
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Sequence

#: The ioctls of fsfreeze(8): _IOWR('X', 119, int) and _IOWR('X', 120, int).
FIFREEZE, FITHAW = 0xC0045877, 0xC0045878
#: The file that fills the disk (at its root, beside the broker's own files).
FILLER = ".sixnines-disk-full"
#: mkfs.ext4: no blocks kept for root (the broker runs as root: it would write on into
#: them), no discard (it would punch the file's allocation back into holes), every table
#: written now (no background initialisation writing during the run).
MKFS = ["mkfs.ext4", "-q", "-F", "-m", "0", "-E",
        "nodiscard,lazy_itable_init=0,lazy_journal_init=0"]
COMMAND_TIMEOUT_S = 60.0
UNMOUNT_TRIES_S = 5.0  # a broker killed a moment ago may still hold a file
KEPT_SUFFIX = ".kept"
#: mkfs and mount live in sbin, which a non-login shell's PATH may lack.
SEARCH_PATH = os.pathsep.join([os.environ.get("PATH", ""), "/usr/sbin", "/sbin"])
#: The programs a data disk needs, with the Debian package each comes with.
PROGRAMS = {"mkfs.ext4": "e2fsprogs", "mount": "mount", "umount": "mount"}


class DiskError(Exception):
    """One line saying what could not be done, and why."""


def ours(image: str, mount: str) -> bool:
    """Whether `mount` is the root of a filesystem on a loop device backed by `image`."""
    if not os.path.ismount(mount):
        return False
    device = os.stat(mount).st_dev
    backing = f"/sys/dev/block/{os.major(device)}:{os.minor(device)}/loop/backing_file"
    try:
        with open(backing) as file:
            backed_by = file.read().strip()
    except OSError:  # not a loop device
        return False
    return backed_by == os.path.realpath(image)


def lacking() -> list[str]:
    """What this host lacks for a data disk, in words (empty: nothing)."""
    missing = [f"{name} (Debian package {package})" for name, package in PROGRAMS.items()
               if shutil.which(name, path=SEARCH_PATH) is None]
    if os.geteuid() != 0:
        missing.insert(0, "root (it mounts a filesystem)")
    if not os.path.exists("/dev/loop-control"):
        missing.append("loop devices (/dev/loop-control)")
    return missing


def _command(argv: list[str]) -> None:
    program = shutil.which(argv[0], path=SEARCH_PATH)
    if program is None:
        raise DiskError(f"{argv[0]} not found on this host")
    try:
        done = subprocess.run([program, *argv[1:]], capture_output=True, text=True,
                              timeout=COMMAND_TIMEOUT_S, check=False)
    except subprocess.TimeoutExpired:
        raise DiskError(f"{' '.join(argv)} took over {COMMAND_TIMEOUT_S:.0f} s") from None
    if done.returncode != 0:
        why = (done.stderr or done.stdout).strip()[-300:]
        raise DiskError(f"{' '.join(argv)} (exit {done.returncode}): {why}")


def make(image: str, mount: str, size: int) -> None:
    """An ext4 of `size` bytes in `image` (allocated now, so the broker's writes never
    find the host's filesystem full first), mounted at `mount`, which must be an empty
    directory or not exist yet. Whatever was done is undone on a failure."""
    missing = lacking()
    if missing:
        raise DiskError(f"a data disk needs {', '.join(missing)} on this host")
    os.makedirs(mount, exist_ok=True)
    if os.path.ismount(mount) or os.listdir(mount):
        raise DiskError(f"{mount} is a mount point or not empty already")
    try:
        descriptor = os.open(image, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        raise DiskError(f"{image} exists already") from None
    try:
        try:
            os.posix_fallocate(descriptor, 0, size)
        except OSError as exc:
            free = shutil.disk_usage(os.path.dirname(image) or ".").free
            raise DiskError(f"no room for a data disk of {size:,} bytes beside {mount} "
                            f"({free:,} bytes free there): {exc.strerror}") from None
        finally:
            os.close(descriptor)
        _command([*MKFS, image])
        _command(["mount", "-t", "ext4", "-o", "loop,nosuid,nodev", image, mount])
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(image)
        raise


def _ioctl(mount: str, request: int) -> None:
    descriptor = os.open(mount, os.O_RDONLY | os.O_DIRECTORY)
    try:
        fcntl.ioctl(descriptor, request, 0)
    finally:
        os.close(descriptor)


def freeze(image: str, mount: str) -> None:
    """Every write to the data disk blocks until `thaw` (its dirty data written first)."""
    if not ours(image, mount):
        raise DiskError(f"{mount} is not the run's data disk (not mounted from {image}): "
                        "nothing frozen")
    _ioctl(mount, FIFREEZE)


def thaw(image: str, mount: str) -> None:
    """Writes go on; nothing to do when it is not frozen, or not mounted any more."""
    if not ours(image, mount):
        return
    try:
        _ioctl(mount, FITHAW)
    except OSError as exc:
        if exc.errno != errno.EINVAL:  # EINVAL: it was not frozen
            raise


def fill(image: str, mount: str) -> None:
    """The data disk filled to its last block by one file of our own: allocated in ever
    smaller pieces until not even one block is left (ext4 keeps about 1 MB for its own
    metadata, which no file's data reaches)."""
    if not ours(image, mount):
        raise DiskError(f"{mount} is not the run's data disk (not mounted from {image}): "
                        "nothing filled")
    stats = os.statvfs(mount)
    block = stats.f_frsize
    step, offset = stats.f_bfree * block, 0
    descriptor = os.open(os.path.join(mount, FILLER), os.O_WRONLY | os.O_CREAT, 0o600)
    try:
        while step >= block:
            try:
                os.posix_fallocate(descriptor, offset, step)
                offset += step
            except OSError as exc:
                if exc.errno != errno.ENOSPC:
                    raise
                step //= 2
    finally:
        os.close(descriptor)


def unfill(image: str, mount: str) -> None:
    """The filler removed: the room is the broker's again."""
    if ours(image, mount):
        with contextlib.suppress(FileNotFoundError):
            os.unlink(os.path.join(mount, FILLER))


def release(image: str, mount: str, keep: bool) -> None:
    """Thawed, emptied of the filler, (with `keep`, its files copied out first, to stay at
    `mount` as a plain directory), unmounted and its file removed."""
    kept = mount + KEPT_SUFFIX
    if ours(image, mount):
        thaw(image, mount)
        unfill(image, mount)
        if keep:
            shutil.copytree(mount, kept, symlinks=True, dirs_exist_ok=True,
                            ignore=shutil.ignore_patterns("lost+found"))
        _unmount(mount)
    with contextlib.suppress(FileNotFoundError):
        os.unlink(image)
    if keep and os.path.isdir(kept):
        os.rmdir(mount)
        os.rename(kept, mount)


def _unmount(mount: str) -> None:
    """Unmounted, tried again while busy (a broker killed a moment ago); detached lazily at
    last, which is safe now that it is thawed: the loop device goes with its last user."""
    deadline = time.monotonic() + UNMOUNT_TRIES_S
    while True:
        try:
            _command(["umount", mount])
            return
        except DiskError:
            if time.monotonic() >= deadline:
                break
            time.sleep(0.1)
    _command(["umount", "--lazy", mount])


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m sixnines.orchestrator.launchers.data_disk")
    parser.add_argument("step", choices=["make", "freeze", "thaw", "fill", "unfill",
                                         "release"])
    parser.add_argument("image", help="the file holding the filesystem")
    parser.add_argument("mount", help="the broker's data directory, where it is mounted")
    parser.add_argument("size", nargs="?", type=int, help="make: its size in bytes")
    parser.add_argument("--keep", action="store_true",
                        help="release: keep its files at the data directory")
    args = parser.parse_args(argv)
    image, mount = os.path.abspath(args.image), os.path.abspath(args.mount)
    try:
        if args.step == "make":
            if args.size is None:
                parser.error("make needs the size in bytes")
            make(image, mount, args.size)
        elif args.step == "release":
            release(image, mount, args.keep)
        else:
            {"freeze": freeze, "thaw": thaw, "fill": fill, "unfill": unfill}[args.step](
                image, mount)
    except (DiskError, OSError) as exc:
        print(f"data disk {mount}: {exc}", file=sys.stderr, flush=True)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
