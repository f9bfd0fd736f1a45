"""Whole fixed-size frames read off a stream socket straight into the caller's buffer.

Shared by drivers whose receive layout is exactly what arrives on the wire (the tcp relay's
length-framed messages, Redis pub/sub pushes): no copy, and one `recv_into` per call.
"""

from __future__ import annotations

import select
import socket

from sixnines.drivers.base import DriverError


class FrameStream:
    """The caller passes the same buffer each call; a trailing partial frame is moved to
    the front on the next one (it is shorter than a frame, so the move never overlaps)."""

    def __init__(self, sock: socket.socket, label: str, closed: str) -> None:
        self.sock = sock
        self.label = label
        self.closed = closed  # what to say when the peer closes the connection
        self.poller = select.poll()
        self.poller.register(sock, select.POLLIN)
        self._partial_at = 0
        self._partial_len = 0

    def readable(self, timeout_ms: int) -> bool:
        """Wait up to `timeout_ms` (0: don't wait, -1: as long as it takes)."""
        return not timeout_ms or bool(self.poller.poll(timeout_ms))

    def recv(self, into: memoryview) -> int:
        """Bytes read without blocking (0 when none are there)."""
        try:
            got = self.sock.recv_into(into, 0, socket.MSG_DONTWAIT)
        except BlockingIOError:
            return 0
        except OSError as exc:
            raise DriverError(f"{self.label}: connection lost ({exc})") from exc
        if got == 0:
            raise DriverError(f"{self.label}: {self.closed}")
        return got

    def frames(self, out: memoryview, stride: int, timeout_ms: int) -> int:
        """Whole frames now at the start of `out`."""
        partial = self._partial_len
        if partial:
            start = self._partial_at
            out[:partial] = out[start : start + partial]
        if not self.readable(timeout_ms):
            self._partial_at = 0
            return 0
        total = partial + self.recv(out[partial:])
        count = total // stride
        self._partial_at = count * stride
        self._partial_len = total - self._partial_at
        return count
