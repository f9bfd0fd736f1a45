"""Kafka protocol: topics on a Kafka-compatible broker, through confluent-kafka or kafka-python.

One-way mode is fan-out without consumer-group rebalances: every receiver is assigned all
partitions of the topic itself, starting at the end offsets it looked up when it was created
(`group: true` instead gives each receiver connection a consumer group of its own). A sender
writes to partition `connection_id % partitions`, so each sender's messages stay in order.

Round trip: requests go to `<topic>.req`, replies to `<topic>.reply.<requester id>` (created
by the requester before it sends); the responder reads the requests topic and produces each
request, unchanged, to the reply topic named by the producer id in its header.

The clients live in drivers/kafka_confluent.py and drivers/kafka_python.py, imported only
when chosen. Every figure measured here comes from whatever Kafka-protocol broker the run
used (the recipe's note says which): the driver speaks the protocol, it does not make a
broker Apache Kafka.
"""

from __future__ import annotations

import socket
from typing import ClassVar, Literal

from pydantic import Field, model_validator

from sixnines.drivers.base import Credential, Driver, DriverError, LoginOptions, split_address

CONNECT_TIMEOUT_S = 5.0  # both clients retry forever by default: a run fails within this
DEFAULT_RECORD_BYTES = 1_000_000  # the clients' and brokers' default record size limit
RECORD_HEADROOM = 64 << 10  # record and batch framing above the payload
MAX_MESSAGE_BYTES = 64 << 20  # brokers refuse requests over ~100 MB by default
TOPIC_CHARS = r"^[A-Za-z0-9._-]{1,200}$"


class KafkaOptions(LoginOptions):
    """Kafka protocol options.

    `client`: confluent (confluent-kafka, librdkafka's C client; the default) or
    kafka-python (pure Python, the baseline). confluent is the default because the
    generator must not be the bottleneck: one process sending 256-byte messages through
    this driver's sender as fast as it can, to noida-db on the 2-core dev VM, got ~285k
    msg/s delivered with confluent (one message per call; ~340k in batches of 64) and
    ~10-12k msg/s with kafka-python, whose Python I/O thread competes with the sender for
    the GIL. Open loop at 50k msg/s asked (benchmarks/bench_kafka.py), confluent sent all
    50k/s, kafka-python ~18k/s. With `linger_ms: 0` each isolated produce call wakes
    librdkafka's I/O thread (~10-30 µs a call here; ~2 µs with linger_ms > 0).
    """

    client: Literal["confluent", "kafka-python"] = "confluent"
    topic: str = Field("sixnines", pattern=TOPIC_CHARS)
    """One-way topic; round trip uses `<topic>.req` and `<topic>.reply.<id>`."""
    partitions: int = Field(1, ge=1)
    """Partitions of topics the driver creates (an existing topic is used as it is)."""
    replication: int = Field(1, ge=1)
    acks: Literal[0, 1, "all"] = 1
    linger_ms: int = Field(0, ge=0)
    """0 sends at once (latency runs); > 0 lets the client batch (throughput runs)."""
    batch_size: int | None = Field(None, ge=1)
    """Producer batch size in bytes (None: the client's default)."""
    compression: Literal["none", "gzip", "snappy", "lz4", "zstd"] = "none"
    group: bool = False
    """False: each receiver assigns itself every partition (no group coordination, no
    rebalance delay). True: each receiver connection joins a consumer group of its own
    (still fan-out); joining takes about half the session timeout (6 s here)."""
    fetch_wait_ms: int = Field(10, ge=0)
    """How long the broker may hold a fetch for data to arrive (latency vs requests)."""
    sasl_mechanism: Literal["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"] | None = None
    """SASL over plaintext; needs `username` and one of `password_env`/`password_file`."""

    @model_validator(mode="after")
    def _credentials(self) -> KafkaOptions:
        refs = (self.password_env is not None) + (self.password_file is not None)
        if self.sasl_mechanism is None:
            if self.username is not None or refs:
                raise ValueError("username/password_env/password_file need sasl_mechanism")
        elif self.username is None or refs != 1:
            raise ValueError("sasl_mechanism needs username and exactly one of "
                             "password_env, password_file")
        return self


class KafkaDriver(Driver):
    name = "kafka"
    Options: ClassVar[type[KafkaOptions]] = KafkaOptions
    needs_responder = True

    def __init__(self, address: str, options: KafkaOptions,
                 credential: Credential | None = None) -> None:
        super().__init__(address, options, credential)
        self.host, self.port = split_address(address, self.name)
        self.label = f"kafka at {address}"
        self.partitions: dict[str, int] = {}  # topics known to exist: partition count
        self.record_bytes = DEFAULT_RECORD_BYTES
        self._backend = None

    @classmethod
    def workload_problems(cls, options: KafkaOptions, workload) -> list[str]:
        if workload.message_size > MAX_MESSAGE_BYTES:
            return [f"kafka: {workload.message_size}-byte messages exceed the "
                    f"{MAX_MESSAGE_BYTES}-byte limit this driver configures"]
        return []

    def _size_for(self, message_size: int) -> None:
        """Records above Kafka's default 1 MB limit need it raised on the topics the driver
        creates, the producers and the consumers alike (an existing topic keeps its own)."""
        self.record_bytes = max(DEFAULT_RECORD_BYTES, message_size + RECORD_HEADROOM)

    # -- connecting ------------------------------------------------------------------------

    @property
    def backend(self):
        """The chosen client's module-level `Backend`, connected on first use: a refused
        port fails at once, anything else within CONNECT_TIMEOUT_S."""
        if self._backend is None:
            try:
                socket.create_connection((self.host, self.port), CONNECT_TIMEOUT_S).close()
            except OSError as exc:
                reason = exc.strerror or str(exc) or type(exc).__name__
                raise DriverError(f"{self.label}: cannot connect ({reason})") from None
            if self.options.client == "confluent":
                from sixnines.drivers.kafka_confluent import Backend
            else:
                from sixnines.drivers.kafka_python import Backend
            self._backend = Backend(self, CONNECT_TIMEOUT_S)
        return self._backend

    def topic(self, name: str) -> int:
        """Create `name` unless it exists; its partition count."""
        if name not in self.partitions:
            self.partitions[name] = self.backend.ensure_topic(name)
        return self.partitions[name]

    # -- connections ------------------------------------------------------------------------

    def sender(self, message_size: int, connection_id: int):
        """Messages are handed to the client's producer one by one (it batches them into
        produce requests itself): `sent_ns` is when a message was handed to the client."""
        self._size_for(message_size)
        topic = self.options.topic
        return self.backend.sender(topic, connection_id % self.topic(topic))

    def receiver(self, message_size: int, connection_id: int):
        self._size_for(message_size)
        topic = self.options.topic
        return self.backend.receiver(topic, self.topic(topic), message_size)

    def requester(self, message_size: int, connection_id: int):
        self._size_for(message_size)
        requests = f"{self.options.topic}.req"
        replies = f"{self.options.topic}.reply.{connection_id}"
        receiver = self.backend.receiver(replies, self.topic(replies), message_size)
        return self.backend.sender(requests, connection_id % self.topic(requests)), receiver

    def responder(self, message_size: int, connection_id: int):
        self._size_for(message_size)
        requests = f"{self.options.topic}.req"
        return self.backend.responder(requests, self.topic(requests), message_size,
                                      f"{self.options.topic}.reply.")
