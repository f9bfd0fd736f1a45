"""Connecting to the sixnines relay: the hello, and its acknowledgement."""

from __future__ import annotations

import socket

from sixnines.drivers.base import SOLE_LANE, DriverError, Lane
from sixnines.drivers.tcp.wire import ACK, hello

CONNECT_TIMEOUT_S = 10.0


def connect(host: str, port: int, role: bytes, stride: int, nodelay: bool,
            label: str, lane: Lane = SOLE_LANE) -> socket.socket:
    """A connection the relay has registered in `role` on `lane` (a subscriber is
    subscribed when this returns) for frames of `stride` bytes."""
    try:
        sock = socket.create_connection((host, port), timeout=CONNECT_TIMEOUT_S)
        if nodelay:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        sock.sendall(hello(role, stride, lane))
        if sock.recv(1) != ACK:
            sock.close()
            raise DriverError(f"{label}: not a sixnines relay (no hello acknowledgement)")
        sock.settimeout(None)
    except OSError as exc:
        raise DriverError(f"{label}: cannot connect ({exc})") from exc
    return sock
