"""The kafka driver's confluent-kafka back end (librdkafka: C client, its own I/O threads).

librdkafka retries connections forever, buffering what is produced meanwhile, and reports
trouble through `error_cb`. An error that may mean the broker is gone (all brokers down,
transport) is given OUTAGE_GRACE_S, during which senders keep handing messages to the
client as a Kafka producer riding out an outage would (those that never arrive are
counted lost); then a bounded metadata request decides, so a broker closing an idle
connection does not fail a run and a dead one does.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import time
import uuid
import weakref
from collections.abc import Callable
from pathlib import Path
from typing import Literal

import confluent_kafka
from confluent_kafka import (
    OFFSET_END,
    Consumer,
    KafkaError,
    KafkaException,
    Producer,
    TopicPartition,
)
from confluent_kafka.admin import AdminClient, ConfigResource, NewTopic, ResourceType

from sixnines.drivers.base import (
    NONE_SMALLER,
    DriverError,
    Receiver,
    Responder,
    Sender,
    wrong_size,
)
from sixnines.drivers.kafka.durability import TOPIC_CONFIGS
from sixnines.drivers.kafka.wire import producer_id
from sixnines.formats.keys import KEY_OFFSET, KEY_STRUCT

KEY_END = KEY_OFFSET + KEY_STRUCT.size
BY_KEY = -1  # librdkafka's "unassigned" partition: its partitioner hashes the key

LIVENESS_TIMEOUT_S = 2.0  # a metadata request that cannot be answered in this: broker gone
OUTAGE_GRACE_S = 1.0  # how long a possible outage is ridden out before it is checked
FLUSH_TIMEOUT_S = 5.0
JOIN_TIMEOUT_S = 30.0  # consumer-group assignment (group: true)
DELIVERY_TIMEOUT_MS = 30_000  # a message not acknowledged by then is a delivery error
WAIT_SLICE_S = 1.0  # a blocking receive looks at error reports this often
RELAY_BATCH = 1024
FETCH_BYTES = 52_428_800  # librdkafka's default fetch.max.bytes
MAYBE_GONE = {KafkaError._ALL_BROKERS_DOWN, KafkaError._TRANSPORT, KafkaError._RESOLVE,
              KafkaError._TIMED_OUT}


def _reason(error: KafkaError | KafkaException | Exception) -> str:
    if isinstance(error, KafkaException) and error.args:
        error = error.args[0]
    return error.str() if isinstance(error, KafkaError) else str(error)


class ConfluentBackend:
    """Admin work (connection check, topics) and the factories of one driver."""

    def __init__(self, driver, timeout_s: float) -> None:
        self.driver = driver  # its record_bytes sizes topics, producers and consumers
        self.label = driver.label
        opts = driver.options
        self.options = opts
        self.common = {"bootstrap.servers": driver.address, "socket.nagle.disable": True}
        if opts.sasl_mechanism is not None:
            username, password = driver.login()
            self.common |= {"security.protocol": "SASL_PLAINTEXT",
                            "sasl.mechanisms": opts.sasl_mechanism,
                            "sasl.username": username, "sasl.password": password}
        self.timeout_s = timeout_s
        errors: list[KafkaError] = []
        self.admin = AdminClient(self.conf(error_cb=errors.append))
        self._connect(errors)

    def conf(self, **extra) -> dict:
        return {**self.common, "client.id": f"sixnines-{uuid.uuid4().hex[:12]}", **extra}

    def _connect(self, errors: list[KafkaError]) -> None:
        """A metadata request within the timeout, failing early on authentication errors
        (which librdkafka would otherwise retry until the timeout)."""
        deadline = time.monotonic() + self.timeout_s
        while True:
            try:
                self.admin.list_topics(timeout=0.25)
                return
            except KafkaException as exc:
                last = _reason(exc)
            self.admin.poll(0)
            for error in errors:
                if error.code() == KafkaError._AUTHENTICATION or error.fatal():
                    raise DriverError(f"{self.label}: authentication failed "
                                      f"({error.str()})")
            if time.monotonic() >= deadline:
                seen = "; ".join(dict.fromkeys(e.str() for e in errors)) or last
                raise DriverError(f"{self.label}: cannot connect (no metadata within "
                                  f"{self.timeout_s:g} s: {seen})")

    def ensure_topic(self, name: str, partitions: int) -> int:
        """Create the topic (with `partitions`) unless it exists; wait until its metadata
        shows partitions; how many it has."""
        opts = self.options
        deadline = time.monotonic() + self.timeout_s
        created = False
        while True:
            try:
                topic = self.admin.list_topics(timeout=self.timeout_s).topics.get(name)
            except KafkaException as exc:
                raise DriverError(f"{self.label}: metadata failed ({_reason(exc)})") from None
            if topic is not None and topic.error is None and topic.partitions:
                return len(topic.partitions)
            if not created:
                future = self.admin.create_topics(
                    [NewTopic(name, partitions, opts.replication,
                              config={"max.message.bytes": str(self.driver.record_bytes)})],
                    request_timeout=self.timeout_s)[name]
                try:
                    future.result(self.timeout_s)
                except KafkaException as exc:
                    if exc.args[0].code() != KafkaError.TOPIC_ALREADY_EXISTS:
                        raise DriverError(f"{self.label}: cannot create topic {name!r} "
                                          f"({_reason(exc)})") from None
                created = True
            if time.monotonic() >= deadline:
                raise DriverError(f"{self.label}: topic {name!r} has no partitions after "
                                  f"{self.timeout_s:g} s")
            time.sleep(0.05)

    def topic_settings(self, names: list[str]) -> dict[str, str | int | None]:
        """The durability settings the broker keeps the first existing topic of `names`
        with: its replication factor (the fewest replicas of any partition) and
        TOPIC_CONFIGS (DescribeConfigs; None for one the broker does not report)."""
        try:
            topics = self.admin.list_topics(timeout=self.timeout_s).topics
            name = next((name for name in names if name in topics), "")
            topic = topics.get(name)
            if not name or topic is None or topic.error is not None or not topic.partitions:
                raise DriverError(f"{self.label}: no topic {' or '.join(map(repr, names))}")
            resource = ConfigResource(ResourceType.TOPIC, name)
            future = self.admin.describe_configs([resource],
                                                 request_timeout=self.timeout_s)[resource]
            configs = future.result(self.timeout_s)
        except KafkaException as exc:
            raise DriverError(f"{self.label}: describing topic {name!r} failed "
                              f"({_reason(exc)})") from None
        settings: dict[str, str | int | None] = {
            "replication.factor": min(len(p.replicas) for p in topic.partitions.values())}
        for key in TOPIC_CONFIGS:
            entry = configs.get(key)
            settings[key] = entry.value if entry is not None else None
        return settings

    def delete_topics(self, chosen: Callable[[str], bool]) -> list[str]:
        """Delete the topics `chosen` picks; their names (raises DriverError naming the
        first that could not be deleted)."""
        try:
            names = sorted(n for n in self.admin.list_topics(timeout=self.timeout_s).topics
                           if chosen(n))
        except KafkaException as exc:
            raise DriverError(f"{self.label}: metadata failed ({_reason(exc)})") from None
        if not names:
            return []
        futures = self.admin.delete_topics(names, request_timeout=self.timeout_s)
        for name, future in futures.items():
            try:
                future.result(self.timeout_s)
            except KafkaException as exc:
                raise DriverError(f"{self.label}: cannot delete topic {name!r} "
                                  f"({_reason(exc)})") from None
        return names

    def producer(self, owner) -> Producer:
        opts = self.options
        conf = self.conf(**{
            "acks": str(opts.acks), "linger.ms": opts.linger_ms,
            "compression.type": opts.compression,
            "message.timeout.ms": DELIVERY_TIMEOUT_MS,
            "delivery.report.only.error": True, "on_delivery": weakly(owner.delivered),
            "message.max.bytes": self.driver.record_bytes,
            "error_cb": weakly(owner.alarm),
        })
        if opts.batch_size is not None:
            conf["batch.size"] = opts.batch_size
        try:
            return Producer(conf)
        except KafkaException as exc:
            raise DriverError(f"{self.label}: producer: {_reason(exc)}") from None

    def sender(self, topic: str, partition: int) -> ConfluentSender:
        return ConfluentSender(self, topic, partition)

    def receiver(self, topic: str, partitions: list[int],
                 message_size: int) -> ConfluentReceiver:
        return ConfluentReceiver(self, topic, partitions)

    def responder(self, topic: str, partitions: int, message_size: int,
                  reply_prefix: str) -> ConfluentResponder:
        return ConfluentResponder(self, topic, partitions, reply_prefix)


def weakly(method: Callable) -> Callable:
    """`method` as a client callback that does not keep its object alive. A client holds
    its callbacks, and a callback holding the sender that holds the client is a cycle the
    garbage collector cannot break through the C handle: a producer never closed (a
    failed set-up, an exception) would then retry its gone broker for the rest of the
    process."""
    ref = weakref.WeakMethod(method)

    def call(*args) -> None:
        bound = ref()
        if bound is not None:
            bound(*args)

    return call


class _Alarms:
    """What librdkafka reported (through callbacks served by poll/consume), checked on the
    caller's next call: the hot path reads one flag, `trouble`."""

    def __init__(self, backend: ConfluentBackend) -> None:
        self.label = backend.label
        self.trouble = False
        self.failed: KafkaError | None = None  # a delivery report: always fatal
        self.alarmed: KafkaError | None = None  # error_cb: maybe just a dropped connection
        self.suspect: KafkaError | None = None  # a possible outage being ridden out
        self.suspect_since = 0.0

    def delivered(self, error: KafkaError | None, message) -> None:
        if error is not None and self.failed is None:
            self.failed = error
            self.trouble = True

    def alarm(self, error: KafkaError) -> None:
        if self.alarmed is None or error.code() == KafkaError._ALL_BROKERS_DOWN:
            self.alarmed = error
            self.trouble = True

    def check(self, client: Producer | Consumer) -> None:
        if self.failed is not None:
            raise DriverError(f"{self.label}: delivery failed ({self.failed.str()})")
        error, self.alarmed = self.alarmed, None
        if error is not None:
            if error.fatal() or error.code() == KafkaError._AUTHENTICATION:
                raise DriverError(f"{self.label}: {error.str()}")
            if error.code() in MAYBE_GONE and self.suspect is None:
                self.suspect, self.suspect_since = error, time.monotonic()
        if self.suspect is not None and time.monotonic() - self.suspect_since >= OUTAGE_GRACE_S:
            try:
                client.list_topics(timeout=LIVENESS_TIMEOUT_S)
            except KafkaException as exc:
                down = time.monotonic() - self.suspect_since
                raise DriverError(f"{self.label}: connection lost (no broker answered for "
                                  f"{down:.1f} s: {_reason(exc)})") from None
            self.suspect = None
        self.trouble = self.suspect is not None


