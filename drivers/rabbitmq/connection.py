"""RabbitMQ connections: pika connects, authenticates, opens channel 1 and declares what a
role needs; then `RabbitmqLink` takes pika's socket over and speaks the hot path's frames
itself.

Taking the socket over reaches into pika's private members (`_impl.params.frame_max`,
`_impl._transport._sock`, `_impl._frame_buffer`, `_impl.ioloop`): pinned in pyproject's
`rabbitmq` extra and checked by tests/drivers/test_client_privates.py.
"""

from __future__ import annotations

import logging
import socket
import time

import pika
import pika.exceptions as errors
from pika.adapters.utils import connection_workflow

from sixnines.drivers.base import DriverError
from sixnines.drivers.rabbitmq.options import GUEST, RabbitmqOptions
from sixnines.drivers.rabbitmq.wire import (
    FRAME_MAX,
    Reader,
    connection_close_frame,
    consume_frame,
    stream_offset_table,
)
from sixnines.drivers.sockets import SocketIO

CONNECT_TIMEOUT_S = 10.0
# pika logs every failed connection attempt as errors with tracebacks; the driver says what
# failed in its own words (DriverError), so pika's own records are noise on a console
logging.getLogger("pika").setLevel(logging.CRITICAL)
CONFIRM_WAIT_S = 5.0  # how long close() waits for outstanding publisher confirms
CLOSE_WAIT_S = 2.0


def reason(exc: BaseException) -> str:
    """What a pika exception says (often an empty str() or a bare tuple)."""
    if hasattr(exc, "reply_code") and hasattr(exc, "reply_text"):
        return f"{exc.reply_code} {exc.reply_text}"
    inner = exc.args[0] if len(exc.args) == 1 and isinstance(exc.args[0], Exception) else None
    if inner is not None:
        return reason(inner)
    text = str(exc) or "; ".join(str(arg) for arg in exc.args) or type(exc).__name__
    return text.strip()


def connect(host: str, port: int, options: RabbitmqOptions,
            login: tuple[str | None, str | None], name: str, label: str):
    """(pika BlockingConnection, its channel 1), logged in as `login`; without a password
    only RabbitMQ's default user guest (whose password is guest: RabbitmqOptions)."""
    username, password = login
    if password is None:
        if username != GUEST:  # RabbitmqOptions refuses this; a Credential always has one
            raise DriverError(f"{label}: no password for user {username!r}")
        password = GUEST
    if username is None:  # RabbitmqOptions has a default user; a Credential names one
        raise DriverError(f"{label}: no user to log in as")
    params = pika.ConnectionParameters(
        host=host, port=port, virtual_host=options.vhost,
        credentials=pika.PlainCredentials(username, password),
        heartbeat=0, frame_max=FRAME_MAX, connection_attempts=1,
        socket_timeout=CONNECT_TIMEOUT_S, stack_timeout=CONNECT_TIMEOUT_S,
        blocked_connection_timeout=None,
        client_properties={"connection_name": name})
    try:
        connection = pika.BlockingConnection(params)
    except errors.ProbableAuthenticationError as exc:
        raise DriverError(f"{label}: authentication failed for user {username!r} "
                          f"({reason(exc)})") from exc
    except errors.ProbableAccessDeniedError as exc:
        raise DriverError(f"{label}: access to vhost {options.vhost!r} denied "
                          f"({reason(exc)})") from exc
    except connection_workflow.AMQPConnectorStackTimeout as exc:
        raise DriverError(f"{label}: cannot connect (no AMQP handshake within "
                          f"{CONNECT_TIMEOUT_S:.0f} s: is a RabbitMQ server listening "
                          "there?)") from exc
    except (errors.AMQPError, connection_workflow.AMQPConnectorException, OSError) as exc:
        raise DriverError(f"{label}: cannot connect ({reason(exc)})") from exc
    try:
        return connection, connection.channel()
    except errors.AMQPError as exc:
        connection.close()
        raise DriverError(f"{label}: cannot open a channel ({reason(exc)})") from exc


