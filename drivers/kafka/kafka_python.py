"""The kafka driver's kafka-python back end (pure Python; the project's baseline client).

kafka-python 3 runs its network I/O on a background thread and retries a lost broker
forever; a receiver that has seen nothing for a second probes the broker's port, so a
broker that died becomes a DriverError instead of an endless empty wait. Its receivers
offer no descriptor that turns readable when records arrive, so `pollable` is an
always-readable pipe (its descriptor, one per receiver): an agent
with several connections polls them in turn instead of sleeping.
"""

from __future__ import annotations

import contextlib
import logging
import os
import socket
import time
import uuid
from collections.abc import Callable, Iterator

from kafka import ConsumerRebalanceListener, KafkaConsumer, KafkaProducer, TopicPartition
from kafka.admin import KafkaAdminClient, NewTopic
from kafka.errors import KafkaError, TopicAlreadyExistsError

from sixnines.drivers.base import (
    NONE_SMALLER,
    DriverError,
    Receiver,
    Responder,
    Sender,
    wrong_size,
)
from sixnines.drivers.kafka.wire import producer_id

FETCH_BYTES = 52_428_800  # kafka-python's default fetch_max_bytes
PROBE_AFTER_S = 1.0  # idle this long: check the broker's port still accepts connections
PROBE_TIMEOUT_S = 2.0
FLUSH_TIMEOUT_S = 5.0
JOIN_TIMEOUT_S = 30.0
DELIVERY_TIMEOUT_MS = 30_000  # must exceed linger + request timeout (kafka-python checks)
REQUEST_TIMEOUT_MS = 10_000
WAIT_SLICE_MS = 1000
RELAY_BATCH = 1024


def _reason(exc: Exception) -> str:
    return str(exc) or type(exc).__name__


