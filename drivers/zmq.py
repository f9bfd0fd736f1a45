"""ZeroMQ: PUB/SUB through a `zmq.proxy` broker (one-way), DEALER to a ROUTER echo (round trip).

A broker at "host:P" listens on three ports: P (XSUB, publishers connect), P+1 (XPUB,
subscribers connect) and P+2 (ROUTER echo). ZeroMQ subscriptions propagate asynchronously
("slow joiner"), and a PUB socket silently drops what nobody is subscribed to yet, so both
ends wait for proof before reporting ready: the broker's XPUB sends a welcome message to
each new subscriber, and publishers use an XPUB socket that sees the subscription arrive.
"""

from __future__ import annotations

import threading

import zmq
from pydantic import Field

from sixnines.drivers.base import Credential, Driver, DriverError, DriverOptions, split_address

WELCOME = b"sixnines-welcome"
READY_TIMEOUT_MS = 10_000
BIND_ATTEMPTS = 20


class ZmqOptions(DriverOptions):
    hwm: int = Field(1_000_000, ge=0)
    """Send/receive high-water mark in messages. ZeroMQ drops PUB messages past it; the
    default is high enough that any loss is the system's, and it is counted."""


def _endpoint(host: str, port: int | None = None) -> str:
    where = f"tcp://[{host}]" if ":" in host else f"tcp://{host}"
    return where if port is None else f"{where}:{port}"


class ZmqSender:
    def __init__(self, sock: zmq.Socket) -> None:
        self._sock = sock

    def send(self, frames: memoryview, count: int) -> None:
        stride = len(frames) // count
        send = self._sock.send
        for offset in range(0, len(frames), stride):
            send(frames[offset : offset + stride])

    def close(self) -> None:
        self._sock.close(linger=0)


class ZmqReceiver:
    def __init__(self, sock: zmq.Socket, label: str) -> None:
        self._sock = sock
        self._label = label
        self.pollable = sock

    def receive(self, out: memoryview, stride: int, timeout_ms: int) -> int:
        sock = self._sock
        if timeout_ms and not sock.poll(None if timeout_ms < 0 else timeout_ms):
            return 0
        count = 0
        room = len(out) // stride
        offset = 0
        while count < room:
            try:
                got = sock.recv_into(out[offset : offset + stride], flags=zmq.NOBLOCK)
            except zmq.Again:
                break
            except zmq.ZMQError as exc:
                raise DriverError(f"{self._label}: receive failed ({exc})") from exc
            if got != stride:
                raise DriverError(f"{self._label}: got a {got}-byte message, expected {stride}")
            count += 1
            offset += stride
        return count

    def close(self) -> None:
        self._sock.close(linger=0)


class ZmqDriver(Driver):
    name = "zmq"
    Options = ZmqOptions
    has_builtin_broker = True

    def __init__(self, address: str, options: ZmqOptions,
                 credential: Credential | None = None) -> None:
        super().__init__(address, options, credential)
        self._host, self._port = split_address(address, self.name)
        self._context = zmq.Context.instance()

    def _socket(self, kind: int, port_offset: int) -> zmq.Socket:
        sock = self._context.socket(kind)
        sock.setsockopt(zmq.SNDHWM, self.options.hwm)
        sock.setsockopt(zmq.RCVHWM, self.options.hwm)
        sock.setsockopt(zmq.LINGER, 0)
        sock.connect(_endpoint(self._host, self._port + port_offset))
        return sock

    def _await(self, sock: zmq.Socket, what: str) -> bytes:
        if not sock.poll(READY_TIMEOUT_MS):
            sock.close(linger=0)
            raise DriverError(
                f"zmq broker at {self.address}: no {what} within {READY_TIMEOUT_MS // 1000} s "
                "(is a sixnines zmq broker listening there?)"
            )
        return sock.recv()

    def sender(self, message_size: int, connection_id: int) -> ZmqSender:
        sock = self._socket(zmq.XPUB, 0)
        sock.setsockopt(zmq.XPUB_NODROP, 1)  # block at the high-water mark, never drop
        self._await(sock, "subscription from the broker")
        return ZmqSender(sock)

    def receiver(self, message_size: int, connection_id: int) -> ZmqReceiver:
        sock = self._socket(zmq.SUB, 1)
        sock.setsockopt(zmq.SUBSCRIBE, b"")
        if self._await(sock, "welcome message") != WELCOME:
            raise DriverError(f"zmq broker at {self.address}: unexpected first message")
        return ZmqReceiver(sock, f"zmq broker at {self.address}")

    def requester(self, message_size: int, connection_id: int) -> tuple[ZmqSender, ZmqReceiver]:
        sock = self._socket(zmq.DEALER, 2)
        return ZmqSender(sock), ZmqReceiver(sock, f"zmq echo at {self.address}")

    @classmethod
    def serve_broker(cls, host: str, port: int, announce) -> None:
        context = zmq.Context.instance()
        frontend, backend, echo, port = _bind_broker(context, host, port)
        # ROUTER proxied onto itself: each request is routed back to the identity it came from
        threading.Thread(target=zmq.proxy, args=(echo, echo), daemon=True).start()
        announce(f"[{host}]:{port}" if ":" in host else f"{host}:{port}")
        zmq.proxy(frontend, backend)


def _bind_broker(context: zmq.Context, host: str, port: int):
    """Bind XSUB/XPUB/ROUTER on three consecutive ports (a free trio when port is 0).

    The broker's own high-water marks are unlimited: it must never be where messages drop.
    """
    for _ in range(BIND_ATTEMPTS):
        sockets = [context.socket(kind) for kind in (zmq.XSUB, zmq.XPUB, zmq.ROUTER)]
        for sock in sockets:
            sock.setsockopt(zmq.SNDHWM, 0)
            sock.setsockopt(zmq.RCVHWM, 0)
            sock.setsockopt(zmq.LINGER, 0)
        frontend, backend, echo = sockets
        backend.setsockopt(zmq.XPUB_WELCOME_MSG, WELCOME)
        try:
            if port:
                base = port
                frontend.bind(_endpoint(host, base))
            else:
                base = frontend.bind_to_random_port(_endpoint(host), 20000, 60000)
            backend.bind(_endpoint(host, base + 1))
            echo.bind(_endpoint(host, base + 2))
        except zmq.ZMQError:
            for sock in sockets:
                sock.close()
            if port:
                raise
            continue
        return frontend, backend, echo, base
    raise OSError(f"no three consecutive free ports on {host}")
