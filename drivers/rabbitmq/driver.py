"""RabbitMQ (AMQP 0-9-1): pika sets each connection up, the hot path speaks frames itself.

pika connects, authenticates, opens channel 1, declares the exchange and queues and sets
basic.qos and confirm mode. The driver then takes pika's connected socket and speaks the
few frames the hot path needs on it (pika is not used on that connection again):

- Publish: pika's `basic_publish` cost 70-90 µs a message here (BlockingConnection flushes
  and polls per call); the same Basic.Publish + content header + body frame, pre-encoded as
  the `Framing` prefix with the 0xCE frame end as suffix, cost ~2 µs, and a coalesced batch
  is one write. That holds while a body fits one frame (`FRAME_MAX` − 8); larger bodies and
  requests (whose reply_to differs per requester) are copied into per-connection templates
  whose frame headers are pre-encoded, so the frame layout stays the driver's alone.
- Consume: pika's consumer cost 13-15 µs of CPU a 256-byte message, a frame parser over a
  read buffer ~3 µs; on 2 cores the broker needs that CPU. Acks are batched: one
  Basic.Ack(multiple) per `receive` call covering everything it returned (at-least-once
  as a real consumer does, prefetch bounding what is in flight), or none with `auto_ack`.
- Publisher confirms are counted without blocking: each `send` looks (one poll(0)) for
  frames from the broker, which also surfaces a channel or connection closed under us;
  a nack is a DriverError.

Delivery: with a named exchange (fanout) every receiver connection gets its own exclusive
auto-delete queue bound to it (fan-out); with `exchange: ""` everything goes through one
named queue (work-sharing, so one receiver connection at most). Round trip always uses the
default exchange: requests to "<queue>.requests", each carrying reply_to = the requester's
exclusive server-named queue; the responder publishes each body back to its reply_to.
"""

from __future__ import annotations

import select
import socket
import struct
import time

import numpy as np
from pydantic import Field

from sixnines.drivers.base import (
    Credential,
    Driver,
    DriverError,
    Framing,
    LoginOptions,
    split_address,
)

CONNECT_TIMEOUT_S = 10.0
FRAME_MAX = 131072  # asked of the broker (RabbitMQ's default); one body frame holds 8 less
MAX_MESSAGE = 128 << 20  # RabbitMQ's default max_message_size
READ_BYTES = 4 << 20
CONFIRM_WAIT_S = 5.0  # how long close() waits for outstanding publisher confirms
CLOSE_WAIT_S = 2.0
SCALAR_BATCH = 4  # up to this many messages, slice copies beat numpy's call overhead

FRAME = struct.Struct(">BHI")  # type, channel, payload size; then payload, then 0xCE
END = b"\xce"
METHOD_FRAME, HEADER_FRAME, BODY_FRAME, HEARTBEAT_FRAME = 1, 2, 3, 8
U8, U16, U32, U64 = (struct.Struct(f">{c}") for c in "BHIQ")


def _method(class_id: int, method_id: int) -> int:
    return class_id << 16 | method_id


DELIVER, CONSUME_OK, CANCEL = _method(60, 60), _method(60, 21), _method(60, 30)
ACK, NACK, RETURN = _method(60, 80), _method(60, 120), _method(60, 50)
CONNECTION_CLOSE, CONNECTION_CLOSE_OK = _method(10, 50), _method(10, 51)
CHANNEL_CLOSE = _method(20, 40)
DELIVERY_MODE_FLAG, REPLY_TO_FLAG = 1 << 12, 1 << 9


class RabbitmqOptions(LoginOptions):
    exchange: str = Field("sixnines", max_length=127)
    """A fanout exchange (declared durable) giving each receiver connection its own queue:
    fan-out. "" is the default exchange: one named queue shared by its consumers."""
    queue: str = Field("sixnines", min_length=1, max_length=127)
    """The queue of the default-exchange form; round trip uses "<queue>.requests"."""
    persistent: bool = False
    """delivery_mode 2 on every message and durable queues (the broker writes to disk)."""
    confirms: bool = False
    """Publisher confirms, counted as they arrive without slowing the send loop."""
    prefetch: int = Field(1000, ge=0)
    """basic.qos prefetch count: unacknowledged deliveries in flight (0: unlimited)."""
    auto_ack: bool = False
    """Consume without acknowledgements (the broker pushes as fast as it can; no prefetch)."""
    username: str = "guest"
    """With neither password_env nor password_file, the password is "guest" (RabbitMQ lets
    guest in over loopback only: the recipe's node on loopback)."""
    vhost: str = "/"


