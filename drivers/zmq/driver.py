"""ZeroMQ: PUB/SUB through a `zmq.proxy` broker (one-way), DEALER to a ROUTER echo (round trip).

ZeroMQ subscriptions propagate asynchronously ("slow joiner"), and a PUB socket silently
drops what nobody is subscribed to yet, so both ends wait for proof before reporting
ready: the broker's XPUB sends a welcome message to each new subscriber, and publishers
use an XPUB socket that sees the subscription arrive. The ports are drivers/zmq/wire.py's.

Lanes are topics (wire.py): with more than one, each message goes out as the lane's topic
frame then the message (`ZmqLaneSender`), a receiver subscribes to its lane's topic only
and reads the topic frame into a scratch buffer (`ZmqReceiver` given the topic), and a
sender waits for a subscription to its own lane. One lane keeps single frames.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence

import zmq

from sixnines.drivers.base import (
    LENGTH_WORD,
    NONE_SMALLER,
    SOLE_LANE,
    Announce,
    Credential,
    Driver,
    DriverError,
    DriverOptions,
    Framing,
    Lane,
    LengthCutSender,
    Receiver,
    Sender,
    Waiter,
    split_address,
    wrong_size,
)
from sixnines.drivers.zmq.connection import (
    await_connected,
    await_first,
    await_subscription,
    bind_broker,
    client_socket,
    close,
    lost,
)
from sixnines.drivers.zmq.options import ZmqOptions
from sixnines.drivers.zmq.wire import (
    ECHO,
    PUBLISHERS,
    SUBSCRIBERS,
    WELCOME,
    broker_address,
    topic,
)
from sixnines.formats.payload import HEADER_SIZE

CHECK_EVERY = 64  # sends between two looks at the connection's monitor (a look: ~1 µs)


class ZmqSender(Sender):
    """Sends each frame as a message. ZeroMQ reconnects silently, so the connection's
    monitor is read every CHECK_EVERY sends and at each `settle`: a dropped connection
    (the broker gone) is a `DriverError`."""

    def __init__(self, sock: zmq.Socket, label: str) -> None:
        self._sock = sock
        self._label = label
        self._unchecked = 0

    def send(self, frames: memoryview, count: int) -> None:
        stride = len(frames) // count
        send = self._sock.send
        for offset in range(0, len(frames), stride):
            send(frames[offset : offset + stride])
        self._unchecked += 1
        if self._unchecked >= CHECK_EVERY:
            self.settle()

    def settle(self) -> None:
        self._unchecked = 0
        if lost(self._sock):
            raise DriverError(f"{self._label}: connection lost (the broker went away)")

    def close(self) -> None:
        close(self._sock)


class ZmqLaneSender(ZmqSender):
    """Sends each frame as a message of two frames, the lane's topic first: ZeroMQ routes
    (and filters) on a message's first frame, and the framework's messages stay as laid
    out."""

    def __init__(self, sock: zmq.Socket, label: str, lane_topic: bytes) -> None:
        super().__init__(sock, label)
        self._topic = lane_topic

    def send(self, frames: memoryview, count: int) -> None:
        stride = len(frames) // count
        send = self._sock.send
        lane_topic = self._topic
        for offset in range(0, len(frames), stride):
            send(lane_topic, zmq.SNDMORE)
            send(frames[offset : offset + stride])
        self._unchecked += 1
        if self._unchecked >= CHECK_EVERY:
            self.settle()


class ZmqReceiver(Receiver):
    """Receives single-frame messages, or with a `lane_topic` two-frame ones
    (`ZmqLaneSender`): the topic into a scratch buffer, the message into the caller's.
    ZeroMQ delivers a message's frames together, so the second is there once the first is."""

    def __init__(self, sock: zmq.Socket, label: str, lane_topic: bytes = b"",
                 smallest: int | None = None) -> None:
        self._sock = sock
        self._label = label
        # the smallest message taken below `stride` (none: every message is `stride` bytes)
        self._smallest = NONE_SMALLER if smallest is None else smallest
        self._scratch = bytearray(len(lane_topic)) if lane_topic else None
        self.pollable = sock  # a zmq socket's FD is edge-triggered: ZmqWaiter polls it

    def receive(self, out: memoryview, stride: int, timeout_ms: int) -> int:
        sock = self._sock
        if timeout_ms and not sock.poll(None if timeout_ms < 0 else timeout_ms):
            return 0
        scratch = self._scratch
        count = 0
        room = len(out) // stride
        offset = 0
        while count < room:
            try:
                if scratch is not None:
                    sock.recv_into(scratch, flags=zmq.NOBLOCK)
                got = sock.recv_into(out[offset : offset + stride], flags=zmq.NOBLOCK)
            except zmq.Again:
                break
            except zmq.ZMQError as exc:
                raise DriverError(f"{self._label}: receive failed ({exc})") from exc
            if got != stride and not self._smallest <= got <= stride:
                raise wrong_size(self._label, got, self._smallest, stride)
            count += 1
            offset += stride
        return count

    def close(self) -> None:
        close(self._sock)


