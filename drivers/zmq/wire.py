"""What the zmq driver puts on the wire itself: the broker's port layout, its endpoints and
the welcome message. Message framing (ZMTP) is libzmq's; every ZeroMQ message is one of
the framework's messages, unchanged.

A broker at "host:P" listens on three ports: P (XSUB, publishers connect), P+1 (XPUB,
subscribers connect) and P+2 (ROUTER echo).
"""

from __future__ import annotations

WELCOME = b"sixnines-welcome"
PUBLISHERS, SUBSCRIBERS, ECHO = 0, 1, 2  # port offsets from the broker's address


def endpoint(host: str, port: int | None = None) -> str:
    """A ZeroMQ tcp endpoint (IPv6 hosts bracketed); without a port, for binding to any."""
    where = f"tcp://[{host}]" if ":" in host else f"tcp://{host}"
    return where if port is None else f"{where}:{port}"


def broker_address(host: str, port: int) -> str:
    """The address a broker announces: its first port."""
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