def _shortstr(text: str | bytes) -> bytes:
    raw = text.encode() if isinstance(text, str) else text
    if len(raw) > 255:
        raise ValueError(f"AMQP short string longer than 255 bytes: {raw[:40]!r}...")
    return bytes([len(raw)]) + raw


def _frame(kind: int, channel: int, payload: bytes) -> bytes:
    return FRAME.pack(kind, channel, len(payload)) + payload + END


def _publish_head(channel: int, exchange: str, routing_key: str | bytes, body_size: int,
                  persistent: bool, reply_to: str | bytes = b"") -> bytes:
    """Basic.Publish and its content header: what precedes the body frames of a message."""
    method = U32.pack(_method(60, 40)) + b"\0\0" + _shortstr(exchange) + _shortstr(
        routing_key) + b"\0"
    flags, properties = 0, b""
    if persistent:  # properties follow their flag bits from high to low
        flags |= DELIVERY_MODE_FLAG
        properties += b"\x02"
    if reply_to:
        flags |= REPLY_TO_FLAG
        properties += _shortstr(reply_to)
    header = struct.pack(">HHQH", 60, 0, body_size, flags) + properties
    return _frame(METHOD_FRAME, channel, method) + _frame(HEADER_FRAME, channel, header)


def _fits_one_frame(size: int) -> bool:
    return size <= FRAME_MAX - 8