class _Messages(logging.Handler):
    """Keeps the message of every warning or error it is handed."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage())


@contextlib.contextmanager
def _logged() -> Iterator[list[str]]:
    """The kafka-python warnings and errors logged meanwhile (their messages)."""
    handler = _Messages()
    logger = logging.getLogger("kafka")
    logger.addHandler(handler)
    try:
        yield handler.messages
    finally:
        logger.removeHandler(handler)


class PythonBackend:
    def __init__(self, driver, timeout_s: float) -> None:
        self.driver = driver  # its record_bytes sizes topics, producers and consumers
        self.label = driver.label
        self.address = (driver.host, driver.port)
        opts = self.options = driver.options
        self.timeout_ms = int(timeout_s * 1000)
        self.common = {"bootstrap_servers": driver.address,
                       "bootstrap_timeout_ms": self.timeout_ms}
        if opts.sasl_mechanism is not None:
            username, password = driver.login()
            self.common |= {"security_protocol": "SASL_PLAINTEXT",
                            "sasl_mechanism": opts.sasl_mechanism,
                            "sasl_plain_username": username, "sasl_plain_password": password}
        with _logged() as logged:
            try:
                self._new_admin().close()  # reach the broker now, to say what went wrong
            except KafkaError as exc:
                failure = _reason(exc)
            else:
                return
        # kafka-python raises a bare bootstrap timeout; what went wrong is in its log
        for message in reversed(logged):
            if "Sasl" in message or "Authentication" in message:
                raise DriverError(f"{self.label}: authentication failed ({message})")
        why = next((m for m in reversed(logged) if "Error" in m and "Bootstrap" not in m),
                   failure)
        raise DriverError(f"{self.label}: cannot connect ({why})")

    def conf(self, **extra) -> dict:
        return {**self.common, "client_id": f"sixnines-{uuid.uuid4().hex[:12]}", **extra}

    def _new_admin(self) -> KafkaAdminClient:
        """An admin client for one task, closed after it: one kept open keeps its network
        thread retrying a broker that died for as long as the process lives."""
        return KafkaAdminClient(**self.conf(request_timeout_ms=self.timeout_ms))

    def ensure_topic(self, name: str, partitions: int) -> int:
        """Create the topic (with `partitions`) unless it exists; how many it has."""
        opts = self.options
        try:
            with contextlib.closing(self._new_admin()) as admin:
                if name not in admin.list_topics():
                    with contextlib.suppress(TopicAlreadyExistsError):
                        admin.create_topics(
                            [NewTopic(name, partitions, opts.replication,
                                      topic_configs={"max.message.bytes":
                                                     str(self.driver.record_bytes)})],
                            timeout_ms=self.timeout_ms)
                deadline = time.monotonic() + self.timeout_ms / 1000
                while True:
                    described = admin.describe_topics([name])
                    if (described and described[0]["error_code"] == 0
                            and described[0]["partitions"]):
                        return len(described[0]["partitions"])
                    if time.monotonic() >= deadline:
                        raise DriverError(f"{self.label}: topic {name!r} has no partitions")
                    time.sleep(0.05)
        except KafkaError as exc:
            raise DriverError(f"{self.label}: cannot create topic {name!r} "
                              f"({_reason(exc)})") from None

    def delete_topics(self, chosen: Callable[[str], bool]) -> list[str]:
        """Delete the topics `chosen` picks; their names."""
        try:
            with contextlib.closing(self._new_admin()) as admin:
                names = sorted(name for name in admin.list_topics() if chosen(name))
                if names:
                    admin.delete_topics(names, timeout_ms=self.timeout_ms)
                return names
        except KafkaError as exc:
            raise DriverError(f"{self.label}: cannot delete topics ({_reason(exc)})") from None

    def producer(self) -> KafkaProducer:
        opts = self.options
        conf = self.conf(acks=opts.acks, linger_ms=opts.linger_ms,
                         compression_type=None if opts.compression == "none" else opts.compression,
                         request_timeout_ms=REQUEST_TIMEOUT_MS,
                         delivery_timeout_ms=DELIVERY_TIMEOUT_MS + opts.linger_ms,
                         max_block_ms=self.timeout_ms,
                         max_request_size=self.driver.record_bytes,
                         metrics_enabled=False)
        if opts.batch_size is not None:
            conf["batch_size"] = opts.batch_size
        try:
            return KafkaProducer(**conf)
        except (KafkaError, RuntimeError, ValueError) as exc:  # e.g. no codec library
            raise DriverError(f"{self.label}: kafka-python producer: {_reason(exc)}") from None

    def consumer(self, group: bool) -> KafkaConsumer:
        opts = self.options
        return KafkaConsumer(**self.conf(
            group_id=f"sixnines-{uuid.uuid4().hex[:12]}" if group else None,
            enable_auto_commit=False, auto_offset_reset="latest",
            fetch_max_wait_ms=opts.fetch_wait_ms, session_timeout_ms=6000,
            heartbeat_interval_ms=1000, metrics_enabled=False,
            max_partition_fetch_bytes=self.driver.record_bytes,
            fetch_max_bytes=max(FETCH_BYTES, self.driver.record_bytes)))

    def sender(self, topic: str, partition: int) -> PythonSender:
        return PythonSender(self, topic, partition)

    def receiver(self, topic: str, partitions: list[int],
                 message_size: int) -> PythonReceiver:
        return PythonReceiver(self, topic, partitions)

    def responder(self, topic: str, partitions: int, message_size: int,
                  reply_prefix: str) -> PythonResponder:
        return PythonResponder(self, topic, partitions, reply_prefix)


class PythonSender(Sender):
    def __init__(self, backend: PythonBackend, topic: str, partition: int) -> None:
        self.label = backend.label
        self.topic = topic
        self.partition = partition
        self.producer = backend.producer()
        self._send = self.producer.send
        self.failed: Exception | None = None

    def _failure(self, exc: Exception) -> None:
        if self.failed is None:
            self.failed = exc

    def check(self) -> None:
        if self.failed is not None:
            raise DriverError(f"{self.label}: delivery failed ({_reason(self.failed)})")

    def send(self, frames: memoryview, count: int) -> None:
        if self.failed is not None:
            self.check()
        send, topic, partition, failure = self._send, self.topic, self.partition, self._failure
        stride = len(frames) // count
        try:
            for at in range(0, len(frames), stride):
                # the client copies the value into its batch buffer before returning
                send(topic, frames[at : at + stride], partition=partition).add_errback(failure)
        except KafkaError as exc:  # e.g. no metadata within max_block_ms
            raise DriverError(f"{self.label}: send failed ({_reason(exc)})") from None

    def settle(self) -> None:
        """Wait until every record sent has its broker response (under `acks` 1 or all;
        with acks 0, until it is written)."""
        try:
            self.producer.flush(FLUSH_TIMEOUT_S)
        except KafkaError as exc:  # KafkaTimeoutError: not acknowledged in time
            raise DriverError(f"{self.label}: messages not acknowledged ({_reason(exc)})"
                              ) from None
        self.check()

    def close(self) -> None:
        """Flush; with a broker gone, what is queued is lost and its retries are stopped
        (the client's own close waits for a flush first, so its sending thread would
        outlive us, retrying, until the process ends)."""
        try:
            self.producer.flush(FLUSH_TIMEOUT_S)
        except KafkaError:
            # fails what is queued; a private member, which the stubs do not know
            # (tests/drivers/test_client_privates.py checks it is there)
            self.producer._sender.force_close()  # type: ignore[attr-defined]
        with contextlib.suppress(KafkaError):
            self.producer.close(timeout=1)
        self.check()


class PythonReceiver(Receiver):
    """A consumer of `partitions` of a topic (a lane's share)."""

    pollable: int  # the read end of a pipe (the module doc)
    smallest = NONE_SMALLER  # the smallest message taken below `stride` (sizes vary: set)

    def __init__(self, backend: PythonBackend, topic: str, partitions: list[int]) -> None:
        self.label = backend.label
        self.address = backend.address
        self.group = backend.options.group
        try:
            self.consumer = backend.consumer(self.group)
            self.backlog: list = []
            if self.group:
                self._join(topic, set(partitions))
            else:
                tps = [TopicPartition(topic, p) for p in partitions]
                self.consumer.assign(tps)
                self._seek_to_end(tps)
        except KafkaError as exc:
            raise DriverError(f"{self.label}: consumer: {_reason(exc)}") from None
        self._poll = self.consumer.poll
        self.quiet_since = time.monotonic()
        read_fd, write_fd = os.pipe2(os.O_CLOEXEC)
        os.write(write_fd, b"!")  # never read: always readable
        os.close(write_fd)
        self.pollable = read_fd

    def _seek_to_end(self, tps: list[TopicPartition]) -> None:
        """Start exactly at the end offsets as of now (not "latest" when fetching starts)."""
        for tp, offset in self.consumer.end_offsets(tps).items():
            self.consumer.seek(tp, offset)

    def _join(self, topic: str, mine: set[int]) -> None:
        """Join a consumer group of its own and read, of what it assigns (every partition:
        the receiver is its only member), the partitions in `mine` (the lane's); the
        others stay paused (a subscribed consumer cannot assign itself a subset), again
        after any reassignment."""
        consumer = self.consumer

        class Share(ConsumerRebalanceListener):
            def on_partitions_revoked(self, revoked) -> None:
                pass

            def on_partitions_assigned(self, assigned) -> None:
                consumer.pause(*(tp for tp in assigned if tp.partition not in mine))

        consumer.subscribe([topic], listener=Share())
        deadline = time.monotonic() + JOIN_TIMEOUT_S
        while not consumer.assignment():
            if time.monotonic() > deadline:
                raise DriverError(f"{self.label}: no partitions of {topic!r} assigned to "
                                  f"the consumer group within {JOIN_TIMEOUT_S:g} s")
            for tp, records in consumer.poll(timeout_ms=100).items():
                if tp.partition in mine:
                    self.backlog += records
        self._seek_to_end([tp for tp in consumer.assignment() if tp.partition in mine])

    def take(self, room: int, timeout_ms: int) -> list:
        """Up to `room` records (a list per partition), waiting up to `timeout_ms`."""
        if self.backlog:
            held, self.backlog = self.backlog[:room], self.backlog[room:]
            return [held]
        if timeout_ms < 0:
            while True:
                polled = self._poll(timeout_ms=WAIT_SLICE_MS, max_records=room)
                if polled:
                    break
                self._probe()
        else:
            polled = self._poll(timeout_ms=timeout_ms, max_records=room)
        if polled:
            self.quiet_since = 0.0
            return list(polled.values())
        self._probe()
        return []

    def _probe(self) -> None:
        """After a quiet second, a TCP connect to the broker: refused means it is gone."""
        now = time.monotonic()
        if not self.quiet_since:
            self.quiet_since = now
        elif now - self.quiet_since >= PROBE_AFTER_S:
            self.quiet_since = now
            try:
                socket.create_connection(self.address, PROBE_TIMEOUT_S).close()
            except OSError as exc:
                raise DriverError(f"{self.label}: connection lost "
                                  f"({exc.strerror or _reason(exc)})") from None

    def receive(self, out: memoryview, stride: int, timeout_ms: int) -> int:
        at = 0
        for records in self.take(len(out) // stride, timeout_ms):
            for record in records:
                value = record.value
                length = len(value)
                if length != stride and not self.smallest <= length <= stride:
                    raise wrong_size(self.label, length, self.smallest, stride)
                out[at : at + length] = value
                at += stride
        return at // stride

    def close(self) -> None:
        try:
            self.consumer.close(autocommit=False)
        finally:
            os.close(self.pollable)


class PythonResponder(Responder):
    def __init__(self, backend: PythonBackend, topic: str, partitions: int, prefix: str) -> None:
        self.receiver = PythonReceiver(backend, topic, list(range(partitions)))
        self.sender = PythonSender(backend, "", 0)
        self.prefix = prefix
        self.replies: dict[int, str] = {}

    def relay(self, timeout_ms: int) -> int:
        sender = self.sender
        if sender.failed is not None:
            sender.check()
        send, failure, replies, count = sender._send, sender._failure, self.replies, 0
        for records in self.receiver.take(RELAY_BATCH, timeout_ms):
            for record in records:
                value = record.value
                sender_id = producer_id(value)
                topic = replies.get(sender_id)
                if topic is None:
                    topic = replies[sender_id] = f"{self.prefix}{sender_id}"
                send(topic, value, partition=0).add_errback(failure)
                count += 1
        return count

    def close(self) -> None:
        try:
            self.sender.close()
        finally:
            self.receiver.close()
