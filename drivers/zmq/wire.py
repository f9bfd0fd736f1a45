"""What the zmq driver puts on the wire itself: the broker's port layout, its endpoints and
the welcome message. Message framing (ZMTP) is libzmq's; every ZeroMQ message is one of
the framework's messages, unchanged.

A broker at "host:P" listens on three ports: P (XSUB, publishers connect), P+1 (XPUB,
subscribers connect) and P+2 (ROUTER echo).

Lanes are ZeroMQ topics: with more than one lane, every message is two frames, the lane's
topic then the framework's message, and a receiver subscribes to its lane's topic alone
(and to the welcome message, until it has it: a SUB socket filters that too). With one
lane, messages are single frames and receivers subscribe to everything, as before lanes.
"""

from __future__ import annotations

from sixnines.drivers.base import Lane

WELCOME = b"sixnines-welcome"
PUBLISHERS, SUBSCRIBERS, ECHO = 0, 1, 2  # port offsets from the broker's address
#: The base of the lanes' topics (`Lane.name`).
TOPIC = "lane"


def endpoint(host: str, port: int | None = None) -> str:
    """A ZeroMQ tcp endpoint (IPv6 hosts bracketed); without a port, for binding to any."""
    where = f"tcp://[{host}]" if ":" in host else f"tcp://{host}"
    return where if port is None else f"{where}:{port}"


def broker_address(host: str, port: int) -> str:
    """The address a broker announces: its first port."""
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def topic(lane: Lane) -> bytes:
    """The first frame of every message on `lane`, and what its receivers subscribe to:
    nothing for the sole lane (single-frame messages, everything subscribed), else the
    lane's name ended by a NUL, since subscriptions match prefixes and lane 1's name is
    one of lane 10's."""
    return b"" if lane.count == 1 else lane.name(TOPIC).encode() + b"\0"


def subscribes_to(event: bytes, topic: bytes) -> bool:
    """Whether a publisher's XPUB `event` (1 then a prefix: a subscription; 0: its end) is a
    subscription that messages of `topic` match."""
    return event[:1] == b"\x01" and topic.startswith(event[1:])