class ZmqWaiter(Waiter):
    """zmq.Poller: a zmq socket's descriptor signals edges of its own state machine, not
    "messages waiting", so only libzmq's poll can wait on zmq sockets."""

    def __init__(self, receivers: Sequence[Receiver]) -> None:
        super().__init__(receivers)
        self._poller = zmq.Poller()
        self._index: dict[object, int] = {}
        for index, receiver in enumerate(receivers):
            self._poller.register(receiver.pollable, zmq.POLLIN)
            self._index[receiver.pollable] = index

    def poll(self, timeout_ms: int) -> list[int]:
        index = self._index
        return [index[sock] for sock, _ in self._poller.poll(timeout_ms)]


class ZmqDriver(Driver):
    name = "zmq"
    Options = ZmqOptions
    options: ZmqOptions  # what Options validated
    has_builtin_broker = True
    #: No routing: the key rides in the message (formats.keys.KEY_OFFSET) and the order of
    #: each key's messages is checked like any other.
    carries_keys = "in the message, after the header (nothing routes by it)"

    def __init__(self, address: str, options: ZmqOptions,
                 credential: Credential | None = None) -> None:
        super().__init__(address, options, credential)
        self._host, self._port = split_address(address, self.name)
        self._context: zmq.Context = zmq.Context.instance()

    def _socket(self, kind: int, port_offset: int, subscribe: Sequence[bytes] = ()
                ) -> zmq.Socket:
        return client_socket(self._context, kind, self._host, self._port + port_offset,
                             self.options.hwm, subscribe)

    def waiter(self, receivers: Sequence[Receiver]) -> ZmqWaiter:
        return ZmqWaiter(receivers)

    @classmethod
    def carries_varying_sizes(cls, options: DriverOptions, largest: int) -> bool:
        return True  # one zmq message per message; its length is ZeroMQ's to carry

    def framing(self, message_size: int, lane: Lane = SOLE_LANE) -> Framing:
        """Nothing around a message; when sizes vary, its length word before it, which
        `LengthCutSender` reads to send one message at a time."""
        return Framing(prefix=LENGTH_WORD.pack(message_size)) if self.sizes_vary else Framing()

    def receive_framing(self, message_size: int) -> Framing:
        return Framing()

    def sender(self, message_size: int, connection_id: int,
               lane: Lane = SOLE_LANE) -> Sender:
        lane_topic = topic(lane)
        sock = self._socket(zmq.XPUB, PUBLISHERS)
        sock.setsockopt(zmq.XPUB_NODROP, 1)  # block at the high-water mark, never drop
        label = f"zmq broker at {self.address}"
        await_subscription(sock, lane_topic, label)
        sender = ZmqLaneSender(sock, label, lane_topic) if lane_topic else ZmqSender(sock, label)
        return LengthCutSender(sender) if self.sizes_vary else sender

    def receiver(self, message_size: int, connection_id: int,
                 lane: Lane = SOLE_LANE) -> ZmqReceiver:
        lane_topic = topic(lane)
        # b"" (everything) takes in the welcome message; a lane's topic does not
        sock = self._socket(zmq.SUB, SUBSCRIBERS,
                            (WELCOME, lane_topic) if lane_topic else (b"",))
        label = f"zmq broker at {self.address}"
        if await_first(sock, "welcome message", label) != WELCOME:
            close(sock)
            raise DriverError(f"{label}: unexpected first message")
        smallest = HEADER_SIZE if self.sizes_vary else None
        if lane_topic:
            sock.setsockopt(zmq.UNSUBSCRIBE, WELCOME)
            return ZmqReceiver(sock, label, lane_topic, smallest)
        return ZmqReceiver(sock, label, smallest=smallest)

    def requester(self, message_size: int, connection_id: int) -> tuple[ZmqSender, ZmqReceiver]:
        sock = self._socket(zmq.DEALER, ECHO)
        label = f"zmq echo at {self.address}"
        await_connected(sock, label)
        return ZmqSender(sock, label), ZmqReceiver(sock, label)

    @classmethod
    def serve_broker(cls, host: str, port: int, announce: Announce) -> None:
        context: zmq.Context = zmq.Context.instance()
        try:
            frontend, backend, echo, port = bind_broker(context, host, port)
        except zmq.ZMQError as exc:  # as the other builtin broker's bind says it
            raise OSError(exc.errno, exc.strerror) from None
        # ROUTER proxied onto itself: each request is routed back to the identity it came from
        threading.Thread(target=zmq.proxy, args=(echo, echo), daemon=True).start()
        announce(broker_address(host, port))
        zmq.proxy(frontend, backend)
