"""Raw TCP through the sixnines relay: the brokerless baseline every system is held to.

The wire format is drivers/tcp/wire.py; the relay (drivers/tcp/relay.py) answers the hello
once the connection is registered, so a receiver is subscribed by the time `receiver()`
returns. A connection's lane travels in its hello: the relay forwards a publisher's frames
to the subscribers on the same lane only, so the send and receive paths know nothing of
lanes.
"""

from __future__ import annotations

import socket

from sixnines.drivers.base import (
    SOLE_LANE,
    Announce,
    Driver,
    DriverOptions,
    Framing,
    Lane,
    Receiver,
    Sender,
    split_address,
)
from sixnines.drivers.sockets import (
    FrameStream,
    SocketIO,
    VaryingFrames,
    VaryingReceiver,
    length_words,
)
from sixnines.drivers.tcp.connection import connect
from sixnines.drivers.tcp.options import TcpOptions
from sixnines.drivers.tcp.wire import ECHO, LENGTH, PUBLISH, SUBSCRIBE, VARIABLE, frame_prefix
from sixnines.formats.payload import HEADER_SIZE


class TcpSender(Sender):
    def __init__(self, sock: socket.socket, label: str) -> None:
        self._io = SocketIO(sock, label)

    def send(self, frames: memoryview, count: int) -> None:
        self._io.write(frames)

    def close(self) -> None:
        self._io.close()


class TcpReceiver(Receiver):
    """Frames land in the caller's buffer as they came off the socket (FrameStream), each
    length word checked: a message of another size is refused."""

    def __init__(self, sock: socket.socket, label: str, message_size: int) -> None:
        self._stream = FrameStream(
            sock, label, "connection closed by the relay", frame_prefix(message_size),
            LENGTH.size + message_size,
            f"a message of another size than {message_size} bytes (its length word differs)")
        self.pollable = sock

    def receive(self, out: memoryview, stride: int, timeout_ms: int) -> int:
        return self._stream.frames(out, timeout_ms)

    def close(self) -> None:
        self._stream.close()


class TcpVaryingReceiver(VaryingReceiver):
    """Frames of varying sizes up to `message_size` (the largest), each copied to a slot
    of the largest frame's length, its length word at the slot's start."""

    def __init__(self, sock: socket.socket, label: str, message_size: int) -> None:
        super().__init__(VaryingFrames(
            sock, label, "connection closed by the relay", LENGTH.size + message_size,
            length_words(label, HEADER_SIZE, message_size,
                         f"a message outside {HEADER_SIZE}..{message_size} bytes")))


class TcpDriver(Driver):
    name = "tcp"
    Options = TcpOptions
    options: TcpOptions  # what Options validated
    has_builtin_broker = True
    #: No routing: the key rides in the message (formats.keys.KEY_OFFSET) and the order of
    #: each key's messages is checked like any other.
    carries_keys = "in the message, after the header (nothing routes by it)"

    @classmethod
    def carries_varying_sizes(cls, options: DriverOptions, largest: int) -> bool:
        return True  # each frame's length word is its own; the hello says they vary

    def framing(self, message_size: int, lane: Lane = SOLE_LANE) -> Framing:
        return Framing(prefix=frame_prefix(message_size))  # the lane is the hello's

    def _connect(self, role: bytes, message_size: int, lane: Lane = SOLE_LANE
                 ) -> socket.socket:
        host, port = split_address(self.address, self.name)
        stride = LENGTH.size + message_size
        return connect(host, port, role, stride | VARIABLE if self.sizes_vary else stride,
                       self.options.nodelay, self._label, lane)

    @property
    def _label(self) -> str:
        return f"tcp relay at {self.address}"

    def sender(self, message_size: int, connection_id: int,
               lane: Lane = SOLE_LANE) -> TcpSender:
        return TcpSender(self._connect(PUBLISH, message_size, lane), self._label)

    def receiver(self, message_size: int, connection_id: int,
                 lane: Lane = SOLE_LANE) -> Receiver:
        """Frames of `message_size`, or of varying sizes up to it when sizes vary."""
        kind = TcpVaryingReceiver if self.sizes_vary else TcpReceiver
        return kind(self._connect(SUBSCRIBE, message_size, lane), self._label, message_size)

    def requester(self, message_size: int, connection_id: int) -> tuple[TcpSender, TcpReceiver]:
        sock = self._connect(ECHO, message_size)
        return TcpSender(sock, self._label), TcpReceiver(sock, self._label, message_size)

    @classmethod
    def serve_broker(cls, host: str, port: int, announce: Announce) -> None:
        from sixnines.drivers.tcp.relay import Relay

        Relay(host, port).serve(announce)