class Link:
    """One AMQP connection once pika has set it up: its socket, channel, and a reader of
    the frames the broker sends (deliveries, confirms, closes)."""

    def __init__(self, connection, channel, label: str, read_bytes: int) -> None:
        self.label = label
        self.channel = channel.channel_number
        self._pika = connection
        try:  # pika's internals: the negotiated frame_max, its socket, bytes it has read
            self.frame_max = connection._impl.params.frame_max
            self.sock: socket.socket = connection._impl._transport._sock
            pending = bytes(connection._impl._frame_buffer)  # not yet a whole frame
        except AttributeError as exc:
            connection.close()
            raise DriverError(f"{label}: this pika version hides its socket ({exc}); "
                              "sixnines is tested with pika 1.3-1.4") from exc
        self.sock.setblocking(True)  # for sendall; reads pass MSG_DONTWAIT
        self.buf = bytearray(max(read_bytes, 2 * len(pending)))
        self.view = memoryview(self.buf)
        self.have = len(pending)
        self.buf[: self.have] = pending
        self.pos = 0  # first byte not yet parsed
        self.poller = select.poll()
        self.poller.register(self.sock, select.POLLIN)
        self.tag = 0  # delivery tag of the last delivery parsed
        self.header_at = 0  # content header frame of the last delivery parsed
        self.scratch = bytearray()  # a body spread over several frames, joined
        self.consuming = False
        self.published = 0  # publishes so far (= the last delivery tag in confirm mode)
        self.confirmed = 0  # every publish up to this tag is confirmed
        self._confirmed_alone: set[int] = set()  # single acks above `confirmed`
        self._ack = bytearray(_frame(METHOD_FRAME, self.channel,
                                     U32.pack(ACK) + bytes(9)))
        self._closed = False

    # --- writing --------------------------------------------------------------------

    def write(self, data) -> None:
        try:
            self.sock.sendall(data)
        except OSError as exc:
            raise DriverError(f"{self.label}: connection lost ({exc})") from exc

    def ack_frame(self, tag: int) -> bytearray:
        """Basic.Ack(tag, multiple): acknowledges every delivery up to `tag`."""
        U64.pack_into(self._ack, 11, tag)
        self._ack[19] = 1
        return self._ack

    def check(self) -> None:
        """Take whatever the broker sent, without blocking (a publisher's confirms)."""
        if self.poller.poll(0):
            self.fill(0, len(self.buf))
            while self.next_delivery() is not None:
                pass  # a publishing connection consumes nothing

    # --- reading --------------------------------------------------------------------

    def fill(self, timeout_ms: int, limit: int) -> None:
        """One read into the buffer (at most `limit` buffered bytes in all), waiting up to
        `timeout_ms` (0: not at all, -1: until something arrives)."""
        if self.pos:
            rest = self.have - self.pos
            self.view[:rest] = self.view[self.pos : self.have]
            self.have, self.pos = rest, 0
        if timeout_ms and not self.poller.poll(timeout_ms):
            return
        room = min(len(self.buf), limit) - self.have
        if room <= 0:
            return
        try:
            got = self.sock.recv_into(self.view[self.have :], room, socket.MSG_DONTWAIT)
        except BlockingIOError:
            return
        except OSError as exc:
            raise DriverError(f"{self.label}: connection lost ({exc})") from exc
        if got == 0:
            raise DriverError(f"{self.label}: connection closed by the broker")
        self.have += got

    def next_delivery(self) -> memoryview | None:
        """Parse up to and including the next complete delivery and return its body (valid
        until the next `fill`); None when none is complete. Other frames are handled on
        the way."""
        if not self._skip_control():
            return None
        buf, have, pos = self.buf, self.have, self.pos
        end = pos + 8 + U32.unpack_from(buf, pos + 3)[0]
        tag = U64.unpack_from(buf, pos + 12 + buf[pos + 11])[0]  # after the consumer tag
        header = end
        if have - header < 8:
            return None
        kind, _, size = FRAME.unpack_from(buf, header)
        body_at = header + 8 + size
        if body_at > have:
            return None
        if kind != HEADER_FRAME:
            raise DriverError(f"{self.label}: protocol error (no content header after a "
                              "delivery)")
        body_size = U64.unpack_from(buf, header + 11)[0]
        if body_size == 0:
            body, after = self.view[body_at:body_at], body_at
        elif have - body_at < 8:
            return None
        elif U32.unpack_from(buf, body_at + 3)[0] == body_size:  # one body frame
            after = body_at + 8 + body_size
            if after > have:
                return None
            body = self.view[body_at + 7 : after - 1]
        else:
            body, after = self._joined_body(body_at, body_size)
            if body is None:
                return None
        self.tag, self.header_at, self.pos = tag, header, after
        return body

    def _joined_body(self, at: int, body_size: int) -> tuple[memoryview | None, int]:
        """A body in several frames, once all of them are buffered, joined in `scratch`."""
        spans = []
        total = 0
        while total < body_size:
            if self.have - at < 8:
                return None, at
            size = U32.unpack_from(self.buf, at + 3)[0]
            if at + 8 + size > self.have:
                return None, at
            spans.append((at + 7, size))
            total += size
            at += 8 + size
        if len(self.scratch) != body_size:
            self.scratch = bytearray(body_size)
        offset = 0
        for start, size in spans:
            self.scratch[offset : offset + size] = self.view[start : start + size]
            offset += size
        return memoryview(self.scratch), at

    def _skip_control(self) -> bool:
        """Handle frames up to the next Basic.Deliver (left unparsed); False when no
        complete deliver frame is buffered."""
        buf, have, pos = self.buf, self.have, self.pos
        while have - pos >= 8:
            kind, _, size = FRAME.unpack_from(buf, pos)
            end = pos + 8 + size
            if end > have:
                break
            if kind == METHOD_FRAME:
                method = U32.unpack_from(buf, pos + 7)[0]
                if method == DELIVER:
                    self.pos = pos
                    return True
                self._control(method, pos + 11)
            elif kind != HEARTBEAT_FRAME:
                raise DriverError(f"{self.label}: protocol error (frame type {kind} out of "
                                  "place)")
            pos = end
        self.pos = pos
        return False

    def _control(self, method: int, at: int) -> None:
        buf = self.buf
        if method in (ACK, NACK):
            tag, multiple = U64.unpack_from(buf, at)[0], buf[at + 8] & 1
            if method == NACK:
                raise DriverError(f"{self.label}: the broker refused publish {tag} "
                                  "(publisher confirms nack)")
            alone = self._confirmed_alone
            if multiple:
                self.confirmed = max(self.confirmed, tag or self.published)
                if alone:
                    self._confirmed_alone = alone = {t for t in alone if t > self.confirmed}
            else:
                alone.add(tag)
            while self.confirmed + 1 in alone:
                self.confirmed += 1
                alone.discard(self.confirmed)
        elif method == CONSUME_OK:
            self.consuming = True
        elif method in (CONNECTION_CLOSE, CHANNEL_CLOSE):
            code = U16.unpack_from(buf, at)[0]
            text = bytes(buf[at + 3 : at + 3 + buf[at + 2]]).decode(errors="replace")
            what = "connection" if method == CONNECTION_CLOSE else "channel"
            self._closed = method == CONNECTION_CLOSE
            raise DriverError(f"{self.label}: the broker closed the {what} ({code} {text})")
        elif method == CANCEL:
            raise DriverError(f"{self.label}: the broker cancelled the consumer (queue "
                              "deleted?)")
        elif method == CONNECTION_CLOSE_OK:
            self._closed = True
        # Basic.Return (never mandatory here), Connection.Blocked/Unblocked: nothing to do

    def reply_to(self) -> bytes:
        """The reply_to property of the last delivery parsed."""
        buf, at = self.buf, self.header_at + 19
        flags = U16.unpack_from(buf, at)[0]
        at += 2
        for bit in range(15, 9, -1):  # the properties before reply_to, in order
            if not flags & (1 << bit):
                continue
            if bit == 13:  # headers: a field table
                at += 4 + U32.unpack_from(buf, at)[0]
            elif bit in (12, 11):  # delivery-mode, priority: octets
                at += 1
            else:
                at += 1 + buf[at]
        if not flags & REPLY_TO_FLAG:
            raise DriverError(f"{self.label}: a request without reply_to")
        return bytes(buf[at + 1 : at + 1 + buf[at]])

    # --- setup and teardown ---------------------------------------------------------

    def consume(self, queue: str, no_ack: bool) -> None:
        """Basic.Consume, returning once the broker has confirmed it (deliveries may follow
        at once: they stay buffered)."""
        method = (U32.pack(_method(60, 20)) + b"\0\0" + _shortstr(queue) + _shortstr(b"")
                  + bytes([2 if no_ack else 0]) + U32.pack(0))
        self.write(_frame(METHOD_FRAME, self.channel, method))
        deadline = time.monotonic() + CONNECT_TIMEOUT_S
        while not self.consuming:
            if time.monotonic() > deadline:
                raise DriverError(f"{self.label}: no consume-ok from the broker")
            self.fill(100, len(self.buf))
            self._skip_control()

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
            close = U32.pack(CONNECTION_CLOSE) + U16.pack(200) + _shortstr("bye") + bytes(4)
            self.write(_frame(METHOD_FRAME, 0, close))
            deadline = time.monotonic() + CLOSE_WAIT_S
            while not self._closed and time.monotonic() < deadline:
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


