"""RabbitMQ (AMQP 0-9-1): pika sets each connection up, the hot path speaks frames itself.

pika connects, authenticates, opens channel 1, declares the exchange and queues and sets
basic.qos and confirm mode (drivers/rabbitmq/connection.py). The driver then takes pika's
connected socket and speaks the few frames the hot path needs on it (drivers/rabbitmq/
wire.py; pika is not used on that connection again):

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

Delivery is by lane (`Lane`: connection c of an agent is on lane c of the workload's
connections). With a named exchange (fanout) each lane has an exchange of its own,
`lane.name(exchange)` (the exchange itself with one connection), and every receiver
connection gets its own queue bound to its lane's exchange: consumers fan out, a consumer's
connections divide the senders' lanes. That queue is exclusive and server-named when
classic; quorum and stream queues cannot be exclusive, so theirs is named after the
connection (`own_queue`), emptied at its first declare and deleted with the run's other
resources. With `exchange: ""` each lane goes through one named queue, `lane.name(queue)`,
which its consumers would share (so one consumer at most). `framing` is asked per
connection, so each lane's pre-encoded publish names its own route.

Every queue is declared with the option `queue_type` as its x-queue-type. A stream keeps
no position for an AMQP 0-9-1 consumer: its consumer reads from the stream's first message
(the stream is the run's, emptied at its first declare), and after a reconnect from the
offset after the last delivery it handed over (`RabbitmqLink.handed_over`), so every
message published in the run is delivered once.

Keys (formats.keys): each message's routing key is its key's name, in the pre-encoded
Basic.Publish of its ring slot (`Framing.key_prefixes`; names of one width, one stride),
on the lane's named exchange; bodies larger than a frame are refused with keys.

Round trip always uses the default exchange: requests to "<queue>.requests", each carrying
reply_to = the requester's own queue (as a fanout consumer's); the responder publishes
each body back to its reply_to.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import pika.exceptions as errors

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
    wrong_size,
)
from sixnines.drivers.rabbitmq import durability
from sixnines.drivers.rabbitmq.connection import CONFIRM_WAIT_S, RabbitmqLink, connect, reason
from sixnines.drivers.rabbitmq.options import CLASSIC, RabbitmqOptions
from sixnines.drivers.rabbitmq.wire import (
    BODY_FRAME,
    END,
    FRAME,
    fits_one_frame,
    publish_head,
)
from sixnines.formats.durability import Setting
from sixnines.formats.keys import NONE
from sixnines.formats.payload import HEADER_SIZE
from sixnines.formats.vocabulary import Mode, Role

MAX_MESSAGE = 128 << 20  # RabbitMQ's default max_message_size
READ_BYTES = 4 << 20
SCALAR_BATCH = 4  # up to this many messages, slice copies beat numpy's call overhead


def lane_route(options: RabbitmqOptions, lane: Lane) -> tuple[str, str]:
    """(exchange, routing key) of one-way messages on `lane`: the lane's fanout exchange,
    or the default exchange and the lane's queue. With one lane, the options' names."""
    if options.exchange:
        return lane.name(options.exchange), ""
    return "", lane.name(options.queue)


def own_queue(queue: str, role: Role, connection_id: int) -> str:
    """The named queue of one receiver connection (a fanout consumer's, a requester's
    replies) when its queue type cannot be exclusive: "<queue>.<role>-<id>"."""
    return f"{queue}.{role}-{connection_id}"


class _Publisher(Sender):
    def __init__(self, link: RabbitmqLink, confirms: bool) -> None:
        self._link = link
        self._confirms = confirms

    @property
    def unconfirmed(self) -> int:
        """Publishes the broker has not confirmed yet (0 without confirms)."""
        return self._link.published - self._link.confirmed if self._confirms else 0

    @property
    def acknowledged(self) -> int | None:
        """With `confirms`: the publishes confirmed, every one up to that delivery tag (a
        channel numbers its publishes 1, 2, … in the order sent)."""
        return self._link.confirmed if self._confirms else None

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

    def __init__(self, link: RabbitmqLink, head: bytes, message_size: int, offset: int,
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
            self._wire = self._ring.data

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
            sources = np.frombuffer(frames, np.uint8).reshape(count, stride)
            for at, start, size in self._chunks:
                into[:, at : at + size] = sources[:, offset + start : offset + start + size]
        link = self._link
        link.write(wire[: count * slot])
        link.published += count
        link.check()


class RabbitmqReceiver(Receiver):
    """Copies delivered bodies into the caller's buffer and acks them in one frame."""

    def __init__(self, link: RabbitmqLink, message_size: int, auto_ack: bool,
                 smallest: int | None = None) -> None:
        self._link = link
        self._size = message_size
        self._smallest = message_size if smallest is None else smallest  # below: sizes vary
        self._ack = not auto_ack
        self.pollable = link.sock

    def _take(self, out: memoryview, stride: int, room: int) -> int:
        next_delivery, size, smallest = self._link.next_delivery, self._size, self._smallest
        n = at = 0
        while n < room:
            body = next_delivery()
            if body is None:
                break
            length = len(body)
            if length != size and not smallest <= length <= size:
                raise wrong_size(self._link.label, length, smallest, size)
            out[at : at + length] = body
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
        if n:
            link.handed_over()
            if self._ack:
                link.write(link.ack_frame(link.tag))
        return n

    def close(self) -> None:
        self._link.close()


