"""NATS: core publish/subscribe and JetStream, with request/response round trips.

nats-py runs each connection's handshake, and JetStream management (streams, consumers)
on a short-lived connection of its own (drivers/nats/connection.py). The hot path speaks
the text protocol directly (drivers/nats/wire.py): frames are pre-encoded
`PUB <subject> [reply] <size>\\r\\n` + message + `\\r\\n` (the `Framing`), so a batch goes
out in one write; receivers parse `MSG` lines and copy payloads out.

The framework asks for the framing per sending connection with its lane; requesters all
get the sole lane's, so the PUB line does not name a per-connection reply subject.
Requests therefore go to the same subject S as one-way messages of one connection, and
the responder sends each back to `S.reply.<producer id>`, the id read from
the message header; requester connection N subscribes to `S.reply.N`.

- core one-way: `PUB S`, every receiver subscribes to S (fan-out).
- core round trip: the responder subscribes to S in the queue group `sixnines` (responders
  could be scaled) and publishes each request to `S.reply.<id>`.
- JetStream: publishes carry their lane's ack inbox as reply subject (`PUB S <inbox>`,
  the agent's inbox, `.<i>` on lane i of several); the connections that publish to a lane
  subscribe to its inbox in one queue group, so each ack reaches exactly one of them (a
  producer's: the connection that sent the message, its acks in the order it sent);
  acks are counted without blocking the send loop, an error ack is a DriverError.
  Receivers each own a pull consumer (filter S, deliver new, no acks), so every receiver
  sees every message published after it was created. A responder agent's connections
  share one such consumer (as core responders share a queue group) and answer over core
  NATS. Pull requests ask for `batch` messages; the next goes out when half have come.
- Lanes (several connections per agent): lane i's senders publish to `S.<i>` and its
  receivers subscribe to (their pull consumers filter) only that, so a consumer's
  connections divide the messages. A lane's framing is its own PUB line (`PUB S.<i>`,
  with the ack inbox in JetStream), so its batches go out as the framework laid them.
  A stream the driver creates takes S and `S.*` (every lane, not the replies
  `S.reply.<id>`); an existing one must take the subjects the agent publishes to. One
  connection: the same subject, the same bytes as before.
- Keys (formats.keys): each message goes to `<lane subject>.<key>`, the PUB line of its
  ring slot's key written before the start (`Framing.key_prefixes`). Core receivers
  subscribe to `<lane subject>.*`, parsing MSG lines without the fast path; in JetStream
  the stream takes them (a stream the driver creates for a keyed run takes `S` and
  `S.>`), and each receiver's pull consumer filters `<lane subject>.*`, so it gets every
  key of its lane in the stream's order (one key's messages in the order published).
- The server's PINGs are answered on every connection (a sender looks about once a
  millisecond, without blocking); -ERR is a DriverError.
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Callable, Mapping
from typing import cast

from nats.js import api
from nats.js.errors import NotFoundError

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
from sixnines.drivers.nats import durability
from sixnines.drivers.nats.connection import (
    NatsLink,
    client_arguments,
    ensure_stream,
    handshake,
    manage,
)
from sixnines.drivers.nats.options import NatsOptions
from sixnines.drivers.nats.wire import keys_pattern, msg_line, pub_line, pull_request
from sixnines.formats.durability import Setting
from sixnines.formats.payload import HEADER_SIZE

SERVICE_NS = 1_000_000  # how often a sender looks for PING, -ERR and acks (it never blocks)
PULL_EXPIRES_NS = 30_000_000_000  # a pull request's lifetime; renewed when it ends
CONSUMER_INACTIVE_S = 600.0  # a consumer left behind by a crashed receiver goes after this
RESPONDERS_GROUP = b"sixnines"  # core responders share requests in this queue group
MAX_PAYLOAD_LIMIT = 64 << 20  # the largest max_payload a server can be configured with
DATA_SID, ACK_SID = b"1", b"2"  # our subscriptions: messages (or pull deliveries), acks
CRLF = b"\r\n"
clock = time.perf_counter_ns
Release = Callable[[], bytes] | None  # what to send before closing a subscriber


class NatsSender(Sender):
    """Publishes pre-framed batches with one `sendall`. About every millisecond it reads
    what the server sent, without blocking: PINGs are answered (a client that ignores two
    is dropped), -ERR raises, JetStream acks are counted. A requester's sender leaves the
    reading to its receiver, which the send loop polls anyway."""

    def __init__(self, link: NatsLink, reads: bool, own_acks: bool = False) -> None:
        self.link = link
        self._write = link.io.write
        self._reads = reads
        self._own_acks = own_acks
        self._next_read = clock() + SERVICE_NS

    @property
    def acked(self) -> int:
        """JetStream publish acks this connection took (a requester agent's are spread
        over its connections, which share one inbox: the sum over them is what counts)."""
        return self.link.acked

    @property
    def acknowledged(self) -> int | None:
        """JetStream: the acks taken where every one is for this connection's own
        publishes (a producer's lane inbox), which the server acks in the order sent."""
        return self.link.acked if self._own_acks and self.link.ack_sid else None

    def send(self, frames: memoryview, count: int) -> None:
        # before the write: a DriverError must mean these frames were not sent
        if self._reads and clock() >= self._next_read:
            self.service()
        self._write(frames)

    def service(self) -> None:
        """Handle what the server sent (PING, -ERR, acks) without blocking."""
        self._next_read = clock() + SERVICE_NS
        link = self.link
        while link.fill(len(link.buf)):
            link.parse(None, 0, 0)

    def close(self) -> None:
        if self._reads and self.link.ack_sid and not self.link.closed:
            with contextlib.suppress(DriverError, OSError):
                self.service()  # the acks that came since the last look are counted
        self.link.close()


class NatsReceiver(Receiver):
    def __init__(self, link: NatsLink, release: Release = None) -> None:
        self.link = link
        self.pollable = link.sock
        self._release = release
        self._wire_min = link.smallest + len(b"MSG a 1 \r\n\r\n") + len(str(link.smallest))

    def receive(self, out: memoryview, stride: int, timeout_ms: int) -> int:
        link = self.link
        room = len(out) // stride
        if link.more:  # whole messages buffered (by the subscription's sync, or a full out)
            return link.parse(out, stride, room)
        if timeout_ms and not link.wait(timeout_ms):
            return 0
        # Read no more than `out` can take, so that no whole message stays buffered where a
        # poller waiting on the socket cannot see it: every message takes at least
        # `_wire_min` bytes, and a buffered partial one at least one byte more than it has.
        partial = link.end - link.start
        limit = max(room * self._wire_min - partial, 1 + (room - 1) * self._wire_min)
        if not link.fill(limit):
            return 0
        n = link.parse(out, stride, room)
        # TLS may hold decrypted bytes that no poller sees: take them while `out` has room
        while link.io.tls and n < room and link.io.pending():
            left = room - n
            link.fill(max(left * self._wire_min - (link.end - link.start), 1))
            n += link.parse(out[n * stride :], stride, left)
        return n

    def close(self) -> None:
        _close(self.link, self._release)


class NatsResponder(Responder):
    def __init__(self, link: NatsLink, reply_prefix: bytes, release: Release = None) -> None:
        self.link = link
        self._release = release
        link.replies = bytearray()
        link.reply_prefix = reply_prefix

    def relay(self, timeout_ms: int) -> int:
        link = self.link
        if not link.more:  # (whole requests may be buffered since the subscription's sync)
            if timeout_ms and not link.wait(timeout_ms):
                return 0
            if not link.fill(len(link.buf)):
                return 0
        n = link.parse(None, 0, 1 << 62)
        if link.replies:
            link.write(link.replies)
            link.replies.clear()
        return n

    def close(self) -> None:
        _close(self.link, self._release)


def _close(link: NatsLink, release: Release) -> None:
    """Close a subscriber, deleting its JetStream consumer if it was the last user."""
    if link.closed:
        return
    cleanup = release() if release else b""
    if cleanup:
        with contextlib.suppress(DriverError):
            link.write(cleanup)
    link.close()


class NatsDriver(Driver):
    #: keys: each is published to `<lane subject>.<key>` (the key's name, one width for
    #: all: frames of one stride); receivers subscribe to (pull consumers filter)
    #: `<lane subject>.*`
    carries_keys = "a subject per key: <subject>.<key> (core NATS, or in the JetStream stream)"
    name = "nats"
    Options = NatsOptions
    options: NatsOptions  # what Options validated
    needs_responder = True

    def __init__(self, address: str, options: NatsOptions,
                 credential: Credential | None = None) -> None:
        super().__init__(address, options, credential)
        self._label = f"nats at {address}"
        self._host, self._port = split_address(address, "nats")
        self._js = options.mode == "jetstream"
        self._token = os.urandom(8).hex()  # names this agent's inbox and consumers
        self._acks = f"_INBOX.{self._token}"
        self._stream_ready: set[str] = set()  # subjects the stream is known to take
        self._consumers: dict[str, int] = {}  # JetStream consumers made here: connections

    def framing(self, message_size: int, lane: Lane = SOLE_LANE) -> Framing:
        """A PUB to `lane`'s subject, in JetStream mode asking for the ack on the agent's
        inbox."""
        reply = lane.name(self._acks) if self._js else ""
        subject = self.lane_subject(lane)
        if self.keys is None:
            return Framing(prefix=pub_line(subject, message_size, reply), suffix=CRLF)
        prefixes = tuple(pub_line(f"{subject}.{self.keys.name(index)}", message_size, reply)
                         for index in range(self.keys.count))
        return Framing(prefix=prefixes[0], suffix=CRLF, key_prefixes=prefixes)

    def receive_framing(self, message_size: int) -> Framing:
        return Framing()  # payloads are copied out end to end

    @classmethod
    def carries_varying_sizes(cls, options: DriverOptions, largest: int) -> bool:
        return True  # PUB lines carry each message's size and MSG lines say it back

    @classmethod
    def workload_problems(cls, options: DriverOptions, workload: WorkloadShape) -> list[str]:
        if workload.message_size > MAX_PAYLOAD_LIMIT:
            return [f"message_size {workload.message_size} is above 64 MiB, the largest "
                    "max_payload a NATS server accepts"]
        held = workload.backlog_messages * workload.message_size
        if isinstance(options, NatsOptions) and options.mode == "jetstream" \
                and 0 <= options.max_bytes < held:
            return [f"a backlog of {workload.backlog_messages:,} messages ({held:,} B) is more "
                    f"than the stream's max_bytes {options.max_bytes:,}: it would discard "
                    "messages the consumers have not read (lost); raise max_bytes"]
        return []

    # durability (drivers/nats/durability.py)

    def durability_asked(self) -> dict[str, Setting]:
        return durability.asked(self.options)

    def durability_unasked(self) -> str | None:
        return None if self._js else durability.CORE

    def durability_actual(self) -> dict[str, Setting]:
        async def read(jsm) -> dict[str, Setting]:
            return durability.of_stream((await jsm.stream_info(self.options.stream)).config)
        return cast(dict[str, Setting],
                    manage(self._host, self._port, self._arguments(), self._label, read))

    @classmethod
    def durability_label(cls, settings: Mapping[str, Setting]) -> str:
        return durability.label(settings)

    @classmethod
    def stores_messages(cls, options: DriverOptions) -> bool:
        """JetStream keeps a stream; core NATS drops what a slow subscriber cannot take."""
        return isinstance(options, NatsOptions) and options.mode == "jetstream"

    @classmethod
    def resource_options(cls, options: DriverOptions) -> tuple[str, ...]:
        """The subject (a run's own hears no other run), and in JetStream the stream."""
        js = isinstance(options, NatsOptions) and options.mode == "jetstream"
        return ("subject", "stream") if js else ("subject",)

    def remove_resources(self, per_run, workload) -> list[str]:
        """The run's stream (its consumers go with it); core subjects leave nothing."""
        if "stream" not in per_run or not self._js:
            return []
        stream = self.options.stream

        async def delete(jsm) -> bool:
            try:
                return await jsm.delete_stream(stream)
            except NotFoundError:  # never created: the run ended before a connection
                return False

        deleted = manage(self._host, self._port, self._arguments(), self._label, delete)
        return [stream] if deleted else []

    # connections

    def _arguments(self) -> dict:
        """nats-py's connect arguments, the login looked up now."""
        return client_arguments(self.options, self.login(), self._label)

    def lane_subject(self, lane: Lane) -> str:
        """The subject of one-way `lane`: `subject` itself with one lane."""
        return lane.name(self.options.subject)

    def _lane_subjects(self, lane: Lane) -> str:
        """What `lane` publishes to, as its receivers take it: its subject, or with keys
        every key's below it (`keys_pattern`)."""
        subject = self.lane_subject(lane)
        return subject if self.keys is None else keys_pattern(subject)

    def _published(self, lane: Lane) -> list[str]:
        """The subjects the stream must take for an agent on `lane`'s count of lanes: the
        subject (round trips; keyed runs are one-way) and every lane's, all checked on the
        first connection."""
        lanes = [self._lane_subjects(Lane(index, lane.count)) for index in range(lane.count)]
        return list(dict.fromkeys(lanes if self.keys else [self.options.subject, *lanes]))

    def _open(self, size: int, consumer: str = "", lane: Lane = SOLE_LANE) -> NatsLink:
        """A connection after the handshake; in JetStream mode the stream exists and takes
        the lane's subjects (and the pull consumer `consumer`, when named, filtering the
        lane's subject) before it returns."""
        if self._js:
            subjects = self._published(lane)
            if consumer or not self._stream_ready.issuperset(subjects):
                manage(self._host, self._port, self._arguments(), self._label,
                        lambda jsm: self._prepare(jsm, consumer, subjects,
                                                  self._lane_subjects(lane)))
                self._stream_ready.update(subjects)
        sock, leftover, info = handshake(self._host, self._port, self._arguments(),
                                          self._label)
        link = NatsLink(sock, leftover, info, size, self._label)
        if self.sizes_vary:  # `size` is the largest: every size from the header's up
            link.smallest = HEADER_SIZE
        if size > link.max_payload:
            link.close()
            raise DriverError(f"{self._label}: {size}-byte messages exceed the server's "
                              f"max_payload of {link.max_payload} bytes")
        return link

    async def _prepare(self, jsm, consumer: str, subjects: list[str], filter_subject: str
                       ) -> None:
        if not self._stream_ready.issuperset(subjects):
            await ensure_stream(jsm, self.options, self._label, subjects,
                                keyed=self.keys is not None)
        if consumer:
            await jsm.add_consumer(self.options.stream, api.ConsumerConfig(
                name=consumer, deliver_policy=api.DeliverPolicy.NEW,
                ack_policy=api.AckPolicy.NONE, filter_subject=filter_subject,
                inactive_threshold=CONSUMER_INACTIVE_S))

    def _publisher(self, link: NatsLink, reads: bool, lane: Lane = SOLE_LANE) -> NatsSender:
        """A sending connection, in JetStream mode subscribed to its lane's ack inbox. A
        producer's (it reads its acks) is alone on its lane, so those acks are its own;
        requesters share the sole lane's."""
        if self._js:
            link.ack_sid = ACK_SID
            link.subscribe(lane.name(self._acks), ACK_SID, b"acks")
        return NatsSender(link, reads, own_acks=reads)

    def _subscriber(self, size: int, name: str, queue: bytes = b"",
                    lane: Lane = SOLE_LANE) -> tuple[NatsLink, Release]:
        """A connection subscribed to `lane`'s subject, in JetStream mode by pulling from
        the consumer `sixnines-<agent token>-<name>` (created by the first connection that
        names it, deleted when the last one closes); returns it with the release."""
        if not self._js:
            subject = self.lane_subject(lane)
            link = self._open(size)
            link.data_sid = DATA_SID
            if self.keys is None:
                link.subscribe(subject, DATA_SID, queue)
                link.fast = msg_line(subject, DATA_SID, size)
            else:  # a subject per key: no one MSG line to match fast
                link.subscribe(keys_pattern(subject), DATA_SID, queue)
            return link, None
        consumer = f"sixnines-{self._token}-{name}"
        link = self._open(size, "" if consumer in self._consumers else consumer, lane)
        self._consumers[consumer] = self._consumers.get(consumer, 0) + 1
        inbox = f"{self._acks}.pull.{os.urandom(6).hex()}"
        link.data_sid = DATA_SID
        link.subscribe(inbox, DATA_SID)
        endpoint = f"$JS.API.CONSUMER.%s.{self.options.stream}.{consumer}"
        link.pull = pull_request(endpoint % "MSG.NEXT", inbox, self.options.batch,
                                 PULL_EXPIRES_NS)
        link.batch = self.options.batch
        link.request_more()
        link.flush()

        def release() -> bytes:
            self._consumers[consumer] -= 1
            if self._consumers[consumer]:
                return b""
            return f"PUB {endpoint % 'DELETE'} 0\r\n\r\n".encode()  # no reply wanted

        return link, release

    @staticmethod
    def _ready(link: NatsLink, release: Release = None) -> None:
        """Wait until the server has taken the subscriptions; close the link if not."""
        try:
            link.sync()
        except DriverError:
            _close(link, release)
            raise

    def sender(self, message_size: int, connection_id: int,
               lane: Lane = SOLE_LANE) -> NatsSender:
        link = self._open(message_size, lane=lane)
        sender = self._publisher(link, reads=True, lane=lane)  # the lane is in the framing
        self._ready(link)
        return sender

    def receiver(self, message_size: int, connection_id: int,
                 lane: Lane = SOLE_LANE) -> NatsReceiver:
        link, release = self._subscriber(message_size, f"receiver-{connection_id}",
                                         lane=lane)
        self._ready(link, release)
        return NatsReceiver(link, release)

    def requester(self, message_size: int,
                  connection_id: int) -> tuple[NatsSender, NatsReceiver]:
        link = self._open(message_size)
        reply = f"{self.options.subject}.reply.{connection_id}"
        link.data_sid = DATA_SID
        link.subscribe(reply, DATA_SID)
        link.fast = msg_line(reply, DATA_SID, message_size)
        sender = self._publisher(link, reads=False)
        self._ready(link)
        return sender, NatsReceiver(link)

    def responder(self, message_size: int, connection_id: int) -> NatsResponder:
        # core: one queue group; JetStream: one consumer shared by the agent's connections
        link, release = self._subscriber(message_size, "responders", RESPONDERS_GROUP)
        self._ready(link, release)
        return NatsResponder(link, f"{self.options.subject}.reply.".encode(), release)
