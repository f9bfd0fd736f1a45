"""CPU placement on a host (docs/design.md, "CPU placement"): a busy-waiting loop runs on a
CPU of its own, and every other thread and process sixnines runs on that kernel keeps off
it.

Why: the kernel wakes a thread on whichever CPU suits it, often the waker's. A chunk
writer woken by the producer that handed it a chunk, or the relay woken by its packets,
then takes the send loop's CPU for scheduler slices of milliseconds, and each slice is a
stall in the schedule. On two cores, send-lag p99 at 1M msg/s went from 2–5 ms to ~20 µs
once the loop had its CPU to itself (docs/performance.md, "CPU placement").

The controller decides (orchestrator.plan.cpus); the agents and the broker monitor apply it
here, on `start`.
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Collection, Iterable

from sixnines.formats.vocabulary import SENDERS, Receive


def busy_loop(role: str, receive: str) -> bool:
    """Whether an agent's loop spins on its CPU: a sender's always (it busy-waits on its
    schedule), a receiver's when it busy-polls."""
    return role in SENDERS or receive == Receive.BUSY_POLL


def usable_cpus() -> list[int]:
    """The CPUs this process may run on (its affinity: a container's cpuset, a `taskset`
    the user started sixnines under)."""
    return sorted(os.sched_getaffinity(0))


def threads_of(pid: int) -> list[int]:
    """Every thread of process `pid` (none if it is gone)."""
    try:
        return [int(tid) for tid in os.listdir(f"/proc/{pid}/task")]
    except OSError:
        return []


def keep_off(pids: Iterable[int], cpus: Collection[int]) -> dict[int, set[int]]:
    """Move every thread of `pids` off `cpus`, each keeping the rest of its own set; a
    thread left with no CPU is left alone. Returns {thread: its set before}, for `restore`.
    Threads started later inherit their creator's set."""
    avoid = set(cpus)
    before: dict[int, set[int]] = {}
    for pid in pids:
        for tid in threads_of(pid):
            with contextlib.suppress(OSError):  # a thread that ended meanwhile
                allowed = os.sched_getaffinity(tid)
                rest = allowed - avoid
                if rest and rest != allowed:
                    os.sched_setaffinity(tid, rest)
                    before[tid] = allowed
    return before


def restore(before: dict[int, set[int]]) -> None:
    """Give threads back the sets `keep_off` took from them."""
    for tid, allowed in before.items():
        with contextlib.suppress(OSError):
            os.sched_setaffinity(tid, allowed)


def pin_python_threads(cpu: int) -> None:
    """Run the loop and every Python thread of this process on `cpu` only (Linux applies
    affinity per thread; threads started later inherit it). Threads that share the loop's
    GIL go with it: one holding the GIL on a busy CPU can be preempted there and keep the
    loop waiting for a scheduler slice (12 ms stalls at 500k msg/s, measured); beside the
    loop, it runs its few µs and gives the GIL back."""
    for thread in threading.enumerate():
        if thread.native_id is not None:
            with contextlib.suppress(OSError):
                os.sched_setaffinity(thread.native_id, {cpu})
