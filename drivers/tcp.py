"""Raw TCP through the sixnines relay: the brokerless baseline every system is held to.

The wire format is drivers/tcp_wire.py; the relay (drivers/tcp_relay.py) answers the hello
once the connection is registered, so a receiver is subscribed by the time `receiver()`
returns.
"""

from __future__ import annotations

import socket

from sixnines.drivers.base import Driver, DriverError, DriverOptions, Framing, split_address
from sixnines.drivers.frame_stream import FrameStream
from sixnines.drivers.tcp_wire import ACK, ECHO, HELLO, LENGTH, MAGIC, PUBLISH, SUBSCRIBE

CONNECT_TIMEOUT_S = 10.0


class TcpOptions(DriverOptions):
    nodelay: bool = True
    """TCP_NODELAY on every connection (Nagle off), as latency benchmarks expect."""


class TcpSender:
    def __init__(self, sock: socket.socket, label: str) -> None:
        self._sock = sock
        self._label = label

    def send(self, frames: memoryview, count: int) -> None:
        try:
            self._sock.sendall(frames)
        except OSError as exc:
            raise DriverError(f"{self._label}: connection lost ({exc})") from exc

    def close(self) -> None:
        self._sock.close()


class TcpReceiver:
    """Frames land in the caller's buffer as they came off the socket (FrameStream)."""

    def __init__(self, sock: socket.socket, label: str) -> None:
        self._stream = FrameStream(sock, label, "connection closed by the relay")
        self.pollable = sock

    def receive(self, out: memoryview, stride: int, timeout_ms: int) -> int:
        return self._stream.frames(out, stride, timeout_ms)

    def close(self) -> None:
        self._stream.sock.close()


class TcpDriver(Driver):
    name = "tcp"
    Options = TcpOptions
    has_builtin_broker = True

    def framing(self, message_size: int) -> Framing:
        return Framing(prefix=LENGTH.pack(message_size))

    def _connect(self, role: bytes, message_size: int) -> socket.socket:
        host, port = split_address(self.address, self.name)
        label = self._label
        try:
            sock = socket.create_connection((host, port), timeout=CONNECT_TIMEOUT_S)
            if self.options.nodelay:
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            sock.sendall(HELLO.pack(MAGIC, role, LENGTH.size + message_size))
            if sock.recv(1) != ACK:
                raise DriverError(f"{label}: not a sixnines relay (no hello acknowledgement)")
            sock.settimeout(None)
        except OSError as exc:
            raise DriverError(f"{label}: cannot connect ({exc})") from exc
        return sock

    @property
    def _label(self) -> str:
        return f"tcp relay at {self.address}"

    def sender(self, message_size: int, connection_id: int) -> TcpSender:
        return TcpSender(self._connect(PUBLISH, message_size), self._label)

    def receiver(self, message_size: int, connection_id: int) -> TcpReceiver:
        return TcpReceiver(self._connect(SUBSCRIBE, message_size), self._label)

    def requester(self, message_size: int, connection_id: int) -> tuple[TcpSender, TcpReceiver]:
        sock = self._connect(ECHO, message_size)
        return TcpSender(sock, self._label), TcpReceiver(sock, self._label)

    @classmethod
    def serve_broker(cls, host: str, port: int, announce) -> None:
        from sixnines.drivers.tcp_relay import Relay

        Relay(host, port).serve(announce)
