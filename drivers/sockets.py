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
from collections.abc import Callable

from sixnines.drivers.base import LENGTH_WORD, DriverError, Receiver

#: What a `VaryingFrames` reads at once at least.
RAW_BYTES = 1 << 18
TAIL_CHECKED = 8  # bytes of a frame's head compared in every frame (the length ends it)
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
        if self.tls and self.pending():
            return True
        return bool(self.poller.poll(timeout_ms))

    def pending(self) -> int:
        """Decrypted bytes a TLS socket holds, which no poller sees (0 for a plain one)."""
        return self.sock.pending() if isinstance(self.sock, ssl.SSLSocket) else 0

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
    messages, Redis pub/sub pushes): no copy of whole frames, and one read per call.

    An agent passes one buffer to all its connections, so a trailing partial frame cannot
    wait in it: it goes to this stream's own carry buffer (one frame, allocated once) and
    back to the front of `out` before the next read.

    Every frame starts with `head` (a length word, a push's header ending in the length):
    the whole head is compared in the first and last frame of a call, its last
    TAIL_CHECKED bytes in every frame, and a partial frame's as far as it arrived, so a
    message of another size is refused when it arrives, not handed over misaligned."""

    def __init__(self, sock: socket.socket, label: str, closed: str, head: bytes,
                 stride: int, refusal: str) -> None:
        super().__init__(sock, label, closed)
        self.stride = stride
        self._head = head
        self._refusal = refusal  # what a frame without `head` is, for the error
        self._carry = memoryview(bytearray(stride))
        self._carried = 0
        # (offset in head, that byte repeated once per frame of the largest call so far)
        self._columns: list[tuple[int, memoryview]] = []

    def frames(self, out: memoryview, timeout_ms: int) -> int:
        """Whole frames (of `stride` bytes) now at the start of `out`."""
        if not self.readable(timeout_ms):
            return 0
        carried = self._carried
        if carried:
            out[:carried] = self._carry[:carried]
        got = self.read(out[carried:])
        if not got:
            return 0
        total = carried + got
        count = total // self.stride
        whole = count * self.stride
        if self._head:
            self._check(out, count, whole, total)
        partial = total - whole
        if partial:
            self._carry[:partial] = out[whole:total]
        self._carried = partial
        return count

    def _check(self, out: memoryview, count: int, whole: int, total: int) -> None:
        head, stride = self._head, self.stride
        h = len(head)
        if count:
            last = whole - stride
            if out[:h] != head or out[last : last + h] != head:
                raise self._refused()
            if count > 2:
                columns = self._columns
                if not columns or count > len(columns[0][1]):
                    columns = self._columns = [
                        (at, memoryview(head[at : at + 1] * (len(out) // stride)))
                        for at in range(max(0, h - TAIL_CHECKED), h)]
                for at, column in columns:
                    if out[at:whole:stride] != column[:count]:
                        raise self._refused()
        partial = min(total - whole, h)
        if partial and out[whole : whole + partial] != head[:partial]:
            raise self._refused()

    def _refused(self) -> DriverError:
        return DriverError(f"{self.label}: {self._refusal}")


#: Where a frame of varying length is in a buffer read off the socket, from `at` up to
#: `end`: (first byte to hand over, the byte after the last, where the next frame starts),
#: None while it has not all arrived; raises `DriverError` for one that is not a frame.
FrameAt = Callable[[bytearray, int, int], tuple[int, int, int] | None]


class VaryingFrames(SocketIO):
    """Frames of varying length (where each is, `frame_at` says), read into a buffer of
    this stream's own and handed over one to a `stride`-byte slot of the caller's buffer
    (the largest's slot: what the frame hands over at its start, the rest untouched).

    It may read more whole frames than one call's `out` takes (`held`)."""

    def __init__(self, sock: socket.socket, label: str, closed: str, stride: int,
                 frame_at: FrameAt) -> None:
        super().__init__(sock, label, closed)
        self.stride = stride
        self._frame_at = frame_at
        self._raw = bytearray(max(RAW_BYTES, 2 * stride))
        self._view = memoryview(self._raw)
        self._start = self._end = 0

    def held(self) -> bool:
        """A whole frame is buffered."""
        return self._frame_at(self._raw, self._start, self._end) is not None

    def frames(self, out: memoryview, timeout_ms: int) -> int:
        """Whole frames now in `out`, one a `stride` slot."""
        room = len(out) // self.stride
        count = self._cut(out, room)
        if count or not self.readable(timeout_ms):
            return count
        if self._start:  # the partial frame to the front: room for at least one frame
            kept = self._end - self._start
            self._view[:kept] = self._view[self._start : self._end]
            self._start, self._end = 0, kept
        got = self.read(self._view[self._end :])
        self._end += got
        return self._cut(out, room)

    def _cut(self, out: memoryview, room: int) -> int:
        raw, view, stride, frame_at = self._raw, self._view, self.stride, self._frame_at
        at, end, count = self._start, self._end, 0
        while count < room and (found := frame_at(raw, at, end)) is not None:
            first, last, at = found
            slot = count * stride
            out[slot : slot + last - first] = view[first:last]
            count += 1
        self._start = at
        if at == end:
            self._start = self._end = 0
        return count


class VaryingReceiver(Receiver):
    """A receiver of frames of varying sizes (`VaryingFrames`): it may hold whole frames
    the socket no longer shows, so waiters ask `held()`."""

    holds = True

    def __init__(self, stream: VaryingFrames) -> None:
        self._stream = stream
        self.pollable = stream.sock

    def held(self) -> bool:
        return self._stream.held()

    def receive(self, out: memoryview, stride: int, timeout_ms: int) -> int:
        return self._stream.frames(out, timeout_ms)

    def close(self) -> None:
        self._stream.close()


def length_words(label: str, smallest: int, largest: int, refusal: str) -> FrameAt:
    """Frames of a u32 LE length word then the message (handed over whole, word first),
    refusing a length outside [smallest, largest] as soon as its word arrives."""
    unpack = LENGTH_WORD.unpack_from

    def frame_at(raw: bytearray, at: int, end: int) -> tuple[int, int, int] | None:
        if end - at < LENGTH_WORD.size:
            return None
        length = unpack(raw, at)[0]
        if not smallest <= length <= largest:
            raise DriverError(f"{label}: {refusal} (a {length}-byte message)")
        following = at + LENGTH_WORD.size + length
        return None if following > end else (at, following, following)
    return frame_at
