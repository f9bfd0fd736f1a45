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
  receivers read into the caller's buffer in place (drivers/sockets.py FrameStream).
* Stream readers keep one blocking XREAD (or XREADGROUP) outstanding and parse its reply
  into the caller's buffer; every receiver starts from the entry that was last when it was
  created, so each receiver sees every entry (fan-out).

Lanes (`Lane`, several connections per agent): lane i's senders publish to (XADD to)
`<channel>.<i>` and its receivers subscribe to (read) only that, so a consumer's
connections divide the messages. The framework asks `framing` per sending connection with
its lane, so a lane's commands come pre-encoded with its channel (and, in streams mode, its
share of `stream_maxlen`) and go out as they are. Receive framing is one for all lanes
(it names `channel`), so a lane's pub/sub receiver copies payloads out of its pushes. With
one connection the names, and so the bytes, are as they were.

Keys (formats.keys): each message goes to its key's channel (stream) below its lane's,
`<lane channel>.<key>` (names of one width, so every key's pre-encoded PUBLISH / XADD is as
long: `Framing.key_prefixes`, written into each ring slot before the start). A pub/sub
receiver subscribes to every key's channel of its lane and copies payloads out of the
pushes (`VaryingPushReceiver`); a stream receiver names every key's stream in each XREAD
(COUNT is per stream, so several share one stream's), and `StreamReplies` keeps each one's
last id (a group: its ids to acknowledge). Each key's stream keeps its lane's share of
`stream_maxlen`: a hot key is trimmed no sooner than one stream would be. The keys are
bounded (`MAX_STREAM_KEYS`, `MAX_CHANNEL_KEYS`): a reader's every read names them all.

Round trip: a RESP2 subscriber cannot publish, so a requester has two connections.
Requesters are framed as the sole lane, so requests are published exactly like one-way
messages of one connection (on `channel`, or XADDed to the `channel` stream); the
responder subscribes to (reads) that and sends each request to
`<channel>.reply.<producer id from the header>`. In streams mode the
replies go to per-requester reply *streams*, so the whole round trip measures the streams
path (append, XREAD wake-up) in both directions rather than half streams, half pub/sub.
"""

from __future__ import annotations

import os
import secrets
import socket
from collections.abc import Mapping

import numpy as np
from redis.connection import Connection

from sixnines.drivers.base import (
    SOLE_LANE,
    Credential,
    Driver,
    DriverError,
    DriverOptions,
    Framing,
    Lane,
    Receiver,
    Responder,
    Sender,
    WorkloadShape,
    split_address,
)
from sixnines.drivers.redis import durability
from sixnines.drivers.redis.connection import (
    call,
    connect,
    run_quietly,
    socket_of,
    subscribe,
)
from sixnines.drivers.redis.options import RedisOptions
from sixnines.drivers.redis.wire import (
    CRLF,
    NEWLINE,
    StreamReplies,
    command,
    error_at,
    error_line,
    glob_literal,
    lane_maxlen,
    publish_head,
    push_head,
    reply_key,
    varying_pushes,
    xadd_head,
    xread_head,
)
from sixnines.drivers.sockets import FrameStream, SocketIO, VaryingFrames, VaryingReceiver
from sixnines.formats.durability import Setting
from sixnines.formats.keys import KeySpace
from sixnines.formats.payload import HEADER_SIZE, HEADER_STRUCT

REPLY_SCRATCH = 1 << 16  # bytes of replies discarded per recv on a writer
DISCARD_EVERY = 64  # messages sent between two looks at the replies (a recv costs ~1.5 µs)
READ_BYTES = 1 << 20  # what one XREAD reply may carry (bounds COUNT)
ENTRY_OVERHEAD = 128  # RESP bytes around one stream entry's payload, at most
MAX_BULK = 512 << 20  # Redis' proto-max-bulk-len default
CLOSE_TIMEOUT_S = 5.0
RELAY_BYTES = 1 << 20  # a responder's receive buffer
SCALAR_COPY = 4  # up to this many frames, slice copies beat numpy's call overhead
KEY_COUNT = 16  # a keyed read's COUNT per stream, at least (or the unkeyed COUNT if less)
#: Keys at most: a stream each (every read names them all: ~0.1 ms of the server's time
#: per XREAD at 256, ~0.5 ms at 1,024, measured), a channel each (subscribed to at once).
MAX_STREAM_KEYS = 256
MAX_CHANNEL_KEYS = 4096


class RespWriter(Sender):
    """Writes pre-encoded commands to a connection and discards their replies without ever
    waiting for them (looking every DISCARD_EVERY messages, and at close); an error reply
    raises (found with `wire.error_at`)."""

    def __init__(self, conn: Connection, label: str) -> None:
        self._conn = conn  # owns the socket: kept alive as long as we use it
        self._io = SocketIO(socket_of(conn), label)
        self._label = label
        self._scratch = bytearray(REPLY_SCRATCH)
        self._view = memoryview(self._scratch)
        self._last = NEWLINE  # the last reply byte seen: the next byte starts a reply
        self._unchecked = 0  # messages sent since the replies were last read

    def send(self, frames, count: int) -> None:
        self._io.write(frames)
        self._unchecked += count
        if self._unchecked >= DISCARD_EVERY:
            self._unchecked = 0
            self._discard_replies()

    def _discard_replies(self) -> None:
        read, view = self._io.read, self._view
        while got := read(view):
            self._check(got)
            if got < len(view):
                return

    def _check(self, got: int) -> None:
        scratch = self._scratch
        at = error_at(scratch, got, self._last)
        if at >= 0:
            raise DriverError(f"{self._label}: the server refused a command: "
                              f"{error_line(scratch, at, got)}")
        self._last = scratch[got - 1]

    def close(self) -> None:
        """Half-close and read the remaining replies until the server closes: closing
        with replies unread would send a reset, which can discard commands the server has
        not read yet (the last messages)."""
        sock = self._io.sock
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


class PushReceiver(Receiver):
    """Reads pub/sub pushes off a subscribed connection. When the caller's frame layout is
    the push itself (one-way: `receive_framing`), frames land in place (FrameStream);
    otherwise (replies, or a lane's pushes, on a longer channel name) whole pushes are read
    into a buffer of ours and their payloads copied out."""

    def __init__(self, conn: Connection, label: str, head: bytes, size: int,
                 out_prefix: int) -> None:
        self._conn = conn
        sock = socket_of(conn)
        self._label = label
        self._head = head
        self._head_len = len(head)
        self._size = size
        self._wire = len(head) + size + len(CRLF)
        self._out_prefix = out_prefix
        self._stream = FrameStream(
            sock, label, "connection closed by the server (it stopped, or dropped a "
            "subscriber too far behind: client-output-buffer-limit pubsub)", head,
            self._wire, self._refusal())
        self._raw = bytearray()
        self._raw_len = 0
        self.pollable = sock

    def receive(self, out: memoryview, stride: int, timeout_ms: int) -> int:
        if stride == self._wire and self._out_prefix == self._head_len:
            return self._stream.frames(out, timeout_ms)  # heads checked there
        return self._copied(out, stride, timeout_ms)

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
        total = partial + self._stream.read(memoryview(raw)[partial:want])
        count = total // wire
        if count:
            self._copy_out(out, stride, count)
        rest = total - count * wire
        raw[:rest] = raw[count * wire : total]
        self._raw_len = rest
        arrived = min(rest, self._head_len)  # a short message is refused when it arrives
        if arrived and raw[:arrived] != self._head[:arrived]:
            raise self._unexpected()
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
        sources = np.frombuffer(raw, np.uint8, count * wire).reshape(count, wire)
        if not (sources[:, :h] == np.frombuffer(self._head, np.uint8)).all():
            raise self._unexpected()
        into = np.frombuffer(out, np.uint8, count * stride).reshape(count, stride)
        into[:, at : at + size] = sources[:, h : h + size]

    def _refusal(self) -> str:
        return (f"unexpected data on the subscription (a message of another size than "
                f"{self._size} bytes on the channel?)")

    def _unexpected(self) -> DriverError:
        return DriverError(f"{self._label}: {self._refusal()}")

    def close(self) -> None:
        self._conn.disconnect()


class VaryingPushReceiver(VaryingReceiver):
    """Pub/sub pushes on any of `channels` (a channel per message key, names of one
    length) or whose payloads vary in size (from `smallest` up to `size`), each copied to
    the start of a slot of the largest's size (sockets.VaryingFrames,
    wire.varying_pushes)."""

    def __init__(self, conn: Connection, label: str, channels: list[bytes], size: int,
                 smallest: int) -> None:
        self._conn = conn  # owns the socket: disconnected on close
        super().__init__(VaryingFrames(
            socket_of(conn), label, "connection closed by the server (it stopped, or "
            "dropped a subscriber too far behind: client-output-buffer-limit pubsub)", size,
            varying_pushes(label, channels, smallest, size)))

    def close(self) -> None:
        self._conn.disconnect()


class StreamReceiver(Receiver):
    """Reads streams (one, or one per message key) with one blocking XREAD (XREADGROUP)
    always outstanding: the server answers as soon as entries arrive, and the socket is
    what a poller waits on. The reply is parsed by `wire.StreamReplies`; only the payloads
    are copied into the caller's buffer. A reply that does not fit in the caller's buffer
    stays for the next call, and `held()` tells waiters about it (the socket cannot)."""

    holds = True

    def __init__(self, conn: Connection, label: str, keys: list[bytes], size: int,
                 last_ids: list[bytes], group: bytes | None, cleanup,
                 smallest: int | None = None) -> None:
        self._conn = conn
        sock = socket_of(conn)
        self._io = SocketIO(sock, label)
        self._keys = keys
        self._group = group
        self._cleanup = cleanup
        count = max(1, min(1024, READ_BYTES // (size + ENTRY_OVERHEAD)))
        self._replies = StreamReplies(keys, size, count, ENTRY_OVERHEAD, label, last_ids,
                                      group is not None, smallest)
        # COUNT is per stream: several keys' streams share what one stream's read takes
        self._read = xread_head(keys, max(min(count, KEY_COUNT), count // len(keys)), group)
        self.pollable = sock
        self._request()

    def _request(self) -> None:
        """Ask for the next entries (acknowledging the last batch first in a group)."""
        replies = self._replies
        replies.ask = False
        if self._group is None:
            request = self._read + b"".join(replies.after)
        else:
            acks = [command(b"XACK", key, self._group, *ids)
                    for key, ids in zip(self._keys, replies.pending, strict=True) if ids]
            for ids in replies.pending:
                ids.clear()
            request = b"".join(acks) + self._read
        self._io.write(request)

    def _parse(self, out: memoryview, stride: int) -> int:
        n = self._replies.parse(out, stride)
        if self._replies.ask:
            self._request()
        return n

    def held(self) -> bool:
        return self._replies.held

    def receive(self, out: memoryview, stride: int, timeout_ms: int) -> int:
        n = self._parse(out, stride)
        if n:
            return n
        if not self._io.readable(timeout_ms):
            return 0
        self._replies.filled(self._io.read(self._replies.room()))
        return self._parse(out, stride)

    def close(self) -> None:
        self._conn.disconnect()
        self._cleanup()


class RedisResponder(Responder):
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
        parts: list[bytes | memoryview] = []
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
    #: keys: each message goes to its key's stream (channel) `<lane channel>.<key>` (the
    #: key's name, one width for all: frames of one stride); receivers read every key's
    #: stream of their lane in one XREAD (subscribe to every key's channel)
    carries_keys = "a stream or channel per key: <channel>.<key>"
    name = "redis"
    Options = RedisOptions
    options: RedisOptions  # what Options validated
    needs_responder = True

    def __init__(self, address: str, options: RedisOptions,
                 credential: Credential | None = None) -> None:
        super().__init__(address, options, credential)
        self._label = f"redis at {address}"
        self._channel = options.channel.encode()

    # --- framing ------------------------------------------------------------------------

    def _xadd_head(self, key: bytes, size: int) -> bytes:
        return xadd_head(key, self.options.stream_maxlen, size)

    def lane_channel(self, lane: Lane) -> bytes:
        """The channel (stream key) of one-way `lane`: `channel` itself with one lane."""
        return lane.name(self.options.channel).encode()

    def lane_names(self, lane: Lane) -> list[bytes]:
        """The channels (stream keys) `lane`'s messages go to: its channel, or with keys
        one per key below it (`<lane channel>.<key>`, names of one width)."""
        channel = self.lane_channel(lane)
        if self.keys is None:
            return [channel]
        return [b"%s.%s" % (channel, self.keys.name(index).encode())
                for index in range(self.keys.count)]

    def framing(self, message_size: int, lane: Lane = SOLE_LANE) -> Framing:
        """A PUBLISH (XADD) to `lane`'s channel (stream) around every message, with keys
        the key's (`Framing.key_prefixes`); a lane's stream, and with keys each of its
        keys' streams, trims to its share of `stream_maxlen` (`lane_maxlen`)."""
        if self.options.mode == "streams":
            maxlen = lane_maxlen(self.options.stream_maxlen, lane.count)
            heads = [xadd_head(name, maxlen, message_size) for name in self.lane_names(lane)]
        else:
            heads = [publish_head(name, message_size) for name in self.lane_names(lane)]
        if self.keys is None:
            return Framing(heads[0], CRLF)
        return Framing(heads[0], CRLF, key_prefixes=tuple(heads))

    def receive_framing(self, message_size: int) -> Framing:
        if self.options.mode == "streams" or self.sizes_vary or self.keys is not None:
            return Framing()  # payloads are copied out of XREAD replies (or of pushes)
        return Framing(push_head(self._channel, message_size), CRLF)

    @classmethod
    def key_problems(cls, options: DriverOptions, workload: WorkloadShape) -> list[str]:
        """A stream (channel) per key: every receiver names each key's stream in every
        XREAD (subscribes to each key's channel), so the keys are bounded."""
        space = KeySpace.parse(workload.keys)
        if space is None or not isinstance(options, RedisOptions):
            return []
        streams = options.mode == "streams"
        bound = MAX_STREAM_KEYS if streams else MAX_CHANNEL_KEYS
        if space.count <= bound:
            return []
        why = ("every receiver's XREAD names each key's stream, and the server's work per "
               "read grows with them" if streams else "every receiver subscribes to each "
               "key's channel")
        return [f"redis: keys are a {'stream' if streams else 'channel'} each in mode "
                f"{options.mode}, at most {bound:,} (got {space.count:,}): {why}"]

    @classmethod
    def carries_varying_sizes(cls, options: DriverOptions, largest: int) -> bool:
        """Each PUBLISH (XADD) says its payload's size, and pushes (XREAD replies) say it
        back."""
        return True

    @classmethod
    def workload_problems(cls, options: DriverOptions, workload: WorkloadShape) -> list[str]:
        if workload.message_size > MAX_BULK:
            return [f"message_size {workload.message_size} is above Redis' largest string "
                    f"({MAX_BULK} bytes, proto-max-bulk-len)"]
        backlog = workload.backlog_messages
        if isinstance(options, RedisOptions) and options.mode == "streams" \
                and backlog > options.stream_maxlen:
            return [f"a backlog of {backlog:,} messages is more than stream_maxlen "
                    f"{options.stream_maxlen:,}: the stream would trim entries the consumers "
                    "have not read (lost); raise stream_maxlen"]
        return []

    # --- durability (drivers/redis/durability.py) ----------------------------------------

    def durability_asked(self) -> dict[str, Setting]:
        return durability.asked(self.options)

    def durability_unasked(self) -> str | None:
        return None

    def durability_actual(self) -> dict[str, Setting]:
        conn = self._connect()
        try:
            return durability.read_back(conn, self._label)
        finally:
            conn.disconnect()

    @classmethod
    def durability_label(cls, settings: Mapping[str, Setting]) -> str:
        return durability.label(settings)

    @classmethod
    def stores_messages(cls, options: DriverOptions) -> bool:
        """Streams keep entries (up to their trimming); pub/sub delivers to whoever reads
        now."""
        return isinstance(options, RedisOptions) and options.mode == "streams"

    @classmethod
    def resource_options(cls, options: DriverOptions) -> tuple[str, ...]:
        return ("channel",)  # pub/sub stores nothing, but a run's own channel hears no other

    def remove_resources(self, per_run, workload) -> list[str]:
        """In streams mode, the run's stream keys: `channel`, every lane's and reply's
        (`<channel>.*`); pub/sub channels leave nothing behind."""
        if "channel" not in per_run or self.options.mode != "streams":
            return []
        conn = self._connect()
        try:
            keys = set()
            for pattern in (glob_literal(self.options.channel),
                            glob_literal(self.options.channel) + ".*"):
                cursor = b"0"
                while True:
                    cursor, found = call(conn, self._label, "SCAN", cursor, "MATCH", pattern,
                                         "COUNT", 1000)
                    keys.update(found)
                    if cursor in (b"0", 0):
                        break
            names = sorted(keys)
            if names:
                call(conn, self._label, "DEL", *names)
            return [name.decode("utf-8", "replace") for name in names]
        finally:
            conn.disconnect()

    # --- connections --------------------------------------------------------------------

    def _connect(self) -> Connection:
        host, port = split_address(self.address, self.name)
        return connect(host, port, self.options, self.login(), self._label)

    def _writer(self) -> RespWriter:
        return RespWriter(self._connect(), self._label)

    def _subscriber(self, channel: bytes, size: int, out_prefix: int) -> PushReceiver:
        conn = self._connect()
        subscribe(conn, [channel], self._label)
        return PushReceiver(conn, self._label, push_head(channel, size), size, out_prefix)

    def _stream_reader(self, keys: list[bytes], size: int, connection_id: int,
                       delete: bool = False) -> StreamReceiver:
        """A reader of the streams `keys` from their current ends; `delete`: drop the keys
        at close (a requester's reply stream: nothing reads it after its requester has
        gone)."""
        conn = self._connect()
        group = None
        if self.options.group:
            # a group of its own, at the streams' ends: this receiver sees every new entry
            group = f"sixnines.{connection_id}.{os.getpid()}.{secrets.token_hex(4)}".encode()
            for key in keys:
                call(conn, self._label, "XGROUP", "CREATE", key, group, "$", "MKSTREAM")
            last_ids = [b">"] * len(keys)
        else:
            last_ids = []
            for key in keys:
                last = call(conn, self._label, "XREVRANGE", key, "+", "-", "COUNT", 1)
                last_ids.append(last[0][0] if last else b"0-0")
        # after the reader closes: drop its consumer groups, and its keys when asked to
        forget: list[tuple[str | bytes, ...]] = (
            [("XGROUP", "DESTROY", key, group) for key in keys] if group is not None else [])
        if delete:
            forget += [("DEL", key) for key in keys]
        return StreamReceiver(conn, self._label, keys, size, last_ids, group,
                              lambda: run_quietly(self._connect, forget),
                              HEADER_SIZE if self.sizes_vary else None)

    # --- roles --------------------------------------------------------------------------

    def sender(self, message_size: int, connection_id: int,
               lane: Lane = SOLE_LANE) -> RespWriter:
        """A writer; the lane is in the bytes it is given (`framing(size, lane)`)."""
        return self._writer()

    def receiver(self, message_size: int, connection_id: int, lane: Lane = SOLE_LANE):
        names = self.lane_names(lane)
        if self.options.mode == "streams":
            return self._stream_reader(names, message_size, connection_id)
        if self.sizes_vary or self.keys is not None:
            conn = self._connect()
            subscribe(conn, names, self._label)
            smallest = HEADER_SIZE if self.sizes_vary else message_size
            return VaryingPushReceiver(conn, self._label, names, message_size, smallest)
        prefix = len(self.receive_framing(message_size).prefix)
        return self._subscriber(names[0], message_size, prefix)

    def requester(self, message_size: int, connection_id: int):
        reply = reply_key(self.options.channel, connection_id)
        receiver: Receiver
        if self.options.mode == "streams":
            receiver = self._stream_reader([reply], message_size, connection_id, delete=True)
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
        receiver: Receiver
        if self.options.mode == "streams":
            receiver = self._stream_reader([self._channel], message_size, connection_id)

            def reply_head(producer_id: int) -> bytes:
                return self._xadd_head(reply_key(channel, producer_id), message_size)
            stride, payload_at = message_size, 0
        else:
            framing = self.receive_framing(message_size)
            receiver = self._subscriber(self._channel, message_size, len(framing.prefix))

            def reply_head(producer_id: int) -> bytes:
                return publish_head(reply_key(channel, producer_id), message_size)
            stride, payload_at = framing.stride(message_size), len(framing.prefix)
        try:
            writer = self._writer()
        except DriverError:
            receiver.close()
            raise
        return RedisResponder(receiver, writer, reply_head, message_size, stride, payload_at)
