"""AMQP 0-9-1 frames as the rabbitmq driver writes and reads them on the hot path: the
pre-encoded Basic.Publish (method, content header, body frames), Basic.Consume, Basic.Ack,
Connection.Close, and a parser of what the broker sends (with a stream's offset of each
delivery). Pure functions and a parser over
a buffer; the socket is drivers/rabbitmq/connection.py's.
"""

from __future__ import annotations

import struct

from sixnines.drivers.base import DriverError

FRAME_MAX = 131072  # asked of the broker (RabbitMQ's default); one body frame holds 8 less
FRAME = struct.Struct(">BHI")  # type, channel, payload size; then payload, then 0xCE
END = b"\xce"
METHOD_FRAME, HEADER_FRAME, BODY_FRAME, HEARTBEAT_FRAME = 1, 2, 3, 8
U8, U16, U32, U64 = (struct.Struct(f">{c}") for c in "BHIQ")


def method_id(class_id: int, method: int) -> int:
    """A method's class and method ids as the u32 that starts a method frame's payload."""
    return class_id << 16 | method


DELIVER, CONSUME_OK, CANCEL = method_id(60, 60), method_id(60, 21), method_id(60, 30)
ACK, NACK = method_id(60, 80), method_id(60, 120)
CONNECTION_CLOSE, CONNECTION_CLOSE_OK = method_id(10, 50), method_id(10, 51)
CHANNEL_CLOSE = method_id(20, 40)
DELIVERY_MODE_FLAG, REPLY_TO_FLAG = 1 << 12, 1 << 9
HEADERS_FLAG = 1 << 13
STREAM_OFFSET = b"x-stream-offset"  # a stream delivery's header, and a consume argument
#: Sizes of the field-table values of fixed size (RabbitMQ's types); the others carry a
#: length: 's' a u8 before a short string, 'S', 'x', 'A', 'F' a u32 before their bytes.
FIXED_FIELD = {ord(c): n for c, n in (("t", 1), ("b", 1), ("B", 1), ("s", 2), ("u", 2),
                                      ("I", 4), ("i", 4), ("f", 4), ("l", 8), ("d", 8),
                                      ("T", 8), ("D", 5), ("V", 0))}


def shortstr(text: str | bytes) -> bytes:
    """An AMQP short string: a length octet, then at most 255 bytes."""
    raw = text.encode() if isinstance(text, str) else text
    if len(raw) > 255:
        raise ValueError(f"AMQP short string longer than 255 bytes: {raw[:40]!r}...")
    return bytes([len(raw)]) + raw


def frame(kind: int, channel: int, payload: bytes) -> bytes:
    """A frame: type, channel, payload size, payload, frame end."""
    return FRAME.pack(kind, channel, len(payload)) + payload + END


def publish_head(channel: int, exchange: str, routing_key: str | bytes, body_size: int,
                 persistent: bool, reply_to: str | bytes = b"") -> bytes:
    """Basic.Publish and its content header: what precedes the body frames of a message."""
    method = U32.pack(method_id(60, 40)) + b"\0\0" + shortstr(exchange) + shortstr(
        routing_key) + b"\0"
    flags, properties = 0, b""
    if persistent:  # properties follow their flag bits from high to low
        flags |= DELIVERY_MODE_FLAG
        properties += b"\x02"
    if reply_to:
        flags |= REPLY_TO_FLAG
        properties += shortstr(reply_to)
    header = struct.pack(">HHQH", 60, 0, body_size, flags) + properties
    return frame(METHOD_FRAME, channel, method) + frame(HEADER_FRAME, channel, header)


def fits_one_frame(size: int, frame_max: int = FRAME_MAX) -> bool:
    """Whether a `size`-byte body fits one body frame (8 bytes of framing around it)."""
    return size <= frame_max - 8


def stream_offset_table(offset: int | str) -> bytes:
    """The arguments of a stream's Basic.Consume: x-stream-offset, a position (a long) or
    "first", "last", "next" (a long string)."""
    if isinstance(offset, str):
        value = b"S" + U32.pack(len(offset)) + offset.encode()
    else:
        value = b"l" + struct.pack(">q", offset)
    entry = shortstr(STREAM_OFFSET) + value
    return U32.pack(len(entry)) + entry


def consume_frame(channel: int, queue: str, no_ack: bool, arguments: bytes = bytes(4)) -> bytes:
    """Basic.Consume of `queue` with a server-made consumer tag; `arguments` an encoded
    field table (empty by default)."""
    payload = (U32.pack(method_id(60, 20)) + b"\0\0" + shortstr(queue) + shortstr(b"")
               + bytes([2 if no_ack else 0]) + arguments)
    return frame(METHOD_FRAME, channel, payload)


