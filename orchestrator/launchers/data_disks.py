"""The controller's end of a broker's data disk (a system's `data_disk`): made on the
broker's host before the broker starts, released when it has stopped, and frozen or
filled by a fault (`disk-stall`, `disk-full`) through a holder (launchers.held_faults).
The steps themselves run on the host (launchers.data_disk), which checks before each that
the directory is still the run's own disk.

From the moment it is made until it is released, the host's guard holds its release: a
controller that dies, however, leaves the disk thawed, emptied of any filler, unmounted
and removed (its files are not kept then: the release must be quick and certain).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path

from sixnines.orchestrator.launchers.base import Launcher, LaunchError
from sixnines.orchestrator.launchers.held_faults import HeldFault

MODULE = "sixnines.orchestrator.launchers.data_disk"
STEP_TIMEOUT_S = 300.0  # mkfs writes every table of the filesystem; a release may copy
#: What a disk fault does on the host: its steps there, and its tool for the record.
FAULT_STEPS = {"disk-stall": ("freeze", "thaw", "FIFREEZE (fsfreeze)"),
               "disk-full": ("fill", "unfill", "fallocate")}

logger = logging.getLogger(__name__)


@dataclass
class DataDisk:
    """The broker's data directory `mount`, a filesystem of its own held in `image`."""

    launcher: Launcher
    image: str
    mount: str
    size: int
    guard_token: int | None = None

    @classmethod
    def make(cls, launcher: Launcher, image: str, mount: str, size: int) -> DataDisk:
        """Made and mounted at `mount` (LaunchError saying why it cannot be, with nothing
        left behind)."""
        disk = cls(launcher, image, mount, size)
        # held before it exists: a controller dying while it is made still releases it
        disk.guard_token = launcher.on_controller_exit(disk._step("release"))
        done = launcher.run(disk._step("make", str(size)), timeout_s=STEP_TIMEOUT_S)
        if done.code != 0:
            disk._forget()
            raise LaunchError("no data disk for the broker: "
                              f"{done.output.strip()[-400:]}")
        return disk

    def release(self, keep: bool) -> None:
        """Thawed, emptied, unmounted and removed; with `keep`, its files stay at the data
        directory (copied out first)."""
        done = self.launcher.run(self._step("release", *(["--keep"] if keep else [])),
                                 timeout_s=STEP_TIMEOUT_S)
        if done.code != 0:
            logger.warning("host %s: the broker's data disk was not released: %s",
                           self.launcher.host, done.output.strip()[-400:])
            return  # the guard's release stays registered: it tries again at the end
        self._forget()

    def arm(self, action: str, name: str, for_s: float, log_path: Path) -> HeldFault:
        """A holder for `disk-stall` or `disk-full` of this disk, ready to apply."""
        apply, undo, tool = FAULT_STEPS[action]
        return HeldFault(self.launcher, name, ([self._step(apply)], [self._step(undo)]),
                         for_s, log_path, tool)

    def describe(self) -> dict:
        """For the manifest's broker facts."""
        return {"data_disk": {"bytes": self.size, "filesystem": "ext4, loop-mounted",
                              "image": self.image}}

    def _step(self, step: str, *more: str) -> list[str]:
        return [self.launcher.python, "-m", MODULE, step, self.image, self.mount, *more]

    def _forget(self) -> None:
        if self.guard_token is not None:
            self.launcher.cancel_on_exit(self.guard_token)
            self.guard_token = None
