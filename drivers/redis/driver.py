"""Redis: pub/sub (PUBLISH/SUBSCRIBE) or streams (XADD, XREAD / XREADGROUP + XACK).

redis-py owns everything but the hot path: it connects, authenticates (AUTH with a
username and a password: `Driver.login`), speaks RESP2 for the setup commands and maps
the server's errors. Its per-call overhead (~60k PUBLISH/s pipelined) would cap the
generator, so once a connection is set up the driver writes pre-encoded commands to its
socket (one `sendall` per batch: the framework lays `framing()` around every message) and
reads what comes back itself:

* Writers (publishers, XADD producers, the responder's reply side) never wait for replies:
  every 64 messages they take whatever replies have arrived without blocking, discard them
  and turn an error reply (`-...`) into `DriverError`; at close they half-close and read
  the rest, so the server has processed every command before the socket goes.
* Pub/sub receivers read pushes straight off the socket. A push of a fixed-size message on
  one channel is a fixed-length frame (`*3 message <channel> <payload>`), so one-way
  receivers `recv_into` the caller's buffer in place, as drivers/tcp.py does.
* Stream readers keep one blocking XREAD (or XREADGROUP) outstanding and parse its reply
  into the caller's buffer; every receiver starts from the entry that was last when it was
  created, so each receiver sees every entry (fan-out).

Round trip: a RESP2 subscriber cannot publish, so a requester has two connections. Framing
is per driver, not per role, so requests are published exactly like one-way messages (on
`channel`, or XADDed to the `channel` stream); the responder subscribes to (reads) that and
sends each request to `<channel>.reply.<producer id from the header>`. In streams mode the
replies go to per-requester reply *streams*, so the whole round trip measures the streams
path (append, XREAD wake-up) in both directions rather than half streams, half pub/sub.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import select
import socket
from typing import Literal

import numpy as np
from pydantic import Field, model_validator
from redis.connection import Connection
from redis.exceptions import AuthenticationError, RedisError, ResponseError
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import TimeoutError as RedisTimeoutError

from sixnines.drivers.base import (
    Credential,
    Driver,
    DriverError,
    Framing,
    LoginOptions,
    split_address,
)
from sixnines.drivers.frame_stream import FrameStream
from sixnines.formats.payload import HEADER_STRUCT

CRLF = b"\r\n"
DASH, NEWLINE = ord("-"), ord("\n")
REPLY_SCRATCH = 1 << 16  # bytes of replies discarded per recv on a writer
DISCARD_EVERY = 64  # messages sent between two looks at the replies (a recv costs ~1.5 µs)
READ_BYTES = 1 << 20  # what one XREAD reply may carry (bounds COUNT)
ENTRY_OVERHEAD = 128  # RESP bytes around one stream entry's payload, at most
MAX_BULK = 512 << 20  # Redis' proto-max-bulk-len default
CLOSE_TIMEOUT_S = 5.0
RELAY_BYTES = 1 << 20  # a responder's receive buffer
SCALAR_COPY = 4  # up to this many frames, slice copies beat numpy's call overhead
FIELD = b"m"  # the one field of every stream entry


class RedisOptions(LoginOptions):
    """`username` is an ACL user (Redis 6+); without it AUTH uses the default user."""

    mode: Literal["pubsub", "streams"] = "pubsub"
    """pubsub: PUBLISH/SUBSCRIBE (nothing stored, a slow subscriber is disconnected by the
    server's client-output-buffer-limit). streams: XADD to a stream, XREAD/XREADGROUP."""
    channel: str = Field("sixnines", min_length=1)
    """The pub/sub channel, or the stream key in streams mode. Replies of round trips use
    `<channel>.reply.<producer id>`."""
    db: int = Field(0, ge=0)
    """Database for stream keys (pub/sub channels are global to the server)."""
    stream_maxlen: int = Field(1_000_000, ge=1)
    """streams: XADD trims to about this many entries (MAXLEN ~), so memory stays bounded.
    A reader more than this many entries behind loses messages (counted as lost)."""
    group: bool = False
    """streams: read with XREADGROUP through a consumer group of its own per receiver
    connection and XACK each batch (the group is destroyed at close), instead of XREAD."""
    connect_timeout_s: float = Field(10.0, gt=0)
    """Limit on connecting and on each setup command (not on the measured traffic)."""

    @model_validator(mode="after")
    def _consistent(self) -> RedisOptions:
        if self.mode == "pubsub":  # by value: agents receive every field, defaults included
            defaults = type(self).model_fields
            misplaced = [name for name in ("group", "stream_maxlen")
                         if getattr(self, name) != defaults[name].default]
            if misplaced:
                raise ValueError(f"{', '.join(misplaced)} only apply to mode streams")
        return self


def _bulk(value: bytes) -> bytes:
    return b"$%d\r\n%s\r\n" % (len(value), value)


def _head(*args: bytes, size: int) -> bytes:
    """A RESP array of `args` and one more bulk string of `size` bytes, up to that string's
    content: the prefix of a pre-encoded command (or of a push) carrying a message."""
    return b"*%d\r\n%s$%d\r\n" % (len(args) + 1, b"".join(map(_bulk, args)), size)


def _reply_key(channel: str, producer_id: int) -> bytes:
    return f"{channel}.reply.{producer_id}".encode()


def _error_line(data: bytearray, start: int, end: int) -> str:
    stop = data.find(CRLF, start, end)
    line = bytes(data[start + 1 : stop if stop >= 0 else end])
    return line.decode("utf-8", "replace")[:300]


class RespWriter:
    """Writes pre-encoded commands to a connection and discards their replies without ever
    waiting for them (looking every DISCARD_EVERY messages, and at close). Replies start
    after a newline, and `-` after a newline can only start an error (PUBLISH answers
    integers, XADD entry ids that have a `-` between digits), so errors are found with one
    `find` per read."""

    def __init__(self, conn: Connection, label: str) -> None:
        self._conn = conn  # owns the socket: kept alive as long as we use it
        self._sock: socket.socket = conn._sock
        self._sock.settimeout(None)
        self._label = label
        self._scratch = bytearray(REPLY_SCRATCH)
        self._view = memoryview(self._scratch)
        self._last = NEWLINE  # the last reply byte seen: the next byte starts a reply
        self._unchecked = 0  # messages sent since the replies were last read

    def send(self, frames, count: int) -> None:
        try:
            self._sock.sendall(frames)
        except OSError as exc:
            raise DriverError(f"{self._label}: connection lost ({exc})") from exc
        self._unchecked += count
        if self._unchecked >= DISCARD_EVERY:
            self._unchecked = 0
            self._discard_replies()

    def _discard_replies(self) -> None:
        sock, scratch, view = self._sock, self._scratch, self._view
        while True:
            try:
                got = sock.recv_into(view, 0, socket.MSG_DONTWAIT)
            except BlockingIOError:
                return
            except OSError as exc:
                raise DriverError(f"{self._label}: connection lost ({exc})") from exc
            if got == 0:
                raise DriverError(f"{self._label}: connection closed by the server")
            self._check(got)
            if got < len(scratch):
                return

    def _check(self, got: int) -> None:
        scratch = self._scratch
        at = 0 if scratch[0] == DASH and self._last == NEWLINE else -1
        if at < 0:
            at = scratch.find(b"\n-", 0, got)
            at = at + 1 if at >= 0 else -1
        if at >= 0:
            raise DriverError(f"{self._label}: the server refused a command: "
                              f"{_error_line(scratch, at, got)}")
        self._last = scratch[got - 1]

    def close(self) -> None:
        """Half-close and read the remaining replies until the server closes: closing
        with replies unread would send a reset, which can discard commands the server has
        not read yet (the last messages)."""
        sock = self._sock
        error: DriverError | None = None
        try:
            sock.shutdown(socket.SHUT_WR)
            sock.settimeout(CLOSE_TIMEOUT_S)
            while got := sock.recv_into(self._view):
                self._check(got)
        except DriverError as exc:
            error = exc
        except OSError:
            pass
        finally:
            self._conn.disconnect()
        if error is not None:
            raise error


class PushReceiver:
    """Reads pub/sub pushes off a subscribed connection. When the caller's frame layout is
    the push itself (one-way: `receive_framing`), frames land in place and a trailing
    partial frame is moved to the front on the next call, as in drivers/tcp.py (the caller
    passes the same buffer each time); otherwise (replies on a longer channel name) whole
    pushes are read into a buffer of ours and their payloads copied out."""

    def __init__(self, conn: Connection, label: str, head: bytes, size: int,
                 out_prefix: int) -> None:
        self._conn = conn
        self._sock: socket.socket = conn._sock
        self._sock.settimeout(None)
        self._label = label
        self._head = head
        self._head_len = len(head)
        self._size = size
        self._wire = len(head) + size + len(CRLF)
        self._out_prefix = out_prefix
        self._stream = FrameStream(
            self._sock, label, "connection closed by the server (it stopped, or dropped a "
            "subscriber too far behind: client-output-buffer-limit pubsub)")
        self._raw = bytearray()
        self._raw_len = 0
        self.pollable = self._sock

    def receive(self, out: memoryview, stride: int, timeout_ms: int) -> int:
        if stride == self._wire and self._out_prefix == self._head_len:
            return self._in_place(out, stride, timeout_ms)
        return self._copied(out, stride, timeout_ms)

    def _in_place(self, out: memoryview, stride: int, timeout_ms: int) -> int:
        count = self._stream.frames(out, stride, timeout_ms)
        if count:
            head, h = self._head, self._head_len
            last = (count - 1) * stride
            if out[:h] != head or out[last : last + h] != head:
                raise self._unexpected()
        return count

    def _copied(self, out: memoryview, stride: int, timeout_ms: int) -> int:
        room = len(out) // stride
        if not room:
            return 0
        wire = self._wire
        want = room * wire
        if len(self._raw) < want:
            self._raw.extend(bytes(want - len(self._raw)))
        if not self._stream.readable(timeout_ms):
            return 0
        raw, partial = self._raw, self._raw_len
        total = partial + self._stream.recv(memoryview(raw)[partial:want])
        count = total // wire
        if count:
            self._copy_out(out, stride, count)
        rest = total - count * wire
        raw[:rest] = raw[count * wire : total]
        self._raw_len = rest
        return count

    def _copy_out(self, out: memoryview, stride: int, count: int) -> None:
        raw, h, size, wire, at = self._raw, self._head_len, self._size, self._wire, \
            self._out_prefix
        if count <= SCALAR_COPY:
            for k in range(count):
                src = k * wire
                if raw[src : src + h] != self._head:
                    raise self._unexpected()
                dst = k * stride + at
                out[dst : dst + size] = raw[src + h : src + h + size]
            return
        src = np.frombuffer(raw, np.uint8, count * wire).reshape(count, wire)
        if not (src[:, :h] == np.frombuffer(self._head, np.uint8)).all():
            raise self._unexpected()
        dst = np.frombuffer(out, np.uint8, count * stride).reshape(count, stride)
        dst[:, at : at + size] = src[:, h : h + size]

    def _unexpected(self) -> DriverError:
        return DriverError(f"{self._label}: unexpected data on the subscription (a message "
                           f"of another size than {self._size} bytes on the channel?)")

    def close(self) -> None:
        self._conn.disconnect()


class StreamReceiver:
    """Reads a stream with one blocking XREAD (XREADGROUP) always outstanding: the server
    answers as soon as entries arrive, and the socket is what a poller waits on. The reply
    is parsed here; only the payloads are copied into the caller's buffer. A reply that
    does not fit in the caller's buffer stays here for the next call."""

    def __init__(self, conn: Connection, label: str, key: bytes, size: int, out_prefix: int,
                 last_id: bytes, group: bytes | None, cleanup) -> None:
        self._conn = conn
        self._sock: socket.socket = conn._sock
        self._sock.settimeout(None)
        self._label = label
        self._key = key
        self._size = size
        self._out_prefix = out_prefix
        self._last_id = last_id
        self._group = group
        self._cleanup = cleanup
        self._count = max(1, min(1024, READ_BYTES // (size + ENTRY_OVERHEAD)))
        self._header = b"*1\r\n*2\r\n" + _bulk(key) + b"*"
        self._middle = CRLF + b"*2\r\n" + _bulk(FIELD) + b"$%d\r\n" % size
        self._buf = bytearray(self._count * (size + ENTRY_OVERHEAD) + 1024 + 2 * len(key))
        self._view = memoryview(self._buf)
        self._pos = 0
        self._end = 0
        self._left = 0  # entries of the current reply not parsed yet
        self._acks: list[bytes] = []
        if group is not None:
            self._read_group = b"".join(conn.pack_command(
                "XREADGROUP", "GROUP", group, "c", "COUNT", self._count, "BLOCK", 0,
                "STREAMS", key, ">"))
        self._poll = select.poll()
        self._poll.register(self._sock, select.POLLIN)
        self.pollable = self._sock
        self._request()

    def _request(self) -> None:
        """Ask for the next entries (acknowledging the last batch first in a group)."""
        if self._group is None:
            command = b"".join(self._conn.pack_command(
                "XREAD", "COUNT", self._count, "BLOCK", 0, "STREAMS", self._key,
                self._last_id))
        elif self._acks:
            command = b"".join(self._conn.pack_command(
                "XACK", self._key, self._group, *self._acks)) + self._read_group
            self._acks.clear()
        else:
            command = self._read_group
        try:
            self._sock.sendall(command)
        except OSError as exc:
            raise DriverError(f"{self._label}: connection lost ({exc})") from exc

    def receive(self, out: memoryview, stride: int, timeout_ms: int) -> int:
        n = self._parse(out, stride)
        if n:
            return n
        if timeout_ms and not self._poll.poll(timeout_ms):
            return 0
        self._fill()
        return self._parse(out, stride)

    def _fill(self) -> None:
        pos, end, buf = self._pos, self._end, self._buf
        if pos == end:
            pos = end = 0
        elif pos:
            buf[: end - pos] = buf[pos:end]
            pos, end = 0, end - pos
        self._pos, self._end = pos, end
        if end == len(buf):
            raise DriverError(f"{self._label}: a stream reply larger than expected")
        try:
            got = self._sock.recv_into(self._view[end:], 0, socket.MSG_DONTWAIT)
        except BlockingIOError:
            return
        except OSError as exc:
            raise DriverError(f"{self._label}: connection lost ({exc})") from exc
        if got == 0:
            raise DriverError(f"{self._label}: connection closed by the server")
        self._end = end + got

    def _parse(self, out: memoryview, stride: int) -> int:
        buf, view, pos, end = self._buf, self._view, self._pos, self._end
        size, at, middle = self._size, self._out_prefix, self._middle
        room = len(out) // stride
        n = 0
        try:
            while n < room and pos < end:
                if not self._left:  # the start of a reply
                    first = buf[pos]
                    if first == DASH:
                        raise DriverError(f"{self._label}: the server refused a read: "
                                          f"{_error_line(buf, pos, end)}")
                    stop = buf.find(CRLF, pos, end)
                    if stop < 0:
                        break
                    if first == ord(":"):  # XACK's count
                        pos = stop + 2
                        continue
                    if buf.startswith(b"*-1\r\n", pos):  # nothing (a timed-out read)
                        pos = stop + 2
                        self._request()
                        continue
                    header = self._header
                    stop = buf.find(CRLF, pos + len(header), end)
                    if stop < 0:
                        break
                    if not buf.startswith(header, pos):
                        raise self._unexpected()
                    self._left = int(buf[pos + len(header) : stop])
                    pos = stop + 2
                    if not self._left:
                        self._request()
                    continue
                stop = buf.find(CRLF, pos + 5, end)  # an entry: *2 $<id length> <id> ...
                if stop < 0:
                    break
                if not buf.startswith(b"*2\r\n$", pos):
                    raise self._unexpected()
                id_at = stop + 2
                id_end = id_at + int(buf[pos + 5 : stop])
                data_at = id_end + len(middle)
                if data_at + size + 2 > end:
                    break
                if not buf.startswith(middle, id_end):
                    raise self._unexpected()
                o = n * stride + at
                out[o : o + size] = view[data_at : data_at + size]
                n += 1
                pos = data_at + size + 2
                self._left -= 1
                if self._group is not None:
                    self._acks.append(bytes(buf[id_at:id_end]))
                if not self._left:
                    self._last_id = bytes(buf[id_at:id_end])
                    self._request()
        finally:
            self._pos = pos
        return n

    def _unexpected(self) -> DriverError:
        return DriverError(f"{self._label}: unexpected entry in the stream (not one "
                           f"{self._size}-byte field {FIELD.decode()!r}: another writer?)")

    def close(self) -> None:
        self._conn.disconnect()
        self._cleanup()


class RedisResponder:
    """The far end of round trips: each request read from `channel` (pushes, or stream
    entries) is sent to its requester's reply channel (stream) with a pre-encoded PUBLISH
    (XADD) per producer id; the replies to one batch of requests go out in one write."""

    def __init__(self, receiver, writer: RespWriter, reply_head, size: int, stride: int,
                 payload_at: int) -> None:
        self._receiver = receiver
        self._writer = writer
        self._reply_head = reply_head  # producer id -> command prefix
        self._heads: dict[int, bytes] = {}
        self._size = size
        self._stride = stride
        self._payload_at = payload_at
        self._buf = bytearray(max(stride, RELAY_BYTES // stride * stride))
        self._view = memoryview(self._buf)

    def relay(self, timeout_ms: int) -> int:
        n = self._receiver.receive(self._view, self._stride, timeout_ms)
        if not n:
            return 0
        view, heads, size = self._view, self._heads, self._size
        parts = []
        at = self._payload_at
        for _ in range(n):
            producer_id = HEADER_STRUCT.unpack_from(self._buf, at)[0]
            head = heads.get(producer_id)
            if head is None:
                head = heads[producer_id] = self._reply_head(producer_id)
            parts += (head, view[at : at + size], CRLF)
            at += self._stride
        self._writer.send(b"".join(parts), n)
        return n

    def close(self) -> None:
        try:
            self._writer.close()
        finally:
            self._receiver.close()


class RedisDriver(Driver):
    name = "redis"
    Options = RedisOptions
    needs_responder = True

    def __init__(self, address: str, options: RedisOptions,
                 credential: Credential | None = None) -> None:
        super().__init__(address, options, credential)
        self._label = f"redis at {address}"
        self._channel = options.channel.encode()

    # --- framing ------------------------------------------------------------------------

    def _xadd_head(self, key: bytes, size: int) -> bytes:
        maxlen = str(self.options.stream_maxlen).encode()
        return _head(b"XADD", key, b"MAXLEN", b"~", maxlen, b"*", FIELD, size=size)

    def framing(self, message_size: int) -> Framing:
        if self.options.mode == "streams":
            return Framing(self._xadd_head(self._channel, message_size), CRLF)
        return Framing(_head(b"PUBLISH", self._channel, size=message_size), CRLF)

    def receive_framing(self, message_size: int) -> Framing:
        if self.options.mode == "streams":
            return Framing()  # payloads are copied out of XREAD replies
        return Framing(_head(b"message", self._channel, size=message_size), CRLF)

    @classmethod
    def workload_problems(cls, options: RedisOptions, workload) -> list[str]:
        if workload.message_size > MAX_BULK:
            return [f"message_size {workload.message_size} is above Redis' largest string "
                    f"({MAX_BULK} bytes, proto-max-bulk-len)"]
        return []

    # --- connections --------------------------------------------------------------------

    def _connect(self) -> Connection:
        """A connection redis-py opened, authenticated and checked with a PING (so a
        server wanting a password says so here, not in the middle of the run)."""
        host, port = split_address(self.address, self.name)
        options = self.options
        username, password = self.login()
        conn = Connection(
            host=host, port=port, db=options.db, username=username, password=password,
            protocol=2,
            socket_connect_timeout=options.connect_timeout_s,
            socket_timeout=options.connect_timeout_s,
        )
        try:
            conn.connect()
            conn.send_command("PING", check_health=False)
            conn.read_response()
        except AuthenticationError as exc:
            conn.disconnect()
            raise DriverError(f"{self._label}: authentication failed ({exc})") from None
        except (RedisConnectionError, RedisTimeoutError, OSError) as exc:
            conn.disconnect()
            raise DriverError(f"{self._label}: cannot connect ({exc})") from None
        except RedisError as exc:
            conn.disconnect()
            raise DriverError(f"{self._label}: {exc}") from None
        return conn

    def _call(self, conn: Connection, *args):
        """One setup command through redis-py, its error worded for the user."""
        try:
            conn.send_command(*args, check_health=False)
            return conn.read_response()
        except ResponseError as exc:
            conn.disconnect()
            raise DriverError(f"{self._label}: {args[0]} refused ({exc})") from None
        except RedisError as exc:
            conn.disconnect()
            raise DriverError(f"{self._label}: {args[0]} failed ({exc})") from None

    def _writer(self) -> RespWriter:
        return RespWriter(self._connect(), self._label)

    def _subscriber(self, channel: bytes, size: int, out_prefix: int) -> PushReceiver:
        """Subscribed, with the confirmation read here byte for byte: redis-py's parser
        never reads from the socket after SUBSCRIBE, so no push can be left in its buffer
        when the receiver takes over."""
        conn = self._connect()
        confirmation = b"*3\r\n" + _bulk(b"subscribe") + _bulk(channel) + b":1\r\n"
        sock = conn._sock
        got = b""
        try:
            conn.send_command("SUBSCRIBE", channel, check_health=False)
            while len(got) < len(confirmation):
                chunk = sock.recv(len(confirmation) - len(got))
                if not chunk:
                    raise OSError("connection closed by the server")
                got += chunk
                if got[:1] == b"-" and got.endswith(CRLF):
                    break
        except (OSError, RedisError) as exc:
            conn.disconnect()
            raise DriverError(f"{self._label}: SUBSCRIBE failed ({exc})") from None
        if got != confirmation:
            conn.disconnect()
            reply = got.decode("utf-8", "replace").strip()
            raise DriverError(f"{self._label}: SUBSCRIBE refused ({reply[:300]})")
        head = _head(b"message", channel, size=size)
        return PushReceiver(conn, self._label, head, size, out_prefix)

    def _stream_reader(self, key: bytes, size: int, connection_id: int,
                       delete: bool = False) -> StreamReceiver:
        """A reader of `key` from its current end; `delete`: drop the key at close (a
        requester's reply stream: nothing reads it after its requester has gone)."""
        conn = self._connect()
        group = None
        if self.options.group:
            # a group of its own, at the stream's end: this receiver sees every new entry
            group = f"sixnines.{connection_id}.{os.getpid()}.{secrets.token_hex(4)}".encode()
            self._call(conn, "XGROUP", "CREATE", key, group, "$", "MKSTREAM")
            last_id = b">"
        else:
            last = self._call(conn, "XREVRANGE", key, "+", "-", "COUNT", 1)
            last_id = last[0][0] if last else b"0-0"
        return StreamReceiver(conn, self._label, key, size, 0, last_id, group,
                              lambda: self._forget(key, group, delete))

    def _forget(self, key: bytes, group: bytes | None, delete: bool) -> None:
        """Best effort after a stream reader closes: drop its consumer group, and its key
        when asked to."""
        commands = [("XGROUP", "DESTROY", key, group)] if group is not None else []
        if delete:
            commands.append(("DEL", key))
        if not commands:
            return
        with contextlib.suppress(DriverError, RedisError, OSError):
            conn = self._connect()
            try:
                for command in commands:
                    conn.send_command(*command, check_health=False)
                    conn.read_response()
            finally:
                conn.disconnect()

    # --- roles --------------------------------------------------------------------------

    def sender(self, message_size: int, connection_id: int) -> RespWriter:
        return self._writer()

    def receiver(self, message_size: int, connection_id: int):
        if self.options.mode == "streams":
            return self._stream_reader(self._channel, message_size, connection_id)
        prefix = len(self.receive_framing(message_size).prefix)
        return self._subscriber(self._channel, message_size, prefix)

    def requester(self, message_size: int, connection_id: int):
        reply = _reply_key(self.options.channel, connection_id)
        if self.options.mode == "streams":
            receiver = self._stream_reader(reply, message_size, connection_id, delete=True)
        else:
            prefix = len(self.receive_framing(message_size).prefix)
            receiver = self._subscriber(reply, message_size, prefix)
        try:
            return self._writer(), receiver
        except DriverError:
            receiver.close()
            raise

    def responder(self, message_size: int, connection_id: int) -> RedisResponder:
        channel = self.options.channel
        if self.options.mode == "streams":
            receiver = self._stream_reader(self._channel, message_size, connection_id)

            def reply_head(producer_id: int) -> bytes:
                return self._xadd_head(_reply_key(channel, producer_id), message_size)
            stride, payload_at = message_size, 0
        else:
            framing = self.receive_framing(message_size)
            receiver = self._subscriber(self._channel, message_size, len(framing.prefix))

            def reply_head(producer_id: int) -> bytes:
                return _head(b"PUBLISH", _reply_key(channel, producer_id), size=message_size)
            stride, payload_at = framing.stride(message_size), len(framing.prefix)
        try:
            writer = self._writer()
        except DriverError:
            receiver.close()
            raise
        return RedisResponder(receiver, writer, reply_head, message_size, stride, payload_at)
