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
  producer's: the connection that sent the message, its acks in the order it sent;
  see NatsSender for where a producer's claim of them stops);
  acks are counted without blocking the send loop, an error ack is a DriverError.
  Receivers each own a pull consumer (filter S, from the stream's next message, no acks),
  so every receiver sees every message published after it was created; one whose
  connection fails (a node gone, its consumer's leader changed) resets it to the stream
  seq after the last it received (or makes it again from there), so what was on its way
  to the old connection comes again, as NATS' ordered consumers resume. A responder
  agent's connections
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
- A cluster: the address names every node, comma separated (`host:port,host:port`, the
  NATS convention). Each connection goes to the next node in turn from a random first one
  (as NATS clients shuffle their server list), so an agent's connections spread over the
  nodes; a node that does not take it is passed over for the next, and a connection made
  again after a node died goes to one that is up. Pull consumers have the stream's
  replicas, so one outlives a node as the stream does.
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
    split_addresses,
)
from sixnines.drivers.nats import durability
from sixnines.drivers.nats.connection import (
    NatsLink,
    client_arguments,
    ensure_stream,
    handshake,
    manage,
    rewind,
)
from sixnines.drivers.nats.options import NatsOptions
from sixnines.drivers.nats.wire import keys_pattern, msg_line, pub_line, pull_request, stream_seq
from sixnines.formats.durability import Setting
from sixnines.formats.payload import HEADER_SIZE

SERVICE_NS = 1_000_000  # how often a sender looks for PING, -ERR and acks (it never blocks)
#: No ack for this long while messages wait for one: the acks claimed stop there (a
#: cluster's leader election, which drops publishes, takes 4 s at least).
ACK_WAIT_NS = 2_000_000_000
PULL_EXPIRES_NS = 30_000_000_000  # a pull request's lifetime; renewed when it ends
CONSUMER_INACTIVE_S = 600.0  # a consumer left behind by a crashed receiver goes after this
RESPONDERS_GROUP = b"sixnines"  # core responders share requests in this queue group
MAX_PAYLOAD_LIMIT = 64 << 20  # the largest max_payload a server can be configured with
DATA_SID, ACK_SID = b"1", b"2"  # our subscriptions: messages (or pull deliveries), acks
CRLF = b"\r\n"
clock = time.perf_counter_ns
#: What to send before closing a subscriber (True: keep its JetStream consumer).
Release = Callable[[bool], bytes] | None


class NatsSender(Sender):
    """Publishes pre-framed batches with one `sendall`. About every millisecond it reads
    what the server sent, without blocking: PINGs are answered (a client that ignores two
    is dropped), -ERR raises, JetStream acks are counted. A requester's sender leaves the
    reading to its receiver, which the send loop polls anyway.

    The acks a producer claims (`acknowledged`) are the first N it sent: acks come in the
    order sent. That holds while the stream drops nothing it is sent; a cluster's stream
    between leaders drops publishes without a word (no ack, no error, the connection
    stays), and the acks after it are for later messages. So when messages wait
    ACK_WAIT_NS without any ack, the claim stays where it was: a lower bound, never a
    message that was not acknowledged."""

    def __init__(self, link: NatsLink, reads: bool, own_acks: bool = False) -> None:
        self.link = link
        self._write = link.io.write
        self._reads = reads
        self._own_acks = own_acks
        now = clock()
        self._next_read = now + SERVICE_NS
        self.sent = 0  # messages written on this connection
        self._acks_seen = 0  # acks at the last look (`_watch_acks`)
        self._waiting_since = now  # since when no ack came while messages waited for one
        self._claim: int | None = None  # the acks claimed once they stopped (None: all)

    @property
    def acked(self) -> int:
        """JetStream publish acks this connection took (a requester agent's are spread
        over its connections, which share one inbox: the sum over them is what counts)."""
        return self.link.acked

    @property
    def acknowledged(self) -> int | None:
        """JetStream: the acks taken where every one is for this connection's own
        publishes (a producer's lane inbox), which the server acks in the order sent; up
        to where they stopped for ACK_WAIT_NS (see the class)."""
        if not (self._own_acks and self.link.ack_sid):
            return None
        return self.link.acked if self._claim is None else self._claim

    def send(self, frames: memoryview, count: int) -> None:
        # before the write: a DriverError must mean these frames were not sent
        if self._reads and clock() >= self._next_read:
            self.service()
        self._write(frames)
        self.sent += count

    def service(self) -> None:
        """Handle what the server sent (PING, -ERR, acks) without blocking."""
        now = clock()
        self._next_read = now + SERVICE_NS
        link = self.link
        while link.fill(len(link.buf)):
            link.parse(None, 0, 0)
        if self._own_acks and self._claim is None:
            self._watch_acks(now)

    def _watch_acks(self, now: int) -> None:
        """Hold the claim where it is once messages waited ACK_WAIT_NS with no ack."""
        acked = self.link.acked
        if acked != self._acks_seen or acked >= self.sent:  # acks come, or none is due
            self._acks_seen, self._waiting_since = acked, now
        elif now - self._waiting_since >= ACK_WAIT_NS:
            self._claim = acked

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
        self.failed = False  # a DriverError came out of it: its consumer is kept (_close)
        self._wire_min = link.smallest + len(b"MSG a 1 \r\n\r\n") + len(str(link.smallest))

    def receive(self, out: memoryview, stride: int, timeout_ms: int) -> int:
        link = self.link
        try:
            room = len(out) // stride
            if link.more:  # whole messages buffered (by the subscription's sync, or a full out)
                return link.parse(out, stride, room)
            if timeout_ms and not link.wait(timeout_ms):
                return 0
            # Read no more than `out` can take, so that no whole message stays buffered where
            # a poller waiting on the socket cannot see it: every message takes at least
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
        except DriverError:
            self.failed = True
            raise

    def close(self) -> None:
        _close(self.link, self._release, keep=self.failed)


class NatsResponder(Responder):
    def __init__(self, link: NatsLink, reply_prefix: bytes, release: Release = None) -> None:
        self.link = link
        self._release = release
        self.failed = False  # as NatsReceiver's
        link.replies = bytearray()
        link.reply_prefix = reply_prefix

    def relay(self, timeout_ms: int) -> int:
        link = self.link
        try:
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
        except DriverError:
            self.failed = True
            raise

    def close(self) -> None:
        _close(self.link, self._release, keep=self.failed)


def _close(link: NatsLink, release: Release, keep: bool = False) -> None:
    """Close a subscriber, deleting its JetStream consumer if it was the last user, unless
    `keep`: its connection failed, and the agent makes it again to the same consumer (a
    broker or node restarted, a consumer leader being elected), which must still hold its
    place in the stream; one nobody comes back to goes after CONSUMER_INACTIVE_S."""
    if link.closed:
        return
    cleanup = release(keep) if release else b""
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
        self._servers = split_addresses(address, "nats")
        self._turn = int.from_bytes(os.urandom(2), "big") % len(self._servers)  # next node
        self._js = options.mode == "jetstream"
        self._token = os.urandom(8).hex()  # names this agent's inbox and consumers
        self._acks = f"_INBOX.{self._token}"
        self._stream_ready: set[str] = set()  # subjects the stream is known to take
        self._consumers: dict[str, int] = {}  # JetStream consumers made here: connections
        #: Each consumer's next stream seq: where it began, or where a receiver whose
        #: connection failed stopped (`_subscriber` makes that one again from there).
        self._next_seq: dict[str, int] = {}
        self._resumed: set[str] = set()  # consumers to be made again from `_next_seq`

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
        return cast(dict[str, Setting], self._manage(read))

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

        deleted = self._manage(delete)
        return [stream] if deleted else []

    # connections

    def _arguments(self) -> dict:
        """nats-py's connect arguments, the login looked up now."""
        return client_arguments(self.options, self.login(), self._label)

    def _in_turn(self) -> list[int]:
        """The nodes, by index, from the one whose turn it is."""
        count = len(self._servers)
        return [(self._turn + k) % count for k in range(count)]

    def _manage(self, work) -> object:
        """`work` (connection.manage) on the first node in turn that takes a connection."""
        return manage([self._servers[k] for k in self._in_turn()], self._arguments(),
                      self._label, work)

    def _handshake(self):
        """connection.handshake with the first node in turn that completes it; the next
        connection starts at the node after it."""
        failures: list[DriverError] = []
        for k in self._in_turn():
            host, port = self._servers[k]
            label = self._label if len(self._servers) == 1 else f"nats at {host}:{port}"
            try:
                made = handshake(host, port, self._arguments(), label)
            except DriverError as exc:
                failures.append(exc)
                continue
            self._turn = (k + 1) % len(self._servers)
            return made
        if len(failures) == 1:
            raise failures[0]
        said = "; ".join(map(str, failures))
        raise DriverError(f"{self._label}: no node took a connection ({said})")

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

    def _open(self, size: int, consumer: str = "", lane: Lane = SOLE_LANE,
              start: int | None = None) -> NatsLink:
        """A connection after the handshake; in JetStream mode the stream exists and takes
        the lane's subjects (and the pull consumer `consumer`, when named, filtering the
        lane's subject, made from stream seq `start` when given) before it returns."""
        if self._js:
            subjects = self._published(lane)
            if consumer or not self._stream_ready.issuperset(subjects):
                self._manage(lambda jsm: self._prepare(jsm, consumer, subjects,
                                                       self._lane_subjects(lane), start))
                self._stream_ready.update(subjects)
        sock, leftover, info = self._handshake()
        link = NatsLink(sock, leftover, info, size, self._label)
        if self.sizes_vary:  # `size` is the largest: every size from the header's up
            link.smallest = HEADER_SIZE
        if size > link.max_payload:
            link.close()
            raise DriverError(f"{self._label}: {size}-byte messages exceed the server's "
                              f"max_payload of {link.max_payload} bytes")
        return link

    async def _prepare(self, jsm, consumer: str, subjects: list[str], filter_subject: str,
                       start: int | None) -> None:
        if not self._stream_ready.issuperset(subjects):
            await ensure_stream(jsm, self.options, self._label, subjects,
                                keyed=self.keys is not None)
        if consumer:
            await self._make_consumer(jsm, consumer, filter_subject, start)

    async def _make_consumer(self, jsm, consumer: str, filter_subject: str,
                             start: int | None) -> None:
        """The pull consumer `consumer`, delivering from the stream's next message on; or,
        for a receiver whose connection failed, from stream seq `start` on, as NATS'
        ordered consumers resume: what was on its way to the failed connection (gone with
        a node, say) is delivered again, not skipped. Reset in place where the server
        can (`rewind`: its leader alone answers), else deleted and made again (which the
        cluster's metadata leader must answer). Never from beyond the stream's next
        message (a stream in memory started again begins anew)."""
        stream = self.options.stream
        following = (await jsm.stream_info(stream)).state.last_seq + 1
        if start is not None:
            start = min(start, following)
            if await rewind(jsm, stream, consumer, start):
                self._next_seq[consumer] = start
                return
            with contextlib.suppress(NotFoundError):
                await jsm.delete_consumer(stream, consumer)
        info = await jsm.add_consumer(stream, api.ConsumerConfig(
            name=consumer, deliver_policy=api.DeliverPolicy.BY_START_SEQUENCE,
            opt_start_seq=following if start is None else start,
            ack_policy=api.AckPolicy.NONE, filter_subject=filter_subject,
            inactive_threshold=CONSUMER_INACTIVE_S, num_replicas=self.options.replicas))
        self._next_seq[consumer] = info.delivered.stream_seq + 1

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
        names it, deleted when the last one closes; a receiver's own, when its connection
        failed, made again from where it stopped); returns it with the release."""
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
        resumed = consumer in self._resumed
        made = consumer not in self._consumers or resumed
        link = self._open(size, consumer if made else "", lane,
                          self._next_seq.get(consumer) if resumed else None)
        self._resumed.discard(consumer)
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

        def release(keep: bool) -> bytes:
            self._consumers[consumer] -= 1
            if keep and not queue:  # a receiver's own consumer: resumed where it stopped
                delivered = stream_seq(link.last_reply)
                if delivered is not None:
                    self._next_seq[consumer] = delivered + 1
                self._resumed.add(consumer)
            if self._consumers[consumer] or keep:
                return b""
            return f"PUB {endpoint % 'DELETE'} 0\r\n\r\n".encode()  # no reply wanted

        return link, release

    @staticmethod
    def _ready(link: NatsLink, release: Release = None) -> None:
        """Wait until the server has taken the subscriptions; close the link if not."""
        try:
            link.sync()
        except DriverError:
            _close(link, release, keep=True)
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
