"""What the kafka driver decides about the wire itself: the topics of a round trip, whose
reply topic a request goes to (by the producer id in the framework's message header), how
large records may be, and which partitions a lane reads. Records and record batches are the
client library's to encode (confluent-kafka or kafka-python); every Kafka record value is
one of the framework's messages, unchanged, with no key.
"""

from __future__ import annotations

from collections.abc import Callable

from sixnines.drivers.base import Lane
from sixnines.formats.payload import HEADER_STRUCT

DEFAULT_RECORD_BYTES = 1_000_000  # the clients' and brokers' default record size limit
RECORD_HEADROOM = 64 << 10  # record and batch framing above the payload
MAX_MESSAGE_BYTES = 64 << 20  # brokers refuse requests over ~100 MB by default
_producer_id = HEADER_STRUCT.unpack_from


def requests_topic(topic: str) -> str:
    """Where requesters send and responders read."""
    return f"{topic}.req"


def reply_prefix(topic: str) -> str:
    """The reply topics' common prefix: `<prefix><requester id>`."""
    return f"{topic}.reply."


def run_topic(topic: str) -> Callable[[str], bool]:
    """Whether a topic is `topic` or one of its round trip's (`<topic>.req`,
    `<topic>.reply.<id>`): what a run with that topic may have created."""
    own = f"{topic}."
    return lambda name: name == topic or name.startswith(own)


def producer_id(value: bytes | memoryview) -> int:
    """The producer id in a message's header: whose reply topic its echo goes to."""
    return _producer_id(value)[0]


def record_bytes(message_size: int) -> int:
    """The record size limit for `message_size`-byte messages: Kafka's default 1 MB, or
    more for larger messages (topics, producers and consumers alike)."""
    return max(DEFAULT_RECORD_BYTES, message_size + RECORD_HEADROOM)


def created_partitions(option: int | None, lane: Lane) -> int:
    """The partitions to create a one-way topic with: the `partitions` option, else one per
    lane, so that every connection of a consumer reads a partition of its own."""
    return lane.count if option is None else option


def lane_partitions(partitions: int, lane: Lane) -> list[int]:
    """The partitions of a `partitions`-partition topic that a receiver on `lane` reads:
    those p with p % lane.count == lane.index, so a consumer's lanes together read each
    partition once (and each sender's messages, all in its one partition, in order)."""
    return list(range(lane.index, partitions, lane.count))
