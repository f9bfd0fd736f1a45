"""The words every part of sixnines uses for the same things, as enums.

StrEnum members equal their strings (`Role.CONSUMER == "consumer"`), so JSON, parquet and
YAML keep the plain words while code compares against names a typo cannot slip through.
"""

from __future__ import annotations

from enum import StrEnum


class Mode(StrEnum):
    """How messages travel: to consumers, or to a responder and back to the requester."""

    ONE_WAY = "one-way"
    ROUND_TRIP = "round-trip"


class Schedule(StrEnum):
    """When a sender sends (a scenario's `schedule`)."""

    FIXED = "fixed"
    POISSON = "poisson"
    CLOSED = "closed"  # round trip only: the next request when the reply is in


#: `rate: max`, throughput mode: no schedule, senders go as fast as the system takes; also
#: the schedule an agent is given then.
MAX_RATE = "max"


class FanOut(StrEnum):
    """Who receives every one-way message (docs/design.md, "Connections divide the load")."""

    CONSUMER = "consumer"  # each consumer once, over one of its connections
    CONNECTION = "connection"  # each consumer connection: runs recorded before schema 5


class Receive(StrEnum):
    """How a receiver waits: blocked in the kernel, or spinning on a non-blocking read."""

    BLOCKING = "blocking"
    BUSY_POLL = "busy-poll"


class LoopCpus(StrEnum):
    """Whether each busy-waiting loop gets a CPU of its own (docs/design.md, "CPU
    placement"), or shares the CPUs as the kernel sees fit."""

    DEDICATED = "dedicated"
    SHARED = "shared"


class Role(StrEnum):
    """What an agent does in a run."""

    PRODUCER = "producer"
    CONSUMER = "consumer"
    REQUESTER = "requester"  # round trip: sends, and receives the replies
    RESPONDER = "responder"  # round trip through a broker: sends each request back
    MONITOR = "monitor"  # samples the broker's CPU


#: Roles that follow a schedule, and roles that record what they receive.
SENDERS = (Role.PRODUCER, Role.REQUESTER)
RECORDING = (Role.PRODUCER, Role.CONSUMER, Role.REQUESTER)


class Load(StrEnum):
    """What a run measures: latency on a schedule, or throughput flat out (`rate: max`)."""

    OPEN_LOOP = "open-loop"
    SATURATION = "saturation"