class RabbitmqLink(Reader):
    """One AMQP connection once pika has set it up: its socket (`io`), channel, and the
    reader of the frames the broker sends (deliveries, confirms, closes)."""

    def __init__(self, connection, channel, label: str, read_bytes: int) -> None:
        self._pika = connection
        try:  # pika's internals: the negotiated frame_max, its socket, bytes it has read
            frame_max = connection._impl.params.frame_max
            sock: socket.socket = connection._impl._transport._sock
            pending = bytes(connection._impl._frame_buffer)  # not yet a whole frame
        except AttributeError as exc:
            connection.close()
            raise DriverError(f"{label}: this pika version hides its socket ({exc}); "
                              "sixnines is tested with pika 1.3-1.4") from exc
        super().__init__(channel.channel_number, label, read_bytes, pending)
        self.frame_max = frame_max
        self.sock = sock
        self.io = SocketIO(sock, label, "connection closed by the broker")
        self.positions: dict[str, int] | None = None  # a stream consumer's (`consume`)
        self.queue = ""

    def handed_over(self) -> None:
        """After deliveries were handed over: a stream consumer notes the offset after the
        last of them, where it goes on from when it connects again (a stream keeps no
        position for an AMQP 0-9-1 consumer, and starting again from the first message or
        the next one would deliver twice or lose what came meanwhile)."""
        if self.positions is not None:
            self.positions[self.queue] = self.stream_offset() + 1

    def write(self, data) -> None:
        self.io.write(data)

    def check(self) -> None:
        """Take whatever the broker sent, without blocking (a publisher's confirms)."""
        if self.io.poller.poll(0):
            self.fill(0, len(self.buf))
            while self.next_delivery() is not None:
                pass  # a publishing connection consumes nothing

    def fill(self, timeout_ms: int, limit: int) -> None:
        """One read into the buffer (at most `limit` buffered bytes in all), waiting up to
        `timeout_ms` (0: not at all, -1: until something arrives)."""
        self.compact()
        if not self.io.readable(timeout_ms):
            return
        room = min(len(self.buf), limit) - self.have
        if room > 0:
            self.have += self.io.read(self.view[self.have : self.have + room])

    def consume(self, queue: str, no_ack: bool, positions: dict[str, int] | None = None
                ) -> None:
        """Basic.Consume, returning once the broker has confirmed it (deliveries may follow
        at once: they stay buffered). A stream's consumer passes the driver's `positions`
        (queue -> the offset after the last delivery handed over): it reads from there, or
        from the stream's first message, and `handed_over` keeps its entry current."""
        arguments = bytes(4)
        if positions is not None:
            self.positions, self.queue = positions, queue
            arguments = stream_offset_table(positions.get(queue, "first"))
        self.write(consume_frame(self.channel, queue, no_ack, arguments))
        deadline = time.monotonic() + CONNECT_TIMEOUT_S
        while not self.consuming:
            if time.monotonic() > deadline:
                raise DriverError(f"{self.label}: no consume-ok from the broker")
            self.fill(100, len(self.buf))
            self.skip_control()

    def await_confirms(self, timeout_s: float) -> bool:
        """Read until the broker has confirmed every publish (a nack raises); False when
        `timeout_s` passed first."""
        deadline = time.monotonic() + timeout_s
        while self.confirmed < self.published:
            if time.monotonic() >= deadline:
                return False
            self.fill(50, len(self.buf))
            while self.next_delivery() is not None:
                pass
        return True

    def close(self, wait_confirms: bool = False) -> None:
        """Wait (bounded) for outstanding confirms, then Connection.Close and its Close-Ok,
        so that every publish written has been routed before the socket goes."""
        try:
            if wait_confirms:
                self.await_confirms(CONFIRM_WAIT_S)
            self.write(connection_close_frame())
            deadline = time.monotonic() + CLOSE_WAIT_S
            while not self.closed and time.monotonic() < deadline:
                self.fill(50, len(self.buf))
                while self.next_delivery() is not None:
                    pass  # deliveries not handed over go back to the queue
        except DriverError:
            pass
        finally:
            self.sock.close()
            ioloop = getattr(self._pika._impl, "ioloop", None)
            if ioloop is not None:
                ioloop.close()
