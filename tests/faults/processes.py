"""Real `sixnines` processes for the fault tests: started as a user starts them, their
output watched as it comes, their whole process tree recorded so a test can prove that
nothing outlived them (a killed parent's children are re-parented, so they must be found
before the kill)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

SCAN_S = 0.1


def parents() -> dict[int, int]:
    """pid -> parent pid of every process now."""
    found = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as stat:
                    found[int(entry)] = int(stat.read().rsplit(")", 1)[1].split()[1])
            except (OSError, ValueError, IndexError):
                continue
    return found


def descendants(pid: int) -> set[int]:
    parent_of = parents()
    found, frontier = set(), {pid}
    while frontier:
        frontier = {child for child, parent in parent_of.items() if parent in frontier} - found
        found |= frontier
    return found


def alive(pid: int) -> bool:
    """Running (a zombie waiting to be reaped counts as gone)."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return False


def command_line(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as cmdline:
            return cmdline.read().replace(b"\0", b" ").decode(errors="replace").strip()
    except OSError:
        return "?"


def still_alive_after(pids: set[int], seconds: float) -> dict[int, str]:
    """Those of `pids` still running `seconds` from now (checked until then), with their
    command lines."""
    deadline = time.monotonic() + seconds
    while (left := {pid for pid in pids if alive(pid)}) and time.monotonic() < deadline:
        time.sleep(0.05)
    return {pid: command_line(pid) for pid in left}


def pid_logging_to(log: Path) -> int | None:
    """The agent whose stderr is `log` (each agent's goes to its agent.log), not its
    recorder's writer process, which shares it: the one whose parent does not."""
    pids = pids_logging(lambda path: path == str(log))
    parent = parents()
    agents = [pid for pid in pids if parent.get(pid) not in pids]
    return agents[0] if agents else None


def writer_logging_to(log: Path) -> int | None:
    """The recorder's writer process of the agent whose stderr is `log`: the one whose
    parent shares that stderr."""
    pids = pids_logging(lambda path: path == str(log))
    parent = parents()
    writers = [pid for pid in pids if parent.get(pid) in pids]
    return writers[0] if writers else None


def pids_logging_under(run_dir: Path) -> set[int]:
    """Processes whose stderr is a file of the run (its agents, their writers, its broker)."""
    return pids_logging(lambda path: path.startswith(f"{run_dir}/"))


def pids_logging(to: Callable[[str], bool]) -> set[int]:
    found = set()
    for stderr in Path("/proc").glob("[0-9]*/fd/2"):
        try:
            if to(os.readlink(stderr)):
                found.add(int(stderr.parent.parent.name))
        except OSError:  # gone meanwhile, or not ours to read
            continue
    return found


class Sixnines:
    """`python -m sixnines ARGS` in `cwd`: stderr collected line by line as it comes,
    and every descendant ever seen remembered (`tree`)."""

    def __init__(self, *args: str, cwd: Path, env: dict[str, str] | None = None) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-m", "sixnines", *args], cwd=cwd, stdout=subprocess.PIPE,
            stderr=subprocess.PIPE, text=True, env={**os.environ, **(env or {})})
        self.lines: list[str] = []
        self.tree: set[int] = set()
        self.parent_of: dict[int, int] = {}  # pid -> parent, as seen while watching
        self._stderr = threading.Thread(target=self._read, daemon=True)
        self._stderr.start()
        self._scanner = threading.Thread(target=self._scan, daemon=True)
        self._scanner.start()

    def _read(self) -> None:
        for line in self.process.stderr:
            self.lines.append(line)

    def _scan(self) -> None:
        while self.process.poll() is None:
            self.tree |= descendants(self.process.pid)
            time.sleep(SCAN_S)

    @property
    def stderr(self) -> str:
        return "".join(self.lines)

    def wait_for(self, text: str, timeout_s: float) -> None:
        """Until `text` appears on stderr (AssertionError after `timeout_s`)."""
        deadline = time.monotonic() + timeout_s
        while not any(text in line for line in self.lines):
            assert self.process.poll() is None, f"exited before {text!r}:\n{self.stderr}"
            assert time.monotonic() < deadline, f"no {text!r} within {timeout_s} s:\n" \
                                                f"{self.stderr}"
            time.sleep(0.05)

    def wait_for_descendant(self, word: str, timeout_s: float) -> int:
        """The pid of a descendant whose command line holds `word`, once there is one."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            for pid in descendants(self.process.pid):
                if word in command_line(pid):
                    return pid
            time.sleep(0.1)
        raise AssertionError(f"no process with {word!r} within {timeout_s} s:\n{self.stderr}")

    def peak_memory(self, word: str) -> dict[int, int]:
        """pid -> peak resident bytes (VmHWM) of each descendant whose command line holds
        `word`, watched until the process exits (their parents are kept in `parent_of`)."""
        peaks: dict[int, int] = {}
        while self.process.poll() is None:
            self.parent_of |= parents()
            for pid in descendants(self.process.pid):
                if word not in command_line(pid):
                    continue
                try:
                    found = re.search(r"VmHWM:\s+(\d+) kB", Path(f"/proc/{pid}/status")
                                      .read_text())
                except OSError:
                    continue
                if found:
                    peaks[pid] = max(peaks.get(pid, 0), int(found[1]) * 1024)
            time.sleep(0.05)
        return peaks

    def snapshot(self) -> set[int]:
        """Every descendant seen so far, and those there now."""
        self.tree |= descendants(self.process.pid)
        return set(self.tree)

    def finish(self, timeout_s: float = 120) -> tuple[int, str, str]:
        """(exit code, stdout, stderr) once it has exited."""
        out = self.process.stdout.read() if self.process.stdout else ""
        code = self.process.wait(timeout_s)
        self._stderr.join(10)
        return code, out, self.stderr