class RabbitmqResponder(Responder):
    """Publishes each request's body to its reply_to through the default exchange, then
    acks the requests, all in one write per batch."""

    def __init__(self, link: RabbitmqLink, message_size: int, options: RabbitmqOptions) -> None:
        self._link = link
        self._size = message_size
        self._options = options
        self._heads: dict[bytes, bytes] = {}  # reply_to -> encoded publish head
        self._out = bytearray()

    def _head(self, reply_to: bytes) -> bytes:
        link, size = self._link, self._size
        head = publish_head(link.channel, "", reply_to, size, self._options.persistent)
        if fits_one_frame(size, link.frame_max):
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
            link.handed_over()
            if not self._options.auto_ack:
                self._out += link.ack_frame(link.tag)
            link.write(self._out)
            self._out.clear()
            link.published += n
        return n

    def close(self) -> None:
        self._link.close(self._options.confirms)


class RabbitmqDriver(Driver):
    #: keys: the routing key of each Basic.Publish on the lane's exchange (a fanout
    #: exchange delivers every key to every queue: sixnines measures fan-out)
    carries_keys = "the routing key (on the fanout exchange: every queue gets every key)"
    name = "rabbitmq"
    Options = RabbitmqOptions
    options: RabbitmqOptions  # what Options validated
    needs_responder = True

    def __init__(self, address: str, options: RabbitmqOptions,
                 credential: Credential | None = None) -> None:
        super().__init__(address, options, credential)
        self._host, self._port = split_address(address, self.name)
        self._label = f"rabbitmq at {address}"
        self._emptied: set[str] = set()  # named queues this driver has declared afresh
        self._positions: dict[str, int] = {}  # a stream's offset to go on from, by queue

    @property
    def _requests(self) -> str:
        return f"{self.options.queue}.requests"

    def framing(self, message_size: int, lane: Lane = SOLE_LANE) -> Framing:
        """The whole Basic.Publish to the lane's route up to the body, when the body fits
        one frame (channel 1: pika opens it first on every connection)."""
        if not fits_one_frame(message_size):
            return Framing()
        options = self.options
        exchange, routing_key = lane_route(options, lane)
        body = FRAME.pack(BODY_FRAME, 1, message_size)
        if self.keys is None:
            head = publish_head(1, exchange, routing_key, message_size, options.persistent)
            return Framing(prefix=head + body, suffix=END)
        prefixes = tuple(publish_head(1, exchange, self.keys.name(index), message_size,
                                      options.persistent) + body
                         for index in range(self.keys.count))
        return Framing(prefix=prefixes[0], suffix=END, key_prefixes=prefixes)

    def receive_framing(self, message_size: int) -> Framing:
        return Framing()  # bare bodies, end to end

    @classmethod
    def carries_varying_sizes(cls, options: DriverOptions, largest: int) -> bool:
        """When every body fits one frame: publishes are pre-encoded per size
        (`DirectSender` writes them end to end); larger ones are copied into a template of
        one size."""
        return fits_one_frame(largest)

    @classmethod
    def workload_problems(cls, options: DriverOptions, workload: WorkloadShape) -> list[str]:
        if not isinstance(options, RabbitmqOptions):
            return []  # invalid options (still a dict): the scenario loader reports them
        problems = []
        if (workload.mode == Mode.ONE_WAY and not options.exchange
                and workload.consumers > 1):
            problems.append(
                f"exchange \"\" (the default exchange) sends each lane through one named "
                f"queue ({options.queue!r}; {options.queue!r}.<lane> with several "
                f"connections) whose consumers share its messages, each message going to "
                f"one of them, but this workload has {workload.consumers} consumers and "
                "sixnines measures fan-out (every consumer gets every message): name a "
                "fanout exchange (option exchange) or use one consumer")
        if workload.message_size > MAX_MESSAGE:
            problems.append(f"message_size {workload.message_size} is above RabbitMQ's "
                            f"default max_message_size ({MAX_MESSAGE} bytes)")
        return problems

    @classmethod
    def key_problems(cls, options: DriverOptions, workload: WorkloadShape) -> list[str]:
        if workload.keys == NONE or not isinstance(options, RabbitmqOptions):
            return []
        if not options.exchange:
            return ["rabbitmq: keys are routing keys on a named exchange; with exchange "
                    "\"\" the routing key names the queue: set option exchange"]
        if not fits_one_frame(workload.message_size):
            return [f"rabbitmq: keys need messages that fit one frame (message_size "
                    f"{workload.message_size} does not)"]
        return []

    # --- durability (drivers/rabbitmq/durability.py) ---------------------------------

    def durability_asked(self) -> dict[str, Setting]:
        return durability.asked(self.options)

    def durability_unasked(self) -> str | None:
        return None

    def durability_actual(self) -> dict[str, Setting]:
        """`durable` and x-queue-type of the first of the run's named queues found
        (`_asked_queues`; its name as `queue`), as the broker's refusals of inequivalent
        declares name them (drivers/rabbitmq/durability.py)."""
        names = self._asked_queues()
        connection, channel = connect(self._host, self._port, self.options, self.login(),
                                      "sixnines durability", self._label)
        try:
            for queue in names:
                try:
                    channel.queue_declare(queue, passive=True)
                except errors.ChannelClosedByBroker:  # not there (or another's exclusive)
                    channel = connection.channel()
                    continue
                return {"queue": queue, **durability.read_back(connection, queue,
                                                                self.options)}
        except (errors.AMQPError, ValueError) as exc:
            raise DriverError(f"{self._label}: asking the broker about the run's queues "
                              f"failed ({reason(exc)})") from exc
        finally:
            if connection.is_open:
                connection.close()
        raise DriverError(f"{self._label}: no queue of the run's to ask ({', '.join(names)} "
                          "not there; a classic queue bound to a fanout exchange is "
                          "exclusive to its consumer's connection)")

    def _asked_queues(self) -> list[str]:
        """The named queues one of which the run declares, as far as its options tell: a
        fanout consumer's own queue (not classic), or the default exchange's queue of one
        lane or of the first of several; then a round trip's requests queue."""
        options = self.options
        if not options.exchange:
            first = [options.queue, Lane(0, 2).name(options.queue)]
        elif options.queue_type != CLASSIC:
            first = [own_queue(options.queue, Role.CONSUMER, 0)]
        else:
            first = []
        return [*first, self._requests]

    @classmethod
    def durability_label(cls, settings: Mapping[str, Setting]) -> str:
        return durability.label(settings)

    @classmethod
    def stores_messages(cls, options: DriverOptions) -> bool:
        return True  # every receiver has its queue (beyond what prefetch hands it)

    @classmethod
    def resource_options(cls, options: DriverOptions) -> tuple[str, ...]:
        return ("exchange", "queue")

    def _named_queues(self, workload: WorkloadShape) -> list[str]:
        """Every named queue the run's agents declare: the lanes' queues of the default
        exchange, or the requests queue, and each receiver connection's own queue where it
        cannot be exclusive (classic ones are exclusive, gone with their connection)."""
        options = self.options
        own = options.queue_type != CLASSIC
        if workload.mode != Mode.ONE_WAY:
            requesters = workload.producers * workload.connections if own else 0
            return [self._requests, *(own_queue(options.queue, Role.REQUESTER, connection)
                                      for connection in range(requesters))]
        if options.exchange:
            consumers = workload.consumers * workload.connections if own else 0
            return [own_queue(options.queue, Role.CONSUMER, connection)
                    for connection in range(consumers)]
        return [Lane(index, workload.connections).name(options.queue)
                for index in range(workload.connections)]

    def remove_resources(self, per_run, workload) -> list[str]:
        """The run's exchanges (one per lane) and its named queues (`_named_queues`).
        Deleting what is not there is no error in RabbitMQ."""
        options = self.options
        exchanges = []
        if workload.mode == Mode.ONE_WAY and options.exchange and "exchange" in per_run:
            exchanges = [Lane(index, workload.connections).name(options.exchange)
                         for index in range(workload.connections)]
        queues = self._named_queues(workload) if "queue" in per_run else []
        if not exchanges and not queues:
            return []
        connection, channel = connect(self._host, self._port, options, self.login(),
                                      "sixnines clean-up", self._label)
        try:
            for exchange in exchanges:
                channel.exchange_delete(exchange)
            for queue in queues:
                channel.queue_delete(queue)
        except errors.AMQPError as exc:
            raise DriverError(f"{self._label}: deleting the run's exchanges and queues "
                              f"failed ({reason(exc)})") from exc
        finally:
            if connection.is_open:
                connection.close()
        return exchanges + queues

    # --- connections ----------------------------------------------------------------

    def _setup(self, role: Role, connection_id: int, prepare, read_bytes: int = 1 << 16):
        """Connect, let `prepare(channel)` declare what the role needs (returning a value
        passed back), and hand the connection over to a Link."""
        connection, channel = connect(self._host, self._port, self.options, self.login(),
                                      f"sixnines {role} {connection_id}", self._label)
        try:
            value = prepare(channel)
            if self.options.confirms and role in (Role.PRODUCER, Role.REQUESTER, Role.RESPONDER):
                channel.confirm_delivery()
        except errors.AMQPError as exc:
            if connection.is_open:
                connection.close()
            raise DriverError(f"{self._label}: setting up the {role} failed "
                              f"({reason(exc)})") from exc
        return RabbitmqLink(connection, channel, self._label, read_bytes), value

    def _prefetch(self, channel) -> None:
        """basic.qos for a consumer that acknowledges."""
        if not self.options.auto_ack:
            channel.basic_qos(prefetch_count=self.options.prefetch)

    def _consumer(self, channel, queue: str) -> str:
        """The named queue a consumer reads, with its prefetch: deleted and declared afresh
        the first time (nothing stale from an earlier run is counted, and a sweep of
        `persistent` or `queue_type` may change it), and only declared when the consumer
        connects again (what the queue kept through a broker restart is this run's, still
        to be delivered). Publishers never declare queues: the consumer side owns them."""
        options = self.options
        self._prefetch(channel)
        if queue not in self._emptied:
            channel.queue_delete(queue)
            self._emptied.add(queue)
        channel.queue_declare(queue, durable=options.persistent,
                              arguments={"x-queue-type": options.queue_type})
        return queue

    def _own_consumer(self, channel, role: Role, connection_id: int) -> str:
        """The queue of one receiver connection alone (a fanout consumer's, a requester's
        replies): exclusive and server-named when classic, else named after the connection
        (`own_queue`) and declared as `_consumer` declares."""
        options = self.options
        if options.queue_type != CLASSIC:
            return self._consumer(channel, own_queue(options.queue, role, connection_id))
        self._prefetch(channel)
        return channel.queue_declare("", durable=options.persistent, exclusive=True,
                                     auto_delete=True,
                                     arguments={"x-queue-type": CLASSIC}).method.queue

    def _consume(self, link: RabbitmqLink, queue: str) -> None:
        """Basic.Consume on `queue` (a stream's from where this driver's consumer of it
        stopped: `RabbitmqLink.consume`); the link is closed when that fails."""
        options = self.options
        positions = self._positions if options.queue_type == "stream" else None
        try:
            link.consume(queue, options.auto_ack, positions)
        except DriverError:
            link.close()
            raise

    def _publisher(self, link: RabbitmqLink, message_size: int, head: bytes, framed: bool,
                   lane: Lane = SOLE_LANE):
        confirms = self.options.confirms
        if framed and fits_one_frame(message_size):
            if link.channel != 1 or link.frame_max < message_size + 8:
                link.close()
                raise DriverError(f"{self._label}: the broker offers frame_max "
                                  f"{link.frame_max} on channel {link.channel}; pre-encoded "
                                  f"publishing needs {message_size + 8} on channel 1")
            return DirectSender(link, confirms)
        offset = len(self.framing(message_size, lane).prefix)
        return TemplateSender(link, head, message_size, offset, confirms)

    def sender(self, message_size: int, connection_id: int, lane: Lane = SOLE_LANE):
        """Publishes to the lane's route (which `framing(message_size, lane)` names)."""
        options = self.options
        exchange, routing_key = lane_route(options, lane)

        def prepare(channel) -> None:
            if exchange:
                channel.exchange_declare(exchange, "fanout", durable=True)

        link, _ = self._setup(Role.PRODUCER, connection_id, prepare)
        head = publish_head(link.channel, exchange, routing_key, message_size,
                            options.persistent)
        return self._publisher(link, message_size, head, framed=True, lane=lane)

    def receiver(self, message_size: int, connection_id: int,
                 lane: Lane = SOLE_LANE) -> RabbitmqReceiver:
        """A queue of its own bound to the lane's exchange, or the lane's named queue."""
        exchange, routing_key = lane_route(self.options, lane)

        def prepare(channel) -> str:
            if not exchange:
                return self._consumer(channel, routing_key)  # the default exchange's queue
            channel.exchange_declare(exchange, "fanout", durable=True)
            own = self._own_consumer(channel, Role.CONSUMER, connection_id)
            channel.queue_bind(own, exchange)
            return own

        return self._subscribe(Role.CONSUMER, connection_id, prepare, message_size)[0]

    def _subscribe(self, role: Role, connection_id: int, prepare,
                   message_size: int) -> tuple[RabbitmqReceiver, str]:
        read_bytes = max(READ_BYTES, 4 * (message_size + 512))
        link, queue = self._setup(role, connection_id, prepare, read_bytes)
        self._consume(link, queue)
        return RabbitmqReceiver(link, message_size, self.options.auto_ack,
                                HEADER_SIZE if self.sizes_vary else None), queue

    def requester(self, message_size: int, connection_id: int):
        options = self.options
        replies, reply_to = self._subscribe(
            Role.REQUESTER, connection_id,
            lambda channel: self._own_consumer(channel, Role.REQUESTER, connection_id),
            message_size)

        try:
            link, _ = self._setup(Role.REQUESTER, connection_id, lambda channel: None)
        except DriverError:
            replies.close()
            raise
        head = publish_head(link.channel, "", self._requests, message_size,
                             options.persistent, reply_to)
        return self._publisher(link, message_size, head, framed=False), replies

    def responder(self, message_size: int, connection_id: int) -> RabbitmqResponder:
        read_bytes = max(READ_BYTES, 4 * (message_size + 512))
        link, queue = self._setup(
            Role.RESPONDER, connection_id,
            lambda channel: self._consumer(channel, self._requests), read_bytes)
        self._consume(link, queue)
        return RabbitmqResponder(link, message_size, self.options)