class _Publisher:
    def __init__(self, link: Link, confirms: bool) -> None:
        self._link = link
        self._confirms = confirms

    @property
    def unconfirmed(self) -> int:
        """Publishes the broker has not confirmed yet (0 without confirms)."""
        return self._link.published - self._link.confirmed if self._confirms else 0

    def settle(self) -> None:
        """With `confirms`: wait until the broker has confirmed every publish so far."""
        if self._confirms and not self._link.await_confirms(CONFIRM_WAIT_S):
            raise DriverError(f"{self._link.label}: {self.unconfirmed} publishes not "
                              f"confirmed within {CONFIRM_WAIT_S:.0f} s")

    def close(self) -> None:
        self._link.close(self._confirms)


class DirectSender(_Publisher):
    """Frames arrive pre-encoded (Framing prefix/suffix): a batch is one write."""

    def send(self, frames: memoryview, count: int) -> None:
        link = self._link
        link.write(frames)
        link.published += count
        link.check()


class TemplateSender(_Publisher):
    """Copies each message into a per-connection template of pre-encoded frames: for a
    head the shared Framing cannot hold (a requester's reply_to) or a body spread over
    several frames. The templates are laid out once, end to end, and reused."""

    def __init__(self, link: Link, head: bytes, message_size: int, offset: int,
                 confirms: bool) -> None:
        super().__init__(link, confirms)
        self._offset = offset  # where the message starts in each incoming frame
        chunk = link.frame_max - 8
        template = bytearray(head)
        self._chunks = []  # (where in the template, where in the message, length)
        for start in range(0, message_size, chunk):
            size = min(chunk, message_size - start)
            template += FRAME.pack(BODY_FRAME, link.channel, size)
            self._chunks.append((len(template), start, size))
            template += bytes(size) + END
        self._template = bytes(template)
        self._ring = np.empty(0, np.uint8)
        self._room(max(1, min(64, (1 << 20) // len(template))))  # grows for larger batches

    def _room(self, count: int) -> None:
        slot = len(self._template)
        if len(self._ring) < count * slot:
            self._ring = np.frombuffer(self._template * count, np.uint8).copy()
            self._wire = memoryview(self._ring)

    def send(self, frames: memoryview, count: int) -> None:
        self._room(count)
        slot, wire, offset = len(self._template), self._wire, self._offset
        stride = len(frames) // count
        if count <= SCALAR_BATCH:
            for k in range(count):
                for at, start, size in self._chunks:
                    source = k * stride + offset + start
                    wire[k * slot + at : k * slot + at + size] = frames[source : source + size]
        else:
            into = self._ring[: count * slot].reshape(count, slot)
            source = np.frombuffer(frames, np.uint8).reshape(count, stride)
            for at, start, size in self._chunks:
                into[:, at : at + size] = source[:, offset + start : offset + start + size]
        link = self._link
        link.write(wire[: count * slot])
        link.published += count
        link.check()


class RabbitmqReceiver:
    """Copies delivered bodies into the caller's buffer and acks them in one frame."""

    def __init__(self, link: Link, message_size: int, auto_ack: bool) -> None:
        self._link = link
        self._size = message_size
        self._ack = not auto_ack
        self.pollable = link.sock

    def _take(self, out: memoryview, stride: int, room: int) -> int:
        next_delivery, size = self._link.next_delivery, self._size
        n = at = 0
        while n < room:
            body = next_delivery()
            if body is None:
                break
            if len(body) != size:
                raise DriverError(f"{self._link.label}: got a {len(body)}-byte message, "
                                  f"expected {size}")
            out[at : at + size] = body
            n += 1
            at += stride
        return n

    def receive(self, out: memoryview, stride: int, timeout_ms: int) -> int:
        link = self._link
        room = len(out) // stride
        n = self._take(out, stride, room)
        if not n:
            # read no more than `room` messages could fill: each takes more wire than stride
            link.fill(timeout_ms, room * stride)
            n = self._take(out, stride, room)
        if n and self._ack:
            link.write(link.ack_frame(link.tag))
        return n

    def close(self) -> None:
        self._link.close()


class RabbitmqResponder:
    """Publishes each request's body to its reply_to through the default exchange, then
    acks the requests, all in one write per batch."""

    def __init__(self, link: Link, message_size: int, options: RabbitmqOptions) -> None:
        self._link = link
        self._size = message_size
        self._options = options
        self._heads: dict[bytes, bytes] = {}  # reply_to -> encoded publish head
        self._out = bytearray()

    def _head(self, reply_to: bytes) -> bytes:
        link, size = self._link, self._size
        head = _publish_head(link.channel, "", reply_to, size, self._options.persistent)
        if size <= link.frame_max - 8:
            head += FRAME.pack(BODY_FRAME, link.channel, size)
        self._heads[reply_to] = head
        return head

    def _take(self) -> int:
        link, out, heads = self._link, self._out, self._heads
        chunk = link.frame_max - 8
        n = 0
        while (body := link.next_delivery()) is not None:
            reply_to = link.reply_to()
            head = heads.get(reply_to) or self._head(reply_to)
            out += head
            if len(body) <= chunk:
                out += body
                out += END
            else:
                for start in range(0, len(body), chunk):
                    piece = body[start : start + chunk]
                    out += FRAME.pack(BODY_FRAME, link.channel, len(piece))
                    out += piece
                    out += END
            n += 1
        return n

    def relay(self, timeout_ms: int) -> int:
        link = self._link
        n = self._take()
        if not n:
            link.fill(timeout_ms, len(link.buf))
            n = self._take()
        if n:
            if not self._options.auto_ack:
                self._out += link.ack_frame(link.tag)
            link.write(self._out)
            self._out.clear()
            link.published += n
        return n

    def close(self) -> None:
        self._link.close(self._options.confirms)


class RabbitmqDriver(Driver):
    name = "rabbitmq"
    Options = RabbitmqOptions
    needs_responder = True

    def __init__(self, address: str, options: RabbitmqOptions,
                 credential: Credential | None = None) -> None:
        super().__init__(address, options, credential)
        self._host, self._port = split_address(address, self.name)
        self._label = f"rabbitmq at {address}"

    @property
    def _requests(self) -> str:
        return f"{self.options.queue}.requests"

    def framing(self, message_size: int) -> Framing:
        """The whole Basic.Publish up to the body, when the body fits one frame (channel 1:
        pika opens it first on every connection)."""
        if not _fits_one_frame(message_size):
            return Framing()
        options = self.options
        head = _publish_head(1, options.exchange, "" if options.exchange else options.queue,
                             message_size, options.persistent)
        return Framing(prefix=head + FRAME.pack(BODY_FRAME, 1, message_size), suffix=END)

    def receive_framing(self, message_size: int) -> Framing:
        return Framing()  # bare bodies, end to end

    @classmethod
    def workload_problems(cls, options: RabbitmqOptions, workload) -> list[str]:
        if not isinstance(options, RabbitmqOptions):
            return []  # invalid options (still a dict): the scenario loader reports them
        problems = []
        receivers = workload.consumers * workload.connections
        if str(workload.mode) == "one-way" and not options.exchange and receivers > 1:
            problems.append(
                f"exchange \"\" (the default exchange) shares queue {options.queue!r} among "
                f"its consumers, each message going to one of them, but this workload has "
                f"{receivers} receiver connections and sixnines measures fan-out (every "
                "receiver gets every message): name a fanout exchange (option exchange) or "
                "use one consumer with one connection")
        if workload.message_size > MAX_MESSAGE:
            problems.append(f"message_size {workload.message_size} is above RabbitMQ's "
                            f"default max_message_size ({MAX_MESSAGE} bytes)")
        return problems

    # --- connections ----------------------------------------------------------------

    def _connect(self, role: str, connection_id: int):
        import pika
        import pika.exceptions as errors

        username, password = self.login()
        params = pika.ConnectionParameters(
            host=self._host, port=self._port, virtual_host=self.options.vhost,
            credentials=pika.PlainCredentials(username, password or "guest"),
            heartbeat=0, frame_max=FRAME_MAX, connection_attempts=1,
            socket_timeout=CONNECT_TIMEOUT_S, stack_timeout=CONNECT_TIMEOUT_S,
            blocked_connection_timeout=None,
            client_properties={"connection_name": f"sixnines {role} {connection_id}"})
        try:
            connection = pika.BlockingConnection(params)
        except errors.ProbableAuthenticationError as exc:
            raise DriverError(f"{self._label}: authentication failed for user "
                              f"{username!r} ({_reason(exc)})") from exc
        except errors.ProbableAccessDeniedError as exc:
            raise DriverError(f"{self._label}: access to vhost {self.options.vhost!r} "
                              f"denied ({_reason(exc)})") from exc
        except (errors.AMQPError, OSError) as exc:
            raise DriverError(f"{self._label}: cannot connect ({_reason(exc)})") from exc
        try:
            return connection, connection.channel()
        except errors.AMQPError as exc:
            connection.close()
            raise DriverError(f"{self._label}: cannot open a channel ({_reason(exc)})") from exc

    def _setup(self, role: str, connection_id: int, prepare, read_bytes: int = 1 << 16):
        """Connect, let `prepare(channel)` declare what the role needs (returning a value
        passed back), and hand the connection over to a Link."""
        import pika.exceptions as errors

        connection, channel = self._connect(role, connection_id)
        try:
            value = prepare(channel)
            if self.options.confirms and role in ("producer", "requester", "responder"):
                channel.confirm_delivery()
        except errors.AMQPError as exc:
            if connection.is_open:
                connection.close()
            raise DriverError(f"{self._label}: setting up the {role} failed "
                              f"({_reason(exc)})") from exc
        return Link(connection, channel, self._label, read_bytes), value

    def _consumer(self, channel, queue: str = "") -> str:
        """The queue a consumer reads, with its prefetch: a named queue is deleted and
        declared afresh (nothing stale from an earlier run is counted, and a sweep of
        `persistent` may change its durability); "" declares an exclusive server-named one.
        Publishers never declare queues: the consumer side owns them."""
        options = self.options
        if not options.auto_ack:
            channel.basic_qos(prefetch_count=options.prefetch)
        if queue:
            channel.queue_delete(queue)
            channel.queue_declare(queue, durable=options.persistent)
            return queue
        return channel.queue_declare("", durable=options.persistent, exclusive=True,
                                     auto_delete=True).method.queue

    def _publisher(self, link: Link, message_size: int, head: bytes, framed: bool):
        confirms = self.options.confirms
        if framed and _fits_one_frame(message_size):
            if link.channel != 1 or link.frame_max < message_size + 8:
                link.close()
                raise DriverError(f"{self._label}: the broker offers frame_max "
                                  f"{link.frame_max} on channel {link.channel}; pre-encoded "
                                  f"publishing needs {message_size + 8} on channel 1")
            return DirectSender(link, confirms)
        offset = len(self.framing(message_size).prefix)
        return TemplateSender(link, head, message_size, offset, confirms)

    def sender(self, message_size: int, connection_id: int):
        options = self.options

        def prepare(channel) -> None:
            if options.exchange:
                channel.exchange_declare(options.exchange, "fanout", durable=True)

        link, _ = self._setup("producer", connection_id, prepare)
        head = _publish_head(link.channel, options.exchange,
                             "" if options.exchange else options.queue, message_size,
                             options.persistent)
        return self._publisher(link, message_size, head, framed=True)

    def receiver(self, message_size: int, connection_id: int) -> RabbitmqReceiver:
        options = self.options

        def prepare(channel) -> str:
            if not options.exchange:
                return self._consumer(channel, options.queue)
            channel.exchange_declare(options.exchange, "fanout", durable=True)
            queue = self._consumer(channel)
            channel.queue_bind(queue, options.exchange)
            return queue

        return self._subscribe("consumer", connection_id, prepare, message_size)[0]

    def _subscribe(self, role: str, connection_id: int, prepare,
                   message_size: int) -> tuple[RabbitmqReceiver, str]:
        read_bytes = max(READ_BYTES, 4 * (message_size + 512))
        link, queue = self._setup(role, connection_id, prepare, read_bytes)
        try:
            link.consume(queue, self.options.auto_ack)
        except DriverError:
            link.close()
            raise
        return RabbitmqReceiver(link, message_size, self.options.auto_ack), queue

    def requester(self, message_size: int, connection_id: int):
        options = self.options
        replies, reply_to = self._subscribe(
            "requester", connection_id,
            self._consumer, message_size)

        try:
            link, _ = self._setup("requester", connection_id, lambda channel: None)
        except DriverError:
            replies.close()
            raise
        head = _publish_head(link.channel, "", self._requests, message_size,
                             options.persistent, reply_to)
        return self._publisher(link, message_size, head, framed=False), replies

    def responder(self, message_size: int, connection_id: int) -> RabbitmqResponder:
        read_bytes = max(READ_BYTES, 4 * (message_size + 512))
        link, queue = self._setup(
            "responder", connection_id,
            lambda channel: self._consumer(channel, self._requests), read_bytes)
        try:
            link.consume(queue, self.options.auto_ack)
        except DriverError:
            link.close()
            raise
        return RabbitmqResponder(link, message_size, self.options)


def _reason(exc: BaseException) -> str:
    """What a pika exception says (often an empty str() or a bare tuple)."""
    if hasattr(exc, "reply_code") and hasattr(exc, "reply_text"):
        return f"{exc.reply_code} {exc.reply_text}"
    inner = exc.args[0] if len(exc.args) == 1 and isinstance(exc.args[0], Exception) else None
    if inner is not None:
        return _reason(inner)
    text = str(exc) or "; ".join(str(arg) for arg in exc.args) or type(exc).__name__
    return text.strip()
