"""The hub's sixnines driver: the contract of sixnines.drivers.base (the Sender and Receiver
ABCs, a Driver whose default Waiter polls the sockets) in about 100 lines. One-way
connections name their `Lane` in the hello, and the hub routes by it."""

from __future__ import annotations

import select
import socket

from sixnines.drivers.base import (
    SOLE_LANE,
    Driver,
    DriverError,
    Framing,
    Lane,
    LoginOptions,
    Receiver,
    Sender,
    split_address,
)

from sixnines_hub.wire import ECHO, LENGTH, PUBLISH, SUBSCRIBE, WELCOME, hello


class HubOptions(LoginOptions):
    """Strict like every driver's options: a misspelt key is refused."""

    connect_timeout_s: float = 5.0


class HubSender(Sender):
    def __init__(self, sock: socket.socket, label: str) -> None:
        self._sock, self._label = sock, label

    def send(self, frames: memoryview, count: int) -> None:
        try:
            self._sock.sendall(frames)
        except OSError as exc:
            raise DriverError(f"{self._label}: connection lost ({exc})") from None

    def close(self) -> None:
        self._sock.close()


class HubReceiver(Receiver):
    """Whole frames into the caller's buffer; a partial one waits for the next call."""

    def __init__(self, sock: socket.socket, label: str, message_size: int) -> None:
        self._sock, self._label, self._size = sock, label, message_size
        self._pending = bytearray()
        self.pollable = sock

    def receive(self, out: memoryview, stride: int, timeout_ms: int) -> int:
        room = len(out) // stride * stride - len(self._pending)  # read no more than fits:
        if room > 0:  # what stays in _pending would not wake a poller on the socket
            wait = None if timeout_ms < 0 else timeout_ms / 1000
            if select.select([self._sock], [], [], wait)[0]:
                try:
                    chunk = self._sock.recv(room)
                except OSError as exc:
                    raise DriverError(f"{self._label}: connection lost ({exc})") from None
                if not chunk:
                    raise DriverError(f"{self._label}: connection closed by the hub")
                self._pending += chunk
        count = min(len(self._pending) // stride, len(out) // stride)
        for k in range(count + 1):  # the lengths of whole frames, and of a partial one
            if k * stride + LENGTH.size <= len(self._pending):
                (size,) = LENGTH.unpack_from(self._pending, k * stride)
                if size != self._size:
                    raise DriverError(f"{self._label}: got a {size}-byte message, "
                                      f"expected {self._size}")
        out[: count * stride] = self._pending[: count * stride]
        del self._pending[: count * stride]
        return count

    def close(self) -> None:
        self._sock.close()


class HubDriver(Driver):
    name = "hub"
    Options = HubOptions
    has_builtin_broker = True  # `sixnines broker hub` runs one
    needs_responder = False  # the hub echoes round trips itself

    @property
    def label(self) -> str:
        return f"hub at {self.address}"

    def framing(self, message_size: int, lane: Lane = SOLE_LANE) -> Framing:
        return Framing(prefix=LENGTH.pack(message_size))

    def _connect(self, role: bytes, message_size: int,
                 lane: Lane = SOLE_LANE) -> socket.socket:
        host, port = split_address(self.address, self.name)
        _, password = self.login()
        secret = (password or "").encode()
        try:
            sock = socket.create_connection((host, port), self.options.connect_timeout_s)
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            sock.sendall(hello(role, message_size, lane, secret))
            answer = sock.recv(1)
        except OSError as exc:
            raise DriverError(f"{self.label}: cannot connect ({exc})") from None
        if answer != WELCOME:
            sock.close()
            raise DriverError(f"{self.label}: authentication failed (the hub refused the "
                              "password)")
        sock.settimeout(None)
        return sock

    def sender(self, message_size: int, connection_id: int,
               lane: Lane = SOLE_LANE) -> HubSender:
        return HubSender(self._connect(PUBLISH, message_size, lane), self.label)

    def receiver(self, message_size: int, connection_id: int,
                 lane: Lane = SOLE_LANE) -> HubReceiver:
        return HubReceiver(self._connect(SUBSCRIBE, message_size, lane), self.label,
                           message_size)

    def requester(self, message_size: int,
                  connection_id: int) -> tuple[HubSender, HubReceiver]:
        sock = self._connect(ECHO, message_size)
        return HubSender(sock, self.label), HubReceiver(sock, self.label, message_size)

    @classmethod
    def serve_broker(cls, host: str, port: int, announce) -> None:
        from sixnines_hub.hub import serve

        serve(host, port, announce)


class LossySender(HubSender):
    """Drops every message whose sequence number ends in 03 (of each hundred): a broken
    driver for the suite to catch."""

    def send(self, frames: memoryview, count: int) -> None:
        stride = len(frames) // count
        kept = bytearray()
        for k in range(count):
            frame = frames[k * stride : (k + 1) * stride]
            seq = int.from_bytes(frame[LENGTH.size + 4 : LENGTH.size + 12], "little")
            if seq % 100 != 3:
                kept += frame
        super().send(memoryview(kept), max(len(kept) // stride, 1))


class LossyHubDriver(HubDriver):
    name = "hub-lossy"

    def sender(self, message_size: int, connection_id: int,
               lane: Lane = SOLE_LANE) -> LossySender:
        return LossySender(self._connect(PUBLISH, message_size, lane), self.label)

    def requester(self, message_size: int,
                  connection_id: int) -> tuple[HubSender, HubReceiver]:
        sock = self._connect(ECHO, message_size)
        return LossySender(sock, self.label), HubReceiver(sock, self.label, message_size)