def table_long(buf, at: int, key: bytes) -> int | None:
    """The signed 64-bit value of `key` in the field table at `at` of `buf`; None when the
    table has no such long."""
    end = at + 4 + U32.unpack_from(buf, at)[0]
    at += 4
    while at < end:
        name = bytes(buf[at + 1 : at + 1 + buf[at]])
        at += 1 + buf[at]
        kind = buf[at]
        at += 1
        if name == key and kind == ord("l"):
            return int(struct.unpack_from(">q", buf, at)[0])
        if kind in FIXED_FIELD:
            at += FIXED_FIELD[kind]
        elif kind == ord("s"):
            at += 1 + buf[at]
        else:  # S, x, A, F: a u32 length
            at += 4 + U32.unpack_from(buf, at)[0]
    return None


def connection_close_frame() -> bytes:
    """Connection.Close (200, "bye"), on channel 0 as every connection method."""
    return frame(METHOD_FRAME, 0, U32.pack(CONNECTION_CLOSE) + U16.pack(200) + shortstr("bye")
                 + bytes(4))


class Reader:
    """The frames a broker sends on one connection, parsed from a buffer: deliveries
    (their bodies handed out one by one), publisher confirms (counted), consume-ok, and
    closes and cancels (raised as DriverError). Bytes come in through `buf[have:]`; what
    is incomplete stays for the next call."""

    def __init__(self, channel: int, label: str, read_bytes: int, pending: bytes = b"") -> None:
        self.label = label
        self.channel = channel
        self.buf = bytearray(max(read_bytes, 2 * len(pending)))
        self.view = memoryview(self.buf)
        self.have = len(pending)
        self.buf[: self.have] = pending
        self.pos = 0  # first byte not yet parsed
        self.tag = 0  # delivery tag of the last delivery parsed
        self.header_at = 0  # content header frame of the last delivery parsed
        self.scratch = bytearray()  # a body spread over several frames, joined
        self.consuming = False
        self.published = 0  # publishes so far (= the last delivery tag in confirm mode)
        self.confirmed = 0  # every publish up to this tag is confirmed
        self._confirmed_alone: set[int] = set()  # single acks above `confirmed`
        self._ack = bytearray(frame(METHOD_FRAME, channel, U32.pack(ACK) + bytes(9)))
        self.closed = False  # the broker closed the connection (or confirmed our close)

    def ack_frame(self, tag: int) -> bytearray:
        """Basic.Ack(tag, multiple): acknowledges every delivery up to `tag`."""
        U64.pack_into(self._ack, 11, tag)
        self._ack[19] = 1
        return self._ack

    def compact(self) -> None:
        """Move the unparsed bytes to the front of the buffer."""
        if self.pos:
            rest = self.have - self.pos
            self.view[:rest] = self.view[self.pos : self.have]
            self.have, self.pos = rest, 0

    def next_delivery(self) -> memoryview | None:
        """Parse up to and including the next complete delivery and return its body (valid
        until the next `fill`); None when none is complete. Other frames are handled on
        the way."""
        if not self.skip_control():
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
        body: memoryview | None
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

    def skip_control(self) -> bool:
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
            self.closed = method == CONNECTION_CLOSE
            raise DriverError(f"{self.label}: the broker closed the {what} ({code} {text})")
        elif method == CANCEL:
            raise DriverError(f"{self.label}: the broker cancelled the consumer (queue "
                              "deleted?)")
        elif method == CONNECTION_CLOSE_OK:
            self.closed = True
        # Basic.Return (never mandatory here), Connection.Blocked/Unblocked: nothing to do

    def _property(self, flag: int) -> tuple[int, int]:
        """(the property flags of the last delivery parsed, where the property `flag`
        starts or would start in its content header)."""
        buf, at = self.buf, self.header_at + 19
        flags = U16.unpack_from(buf, at)[0]
        at += 2
        bit = 15
        while 1 << bit > flag:  # the properties before it, in order
            if flags & (1 << bit):
                if bit == 13:  # headers: a field table
                    at += 4 + U32.unpack_from(buf, at)[0]
                elif bit in (12, 11):  # delivery-mode, priority: octets
                    at += 1
                else:
                    at += 1 + buf[at]
            bit -= 1
        return flags, at

    def reply_to(self) -> bytes:
        """The reply_to property of the last delivery parsed."""
        flags, at = self._property(REPLY_TO_FLAG)
        if not flags & REPLY_TO_FLAG:
            raise DriverError(f"{self.label}: a request without reply_to")
        return bytes(self.buf[at + 1 : at + 1 + self.buf[at]])

    def stream_offset(self) -> int:
        """The x-stream-offset header of the last delivery parsed (a stream's delivery)."""
        flags, at = self._property(HEADERS_FLAG)
        offset = table_long(self.buf, at, STREAM_OFFSET) if flags & HEADERS_FLAG else None
        if offset is None:
            raise DriverError(f"{self.label}: a stream's delivery without x-stream-offset")
        return offset