class ConfluentSender(_Alarms, Sender):
    """Produces to `partition`, or (BY_KEY) where each message's key sends it."""

    def __init__(self, backend: ConfluentBackend, topic: str, partition: int) -> None:
        super().__init__(backend)
        self.topic = topic
        self.partition = partition
        if partition == BY_KEY:
            self.send = self.send_keyed  # type: ignore[method-assign]
        self.producer = backend.producer(self)
        self._produce = self.producer.produce
        self._poll = self.producer.poll

    def send(self, frames: memoryview, count: int) -> None:
        if self.trouble:
            self.check(self.producer)
        produce, topic, partition = self._produce, self.topic, self.partition
        stride = len(frames) // count
        for at in range(0, len(frames), stride):
            value = bytes(frames[at : at + stride])  # produce() takes no writable buffers
            try:
                produce(topic, value, None, partition)
            except BufferError:  # the client's queue is full: wait for the broker
                self._produce_blocking(value)
        self._poll(0)

    def send_keyed(self, frames: memoryview, count: int) -> None:
        """`send` with each message's key (formats.keys, in its frame): the client's
        partitioner picks the partition from it, as it does in production."""
        if self.trouble:
            self.check(self.producer)
        produce, topic, partition = self._produce, self.topic, self.partition
        stride = len(frames) // count
        for at in range(0, len(frames), stride):
            value = bytes(frames[at : at + stride])
            key = value[KEY_OFFSET:KEY_END]
            try:
                produce(topic, value, key, partition)
            except BufferError:
                self._produce_blocking(value, key)
        self._poll(0)

    def settle(self) -> None:
        """Wait for the delivery report of everything produced: the broker's ack under
        `acks` 1 or all; with acks 0, librdkafka reports a message once it is written."""
        if self.producer.flush(FLUSH_TIMEOUT_S):
            raise DriverError(f"{self.label}: messages not acknowledged within "
                              f"{FLUSH_TIMEOUT_S:.0f} s")
        if self.trouble:
            self.check(self.producer)

    def _produce_blocking(self, value: bytes, key: bytes | None = None) -> None:
        """Backpressure: the send waits (and shows as send lag) until the queue has room."""
        while True:
            self._poll(0.01)
            if self.trouble:
                self.check(self.producer)
            try:
                return self._produce(self.topic, value, key, self.partition)
            except BufferError:
                pass

    def close(self) -> None:
        """Flush; what is still queued after FLUSH_TIMEOUT_S (a gone broker) is purged,
        so the client has nothing left to retry."""
        if self.producer.flush(FLUSH_TIMEOUT_S):
            self.producer.purge()
            self.producer.flush(0)
        if self.failed is not None:
            raise DriverError(f"{self.label}: delivery failed ({self.failed.str()})")


