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

#: Most producers, consumers, and connections of each, in one run: the scenario's bound,
#: and a manifest's (the analysis goes over each agent's connections).
MAX_PARALLEL = 1000


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


class Metric(StrEnum):
    """A latency a run measures: the tag of its series in an agent's interval log, the
    name of its .hgrm file (formats.layout.hgrm_file), and, as `summary_field`, of its
    figures in summary.json."""

    LATENCY = "latency"  # receive − intended send: what a user waited (rule 1)
    SERVICE_TIME = "service_time"  # receive − send: the system's part of it
    SEND_LAG = "send_lag"  # send − intended send: how far a sender fell behind its schedule
    SATURATION_LATENCY = "saturation_latency"  # receive − send, sent flat out (`rate: max`)

    @property
    def summary_field(self) -> str:
        """Its figures' field in a run's summary (`latency_us` …), in µs."""
        return f"{self.value}_us"

    @property
    def label(self) -> str:
        """Its name in words, for tables and plots."""
        return self.value.replace("_", " ")


#: The metrics a receiver's clock ends (its receive time − a sender's time): off by the
#: two clocks' difference when they are not one.
RECEIVER_TIMED = (Metric.LATENCY, Metric.SERVICE_TIME, Metric.SATURATION_LATENCY)
