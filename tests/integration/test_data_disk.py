"""A broker's data disk (launchers.data_disk) made, frozen, filled and released as real
commands on real loop-mounted filesystems, as the fault holders and the guard run them:
a frozen disk blocks a write until it is thawed, a filled one has no room for one, and
none of the steps touches a directory that is not the run's own disk, above all the
filesystem around it; a release thaws before it unmounts (a frozen filesystem unmounted
would stay frozen, its loop device held) and leaves no mount, loop device or file."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from sixnines.orchestrator.launchers.data_disk import FILLER, lacking
from tests.faults.disks import small_disk

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(bool(lacking()), reason=f"a data disk needs {', '.join(lacking())}"),
]

SIZE = 48 * 1024**2
BLOCKED_S = 0.5  # a write into a frozen disk is still waiting this long after it began


def step(*args: str | Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "sixnines.orchestrator.launchers.data_disk",
                           *map(str, args)], capture_output=True, text=True, timeout=120)


def loop_devices_of(image: Path) -> list[str]:
    """Loop devices still backed by `image` (a frozen filesystem unmounted keeps one)."""
    found = []
    for backing in Path("/sys/block").glob("loop*/loop/backing_file"):
        if backing.read_text().strip().removesuffix(" (deleted)") == str(image):
            found.append(backing.parent.parent.name)
    return found


@pytest.fixture
def disk(tmp_path):
    """(image, data directory) of a disk made for the test; released whatever happened."""
    image, mount = tmp_path / "broker.disk", tmp_path / "broker"
    made = step("make", image, mount, SIZE)
    assert made.returncode == 0, made.stderr
    try:
        yield image, mount
    finally:
        step("release", image, mount)


def writer(path: Path) -> subprocess.Popen:
    """A process writing `path` and syncing it to disk, as a broker's log does."""
    return subprocess.Popen([sys.executable, "-c", (
        "import os, sys; f = os.open(sys.argv[1], os.O_WRONLY | os.O_CREAT, 0o600); "
        "os.write(f, b'x' * 4096); os.fsync(f)"), str(path)])


def test_a_disk_is_made_of_its_own_file_mounted_at_the_data_directory(disk):
    image, mount = disk
    assert os.path.ismount(mount)
    assert len(loop_devices_of(image)) == 1
    assert os.stat(mount).st_dev != os.stat(mount.parent).st_dev
    assert os.stat(image).st_blocks * 512 >= SIZE  # allocated now, not as the broker writes
    assert sorted(os.listdir(mount)) == ["lost+found"]
    assert shutil.disk_usage(mount).total < SIZE  # its own size, less ext4's tables


def test_a_frozen_disk_blocks_a_write_until_it_is_thawed(disk):
    image, mount = disk
    assert step("freeze", image, mount).returncode == 0
    try:
        blocked = writer(mount / "log")
        time.sleep(BLOCKED_S)
        assert blocked.poll() is None  # still waiting on the frozen disk
        elsewhere = writer(mount.parent / "beside")  # the filesystem around it goes on
        assert elsewhere.wait(10) == 0
    finally:
        thawed = step("thaw", image, mount)
    assert thawed.returncode == 0, thawed.stderr
    assert blocked.wait(10) == 0
    assert (mount / "log").stat().st_size == 4096
    assert step("thaw", image, mount).returncode == 0  # thawing a thawed disk: nothing


def test_a_full_disk_has_no_room_for_a_write_until_it_is_emptied(disk):
    image, mount = disk
    assert step("fill", image, mount).returncode == 0
    assert writer(mount / "log").wait(10) != 0  # ENOSPC
    assert shutil.disk_usage(mount).free == 0
    assert step("unfill", image, mount).returncode == 0
    assert not (mount / FILLER).exists()
    assert writer(mount / "log").wait(10) == 0


@pytest.mark.parametrize("what", ["freeze", "fill"])
def test_nothing_but_the_runs_own_disk_is_frozen_or_filled(tmp_path, what):
    """Another run's disk, a directory inside the disk, the filesystem around it, one
    beside it, and the disk's directory once released: each is refused, saying why, and
    stays writable and as full as it was. All of it on a tmpfs of the test's own, so
    that a check that failed would freeze or fill nothing but that (tmpfs cannot be
    frozen at all: the refusal's words are what tell)."""
    with small_disk(tmp_path / "around", "128M") as around:
        image, mount = around / "broker.disk", around / "broker"
        other_image, other = around / "other.disk", around / "other"
        for made in (step("make", image, mount, SIZE), step("make", other_image, other, SIZE)):
            assert made.returncode == 0, made.stderr
        (mount / "inside").mkdir()
        beside = around / "beside"
        beside.mkdir()
        try:
            for target in (other, mount / "inside", around, beside):
                refused(what, image, target)
            assert step("release", image, mount).returncode == 0
            refused(what, image, mount)
        finally:
            for disk in ((image, mount), (other_image, other)):
                step("release", *disk)


def refused(what: str, image: Path, target: Path) -> None:
    free = shutil.disk_usage(target).free
    done = step(what, image, target)
    assert done.returncode == 1
    assert f"{target} is not the run's data disk (not mounted from {image})" in done.stderr
    assert writer(target / "probe").wait(10) == 0
    assert shutil.disk_usage(target).free >= free - 1024**2  # not filled
    assert not (target / FILLER).exists()


def test_a_frozen_full_disk_is_released_thawed_emptied_unmounted_and_removed(disk):
    image, mount = disk
    (mount / "kept").write_text("broker data")
    assert step("fill", image, mount).returncode == 0
    assert step("freeze", image, mount).returncode == 0
    released = step("release", image, mount)
    assert released.returncode == 0, released.stderr
    assert not os.path.ismount(mount)
    assert loop_devices_of(image) == []  # thawed before unmounting: nothing held
    assert not image.exists()
    assert os.listdir(mount) == []  # an empty directory, which the broker's stop removes


def test_a_release_that_keeps_leaves_the_files_as_a_plain_directory(disk):
    image, mount = disk
    (mount / "appendonlydir").mkdir()
    (mount / "appendonlydir" / "log.aof").write_text("broker data")
    assert step("fill", image, mount).returncode == 0
    assert step("release", image, mount, "--keep").returncode == 0
    assert not os.path.ismount(mount) and not image.exists()
    assert (mount / "appendonlydir" / "log.aof").read_text() == "broker data"
    assert sorted(os.listdir(mount)) == ["appendonlydir"]  # no filler, no lost+found


def test_a_disk_is_not_made_over_files_or_without_room(tmp_path):
    busy = tmp_path / "busy"
    busy.mkdir()
    (busy / "theirs").write_text("not ours to hide")
    done = step("make", tmp_path / "busy.disk", busy, SIZE)
    assert done.returncode == 1 and "is a mount point or not empty already" in done.stderr
    assert (busy / "theirs").exists() and not (tmp_path / "busy.disk").exists()
    with small_disk(tmp_path / "small", "16M") as small:
        done = step("make", small / "broker.disk", small / "broker", SIZE)
        assert done.returncode == 1
        assert f"no room for a data disk of {SIZE:,} bytes beside {small / 'broker'}" \
            in done.stderr
        assert not (small / "broker.disk").exists()
        assert shutil.disk_usage(small).used < 1024**2  # nothing left taking its room
