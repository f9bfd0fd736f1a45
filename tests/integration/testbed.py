"""The multi-host test bed (deploy/testbed/testbed.sh) for tests: N SSH hosts in network
namespaces on this machine, up for the length of a `with` block and always torn down, plus
what a test needs to prove that nothing was left behind.

Each process gets its own prefix and subnet, so parallel test sessions don't collide."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

SCRIPT = Path(__file__).resolve().parents[2] / "deploy" / "testbed" / "testbed.sh"
NETNS_DIR = Path("/run/netns")
_BASE36 = "0123456789abcdefghijklmnopqrstuvwxyz"


class TestbedError(RuntimeError):
    """testbed.sh failed; the message carries its stderr."""


@dataclass(frozen=True)
class TestbedHost:
    __test__ = False  # a dataclass named Test*, not a test class

    name: str
    address: str
    user: str
    key: Path
    known_hosts: Path


@dataclass(frozen=True)
class Testbed:
    __test__ = False

    prefix: str
    dir: Path
    hosts: list[TestbedHost]
    inventory: Path
    netns_inodes: frozenset[int]
    """The hosts' namespaces, recorded while up: a process can keep a namespace alive after
    its name is gone, so leftovers are looked for by namespace, not by name."""

    def namespace(self, host: TestbedHost) -> str:
        """The network namespace a host lives in (also its hostname)."""
        return f"{self.prefix}-{host.name}"

    def run(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        """testbed.sh COMMAND ... on this bed (`shape h2 --rate 50mbit`, `status`)."""
        command, *rest = args
        return testbed_script(command, *rest, "--prefix", self.prefix, "--dir", str(self.dir),
                              check=check)


def bed_marks(*tools: str) -> list[pytest.MarkDecorator]:
    """Skip marks for a test of the test bed: it needs root, and `tools` (sshd and what the
    test drives: ip, tc, nft, ...) in the system's sbin."""
    return [
        pytest.mark.skipif(os.geteuid() != 0, reason="the test bed needs root"),
        pytest.mark.skipif(any(shutil.which(tool, path="/usr/sbin:/sbin:/usr/bin") is None
                               for tool in tools),
                           reason=f"needs {', '.join(tools)} (deploy/setup.sh --test)"),
    ]


def needs_bed(test):
    """Skip `test` where the test bed cannot come up: it needs root and openssh-server."""
    for mark in bed_marks("sshd"):
        test = mark(test)
    return test


def testbed_script(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    result = subprocess.run(["bash", str(SCRIPT), *args], capture_output=True, text=True,
                            timeout=60)
    if check and result.returncode != 0:
        raise TestbedError(f"testbed.sh {' '.join(args)}: {result.stderr.strip()}")
    return result


def default_prefix() -> str:
    """`t` and the last four base-36 digits of this process's pid: distinct for parallel
    sessions in practice, and short enough for interface names."""
    number = os.getpid()
    digits = "".join(_BASE36[number // 36**i % 36] for i in range(3, -1, -1))
    return f"t{digits}"


def free_subnet(prefix: str) -> str:
    """A 10.77.X subnet that no route uses yet, starting from one derived from the prefix so
    that parallel sessions start apart (testbed.sh refuses a routed one, should two race)."""
    start = zlib.crc32(prefix.encode()) % 254
    for step in range(254):
        subnet = f"10.77.{1 + (start + step) % 254}"
        routes = subprocess.run(["ip", "-4", "route", "show", f"{subnet}.0/24"],
                                capture_output=True, text=True, check=True).stdout
        if not routes.strip():
            return subnet
    raise TestbedError("every 10.77.X.0/24 subnet is routed already")


@contextmanager
def testbed(n: int, prefix: str | None = None,
            skew: dict[str, int] | None = None) -> Iterator[Testbed]:
    """N hosts h1..hN (prefix: see `default_prefix`; give distinct ones to beds that are up
    at the same time in one process); `skew` runs some hosts' monotonic clocks that many
    seconds ahead (`{"h2": 7}`). `up` cleans up after itself when it fails, so `down`
    runs only for a bed that came up: it must not take down someone else's bed whose
    prefix made `up` refuse."""
    prefix = prefix or default_prefix()
    options = ["--skew", ",".join(f"{h}={s}" for h, s in skew.items())] if skew else []
    up = testbed_script("up", str(n), "--prefix", prefix, "--subnet", free_subnet(prefix),
                        *options)
    inventory = Path(up.stdout.strip())
    try:
        yield Testbed(prefix, inventory.parent, _hosts(inventory), inventory,
                      frozenset(namespace_inodes(prefix).values()))
    finally:
        testbed_script("down", "--prefix", prefix, "--dir", str(inventory.parent))


# named test*, but not tests: pytest must not collect them where they are imported
testbed.__test__ = False  # type: ignore[attr-defined]
testbed_script.__test__ = False  # type: ignore[attr-defined]


def _hosts(inventory: Path) -> list[TestbedHost]:
    return [
        TestbedHost(entry["name"], entry["address"], entry["user"], Path(entry["key"]),
                    Path(entry["known_hosts"]))
        for entry in yaml.safe_load(inventory.read_text())["hosts"]
    ]


def namespace_inodes(prefix: str) -> dict[str, int]:
    """The named network namespaces of a bed's hosts, by name: their nsfs inodes."""
    if not NETNS_DIR.is_dir():
        return {}
    pattern = re.compile(rf"{re.escape(prefix)}-h\d+")
    return {path.name: path.stat().st_ino for path in NETNS_DIR.iterdir()
            if pattern.fullmatch(path.name)}


def pids_in_namespaces(inodes: frozenset[int] | set[int]) -> list[int]:
    """Live processes in the given network namespaces (zombies have none and don't count)."""
    pids = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            link = os.readlink(entry / "ns" / "net")
        except OSError:  # exited meanwhile, or a zombie
            continue
        if int(link.removeprefix("net:[").removesuffix("]")) in inodes:
            pids.append(int(entry.name))
    return sorted(pids)


def netns_pids(prefix: str) -> dict[str, list[int]]:
    """The processes inside each of a bed's named namespaces."""
    return {name: pids_in_namespaces({inode}) for name, inode in namespace_inodes(prefix).items()}


def leftovers(bed: Testbed) -> list[str]:
    """What of a bed is still there: namespaces, links, processes, its directory."""
    found = [f"namespace {name}" for name in namespace_inodes(bed.prefix)]
    found += [f"link {link.name}" for link in Path("/sys/class/net").iterdir()
              if link.name.startswith(f"{bed.prefix}-")]
    found += [f"process {pid}" for pid in pids_in_namespaces(bed.netns_inodes)]
    if bed.dir.exists():
        found.append(f"directory {bed.dir}")
    return found
