"""A connection's socket as the hot path uses it: reads that never block, writes that
finish, and failures worded as `DriverError` naming the system.

Plain sockets stay blocking (so a write finishes in one `sendall`) and read with
MSG_DONTWAIT. A TLS socket cannot take MSG_DONTWAIT, and a blocking read of it blocks
until a whole TLS record is in, even when poll said readable after its first bytes: so a
TLS socket is made non-blocking, reads treat "want more" as nothing yet, writes wait for
room, and decrypted bytes the kernel no longer shows (`pending()`) count as readable.
"""

from __future__ import annotations

import select
import socket
import ssl

from sixnines.drivers.base import DriverError

WOULD_BLOCK = (BlockingIOError, InterruptedError, ssl.SSLWantReadError, ssl.SSLWantWriteError)


class SocketIO:
    """The reads and writes of one connected stream socket (see the module docstring)."""

    def __init__(self, sock: socket.socket, label: str,
                 closed: str = "connection closed by the server") -> None:
        self.sock = sock
        self.label = label
        self.closed = closed  # what to say when the peer closes the connection
        self.tls = isinstance(sock, ssl.SSLSocket)
        sock.setblocking(not self.tls)
        self.poller = select.poll()
        self.poller.register(sock, select.POLLIN)
        self.read = self._read_tls if self.tls else self._read

    def _read(self, into: memoryview) -> int:
        """Bytes read into `into` without blocking (0 when none are there)."""
        try:
            got = self.sock.recv_into(into, 0, socket.MSG_DONTWAIT)
        except WOULD_BLOCK:
            return 0
        except OSError as exc:
            raise DriverError(f"{self.label}: connection lost ({exc})") from None
        if got == 0:
            raise DriverError(f"{self.label}: {self.closed}")
        return got

    def _read_tls(self, into: memoryview) -> int:
        try:
            got = self.sock.recv_into(into)
        except WOULD_BLOCK:  # a TLS record not yet whole, or a renegotiation under way
            return 0
        except OSError as exc:
            raise DriverError(f"{self.label}: connection lost ({exc})") from None
        if got == 0:
            raise DriverError(f"{self.label}: {self.closed}")
        return got

    def readable(self, timeout_ms: int) -> bool:
        """Wait up to `timeout_ms` (0: don't wait, -1: as long as it takes) for something
        to read; True without waiting when `timeout_ms` is 0, where the read will tell."""
        if not timeout_ms:
            return True
        if self.tls and self.sock.pending():
            return True
        return bool(self.poller.poll(timeout_ms))

    def write(self, data) -> None:
        """Write all of `data`, waiting for room as long as it takes."""
        try:
            if not self.tls:
                self.sock.sendall(data)
                return
            view, sent = memoryview(data).cast("B"), 0
            while sent < len(view):
                try:
                    sent += self.sock.send(view[sent:])
                except WOULD_BLOCK:
                    select.select([], [self.sock], [])
        except OSError as exc:
            raise DriverError(f"{self.label}: connection lost ({exc})") from None

    def close(self) -> None:
        self.sock.close()


class FrameStream(SocketIO):
    """Whole fixed-size frames read straight into the caller's buffer, for drivers whose
    receive layout is exactly what arrives on the wire (the tcp relay's length-framed
    messages, Redis pub/sub pushes): no copy, and one read per call.

    The caller passes the same buffer each call; a trailing partial frame is moved to the
    front on the next one (it is shorter than a frame, so the move never overlaps)."""

    def __init__(self, sock: socket.socket, label: str, closed: str) -> None:
        super().__init__(sock, label, closed)
        self._partial_at = 0
        self._partial_len = 0

    def frames(self, out: memoryview, stride: int, timeout_ms: int) -> int:
        """Whole frames now at the start of `out`."""
        partial = self._partial_len
        if partial:
            start = self._partial_at
            out[:partial] = out[start : start + partial]
        if not self.readable(timeout_ms):
            self._partial_at = 0
            return 0
        total = partial + self.read(out[partial:])
        count = total // stride
        self._partial_at = count * stride
        self._partial_len = total - self._partial_at
        return count
