"""Host facts and software versions recorded in every manifest, so a figure can be traced
to the machine and the code that produced it."""

from __future__ import annotations

import os
import platform
import socket
from importlib.metadata import PackageNotFoundError, version

from sixnines.agents.affinity import usable_cpus

PACKAGES = ("sixnines", "numpy", "pyarrow", "pyzmq", "hdrhistogram", "pydantic")


def host_facts() -> dict:
    return {
        "hostname": socket.gethostname(),
        "platform": platform.platform(),
        "kernel": platform.release(),
        "python": platform.python_version(),
        "cpu_count": os.cpu_count(),
        "cpu_model": _cpu_model(),
        "memory_bytes": memory_bytes(),
        "clock_domain": clock_domain(),
        "kernel_id": kernel_id(),
        "cpus": usable_cpus(),
    }


def kernel_id() -> str:
    """Names the running kernel (its boot id): processes with equal ids share CPUs, whatever
    host name, network namespace or container they are in (orchestrator.plan.cpus)."""
    return _read("/proc/sys/kernel/random/boot_id") or f"host:{socket.gethostname()}"


def clock_domain() -> str:
    """Names the monotonic clock this process reads: the kernel's boot id, plus the time
    namespace's offsets when it has any. Processes with equal domains (network namespaces
    or containers on one kernel) compare timestamps directly; others need an offset."""
    domain = kernel_id()
    offsets = " ".join(_read("/proc/self/timens_offsets").split())
    if any(part not in ("monotonic", "boottime", "0") for part in offsets.split()):
        domain += f" timens {offsets}"
    return domain


def _read(path: str) -> str:
    try:
        with open(path, encoding="utf-8") as file:
            return file.read().strip()
    except OSError:
        return ""


def memory_bytes() -> int | None:
    """The machine's memory (MemTotal), so a reader knows what the figures ran on; None
    where /proc/meminfo is not there."""
    for line in _read("/proc/meminfo").splitlines():
        if line.startswith("MemTotal:"):
            return int(line.split()[1]) * 1024
    return None


def versions() -> dict:
    found: dict[str, str | None] = {}
    for package in PACKAGES:
        try:
            found[package] = version(package)
        except PackageNotFoundError:
            found[package] = None
    try:
        import zmq

        found["libzmq"] = zmq.zmq_version()
    except ImportError:
        pass
    return found


def _cpu_model() -> str | None:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as info:
            for line in info:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or None