class ConfluentReceiver(_Alarms, Receiver):
    """A consumer of `partitions` of a topic (a lane's share); `pollable` (a descriptor,
    one per receiver) becomes readable when librdkafka queues something for it (see
    Doorbell)."""

    smallest = NONE_SMALLER  # the smallest message taken below `stride` (sizes vary: set)

    def __init__(self, backend: ConfluentBackend, topic: str, partitions: list[int]) -> None:
        super().__init__(backend)
        opts = backend.options
        client_id = f"sixnines-{uuid.uuid4().hex[:12]}"
        conf = {**backend.common, "client.id": client_id,
                "group.id": f"sixnines-{topic}-{uuid.uuid4().hex[:12]}",
                "enable.auto.commit": False, "enable.partition.eof": False,
                "auto.offset.reset": "latest", "fetch.wait.max.ms": opts.fetch_wait_ms,
                "session.timeout.ms": 6000, "heartbeat.interval.ms": 1000,
                "message.max.bytes": backend.driver.record_bytes,
                "max.partition.fetch.bytes": backend.driver.record_bytes,
                "fetch.max.bytes": max(FETCH_BYTES, backend.driver.record_bytes),
                "error_cb": weakly(self.alarm)}
        try:
            self.consumer = Consumer(conf)
        except KafkaException as exc:
            raise DriverError(f"{self.label}: consumer: {_reason(exc)}") from None
        self._consume = self.consumer.consume
        self._poll = self.consumer.poll
        self.bell = Doorbell.attach(self.consumer, client_id)
        self.pollable = self.bell.fileno()
        self.backlog: list = []  # messages polled while joining a group, returned first
        if opts.group:
            self._join(topic, set(partitions))
        else:
            self.consumer.assign([self._at_end(TopicPartition(topic, p))
                                  for p in partitions])

    def _at_end(self, tp: TopicPartition) -> TopicPartition:
        """Start exactly at the end offset as of now (not "latest" when fetching starts)."""
        try:
            _, high = self.consumer.get_watermark_offsets(tp, timeout=LIVENESS_TIMEOUT_S * 2,
                                                          cached=False)
        except KafkaException as exc:
            raise DriverError(f"{self.label}: end offsets of {tp.topic}: "
                              f"{_reason(exc)}") from None
        return TopicPartition(tp.topic, tp.partition, high if high >= 0 else OFFSET_END)

    def _join(self, topic: str, mine: set[int]) -> None:
        """Join a consumer group of its own and read, of what it assigns (every partition:
        the receiver is its only member), the partitions in `mine` (the lane's)."""
        assigned: list[bool] = []

        def on_assign(consumer: Consumer, partitions: list[TopicPartition]) -> None:
            consumer.assign([self._at_end(tp) for tp in partitions if tp.partition in mine])
            assigned.append(True)

        self.consumer.subscribe([topic], on_assign=on_assign)
        deadline = time.monotonic() + JOIN_TIMEOUT_S
        while not assigned:
            if time.monotonic() > deadline:
                raise DriverError(f"{self.label}: no partitions of {topic!r} assigned to "
                                  f"the consumer group within {JOIN_TIMEOUT_S:g} s")
            message = self._poll(0.1)
            if message is not None and message.error() is None:
                self.backlog.append(message)
            self.check(self.consumer)

    def take(self, room: int, timeout_ms: int) -> list:
        """Up to `room` queued messages, waiting up to `timeout_ms` for the first."""
        self.bell.clear()
        if self.backlog:
            batch, self.backlog = self.backlog[:room], self.backlog[room:]
            return batch
        batch = self._consume(room, 0)
        if not batch:
            if self.trouble:
                self.check(self.consumer)
            if not timeout_ms:
                return batch
            first = self._wait(timeout_ms)
            if first is None:
                return batch
            batch = [first]
            if room > 1:
                batch += self._consume(room - 1, 0)
        if len(batch) >= room:
            self.bell.ring()  # more may be queued: no new event comes for those
        return batch

    def _wait(self, timeout_ms: int):
        """consume(n, t) waits for all n; poll(t) returns on the first message."""
        end = None if timeout_ms < 0 else time.monotonic() + timeout_ms / 1000
        while True:
            left = WAIT_SLICE_S if end is None else min(WAIT_SLICE_S, end - time.monotonic())
            message = self._poll(max(left, 0))
            if message is not None:
                return message
            if self.trouble:
                self.check(self.consumer)
            if end is not None and time.monotonic() >= end:
                return None

    def skip(self, message) -> None:
        """An error event among messages: fatal unless it says the broker may be gone
        and the broker still answers."""
        error = message.error()
        if error.code() == KafkaError._PARTITION_EOF:
            return
        if error.code() in MAYBE_GONE or error.retriable():
            self.alarm(error)
            self.check(self.consumer)
            return
        raise DriverError(f"{self.label}: {error.str()}")

    def receive(self, out: memoryview, stride: int, timeout_ms: int) -> int:
        at = 0
        for message in self.take(len(out) // stride, timeout_ms):
            if message.error() is not None:
                self.skip(message)
                continue
            value = message.value()
            length = len(value)
            if length != stride and not self.smallest <= length <= stride:
                raise wrong_size(self.label, length, self.smallest, stride)
            out[at : at + length] = value
            at += stride
        return at // stride

    def close(self) -> None:
        self.consumer.close()
        self.bell.close()


class ConfluentResponder(Responder):
    """Requests from `<topic>` produced back, unchanged, to `<prefix><producer id>`."""

    def __init__(self, backend: ConfluentBackend, topic: str, partitions: int, prefix: str) -> None:
        self.receiver = ConfluentReceiver(backend, topic, list(range(partitions)))
        self.sender = ConfluentSender(backend, "", 0)
        self.prefix = prefix
        self.replies: dict[int, str] = {}  # producer id -> reply topic

    def relay(self, timeout_ms: int) -> int:
        sender = self.sender
        if sender.trouble:
            sender.check(sender.producer)
        produce, replies, count = sender._produce, self.replies, 0
        for message in self.receiver.take(RELAY_BATCH, timeout_ms):
            if message.error() is not None:
                self.receiver.skip(message)
                continue
            value = message.value()
            sender_id = producer_id(value)
            topic = replies.get(sender_id)
            if topic is None:
                topic = replies[sender_id] = f"{self.prefix}{sender_id}"
            try:
                produce(topic, value, None, 0)
            except BufferError:
                sender.topic = topic
                sender._produce_blocking(value)
            count += 1
        sender._poll(0)
        return count

    def close(self) -> None:
        try:
            self.sender.close()
        finally:
            self.receiver.close()


class Doorbell:
    """A pipe librdkafka writes to when the consumer's queue goes from empty to non-empty
    (`rd_kafka_queue_io_event_enable`), so an agent can wait on many consumers in one
    poll. The Python binding does not expose that call, so it is made through ctypes on
    the binding's own librdkafka, with the handle read from the Consumer object (the
    binding's `Handle` starts with the `rd_kafka_t *` after the object header). The
    handle is only used once librdkafka names it as this consumer's client.id; otherwise
    the pollable is an always-readable pipe and a multi-connection agent polls instead of
    sleeping (correct, only busier)."""

    _lib: ctypes.CDLL | Literal[False] | None = None  # False: none that can be used

    def __init__(self, read_fd: int, write_fd: int | None, queue: int | None) -> None:
        self._read: int | None = read_fd
        self._write, self._queue = write_fd, queue

    @classmethod
    def attach(cls, consumer: Consumer, client_id: str) -> Doorbell:
        lib = cls._library()
        if lib is not None:
            rk = ctypes.c_void_p.from_address(id(consumer) + object.__basicsize__).value
            if rk and (lib.rd_kafka_name(rk) or b"").decode().startswith(client_id + "#"):
                queue = lib.rd_kafka_queue_get_consumer(rk)
                if queue:
                    read_fd, write_fd = os.pipe2(os.O_NONBLOCK | os.O_CLOEXEC)
                    lib.rd_kafka_queue_io_event_enable(queue, write_fd, b"!", 1)
                    return cls(read_fd, write_fd, queue)
        read_fd, write_fd = os.pipe2(os.O_CLOEXEC)
        os.write(write_fd, b"!")  # never read: always readable
        os.close(write_fd)
        return cls(read_fd, None, None)

    @classmethod
    def _library(cls) -> ctypes.CDLL | None:
        if cls._lib is None:
            cls._lib = False
            found = sorted(Path(confluent_kafka.__file__).parent.parent.glob(
                "confluent_kafka.libs/librdkafka*.so*"))
            # a str in 2.x, a (str, int) tuple before
            found_version: str | tuple[str, int] = confluent_kafka.version()
            version = found_version[0] if isinstance(found_version, tuple) else found_version
            if found and version.startswith("2."):
                lib = ctypes.CDLL(str(found[0]))
                lib.rd_kafka_name.restype = ctypes.c_char_p
                lib.rd_kafka_name.argtypes = [ctypes.c_void_p]
                lib.rd_kafka_queue_get_consumer.restype = ctypes.c_void_p
                lib.rd_kafka_queue_get_consumer.argtypes = [ctypes.c_void_p]
                lib.rd_kafka_queue_io_event_enable.argtypes = [
                    ctypes.c_void_p, ctypes.c_int, ctypes.c_void_p, ctypes.c_size_t]
                lib.rd_kafka_queue_destroy.argtypes = [ctypes.c_void_p]
                cls._lib = lib
        return cls._lib or None

    def fileno(self) -> int:
        return -1 if self._read is None else self._read  # -1 once closed, as a socket's

    def clear(self) -> None:
        if self._write is not None and self._read is not None:
            with contextlib.suppress(BlockingIOError):
                os.read(self._read, 4096)

    def ring(self) -> None:
        if self._write is not None:
            with contextlib.suppress(BlockingIOError):
                os.write(self._write, b"!")

    def close(self) -> None:
        lib = self._library()  # found: the queue came from it
        if self._queue is not None and lib is not None:
            lib.rd_kafka_queue_io_event_enable(self._queue, -1, None, 0)
            lib.rd_kafka_queue_destroy(self._queue)
            self._queue = None
        for fd in (self._read, self._write):
            if fd is not None:
                os.close(fd)
        self._read = self._write = None
